// ir.h — the graph IR: typed SSA tensor graphs, one per entry point
// (forward, loss, eval, later backward and train_step), inside a module that
// lists the model's parameters and buffers.
//
// Shape of the data:
//   IrModule   name; params/buffers (IrParam: path such as fc1.w, type,
//              trainable or frozen); functions
//   IrFunc     name; inputs (IR_INPUT nodes, in signature order); body nodes
//              in topological order; outputs and their declared result types;
//              the symbols (B, T, ...) its types mention
//   IrNode     op + inputs + attributes + result type + span: every node is
//              one SSA value
//
// Ownership: everything is allocated from the module's arena and freed with
// it. Pure nodes are hash-consed per function: asking for a node equal to an
// existing one (op, inputs, attributes, type) returns the existing node, so
// CSE comes free. Impure nodes (IRF_IMPURE: dropout, dropout_mask) are never
// merged and carry a unique seed attribute.
//
// The text form (ir_print.c / ir_parse.c), verifier (ir_verify.c), shape
// rules (ir_shape.c) and DOT dump (ir_dot.c) are declared here as well; the
// grammar is in docs/design/ir.md.
#ifndef MLC_IR_H
#define MLC_IR_H

#include "types/types.h"

// ---- op table -------------------------------------------------------------------
typedef enum {
  IRC_INPUT,     // input, param, buffer: type given
  IRC_CONST,     // const, arange, causal_mask: type given
  IRC_UNARY,     // elementwise, one operand, same type out
  IRC_BINARY,    // elementwise, two operands, broadcast, equal dtypes
  IRC_COMPARE,   // broadcast, bool result
  IRC_LOGICAL,   // bool operands, bool result
  IRC_SELECT,    // where(cond, a, b)
  IRC_REDUCE,    // sum mean max min argmax {dims, keepdim}; reduce_to
  IRC_NORMALIZE, // softmax log_softmax {dim}
  IRC_VIEW,      // reshape transpose slice concat broadcast_to
  IRC_MATMUL,    // batched matrix product
  IRC_CONV,      // conv2d and its two gradients
  IRC_POOL,      // 2-D pooling and its gradients
  IRC_NORM,      // batch_norm layer_norm and their gradients
  IRC_INDEX,     // embedding (gather) and embedding_grad (scatter-add)
  IRC_RNG,       // dropout dropout_mask rand randn (impure)
  IRC_LOSS,      // scalar losses and cross_entropy_grad
  IRC_CAST,      // cast stop_gradient
  IRC_GRAD,      // fused backward rules (dy, saved) -> dx
} IrClass;

enum {
  IRF_IMPURE = 1, // never hash-consed; has a unique `seed` attribute
  IRF_DIFF = 2,   // differentiable: has a reverse-mode rule
  IRF_EFFECT = 4, // writes model state (store): never hash-consed, no seed
};

typedef enum {
#define IROP(id, name, nin, cls, flags) IR_##id,
#include "ir_ops.def"
  IR_OP_COUNT
} IrOp;

const char *ir_op_name(IrOp op);
int ir_op_nin(IrOp op); // -1: variadic (at least one)
IrClass ir_op_class(IrOp op);
unsigned ir_op_flags(IrOp op);
int ir_op_lookup(const char *name); // -1 if unknown

// ---- attributes -------------------------------------------------------------------
// Attributes are a small list sorted by key (so equal sets compare and print
// equal). Each key has one fixed kind. Shapes are not attributes: ops whose
// result shape is not a function of their inputs (reshape, broadcast_to,
// slice length, cast dtype, const) take it from the node's type.
typedef enum {
  IRK_INT,   // one integer
  IRK_INTS,  // a list of integers
  IRK_FLOAT, // one double
  IRK_DTYPE, // a dtype, stored as IRK_INT holds its DType; printed by name (bf16)
} IrAttrKind;

#define IR_ATTR_KEYS(X)                                                        \
  X(DIM, "dim", IRK_INT)           /* softmax/concat/slice axis */              \
  X(DIMS, "dims", IRK_INTS)        /* reduced axes, ascending */                \
  X(KEEPDIM, "keepdim", IRK_INT)   /* 0 or 1 */                                 \
  X(PERM, "perm", IRK_INTS)        /* transpose: out dim i = in dim perm[i] */  \
  X(START, "start", IRK_INT)       /* slice start (>= 0) */                     \
  X(STEP, "step", IRK_INT)         /* slice step (>= 1) */                      \
  X(KERNEL, "kernel", IRK_INTS)    /* pool window [kh, kw] */                   \
  X(STRIDE, "stride", IRK_INTS)    /* [sh, sw] */                               \
  X(PADDING, "padding", IRK_INTS)  /* [ph, pw] */                               \
  X(DILATION, "dilation", IRK_INTS) /* [dh, dw] */                              \
  X(GROUPS, "groups", IRK_INT)     /* conv groups (>= 1) */                     \
  X(NDIMS, "ndims", IRK_INT)       /* layer_norm: trailing dims normalised */   \
  X(EPS, "eps", IRK_FLOAT)         /* norm epsilon */                           \
  X(P, "p", IRK_FLOAT)             /* dropout probability in [0, 1) */          \
  X(SEED, "seed", IRK_INT)         /* impure ops: unique per module */          \
  X(VALUE, "value", IRK_FLOAT)     /* const: the splatted value */         \
  X(FUNC, "func", IRK_INT)         /* custom_grad: index of its gradient function in the module */ \
  X(A, "a", IRK_FLOAT)             /* an elementwise op's first scalar parameter (scalar.h) */  \
  X(B, "b", IRK_FLOAT)             /* its second */                                            \
  X(PRECISION, "precision", IRK_DTYPE) /* matmul, conv2d and its gradients: the products'    \
                                          operands are rounded to bf16 or f16 (absent: f32) */

typedef enum {
#define X(id, name, kind) IRA_##id,
  IR_ATTR_KEYS(X)
#undef X
  IRA_COUNT
} IrAttrKey;

const char *ir_attr_name(IrAttrKey k);
IrAttrKind ir_attr_kind(IrAttrKey k);
int ir_attr_lookup(const char *name); // -1 if unknown

typedef struct IrAttr {
  IrAttrKey key;
  int n;          // IRK_INT: 1; IRK_INTS: list length; IRK_FLOAT: 0
  int64_t *ints;  // IRK_INT/IRK_INTS values
  double f;       // IRK_FLOAT value
} IrAttr;

typedef struct IrAttrs {
  int n;
  IrAttr *a; // sorted by key, keys unique
} IrAttrs;

// Setters keep the list sorted; setting a key again replaces its value.
void ir_attr_set_int(Arena *a, IrAttrs *as, IrAttrKey k, int64_t v);
void ir_attr_set_ints(Arena *a, IrAttrs *as, IrAttrKey k, const int64_t *v,
                      int n);
void ir_attr_set_float(Arena *a, IrAttrs *as, IrAttrKey k, double v);
const IrAttr *ir_attr_get(const IrAttrs *as, IrAttrKey k); // NULL if absent
// Typed getters: false (and *out untouched) if absent or of another kind
// (ir_attr_int also reads an IRK_DTYPE attribute's DType).
bool ir_attr_int(const IrAttrs *as, IrAttrKey k, int64_t *out);
const int64_t *ir_attr_ints(const IrAttrs *as, IrAttrKey k, int *n);
bool ir_attr_float(const IrAttrs *as, IrAttrKey k, double *out);
bool ir_attrs_eq(const IrAttrs *x, const IrAttrs *y);

// ---- graph --------------------------------------------------------------------------
typedef struct IrFunc IrFunc;

typedef struct IrNode {
  IrOp op;
  Type *type;        // result type
  struct IrNode **in; // operands (nin of them)
  int nin;
  IrAttrs attrs;
  Span span;         // the source construct this value comes from
  const char *loc;   // from parsed text: "file:line:col", "" = none; overrides span
  const char *name;  // input: argument name; param/buffer: path (fc1.w)
  int id;            // printed number (%id) of body nodes; set by ir_number
  int order;         // position: inputs -n..-1, body 0..; set by ir_number
  IrFunc *func;      // owning function
} IrNode;

// A node's attribute k with a default when absent (0, 0.0, or a list of 64
// zeros: never NULL). For passes over verified IR, where the op's attributes
// are known to be present.
int64_t ir_node_int(const IrNode *n, IrAttrKey k);
const int64_t *ir_node_ints(const IrNode *n, IrAttrKey k);
double ir_node_float(const IrNode *n, IrAttrKey k);

typedef enum {
  IRP_PARAM,
  IRP_BUFFER,
  IRP_OPTSTATE, // optimizer/schedule state (opt.fc1.w.exp_avg, opt.step); read by `optstate`
} IrParamKind;

typedef struct IrParam {
  const char *name; // path: fc1.w, bn1.running_mean
  Type *type;
  IrParamKind kind;
  bool trainable; // params only; buffers are never trainable
  Span span;
  struct IrInit *init; // how the runtime initialises it; NULL: zeros
} IrParam;

struct IrFunc {
  const char *name;
  Span span;   // where function-level errors point (parsed: the return)
  struct IrModule *module;
  Vec params;  // IrNode* (IR_INPUT), signature order
  Vec nodes;   // IrNode*, body in topological order
  Vec outputs; // IrNode*, returned values
  Vec results; // Type*, declared result types (same length as outputs)
  Vec syms;    // Sym*, symbols the function's types mention (by name)
  // hash-consing table (open addressing over body nodes)
  IrNode **htab;
  int hcap, hlen;
};

typedef struct IrModule {
  Arena *arena;
  const char *name;
  Vec params; // IrParam*, params and buffers in declaration order
  Vec funcs;  // IrFunc*
  Vec syms;   // Sym*, symbols of module-level types
  int64_t next_seed; // next unique seed for impure ops
} IrModule;

IrModule *ir_module_new(Arena *a, const char *name);
IrParam *ir_module_add_param(IrModule *m, const char *name, Type *t,
                             IrParamKind kind, bool trainable, Span sp);
IrParam *ir_module_find_param(const IrModule *m, const char *name);
IrFunc *ir_func_new(IrModule *m, const char *name);
IrFunc *ir_module_find_func(const IrModule *m, const char *name);

// A symbol by name in the function (or module when f is NULL), created on
// first use. The parser uses it; builders may register their own Syms with
// ir_sym_add so printed names parse back to the same objects.
Sym *ir_sym(IrModule *m, IrFunc *f, const char *name);
void ir_sym_add(IrModule *m, IrFunc *f, Sym *s);

IrNode *ir_input(IrFunc *f, const char *name, Type *t, Span sp);
// Appends a node with the given type (no checking: the verifier checks).
// Pure nodes are hash-consed; impure ones without a seed get a fresh one.
IrNode *ir_node(IrFunc *f, IrOp op, IrNode **in, int nin, const IrAttrs *attrs,
                Type *type, Span sp);
// Same, but the type is computed by the op's shape rule (type-given ops take
// `given`, checked). Returns NULL and writes the reason to err on failure.
IrNode *ir_build(IrFunc *f, IrOp op, IrNode **in, int nin,
                 const IrAttrs *attrs, Type *given, Span sp, char *err,
                 size_t errlen);
// Reads of model state: param/buffer by path, typed from the module (the
// path must exist). ir_state_ref takes the op and type as given (parser).
IrNode *ir_param_ref(IrFunc *f, const char *path, Span sp);
IrNode *ir_state_ref(IrFunc *f, IrOp op, const char *path, Type *t, Span sp);
// store PATH(v): a write of state slot PATH (param, buffer or optstate) when
// the function completes; never merged. Typed as v (the verifier checks the
// slot's type).
IrNode *ir_store(IrFunc *f, const char *path, IrNode *v, Span sp);
void ir_return(IrFunc *f, IrNode *v, Type *declared);
// `precision dt` (bf16 or f16; f32 leaves m as it is): every f32 matmul,
// conv2d and conv2d gradient of every function gets attribute precision =
// dt, and the functions' hash-consing tables are rebuilt (the attribute is
// part of a node's key). Run on a module fresh from lowering; autodiff
// then copies the attribute to the products it makes.
void ir_module_set_precision(IrModule *m, DType dt);
// Assigns printed numbers and positions (inputs first, body 0..n-1).
void ir_number(IrFunc *f);
// "%x" or "%12" for printing and messages (arena string).
const char *ir_value_name(Arena *a, const IrNode *n);

// ---- shape rules (ir_shape.c) ----------------------------------------------------------
// The result type of `op` over inputs and attrs. Ops whose result is given
// (reshape, cast, const, ...) check `given` and return it. On error returns
// NULL with a message such as "inner dims 784 and 256 differ" in err.
Type *ir_shape_infer(Arena *a, IrOp op, IrNode **in, int nin,
                     const IrAttrs *attrs, const Type *given, char *err,
                     size_t errlen);
// The attributes op takes, as a bit set over IrAttrKey.
uint32_t ir_op_attrs(IrOp op);

// ---- text form (ir_print.c, ir_parse.c) ------------------------------------------------
enum {
  IR_PRINT_LOCS = 1,        // print loc(file:line:col) after each node
  IR_PRINT_NO_PRECISION = 2 // leave out precision attributes (the structural hash:
                            // a checkpoint resumes at any precision)
};

void ir_print_module(StrBuf *b, IrModule *m, unsigned flags);
void ir_print_func(StrBuf *b, IrFunc *f, unsigned flags);
void ir_dump(IrModule *m, FILE *out, unsigned flags);
// Parses a whole module; errors go to `diags` with spans into `src`. Returns
// NULL if any syntax error was reported. Types are not checked here: run
// ir_verify on the result.
IrModule *ir_parse(Arena *a, const SrcFile *src, DiagSink *diags);

// ---- verifier (ir_verify.c) ---------------------------------------------------------------
// Checks every invariant above; reports "ir: %5 = matmul(%3, %4): ..." errors
// at the node's span and returns false if any was found.
bool ir_verify(IrModule *m, DiagSink *diags);
bool ir_verify_func(IrFunc *f, DiagSink *diags);

// ---- initialisers (filled by lowering, lower.h) ----------------------------------------
// torch.nn.init semantics. fan_in = shape[1] * prod(shape[2:]), fan_out =
// shape[0] * prod(shape[2:]) (0 below rank 2). trunc_normal keeps its bounds
// a and b in low and high.
typedef enum {
  IRI_ZEROS, IRI_ONES, IRI_NORMAL, IRI_UNIFORM, IRI_CONSTANT,
  IRI_KAIMING_UNIFORM, IRI_KAIMING_NORMAL, IRI_XAVIER_UNIFORM,
  IRI_XAVIER_NORMAL, IRI_TRUNC_NORMAL,
} IrInitKind;

typedef struct IrInit {
  IrInitKind kind;
  double a;             // kaiming: negative slope
  double mean, std;     // normal, trunc_normal
  double low, high;     // uniform; trunc_normal: a, b
  double gain;          // xavier
  double value;         // constant
  const char *mode;     // kaiming: "fan_in" or "fan_out"
  const char *nonlinearity; // kaiming: "leaky_relu" by default
  int64_t fan_in, fan_out;
} IrInit;


// ---- DOT (ir_dot.c) -------------------------------------------------------------------------
void ir_dot(IrFunc *f, FILE *out);

#endif
