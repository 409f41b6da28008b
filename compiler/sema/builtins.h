// builtins.h — the built-in operators: their signatures, shape rules and
// FLOP counts. The op list itself lives in ops.def (the single source of
// truth for names, parameters, the IR op each becomes, its rule and its
// emitter).
//
// Sema resolves a call to a builtin, evaluates its arguments to Values and
// hands them here; this module binds positional and named arguments to the
// op's parameters, checks dtypes and shapes, reports errors at the offending
// argument's span, and returns the result.
#ifndef MLC_BUILTINS_H
#define MLC_BUILTINS_H

#include "graph/ir.h"
#include "value.h"

typedef struct BuiltinCall {
  Arena *arena;
  DiagSink *diags;
  Span span;      // the whole call expression
  Span name_span; // the callee name
  const char *name;
  int nargs;
  Value **args;       // evaluated arguments in source order
  const char **names; // NULL for positional arguments
  Span *name_spans;
  // Fresh opaque symbol for a size the compiler cannot know statically.
  Sym *(*fresh_sym)(void *env, const char *display, Span sp);
  void *env;
  // Outputs (what sema records for lowering, checked.h's CK_OP):
  Dim *flops;   // forward FLOPs of this call (NULL: 0); polynomial in symbols
  int op;       // the BuiltinOp the call resolved to (max(a, b) with a tensor b: maximum)
  int nparams;  // its parameters, in signature order:
  Value **bound; //  the value bound to each (the default's, when it is a
                 //  number, bool or dtype; NULL for all/none/kernel)
  int *source;  //  the index of the argument bound to it, -1 for a default
  IrAttrs attrs; // the graph IR attributes the rule resolved (dims, perm, eps, ...)
  Dim *slice_start; // slice: the first element, negative starts counted from the end
} BuiltinCall;

bool builtin_exists(const char *name);
// All builtin names (for "did you mean").
const char *const *builtin_names(int *n);
// Checks the call; returns its value, or NULL after reporting an error.
Value *builtin_check(BuiltinCall *c);

// Data sources in train blocks: idx(...), csv(...), npy(...).
bool builtin_is_data_source(const char *name);

// ---- additions: op ids and classes, expanded from ops.def ---------------------
typedef enum {
#define OP(id, name, sig, cls, ir, rule, emit) BI_##id,
#include "ops.def"
  BI_COUNT
} BuiltinOp;

typedef enum {
  OC_ELEMWISE_UNARY,  // one tensor in, same shape out
  OC_ELEMWISE_BINARY, // two operands, broadcast
  OC_COMPARE,         // broadcast, bool result
  OC_LOGICAL,         // bool in, bool out
  OC_SELECT,          // where
  OC_REDUCE,          // sum mean max min argmax
  OC_NORMALIZE,       // softmax log_softmax
  OC_VIEW,            // reshape flatten ... broadcast_to
  OC_MATMUL,          // matmul / @
  OC_CONV,            // conv2d
  OC_POOL,            // max_pool2d avg_pool2d
  OC_NN,              // batch_norm layer_norm dropout embedding
  OC_LOSS,            // cross_entropy mse bce_with_logits
  OC_CAST,            // cast stop_gradient
  OC_CONSTRUCT,       // arange causal_mask zeros ones full rand randn
  OC_DATA,            // idx csv npy (train blocks only; not graph ops)
} OpClass;

// The BuiltinOp named `name`, or -1.
int builtin_lookup(const char *name);
const char *builtin_name(int op);
OpClass builtin_class(int op);
// The graph IR op (IrOp) a call becomes; -1 for data sources.
int builtin_ir_op(int op);
// "sum(x, dim = all, keepdim = false)": the signature, for notes and docs.
const char *builtin_signature(Arena *a, int op);

// ---- additions: data sources ----------------------------------------------------
// What a data source call in a train block denotes. builtin_check returns a
// V_STR value (str = the path) for these calls; builtin_data_source checks
// the same call (reporting the same errors, so call one or the other, or
// this one after builtin_check succeeded) and describes it:
//   idx(path, scale = 1.0)      IDX file, gzip'd or not. If the file can be
//                               read at compile time (the path as written,
//                               else relative to the .model file's folder),
//                               its header gives the element dtype, the
//                               record count and the per-record dims (idx3
//                               images: [28, 28]; idx1 labels: rank 0, u8).
//                               Loaded values are multiplied by `scale`.
//   csv(path, cols = [..], header = true, dtype = f32)
//                               one record per row; `cols` selects columns by
//                               index or (with a header) by name; the record
//                               width is the number of cols, or of fields in
//                               the first row when cols is absent and the
//                               file can be read; records are [width], or
//                               scalars (rank 0) for a single column.
//   npy(path)                   NumPy .npy (version 1-3 header); the first
//                               axis is the record axis.
// A missing file is not an error here (known stays false): the data is
// validated again when it is loaded.
typedef enum {
  DS_IDX, // idx(...)
  DS_CSV, // csv(...)
  DS_NPY, // npy(...)
} DataSourceKind;

enum { DS_MAX_RANK = 8 };

typedef struct DataSource {
  DataSourceKind kind;
  Span span;            // the call
  const char *path;     // as written
  const char *resolved; // the file read at compile time, or NULL
  bool known;           // dtype, rank and dims below are known
  DType dtype;          // element dtype as stored (csv: the dtype argument)
  int rank;             // record rank (0: one scalar per record); -1 unknown
  int64_t dims[DS_MAX_RANK]; // record dims (without the record axis)
  int64_t record_elems; // product of dims; -1 unknown
  int64_t nrecords;     // number of records; -1 unknown
  double scale;         // idx: multiplier applied on load (1.0 otherwise)
  bool header;          // csv: first row is a header
  int ncols;            // csv: number of selected columns (0: all)
  const int64_t *col_index;    // csv: the file's column per selected column (-1: a name, file unknown)
  const char *const *col_name; // csv: column name per selected column, or NULL
} DataSource;

bool builtin_data_source(BuiltinCall *c, DataSource *out);

#endif
