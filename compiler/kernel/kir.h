// kir.h — the kernel IR: what every backend prints. One KirProgram per graph
// IR function: the buffers it touches and an ordered list of kernels, each an
// explicit loop nest whose body is scalar statements over explicit dtypes and
// explicit row-major index arithmetic. Backends (LLVM, CUDA) turn it into
// code without making decisions; fusion produces the same form.
//
// Shape of the data:
//   KirProgram  name; syms (run-time sizes: bound from an argument's dim, or
//               defined by an expression over earlier syms); bufs (inputs,
//               outputs, state slots by path, temporaries: dtype + element
//               count as an i64 expression over syms); kernels in run order
//   KirKernel   name; span of the graph op it comes from; params (the buffers
//               it reads or writes); vars (loop indices and scalar locals,
//               each with one dtype); body (statements)
//   KStmt       for / let / assign / store / if / check
//   KExpr       typed scalar expression: constants, vars, syms, loads,
//               unary/binary ops, select, cast, Philox uniform draws
//
// Semantics every backend reproduces (the reference is kir_interp.c, itself
// checked against the graph interpreter, interp.h):
//   - Buffers are dense and row-major; a load/store index is a flat element
//     offset (i64). Views are index arithmetic, never aliasing.
//   - Arithmetic happens in the expression's dtype. Float ops round to their
//     dtype after every op (f16/bf16 compute as f32). Integer add/sub/mul
//     wrap (two's complement in the dtype); integer div and mod are floor
//     division and floor modulo (Python's // and %); a negative index never
//     reaches div/mod in lowered code, so sdiv/srem are fine there, but the
//     semantics is floor.
//   - Float max/min propagate NaN. Compares give bool (0/1); bool is an
//     integer of 0/1 for and/or/not/select.
//   - cast: float -> int truncates toward zero (then wraps); anything -> bool
//     is != 0; int/bool -> float is the exact value rounded to the dtype.
//   - rand(key, counter, stream): Philox-4x32-10 with key (key lo, key hi)
//     and counter (counter lo, counter hi, stream lo, stream hi); the first
//     output word w gives (w >> 8) * 2^-24, an f64 in [0, 1). Dropout is
//     select(rand(seed, i, rngseed) >= p, 1/(1-p), 0) (interp_dropout_scale).
//   - Stores of a program take effect in kernel order; stores to state slots
//     (the graph IR's `store`) are placed after every kernel that reads the
//     slot, so reads see the old value.
//   - A loop's `parallel` flag says its iterations are independent (no two
//     write one element, none reads what another writes): a backend may split
//     it across threads/blocks. Lowering sets it on the outermost loop of a
//     loop nest when that holds. A kernel's top-level statements run in
//     order, each finishing before the next starts (a zero-fill loop, then
//     the accumulating nest), so a backend either runs them one after the
//     other or puts a barrier between them.
//   - check(cond, msg): if cond is false the program stops with msg (an index
//     out of range, a bad target); backends report it and return an error.
//
// Ownership: everything lives in the program's arena.
#ifndef MLC_KIR_H
#define MLC_KIR_H

#include "types/tensor.h"

// ---- expressions ------------------------------------------------------------------------
typedef enum {
  KE_CONST,   // literal of `dtype`: .i for integers/bool, .f for floats
  KE_VAR,     // kernel variable .var (loop index or scalar local)
  KE_SYM,     // program size symbol .sym (i64)
  KE_RNGSEED, // the run's RNG stream (InterpParams.rng_seed), i64
  KE_LOAD,    // .buf[.a], .a an i64 flat offset; dtype = the buffer's
  KE_UNARY,   // .un(.a)
  KE_BINARY,  // .bin(.a, .b)
  KE_SELECT,  // .a ? .b : .c   (.a bool; .b, .c of dtype)
  KE_CAST,    // (dtype) .a
  KE_RAND,    // Philox uniform in [0, 1): key .a, counter .b, stream .c (all i64); f64
} KExprKind;

#define KIR_UNOPS(X)                                                           \
  X(NEG, "neg")     /* -a */                                                   \
  X(NOT, "not")     /* bool: !a */                                             \
  X(ABS, "abs")                                                                \
  X(EXP, "exp")                                                                \
  X(LOG, "log")                                                                \
  X(LOG1P, "log1p")                                                            \
  X(SQRT, "sqrt")                                                              \
  X(TANH, "tanh")                                                              \
  X(ERF, "erf")                                                                \
  X(COS, "cos")                                                                \
  X(FLOOR, "floor")

typedef enum {
#define X(id, name) KU_##id,
  KIR_UNOPS(X)
#undef X
  KU_COUNT
} KUnOp;

#define KIR_BINOPS(X)                                                          \
  X(ADD, "add")                                                                \
  X(SUB, "sub")                                                                \
  X(MUL, "mul")                                                                \
  X(DIV, "div")     /* float: a / b; integer: floor division */                \
  X(MOD, "mod")     /* integer: floor modulo */                                \
  X(POW, "pow")     /* float */                                                \
  X(MAX, "max")     /* NaN-propagating for floats */                           \
  X(MIN, "min")                                                                \
  X(LT, "lt")       /* comparisons: bool result */                             \
  X(LE, "le")                                                                  \
  X(GT, "gt")                                                                  \
  X(GE, "ge")                                                                  \
  X(EQ, "eq")                                                                  \
  X(NE, "ne")                                                                  \
  X(AND, "and")     /* bool */                                                 \
  X(OR, "or")

typedef enum {
#define X(id, name) KB_##id,
  KIR_BINOPS(X)
#undef X
  KB_COUNT
} KBinOp;

typedef struct KExpr {
  KExprKind kind;
  DType dtype;       // result dtype (index arithmetic: DT_I64)
  int64_t i;         // KE_CONST (integer/bool dtypes)
  double f;          // KE_CONST (float dtypes)
  int var;           // KE_VAR: index into the kernel's vars
  int sym;           // KE_SYM: index into the program's syms
  int buf;           // KE_LOAD: index into the program's bufs
  KUnOp un;          // KE_UNARY
  KBinOp bin;        // KE_BINARY
  struct KExpr *a, *b, *c; // operands (see the kinds)
} KExpr;

// ---- statements -------------------------------------------------------------------------
typedef enum {
  KS_FOR,    // for var in [0, .n): .body        (.parallel: see kir.h top)
  KS_LET,    // var = .value: declares the local .var (first and only let)
  KS_ASSIGN, // var = .value: updates a local declared by an enclosing let
  KS_STORE,  // .buf[.index] = .value
  KS_IF,     // if .cond: .body else .els
  KS_CHECK,  // if !.cond: stop with .msg
} KStmtKind;

typedef struct KStmt {
  KStmtKind kind;
  int var;          // KS_FOR, KS_LET, KS_ASSIGN
  KExpr *n;         // KS_FOR trip count (i64)
  bool parallel;    // KS_FOR
  int buf;          // KS_STORE
  KExpr *index;     // KS_STORE (i64)
  KExpr *value;     // KS_LET, KS_ASSIGN, KS_STORE
  KExpr *cond;      // KS_IF, KS_CHECK (bool)
  const char *msg;  // KS_CHECK
  Vec body;         // KStmt*: KS_FOR body, KS_IF then-branch
  Vec els;          // KStmt*: KS_IF else-branch
} KStmt;

// ---- kernels, buffers, symbols, programs ------------------------------------------------
typedef struct KirVar {
  const char *name; // unique in the kernel (i0, acc, ...)
  DType dtype;      // loop indices are i64
  bool is_loop;
} KirVar;

typedef struct KirKernel {
  const char *name; // unique in the program: "k3_matmul"
  Span span;        // the graph op it was lowered from
  Vec params;       // int (stored as intptr_t): buffer indices it reads/writes, ascending
  Vec vars;         // KirVar*
  Vec body;         // KStmt*
} KirKernel;

typedef enum {
  KBUF_INPUT,  // function argument .index (read only)
  KBUF_OUTPUT, // function result .index (written by the program)
  KBUF_STATE,  // model state slot .path (param/buffer/optstate); written by stores
  KBUF_TEMP,   // intermediate, program-private
} KirBufKind;

typedef struct KirBuf {
  const char *name;  // %x, out0, state:fc1.w, t5
  KirBufKind kind;
  int index;         // KBUF_INPUT/KBUF_OUTPUT: position
  const char *path;  // KBUF_STATE
  DType dtype;
  Type *type;        // the graph type (shape, for run-time checks and printing)
  KExpr *numel;      // element count, i64 over syms
} KirBuf;

typedef struct KirSym {
  const char *name;  // as printed: B, H, or s3 for a derived size
  Sym *sym;          // the graph IR symbol it stands for (NULL: lowering-made)
  int arg, dim;      // bound from argument `arg`'s dim `dim` (arg >= 0) ...
  KExpr *def;        // ... or defined by this i64 expression over earlier syms
} KirSym;

typedef struct KirProgram {
  Arena *arena;
  const char *name;  // the graph function's name
  Vec syms;          // KirSym*
  Vec bufs;          // KirBuf*
  Vec kernels;       // KirKernel*, in run order
  int ninputs, noutputs;
} KirProgram;

// ---- construction (kir.c) ----------------------------------------------------------------
KirProgram *kir_program_new(Arena *a, const char *name);
int kir_sym_add(KirProgram *p, const char *name, Sym *sym, int arg, int dim,
                KExpr *def);
int kir_buf_add(KirProgram *p, KirBufKind kind, const char *name, DType dt,
                Type *type, KExpr *numel);
KirKernel *kir_kernel_new(KirProgram *p, const char *name, Span sp);
int kir_var_new(KirProgram *p, KirKernel *k, const char *name, DType dt,
                bool is_loop);
// Records that k touches buffer b (kept unique and ascending).
void kir_kernel_use(KirProgram *p, KirKernel *k, int b);

KExpr *kir_int(KirProgram *p, DType dt, int64_t v);
KExpr *kir_idx(KirProgram *p, int64_t v); // i64 constant
KExpr *kir_float(KirProgram *p, DType dt, double v);
KExpr *kir_varref(KirProgram *p, KirKernel *k, int var);
KExpr *kir_symref(KirProgram *p, int sym);
KExpr *kir_rngseed(KirProgram *p);
KExpr *kir_load(KirProgram *p, int buf, KExpr *index);
KExpr *kir_un(KirProgram *p, KUnOp op, KExpr *a);
// Result dtype: bool for comparisons, else a's dtype. Folds i64 constants and
// the identities 0 + x, x * 1, x * 0 so index arithmetic stays readable.
KExpr *kir_bin(KirProgram *p, KBinOp op, KExpr *a, KExpr *b);
KExpr *kir_select(KirProgram *p, KExpr *c, KExpr *a, KExpr *b);
KExpr *kir_cast(KirProgram *p, DType dt, KExpr *a); // no-op when equal
KExpr *kir_rand(KirProgram *p, KExpr *key, KExpr *counter, KExpr *stream);

// Statements are appended to a block (a Vec of KStmt*); kir_for and kir_if
// return the new statement so the caller appends to its body/els.
KStmt *kir_for(KirProgram *p, Vec *block, int var, KExpr *n, bool parallel);
KStmt *kir_let(KirProgram *p, Vec *block, int var, KExpr *value);
KStmt *kir_assign(KirProgram *p, Vec *block, int var, KExpr *value);
KStmt *kir_store(KirProgram *p, Vec *block, int buf, KExpr *index,
                 KExpr *value);
KStmt *kir_if(KirProgram *p, Vec *block, KExpr *cond);
KStmt *kir_check(KirProgram *p, Vec *block, KExpr *cond, const char *msg);

const char *kir_unop_name(KUnOp op);
const char *kir_binop_name(KBinOp op);
static inline KirBuf *kir_buf(const KirProgram *p, int b) {
  return VEC_AT(p->bufs, KirBuf, b);
}
static inline int kir_param(const KirKernel *k, int i) {
  return (int)(intptr_t)k->params.data[i];
}

// ---- text form and verifier (kir.c) ----------------------------------------------------------
// Canonical text (docs/design/kir.md has a full example):
//   program forward
//   sym B = arg 0 dim 0
//   buf %x : f32[(B * 784)] input 0
//   buf t2 : f32[(B * 256)] temp
//   kernel k2_matmul(%x, t1, t2) {
//     parallel for i0 < B {
//       for j1 < 256 {
//         t2[((i0 * 256) + j1)] = 0.0:f32
//       } ...
void kir_print(StrBuf *b, const KirProgram *p);
void kir_dump(const KirProgram *p, FILE *out);
// Every var defined before use (loop vars inside their loop, locals after
// their let, in scope), loads/stores in the kernel's params, buffer/sym
// indices in range, dtypes consistent (indices and trip counts i64, conds
// bool, operands of one dtype). Reports "kir: kernel k3_matmul: ..." to d
// (at the kernel's span) and returns false on the first problems found.
bool kir_verify(const KirProgram *p, DiagSink *d);

// ---- reference evaluator (kir_interp.c) ---------------------------------------------------------
// Runs p with the graph interpreter's conventions (interp.h): arguments in
// signature order bind the syms, state comes from params by path (stores
// write it back, in place, as interp_run does), outputs are fresh tensors.
// INTERP_F32 rounds every float op to float; INTERP_F64 keeps doubles.
// Returns 0, or -1 with a message in err.
int kir_run(const KirProgram *p, InterpMode mode, Tensor **inputs, int nin,
            const InterpParams *params, Tensor **outputs, char *err,
            size_t errlen);


#endif
