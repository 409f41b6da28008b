// test_cuda_examples.c — the CUDA C mlc prints for whole models, without a GPU.
//
//   test_cuda_examples nvrtc WORKDIR PTXAS [MODEL...]
//   test_cuda_examples emu WORKDIR CC [MODEL...]
//   test_cuda_examples gpu WORKDIR CC [MODEL...]
//
// --exact among the models compares, for the ones after it, every output
// of train_step, eval and predict (the loss, the gradient norm) and every
// state tensor bit for bit: for models whose gpu programs sum everything in
// the CPU's order (tests/backend/cuda/gemm: matmuls, convolutions,
// elementwise ops, float sums with a lane per thread, mse, sgd).
// A --batches=N1,N2,.. among the models runs the ones after it at each of
// these sizes of the symbolic dims (default 3), from one build.
// A --dim=NAME=V among the models sizes the symbolic dim NAME V for the ones
// after it, whatever the batch (a convolution's plane H, W; a sequence
// length T bounded by a position table), up to 8 names.
// A --data=cancel among the models gives the ones after it float inputs
// whose every row (last axis) sums to a few units through partial sums of
// up to 2^42 (cancelling_rows), so with --exact a sum added in another
// order than the CPU's fails.
// A --precision=P among the models builds the ones after it at precision P
// (bf16, f16: every matmul and conv rounds its operands, in the printed
// kernels with __float2bfloat16_rn / __float2half_rn, in the interpreter
// and the CPU library alike), reported as MODEL_P.
//
// For each model (default: every examples/*.model, tests/e2e/tiny_gpt.model and
// tests/e2e/accum.model: dropout, accumulation, clipping, AdamW)
// the `mlc build --target cpu,cuda` pipeline (pipeline.h) runs in-process
// through the cuda stage: train_step, its checked copy, eval, predict (and
// plateau_update) scheduled for the gpu target, planned and printed
// (backend/cuda/cuda_gen.h).
//
// nvrtc: the device source compiles with NVRTC for sm_90 (a cubin and PTX)
//   and `ptxas -arch=sm_90` accepts the PTX. Exits 77 when NVRTC or ptxas is
//   missing, saying which.
// emu: the device source compiled as C against the CPU emulation
//   (kernels/cuda/cuda_emu.h, -ffp-contract=off) and the host launchers,
//   both into one shared object with CC, run train_step, eval and predict on
//   a batch of 3 (random state, the optimizer's step past 0, symbolic dims 3);
//   every output and every state tensor train_step stores must agree with the
//   graph interpreter (interp_run, f32) and with the CPU backend (the cpu
//   programs compiled by LLVM and run by its JIT, as tests/e2e/test_e2e_agree.c
//   does): |gpu - ref| <= 1e-3 * max(1, |ref|) — the gpu schedule sums long
//   reductions in another order (block partials and a tree); its matmuls and
//   convolutions (tiled GEMMs) follow the library's order. char_transformer
//   is compared with the interpreter only (its CPU build takes a minute here;
//   tests/e2e/tiny_gpt.model is its shape at test size, compared with both).
//
// gpu: as emu, but the device source is compiled by NVRTC (a cubin and PTX
//   for sm_90, packed as the compiler packs its bundle), loaded through the
//   runtime's CUDA layer (runtime/cuda/cuda_rt.h) and launched on the GPU by
//   the host launchers (compiled alone with CC); inputs, outputs, state and
//   scratch in one device arena. The same agreement with the interpreter and
//   the CPU backend is required: every example's loss and gradients (through
//   the updated state) on the GPU against the CPU. Exits 77 without NVRTC or
//   a CUDA device (tests/gpu/run.sh runs it on a GPU machine). Where there is
//   no GPU, MLC_TEST_FAKE_EMU=1 with the fake driver on LD_LIBRARY_PATH
//   rehearses it: the emulation object is built too and named to the fake
//   driver (MLC_FAKE_CUDA_MODULE) as the module's code.
//
// Prints "[PASS] model: what" / "[FAIL] model: what: why" and a total; exits
// 1 on any failure.
#include "backend/cuda/cuda_gen.h"
#include "backend/cuda/nvrtc.h"
#include "backend/llvm/llvm.h"
#include "cuda/cuda_rt.h"
#include "cuda_emu.h"
#include "driver/pipeline.h"
#include "graph/interp.h"
#include "mlc_model.h"
#include "mlc_rt.h"
#include "tests/backend/llvm/jit_runtime.h"
#include "tests/backend/llvm/tensor_bytes.h"

#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int npass, nfail;
static bool skipped;
static const char *workdir, *tool;
static int precision = -1; // --precision=P: a DType; -1: the recipe's
// --exact: the models after it compare every program's outputs and every
// state tensor train_step stores bit for bit (models whose every sum the
// gpu computes in the CPU's order: matmuls, convolutions, elementwise ops,
// float sums)
static bool exact;
// --batches=N1,N2,..: the models after it run each program at each of these
// sizes of the symbolic dims (one build; default 3)
static int64_t batches[8] = {3};
static int nbatches = 1;
// --dim=NAME=V: the symbolic dim NAME has size V (not the batch)
static const char *dim_name[8];
static int64_t dim_value[8];
static int ndims;
// --data=cancel: the models after it get float inputs whose sums cancel
// (cancelling_rows): an f32 sum's bits then depend on its addition order
static bool cancel;

static void report(const char *model, const char *what, bool ok, const char *why) {
  if (ok) printf("[PASS] %s: %s\n", model, what);
  else printf("[FAIL] %s: %s: %s\n", model, what, why);
  fflush(stdout);
  ok ? npass++ : nfail++;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// Runs argv; its exit status (-1: not run).
static int run(char *const argv[]) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    execvp(argv[0], argv);
    perror(argv[0]);
    _exit(127);
  }
  int st;
  if (waitpid(pid, &st, 0) < 0) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  bool ok = f && fwrite(data, 1, n, f) == n;
  if (f && fclose(f)) ok = false;
  return ok;
}

static const char *stem(const char *path) {
  const char *b = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  static char s[256];
  snprintf(s, sizeof s, "%s", b);
  if (strchr(s, '.')) *strchr(s, '.') = 0;
  return s;
}

// The pipeline through the cuda stage (on the way to codegen: no NVRTC).
static bool build_model(Pipeline *P, Arena *a, DiagSink *d, const char *path, unsigned targets) {
  diag_init(d, a);
  pipeline_init(P, a, d, &(PipelineOptions){.path = path, .cname = "t", .targets = targets,
                                            .have_precision = precision >= 0, .precision = precision});
  bool ok = pipeline_run(P, STAGE_CUDA);
  if (!ok) diag_print(d, stdout);
  return ok && P->cuda;
}

// ---- nvrtc --------------------------------------------------------------------------------------
static void nvrtc_model(CudaNvrtc *nv, const char *path) {
  Arena *a = arena_new();
  DiagSink d;
  Pipeline P;
  const char *name = precision < 0 ? stem(path) : arena_printf(a, "%s_%s", stem(path), dtype_name((DType)precision));
  if (!build_model(&P, a, &d, path, PIPE_CUDA)) {
    report(name, "printed", false, "the pipeline failed");
    pipeline_free(&P);
    arena_free(a);
    return;
  }
  int nlines;
  const CudaKernelLines *lines = cuda_gen_lines(P.cuda, &nlines);
  char src_name[300];
  snprintf(src_name, sizeof src_name, "%s.cu", name);
  CudaSource src = {.name = src_name, .text = cuda_gen_device(P.cuda), .lines = lines, .nlines = nlines};
  CudaCompileOptions o = cuda_compile_defaults();
  CudaCompileResult r;
  double t0 = now();
  int rc = cuda_nvrtc_compile(nv, &src, &o, &r);
  char why[1024] = "", what[256];
  if (rc) {
    snprintf(why, sizeof why, "%s", r.err);
    for (int i = 0; i < r.ndiags && i < 5; i++) {
      char line[512];
      cuda_diag_format(&r.diags[i], line, sizeof line);
      printf("  %s\n", line);
    }
  }
  snprintf(what, sizeof what, "%d kernels compile with NVRTC for sm_90 (%.1f s)", cuda_gen_kernels(P.cuda),
           now() - t0);
  report(name, what, rc == 0 && r.nimages == 2, why[0] ? why : "not a cubin and PTX");
  char ptx[4096];
  snprintf(ptx, sizeof ptx, "%s/%s.ptx", workdir, name);
  if (!skipped && rc == 0 && r.nimages == 2 && write_file(ptx, r.images[1].data, r.images[1].size - 1)) {
    char *argv[] = {(char *)tool, "-arch=sm_90", "-o", "/dev/null", ptx, NULL};
    t0 = now();
    int st = run(argv);
    snprintf(what, sizeof what, "ptxas -arch=sm_90 accepts the PTX (%.1f s)", now() - t0);
    report(name, what, st == 0, "ptxas failed");
  }
  cuda_compile_result_free(&r);
  pipeline_free(&P);
  arena_free(a);
}

// ---- emu: data ------------------------------------------------------------------------------------
// got (bytes of dtype dt) against want within 1e-3 relative, or with
// `bits` the same value (the same bits but for NaN payloads: f32 values
// compared as doubles, -0 apart from +0); the largest difference seen goes
// to *worst.
static bool agree(const void *got, DType dt, const void *want, bool want_tensor, int64_t n, const char *what,
                  bool bits, double *worst, char *why, size_t len) {
  for (int64_t e = 0; e < n; e++) {
    double g = elem(got, dt, e), w = want_tensor ? ((const Tensor *)want)->data[e] : elem(want, dt, e);
    double diff = fabs(g - w) / fmax(1, fabs(w));
    if (diff > *worst) *worst = diff;
    bool same = (isnan(g) && isnan(w)) || (g == w && signbit(g) == signbit(w));
    if (bits ? !same : !(diff <= 1e-3)) {
      snprintf(why, len, "%s[%lld]: CUDA %.9g, reference %.9g%s", what, (long long)e, g, w, bits ? " (bit for bit)" : "");
      return false;
    }
  }
  return true;
}

// make() with every symbolic dim that --dim names at its size, the others b.
static Tensor *make_arg(const Type *t, int64_t b, int64_t classes) {
  Type u = *t;
  Dim *dims[MLC_MAX_RANK];
  Arena *a = arena_new();
  for (int i = 0; i < t->rank; i++) {
    const Sym *y = dim_as_sym(t->dims[i]);
    int j = 0;
    while (y && j < ndims && strcmp(y->name, dim_name[j])) j++;
    dims[i] = y && j < ndims ? dim_const(a, dim_value[j]) : t->dims[i];
  }
  u.dims = dims;
  Tensor *x = make(&u, b, classes, 1.0);
  arena_free(a);
  return x;
}

// ---- emu: the shared object and its launcher ---------------------------------------------------------
typedef int (*EmuLaunchFn)(MlcEmuEntry, void **, dim3, dim3, size_t, char *, size_t);

typedef struct Emu {
  MlcLauncher l; // first: the launcher callbacks get an Emu
  void *so;
  EmuLaunchFn launch;
  const char *const *names;
  const char *const *messages;
  int nkernels;
  MlcEmuEntry *entries;
  char err[512];
} Emu;

static int emu_launch(MlcLauncher *l, int k, int64_t grid, int64_t block, void **params) {
  Emu *e = (Emu *)l;
  if (k < 0 || k >= e->nkernels) return snprintf(e->err, sizeof e->err, "kernel %d out of range", k), -1;
  if (!e->entries[k]) {
    char sym[512];
    snprintf(sym, sizeof sym, "%s_entry", e->names[k]);
    if (!(e->entries[k] = (MlcEmuEntry)(uintptr_t)dlsym(e->so, sym)))
      return snprintf(e->err, sizeof e->err, "no %.400s in the emulation object", sym), -1;
  }
  char why[400];
  if (e->launch(e->entries[k], params, mlc_dim3((unsigned)grid, 1, 1), mlc_dim3((unsigned)block, 1, 1), 0, why,
                sizeof why)) {
    snprintf(e->err, sizeof e->err, "%.100s: %.400s", e->names[k], why);
    return -1;
  }
  return 0;
}

// dev.cu (as C) + host.c + the emulation, into WORKDIR/NAME.so, opened.
static bool emu_open(Emu *e, Pipeline *P, const char *name, char *why, size_t len) {
  char dev[4096], host[4096], hosto[4096], so[4096];
  snprintf(dev, sizeof dev, "%s/%s.cu", workdir, name);
  snprintf(host, sizeof host, "%s/%s_host.c", workdir, name);
  snprintf(hosto, sizeof hosto, "%s/%s_host.o", workdir, name);
  snprintf(so, sizeof so, "%s/%s.so", workdir, name);
  const char *d = cuda_gen_device(P->cuda), *h = cuda_gen_host(P->cuda);
  if (!write_file(dev, d, strlen(d)) || !write_file(host, h, strlen(h)))
    return snprintf(why, len, "cannot write %.400s", dev), false;
  // The host launchers at -O0: their run time is the launches' arithmetic,
  // and char_transformer's 3.4 MB of scratch-offset expressions take 13 s
  // to compile at -O0 against 168 s at -O1. The kernels keep -O1.
  char *hargv[] = {(char *)tool, "-std=gnu17", "-O0", "-g0", "-fPIC", "-w", "-Ikernels/cuda", "-Iruntime/include",
                   "-I.", "-x", "c", "-c", host, "-o", hosto, NULL};
  if (run(hargv) != 0) return snprintf(why, len, "%.200s failed to compile %.400s", tool, host), false;
  char *argv[] = {(char *)tool, "-std=gnu17", "-O1", "-g0", "-shared", "-fPIC", "-ffp-contract=off", "-w",
                  "-Ikernels/cuda", "-Iruntime/include", "-I.", "-x", "c", dev,
                  "kernels/cuda/cuda_emu.c", "-x", "none", hosto, "-o", so, "-lm", NULL};
  if (run(argv) != 0) return snprintf(why, len, "%.200s failed to compile %.400s", tool, dev), false;
  *e = (Emu){.l = {.launch = emu_launch}};
  if (!(e->so = dlopen(so, RTLD_NOW | RTLD_LOCAL))) return snprintf(why, len, "dlopen: %s", dlerror()), false;
  e->launch = (EmuLaunchFn)(uintptr_t)dlsym(e->so, "mlc_emu_launch");
  e->names = dlsym(e->so, "mlc_t_cu_kernels");
  e->messages = dlsym(e->so, "mlc_t_cu_messages");
  const int *nk = dlsym(e->so, "mlc_t_cu_nkernels");
  if (!e->launch || !e->names || !nk) return snprintf(why, len, "the emulation object lacks its tables"), false;
  e->nkernels = *nk;
  e->entries = calloc((size_t)e->nkernels + 1, sizeof *e->entries);
  return true;
}

static void emu_close(Emu *e) {
  free(e->entries);
  if (e->so) {
    void (*release)(void) = (void (*)(void))(uintptr_t)dlsym(e->so, "mlc_emu_release");
    if (release) release();
    dlclose(e->so);
  }
}


// ---- gpu: the module and its launcher -------------------------------------------------------------
static bool gpu_mode;
static MlcCuda *gpu;         // the device, opened once
static CudaNvrtc *gpu_nvrtc;

typedef struct Gpu {
  MlcLauncher l; // first: the launcher callbacks get a Gpu
  void *so;      // the host launchers
  MlcCudaModule *mod;
  const char *const *names;
  const char *const *messages;
  int nkernels;
  MlcCudaFunc **fn;
  char err[512];
} Gpu;

static int gpu_launch(MlcLauncher *l, int k, int64_t grid, int64_t block, void **params) {
  Gpu *g = (Gpu *)l;
  if (k < 0 || k >= g->nkernels) return snprintf(g->err, sizeof g->err, "kernel %d out of range", k), -1;
  char why[400];
  if (!g->fn[k] && !(g->fn[k] = mlc_cuda_function(g->mod, g->names[k], why, sizeof why)))
    return snprintf(g->err, sizeof g->err, "%.400s", why), -1;
  unsigned gr[3] = {(unsigned)grid, 1, 1}, bl[3] = {(unsigned)block, 1, 1};
  if (mlc_cuda_launch(gpu, g->fn[k], gr, bl, 0, MLC_CUDA_COMPUTE, params, why, sizeof why))
    return snprintf(g->err, sizeof g->err, "%.100s: %.400s", g->names[k], why), -1;
  return 0;
}

// The device source through NVRTC into a bundle, loaded; the host launchers
// compiled alone into WORKDIR/NAME_host.so, opened.
static bool gpu_open(Gpu *g, Pipeline *P, const char *name, char *why, size_t len) {
  *g = (Gpu){.l = {.launch = gpu_launch}};
  int nlines;
  const CudaKernelLines *lines = cuda_gen_lines(P->cuda, &nlines);
  char src_name[300], host[4096], so[4096];
  snprintf(src_name, sizeof src_name, "%s.cu", name);
  CudaSource src = {.name = src_name, .text = cuda_gen_device(P->cuda), .lines = lines, .nlines = nlines};
  CudaCompileOptions o = cuda_compile_defaults();
  CudaCompileResult r;
  if (cuda_nvrtc_compile(gpu_nvrtc, &src, &o, &r)) {
    snprintf(why, len, "NVRTC: %.400s", r.err);
    cuda_compile_result_free(&r);
    return false;
  }
  size_t blen = 0;
  unsigned char *bundle = cuda_bundle_pack(r.images, r.nimages, &blen);
  cuda_compile_result_free(&r);
  if (!bundle) return snprintf(why, len, "cannot pack the bundle"), false;
  snprintf(host, sizeof host, "%s/%s_host.c", workdir, name);
  snprintf(so, sizeof so, "%s/%s_host.so", workdir, name);
  const char *h = cuda_gen_host(P->cuda);
  if (!write_file(host, h, strlen(h))) return free(bundle), snprintf(why, len, "cannot write %.400s", host), false;
  char *argv[] = {(char *)tool, "-std=gnu17", "-O0", "-g0", "-shared", "-fPIC", "-w", "-Iruntime/include", "-I.",
                  host, "-o", so, NULL}; // -O0: see emu_open
  if (run(argv) != 0) return free(bundle), snprintf(why, len, "%.200s failed to compile %.400s", tool, host), false;
  if (getenv("MLC_TEST_FAKE_EMU")) { // the fake driver runs the kernels under the emulation
    char dev[4096], emu[4096];
    snprintf(dev, sizeof dev, "%s/%s.cu", workdir, name);
    snprintf(emu, sizeof emu, "%s/%s_emu.so", workdir, name);
    char *eargv[] = {(char *)tool, "-std=gnu17", "-O1", "-g0", "-shared", "-fPIC", "-ffp-contract=off", "-w",
                     "-Ikernels/cuda", "-x", "c", dev, "kernels/cuda/cuda_emu.c", "-o", emu, "-lm", NULL};
    if (!write_file(dev, src.text, strlen(src.text)) || run(eargv) != 0)
      return free(bundle), snprintf(why, len, "cannot build the emulation object %.400s", emu), false;
    setenv("MLC_FAKE_CUDA_MODULE", emu, 1);
  }
  g->mod = mlc_cuda_module_load(gpu, bundle, blen, why, len);
  free(bundle);
  if (!g->mod) return false;
  if (!(g->so = dlopen(so, RTLD_NOW | RTLD_LOCAL))) return snprintf(why, len, "dlopen: %s", dlerror()), false;
  g->names = dlsym(g->so, "mlc_t_cu_kernels");
  g->messages = dlsym(g->so, "mlc_t_cu_messages");
  const int *nk = dlsym(g->so, "mlc_t_cu_nkernels");
  if (!g->names || !g->messages || !nk) return snprintf(why, len, "the host object lacks its tables"), false;
  g->nkernels = *nk;
  g->fn = calloc((size_t)g->nkernels + 1, sizeof *g->fn);
  return g->fn != NULL;
}

static void gpu_close(Gpu *g) {
  free(g->fn);
  if (g->mod) mlc_cuda_module_unload(g->mod);
  if (g->so) dlclose(g->so);
}

// ---- emu: one program --------------------------------------------------------------------------------
typedef struct Model {
  BuildUnit u;
  IrModule *mod;
  LlvmJit *jit;    // NULL: no CPU comparison
  Emu emu;
  Gpu gpu;         // gpu mode
  int nstate;
  const char *paths[256];
  Tensor *state[256];
} Model;

static int state_index(Model *m, const char *path) {
  for (int i = 0; i < m->nstate; i++)
    if (!strcmp(m->paths[i], path)) return i;
  return -1;
}

typedef struct Run {
  void *in[16], *out[16], *st[256];
  size_t in_bytes[16], out_bytes[16], st_bytes[256];
  int nin, nout;
  int stidx[256], nst;
  int64_t dims[16 * MLC_MAX_RANK];
} Run;

static void run_free(Run *r) {
  for (int i = 0; i < 16; i++) free(r->in[i]), free(r->out[i]);
  for (int i = 0; i < r->nst; i++) free(r->st[i]);
}

// Buffers for program p of graph function f: inputs, outputs sized like
// the interpreter's, state in p's KBUF_STATE order.
static void run_init(Run *r, Model *m, IrFunc *f, const KirProgram *p, Tensor **args, Tensor **outs) {
  memset(r, 0, sizeof *r);
  for (int i = 0; i < f->params.len; i++) {
    for (int d = 0; d < args[i]->rank; d++) r->dims[i * MLC_MAX_RANK + d] = args[i]->dims[d];
    r->in[i] = to_bytes(args[i]);
    r->in_bytes[i] = (size_t)(args[i]->numel ? args[i]->numel : 1) * (size_t)dtype_size(args[i]->dtype);
  }
  r->nin = f->params.len, r->nout = f->outputs.len;
  for (int i = 0; i < f->outputs.len; i++) {
    r->out[i] = calloc((size_t)outs[i]->numel + 1, 8);
    r->out_bytes[i] = ((size_t)outs[i]->numel + 1) * 8;
  }
  for (int b = 0; b < p->bufs.len; b++) {
    KirBuf *kb = kir_buf(p, b);
    if (kb->kind != KBUF_STATE) continue;
    r->stidx[r->nst] = state_index(m, kb->path);
    Tensor *t = m->state[r->stidx[r->nst]];
    r->st[r->nst] = to_bytes(t);
    r->st_bytes[r->nst] = (size_t)(t->numel ? t->numel : 1) * (size_t)dtype_size(t->dtype);
    r->nst++;
  }
}

static bool run_emu(Model *m, const KirProgram *p, Run *r, char *why, size_t len) {
  char sym[256];
  snprintf(sym, sizeof sym, "mlc_t_cu_%s", p->name);
  MlcDeviceProgram fn = (MlcDeviceProgram)(uintptr_t)dlsym(m->emu.so, sym);
  snprintf(sym, sizeof sym, "mlc_t_cu_%s_scratch_bytes", p->name);
  int64_t (*scratch)(const int64_t *) = (int64_t (*)(const int64_t *))(uintptr_t)dlsym(m->emu.so, sym);
  if (!fn || !scratch) return snprintf(why, len, "no %s in the emulation object", sym), false;
  uint64_t in[16], out[16], st[256];
  for (int i = 0; i < 16; i++) in[i] = (uint64_t)(uintptr_t)r->in[i], out[i] = (uint64_t)(uintptr_t)r->out[i];
  for (int i = 0; i < r->nst; i++) st[i] = (uint64_t)(uintptr_t)r->st[i];
  void *sc = aligned_alloc(256, (size_t)((scratch(r->dims) + 511) / 256 * 256));
  uint32_t flag = 0;
  int rc = fn(&m->emu.l, r->dims, in, out, st, (uint64_t)(uintptr_t)sc, 777, (uint64_t)(uintptr_t)&flag);
  free(sc);
  if (rc) return snprintf(why, len, "a launch failed: %.400s", m->emu.err), false;
  if (flag) return snprintf(why, len, "a check failed: %s", m->emu.messages[flag - 1]), false;
  return true;
}


static size_t up256(size_t n) { return (n + 255) / 256 * 256; }

// Program p on the GPU: every buffer uploaded into one arena (flag, inputs,
// outputs, state, scratch), the launches, then outputs and state downloaded
// over the host buffers.
static bool run_gpu(Model *m, const KirProgram *p, Run *r, char *why, size_t len) {
  char sym[256];
  snprintf(sym, sizeof sym, "mlc_t_cu_%s", p->name);
  MlcDeviceProgram fn = (MlcDeviceProgram)(uintptr_t)dlsym(m->gpu.so, sym);
  snprintf(sym, sizeof sym, "mlc_t_cu_%s_scratch_bytes", p->name);
  int64_t (*scratch)(const int64_t *) = (int64_t (*)(const int64_t *))(uintptr_t)dlsym(m->gpu.so, sym);
  if (!fn || !scratch) return snprintf(why, len, "no %s in the host object", sym), false;
  size_t off = 256, in_off[16], out_off[16], st_off[256];
  for (int i = 0; i < r->nin; i++) in_off[i] = off, off += up256(r->in_bytes[i]);
  for (int i = 0; i < r->nout; i++) out_off[i] = off, off += up256(r->out_bytes[i]);
  for (int i = 0; i < r->nst; i++) st_off[i] = off, off += up256(r->st_bytes[i]);
  size_t sc_off = off;
  off += up256((size_t)scratch(r->dims) + 256);
  MlcDevPtr base;
  char e[512];
  uint64_t in[16] = {0}, out[16] = {0}, st[256];
  bool ok = mlc_cuda_arena(gpu, off, &base, e, sizeof e) == 0 &&
            mlc_cuda_zero(gpu, base, 256, MLC_CUDA_COMPUTE, e, sizeof e) == 0;
  for (int i = 0; ok && i < r->nin; i++)
    in[i] = base + in_off[i],
    ok = !mlc_cuda_upload(gpu, in[i], r->in[i], r->in_bytes[i], MLC_CUDA_COMPUTE, e, sizeof e);
  for (int i = 0; ok && i < r->nout; i++) out[i] = base + out_off[i];
  for (int i = 0; ok && i < r->nst; i++)
    st[i] = base + st_off[i],
    ok = !mlc_cuda_upload(gpu, st[i], r->st[i], r->st_bytes[i], MLC_CUDA_COMPUTE, e, sizeof e);
  if (!ok) return snprintf(why, len, "device memory: %.400s", e), false;
  if (fn(&m->gpu.l, r->dims, in, out, st, base + sc_off, 777, base))
    return snprintf(why, len, "a launch failed: %.400s", m->gpu.err), false;
  uint32_t flag = 0;
  ok = !mlc_cuda_download(gpu, &flag, base, 4, MLC_CUDA_COMPUTE, e, sizeof e);
  for (int i = 0; ok && i < r->nout; i++)
    ok = !mlc_cuda_download(gpu, r->out[i], out[i], r->out_bytes[i], MLC_CUDA_COMPUTE, e, sizeof e);
  for (int i = 0; ok && i < r->nst; i++)
    ok = !mlc_cuda_download(gpu, r->st[i], st[i], r->st_bytes[i], MLC_CUDA_COMPUTE, e, sizeof e);
  ok = ok && !mlc_cuda_sync(gpu, MLC_CUDA_COMPUTE, e, sizeof e);
  if (!ok) return snprintf(why, len, "on the device: %.400s", e), false;
  if (flag) return snprintf(why, len, "a check failed: %s", m->gpu.messages[flag - 1]), false;
  return true;
}

static bool run_cpu(Model *m, const KirProgram *p, Run *r, MlcPool *pool, char *why, size_t len) {
  char sym[256];
  snprintf(sym, sizeof sym, "mlc_t_%s", p->name);
  KirEntryFn fn = (KirEntryFn)(uintptr_t)llvm_jit_lookup(m->jit, sym, why, len);
  snprintf(sym, sizeof sym, "mlc_t_%s_scratch_bytes", p->name);
  KirScratchFn scratch = (KirScratchFn)(uintptr_t)llvm_jit_lookup(m->jit, sym, why, len);
  if (!fn || !scratch) return false;
  void *sc = aligned_alloc(64, (size_t)((scratch(r->dims) + 127) / 64 * 64));
  const char *msg = NULL;
  bool ok = fn(r->dims, r->in, r->out, r->st, sc, 777, pool, &msg) == 0;
  if (!ok) snprintf(why, len, "the CPU program failed: %s", msg ? msg : "?");
  free(sc);
  return ok;
}

// Program g (gpu) and c (cpu) of graph function f, emulated, compiled and
// interpreted on args.
static void check_program(Model *m, const char *model, IrFunc *f, const KirProgram *g, const KirProgram *c,
                          Tensor **args, MlcPool *pool, bool exact_out) {
  char why[512] = "";
  Tensor *ist[256], *outs[16] = {0};
  for (int i = 0; i < m->nstate; i++) ist[i] = interp_tensor_clone(m->state[i]);
  InterpParams ip = {m->nstate, m->paths, ist, 777};
  DiagSink d;
  diag_init(&d, m->u.arena);
  bool ok = interp_run(m->mod, f, INTERP_F32, args, f->params.len, &ip, outs, &d) == 0;
  if (!ok) snprintf(why, sizeof why, "interpreter: %s", VEC_AT(d.diags, Diag, 0)->msg);
  Run gr = {0}, cr = {0};
  if (ok) run_init(&gr, m, f, g, args, outs);
  if (ok && m->jit) run_init(&cr, m, f, c, args, outs);
  double t0 = now();
  ok = ok && (gpu_mode ? run_gpu(m, g, &gr, why, sizeof why) : run_emu(m, g, &gr, why, sizeof why));
  double secs = now() - t0;
  ok = ok && (!m->jit || run_cpu(m, c, &cr, pool, why, sizeof why));
  double wi = 0, wc = 0;
  for (int i = 0; ok && i < f->outputs.len; i++) {
    const char *what = arena_printf(m->u.arena, "output %d", i);
    bool b = exact && exact_out;
    ok = agree(gr.out[i], outs[i]->dtype, outs[i], true, outs[i]->numel, what, b, &wi, why, sizeof why) &&
         (!m->jit || agree(gr.out[i], outs[i]->dtype, cr.out[i], false, outs[i]->numel, what, b, &wc, why, sizeof why));
  }
  for (int i = 0; ok && i < gr.nst; i++) {
    Tensor *w = ist[gr.stidx[i]];
    const char *what = m->paths[gr.stidx[i]];
    ok = agree(gr.st[i], w->dtype, w, true, w->numel, what, exact, &wi, why, sizeof why) &&
         (!m->jit || agree(gr.st[i], w->dtype, cr.st[i], false, w->numel, what, exact, &wc, why, sizeof why));
  }
  char what[256];
  snprintf(what, sizeof what, "%s %s (%.1f s) agrees with the interpreter (%.1e)%s%s", g->name,
           gpu_mode ? "on the GPU" : "emulated", secs, wi, m->jit ? arena_printf(m->u.arena, " and the CPU backend (%.1e)", wc) : "",
           !exact ? "" : exact_out ? ", outputs and state bit for bit" : gr.nst ? ", state bit for bit" : "");
  report(model, what, ok, why);
  run_free(&gr);
  run_free(&cr);
  for (int i = 0; i < 16; i++) interp_tensor_free(outs[i]);
  for (int i = 0; i < m->nstate; i++) interp_tensor_free(ist[i]);
}
// Rewrites every row of x's last axis (length L) so that its sum cancels:
// L/4 pairs (b, -b) of large values (|b| in [2^30, 2^42), random sign and
// mantissa) and small values in (-1, 1) elsewhere, in a shuffled order. The
// exact sum is the small values' (a few units), while the partial sums of any
// order reach 2^42, where an f64 ulp is 2^-10: so every reassociation (the
// lanes' fold, the chunks' combine, a lane written to the wrong slot) moves
// the f32 result, which f32 data of one magnitude, summed in f64, hides.
static void cancelling_rows(Tensor *x) {
  int64_t L = x->rank ? x->dims[x->rank - 1] : 1;
  for (int64_t r = 0; L > 0 && r < x->numel / L; r++) {
    double *row = x->data + r * L;
    int64_t pairs = L / 4;
    for (int64_t i = 0; i < pairs; i++) {
      double b = (double)(float)(ldexp(1 + urand(), 30 + (int)(urand() * 12)) * (urand() < 0.5 ? -1 : 1));
      row[2 * i] = b, row[2 * i + 1] = -b;
    }
    for (int64_t i = 2 * pairs; i < L; i++) row[i] = (double)(float)(2 * urand() - 1);
    for (int64_t i = L - 1; i > 0; i--) { // Fisher-Yates
      int64_t j = (int64_t)(urand() * (double)(i + 1));
      double t = row[i];
      row[i] = row[j], row[j] = t;
    }
  }
}


static void emu_model(const char *path, MlcPool *pool) {
  Arena *a = arena_new();
  DiagSink d;
  Pipeline P;
  const char *name = precision < 0 ? arena_strdup(a, stem(path))
                                    : arena_printf(a, "%s_%s", stem(path), dtype_name((DType)precision));
  bool cpu = strcmp(name, "char_transformer") != 0;
  Model m = {0};
  char why[1024] = "";
  bool ok = build_model(&P, a, &d, path, PIPE_CUDA | (cpu ? PIPE_CPU : 0));
  m.u = P.u, m.mod = P.u.lr.module;
  double t0 = now();
  ok = ok && (gpu_mode ? gpu_open(&m.gpu, &P, name, why, sizeof why) : emu_open(&m.emu, &P, name, why, sizeof why));
  if (ok)
    printf("  %s: %d kernels compiled %s in %.1f s\n", name, cuda_gen_kernels(P.cuda),
           gpu_mode ? "by NVRTC and loaded" : "as C", now() - t0);
  LlvmGen *g = NULL;
  if (ok && cpu) {
    BackendOptions bo = backend_default_options();
    bo.prefix = "mlc_t_";
    g = llvm_gen_new(&bo, why, sizeof why);
    const KirProgram *ps[3] = {m.u.k_train, m.u.k_eval, m.u.k_predict};
    for (int i = 0; g && ok && i < 3; i++) ok = llvm_gen_add(g, ps[i], why, sizeof why) == 0;
    ok = ok && g && (m.jit = llvm_jit_new(g, jit_runtime, JIT_RUNTIME_N, why, sizeof why));
  }
  if (!ok) {
    report(name, "build", false, why[0] ? why : "the pipeline failed");
  } else {
    const Type *ot = VEC_AT(m.u.predict->outputs, IrNode, 0)->type;
    int64_t classes = 2;
    dim_is_const(ot->dims[ot->rank - 1], &classes);
    m.nstate = m.mod->params.len;
    for (int i = 0; i < m.nstate; i++) {
      IrParam *p = VEC_AT(m.mod->params, IrParam, i);
      m.paths[i] = p->name;
      m.state[i] = make(p->type, 1, 1, 0.2);
      if (!strcmp(p->name, "opt.step")) m.state[i]->data[0] = 3;
      if (!strcmp(p->name, "opt.steps_per_epoch")) m.state[i]->data[0] = 10;
      if (!strcmp(p->name, "opt.total_steps")) m.state[i]->data[0] = 100;
      if (strstr(p->name, "exp_avg_sq") || strstr(p->name, "running_var")) // non-negative
        for (int64_t e = 0; e < m.state[i]->numel; e++) m.state[i]->data[e] = fabs(m.state[i]->data[e]);
    }
    IrFunc *step = m.u.train_step;
    for (int bi = 0; bi < nbatches; bi++) {
      Tensor *args[16] = {0};
      for (int i = 0; i < step->params.len && i < 16; i++) {
        const Type *t = VEC_AT(step->params, IrNode, i)->type;
        args[i] = make_arg(t, batches[bi], classes);
        if (cancel && dtype_is_float(t->dtype)) cancelling_rows(args[i]);
      }
      const char *at = nbatches == 1 ? name : arena_printf(a, "%s at batch %lld", name, (long long)batches[bi]);
      check_program(&m, at, step, m.u.g_train, m.u.k_train, args, pool, true);
      check_program(&m, at, m.u.eval, m.u.g_eval, m.u.k_eval, args, pool, true);
      check_program(&m, at, m.u.predict, m.u.g_predict, m.u.k_predict, args, pool, true);
      for (int i = 0; i < 16; i++) interp_tensor_free(args[i]);
    }
    for (int i = 0; i < m.nstate; i++) interp_tensor_free(m.state[i]);
  }
  if (m.jit) llvm_jit_free(m.jit);
  llvm_gen_free(g);
  if (gpu_mode) gpu_close(&m.gpu);
  else emu_close(&m.emu);
  pipeline_free(&P);
  arena_free(a);
}

// --precision=P: sets `precision` for the models after it.
static bool precision_arg(const char *arg) {
  if (strncmp(arg, "--precision=", 12)) return false;
  precision = dtype_from_name(arg + 12);
  if (precision != DT_F32 && precision != DT_BF16 && precision != DT_F16) {
    fprintf(stderr, "test_cuda_examples: %s: f32, bf16 or f16\n", arg);
    exit(2);
  }
  return true;
}

static bool batches_arg(const char *arg) {
  if (strncmp(arg, "--batches=", 10)) return false;
  nbatches = 0;
  for (const char *c = arg + 10; *c && nbatches < 8; c += *c == ',') {
    char *e;
    batches[nbatches++] = strtoll(c, &e, 10);
    if (e == c || batches[nbatches - 1] < 1) {
      fprintf(stderr, "test_cuda_examples: %s: sizes of at least 1, comma separated\n", arg);
      exit(2);
    }
    c = e;
  }
  return true;
}

// --dim=NAME=V: sets NAME's size for the models after it (again: replaces it).
static bool dim_arg(const char *arg) {
  if (strncmp(arg, "--dim=", 6)) return false;
  const char *eq = strchr(arg + 6, '=');
  char *e = NULL;
  int64_t v = eq ? strtoll(eq + 1, &e, 10) : 0;
  if (!eq || eq == arg + 6 || e == eq + 1 || *e || v < 1) {
    fprintf(stderr, "test_cuda_examples: %s: --dim=NAME=V, V at least 1\n", arg);
    exit(2);
  }
  size_t n = (size_t)(eq - arg - 6);
  int i = 0;
  while (i < ndims && (strlen(dim_name[i]) != n || strncmp(dim_name[i], arg + 6, n))) i++;
  if (i == 8) {
    fprintf(stderr, "test_cuda_examples: %s: at most 8 --dim names\n", arg);
    exit(2);
  }
  if (i == ndims) dim_name[ndims++] = strndup(arg + 6, n);
  dim_value[i] = v;
  return true;
}

static bool exact_arg(const char *arg) {
  if (!strcmp(arg, "--data=cancel")) return cancel = true;
  return batches_arg(arg) || dim_arg(arg) || (strcmp(arg, "--exact") ? false : (exact = true));
}

int main(int argc, char **argv) {
  if (argc < 4 || (strcmp(argv[1], "nvrtc") && strcmp(argv[1], "emu") && strcmp(argv[1], "gpu"))) {
    fprintf(stderr, "usage: test_cuda_examples nvrtc WORKDIR PTXAS [MODEL...]\n"
                    "       test_cuda_examples emu WORKDIR CC [MODEL...]\n"
                    "       test_cuda_examples gpu WORKDIR CC [MODEL...]\n");
    return 2;
  }
  workdir = argv[2], tool = argv[3];
  const char *defaults[] = {"examples/fashion_mlp.model", "examples/fashion_cnn.model",
                            "examples/regression.model", "examples/frozen_ste.model",
                            "examples/char_transformer.model", "tests/e2e/tiny_gpt.model",
                            "tests/e2e/accum.model"};
  const char *const *models = argc > 4 ? (const char *const *)argv + 4 : defaults;
  int nmodels = argc > 4 ? argc - 4 : (int)(sizeof defaults / sizeof *defaults);
  if (!strcmp(argv[1], "nvrtc")) {
    char err[1024];
    CudaNvrtc *nv = cuda_nvrtc_open(err, sizeof err);
    if (!nv) {
      printf("[SKIP] %s\n", err);
      return 77;
    }
    if (!tool[0] || access(tool, X_OK)) {
      printf("[SKIP] ptxas not found (pass its path as the third argument)\n");
      skipped = true;
    }
    for (int i = 0; i < nmodels; i++)
      if (!precision_arg(models[i]) && !exact_arg(models[i])) nvrtc_model(nv, models[i]);
    cuda_nvrtc_close(nv);
  } else {
    if ((gpu_mode = !strcmp(argv[1], "gpu"))) {
      char err[1024];
      if (!(gpu_nvrtc = cuda_nvrtc_open(err, sizeof err)) || !(gpu = mlc_cuda_open(0, err, sizeof err))) {
        printf("[SKIP] %s\n", err);
        return 77;
      }
      printf("  device: %s (sm_%d)\n", mlc_cuda_info(gpu)->name, mlc_cuda_info(gpu)->sm);
    }
    MlcPool *pool = mlc_pool_new(2);
    for (int i = 0; i < nmodels; i++)
      if (!precision_arg(models[i]) && !exact_arg(models[i])) emu_model(models[i], pool);
    mlc_pool_free(pool);
    if (gpu) mlc_cuda_close(gpu);
    if (gpu_nvrtc) cuda_nvrtc_close(gpu_nvrtc);
  }
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : skipped ? 77 : 0;
}
