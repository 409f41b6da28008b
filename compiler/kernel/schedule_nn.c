// schedule_nn.c — the CPU recipes of the scheduling pass, chosen by
// schedule.c's strategy table for targets with recipes, from a kernel's op
// record (kir.h):
//
//   matmul              f32, target with the kernel library: one `call
//                       sgemm` / `sgemm_batched` (kernels/cpu): the views'
//                       strides become the GEMM's transpose flags and
//                       leading dimensions, batch dims collapse into the
//                       call's batch or fold into M, what is left is loops
//                       around the call
//   conv2d (+ grads)    f32, target with the kernel library: `call conv2d`,
//                       `conv2d_grad_input`, `conv2d_grad_weight`; with the
//                       target's conv_winograd, the forward's (and the input
//                       gradient's) call of a 3x3 stride-1 conv of >= 32
//                       input (output) channels carries `winograd`
//                       (kernels/winograd_ref.h)
//   pools               2 x 2 max pools of stride 2 in f32, target with the
//                       kernel library: `call max_pool2d`, `max_pool2d_grad`;
//                       other unpadded windows up to pool_max_taps taps
//                       unrolled (the gradients: disjoint windows only)
//
// A call computes what the canonical nest does, bit for bit: both are the
// library's order (kernels/gemm_ref.h), so where a recipe does not apply
// (another dtype, a view no GEMM reads, the GPU) the canonical nest stays.
// The pool recipes keep each output's taps in the interpreter's order.
//
// Buffer shapes are NCHW row-major: x[N, C, H, W], w[O, C/g, KH, KW],
// y[N, O, HO, WO].
#include "schedule_internal.h"

#include <math.h>
#include <string.h>

static KExpr *or2(Sk *s, KExpr *a, KExpr *b) { return kir_bin(s->p, KB_OR, a, b); }

// ---- sizes ----------------------------------------------------------------------------------------
// Whether two i64 size expressions are equal, proved on their monomial
// forms (coefficient times the multiset of non-product atoms, as strides
// and dims are built): 16*4*T and T*64 are; anything unproved is not
// (the recipe then keeps a loop it could have folded: slower, never wrong).
enum { SK_MAX_ATOMS = 16 };

typedef struct Mono {
  int64_t coef;
  int n;
  const KExpr *atom[SK_MAX_ATOMS];
} Mono;

static bool mono_of(const KExpr *e, Mono *m) {
  if (e->kind == KE_CONST && e->dtype == DT_I64) {
    m->coef *= e->i;
    return true;
  }
  if (e->kind == KE_BINARY && e->bin == KB_MUL) return mono_of(e->a, m) && mono_of(e->b, m);
  if (m->n == SK_MAX_ATOMS) return false;
  m->atom[m->n++] = e;
  return true;
}

static bool same_size(const KExpr *a, const KExpr *b) {
  if (kir_expr_equal(a, b)) return true;
  Mono x = {.coef = 1}, y = {.coef = 1};
  if (!mono_of(a, &x) || !mono_of(b, &y) || x.coef != y.coef) return false;
  if (x.coef == 0) return true;
  if (x.n != y.n) return false;
  bool used[SK_MAX_ATOMS] = {0};
  for (int i = 0; i < x.n; i++) {
    int j = 0;
    while (j < y.n && (used[j] || !kir_expr_equal(x.atom[i], y.atom[j]))) j++;
    if (j == y.n) return false;
    used[j] = true;
  }
  return true;
}

static bool is_const(const KExpr *e, int64_t v) { return e->kind == KE_CONST && e->dtype == DT_I64 && e->i == v; }

// ---- matmul: the library's GEMM ---------------------------------------------------------------------
// Each operand's matrix part as the GEMM reads it: rows x cols with strides
// (rs, cs) into its buffer; a stride of an extent-1 dim is free (NULL).
typedef struct Mat {
  int buf;
  KExpr *rows, *cols, *rs, *cs;
} Mat;

static Mat mat_of(Sk *s, int role, int r0) {
  const KirOp *op = s->k->op;
  Mat m = {.buf = op->buf[role], .rows = op->dims[role][r0], .cols = op->dims[role][r0 + 1]};
  m.rs = is_const(m.rows, 1) ? NULL : kir_op_stride(s->p, op, role, r0);
  m.cs = is_const(m.cols, 1) ? NULL : kir_op_stride(s->p, op, role, r0 + 1);
  return m;
}

static bool unit(const KExpr *st) { return !st || is_const(st, 1); }

// The transpose flag and leading dimension of an operand read as
// op(X) = rows x cols: row-major (cs == 1, ld = rs) or transposed (rs == 1,
// ld = cs); false when neither stride is 1.
static bool lead(Sk *s, const Mat *m, bool *trans, KExpr **ld) {
  if (unit(m->cs)) {
    *trans = false, *ld = m->rs ? m->rs : m->cols;
    return true;
  }
  if (unit(m->rs)) {
    *trans = true, *ld = m->cs ? m->cs : m->rows;
    return true;
  }
  (void)s;
  return false;
}

// Batch dims of the output, with each operand's stride along them (0 where
// it broadcasts: it lacks the dim, or has it as 1).
typedef struct Batch {
  int n;
  KExpr *size[SK_MAX_RANK], *st[3][SK_MAX_RANK];
} Batch;

static void batch_of(Sk *s, Batch *b) {
  const KirOp *op = s->k->op;
  int r = op->rank[2] - 2;
  b->n = r;
  for (int i = 0; i < r; i++) b->size[i] = op->dims[2][i];
  for (int role = 0; role < 3; role++)
    for (int i = 0; i < r; i++) {
      int j = i - (r - (op->rank[role] - 2));
      b->st[role][i] = j < 0 || is_const(op->dims[role][j], 1) ? sk_i(s, 0) : kir_op_stride(s->p, op, role, j);
    }
}

// Merges batch dims i-1 and i where every operand steps across them as
// across one dim (stride[i-1] = stride[i] * size[i]).
static void collapse(Sk *s, Batch *b) {
  for (int i = b->n - 1; i > 0; i--) {
    bool ok = true;
    for (int role = 0; role < 3 && ok; role++) ok = same_size(b->st[role][i - 1], sk_mul(s, b->st[role][i], b->size[i]));
    if (!ok) continue;
    b->size[i - 1] = sk_mul(s, b->size[i - 1], b->size[i]);
    for (int role = 0; role < 3; role++) b->st[role][i - 1] = b->st[role][i];
    for (int j = i; j + 1 < b->n; j++) {
      b->size[j] = b->size[j + 1];
      for (int role = 0; role < 3; role++) b->st[role][j] = b->st[role][j + 1];
    }
    b->n--;
  }
}

typedef struct Gemm {
  uint32_t flags;
  bool swapped; // computed as C^T = B^T A^T
  KExpr *m, *n, *k, *lda, *ldb, *ldc;
  int a, b, c;
} Gemm;

// A leading batch dim of a row-major A (and C) over a B it does not step
// (a [B, T, C] @ [C, D]) is more rows of one GEMM: M *= size.
static void fold_rows(Sk *s, Batch *b, Gemm *g) {
  while (b->n > 0 && !(g->flags & KIR_GEMM_TRANS_A)) {
    int i = b->n - 1;
    if (!is_const(b->st[1][i], 0) || !same_size(b->st[0][i], sk_mul(s, g->m, g->lda)) ||
        !same_size(b->st[2][i], sk_mul(s, g->m, g->ldc)))
      return;
    g->m = sk_mul(s, g->m, b->size[i]);
    b->n--;
  }
}

// The GEMM of op(A) [M, K] @ op(B) [K, N] -> C [M, N] with C's columns
// unit-stride; a C whose rows are (C = (x^T dy)^T) is computed as
// C^T = B^T A^T. False when an operand has no unit stride.
static bool gemm_of(Sk *s, Gemm *g, Batch *b) {
  const KirOp *op = s->k->op;
  Mat A = mat_of(s, 0, op->rank[0] - 2), B = mat_of(s, 1, op->rank[1] - 2), C = mat_of(s, 2, op->rank[2] - 2);
  if (!unit(C.cs)) {
    if (!unit(C.rs)) return false;
    Mat a2 = {B.buf, B.cols, B.rows, B.cs, B.rs}, b2 = {A.buf, A.cols, A.rows, A.cs, A.rs};
    Mat c2 = {C.buf, C.cols, C.rows, C.cs, C.rs};
    A = a2, B = b2, C = c2;
    g->swapped = true;
    for (int i = 0; i < b->n; i++) {
      KExpr *t = b->st[0][i];
      b->st[0][i] = b->st[1][i], b->st[1][i] = t;
    }
  }
  bool ta, tb, tc;
  if (!lead(s, &A, &ta, &g->lda) || !lead(s, &B, &tb, &g->ldb) || !lead(s, &C, &tc, &g->ldc) || tc) return false;
  g->flags = (ta ? KIR_GEMM_TRANS_A : 0) | (tb ? KIR_GEMM_TRANS_B : 0);
  g->m = C.rows, g->n = C.cols, g->k = A.cols;
  g->a = A.buf, g->b = B.buf, g->c = C.buf;
  return true;
}

static void gemm_args(Sk *s, KStmt *st, const Gemm *g, KExpr *const *off) {
  st->call->flags = g->flags;
  kir_call_set(st, "m", g->m), kir_call_set(st, "n", g->n), kir_call_set(st, "k", g->k);
  kir_call_set(st, "alpha", kir_float(s->p, DT_F32, 1)), kir_call_set(st, "beta", kir_float(s->p, DT_F32, 0));
  kir_call_operand(st, "a", g->a, off[0]), kir_call_set(st, "lda", g->lda);
  kir_call_operand(st, "b", g->b, off[1]), kir_call_set(st, "ldb", g->ldb);
  kir_call_operand(st, "c", g->c, off[2]), kir_call_set(st, "ldc", g->ldc);
  const KirOp *op = s->k->op;
  bool bias = op->kind == KOP_MATMUL_BIAS, aux = op->kind == KOP_MATMUL_RESIDUAL || op->kind == KOP_MATMUL_RELU_MASK;
  kir_call_operand(st, "bias", bias ? op->buf[3] : -1, bias ? sk_i(s, 0) : NULL);
  kir_call_operand(st, "aux", aux ? op->buf[3] : -1, aux ? off[2] : NULL);
  kir_call_set(st, "ldaux", aux ? g->ldc : sk_i(s, 0));
}

// The epilogue flags of a matmul_* kernel (kir.h): bias along C's columns,
// aux in C's layout (row-major, as C is when not swapped).
static uint32_t epilogue_flags(const KirOp *op) {
  switch (op->kind) {
  case KOP_MATMUL_BIAS: return KIR_GEMM_BIAS_COL | (op->attr[0] ? KIR_GEMM_RELU : 0);
  case KOP_MATMUL_RESIDUAL: return KIR_GEMM_RESIDUAL | (op->attr[0] ? KIR_GEMM_RELU : 0);
  case KOP_MATMUL_RELU: return KIR_GEMM_RELU;
  case KOP_MATMUL_RELU_MASK: return KIR_GEMM_RELU_MASK;
  default: return 0;
  }
}

// The call flag of an op's precision (the same bit for GEMM and conv calls).
static uint32_t precision_flag(const KirOp *op) {
  return op->precision == DT_BF16 ? KIR_GEMM_BF16 : op->precision == DT_F16 ? KIR_GEMM_F16 : 0;
}

bool sk_matmul(Sk *s) {
  const KirOp *op = s->k->op;
  if (!s->t->library || op->rank[0] < 2 || op->rank[1] < 2 || op->rank[2] < 2 || op->rank[2] > SK_MAX_RANK) return false;
  for (int i = 0; i < 3; i++)
    if (kir_buf(s->p, op->buf[i])->dtype != DT_F32) return false;
  Batch b;
  Gemm g = {0};
  batch_of(s, &b);
  if (!gemm_of(s, &g, &b)) return false;
  uint32_t epi = epilogue_flags(op);
  if (epi && g.swapped) return false; // an epilogue's C is row-major: never
  g.flags |= epi | precision_flag(op);
  collapse(s, &b);
  fold_rows(s, &b, &g);
  sk_restart(s);
  // Batch dims but the innermost become loops (their iterations write
  // disjoint parts of C); the innermost is the call's batch.
  Vec *blk = &s->k->body;
  KExpr *off[3] = {sk_i(s, 0), sk_i(s, 0), sk_i(s, 0)}, *iv;
  for (int i = 0; i + 1 < b.n; i++) {
    blk = &sk_loop(s, blk, "i", b.size[i], true, &iv)->body;
    for (int role = 0; role < 3; role++) off[role] = sk_add(s, off[role], sk_mul(s, iv, b.st[role][i]));
  }
  KStmt *st = kir_call(s->p, blk, b.n ? KCALL_SGEMM_BATCHED : KCALL_SGEMM);
  gemm_args(s, st, &g, off);
  if (b.n) {
    int i = b.n - 1;
    kir_call_set(st, "batch", b.size[i]);
    kir_call_set(st, "sa", b.st[0][i]), kir_call_set(st, "sb", b.st[1][i]), kir_call_set(st, "sc", b.st[2][i]);
    bool aux = op->kind == KOP_MATMUL_RESIDUAL || op->kind == KOP_MATMUL_RELU_MASK;
    kir_call_set(st, "saux", aux ? b.st[2][i] : sk_i(s, 0));
  }
  return true;
}

// ---- convolution: the library's -------------------------------------------------------------------
// Whether a forward conv takes the library's Winograd path: one it applies
// to (kernels/winograd_ref.h, mlc_winograd_applies: a 3x3 weight, strides
// and dilations 1, one group, f32 products; any padding and plane) with
// at least WINOGRAD_MIN_C input channels. With fewer its 16 products of K =
// C cost more than the transforms save (fashion_cnn's conv1, C = 1: 4.5x
// slower than the direct path; C = 8 1.5-1.9x slower, 16 even, 32 1.3x
// faster; docs/design/kernels.md, "Winograd"), so those keep the direct path.
// grad_input (the conv of dy with the flipped, transposed filter: its
// input channels are O) with paddings of at most 2.
enum { WINOGRAD_MIN_C = 32 };
static bool winograd_ok(const KirOp *op, bool grad) {
  const int64_t *a = op->attr; // stride, padding, dilation (h, w), groups
  const KExpr *c = op->dims[1][grad ? 0 : 1];
  return is_const(op->dims[1][2], 3) && is_const(op->dims[1][3], 3) && a[0] == 1 && a[1] == 1 && a[4] == 1 &&
         a[5] == 1 && a[6] == 1 && precision_flag(op) == 0 && c->kind == KE_CONST && c->i >= WINOGRAD_MIN_C &&
         (!grad || (a[2] <= 2 && a[3] <= 2));
}

// Roles by op: conv2d (x, w, y), conv2d_grad_input (dy, w, dx),
// conv2d_grad_weight (dy, x, dw); attributes stride, padding, dilation
// (h, w), groups. The geometry is the call's MLC_CONV_* array.
static bool sk_conv_call(Sk *s, KirCallFn fn, int xr, int wr) {
  const KirOp *op = s->k->op;
  if (!s->t->library) return false;
  for (int i = 0; i < 3; i++)
    if (op->rank[i] != 4 || kir_buf(s->p, op->buf[i])->dtype != DT_F32 || op->strides[i][0]) return false;
  const int64_t *a = op->attr;
  KExpr *geom[KIR_CONV_GEOM] = {sk_dim(s, xr, 0), sk_dim(s, xr, 1), sk_dim(s, xr, 2), sk_dim(s, xr, 3),
                                sk_dim(s, wr, 0), sk_dim(s, wr, 2), sk_dim(s, wr, 3),
                                sk_i(s, a[0]), sk_i(s, a[1]), sk_i(s, a[2]), sk_i(s, a[3]),
                                sk_i(s, a[4]), sk_i(s, a[5]), sk_i(s, a[6])};
  sk_restart(s);
  KStmt *st = kir_call(s->p, &s->k->body, fn);
  kir_call_geom(st, geom);
  if (op->kind == KOP_CONV2D_BIAS && a[7]) st->call->flags = KIR_CONV_RELU;
  st->call->flags |= precision_flag(op);
  bool grad = fn == KCALL_CONV2D_GRAD_INPUT;
  if ((fn == KCALL_CONV2D || grad) && s->t->conv_winograd && winograd_ok(op, grad)) st->call->flags |= KIR_CONV_WINOGRAD;
  KirCallSpec sp;
  kir_call_spec(fn, &sp);
  for (int i = 0, role = 0; i < sp.nparams; i++) {
    const KirCallParam *pa = &sp.param[i];
    if (pa->kind == KCA_OPT && op->kind == KOP_CONV2D_BIAS) kir_call_operand(st, pa->name, op->buf[3], sk_i(s, 0));
    else if (pa->kind == KCA_OPT) kir_call_operand(st, pa->name, -1, NULL); // no bias: a separate add
    else if (pa->kind >= KCA_READ && pa->kind <= KCA_UPDATE) kir_call_operand(st, pa->name, op->buf[role++], sk_i(s, 0));
  }
  return true;
}

bool sk_conv2d(Sk *s) { return sk_conv_call(s, KCALL_CONV2D, 0, 1); }

bool kir_kernel_winograd(const KirKernel *k) {
  for (int i = 0; i < k->body.len; i++) {
    const KStmt *st = VEC_AT(k->body, KStmt, i);
    if (st->kind == KS_CALL &&
        (st->call->fn == KCALL_CONV2D || st->call->fn == KCALL_CONV2D_POOL || st->call->fn == KCALL_CONV2D_GRAD_INPUT) &&
        st->call->flags & KIR_CONV_WINOGRAD)
      return true;
  }
  return false;
}
bool sk_conv2d_grad_input(Sk *s) { return sk_conv_call(s, KCALL_CONV2D_GRAD_INPUT, 2, 1); }
bool sk_conv2d_grad_weight(Sk *s) { return sk_conv_call(s, KCALL_CONV2D_GRAD_WEIGHT, 1, 2); }

// ---- pooling: unpadded windows, taps unrolled ---------------------------------------------------
// With no padding every window lies inside the plane, so the taps need no
// range checks and can be written out (kernel sizes are attributes): the
// innermost loop runs over a row of output columns with straight-line,
// branch-free taps (max keeps its best with selects), which LLVM
// vectorises. Each output element still sees its taps in the interpreter's
// row-major order. The gradients also need disjoint windows (stride >=
// kernel): then each dx element gets at most one term, written instead of
// added: 0 + dy at the picked tap (max: the select chain also tracks its
// offset; one store per window) or 0 + dy/(kh*kw) at every tap (avg). The
// plane is zeroed first (in cache) for the elements no window picks or
// covers. Branch-free taps matter most for max on real data, whose
// comparisons a branch predictor cannot guess. max_pool2d_grad_relu_mask
// stores aux > 0 ? 0 + dy : 0 at the picked tap: the value the mask pass
// over the scattered plane gives there (and elsewhere it keeps a 0 as 0).
// Roles: pools (x, y), gradients (dy, x, dx [, aux]); attributes kernel,
// stride, padding (h, w).
static bool pool_fast_ok(Sk *s, bool grad) {
  const int64_t *ks = s->k->op->attr, *st = ks + 2, *pd = ks + 4;
  int ntap = s->t->pool_max_taps < SK_MAX_TAPS ? s->t->pool_max_taps : SK_MAX_TAPS;
  if (pd[0] || pd[1] || ks[0] < 1 || ks[1] < 1 || ks[0] * ks[1] > ntap) return false;
  return !grad || (st[0] >= ks[0] && st[1] >= ks[1]);
}

// The best of the taps: max keeps the first maximum (NaN wins once); with
// grad the offset of the tap it picked; avg sums them.
static void pool_taps(Sk *s, Vec *blk, KExpr **off, int ntap, bool mx, bool grad, int X, KExpr *yo) {
  const KirOp *op = s->k->op;
  int Y = op->buf[grad ? 2 : 1];
  DType dt = kir_buf(s->p, X)->dtype;
  KExpr *zero = sk_f(s, dt, 0), *area = sk_f(s, dt, (double)ntap);
  if (!mx) {
    if (grad) {
      KExpr *share = sk_let(s, blk, "share", sk_add(s, zero, sk_div(s, sk_ld(s, op->buf[0], yo), area)));
      for (int t = 0; t < ntap; t++) sk_st(s, blk, Y, off[t], share);
      return;
    }
    KExpr *acc = sk_let(s, blk, "s", zero);
    for (int t = 0; t < ntap; t++) kir_assign(s->p, blk, acc->var, sk_add(s, acc, sk_ld(s, X, off[t])));
    sk_st(s, blk, Y, yo, sk_div(s, acc, area));
    return;
  }
  KExpr *best = sk_let(s, blk, "best", sk_ld(s, X, off[0]));
  KExpr *arg = grad ? sk_let(s, blk, "arg", off[0]) : NULL;
  for (int t = 1; t < ntap; t++) {
    KExpr *v = sk_let(s, blk, "v", sk_ld(s, X, off[t]));
    KExpr *nan_first = sk_and(s, sk_isnan(s, v), kir_un(s->p, KU_NOT, sk_isnan(s, best)));
    KExpr *better = sk_let(s, blk, "better", or2(s, kir_bin(s->p, KB_GT, v, best), nan_first));
    kir_assign(s->p, blk, best->var, kir_select(s->p, better, v, best));
    if (grad) kir_assign(s->p, blk, arg->var, kir_select(s->p, better, off[t], arg));
  }
  if (!grad) {
    sk_st(s, blk, Y, yo, best);
    return;
  }
  KExpr *v = sk_add(s, zero, sk_ld(s, op->buf[0], yo));
  if (op->kind == KOP_MAX_POOL2D_GRAD_RELU_MASK)
    v = kir_select(s->p, kir_bin(s->p, KB_GT, sk_ld(s, op->buf[3], arg), zero), v, zero);
  sk_st(s, blk, Y, arg, v);
}

// ---- kernel parameters -----------------------------------------------------------------------
static void unuse(KirKernel *k, int b) {
  int j = 0;
  for (int i = 0; i < k->params.len; i++)
    if (kir_param(k, i) != b) k->params.data[j++] = k->params.data[i];
  k->params.len = j;
}

// Whether a kernel of the program other than a and b takes buffer x.
static bool taken_elsewhere(const KirProgram *p, int x, const KirKernel *a, const KirKernel *b) {
  for (int i = 0; i < p->kernels.len; i++) {
    const KirKernel *k = VEC_AT(p->kernels, KirKernel, i);
    if (k == a || k == b) continue;
    for (int j = 0; j < k->params.len; j++)
      if (kir_param(k, j) == x) return true;
  }
  return false;
}

// A forward 2 x 2 pool of what the kernel just before it computed with one
// `call conv2d` (y at offset 0 of the pool's x: conv2d_bias + relu in
// fashion_cnn) is folded into that call: it becomes `call conv2d_pool`,
// which also writes the pool's y while each image's output is in cache
// (kernels/cpu/conv.c), and the pool's kernel is left empty. The conv
// still writes its y where another kernel reads it (the backward's pool
// gradient, in a train step); where nothing else does (predict, eval) y
// is `none`: the call does not store it, neither kernel takes it (the op
// records name it `none`, with its shape) and the memory plan gives it no
// bytes. Same bits.
static bool fold_into_conv(Sk *s) {
  const KirOp *op = s->k->op;
  KirKernel *prev = NULL;
  for (int i = 1; i < s->p->kernels.len && !prev; i++)
    if (VEC_AT(s->p->kernels, KirKernel, i) == s->k) prev = VEC_AT(s->p->kernels, KirKernel, i - 1);
  if (!prev || prev->body.len != 1) return false;
  KStmt *st = VEC_AT(prev->body, KStmt, 0);
  if (st->kind != KS_CALL || st->call->fn != KCALL_CONV2D) return false;
  KirCallSpec sp;
  kir_call_spec(KCALL_CONV2D, &sp);
  const KirCallParam *y = kir_call_param(&sp, "y");
  const KExpr *off = st->call->slot[y->slot];
  if (st->call->buf[y->slot] != op->buf[0] || off->kind != KE_CONST || off->i != 0) return false;
  st->call->fn = KCALL_CONV2D_POOL; // conv2d's parameters, then yp
  kir_call_operand(st, "yp", op->buf[1], sk_i(s, 0));
  kir_kernel_use(s->p, prev, op->buf[1]);
  int Y = op->buf[0];
  if (kir_buf(s->p, Y)->kind == KBUF_TEMP && prev->op && prev->op->buf[2] == Y && !taken_elsewhere(s->p, Y, prev, s->k)) {
    kir_call_operand(st, "y", -1, NULL);
    prev->op->buf[2] = s->k->op->buf[0] = -1;
    unuse(prev, Y), unuse(s->k, Y);
  }
  sk_restart(s);
  return true;
}

// 2 x 2 max pools of stride 2 in f32, on a target with the kernel library:
// `call max_pool2d` / `max_pool2d_grad` (kernels/cpu/pool.c: vector rows,
// the gradient writing each dx element once), the same picks and values
// as the recipe below. Roles as there.
static bool sk_pool_call(Sk *s, bool grad, bool masked) {
  const KirOp *op = s->k->op;
  const int64_t *ks = op->attr, *st = op->attr + 2, *pd = op->attr + 4;
  if (!s->t->library || ks[0] != 2 || ks[1] != 2 || st[0] != 2 || st[1] != 2 || pd[0] || pd[1]) return false;
  for (int i = 0; i < (grad ? 3 + masked : 2); i++)
    if (op->rank[i] != 4 || kir_buf(s->p, op->buf[i])->dtype != DT_F32 || op->strides[i][0]) return false;
  int xr = grad;
  if (!grad && fold_into_conv(s)) return true;
  sk_restart(s);
  KStmt *c = kir_call(s->p, &s->k->body, grad ? KCALL_MAX_POOL2D_GRAD : KCALL_MAX_POOL2D);
  const char *dims[4] = {"n", "c", "h", "w"};
  for (int d = 0; d < 4; d++) kir_call_set(c, dims[d], sk_dim(s, xr, d));
  kir_call_set(c, "kh", sk_i(s, 2)), kir_call_set(c, "kw", sk_i(s, 2));
  kir_call_set(c, "sh", sk_i(s, 2)), kir_call_set(c, "sw", sk_i(s, 2));
  if (!grad) {
    kir_call_operand(c, "x", op->buf[0], sk_i(s, 0)), kir_call_operand(c, "y", op->buf[1], sk_i(s, 0));
    return true;
  }
  kir_call_operand(c, "dy", op->buf[0], sk_i(s, 0)), kir_call_operand(c, "x", op->buf[1], sk_i(s, 0));
  kir_call_operand(c, "aux", masked ? op->buf[3] : -1, masked ? sk_i(s, 0) : NULL);
  kir_call_operand(c, "dx", op->buf[2], sk_i(s, 0));
  return true;
}

bool sk_pool(Sk *s) {
  KirOpKind kind = s->k->op->kind;
  bool masked = kind == KOP_MAX_POOL2D_GRAD_RELU_MASK;
  bool grad = kind == KOP_MAX_POOL2D_GRAD || kind == KOP_AVG_POOL2D_GRAD || masked;
  bool mx = kind == KOP_MAX_POOL2D || kind == KOP_MAX_POOL2D_GRAD || masked;
  if (mx && sk_pool_call(s, grad, masked)) return true;
  if (!pool_fast_ok(s, grad)) return false;
  sk_restart(s);
  const KirOp *op = s->k->op;
  int xr = grad, ysr = grad ? 0 : 1; // roles of x and of a y-shaped operand
  int X = op->buf[xr], Y = op->buf[grad ? 2 : 1];
  const int64_t *ks = op->attr, *st = op->attr + 2;
  KExpr *H = sk_dim(s, xr, 2), *W = sk_dim(s, xr, 3), *HO = sk_dim(s, ysr, 2), *WO = sk_dim(s, ysr, 3);
  KExpr *nv, *cv, *iv, *jv, *zv;
  Vec *blk = &sk_loop(s, &s->k->body, "n", sk_dim(s, xr, 0), true, &nv)->body;
  blk = &sk_loop(s, blk, "c", sk_dim(s, xr, 1), false, &cv)->body;
  KExpr *plane = sk_add(s, sk_mul(s, nv, sk_dim(s, xr, 1)), cv);
  KExpr *xbase = sk_mul(s, plane, sk_mul(s, H, W));
  if (grad) {
    Vec *z = &sk_loop(s, blk, "z", sk_mul(s, H, W), false, &zv)->body;
    sk_st(s, z, Y, sk_add(s, xbase, zv), sk_f(s, kir_buf(s->p, X)->dtype, 0));
  }
  blk = &sk_loop(s, blk, "i", HO, false, &iv)->body;
  blk = &sk_loop(s, blk, "j", WO, false, &jv)->body;
  KExpr *yo = sk_add(s, sk_mul(s, sk_add(s, sk_mul(s, plane, HO), iv), WO), jv);
  int ntap = (int)(ks[0] * ks[1]);
  KExpr *off[SK_MAX_TAPS];
  for (int t = 0; t < ntap; t++) {
    KExpr *h = sk_add(s, sk_mul(s, iv, sk_i(s, st[0])), sk_i(s, t / ks[1]));
    KExpr *w = sk_add(s, sk_mul(s, jv, sk_i(s, st[1])), sk_i(s, t % ks[1]));
    off[t] = sk_add(s, xbase, sk_add(s, sk_mul(s, h, W), w));
  }
  pool_taps(s, blk, off, ntap, mx, grad, X, yo);
  return true;
}

// ---- the bias gradient into conv2d_grad_weight ------------------------------------------------
// A conv_bias_grad kernel R (the reduce_to of a conv's dy to its bias's
// gradient: dy [N, O, H, W] -> db, O elements) whose dy a `call
// conv2d_grad_weight` G reads whole (the same buffer at offset 0 and the
// same dims) joins that call: G becomes `call conv2d_grad_weight_bias`,
// which sums db from the dy chunks it reads for dw, in the reduce_to's
// float-sum order (kir.h; kernels/cpu/conv_bias.c), and R is left empty
// (no statement, no buffer). So dy is read once instead of twice. Legal
// when no kernel between the two writes dy or takes db. Where no such call
// exists (another dtype, a conv2d the recipe keeps as a nest, no library)
// R keeps its nest and drops its op record, so it may join a cpu group as
// any reduction.
static KStmt *grad_weight_call(KirKernel *k) {
  if (!k->op || k->op->kind != KOP_CONV2D_GRAD_WEIGHT || k->body.len != 1) return NULL;
  KStmt *st = VEC_AT(k->body, KStmt, 0);
  return st->kind == KS_CALL && st->call->fn == KCALL_CONV2D_GRAD_WEIGHT ? st : NULL;
}

static bool same_dy(const KirOp *r, const KirKernel *g, const KStmt *call) {
  KirCallSpec sp;
  kir_call_spec(KCALL_CONV2D_GRAD_WEIGHT, &sp);
  const KirCallParam *dy = kir_call_param(&sp, "dy");
  const KExpr *off = call->call->slot[dy->slot];
  if (call->call->buf[dy->slot] != r->buf[0] || g->op->buf[0] != r->buf[0] || !is_const(off, 0)) return false;
  if (r->rank[0] != 4 || g->op->rank[0] != 4 || r->strides[0][0] || g->op->strides[0][0]) return false;
  for (int d = 0; d < 4; d++)
    if (!same_size(r->dims[0][d], g->op->dims[0][d])) return false;
  return true;
}

// No kernel strictly between kernels a and b writes dy or touches db.
static bool free_between(const KirProgram *p, int a, int b, int dy, int db) {
  bool *reads = arena_alloc(p->arena, (size_t)p->bufs.len + 1), *writes = arena_alloc(p->arena, (size_t)p->bufs.len + 1);
  for (int i = (a < b ? a : b) + 1; i < (a < b ? b : a); i++) {
    const KirKernel *k = VEC_AT(p->kernels, KirKernel, i);
    for (int j = 0; j < k->body.len; j++) kir_stmt_access(VEC_AT(k->body, KStmt, j), reads, writes);
  }
  return !writes[dy] && !reads[db] && !writes[db];
}

// The library sums db per image over its pixels in one chunk (conv_bias.c):
// the float-sum order only where the pixels are at most KIR_SUM_CHUNK.
static bool short_pixels(const KirOp *r) {
  int64_t h, w;
  return kir_eval_i64(r->dims[0][2], NULL, &h) && kir_eval_i64(r->dims[0][3], NULL, &w) && h * w <= KIR_SUM_CHUNK;
}

void sk_fold_bias_grads(Sk *s) {
  KirProgram *p = s->p;
  for (int r = 0; r < p->kernels.len; r++) {
    KirKernel *R = VEC_AT(p->kernels, KirKernel, r);
    if (!R->op || R->op->kind != KOP_CONV_BIAS_GRAD) continue;
    int dy = R->op->buf[0], db = R->op->buf[1];
    for (int g = 0; g < p->kernels.len && s->t->library && short_pixels(R->op); g++) {
      KirKernel *G = VEC_AT(p->kernels, KirKernel, g);
      KStmt *call = grad_weight_call(G);
      if (!call || !same_dy(R->op, G, call) || !free_between(p, r, g, dy, db)) continue;
      call->call->fn = KCALL_CONV2D_GRAD_WEIGHT_BIAS; // conv2d_grad_weight's parameters, then db
      kir_call_operand(call, "db", db, sk_i(s, 0));
      kir_kernel_use(p, G, db);
      R->body = (Vec){0}, R->vars = (Vec){0}, R->params = (Vec){0};
      break;
    }
    R->op = NULL;
  }
}

// ---- the pool gradient into conv2d_grad_weight -------------------------------------------------
// A `call max_pool2d_grad` P (2 x 2, stride 2, with or without the relu
// mask) whose dx D is a temporary only a `call conv2d_grad_weight(_bias)`
// G takes (as its dy, whole: conv1 of fashion_cnn, which needs no
// grad_input) joins that call: G becomes `call conv2d_grad_weight_pool`,
// which builds each image's dy from the pool's dy, x and aux itself, P is
// left with no statement, buffer or op record, G's op record names its dy
// `none`, and D gets no bytes. Legal when no kernel between P and G writes
// what P reads. Elsewhere (dy read by grad_input or a bias reduce_to that
// stayed, other pools) both calls stay. Same bits (kernels/cpu/conv.c).
static KStmt *single_call(KirKernel *k, KirCallFn fn) {
  if (k->body.len != 1) return NULL;
  KStmt *st = VEC_AT(k->body, KStmt, 0);
  return st->kind == KS_CALL && st->call->fn == fn ? st : NULL;
}

static KExpr *slot_of(const KStmt *st, const char *name, int *buf) {
  KirCallSpec sp;
  kir_call_spec(st->call->fn, &sp);
  const KirCallParam *pa = kir_call_param(&sp, name);
  if (buf) *buf = st->call->buf[pa->slot];
  return st->call->slot[pa->slot];
}

// P's pool is 2 x 2 stride 2 over the planes G's dy has: [N, O, HO, WO].
static bool pool_matches(Sk *s, const KStmt *pc, const KirKernel *G) {
  static const char *const dims[4] = {"n", "c", "h", "w"}, *const win[4] = {"kh", "kw", "sh", "sw"};
  for (int d = 0; d < 4; d++)
    if (!same_size(slot_of(pc, dims[d], NULL), G->op->dims[0][d]) || !is_const(slot_of(pc, win[d], NULL), 2)) return false;
  (void)s;
  return true;
}

static bool no_writes_between(const KirProgram *p, int a, int b, const int *bufs, int nb) {
  bool *reads = arena_alloc(p->arena, (size_t)p->bufs.len + 1), *writes = arena_alloc(p->arena, (size_t)p->bufs.len + 1);
  for (int i = a + 1; i < b; i++) {
    const KirKernel *k = VEC_AT(p->kernels, KirKernel, i);
    for (int j = 0; j < k->body.len; j++) kir_stmt_access(VEC_AT(k->body, KStmt, j), reads, writes);
  }
  for (int i = 0; i < nb; i++)
    if (bufs[i] >= 0 && writes[bufs[i]]) return false;
  return true;
}

// A new call of fn at the end of body with old's convolution geometry and
// flags (old: a conv call whose first parameter is the geometry).
static KStmt *conv_call_like(KirProgram *p, Vec *body, KirCallFn fn, const KStmt *old) {
  KirCallSpec sp;
  kir_call_spec(old->call->fn, &sp);
  KExpr *geom[KIR_CONV_GEOM];
  for (int i = 0; i < KIR_CONV_GEOM; i++) geom[i] = old->call->slot[sp.param[0].slot + i];
  uint32_t flags = old->call->flags;
  KStmt *st = kir_call(p, body, fn);
  kir_call_geom(st, geom);
  st->call->flags = flags;
  return st;
}

// The x, dw and db operands of a grad_weight call (db none without a bias).
typedef struct GwOperands {
  int x, dw, db;
  KExpr *o_x, *o_dw, *o_db;
} GwOperands;

static GwOperands gw_operands(const KStmt *gc) {
  GwOperands g = {.db = -1};
  g.o_x = slot_of(gc, "x", &g.x), g.o_dw = slot_of(gc, "dw", &g.dw);
  if (gc->call->fn == KCALL_CONV2D_GRAD_WEIGHT_BIAS) g.o_db = slot_of(gc, "db", &g.db);
  return g;
}

static void gw_set(KStmt *st, const GwOperands *g) {
  kir_call_operand(st, "x", g->x, g->o_x), kir_call_operand(st, "dw", g->dw, g->o_dw);
  kir_call_operand(st, "db", g->db, g->o_db);
}

static void fold_pool_grad(Sk *s, KirKernel *P, KStmt *pc, KirKernel *G, KStmt *gc) {
  KirProgram *p = s->p;
  int dyp, px, aux, D;
  KExpr *o_dyp = slot_of(pc, "dy", &dyp), *o_px = slot_of(pc, "x", &px), *o_aux = slot_of(pc, "aux", &aux);
  GwOperands gw = gw_operands(gc);
  slot_of(gc, "dy", &D);
  G->body = (Vec){0};
  KStmt *st = conv_call_like(p, &G->body, KCALL_CONV2D_GRAD_WEIGHT_POOL, gc);
  kir_call_operand(st, "dyp", dyp, o_dyp), kir_call_operand(st, "px", px, o_px);
  kir_call_operand(st, "aux", aux, o_aux);
  gw_set(st, &gw);
  kir_kernel_use(p, G, dyp), kir_kernel_use(p, G, px);
  if (aux >= 0) kir_kernel_use(p, G, aux);
  G->op->buf[0] = -1;
  unuse(G, D);
  P->body = (Vec){0}, P->vars = (Vec){0}, P->params = (Vec){0}, P->op = NULL;
}

void sk_fold_pool_grads(Sk *s) {
  KirProgram *p = s->p;
  for (int g = 0; g < p->kernels.len && s->t->library; g++) {
    KirKernel *G = VEC_AT(p->kernels, KirKernel, g);
    KStmt *gc = single_call(G, KCALL_CONV2D_GRAD_WEIGHT);
    if (!gc) gc = single_call(G, KCALL_CONV2D_GRAD_WEIGHT_BIAS);
    if (!gc || !G->op || G->op->kind != KOP_CONV2D_GRAD_WEIGHT || G->op->rank[0] != 4) continue;
    int D;
    if (!is_const(slot_of(gc, "dy", &D), 0) || kir_buf(p, D)->kind != KBUF_TEMP) continue;
    for (int i = 0; i < g; i++) {
      KirKernel *P = VEC_AT(p->kernels, KirKernel, i);
      KStmt *pc = single_call(P, KCALL_MAX_POOL2D_GRAD);
      int dx, in[3];
      if (!pc || !is_const(slot_of(pc, "dx", &dx), 0) || dx != D || taken_elsewhere(p, D, P, G)) continue;
      slot_of(pc, "dy", &in[0]), slot_of(pc, "x", &in[1]), slot_of(pc, "aux", &in[2]);
      if (pool_matches(s, pc, G) && no_writes_between(p, i, g, in, 3)) fold_pool_grad(s, P, pc, G, gc);
      break;
    }
  }
}

// ---- the pool's picks, kept by the forward ------------------------------------------------------
// A `call conv2d_pool` F (not Winograd) whose y Y is a temporary that,
// besides F, only 2 x 2 stride-2 pool gradients over the whole of Y read
// (`call max_pool2d_grad` with x = Y, `call conv2d_grad_weight_pool` of
// F's geometry with px = Y; aux none or Y; all at offset 0) keeps the
// pool's picks for them instead: F becomes `call conv2d_pool_pick`, which
// writes a new u8 temporary <Y>_pick [N, O, HO/2, WO/2] (a byte per
// window: its tap and whether its value is > 0, MLC_PICK_*) and no y; the
// gradients become `call max_pool2d_grad_pick` / `conv2d_grad_weight_pick`
// on dyp and the picks (mask 1 where aux was Y: aux[pick] > 0 is then the
// picked value > 0), their op records name Y `none`, Y gets no bytes and
// the picks live from F to the last gradient. Same bits: no kernel but F
// writes Y, so the picks are the ones each gradient finds in Y. The
// backward then reads a byte per window where it read four floats, and
// the forward stores no y (fashion_cnn: conv1's 6.4 MB and conv2's 3.2 MB
// per step at batch 64).
typedef struct PickReader {
  KirKernel *k;
  KStmt *call;
  bool mask;
} PickReader;

static bool whole_y(const KStmt *st, const char *name, int Y) {
  int b;
  KExpr *off = slot_of(st, name, &b);
  return b == Y && is_const(off, 0);
}

// Whether kernel R (after F's) reads Y only as a pool gradient the picks
// can replace; *r describes it.
static bool pick_reader(Sk *s, KirKernel *R, const KStmt *fc, int Y, PickReader *r) {
  const KirBuf *y = kir_buf(s->p, Y);
  static const char *const dims[4] = {"n", "c", "h", "w"}, *const win[4] = {"kh", "kw", "sh", "sw"};
  KStmt *pc = single_call(R, KCALL_MAX_POOL2D_GRAD);
  if (pc) {
    for (int d = 0; d < 4; d++)
      if (!same_size(slot_of(pc, dims[d], NULL), y->dims[d]) || !is_const(slot_of(pc, win[d], NULL), 2)) return false;
    int dy, dx, aux;
    slot_of(pc, "dy", &dy), slot_of(pc, "dx", &dx), slot_of(pc, "aux", &aux);
    if (!whole_y(pc, "x", Y) || dy == Y || dx == Y || (aux >= 0 && !whole_y(pc, "aux", Y))) return false;
    *r = (PickReader){R, pc, aux >= 0};
    return true;
  }
  KStmt *gc = single_call(R, KCALL_CONV2D_GRAD_WEIGHT_POOL);
  if (!gc) return false;
  KirCallSpec fs, gs;
  kir_call_spec(fc->call->fn, &fs), kir_call_spec(gc->call->fn, &gs);
  for (int i = 0; i < KIR_CONV_GEOM; i++)
    if (!same_size(fc->call->slot[fs.param[0].slot + i], gc->call->slot[gs.param[0].slot + i])) return false;
  int dyp, x, aux;
  slot_of(gc, "dyp", &dyp), slot_of(gc, "x", &x), slot_of(gc, "aux", &aux);
  if (!whole_y(gc, "px", Y) || dyp == Y || x == Y || (aux >= 0 && !whole_y(gc, "aux", Y))) return false;
  *r = (PickReader){R, gc, aux >= 0};
  return true;
}

static void pick_rewrite(Sk *s, const PickReader *r, int Y, int P) {
  KirProgram *p = s->p;
  KStmt *old = r->call;
  KirKernel *R = r->k;
  R->body = (Vec){0};
  if (old->call->fn == KCALL_MAX_POOL2D_GRAD) {
    static const char *const dims[4] = {"n", "c", "h", "w"};
    KStmt *st = kir_call(p, &R->body, KCALL_MAX_POOL2D_GRAD_PICK);
    for (int d = 0; d < 4; d++) kir_call_set(st, dims[d], slot_of(old, dims[d], NULL));
    kir_call_set(st, "mask", sk_i(s, r->mask));
    int dy, dx;
    KExpr *o_dy = slot_of(old, "dy", &dy), *o_dx = slot_of(old, "dx", &dx);
    kir_call_operand(st, "dy", dy, o_dy), kir_call_operand(st, "pick", P, sk_i(s, 0));
    kir_call_operand(st, "dx", dx, o_dx);
    if (R->op && (R->op->kind == KOP_MAX_POOL2D_GRAD || R->op->kind == KOP_MAX_POOL2D_GRAD_RELU_MASK)) {
      if (R->op->buf[1] == Y) R->op->buf[1] = -1;
      if (R->op->kind == KOP_MAX_POOL2D_GRAD_RELU_MASK && R->op->buf[3] == Y) R->op->buf[3] = -1;
    }
  } else {
    KStmt *st = conv_call_like(p, &R->body, KCALL_CONV2D_GRAD_WEIGHT_PICK, old);
    static const char *const keep[4] = {"dyp", "x", "dw", "db"};
    for (int i = 0; i < 4; i++) {
      int b;
      KExpr *off = slot_of(old, keep[i], &b);
      kir_call_operand(st, keep[i], b, off);
    }
    kir_call_operand(st, "pick", P, sk_i(s, 0));
    kir_call_set(st, "mask", sk_i(s, r->mask));
  }
  unuse(R, Y);
  kir_kernel_use(p, R, P);
}

void sk_fold_pool_picks(Sk *s) {
  KirProgram *p = s->p;
  enum { MAX_READERS = 8 };
  for (int f = 0; f < p->kernels.len && s->t->library; f++) {
    KirKernel *F = VEC_AT(p->kernels, KirKernel, f);
    KStmt *fc = single_call(F, KCALL_CONV2D_POOL);
    int Y, YP;
    if (!fc || fc->call->flags & KIR_CONV_WINOGRAD) continue;
    KExpr *yoff = slot_of(fc, "y", &Y);
    if (Y < 0 || !is_const(yoff, 0)) continue;
    const KirBuf *yb = kir_buf(p, Y);
    if (yb->kind != KBUF_TEMP || yb->rank != 4 || !F->op || F->op->buf[2] != Y) continue;
    if (!is_const(slot_of(fc, "yp", &YP), 0) || kir_buf(p, YP)->rank != 4) continue;
    PickReader rd[MAX_READERS];
    int n = 0;
    bool ok = true;
    for (int i = 0; i < p->kernels.len && ok; i++) {
      KirKernel *R = VEC_AT(p->kernels, KirKernel, i);
      bool takes = false;
      for (int j = 0; j < R->params.len && !takes; j++) takes = kir_param(R, j) == Y;
      if (R == F || !takes || R->body.len == 0) continue; // the folded forward pool's: empty
      ok = i > f && n < MAX_READERS && pick_reader(s, R, fc, Y, &rd[n]);
      n++;
    }
    if (!ok || n == 0) continue;
    for (int i = 0; i < p->kernels.len; i++) {
      KirKernel *E = VEC_AT(p->kernels, KirKernel, i);
      if (E->body.len != 0) continue;
      unuse(E, Y);
      if (E->op && E->op->kind == KOP_MAX_POOL2D && E->op->buf[0] == Y) E->op->buf[0] = -1; // as fold_into_conv's none
    }
    int P = kir_buf_add(p, KBUF_TEMP, arena_printf(p->arena, "%s_pick", yb->name), DT_U8, 4, kir_buf(p, YP)->dims);
    fc->call->fn = KCALL_CONV2D_POOL_PICK; // conv2d_pool's parameters, then pick
    kir_call_operand(fc, "y", -1, NULL), kir_call_operand(fc, "pick", P, sk_i(s, 0));
    F->op->buf[2] = -1;
    unuse(F, Y);
    kir_kernel_use(p, F, P);
    for (int i = 0; i < n; i++) pick_rewrite(s, &rd[i], Y, P);
  }
}

// ---- the pool gradient from the picks into both conv gradients ----------------------------------
// A `call max_pool2d_grad_pick` P whose dx D (a temporary, whole) exactly
// two kernels take, a `call conv2d_grad_input` I and a `call
// conv2d_grad_weight(_bias)` G of one convolution (the same geometry and
// flags, no Winograd, D whole as both dys: fashion_cnn's conv2), becomes
// one `call conv2d_grad_pick(dyp, pick, mask, w, x, dx, dw, db)` in the
// later of I and G, which builds each image's dy from the picks once per
// task and feeds both gradients and db from it (kernels/cpu/
// conv_grad_pool.c). The earlier kernel and P keep no statement, buffer
// or op record, G's op record names its dy `none`, and D gets no bytes.
// Legal when no kernel between P and the later one writes what P reads,
// and none between the two calls touches what the earlier writes or
// writes what it reads (its work moves to the later one's place). Same
// bits as the three calls (kernels/cpu/conv.c).
static bool same_conv(const KStmt *a, const KStmt *b) {
  KirCallSpec sa, sb;
  kir_call_spec(a->call->fn, &sa), kir_call_spec(b->call->fn, &sb);
  for (int i = 0; i < KIR_CONV_GEOM; i++)
    if (!kir_expr_equal(a->call->slot[sa.param[0].slot + i], b->call->slot[sb.param[0].slot + i])) return false;
  return a->call->flags == b->call->flags && !(a->call->flags & KIR_CONV_WINOGRAD);
}

// No kernel strictly between a and b reads or writes `outs` or writes `ins`.
static bool movable(const KirProgram *p, int a, int b, const int *outs, int nout, const int *ins, int nin) {
  bool *reads = arena_alloc(p->arena, (size_t)p->bufs.len + 1), *writes = arena_alloc(p->arena, (size_t)p->bufs.len + 1);
  for (int i = a + 1; i < b; i++) {
    const KirKernel *k = VEC_AT(p->kernels, KirKernel, i);
    for (int j = 0; j < k->body.len; j++) kir_stmt_access(VEC_AT(k->body, KStmt, j), reads, writes);
  }
  for (int i = 0; i < nout; i++)
    if (outs[i] >= 0 && (reads[outs[i]] || writes[outs[i]])) return false;
  for (int i = 0; i < nin; i++)
    if (ins[i] >= 0 && writes[ins[i]]) return false;
  return true;
}

// The two readers of D besides P: *gi the grad_input's kernel, *gw the
// grad_weight's (both dy = D whole, one convolution); false otherwise.
static bool pick_grad_readers(const KirProgram *p, int D, const KirKernel *P, int *gi, int *gw) {
  *gi = *gw = -1;
  for (int i = 0; i < p->kernels.len; i++) {
    KirKernel *k = VEC_AT(p->kernels, KirKernel, i);
    bool takes = false;
    for (int j = 0; j < k->params.len; j++) takes |= kir_param(k, j) == D;
    if (k == P || !takes) continue;
    KStmt *ic = single_call(k, KCALL_CONV2D_GRAD_INPUT), *gc = single_call(k, KCALL_CONV2D_GRAD_WEIGHT);
    if (!gc) gc = single_call(k, KCALL_CONV2D_GRAD_WEIGHT_BIAS);
    int dy;
    if (ic && *gi < 0 && is_const(slot_of(ic, "dy", &dy), 0) && dy == D) *gi = i;
    else if (gc && *gw < 0 && k->op && k->op->kind == KOP_CONV2D_GRAD_WEIGHT && is_const(slot_of(gc, "dy", &dy), 0) && dy == D)
      *gw = i;
    else return false;
  }
  return *gi >= 0 && *gw >= 0;
}

static void fold_grad_pick(Sk *s, KirKernel *P, KStmt *pc, KirKernel *I, KStmt *ic, KirKernel *G, KStmt *gc,
                           KirKernel *L) {
  KirProgram *p = s->p;
  int dyp, pick, w, dx, D;
  KExpr *o_dyp = slot_of(pc, "dy", &dyp), *o_pick = slot_of(pc, "pick", &pick), *mask = slot_of(pc, "mask", NULL);
  KExpr *o_w = slot_of(ic, "w", &w), *o_dx = slot_of(ic, "dx", &dx);
  GwOperands gw = gw_operands(gc);
  slot_of(gc, "dy", &D);
  KirKernel *E = L == G ? I : G; // emptied; its buffers join L
  KirOp *gop = G->op;
  L->body = (Vec){0};
  KStmt *st = conv_call_like(p, &L->body, KCALL_CONV2D_GRAD_PICK, gc);
  kir_call_operand(st, "dyp", dyp, o_dyp), kir_call_operand(st, "pick", pick, o_pick);
  kir_call_set(st, "mask", mask);
  kir_call_operand(st, "w", w, o_w), kir_call_operand(st, "dx", dx, o_dx);
  gw_set(st, &gw);
  int uses[] = {dyp, pick, w, gw.x, dx, gw.dw, gw.db};
  for (int i = 0; i < 7; i++)
    if (uses[i] >= 0) kir_kernel_use(p, L, uses[i]);
  unuse(L, D);
  E->body = (Vec){0}, E->vars = (Vec){0}, E->params = (Vec){0}, E->op = NULL;
  gop->buf[0] = -1;
  L->op = gop; // the grad_weight record, its dy none
  P->body = (Vec){0}, P->vars = (Vec){0}, P->params = (Vec){0}, P->op = NULL;
}

void sk_fold_pick_grads(Sk *s) {
  KirProgram *p = s->p;
  for (int i = 0; i < p->kernels.len && s->t->library; i++) {
    KirKernel *P = VEC_AT(p->kernels, KirKernel, i);
    KStmt *pc = single_call(P, KCALL_MAX_POOL2D_GRAD_PICK);
    int D, gi, gw;
    if (!pc || !is_const(slot_of(pc, "dx", &D), 0) || kir_buf(p, D)->kind != KBUF_TEMP) continue;
    if (!pick_grad_readers(p, D, P, &gi, &gw) || gi < i || gw < i) continue;
    KirKernel *I = VEC_AT(p->kernels, KirKernel, gi), *G = VEC_AT(p->kernels, KirKernel, gw);
    KStmt *ic = single_call(I, KCALL_CONV2D_GRAD_INPUT), *gc = single_call(G, KCALL_CONV2D_GRAD_WEIGHT);
    if (!gc) gc = single_call(G, KCALL_CONV2D_GRAD_WEIGHT_BIAS);
    if (!same_conv(ic, gc) || G->op->rank[0] != 4) continue;
    static const char *const dims[4] = {"n", "c", "h", "w"}; // P's planes are G's dy [N, O, HO, WO]
    bool ok = true;
    for (int d = 0; d < 4; d++) ok &= same_size(slot_of(pc, dims[d], NULL), G->op->dims[0][d]);
    int in[2], w, dx, x, dw, db = -1;
    slot_of(pc, "dy", &in[0]), slot_of(pc, "pick", &in[1]);
    slot_of(ic, "w", &w), slot_of(ic, "dx", &dx), slot_of(gc, "x", &x), slot_of(gc, "dw", &dw);
    if (gc->call->fn == KCALL_CONV2D_GRAD_WEIGHT_BIAS) slot_of(gc, "db", &db);
    int lo = gi < gw ? gi : gw, hi = gi < gw ? gw : gi;
    int e_out[2] = {gi < gw ? dx : dw, gi < gw ? -1 : db}, e_in[1] = {gi < gw ? w : x};
    if (!ok || !no_writes_between(p, i, hi, in, 2) || !movable(p, lo, hi, e_out, 2, e_in, 1)) continue;
    fold_grad_pick(s, P, pc, I, ic, G, gc, VEC_AT(p->kernels, KirKernel, hi));
  }
}
