// conv_grad_pool.c — both gradients of a convolution whose output went
// through a 2 x 2, stride-2 max pool (fashion_cnn's conv2), with the
// pool's gradient folded in: dy = max_pool2d_grad_pick(dyp, pick, mask),
// from the picks the forward kept (pool_pick.c), is built image by image
// in a per-thread buffer and consumed there by the
// channel-lane grad_input and grad_weight (conv_lanes_avx512.c) and the
// bias sums (conv_bias.c), so the 3.2 MB dy of conv2 at batch 64 is never
// stored and read back twice.
//
// Tasks: one per strip of rows of dw[g]^T (whole 6-row tiles, as the lane
// grad_weight splits), each visiting every image in order. A task builds
// all O/G planes of dy[n, g] (its rows of dw need every channel), adds its
// rows' terms, and computes grad_input of the images n with n % strips ==
// its strip, from the same buffer, while it is in L2. So with T strips
// each image's dy is built T times: from the picks that reads dyp and a
// byte per window (conv2: 12.5 KB an image) where rebuilding from the
// conv's output read its 50 KB back, which made the fold cost what it
// saved. grad_input is spread evenly over the strips. The strip of row 0
// sums db from the buffer, image after image. (Or, where
// conv_grad_pick_two_regions says, in two regions that build each
// image's dy once: below.)
//
// Bits: the buffer holds mlc_max_pool2d_grad_pick's values
// (pool_max2x2_grad_pick_planes); grad_input of an image is a function of that
// image's dy alone; each dw element keeps its chain over images, chunks
// and K blocks in order; db keeps conv_bias_grad_serial's lane order. So
// the call gives the bits of max_pool2d_grad_pick, then grad_input and
// grad_weight_bias, for any thread count (tests/kernels/test_conv.c).
#include <stdatomic.h>
#include <stdlib.h>

#include "conv_internal.h"
#include "gemm_internal.h"
#include "mlc_rt.h"
#include "pool_internal.h"

#if defined(__x86_64__) || defined(__i386__)
typedef struct GradPoolJob {
  const Conv *k;
  uint32_t flags;
  const float *dyp, *wt, *x;
  const uint8_t *pick;
  bool mask;
  float *dx, *dw, *db;
  int64_t step, strips; // rows of dw[g]^T per task, tasks per group
  float *dyt;           // in two regions: dy^T of every image and group, [N, G, P, OP]
  atomic_int failed;
} GradPoolJob;

// Task (g, s): rows [s*step, ..) of dw[g]^T over all images, grad_input
// of images s, s + strips, ..
static int grad_pool_task1(GradPoolJob *j, int64_t g, int64_t s) {
  const Conv *k = j->k;
  int64_t r0 = s * j->step, r1 = r0 + j->step < k->kc ? r0 + j->step : k->kc, pp = (k->ho / 2) * (k->wo / 2);
  ConvLanesGw gw;
  if (!conv_lanes_gw_begin(&gw, k, g, r0, r1, j->flags)) return -1;
  double *lanes = j->db && r0 == 0 ? conv_bias_lanes_new(k->og) : NULL;
  if (j->db && r0 == 0 && !lanes) return -1;
  int rc = 0;
  for (int64_t n = 0; n < k->n && !rc; n++) {
    float *dyb = gemm_scratch(GEMM_SCRATCH_DY, k->og * k->p); // dy[n, g]
    if (!dyb) {
      rc = -1;
      break;
    }
    int64_t pl = n * k->o + g * k->og;
    pool_max2x2_grad_pick_planes(k->og, k->ho, k->wo, j->mask, j->dyp + pl * pp, j->pick + pl * pp, dyb);
    if (n % j->strips == s &&
        !conv_lanes_grad_input(k, dyb, j->wt + g * k->kh * k->kw * k->og * ((k->cg + 15) / 16 * 16), j->flags,
                               j->dx + (n * k->c + g * k->cg) * k->h * k->w))
      rc = -1;
    if (lanes) conv_bias_lanes_add(lanes, dyb, k->p, k->og, 0, k->p);
    if (!rc && !conv_lanes_gw_image(&gw, j->x + n * k->c * k->h * k->w, dyb)) rc = -1;
  }
  if (!rc) conv_lanes_gw_end(&gw, j->dw);
  if (!rc && lanes) conv_bias_lanes_fold(lanes, k->og, j->db + g * k->og);
  free(lanes);
  return rc;
}

static void grad_pool_task(void *vj, int64_t b, int64_t e) {
  GradPoolJob *j = vj;
  for (int64_t t = b; t < e; t++)
    if (grad_pool_task1(j, t / j->strips, t % j->strips)) atomic_store(&j->failed, 1);
}

// Rows of dw[g]^T per strip: whole 6-row tiles, as many strips per group
// as the threads want.
static int64_t strip_rows(const MlcPool *pool, const Conv *k) {
  int64_t t = mlc_pool_threads(pool), want = (t + k->g - 1) / k->g; // tasks per group
  return ((k->kc + want - 1) / want + 5) / 6 * 6;
}

// ---- in two regions: each image's dy built once ---------------------------------------------
// With T > 1 strips the one region above builds every image's dy T times
// (and transposes it T times for the lane grad_weight). In two regions a
// first one, a task per image and group, builds dy[n, g] from the picks
// in the task's buffer, runs grad_input of it there and writes its dy^T
// (conv_lanes_dy_t) into one buffer of the call; a second one, a task per
// strip of rows of dw[g]^T, adds every image's terms from that dy^T, and
// the strip of row 0 sums db from it (the same lanes in the same order,
// held transposed: conv_bias_lanes_add_t). The same bits: grad_input of
// an image reads the same dy, each dw element runs the same chains over
// the same transposed floats in the same order (dy_transpose is a copy
// without rounding: the rule below keeps bf16 / f16 off this path), and
// each db lane gets the same terms in the same order.
static void gp2_image_task(void *vj, int64_t b, int64_t e) {
  GradPoolJob *j = vj;
  const Conv *k = j->k;
  int64_t pp = (k->ho / 2) * (k->wo / 2), op = (k->og + 15) / 16 * 16, cp = (k->cg + 15) / 16 * 16;
  for (int64_t t = b; t < e; t++) { // t = n * G + g
    int64_t n = t / k->g, g = t % k->g, pl = n * k->o + g * k->og;
    float *dyb = gemm_scratch(GEMM_SCRATCH_DY, k->og * k->p); // dy[n, g]
    if (!dyb) {
      atomic_store(&j->failed, 1);
      return;
    }
    pool_max2x2_grad_pick_planes(k->og, k->ho, k->wo, j->mask, j->dyp + pl * pp, j->pick + pl * pp, dyb);
    if (!conv_lanes_grad_input(k, dyb, j->wt + g * k->kh * k->kw * k->og * cp, j->flags,
                               j->dx + (n * k->c + g * k->cg) * k->h * k->w))
      atomic_store(&j->failed, 1);
    conv_lanes_dy_t(k, dyb, j->flags, j->dyt + t * k->p * op);
  }
}

static int gp2_strip_task1(GradPoolJob *j, int64_t g, int64_t s) {
  const Conv *k = j->k;
  int64_t r0 = s * j->step, r1 = r0 + j->step < k->kc ? r0 + j->step : k->kc, op = (k->og + 15) / 16 * 16;
  ConvLanesGw gw;
  if (!conv_lanes_gw_begin(&gw, k, g, r0, r1, j->flags)) return -1;
  double *lanes = j->db && r0 == 0 ? conv_bias_lanes_new(op) : NULL; // [8, OP]
  if (j->db && r0 == 0 && !lanes) return -1;
  int rc = 0;
  for (int64_t n = 0; n < k->n && !rc; n++) {
    const float *dyt = j->dyt + (n * k->g + g) * k->p * op;
    if (lanes) conv_bias_lanes_add_t(lanes, dyt, op, k->p);
    if (!conv_lanes_gw_image_t(&gw, j->x + n * k->c * k->h * k->w, dyt)) rc = -1;
  }
  if (!rc) conv_lanes_gw_end(&gw, j->dw);
  if (!rc && lanes) conv_bias_lanes_fold_t(lanes, op, k->og, j->db + g * k->og);
  free(lanes);
  return rc;
}

static void gp2_strip_task(void *vj, int64_t b, int64_t e) {
  GradPoolJob *j = vj;
  for (int64_t t = b; t < e; t++)
    if (gp2_strip_task1(j, t / j->strips, t % j->strips)) atomic_store(&j->failed, 1);
}

// The rule: two regions where the one region would build each image's
// dy more than once (2 strips or more per group), every thread gets an
// image in the first region (N * G >= T; else, as at batch 1, that region
// leaves threads idle while the one region's strips share the work), the
// operands are not rounded (bf16 / f16: dy_transpose rounds, db sums the
// unrounded dy), and the call's dy^T stays within CONV_DYT_MAX_BYTES.
// Off unless conv_grad_pick_two_regions_enable(true): slower than the one
// region at 2 threads (docs/design/kernels.md, "conv2's backward in two regions").
enum { CONV_DYT_MAX_BYTES = 32 << 20 };
static atomic_bool two_regions_on;
void conv_grad_pick_two_regions_enable(bool on) { atomic_store(&two_regions_on, on); }
bool conv_grad_pick_two_regions(const MlcPool *pool, const Conv *k, uint32_t flags) {
  int64_t t = mlc_pool_threads(pool), step = strip_rows(pool, k), op = (k->og + 15) / 16 * 16;
  return atomic_load(&two_regions_on) && !(flags & (MLC_GEMM_BF16 | MLC_GEMM_F16)) && step < k->kc && k->n * k->g >= t &&
         k->n * k->g * k->p * op <= CONV_DYT_MAX_BYTES / (int64_t)sizeof(float);
}

int conv_grad_pick_lanes(MlcPool *pool, const Conv *k, uint32_t flags, const float *dyp, const uint8_t *pick,
                         bool mask, const float *wt, const float *x, float *dx, float *dw, float *db) {
  GradPoolJob j = {.k = k, .flags = flags, .dyp = dyp, .pick = pick, .mask = mask, .wt = wt, .x = x,
                   .dx = dx, .dw = dw, .db = db};
  j.step = strip_rows(pool, k);
  j.strips = (k->kc + j.step - 1) / j.step;
  if (conv_grad_pick_two_regions(pool, k, flags)) {
    // grown once on the calling thread and kept: no allocation per call
    if (!(j.dyt = gemm_scratch(GEMM_SCRATCH_DYT, k->n * k->g * k->p * ((k->og + 15) / 16 * 16)))) return -1;
    mlc_parallel_for(pool, k->n * k->g, 1, gp2_image_task, &j);
    if (atomic_load(&j.failed)) return -1;
    mlc_parallel_for(pool, k->g * j.strips, 1, gp2_strip_task, &j);
    return atomic_load(&j.failed) ? -1 : 0;
  }
  mlc_parallel_for(pool, k->g * j.strips, 1, grad_pool_task, &j);
  return atomic_load(&j.failed) ? -1 : 0;
}

// ---- grad_weight alone, split by dw's channels ----------------------------------------------
// Task (g, s): dw's channels [16*s*step, ..) of group g (whole vectors of
// lanes) over every row and image: it builds only its channels of each
// image's dy, sums their bias lanes and adds their terms, so nothing is
// built twice (the row split rebuilds every channel in every task, the
// GEMM's column split packs dy^T at half width and builds col in each).
static int gw_pick_task1(GradPoolJob *j, int64_t g, int64_t s) {
  const Conv *k = j->k;
  int64_t nv = (k->og + 15) / 16, v0 = s * j->step, v1 = v0 + j->step < nv ? v0 + j->step : nv;
  int64_t c0 = 16 * v0, c1 = 16 * v1 < k->og ? 16 * v1 : k->og, pp = (k->ho / 2) * (k->wo / 2);
  ConvLanesGw gw;
  if (!conv_lanes_gw_begin(&gw, k, g, 0, k->kc, j->flags)) return -1;
  conv_lanes_gw_vectors(&gw, v0, v1);
  double *lanes = j->db ? conv_bias_lanes_new(c1 - c0) : NULL;
  if (j->db && !lanes) return -1;
  int rc = 0;
  for (int64_t n = 0; n < k->n && !rc; n++) {
    float *dyb = gemm_scratch(GEMM_SCRATCH_DY, k->og * k->p); // channels [c0, c1) of dy[n, g]
    if (!dyb) {
      rc = -1;
      break;
    }
    int64_t pl = n * k->o + g * k->og + c0;
    pool_max2x2_grad_pick_planes(c1 - c0, k->ho, k->wo, j->mask, j->dyp + pl * pp, j->pick + pl * pp,
                                 dyb + c0 * k->p);
    if (lanes) conv_bias_lanes_add(lanes, dyb + c0 * k->p, k->p, c1 - c0, 0, k->p);
    if (!conv_lanes_gw_image(&gw, j->x + n * k->c * k->h * k->w, dyb)) rc = -1;
  }
  if (!rc) conv_lanes_gw_end(&gw, j->dw);
  if (!rc && lanes) conv_bias_lanes_fold(lanes, c1 - c0, j->db + g * k->og + c0);
  free(lanes);
  return rc;
}

static void gw_pick_task(void *vj, int64_t b, int64_t e) {
  GradPoolJob *j = vj;
  for (int64_t t = b; t < e; t++)
    if (gw_pick_task1(j, t / j->strips, t % j->strips)) atomic_store(&j->failed, 1);
}

int64_t conv_gw_pick_vector_tasks(const struct MlcPool *pool, const Conv *k) {
  int64_t want = (mlc_pool_threads(pool) + k->g - 1) / k->g, nv = (k->og + 15) / 16;
  int64_t step = (nv + want - 1) / want;
  return (nv + step - 1) / step;
}

int conv_gw_pick_lanes(MlcPool *pool, const Conv *k, uint32_t flags, const float *dyp, const uint8_t *pick,
                       bool mask, const float *x, float *dw, float *db) {
  GradPoolJob j = {.k = k, .flags = flags, .dyp = dyp, .pick = pick, .mask = mask, .x = x, .dw = dw, .db = db};
  int64_t nv = (k->og + 15) / 16;
  j.strips = conv_gw_pick_vector_tasks(pool, k);
  j.step = (nv + j.strips - 1) / j.strips;
  mlc_parallel_for(pool, k->g * j.strips, 1, gw_pick_task, &j);
  return atomic_load(&j.failed) ? -1 : 0;
}
#endif
