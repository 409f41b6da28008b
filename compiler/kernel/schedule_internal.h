// schedule_internal.h — what the scheduling pass's files share
// (schedule.c: the pass, its strategy table, loop maps, barriers;
// schedule_nn.c: the recipes that re-lower a kernel from its op record):
// a small builder over one kernel of a program, naming variables as the
// lowering does (prefix + index), so a recipe's nest reads like the
// lowering's.
#ifndef MLC_SCHEDULE_INTERNAL_H
#define MLC_SCHEDULE_INTERNAL_H

#include "schedule.h"

enum { SK_MAX_RANK = 8, SK_MAX_TAPS = 64 };

typedef struct Sk {
  KirProgram *p;
  KirKernel *k;
  const KirTarget *t;
} Sk;

// Shorthands; the arithmetic folds i64 constants (kir_bin).
KExpr *sk_i(Sk *s, int64_t v);
KExpr *sk_f(Sk *s, DType dt, double v); // a float constant (dt is a float dtype)
KExpr *sk_add(Sk *s, KExpr *a, KExpr *b);
KExpr *sk_sub(Sk *s, KExpr *a, KExpr *b);
KExpr *sk_mul(Sk *s, KExpr *a, KExpr *b);
KExpr *sk_div(Sk *s, KExpr *a, KExpr *b);
KExpr *sk_mod(Sk *s, KExpr *a, KExpr *b);
KExpr *sk_lt(Sk *s, KExpr *a, KExpr *b);
KExpr *sk_and(Sk *s, KExpr *a, KExpr *b);
KExpr *sk_in_range(Sk *s, KExpr *v, KExpr *n); // 0 <= v < n
KExpr *sk_isnan(Sk *s, KExpr *x);
// Dim d of the operand in `role` of the kernel's op (as the op sees it),
// and whether a dim is the constant 1.
KExpr *sk_dim(Sk *s, int role, int d);
bool sk_is_one(const KExpr *e);
KExpr *sk_ld(Sk *s, int b, KExpr *index);
// b[index] = v, cast to b's dtype; b[index] += v.
void sk_st(Sk *s, Vec *blk, int b, KExpr *index, KExpr *v);
void sk_acc(Sk *s, Vec *blk, int b, KExpr *index, KExpr *v);
// A fresh loop (`name` + index) appended to blk; *iv is its variable.
KStmt *sk_loop(Sk *s, Vec *blk, const char *name, KExpr *n, bool parallel, KExpr **iv);
// A fresh local holding value.
KExpr *sk_let(Sk *s, Vec *blk, const char *name, KExpr *value);
// A temporary of the kernel, named after it (k5_conv2d: t5_NAME), used by it.
int sk_temp(Sk *s, const char *name, DType dt, int rank, KExpr *const *dims);
// Empties the kernel's body and variables for a recipe to write anew.
void sk_restart(Sk *s);

// The work of one run of a block, in expression nodes evaluated, inner
// loops multiplied by their trip counts; -1 when a trip count is not a
// constant or a library call is inside (its cost is not its nodes').
int64_t sk_block_work(const Vec *blk);

// ---- groups of kernels (schedule_merge.c) ---------------------------------------------------
// Runs of independent kernels that are one chunk loop or none become one
// kernel of tasks (schedule.h, step 4); s->k unused.
void sk_merge_kernels(Sk *s);
// Before them: an elementwise kernel over a split long sum's positions that
// reads what the sum reads runs inside the sum's chunk tasks (schedule_merge.c).
void sk_fuse_sum_updates(Sk *s);

// ---- recipes (schedule_nn.c) ---------------------------------------------------------------
// Each re-lowers kernel s->k from its op record (kir.h) when it applies to
// the target and the op's geometry, and says whether it did.
bool sk_matmul(Sk *s);
bool sk_conv2d(Sk *s);
bool sk_conv2d_grad_input(Sk *s);
bool sk_conv2d_grad_weight(Sk *s);
bool sk_pool(Sk *s);
// After the recipes (cpu): each conv bias gradient folded into its conv2d_grad_weight call.
void sk_fold_bias_grads(Sk *s);
// Then each 2 x 2 max pool gradient whose dx only a conv2d_grad_weight call reads, into that call.
void sk_fold_pool_grads(Sk *s);
// Then each conv2d_pool whose y only 2 x 2 pool gradients read keeps the pool's picks for them.
void sk_fold_pool_picks(Sk *s);
// Then a pool gradient from the picks whose dx one conv's grad_input and grad_weight read, into one call.
void sk_fold_pick_grads(Sk *s);

// ---- the gpu target (schedule_gpu.c) ---------------------------------------------------------
// The gpu recipe for the kernel's op record, if there is one.
void sk_gpu_recipe(Sk *s);
// The tiled GEMMs (schedule_gpu_gemm.c): matmul and its epilogue kinds,
// conv2d(_bias), conv2d_grad_input, conv2d_grad_weight; each writes its
// launches (mapped gpu-block loops) or says it does not apply.
bool sk_gpu_matmul(Sk *s);
bool sk_gpu_conv2d(Sk *s);
bool sk_gpu_conv2d_grad_input(Sk *s);
bool sk_gpu_conv2d_grad_weight(Sk *s);
// The kernel's top-level statements as launches: gpu-block loops over
// gpu-thread loops (flattened nests, block reductions, one-thread runs),
// each with its captures (none).
void sk_map_gpu(Sk *s);

#endif
