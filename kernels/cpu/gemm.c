// gemm.c — the GEMM driver: mlc_sgemm's operand strides, the cache
// blocking around the micro-kernel, the split of C across the runtime's
// thread pool, the choice of micro-kernel variant and the per-thread
// packing buffers. Input: the call of mlc_kernels.h; output: C.
//
// Loops over one region of C (gemm_region), outermost first:
//   jc: NC columns of C      B block [KC, NC] (packed or in place) sits in L2
//   kb: K blocks of <= KC    balanced: ceil(K / ceil(K / KC_MAX)) each
//   ir: MR rows              A micro-panel [MR, KC] sits in L1 across jr
//   jr: NR columns           the micro-kernel: one MR x NR tile over kc
// A large A is packed once per call instead, shared by every strip
// (gemm_shared_a), and each tile prefetches a part of the next panel.
// Only the K blocking decides rounding (each block's sum is one FMA chain,
// added to C in block order), and it depends on K alone: neither the cache
// sizes (NC), the thread split nor the variant change a result.
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../gemm_ref.h"
#include "../round16.h"
#include "gemm_internal.h"
#include "gemv.h"
#include "mlc_rt.h"

// The K block: at most 512 floats of an A row (2 KiB) per micro-panel row,
// so the [8, KC] A micro-panel is 16 KiB, half of a 32 KiB L1d. Its size
// and count (mlc_gemm_kblock, mlc_gemm_kblocks) are kernels/gemm_ref.h's,
// the definition of the order the compiler's interpreters share.
enum { KC_MAX = MLC_GEMM_KC_MAX };
// Below this many flops a call runs on the caller alone: a parallel region
// costs a few microseconds (runtime/core/pool.c), about 0.5 MFLOP here.
#define PAR_MIN_FLOPS 1.5e6

// ---- variants --------------------------------------------------------------------------------
#if defined(__x86_64__) || defined(__i386__)
static const GemmVariant *const variants[] = {&gemm_avx512, &gemm_avx2, &gemm_generic};
#else
static const GemmVariant *const variants[] = {&gemm_generic};
#endif
enum { NVARIANTS = sizeof variants / sizeof variants[0] };
static _Atomic(const GemmVariant *) chosen;

// The ISA cap (MLC_CPU_ISA, read once): the widest vector ISA the library
// may use, whatever the CPU has. "avx2" makes gemm_have_avx512() false,
// "scalar" gemm_have_avx2() too, so every kernel that asks them (GEMM
// variant, strip kernels, conv, pool and bias rows) runs the rows of a
// CPU without those instructions; any other value, or none, caps nothing.
// Only kernels/cpu obeys it: LLVM-generated code keeps the host's features.
enum { ISA_SCALAR, ISA_AVX2, ISA_AVX512 };

static int isa_cap(void) {
  static _Atomic int known; // 0 unknown, else cap + 1
  int v = known;
  if (!v) {
    const char *env = getenv("MLC_CPU_ISA");
    int cap = !env ? ISA_AVX512 : !strcmp(env, "scalar") ? ISA_SCALAR : !strcmp(env, "avx2") ? ISA_AVX2 : ISA_AVX512;
    known = v = cap + 1;
  }
  return v - 1;
}

// Whether variant v runs on this CPU under the cap.
static bool allowed(const GemmVariant *v) {
#if defined(__x86_64__) || defined(__i386__)
  if (v == &gemm_avx512 && isa_cap() < ISA_AVX512) return false;
  if (v == &gemm_avx2 && isa_cap() < ISA_AVX2) return false;
#endif
  return v->supported();
}

static const GemmVariant *variant_named(const char *name) {
  for (int i = 0; i < NVARIANTS; i++)
    if (!strcmp(variants[i]->name, name) && allowed(variants[i])) return variants[i];
  return NULL;
}

const GemmVariant *gemm_current(void) {
  const GemmVariant *v = atomic_load_explicit(&chosen, memory_order_acquire);
  if (v) return v;
  const char *env = getenv("MLC_GEMM_VARIANT");
  v = env ? variant_named(env) : NULL;
  for (int i = 0; !v && i < NVARIANTS; i++)
    if (allowed(variants[i])) v = variants[i];
  atomic_store_explicit(&chosen, v, memory_order_release);
  return v;
}

const char *mlc_gemm_variant(void) { return gemm_current()->name; }

int mlc_gemm_select(const char *name) {
  const GemmVariant *v = variant_named(name);
  if (!v) return -1;
  atomic_store_explicit(&chosen, v, memory_order_release);
  return 0;
}

// ---- per-thread buffers ------------------------------------------------------------------------
typedef struct Scratch {
  float *p[GEMM_SCRATCH_SLOTS];
  int64_t cap[GEMM_SCRATCH_SLOTS];
} Scratch;

static _Thread_local Scratch *tls_scratch;
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *vs) {
  Scratch *s = vs;
  for (int i = 0; i < GEMM_SCRATCH_SLOTS; i++) free(s->p[i]);
  free(s);
}

static void scratch_key_init(void) { pthread_key_create(&scratch_key, scratch_free); }

float *gemm_scratch(int slot, int64_t floats) {
  Scratch *s = tls_scratch;
  if (!s) {
    pthread_once(&scratch_once, scratch_key_init);
    if (!(s = calloc(1, sizeof *s))) return NULL;
    pthread_setspecific(scratch_key, s); // frees the buffers when the thread exits
    tls_scratch = s;
  }
  if (floats <= s->cap[slot]) return s->p[slot];
  size_t bytes = ((size_t)floats * sizeof(float) + 63) & ~(size_t)63;
  free(s->p[slot]);
  s->p[slot] = aligned_alloc(64, bytes);
  s->cap[slot] = s->p[slot] ? (int64_t)(bytes / sizeof(float)) : 0;
  return s->p[slot];
}

float *conv_y_temp(int64_t floats, float **owned) {
  *owned = NULL;
  if (floats * (int64_t)sizeof(float) <= CONV_YTEMP_MAX_BYTES) return gemm_scratch(GEMM_SCRATCH_YTEMP, floats);
  return *owned = malloc(sizeof(float) * (size_t)floats);
}

// ---- blocking --------------------------------------------------------------------------------
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

// NC: a [KC_MAX, NC] block of B in half of the L2 (the rest holds C tiles
// and the A stream), rounded to whole NR panels.
static int64_t l2_bytes(void) {
  static int64_t l2;
  if (!l2) {
    long s = sysconf(_SC_LEVEL2_CACHE_SIZE);
    l2 = s > 0 ? s : 1 << 20;
  }
  return l2;
}

static int64_t nc_of(const GemmVariant *v) {
  int64_t nc = l2_bytes() / 2 / (KC_MAX * (int64_t)sizeof(float));
  nc -= nc % v->nr;
  return nc < v->nr ? v->nr : nc > 4096 ? 4096 : nc;
}

// Packing. B must be packed when transposed (the micro-kernel loads NR
// consecutive floats per k). Otherwise both operands are read in place,
// which wins on the small shapes of a training step (no copy; measured in
// kernels.md), until an operand outgrows half the L2: then its rows, read
// with a large (often power-of-two) stride, conflict in the caches, and a
// block reused by many tiles is worth copying: B when the region has at
// least 16 micro-rows, A when C spans more than one NC block.
// MLC_GEMM_BF16 and MLC_GEMM_F16 pack both operands always: the packing
// is where their elements are rounded.
static void packing(const Gemm *g, const GemmVariant *v, int64_t rows, int64_t nc, bool *pb,
                    bool *pa) {
  double half = 0.5 * (double)l2_bytes(), kb = 4.0 * (double)g->k;
  bool round = g->flags & (MLC_GEMM_BF16 | MLC_GEMM_F16);
  *pb = round || g->csb != 1 || (rows >= 16 * v->mr && kb * (double)g->n > half);
  *pa = round || (*pb && kb * (double)rows > half && g->n > nc);
}

// f16 rounding of a packed panel with F16C's conversions, 8 at a time
// (round16.h's scalar rounding does not vectorise; the instructions round
// the same way: ties to even, overflow to inf, subnormals kept, NaN quiet;
// the kernel tests compare the two bit for bit).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_F16C_PATH 1
__attribute__((target("avx,f16c"))) static void round_f16_f16c(int64_t kc, int w, float *dst, int panel) {
  for (int64_t p = 0; p < kc; p++) {
    float *row = dst + p * panel;
    int j = 0;
    for (; j + 8 <= w; j += 8)
      _mm256_storeu_ps(row + j, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(row + j), _MM_FROUND_TO_NEAREST_INT)));
    for (; j < w; j++) row[j] = mlc_round_f16(row[j]);
  }
}

// bf16 the same way with AVX2 integer ops, round16.h's steps 8 lanes at a
// time: u + 0x7fff + (bit 16 of u), the low half cleared; a NaN keeps its
// top half, made quiet.
__attribute__((target("avx2"))) static void round_bf16_avx2(int64_t kc, int w, float *dst, int panel) {
  const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1), hi = _mm256_set1_epi32((int)0xffff0000u);
  const __m256i quiet = _mm256_set1_epi32(0x00400000), abs = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  for (int64_t p = 0; p < kc; p++) {
    float *row = dst + p * panel;
    int j = 0;
    for (; j + 8 <= w; j += 8) {
      __m256i u = _mm256_loadu_si256((const __m256i *)(row + j));
      __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, bias), _mm256_and_si256(_mm256_srli_epi32(u, 16), one));
      __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs), inf);
      r = _mm256_blendv_epi8(r, _mm256_or_si256(u, quiet), nan);
      _mm256_storeu_si256((__m256i *)(row + j), _mm256_and_si256(r, hi));
    }
    for (; j < w; j++) row[j] = mlc_round_bf16(row[j]);
  }
}
#endif

// Whether the CPU runs the vector roundings above, under the ISA cap (asked once).
static bool vector_rounding(void) {
#ifdef HAVE_F16C_PATH
  static atomic_int have = -1; // every thread that asks first stores the same answer
  int h = atomic_load_explicit(&have, memory_order_relaxed);
  if (h < 0) {
    h = gemm_have_avx2() && __builtin_cpu_supports("f16c"); // MLC_CPU_ISA=scalar: none
    atomic_store_explicit(&have, h, memory_order_relaxed);
  }
  return h;
#else
  return false;
#endif
}

// The rounding of MLC_GEMM_BF16 / MLC_GEMM_F16, applied to a panel just
// packed (kc rows of w values, `panel` floats apart; the zero padding
// stays zero): the micro-kernels then compute the f32 GEMM of the rounded
// operands, whatever the variant.
static void round_panel(uint32_t flags, int64_t kc, int w, float *dst, int panel) {
  if (!(flags & (MLC_GEMM_BF16 | MLC_GEMM_F16))) return;
#ifdef HAVE_F16C_PATH
  if (vector_rounding()) {
    if (flags & MLC_GEMM_BF16) round_bf16_avx2(kc, w, dst, panel);
    else round_f16_f16c(kc, w, dst, panel);
    return;
  }
#endif
  for (int64_t p = 0; p < kc; p++)
    for (int j = 0; j < w; j++) {
      float *x = &dst[p * panel + j];
      *x = flags & MLC_GEMM_BF16 ? mlc_round_bf16(*x) : mlc_round_f16(*x);
    }
}

// Part `part` of `parts` of a packed A micro-panel of n floats into the
// caches: the next panel's lines, spread over the current one's tiles, so
// the shared A (Gemm.ap) arrives before its first tile needs it.
static void prefetch_part(const float *p, int64_t n, int64_t part, int64_t parts) {
  int64_t lo = n * part / parts, hi = n * (part + 1) / parts;
  for (int64_t i = lo - lo % 16; i < hi; i += 16) __builtin_prefetch(p + i);
}

// The C tile a micro-kernel is about to update, into the caches with
// write intent: the kernel reads and writes it only after its kc loop,
// where a miss stalls the epilogue (on 2048^3, `beta * c` drew 12 % of the
// micro-kernel's samples: a 2048 x 256 block of C does not stay in the L2
// from one K block to the next; a C only written, 4096x4096x256's, gains
// too). One line per 16 floats of each row. Only where the block's C
// outgrows half the L2: on C that stays cached the prefetches cost 2-5 %
// (256x784x64, 64x256x784).
static void prefetch_tile(const float *c, int64_t ldc, int mr, int nr) {
  for (int r = 0; r < mr; r++)
    for (int j = 0; j < nr; j += 16) __builtin_prefetch(c + r * ldc + j, 1);
}

// One K block of one NC block: every MR x NR tile of C[i0:i1, jc:jc+ncur].
// bp: B's packed panels (or NULL: read in place); ap_buf: room for one
// packed A micro-panel (or NULL: read in place).
static void block(const GemmVariant *v, const Gemm *g, const GemmEpi *e0, int64_t i0, int64_t i1,
                  int64_t jc, int64_t ncur, int64_t pc, int64_t kc, const float *bp, float *ap_buf) {
  GemmEpi e = *e0;
  bool cold = 4.0 * (double)(i1 - i0) * (double)ncur > 0.5 * (double)l2_bytes();
  for (int64_t ir = i0; ir < i1; ir += v->mr) {
    int mr = (int)min64(v->mr, i1 - ir);
    const float *ap = g->a + ir * g->rsa + pc * g->csa, *next = NULL;
    int64_t rsa = g->rsa, csa = g->csa;
    if (g->ap) {
      ap = g->ap + pc * g->ap_rows + (ir - g->ap_i0) * kc, rsa = 1, csa = v->mr;
      if (ir + v->mr < i1) next = ap + kc * v->mr;
    } else if (ap_buf) {
      if (rsa == 1)
        gemm_pack_copy(kc, mr, ap, csa, ap_buf, v->mr);
      else
        v->pack_t(kc, mr, ap, rsa, ap_buf, v->mr);
      round_panel(g->flags, kc, mr, ap_buf, v->mr);
      ap = ap_buf, rsa = 1, csa = v->mr;
    }
    for (int64_t jr = 0; jr < ncur; jr += v->nr) {
      int nr = (int)min64(v->nr, ncur - jr);
      int64_t j = jc + jr;
      const float *bt = bp ? bp + jr * kc : g->b + pc * g->rsb + j;
      e.bias_col = g->bias ? g->bias + j : NULL;
      e.bias_row = g->bias ? g->bias + ir : NULL;
      e.aux = g->aux ? g->aux + ir * g->ldaux + j : NULL;
      if (next) prefetch_part(next, kc * v->mr, jr / v->nr, (ncur + v->nr - 1) / v->nr);
      if (cold) prefetch_tile(g->c + ir * g->ldc + j, g->ldc, mr, nr);
      v->kernel(kc, ap, rsa, csa, bt, bp ? v->nr : g->rsb, mr, nr, g->c + ir * g->ldc + j, g->ldc,
                &e);
    }
  }
}

// B's [kc, ncur] block at (pc, jc) into NR-wide panels.
static void pack_b(const GemmVariant *v, const Gemm *g, int64_t pc, int64_t kc, int64_t jc,
                   int64_t ncur, float *bp) {
  for (int64_t jr = 0; jr < ncur; jr += v->nr) {
    int w = (int)min64(v->nr, ncur - jr);
    if (g->csb == 1)
      gemm_pack_copy(kc, w, g->b + pc * g->rsb + jc + jr, g->rsb, bp + jr * kc, v->nr);
    else
      v->pack_t(kc, w, g->b + pc * g->rsb + (jc + jr) * g->csb, g->csb, bp + jr * kc, v->nr);
    round_panel(g->flags, kc, w, bp + jr * kc, v->nr);
  }
}

// A's micro-panels of rows [ir, ir + MR), every K block, into g->ap's
// layout (Gemm.ap): what block() packs per NC block, done once.
static void pack_a_rows(const GemmVariant *v, const Gemm *g, int64_t ir) {
  int64_t kcb = mlc_gemm_kblock(g->k), nkb = mlc_gemm_kblocks(g->k);
  int mr = (int)min64(v->mr, g->m - ir);
  for (int64_t kb = 0; kb < nkb; kb++) {
    int64_t pc = kb * kcb, kc = min64(kcb, g->k - pc);
    const float *a = g->a + ir * g->rsa + pc * g->csa;
    float *d = (float *)g->ap + pc * g->ap_rows + (ir - g->ap_i0) * kc;
    if (g->rsa == 1)
      gemm_pack_copy(kc, mr, a, g->csa, d, v->mr);
    else
      v->pack_t(kc, mr, a, g->rsa, d, v->mr);
    round_panel(g->flags, kc, mr, d, v->mr);
  }
}

int gemm_region(const Gemm *g, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  if (i0 >= i1 || j0 >= j1) return 0;
  const GemmVariant *v = gemm_current();
  int64_t nc = nc_of(v), kcb = mlc_gemm_kblock(g->k), nkb = mlc_gemm_kblocks(g->k);
  bool packb, packa;
  packing(g, v, i1 - i0, nc, &packb, &packa);
  packa = packa && !g->ap;
  float *bp = NULL, *ap = NULL;
  int64_t kmax = kcb ? kcb : 1, w = min64(nc, j1 - j0) + v->nr;
  if (packb && !(bp = gemm_scratch(GEMM_SCRATCH_PACK, kmax * w + kmax * v->mr))) return -1;
  if (packa && !(ap = gemm_scratch(GEMM_SCRATCH_PACK, kmax * w + kmax * v->mr))) return -1;
  if (ap) ap += kmax * w;
  for (int64_t jc = j0; jc < j1; jc += nc) {
    int64_t ncur = min64(nc, j1 - jc);
    for (int64_t kb = 0; kb < nkb; kb++) {
      int64_t pc = kb * kcb, kc = min64(kcb, g->k - pc);
      if (bp) pack_b(v, g, pc, kc, jc, ncur, bp);
      GemmEpi e = {.flags = kb == nkb - 1 ? g->flags & ~(uint32_t)(MLC_GEMM_BF16 | MLC_GEMM_F16) : 0, .alpha = g->alpha,
                   .beta = kb == 0 ? g->beta : 1.0f, .ldaux = g->ldaux};
      block(v, g, &e, i0, i1, jc, ncur, pc, kc, bp, ap);
    }
  }
  return 0;
}

// ---- threads ---------------------------------------------------------------------------------
// Each product's C is cut into `per` strips of whole micro-tiles, across N
// when there are enough NR panels (each thread then packs only its own B
// columns), else across M; a batch of products gives batch * per tasks.
// Every element is still computed by exactly one task in the same order,
// so the split is free to follow the thread count.
//
// The threads claim strips from the pool (strip k of n first thread
// floor(k*T/n)'s, the rest stolen from the back), so a thread that
// starts late (a worker woken from its poll, or a vCPU the host took away)
// takes fewer strips instead of keeping the others waiting for a strip
// sized for it: up to SPLIT_PER_THREAD strips per thread, each of at least
// STRIP_MIN_FLOPS (a strip costs a claim and a gemm_region's setup, well
// under a microsecond; 0.5 MFLOP is ~5 us of the micro-kernel).
enum { SPLIT_PER_THREAD = 4 };
#define STRIP_MIN_FLOPS 0.5e6

typedef struct Split {
  const Gemm *g;
  int64_t per;  // strips per product
  int64_t step; // columns (or rows) per strip
  bool by_cols;
  int64_t i0, i1;           // the rows column strips cover (a row block of a shared A)
  int64_t sa, sb, sc, saux; // element strides between the products of a batch
  atomic_int failed;
} Split;

static void split_run(void *vs, int64_t b, int64_t e) {
  Split *s = vs;
  for (int64_t t = b; t < e; t++) {
    int64_t bi = t / s->per, lo = t % s->per * s->step;
    Gemm g = *s->g;
    g.a += bi * s->sa, g.b += bi * s->sb, g.c += bi * s->sc;
    if (g.aux) g.aux += bi * s->saux;
    int rc = s->by_cols ? gemm_region(&g, s->i0, s->i1, lo, min64(lo + s->step, g.n))
                        : gemm_region(&g, lo, min64(lo + s->step, g.m), 0, g.n);
    if (rc) atomic_store(&s->failed, 1);
  }
}

// Whether C = op(A) B is a weight gradient, dy^T x (A read transposed,
// rsa == 1), to be cut across M: its rows are the weight's rows, which the
// forward's column strips (y = x w^T, N = the weight's rows) and the
// update's row chunks cut the same way, so with the pool's fixed first
// assignment (chunk k of n is thread floor(k*T/n)'s) one core writes,
// updates and packs the same rows, in its own L2. Only where a row strip
// reads B in place (it is not packed) and there are micro-rows for every
// thread, and B (which every row strip reads whole) takes at most a
// quarter of the L2 (fc1's x, 64 x 784, 200 KB; a CNN classifier's 64 x
// 3136 keeps its column strips, which read only their own columns).
static bool weight_rows(const Gemm *g, const GemmVariant *v, int64_t pm, int64_t t) {
  if (g->rsa != 1 || g->csa == 1 || pm < t || g->m < 2 * v->mr) return false;
  if (4.0 * (double)g->k * (double)g->n > 0.25 * (double)l2_bytes()) return false;
  bool pb, pa;
  packing(g, v, (g->m + t - 1) / t, nc_of(v), &pb, &pa);
  return !pb;
}

// Whether the column strips of one product read a shared, once-packed A
// (Gemm.ap) instead of each packing its A micro-panels per NC block
// (gemm_region), which packs A ceil(width / NC) times per strip: 8 times
// for one thread on 2048^3, 9 % of its time. Only for a single product (a
// batch's products have their own A) where gemm_region would pack A.
bool gemm_shared_a(const Gemm *g, int64_t batch, bool by_cols) {
  bool pb, pa;
  if (batch != 1 || !by_cols) return false;
  const GemmVariant *v = gemm_current();
  packing(g, v, g->m, nc_of(v), &pb, &pa);
  return pa;
}

// Strips per product for t threads, and whether they are column strips.
// At least one per thread (as many as the panels allow); more, up to
// SPLIT_PER_THREAD per thread, where a strip re-packs nothing another one
// packs too: a row strip packs all of a packed B, and a column strip
// narrower than NC packs its A micro-panels again (gemm_region) unless A
// is shared (gemm_shared_a), so those keep one per thread.
int64_t gemm_strips(const Gemm *g, int64_t t, int64_t batch, bool *by_cols) {
  const GemmVariant *v = gemm_current();
  int64_t pn = (g->n + v->nr - 1) / v->nr, pm = (g->m + v->mr - 1) / v->mr, nc = nc_of(v);
  *by_cols = (pn >= t || pn >= pm) && !weight_rows(g, v, pm, t);
  int64_t panels = *by_cols ? pn : pm;
  double flops = 2.0 * (double)g->m * (double)g->n * (double)g->k;
  if (t <= 1 || (double)batch * flops < PAR_MIN_FLOPS) return 1;
  int64_t least = min64((t + batch - 1) / batch, panels);
  int64_t want = (t * SPLIT_PER_THREAD + batch - 1) / batch;
  // at least one strip: a product under STRIP_MIN_FLOPS gets here when the
  // batch carries the call past PAR_MIN_FLOPS (attention's per-head dw)
  want = min64(min64(want, (int64_t)(flops / STRIP_MIN_FLOPS)), panels);
  if (want < 1) want = 1;
  bool pb, pa;
  packing(g, v, *by_cols ? g->m : (g->m + want - 1) / want, nc, &pb, &pa);
  if (!*by_cols && pb) want = least;
  if (*by_cols && pa && !gemm_shared_a(g, batch, true)) want = min64(want, (g->n + nc - 1) / nc);
  return want > least ? want : least;
}

static int64_t apack_limit = 16 << 20;

void gemm_set_apack_limit(int64_t bytes) { apack_limit = bytes > 0 ? bytes : 16 << 20; }

static void pack_a_task(void *vg, int64_t b, int64_t e) {
  const Gemm *g = vg;
  const GemmVariant *v = gemm_current();
  for (int64_t p = b; p < e; p++) pack_a_rows(v, g, g->ap_i0 + p * v->mr);
}

// Column strips over a shared A: per row block of at most apack_limit
// bytes packed (a region of micro-panel tasks), the strips over its rows
// (a second region). The packed block is read once per NC block of a
// strip, about NC / 2 FLOP per byte, so it need not stay in a cache. A
// block of fewer than 16 micro-rows would change gemm_region's choice to
// pack B (packing()), so a block is never smaller than that. -1 when out
// of memory for the block; nothing is written then.
static int split_shared_a(MlcPool *pool, const GemmVariant *v, const Gemm *g, Split *s) {
  int64_t mup = round_up(g->m, v->mr), k = g->k > 0 ? g->k : 1;
  int64_t mb = round_up(apack_limit / ((int64_t)sizeof(float) * k), v->mr);
  if (mb < 16 * v->mr) mb = 16 * v->mr;
  mb = min64(mb, mup);
  float *buf = gemm_scratch(GEMM_SCRATCH_APACK, mb * k);
  if (!buf) return -1;
  for (int64_t i0 = 0; i0 < g->m; i0 += mb) {
    Gemm ga = *g;
    ga.ap = buf, ga.ap_i0 = i0, ga.ap_rows = min64(mb, mup - i0);
    mlc_parallel_for(pool, ga.ap_rows / v->mr, 1, pack_a_task, &ga);
    s->g = &ga, s->i0 = i0, s->i1 = min64(i0 + mb, g->m);
    mlc_parallel_for(s->per > 1 ? pool : NULL, s->per, 1, split_run, s);
  }
  return 0;
}

static int gemm_parallel(MlcPool *pool, const Gemm *g, int64_t batch, const int64_t strides[4]) {
  const GemmVariant *v = gemm_current();
  Split s = {.g = g, .i1 = g->m, .sa = strides[0], .sb = strides[1], .sc = strides[2], .saux = strides[3]};
  int64_t parts = gemm_strips(g, mlc_pool_threads(pool), batch, &s.by_cols);
  int64_t unit = s.by_cols ? v->nr : v->mr, panels = ((s.by_cols ? g->n : g->m) + unit - 1) / unit;
  s.step = (panels + parts - 1) / parts * unit;
  s.per = ((s.by_cols ? g->n : g->m) + s.step - 1) / s.step;
  if (gemm_shared_a(g, batch, s.by_cols) && !split_shared_a(pool, v, g, &s)) return atomic_load(&s.failed) ? -1 : 0;
  mlc_parallel_for(parts * batch > 1 ? pool : NULL, batch * s.per, 1, split_run, &s);
  return atomic_load(&s.failed) ? -1 : 0;
}

static Gemm gemm_of(uint32_t flags, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                    int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc,
                    const float *bias, const float *aux, int64_t ldaux) {
  Gemm g = {.flags = flags & ~(uint32_t)(MLC_GEMM_TRANS_A | MLC_GEMM_TRANS_B),
            .m = m, .n = n, .k = k < 0 ? 0 : k, .alpha = alpha, .beta = beta,
            .a = a, .b = b, .c = c, .ldc = ldc, .bias = bias, .aux = aux, .ldaux = ldaux};
  g.rsa = flags & MLC_GEMM_TRANS_A ? 1 : lda;
  g.csa = flags & MLC_GEMM_TRANS_A ? lda : 1;
  g.rsb = flags & MLC_GEMM_TRANS_B ? 1 : ldb;
  g.csb = flags & MLC_GEMM_TRANS_B ? ldb : 1;
  return g;
}

int mlc_sgemm(MlcPool *pool, uint32_t flags, int64_t m, int64_t n, int64_t k, float alpha,
              const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
              int64_t ldc, const float *bias, const float *aux, int64_t ldaux) {
  if (m <= 0 || n <= 0) return 0;
  static const int64_t none[4] = {0, 0, 0, 0};
  uint32_t round = flags & (MLC_GEMM_BF16 | MLC_GEMM_F16);
  bool small = m <= GEMV_MR;
  if (round) {
    // At most 4 rows on the small-M path's variant: its strip kernel reads
    // a constant's copy, or rounds a k-major B as it loads it; the rest
    // rounds while packing. A 16-bit copy halves the bytes read per call,
    // but widening takes a vector op per 16 columns, which is slower than
    // the f32 kernel while the f32 copy would stay in the L2, except at
    // bf16 for up to 3 rows (kernels.md, "Small M and constant operands"):
    // there the copy holds the rounded values as floats.
    if (!small || !gemv_available()) {
      Gemm g = gemm_of(flags, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias, aux, ldaux);
      return gemm_parallel(pool, &g, 1, none);
    }
    bool half = 4.0 * (double)n * (double)k > 0.5 * (double)l2_bytes() || (round & MLC_GEMM_BF16 && m <= 3);
    uint32_t kind = half ? round : round | GEMM_CACHE_WIDE;
    const void *kb = flags & MLC_GEMM_TRANS_B ? gemm_cache_kmajor(b, n, k, ldb, kind) : NULL;
    const uint16_t *b16 = kb && half ? kb : NULL;
    if (kb) b = half ? NULL : kb, ldb = half ? gemv_pad16(n) : n, flags &= ~(uint32_t)MLC_GEMM_TRANS_B;
    Gemm g = gemm_of(flags, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias, aux, ldaux);
    if (gemv_fits(&g)) return gemv_run(pool, &g, b16, kb != NULL);
    return gemm_parallel(pool, &g, 1, none);
  }
  // a constant's k-major copy, for the small-M path only: more rows amortise
  // the panels packed per call, which read faster than a k-major B in place.
  const float *kb = small && flags & MLC_GEMM_TRANS_B ? gemm_cache_kmajor(b, n, k, ldb, 0) : NULL;
  if (kb) b = kb, ldb = n, flags &= ~(uint32_t)MLC_GEMM_TRANS_B;
  Gemm g = gemm_of(flags, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias, aux, ldaux);
  if (small && gemv_fits(&g)) return gemv_run(pool, &g, NULL, false); // at most 4 rows: gemv.c
  return gemm_parallel(pool, &g, 1, none);
}

int mlc_sgemm_batched(MlcPool *pool, uint32_t flags, int64_t batch, int64_t m, int64_t n, int64_t k,
                      float alpha, const float *a, int64_t lda, int64_t stride_a, const float *b,
                      int64_t ldb, int64_t stride_b, float beta, float *c, int64_t ldc,
                      int64_t stride_c, const float *bias, const float *aux, int64_t ldaux,
                      int64_t stride_aux) {
  if (batch <= 0 || m <= 0 || n <= 0) return 0;
  Gemm g = gemm_of(flags, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias, aux, ldaux);
  const int64_t strides[4] = {stride_a, stride_b, stride_c, stride_aux};
  return gemm_parallel(pool, &g, batch, strides);
}

bool gemm_have_avx512(void) {
#if defined(__x86_64__) || defined(__i386__)
  static _Atomic int known; // 0 unknown, 1 no, 2 yes
  int v = known;
  if (!v) known = v = allowed(&gemm_avx512) ? 2 : 1;
  return v == 2;
#else
  return false;
#endif
}

bool gemm_have_avx2(void) {
#if defined(__x86_64__) || defined(__i386__)
  static _Atomic int known; // 0 unknown, 1 no, 2 yes
  int v = known;
  if (!v) known = v = allowed(&gemm_avx2) ? 2 : 1;
  return v == 2;
#else
  return false;
#endif
}
