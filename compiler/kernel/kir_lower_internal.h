// kir_lower_internal.h — what the lowering files share (kir_lower.c: driver,
// dims, buffers, loop-nest helpers, elementwise, reductions, views, matmul,
// constants, casts, dropout; kir_lower_nn.c: conv, pooling, normalisation
// layers, embedding, losses).
#ifndef MLC_KIR_LOWER_INTERNAL_H
#define MLC_KIR_LOWER_INTERNAL_H

#include "kir_lower.h"

enum { KL_MAX_RANK = 8 };

typedef struct KLower {
  KirProgram *p;
  IrModule *m;
  IrFunc *f;
  int *buf;          // per value (order + nparams): its buffer
  int nparams;
  char *err;
  size_t errlen;
  bool failed;
  // Views (kir_lower.c, "views"), per value (order + nparams):
  bool *elided;      // a transpose only matmuls (and elided transposes) read:
                     // no kernel and no buffer, its readers index its source
  IrNode **into;     // a matmul whose one reader is a transpose: that transpose,
                     // whose buffer the matmul writes through permuted strides
  bool *placed;      // the value has its buffer already
  // Matmul epilogues (kir_lower.c, "matmul epilogues"), per value:
  IrNode **epi_end;  // a matmul: the last op of its epilogue, whose buffer it writes
  IrNode **epi_of;   // an op folded into a matmul's epilogue: that matmul (no kernel)
  struct KlFuse *fz;  // the fusion plan (KirLowerOptions.fuse), or NULL
  bool reduce_cols;   // KirLowerOptions.reduce_cols
  bool line_lanes;    // KirLowerOptions.line_lanes
  const int *pro;     // the reduction being lowered: its prologue's members
  int npro;           // (node orders), computed per term (kir_fuse.c)
  KExpr **pro_iv;     // float_sum: its operand's index per kept dim, for a
                      // prologue's broadcast operands (else NULL)
} KLower;

// A strided view of a buffer as an op operand sees it: dims and element
// strides (a transpose permutes both; a buffer is row-major).
typedef struct KlView {
  int buf;
  int rank;
  KExpr *dims[KL_MAX_RANK], *strides[KL_MAX_RANK];
} KlView;

// The fusion plan (kir_fuse.c): groups of elementwise ops of one shape, each
// lowered as one loop nest; values that stay in registers; the order groups
// run in; values written straight into a state slot.
typedef struct KlFuse {
  int n;               // body nodes (by order)
  int *group;          // per node: its group
  bool *reg;           // per node: no buffer (a group-private value, or a
                       // const its users take as a literal)
  const char **state;  // per node: the state path it is written into, or NULL
  int ngroups;
  int **members;       // per group: its nodes' orders, ascending (a
                       // reduction with a prologue: the prologue, then it)
  int *nmembers;
  int *seq, nseq;      // the groups in run order (the empty ones left out)
  int *at;             // per group: its position in seq
} KlFuse;
enum { KL_FUSE_MAX_BUFS = 12 }; // buffers a group's kernel takes at most
KlFuse *kl_fuse_plan(KLower *c);
bool kl_fuses(const KLower *c, const IrNode *n); // kl_fusable and not claimed (kir_lower.c)
// An op a group may hold (elementwise, of its result's shape).
bool kl_fusable(const IrNode *n);
// A const its elementwise users take as a literal.
bool kl_fuse_const(const IrNode *n);

// The buffer holding graph value n.
int kl_buf(KLower *c, const IrNode *n);
// A dim as an i64 expression over the program's syms; fails (and records
// the reason) when a symbol in it has no definition.
KExpr *kl_dim(KLower *c, const Dim *d);
// The type's dim i, and the product of dims [from, to).
KExpr *kl_tdim(KLower *c, const Type *t, int i);
KExpr *kl_prod(KLower *c, const Type *t, int from, int to);
// A buffer of t's dtype and shape.
int kl_buf_new(KLower *c, KirBufKind kind, const char *name, const Type *t);
void *kl_fail(KLower *c, const IrNode *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

// A kernel for node n writing buffer out (and reading its operands' buffers).
KirKernel *kl_kernel(KLower *c, const IrNode *n, const char *what);
// Sets k's op record (kir.h) from the nodes of its roles, in the op's order.
void kl_op(KLower *c, KirKernel *k, KirOpKind kind, IrNode *const *roles, int nroles, const int64_t *attrs);
// A fresh loop variable / local of the kernel.
int kl_var(KLower *c, KirKernel *k, const char *prefix, DType dt, bool loop);
KExpr *kl_v(KLower *c, KirKernel *k, int var);
// Opens one loop per dim of t (dims [from, to)), all marked parallel when
// asked (their iterations write disjoint elements); iv[i] = dim i's index.
// Returns the innermost block.
Vec *kl_loops(KLower *c, KirKernel *k, Vec *blk, const Type *t, int from, int to,
              KExpr **iv, bool parallel);
// Row-major flat offset of index iv over t's dims.
KExpr *kl_flat(KLower *c, const Type *t, KExpr **iv);
// Offset into x (rank rx) broadcast against an index of rank r (aligned right).
KExpr *kl_bcast(KLower *c, const Type *x, int r, KExpr **iv);
// Arithmetic shorthands.
KExpr *kl_add(KLower *c, KExpr *a, KExpr *b);
KExpr *kl_sub(KLower *c, KExpr *a, KExpr *b);
KExpr *kl_mul(KLower *c, KExpr *a, KExpr *b);
KExpr *kl_div(KLower *c, KExpr *a, KExpr *b);
KExpr *kl_f(KLower *c, DType dt, double v);
KExpr *kl_i(KLower *c, int64_t v);
KExpr *kl_ld(KLower *c, const IrNode *n, KExpr *index);
// The precision of product node n (its attribute; DT_F32 without one), and
// an operand value v of it as the product reads it: round_bf16(v) or
// round_f16(v), or v itself at f32.
DType kl_precision(const IrNode *n);
KExpr *kl_round(KLower *c, const IrNode *n, KExpr *v);
void kl_st(KLower *c, Vec *blk, const IrNode *n, KExpr *index, KExpr *v);
// Zero-fills n's buffer (its own loop, parallel).
void kl_zero(KLower *c, KirKernel *k, const IrNode *n);
// x != x: true for NaN.
KExpr *kl_isnan(KLower *c, KExpr *x);

// Float sums in the defined order (kir.h, "Float sums"). One KlSum holds up
// to KL_SUM_MAX sums over the same positions: kl_sum_begin declares their
// f64 lanes (outside every loop of the reduction) and returns the block in
// which the caller builds the outer reduced loops; kl_sum_add, in the block
// of the innermost group (inside those loops), runs the positions of the
// group: blocks of 8 unrolled, then the tail, each position's terms made by
// the callback, which may add lets to the block it is given; kl_sum_value,
// in the block given to kl_sum_begin (after the loops), gives sum i as an
// f64 local. A sum of more than KL_SUM_CHUNK positions (or of a symbolic
// count) is chunked: kl_sum_begin opens the loop over chunks, whose body is
// the block it returns; kl_sum_add runs the chunk's positions, kl_sum_value
// closes the chunk and combines the chunks' values. At the kernel's top
// level with a constant count the chunk loop is independent (each chunk
// stores its value into a planned f64 temporary, which a combine reads:
// parallel tasks on the CPU, threads on the GPU); elsewhere the chunk loop
// is serial and combines in registers as it goes.
enum { KL_SUM_LANES = 8, KL_SUM_MAX = 16, KL_SUM_CHUNK = KIR_SUM_CHUNK };
typedef struct KlSum {
  int nsums, nlanes;  // nlanes < 8 only for a constant P < 8
  KExpr *P;           // positions in the innermost group (i64)
  int lane[KL_SUM_MAX][KL_SUM_LANES];
  // chunked sums only
  bool chunked, split, closed;  // split: partials through part[] (independent chunk loop)
  KExpr *ci, *c0, *len;         // the chunk's index, first position, position count
  KExpr *nchunks;
  Vec *body;                    // the chunk loop's body
  int comb[KL_SUM_MAX][KL_SUM_LANES]; // serial form: the combine lanes
  int part[KL_SUM_MAX];         // split form: the chunks' values, f64 [nchunks]
  int sum[KL_SUM_MAX];          // the values (once closed)
  int only;                     // kl_sum_add_one's sum (else -1: all)
} KlSum;
typedef void (*KlTerms)(KLower *c, KirKernel *k, Vec *blk, KExpr *p, void *ctx, KExpr **terms);
Vec *kl_sum_begin(KLower *c, KirKernel *k, Vec *blk, KlSum *s, int nsums, KExpr *P);
// The max of x[base + p * stride] over p < P (NaN when any is), a local
// of blk: one compare chain in position order, or with line_lanes position p
// into lane p mod 8 (blocks of 8, then the tail) and the lanes folded in
// halves (KirLowerOptions.line_lanes).
KExpr *kl_line_max(KLower *c, KirKernel *k, Vec *blk, const IrNode *x, KExpr *base, KExpr *stride, KExpr *P);
void kl_sum_add(KLower *c, KirKernel *k, Vec *blk, KlSum *s, KlTerms terms, void *ctx);
// kl_sum_add for sum i alone (the callback's other terms are not used): sums
// over the same positions whose terms lie apart run one position loop each.
void kl_sum_add_one(KLower *c, KirKernel *k, Vec *blk, KlSum *s, int i, KlTerms terms, void *ctx);
KExpr *kl_sum_value(KLower *c, KirKernel *k, Vec *blk, KlSum *s, int i);

int64_t kl_attr_i(const IrNode *n, IrAttrKey k);
const int64_t *kl_attr_ints(const IrNode *n, IrAttrKey k);
double kl_attr_f(const IrNode *n, IrAttrKey k);

// The K sum of one output element in the library's order (kernels/gemm_ref.h):
// K blocks (mlc_gemm_kblock of K) of fma chains from +0, block sums added in
// order. step(q, blk, p, s) appends `s = fma(x_p, y_p, s)` for product p.
typedef struct KlKSum {
  KLower *c;
  KirKernel *k;
  DType dt;
  void (*step)(struct KlKSum *q, Vec *blk, KExpr *p, KExpr *s);
  void *ctx;
} KlKSum;
// A new local holding the sum over p < K.
KExpr *kl_ksum(KlKSum *q, Vec *blk, KExpr *K);
// acc = acc + (each block's sum over p < K), in order (acc: a local).
void kl_ksum_add(KlKSum *q, Vec *blk, KExpr *K, KExpr *acc);

// A matmul's or conv2d's epilogue (kir_lower.c, "matmul epilogues"): the
// ops folded into its kernel, in order (none, one or two), the fused op
// kind, its fourth operand (bias or aux; NULL for none) and whether a relu
// ends it.
typedef struct KlEpilogue {
  IrNode *ops[2];
  int nops;
  KirOpKind kind;
  IrNode *operand;
  bool relu;
} KlEpilogue;
KlEpilogue kl_epilogue_of(KLower *c, IrNode *n);
// v after the epilogue's ops, each by its own formula (operands broadcast
// to the result's index iv); v itself when there are none.
KExpr *kl_apply_epilogue(KLower *c, KirKernel *k, const KlEpilogue *e, const IrNode *n, Vec *blk, KExpr **iv,
                         KExpr *v);

// kir_lower_nn.c: false after kl_fail.
bool kl_conv(KLower *c, IrNode *n);
bool kl_pool(KLower *c, IrNode *n);
bool kl_norm(KLower *c, IrNode *n);
bool kl_index(KLower *c, IrNode *n);
bool kl_loss(KLower *c, IrNode *n);

#endif
