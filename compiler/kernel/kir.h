// kir.h — the kernel IR: what every backend prints. One KirProgram per graph
// IR function: the buffers it touches and an ordered list of kernels, each an
// explicit loop nest whose body is scalar statements over explicit dtypes and
// explicit row-major index arithmetic. A program passes three stages, each
// checked by kir_verify and printed by kir_print:
//
//   lowered    (kir_lower.h) one canonical loop nest per graph op, no target
//              in it: `parallel` marks loops whose iterations are independent
//   scheduled  (schedule.h, for a KirTarget) kernels re-lowered by the
//              target's recipes, every loop mapped (serial, chunk, gpu-block,
//              gpu-thread, vector) with its grain and captures, barriers
//              placed between top-level statements
//   planned    (memplan.h) every temporary's byte offset in the scratch
//              block, and the block's size
//
// Backends (LLVM, CUDA) print a planned program without making decisions.
//
// Shape of the data:
//   KirProgram  name; target (once scheduled); syms (run-time sizes: bound
//               from an argument's dim, or defined by an expression over
//               earlier syms); bufs (inputs, outputs, state slots by path,
//               temporaries: dtype + shape as i64 expressions over syms, and
//               for temporaries the planned offset); scratch size (once
//               planned); kernels in run order
//   KirKernel   name; span of the graph op it comes from; op (what it
//               computes, for the ops a schedule may re-lower); params (the
//               buffers it reads or writes); vars (loop indices and scalar
//               locals, each with one dtype); body (statements)
//   KStmt       for / let / assign / store / if / check / barrier
//   KExpr       typed scalar expression: constants, vars, syms, loads,
//               unary/binary ops, select, cast, Philox uniform draws
//
// Semantics every backend reproduces (the reference is kir_interp.c, itself
// checked against the graph interpreter, interp.h):
//   - Buffers are dense and row-major; a load/store index is a flat element
//     offset (i64). Views are index arithmetic, never aliasing.
//   - Arithmetic happens in the expression's dtype. Float ops round to their
//     dtype after every op (f16/bf16 compute as f32; kir_run's INTERP_F32
//     rounds f32/f16/bf16 values and keeps f64 ones, INTERP_F64 keeps every
//     float in double). Integer add/sub/mul
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
//   - Float sums. Every sum a reduction forms over floats (sum, mean,
//     reduce_to; batch_norm_grad's and layer_norm's statistics and gradient
//     sums; softmax and log_softmax denominators and their gradients' sums;
//     the means of cross_entropy, mse and bce_with_logits) adds its terms in
//     one order, the same in the graph interpreter (InterpSum, which the
//     interpreter's tests check against this form) and in every backend:
//       * The innermost group is the last reduced dim together with the
//         reduced dims directly before it (chosen by which dims are reduced,
//         never by their sizes); a term's position p is its row-major index
//         within the group, so its offset is linear in p. Reduced dims before
//         the group are loops around it, in dim order.
//       * Term t (computed in its own dtype, then widened exactly) is added
//         to lane p mod 8. The 8 lanes are f64 locals that start at +0 and
//         add their terms in order (outer loops, then p ascending).
//       * The value is the lanes folded in halves, in f64:
//         ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)), then rounded
//         once to the result's dtype (a mean divides by the count in f64
//         first; a normalisation rounds each sum once and continues in its
//         dtype).
//       * Long sums are chunked: with P > KIR_SUM_CHUNK (8192) positions,
//         or a symbolic P, position p belongs to chunk j = p / 8192 (chunks
//         of 8192 consecutive positions, the last one shorter); each chunk
//         is summed as above (its own 8 lanes, lane p mod 8, across the outer
//         loops too, then folded, not rounded), and chunk j's value is added
//         to combine lane j mod 8 (f64, from +0, j ascending); the value is
//         the combine lanes folded the same way, rounded once. One chunk
//         (P <= 8192) gives that chunk's fold: the order above, bit for bit.
//         In kernel IR a loop over ceil(P / 8192) chunks holds the outer
//         loops and the lanes; at a kernel's top level with a constant P it
//         is independent and stores each chunk's value into an f64
//         temporary [chunks], which a short sum of those values combines;
//         elsewhere it is serial, adding each chunk's value to the combine
//         lane select(j mod 8 == l, v, 0) picks (+0 changes no lane).
//     In kernel IR: 8 `let l: f64 = 0`, a serial loop over div(P, 8) blocks
//     of 8 unrolled lane updates at p = 8b + l, a tail of P mod 8 updates
//     (each behind `if p < P` unless P is a constant), the fold. Lanes that
//     no position reaches (a constant P < 8) are left out: they would add
//     +0, and a lane is never -0. The order depends on shapes only, never on
//     threads or schedules; the 8 independent lanes of a block are what a
//     CPU vectorises (no reassociation needed). An f32 sum of n terms is
//     off by one f32 rounding plus at most (m/8 + 3 + n_c/8 + 3) * 2^-53 *
//     sum|t| with m = min(n, 8192) and n_c = ceil(n / 8192) chunks (n_c = 1:
//     (n/8 + 3)); an f64 sum by the same bound without the f32 rounding.
//     Not float sums in this sense (they accumulate in their dtype, in the
//     interpreter's loop order): matmul's and conv2d's dot products and
//     conv2d_grad_weight's (contraction over the kernel's inputs, or over the
//     batch for the weight gradients: GEMM-shaped work, docs/design/kir.md),
//     pooling windows, and the scatter-adds (embedding_grad, the pool and
//     conv2d input gradients). Integer sums wrap, so their order is free.
//   - Stores of a program take effect in kernel order; stores to state slots
//     (the graph IR's `store`) are placed after every kernel that reads the
//     slot, so reads see the old value.
//   - A loop's `parallel` flag is a fact the lowering states: its iterations
//     are independent (no two write one element, none reads what another
//     writes, none assigns a variable declared outside the loop). Only such
//     loops may get a map other than serial.
//   - A loop's map is how the schedule runs it: serial (in order, on the
//     running thread), chunk (CPU: cut into ceil(n / grain) chunks of
//     `grain` consecutive iterations that a thread pool runs in any order;
//     grain depends only on sizes, so results never depend on the thread
//     count), gpu-block / gpu-thread (one GPU block / one thread of the
//     enclosing block per iteration; gpu-thread trip counts are constants
//     within the target's threads per block), vector (iterations in SIMD
//     lanes, `grain` lanes at a time). A chunk or gpu-block loop lists its
//     captures: the kernel variables its body reads but does not define,
//     passed by value to the outlined body.
//   - Unscheduled, a kernel's top-level statements run in order, each
//     finishing before the next starts. Scheduled, top-level statements
//     between two barriers may run at once; the schedule puts a barrier
//     before every top-level statement that touches a buffer an earlier one
//     of the same segment writes (or writes one it reads) when either of the
//     two has a non-serial, non-vector map. A backend that finishes every
//     mapped loop before going on (the LLVM backend's fork/join) meets every
//     barrier without code.
//   - Inside a gpu-block loop, the block's threads run its body: each
//     gpu-thread loop's iterations are spread over the threads (iteration t
//     on thread t), the other statements (lets of values uniform over the
//     block, and serial loops of a uniform trip count around gpu-thread
//     loops and barriers) run on every thread, and a barrier in the body waits for all
//     threads of the block; statements between two such barriers may run at
//     once on different threads. A shared buffer (KBUF_SHARED) is per block:
//     what one thread stores another reads only after a barrier. A local
//     buffer (KBUF_LOCAL) is per thread: iteration t of every gpu-thread
//     loop of a block iteration reads and writes thread t's instance, which
//     keeps its values from one gpu-thread loop to the next (across
//     barriers) until the block iteration ends; its indices are constants,
//     so a backend keeps it in registers.
//   - Temporaries live in the program's scratch block (at least `scratch`
//     bytes, 64-byte aligned) at their planned byte offset (a multiple of
//     64); temporaries whose lifetimes (first to last kernel using them)
//     overlap never overlap in bytes, others may share them, so a
//     temporary holds nothing before the first kernel that takes it, which
//     writes it.
//   - check(cond, msg): if cond is false the program stops with msg (an index
//     out of range, a bad target); backends report it and return an error.
//   - fma(a, b, c) is a * b + c with one rounding (fmaf for f32, f16 and bf16,
//     fma for f64). matmul and conv2d (and its gradients) accumulate in the
//     order of the CPU kernel library, kernels/gemm_ref.h (the lowering's
//     canonical nests and the library calls alike): per output element K
//     blocks of fma chains from +0 in k order, block sums added in order; a
//     convolution is its im2col GEMM (a padding tap is a product with 0).
//   - call FN(..) runs one entry point of that library (the KIR_CALLS
//     table; mlc_kernels.h) on f32 buffer operands, each a buffer and an i64
//     element offset: its results are kernels/gemm_ref.h's in f32. A call is
//     internally parallel (it counts as concurrent for the barrier rule) and
//     finishes before the next statement starts; inside a chunk loop it runs
//     on that chunk's thread. Its bits do not depend on the thread count.
//
// Ownership: everything lives in the program's arena.
#ifndef MLC_KIR_H
#define MLC_KIR_H

#include "types/tensor.h"

// Float sums (above): the positions of one chunk of a long sum.
enum { KIR_SUM_CHUNK = 8192 };

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
  KE_FMA,     // .a * .b + .c rounded once (all of dtype, a float dtype)
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
  X(FLOOR, "floor")                                                            \
  X(ROUND_BF16, "round_bf16") /* f32: to the nearest bfloat16, ties to even (kernels/round16.h) */ \
  X(ROUND_F16, "round_f16")   /* f32: to the nearest IEEE half, ties to even, overflow to inf */

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
  KS_FOR,     // for var in [0, .n): .body   (.parallel, .map, .grain, .captures)
  KS_LET,     // var = .value: declares the local .var (first and only let)
  KS_ASSIGN,  // var = .value: updates a local declared by an enclosing let
  KS_STORE,   // .buf[.index] = .value
  KS_IF,      // if .cond: .body else .els
  KS_CHECK,   // if !.cond: stop with .msg
  KS_BARRIER, // everything before it finishes before anything after it starts
  KS_CALL,    // .call: one entry point of the CPU kernel library (KIR_CALLS)
  KS_MMA,     // .mma: a warp's 16 x 8 x 16 tensor-core product, this thread's share (KMma)
} KStmtKind;

// ---- warp-level products ------------------------------------------------------------------------
// KS_MMA: `mma bf16 D[d0] += A[oa] strides [ars, aks] * B[ob] strides
// [bks, bcs]`, the thread's share of one PTX mma.sync.m16n8k16 (f32
// accumulation) of its warp.
// A(r, k), r < 16, k < 16, is shared buffer a at oa + r ars + k aks; B(k,
// c), c < 8, is shared buffer b at ob + k bks + c bcs; both of dtype prec
// (bf16 or f16), so every product is exact in f32. The thread of lane l
// (its gpu-thread iteration mod 32; g = l / 4, t = l % 4) owns the 4
// elements D(g + 8 (i / 2), 2 t + i % 2), i < 4, of the 16 x 8 product, at
// local buffer d[d0 + i] (f32). Defined order (kir_run, the emulation):
// each from its old value, + A(row, k) B(k, col) for k ascending, one
// fmaf each. A GPU's tensor core sums in its own order: docs/design/cuda.md
// ("Tensor cores") states the tolerance. Every lane of a warp runs it with
// the same operands (the verifier: directly in a gpu-thread loop of a
// multiple of 32 iterations).
typedef struct KMma {
  DType prec;         // DT_BF16 or DT_F16
  int a, b;           // shared buffers
  KExpr *oa, *ob;     // i64 element offsets of A(0, 0) and B(0, 0)
  int64_t ars, aks;   // A's strides (row, k)
  int64_t bks, bcs;   // B's strides (k, col)
} KMma;

// ---- library calls ----------------------------------------------------------------------------------
// The entry points of kernels/cpu (mlc_kernels.h) a schedule may call
// instead of a loop nest, with their parameters in the C function's order
// after the pool: X(id, name, C function, "NAME:KIND ..."), KIND one of
//   i  an i64 expression                 f  an f32 expression
//   F  the flag word, GEMM flag names    C  the flag word, conv flag names
//   r  a buffer read: buffer + i64 element offset (the address of that element)
//   w  a buffer written                  m  read (when beta != 0) and written
//   o  an optional buffer read: a buffer + offset, or none
//   u  an optional buffer written: a buffer + offset, or none (not written)
//   g  a conv geometry: KIR_CONV_GEOM i64 expressions in MLC_CONV_* order
// Every buffer operand is f32 but `pick`, u8: a 2 x 2 pool's picks, one
// byte per window (MLC_PICK_* of mlc_kernels.h), which the forward's
// conv2d_pool_pick writes for the backward's *_pick calls.
#define KIR_CALLS(X)                                                                              \
  X(SGEMM, "sgemm", "mlc_sgemm",                                                                  \
    "flags:F m:i n:i k:i alpha:f a:r lda:i b:r ldb:i beta:f c:m ldc:i bias:o aux:o ldaux:i")     \
  X(SGEMM_BATCHED, "sgemm_batched", "mlc_sgemm_batched",                                          \
    "flags:F batch:i m:i n:i k:i alpha:f a:r lda:i sa:i b:r ldb:i sb:i beta:f c:m ldc:i sc:i "   \
    "bias:o aux:o ldaux:i saux:i")                                                                \
  X(CONV2D, "conv2d", "mlc_conv2d", "geom:g flags:C x:r w:r bias:o y:w")                          \
  X(CONV2D_GRAD_INPUT, "conv2d_grad_input", "mlc_conv2d_grad_input",                              \
    "geom:g flags:C dy:r w:r dx:w")                                                               \
  X(CONV2D_GRAD_WEIGHT, "conv2d_grad_weight", "mlc_conv2d_grad_weight",                           \
    "geom:g flags:C dy:r x:r dw:w")                                                               \
  X(CONV2D_GRAD_WEIGHT_BIAS, "conv2d_grad_weight_bias", "mlc_conv2d_grad_weight_bias",            \
    "geom:g flags:C dy:r x:r dw:w db:w")                                                          \
  X(CONV2D_GRAD_WEIGHT_POOL, "conv2d_grad_weight_pool", "mlc_conv2d_grad_weight_pool",            \
    "geom:g flags:C dyp:r px:r aux:o x:r dw:w db:u")                                              \
  X(CONV2D_POOL, "conv2d_pool", "mlc_conv2d_pool", "geom:g flags:C x:r w:r bias:o y:u yp:w")       \
  X(MAX_POOL2D, "max_pool2d", "mlc_max_pool2d", "n:i c:i h:i w:i kh:i kw:i sh:i sw:i x:r y:w")     \
  X(MAX_POOL2D_GRAD, "max_pool2d_grad", "mlc_max_pool2d_grad",                                    \
    "n:i c:i h:i w:i kh:i kw:i sh:i sw:i dy:r x:r aux:o dx:w")                                   \
  X(CONV2D_POOL_PICK, "conv2d_pool_pick", "mlc_conv2d_pool_pick",                                  \
    "geom:g flags:C x:r w:r bias:o y:u yp:w pick:w")                                              \
  X(CONV2D_GRAD_WEIGHT_PICK, "conv2d_grad_weight_pick", "mlc_conv2d_grad_weight_pick",            \
    "geom:g flags:C dyp:r pick:r mask:i x:r dw:w db:u")                                           \
  X(MAX_POOL2D_GRAD_PICK, "max_pool2d_grad_pick", "mlc_max_pool2d_grad_pick",                     \
    "n:i c:i h:i w:i mask:i dy:r pick:r dx:w")                                                    \
  X(CONV2D_GRAD_PICK, "conv2d_grad_pick", "mlc_conv2d_grad_pick",                                 \
    "geom:g flags:C dyp:r pick:r mask:i w:r x:r dx:w dw:w db:u")

typedef enum {
#define X(id, name, cfn, params) KCALL_##id,
  KIR_CALLS(X)
#undef X
  KCALL_COUNT
} KirCallFn;

// The flag bits, as mlc_kernels.h numbers them (kir_interp.c asserts it).
// bf16 / f16 (the op's precision) round the products' operands; the conv
// calls take them at the GEMM's bit positions (bits 1-6 unnamed there).
enum {
  KIR_GEMM_TRANS_A = 1 << 0, KIR_GEMM_TRANS_B = 1 << 1, KIR_GEMM_BIAS_COL = 1 << 2,
  KIR_GEMM_BIAS_ROW = 1 << 3, KIR_GEMM_RESIDUAL = 1 << 4, KIR_GEMM_RELU = 1 << 5,
  KIR_GEMM_RELU_MASK = 1 << 6, KIR_GEMM_BF16 = 1 << 7, KIR_GEMM_F16 = 1 << 8,
  KIR_GEMM_FLAGS = 9, // named bits
  // winograd: the conv2d / conv2d_pool / conv2d_grad_input call computes by F(2x2, 3x3) (kernels/winograd_ref.h's
  // order, which kir_interp runs too); set by the schedule for `mlc build --conv winograd`
  KIR_CONV_RELU = 1 << 0, KIR_CONV_WINOGRAD = 1 << 1, KIR_CONV_BF16 = 1 << 7, KIR_CONV_F16 = 1 << 8,
  KIR_CONV_FLAGS = 9,
  KIR_CONV_GEOM = 14, // N C H W O KH KW SH SW PH PW DH DW G
};

typedef enum {
  KCA_I64,   // i
  KCA_F32,   // f
  KCA_GFLAGS, KCA_CFLAGS, // F, C
  KCA_READ, KCA_WRITE, KCA_UPDATE, KCA_OPT, KCA_OPTW, // r, w, m, o, u (the buffer kinds: READ..OPTW)
  KCA_GEOM,  // g
} KCallArgKind;

enum { KIR_CALL_MAX_PARAMS = 24, KIR_CALL_MAX_SLOTS = 40 };

typedef struct KirCallParam {
  char name[12];
  KCallArgKind kind;
  int slot, nslots; // its expressions in KCall.slot (flags: none)
} KirCallParam;

typedef struct KirCallSpec {
  const char *name, *cfn;
  int nparams, nslots;
  KirCallParam param[KIR_CALL_MAX_PARAMS];
} KirCallSpec;

typedef struct KCall {
  KirCallFn fn;
  uint32_t flags;  // the flag word (F or C parameter)
  KExpr **slot;    // per slot: an i64/f32 expression, or a buffer operand's element offset
  int *buf;        // per slot: a buffer operand's buffer, -1 (none, or not a buffer)
} KCall;

// How a schedule runs a loop (kir.h top). The text form names them.
#define KIR_MAPS(X)                                                            \
  X(SERIAL, "serial")         /* in order, on the running thread */            \
  X(CHUNK, "chunk")           /* CPU thread pool, .grain iterations a chunk */ \
  X(GPU_BLOCK, "gpu-block")   /* one GPU block per iteration */                \
  X(GPU_THREAD, "gpu-thread") /* one thread of the enclosing block each */     \
  X(VECTOR, "vector")         /* SIMD, .grain lanes */

typedef enum {
#define X(id, name) KMAP_##id,
  KIR_MAPS(X)
#undef X
  KMAP_COUNT
} KLoopMap;

typedef struct KStmt {
  KStmtKind kind;
  int var;          // KS_FOR, KS_LET, KS_ASSIGN
  KExpr *n;         // KS_FOR trip count (i64)
  bool parallel;    // KS_FOR: iterations independent (a lowering fact)
  KLoopMap map;     // KS_FOR: set by the schedule (KMAP_SERIAL before)
  KExpr *grain;     // KS_FOR chunk: iterations per chunk (i64); vector: lanes (constant)
  Vec captures;     // KS_FOR chunk, gpu-block: int (as intptr_t) kernel vars read, not defined, inside; ascending
  int buf;          // KS_STORE
  KExpr *index;     // KS_STORE (i64)
  KExpr *value;     // KS_LET, KS_ASSIGN, KS_STORE
  KExpr *cond;      // KS_IF, KS_CHECK (bool)
  const char *msg;  // KS_CHECK
  Vec body;         // KStmt*: KS_FOR body, KS_IF then-branch
  Vec els;          // KStmt*: KS_IF else-branch
  KCall *call;      // KS_CALL
  KMma *mma;        // KS_MMA (its D: .buf, a local buffer, from element .index, a constant)
} KStmt;

// ---- what a kernel computes ---------------------------------------------------------------
// The ops whose scheduled form may be another loop nest than the canonical
// one (a recipe of the schedule, schedule.c). The lowering records the op
// with its operands by role (buffer and the shape the op sees: a reshape
// shares its source's buffer, so the two shapes may differ) and its
// constant attributes; the canonical nest stays the kernel's body until a
// recipe replaces it. X(id, name, roles, attributes "name:count ...").
// The matmul_* kinds are a matmul with the elementwise op(s) after it
// folded in (the kernel library's epilogues, applied to each element after
// its K sum, in this order): + bias[j] (bias: [N], along y's last dim),
// + aux (aux: y's shape, row-major), then relu (attribute relu = 1, or
// matmul_relu), or relu_mask (y = aux > 0 ? y : 0, relu_grad's mask). y
// and aux are row-major and never share bytes. conv2d_bias is conv2d then
// + bias[o] (bias: [O, 1, 1] or [1, O, 1, 1]), then relu with relu = 1.
// max_pool2d_grad_relu_mask is max_pool2d_grad, then dx = aux > 0 ? dx : 0
// (relu_grad's mask; aux: dx's shape, never dx's bytes). conv_bias_grad is
// the reduce_to of a conv's dy [N, O, HO, WO] to its bias's gradient db
// (O elements: [O], [O, 1, 1] or [1, O, 1, 1]) in f32, the float-sum order
// over (n, HO*WO); its canonical nest is the reduce_to's, and the cpu
// schedule folds it into the conv2d_grad_weight call of the same dy.
#define KIR_OPS(X)                                                             \
  X(MATMUL, "matmul", "a b y", "")                                             \
  X(MATMUL_BIAS, "matmul_bias", "a b y bias", "relu:1")                        \
  X(MATMUL_RESIDUAL, "matmul_residual", "a b y aux", "relu:1")                 \
  X(MATMUL_RELU, "matmul_relu", "a b y", "")                                   \
  X(MATMUL_RELU_MASK, "matmul_relu_mask", "a b y aux", "")                     \
  X(CONV2D, "conv2d", "x w y", "stride:2 padding:2 dilation:2 groups:1")      \
  X(CONV2D_BIAS, "conv2d_bias", "x w y bias",                                  \
    "stride:2 padding:2 dilation:2 groups:1 relu:1")                           \
  X(CONV2D_GRAD_INPUT, "conv2d_grad_input", "dy w dx",                         \
    "stride:2 padding:2 dilation:2 groups:1")                                  \
  X(CONV2D_GRAD_WEIGHT, "conv2d_grad_weight", "dy x dw",                       \
    "stride:2 padding:2 dilation:2 groups:1")                                  \
  X(MAX_POOL2D, "max_pool2d", "x y", "kernel:2 stride:2 padding:2")            \
  X(AVG_POOL2D, "avg_pool2d", "x y", "kernel:2 stride:2 padding:2")            \
  X(MAX_POOL2D_GRAD, "max_pool2d_grad", "dy x dx", "kernel:2 stride:2 padding:2") \
  X(AVG_POOL2D_GRAD, "avg_pool2d_grad", "dy x dx", "kernel:2 stride:2 padding:2") \
  X(MAX_POOL2D_GRAD_RELU_MASK, "max_pool2d_grad_relu_mask", "dy x dx aux",       \
    "kernel:2 stride:2 padding:2")                                             \
  X(CONV_BIAS_GRAD, "conv_bias_grad", "dy db", "")

typedef enum {
#define X(id, name, bufs, attrs) KOP_##id,
  KIR_OPS(X)
#undef X
  KOP_COUNT
} KirOpKind;

enum { KIR_OP_MAX_BUFS = 4, KIR_OP_MAX_ATTRS = 8, KIR_OP_MAX_RANK = 8 };

typedef struct KirOp {
  KirOpKind kind;
  int buf[KIR_OP_MAX_BUFS];      // program buffers, in the table's role order
  int rank[KIR_OP_MAX_BUFS];     // each operand's shape as the op sees it:
  KExpr *dims[KIR_OP_MAX_BUFS][KIR_OP_MAX_RANK]; // i64 expressions over syms
  // and its element strides into the buffer (NULL in [i][0]: row-major
  // over dims): a matmul operand may be a transposed view of its buffer
  KExpr *strides[KIR_OP_MAX_BUFS][KIR_OP_MAX_RANK];
  int64_t attr[KIR_OP_MAX_ATTRS]; // in the table's order, pairs as (h, w)
  // matmul and conv kinds: the graph op's precision (DT_F32, DT_BF16,
  // DT_F16), which the nest spells as round_bf16/round_f16 of every
  // operand load and a library call as its bf16/f16 flag. Text: after the
  // attributes, ` precision bf16` (nothing for f32).
  DType precision;
} KirOp;

// ---- kernels, buffers, symbols, programs ------------------------------------------------
typedef struct KirVar {
  const char *name; // unique in the kernel (i0, acc, ...)
  DType dtype;      // loop indices are i64
  bool is_loop;
} KirVar;

typedef struct KirKernel {
  const char *name; // unique in the program: "k3_matmul"
  Span span;        // the graph op it was lowered from
  KirOp *op;        // what it computes, for ops with recipes (NULL otherwise)
  Vec params;       // int (stored as intptr_t): buffer indices it reads/writes, ascending
  Vec vars;         // KirVar*
  Vec body;         // KStmt*
  Vec covers;       // KirCover*: every graph op a fused kernel computes, in
                    // order (empty: the one op of span)
} KirKernel;

// A graph op a fused kernel covers: its span and name. Text (after the op
// record): `covers add %12 line 7, relu %13 line 7` (line 0: none known).
typedef struct KirCover {
  Span span;        // (a parsed program: none)
  const char *op;   // "add"
  int node;         // the graph op's printed id (%12)
  int line;         // the span's line, 0 when unknown
} KirCover;

typedef enum {
  KBUF_INPUT,  // function argument .index (read only)
  KBUF_OUTPUT, // function result .index (written by the program)
  KBUF_STATE,  // model state slot .path (param/buffer/optstate); written by stores
  KBUF_TEMP,   // intermediate, program-private, in the scratch block
  KBUF_SHARED, // GPU: per-block memory (constant size), used only inside gpu-block
               // loops; each block iteration has its own, uninitialised; not in scratch
  KBUF_LOCAL,  // GPU: per-thread memory (constant size, registers), used only inside
               // gpu-thread loops at constant indices; one instance per thread of
               // the block, living from the block's start to its end (across its
               // barriers and gpu-thread loops), uninitialised; not in scratch
  KBUF_KIND_COUNT
} KirBufKind;

// A local buffer's elements at most (a thread has 255 registers; more would
// spill to local memory), and the threads per block the interpreter keeps
// instances for (every gpu target's max_threads is at most this).
enum { KIR_LOCAL_MAX = 64, KIR_LOCAL_THREADS = 1024 };

typedef struct KirBuf {
  const char *name;  // %x, out0, state:fc1.w, t5
  KirBufKind kind;
  int index;         // KBUF_INPUT/KBUF_OUTPUT: position
  const char *path;  // KBUF_STATE
  DType dtype;
  int rank;          // shape: dims[0..rank), row-major
  KExpr **dims;      // each an i64 expression over syms
  KExpr *numel;      // element count: the product of dims
  KExpr *offset;     // KBUF_TEMP once planned: byte offset into scratch (i64 over syms)
} KirBuf;

typedef struct KirSym {
  const char *name;  // as printed: B, H, or s3 for a derived size
  int arg, dim;      // bound from argument `arg`'s dim `dim` (arg >= 0) ...
  KExpr *def;        // ... or defined by this i64 expression over earlier syms
} KirSym;

typedef struct KirProgram {
  Arena *arena;
  const char *name;  // the graph function's name
  const char *target; // the KirTarget it is scheduled for; NULL before kir_schedule
  Vec syms;          // KirSym*
  Vec bufs;          // KirBuf*
  KExpr *scratch;    // bytes of scratch (i64 over syms); NULL before kir_plan_memory
  Vec kernels;       // KirKernel*, in run order
  int ninputs, noutputs;
} KirProgram;

// ---- construction (kir.c) ----------------------------------------------------------------
KirProgram *kir_program_new(Arena *a, const char *name);
int kir_sym_add(KirProgram *p, const char *name, int arg, int dim, KExpr *def);
// A buffer of the given shape (dims copied); numel becomes their product.
int kir_buf_add(KirProgram *p, KirBufKind kind, const char *name, DType dt,
                int rank, KExpr *const *dims);
KirKernel *kir_kernel_new(KirProgram *p, const char *name, Span sp);
int kir_var_new(KirProgram *p, KirKernel *k, const char *name, DType dt,
                bool is_loop);
// Records that k touches buffer b (kept unique and ascending).
void kir_kernel_use(KirProgram *p, KirKernel *k, int b);
// Sets k's op record: the roles' buffers (made parameters of k), their
// shapes (rank[i] dims from dims[i]) and the attributes.
KirOp *kir_kernel_op(KirProgram *p, KirKernel *k, KirOpKind kind,
                     const int *bufs, const int *rank,
                     KExpr *const (*dims)[KIR_OP_MAX_RANK],
                     const int64_t *attrs);

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
KExpr *kir_fma(KirProgram *p, KExpr *a, KExpr *b, KExpr *c); // a * b + c, one rounding
// Stride d of the op operand in `role`: the recorded one, or the row-major one.
KExpr *kir_op_stride(KirProgram *p, const KirOp *op, int role, int d);

// Statements are appended to a block (a Vec of KStmt*); kir_for and kir_if
// return the new statement so the caller appends to its body/els.
KStmt *kir_for(KirProgram *p, Vec *block, int var, KExpr *n, bool parallel);
KStmt *kir_let(KirProgram *p, Vec *block, int var, KExpr *value);
KStmt *kir_assign(KirProgram *p, Vec *block, int var, KExpr *value);
KStmt *kir_store(KirProgram *p, Vec *block, int buf, KExpr *index,
                 KExpr *value);
KStmt *kir_if(KirProgram *p, Vec *block, KExpr *cond);
KStmt *kir_check(KirProgram *p, Vec *block, KExpr *cond, const char *msg);
KStmt *kir_barrier(KirProgram *p, Vec *block);
// A call of fn with every slot unset (buffers -1, expressions NULL); the
// setters fill parameters by name (kir_call_spec's), false for an unknown
// name or a parameter of another kind.
KStmt *kir_call(KirProgram *p, Vec *block, KirCallFn fn);
// d[d0..d0+4) += the lane's share of A(16 x 16) B(16 x 8) (KMma; m copied).
KStmt *kir_mma(KirProgram *p, Vec *block, int d, int64_t d0, const KMma *m);
void kir_call_spec(KirCallFn fn, KirCallSpec *out);
const KirCallParam *kir_call_param(const KirCallSpec *sp, const char *name);
bool kir_call_set(KStmt *s, const char *param, KExpr *e);            // i, f
bool kir_call_operand(KStmt *s, const char *param, int buf, KExpr *offset); // r w m o (buf -1: none)
bool kir_call_geom(KStmt *s, KExpr *const *geom);                    // g: KIR_CONV_GEOM values
const char *kir_call_name(KirCallFn fn);
const char *kir_call_cfn(KirCallFn fn);
// The flag names of a flag kind (KCA_GFLAGS, KCA_CFLAGS), bit i's at [i].
const char *const *kir_call_flag_names(KCallArgKind kind, int *n);
// The element range [lo[s], hi[s]) each buffer operand slot s of a call
// touches, from the values of its slots (vals[s]: i64 slots' values; a
// buffer operand's slot holds its offset); lo = hi for one it does not touch.
// False when the values make no sense (a negative size, a bad geometry).
bool kir_call_extents(const KCall *c, const int64_t *vals, int64_t *lo, int64_t *hi);

const char *kir_unop_name(KUnOp op);
const char *kir_binop_name(KBinOp op);
const char *kir_map_name(KLoopMap m);
const char *kir_op_name(KirOpKind op);
static inline KirBuf *kir_buf(const KirProgram *p, int b) {
  return VEC_AT(p->bufs, KirBuf, b);
}
static inline int kir_param(const KirKernel *k, int i) {
  return (int)(intptr_t)k->params.data[i];
}
static inline int kir_capture(const KStmt *s, int i) {
  return (int)(intptr_t)s->captures.data[i];
}

// ---- analysis helpers (kir.c) ---------------------------------------------------------------
// Structural equality of two expressions.
bool kir_expr_equal(const KExpr *a, const KExpr *b);
// The kernel variables loop s reads but does not define (its captures), in
// ascending order, as int (intptr_t) into out.
void kir_loop_captures(const KirProgram *p, const KirKernel *k, const KStmt *s,
                       Vec *out);
// Adds to reads[] / writes[] (one bool per program buffer) what s touches.
void kir_stmt_access(const KStmt *s, bool *reads, bool *writes);
// kir.h's barrier rule for two top-level statements of one segment, a
// before b: the buffer both touch (one writing it) when either runs
// concurrently (a chunk or gpu map inside), else -1.
int kir_barrier_conflict(const KirProgram *p, const KStmt *a, const KStmt *b);
// The value of a program-level i64 expression (constants, syms, + - * div
// mod max min) with syms[] the syms' values; false for anything else (a
// load, a variable) or a division by zero.
bool kir_eval_i64(const KExpr *e, const int64_t *syms, int64_t *out);
// The syms' values when each argument-bound sym s is arg_value(s) (derived
// syms from their definitions); false when a definition does not evaluate.
bool kir_bind_syms(const KirProgram *p, const int64_t *arg_values, int64_t *syms);

// ---- text form, parser and verifier (kir.c, kir_parse.c, kir_verify.c) ------------------------
// Canonical text (docs/design/kir.md has the grammar and a full example):
//   program forward
//   target cpu
//   sym B = arg 0 dim 0
//   buf %x : f32[B, 784] input 0
//   buf t2 : f32[B, 256] temp at 0
//   scratch (B * 1024)
//   kernel k2_matmul(%x, t1, t2) {
//     op matmul(a = %x[B, 784], b = t1[784, 256], y = t2[B, 256])
//     parallel for i0 < B @chunk(max(div((B + 63), 64), 1)) {
//       for j1 < 256 {
//         t2[((i0 * 256) + j1)] = 0.0:f32
//       } ...
void kir_print(StrBuf *b, const KirProgram *p);
void kir_dump(const KirProgram *p, FILE *out);
// A kernel's text independent of its program: buffers named by parameter
// position (with their dtypes), syms by order of first use, variables by
// index, check messages by position (m0, m1, ... in kir_kernel_checks'
// order), no name, span or op record. Equal keys print to equal code once
// the syms and the messages are given; a backend compiles such kernels once
// (the finite checks of a program differ only in their messages). syms_used
// (may be NULL; room for every program sym) gets the program sym of each
// canonical sym, and *nsyms their count.
void kir_kernel_key(StrBuf *b, const KirProgram *p, const KirKernel *k,
                    int *syms_used, int *nsyms);
// The kernel's check statements (KStmt*) in the order the key numbers them:
// statements in order, a loop's or branch's body (then else) before the next.
void kir_kernel_checks(const KirProgram *p, const KirKernel *k, Vec *out);
// Parses the text of one or more programs (kir_print's output; `;` starts a
// comment) into progs (KirProgram*, in the file's order). Errors go to d at
// file:line:col; false when there was any.
bool kir_parse(Arena *a, const SrcFile *src, Vec *progs, DiagSink *d);
// Every var defined before use (loop vars inside their loop, locals after
// their let, in scope), loads/stores in the kernel's params, buffer/sym
// indices in range, dtypes consistent (indices and trip counts i64, conds
// bool, operands of one dtype). Scheduled programs: maps legal for the
// target, chunk grains and captures complete, barriers where kir.h's rule
// wants them. Planned programs: offsets aligned, inside scratch and apart
// for temporaries live at once (checked at sample sizes), each temporary
// written by the first kernel that takes it. Reports
// "kir: kernel k3_matmul: ..." to d (at the kernel's span) and returns false
// on the first problems found.
bool kir_verify(const KirProgram *p, DiagSink *d);

// ---- reference evaluator (kir_interp.c) ---------------------------------------------------------
// Runs p with the graph interpreter's conventions (interp.h): arguments in
// signature order bind the syms, state comes from params by path (stores
// write it back, in place, as interp_run does), outputs are fresh tensors.
// INTERP_F32 rounds every float op to float; INTERP_F64 keeps doubles.
// Maps and barriers change nothing here (a serial run is one valid
// schedule). Returns 0, or -1 with a message in err.
int kir_run(const KirProgram *p, InterpMode mode, Tensor **inputs, int nin,
            const InterpParams *params, Tensor **outputs, char *err,
            size_t errlen);


#endif
