// test_nvrtc.c — NVRTC at build time (compiler/backend/cuda/nvrtc.h): the
// hand-written kernels of tests/backend/cuda/kernels compile to a cubin and
// PTX for sm_90 and ptxas -arch=sm_90 accepts the PTX; several architectures;
// an unsupported one; a rejected source whose messages name the kernel and
// its .model span through the line map; the message when NVRTC is absent;
// --cuda-arch parsing; the bundle and its assembler form, assembled and read back.
//
//   test_nvrtc WORKDIR PTXAS CC
// Exits 77 (skipped) after the checks that need no NVRTC when NVRTC cannot be
// opened, or when ptxas is missing, saying which; else 0 or 1.
#include <errno.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/cuda/nvrtc.h"
#include "cuda_test.h"

static const char *workdir, *ptxas, *cc;

// Runs argv, its output going to ours; the exit status (-1: not run).
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

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// ---- without NVRTC -----------------------------------------------------------------------------
static void test_arch_parse(void) {
  int a[CUDA_MAX_ARCHS];
  char err[256];
  check("arch: sm_90", cuda_arch_parse("sm_90", a, CUDA_MAX_ARCHS, err, sizeof err) == 1 && a[0] == 90);
  int n = cuda_arch_parse("sm_100,sm_80,sm_90,sm_80", a, CUDA_MAX_ARCHS, err, sizeof err);
  check("arch: a list is sorted and deduplicated", n == 3 && a[0] == 80 && a[1] == 90 && a[2] == 100);
  n = cuda_arch_parse("compute_90", a, CUDA_MAX_ARCHS, err, sizeof err);
  check("arch: compute_90 is refused", n == -1 && strstr(err, "'compute_90' is not an architecture"));
  check("arch: sm_9x is refused", cuda_arch_parse("sm_9x", a, CUDA_MAX_ARCHS, err, sizeof err) == -1);
  check("arch: an empty item is refused", cuda_arch_parse("sm_90,", a, CUDA_MAX_ARCHS, err, sizeof err) == -1);
}

static void test_absent(void) {
  char dir[4096], err[1024];
  snprintf(dir, sizeof dir, "%s/no-nvrtc", workdir);
  mkdir(dir, 0755);
  const char *dirs[] = {dir};
  CudaNvrtc *nv = cuda_nvrtc_open_in(dirs, 1, false, err, sizeof err);
  printf("  absent: %s\n", err);
  check("absent: no NVRTC in the folders searched gives NULL", nv == NULL);
  check("absent: the message says --target cuda needs the toolkit's NVRTC",
        strstr(err, "--target cuda needs the CUDA toolkit's NVRTC (libnvrtc.so)") != NULL);
  check("absent: the message names where it looked", strstr(err, dir) != NULL);
  cuda_nvrtc_close(nv);
}

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get_u64(const unsigned char *p) { return get_u32(p) | (uint64_t)get_u32(p + 4) << 32; }

static void test_bundle_layout(void) {
  unsigned char a[] = "first image", b[] = {1, 2, 3};
  CudaImage im[2] = {{CUDA_IMAGE_CUBIN, 90, b, sizeof b}, {CUDA_IMAGE_PTX, 80, a, sizeof a}};
  size_t len = 0;
  unsigned char *bu = cuda_bundle_pack(im, 2, &len);
  bool ok = bu && !memcmp(bu, "MLCCUDA", 8) && get_u32(bu + 8) == CUDA_BUNDLE_VERSION &&
            get_u32(bu + 12) == 2;
  for (int i = 0; ok && i < 2; i++) {
    const unsigned char *e = bu + CUDA_BUNDLE_HEADER + i * CUDA_BUNDLE_ENTRY;
    uint64_t off = get_u64(e + 8), size = get_u64(e + 16);
    ok = get_u32(e) == (uint32_t)im[i].kind && get_u32(e + 4) == (uint32_t)im[i].arch &&
         off % 64 == 0 && size == im[i].size && off + size <= len &&
         !memcmp(bu + off, im[i].data, size);
  }
  check("bundle: header, entries and 64-byte aligned images as nvrtc.h lays them out", ok);
  free(bu);
}

// Whether the file holds exactly len bytes equal to want.
static bool file_is(const char *path, const unsigned char *want, size_t len) {
  FILE *f = fopen(path, "rb");
  unsigned char *back = malloc(len + 1);
  size_t got = f && back ? fread(back, 1, len + 1, f) : 0;
  bool same = got == len && !memcmp(back, want, len);
  if (f) fclose(f);
  free(back);
  return same;
}

// Writes the bundle's bytes and its assembler source (cuda_bundle_write_asm),
// assembles and links it with a main that prints its bytes, and compares
// them with the bundle.
static void test_bundle_asm(const unsigned char *bu, size_t len) {
  char bin[4096], asrc[4096], main_c[4096], exe[4096], out[4096];
  snprintf(bin, sizeof bin, "%s/bundle data \"q\".bin", workdir); // a name the assembler must quote
  snprintf(asrc, sizeof asrc, "%s/bundle_data.s", workdir);
  snprintf(main_c, sizeof main_c, "%s/bundle_main.c", workdir);
  snprintf(exe, sizeof exe, "%s/bundle_check", workdir);
  snprintf(out, sizeof out, "%s/bundle_check.out", workdir);
  FILE *f = fopen(bin, "wb");
  bool wrote = f && fwrite(bu, 1, len, f) == len;
  if (f && fclose(f) != 0) wrote = false;
  f = fopen(asrc, "w");
  int rc = f ? cuda_bundle_write_asm(f, "mlc_test_bundle", bin, len) : -1;
  if (f && fclose(f) != 0) rc = -1;
  check("bundle: cuda_bundle_write_asm writes the assembler source", wrote && rc == 0);
  f = fopen(main_c, "w");
  if (!f) return;
  fprintf(f, "#include <stdio.h>\n"
             "extern const unsigned char mlc_test_bundle[];\n"
             "extern const unsigned long long mlc_test_bundle_size;\n"
             "int main(int argc, char **argv) {\n"
             "  FILE *f = fopen(argv[1], \"wb\");\n"
             "  if ((unsigned long)mlc_test_bundle %% 64) return 2;\n"
             "  return argc == 2 && f && fwrite(mlc_test_bundle, 1, mlc_test_bundle_size, f)\n"
             "         == mlc_test_bundle_size && fclose(f) == 0 ? 0 : 1;\n"
             "}\n");
  fclose(f);
  char *cc_argv[] = {(char *)cc, "-std=c17", "-Wall", "-Werror", asrc, main_c, "-o", exe, NULL};
  check("bundle: the assembler source assembles and links", run(cc_argv) == 0);
  char *run_argv[] = {exe, out, NULL};
  check("bundle: the linked array is 64-byte aligned and holds the bundle's bytes",
        run(run_argv) == 0 && file_is(out, bu, len));
}

// ---- with NVRTC ----------------------------------------------------------------------------------
static const char *block_reduce_h;

static int compile_file(CudaNvrtc *nv, const char *file, const int *archs, int narchs,
                        CudaCompileResult *r) {
  char path[512];
  snprintf(path, sizeof path, KDIR "%s", file);
  char *text = read_text(path);
  if (!text) return -1;
  CudaHeader h = {"block_reduce.h", block_reduce_h};
  CudaSource src = {.name = file, .text = text, .headers = &h, .nheaders = 1};
  CudaCompileOptions o = cuda_compile_defaults();
  if (narchs) {
    o.archs = archs;
    o.narchs = narchs;
  }
  double t0 = now_ms();
  int rc = cuda_nvrtc_compile(nv, &src, &o, r);
  printf("  %s: %s in %.0f ms\n", file, rc ? r->err : "compiled", now_ms() - t0);
  if (rc && r->log) printf("%s\n", r->log);
  free(text);
  return rc;
}

static bool is_elf(const CudaImage *im) {
  return im->kind == CUDA_IMAGE_CUBIN && im->size > 4 && !memcmp(im->data, "\177ELF", 4);
}

static bool ptx_has(const CudaImage *im, const char *needle) {
  return im->kind == CUDA_IMAGE_PTX && im->size && im->data[im->size - 1] == 0 &&
         strstr((const char *)im->data, needle);
}

// ptxas -arch=sm_90 over the PTX, written to WORKDIR/NAME.ptx.
static void check_ptxas(const char *name, const CudaImage *ptx) {
  char path[4096], line[256];
  snprintf(path, sizeof path, "%s/%s.ptx", workdir, name);
  FILE *f = fopen(path, "w");
  if (!f || fwrite(ptx->data, 1, ptx->size - 1, f) != ptx->size - 1 || fclose(f) != 0) {
    check("ptx written", false);
    return;
  }
  snprintf(line, sizeof line, "%s: ptxas -arch=sm_90 accepts the PTX", name);
  if (!ptxas[0] || access(ptxas, X_OK) != 0) {
    skip(line, "ptxas not found (pass its path as the second argument)");
    return;
  }
  char *argv[] = {(char *)ptxas, "-arch=sm_90", "-v", "-o", "/dev/null", path, NULL};
  check(line, run(argv) == 0);
}

struct KernelFile {
  const char *file;
  const char *entries[3];
};

static const struct KernelFile kernel_files[] = {
    {"elementwise.cu", {"ew_axpy_relu"}},
    {"reduce.cu", {"row_sum", "sum_atomic"}},
    {"softmax.cu", {"softmax_stats", "softmax_apply"}},
    {"sgemm.cu", {"sgemm16"}},
    {"mma.cu", {"mma16816", "mma_swapped"}},
};

static void test_kernels(CudaNvrtc *nv, unsigned char **bundle, size_t *bundle_len) {
  for (size_t i = 0; i < sizeof kernel_files / sizeof *kernel_files; i++) {
    const struct KernelFile *k = &kernel_files[i];
    CudaCompileResult r;
    char line[256];
    int rc = compile_file(nv, k->file, NULL, 0, &r);
    snprintf(line, sizeof line, "%s: NVRTC gives a sm_90 cubin and PTX", k->file);
    check(line, rc == 0 && r.nimages == 2 && is_elf(&r.images[0]) && r.images[0].arch == 90 &&
                    ptx_has(&r.images[1], ".target sm_90") && r.images[1].arch == 90);
    bool entries = rc == 0 && r.nimages == 2;
    for (int e = 0; entries && e < 3 && k->entries[e]; e++) {
      char want[128];
      snprintf(want, sizeof want, ".entry %s(", k->entries[e]);
      entries = ptx_has(&r.images[1], want);
    }
    snprintf(line, sizeof line, "%s: the PTX has each kernel under its plain name", k->file);
    check(line, entries);
    if (rc == 0 && r.nimages == 2) check_ptxas(k->file, &r.images[1]);
    if (!strcmp(k->file, "mma.cu"))
      check("mma.cu: the PTX has the bf16 and f16 mma.sync.m16n8k16",
            rc == 0 && r.nimages == 2 && ptx_has(&r.images[1], "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") &&
                ptx_has(&r.images[1], "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
    if (rc == 0 && i == 3) *bundle = cuda_bundle_pack(r.images, r.nimages, bundle_len);
    cuda_compile_result_free(&r);
  }
}

static void test_archs(CudaNvrtc *nv) {
  int archs[] = {90, 80};
  CudaCompileResult r;
  int rc = compile_file(nv, "elementwise.cu", archs, 2, &r);
  check("archs sm_90,sm_80: cubins for sm_80 and sm_90, then compute_80 PTX",
        rc == 0 && r.nimages == 3 && is_elf(&r.images[0]) && r.images[0].arch == 80 &&
            is_elf(&r.images[1]) && r.images[1].arch == 90 && r.images[2].arch == 80 &&
            ptx_has(&r.images[2], ".target sm_80"));
  cuda_compile_result_free(&r);
  int old[] = {35};
  rc = compile_file(nv, "elementwise.cu", old, 1, &r);
  check("arch sm_35: refused before compiling, naming what this NVRTC supports",
        rc == -1 && strstr(r.err, "sm_35 is not an architecture NVRTC") && strstr(r.err, "sm_90"));
  cuda_compile_result_free(&r);
}

// A two-kernel source whose second kernel uses an undefined name: the error
// comes back mapped to that kernel and its span.
static void test_errors(CudaNvrtc *nv) {
  static const char text[] = "#include \"mlc_cuda.h\"\n"          // 1
                             "MLC_KERNEL k1_ok(float *y) {\n"        // 2
                             "  y[threadIdx.x] = 1.0f;\n"            // 3
                             "}\n"                                   // 4
                             "MLC_KERNEL k2_bad(float *y) {\n"       // 5
                             "  y[threadIdx.x] = undefined_thing;\n" // 6
                             "}\n";                                  // 7
  static const char model[] = "model M {\n  h = relu(x)\n}\n";
  SrcFile file = {"m.model", model, sizeof model - 1};
  CudaKernelLines lines[] = {{2, 4, "k1_ok", {&file, 10, 5}}, {5, 7, "k2_bad", {&file, 16, 7}}};
  CudaSource src = {.name = "bad.cu", .text = text, .lines = lines, .nlines = 2};
  CudaCompileResult r;
  int rc = cuda_nvrtc_compile(nv, &src, NULL, &r);
  printf("  bad.cu: %s\n", r.err);
  check("errors: a rejected source fails with its log kept", rc == -1 && r.log != NULL);
  const CudaDiag *d = r.ndiags ? &r.diags[0] : NULL;
  check("errors: the first message is an error at bad.cu line 6",
        d && d->error && d->file && !strcmp(d->file, "bad.cu") && d->line == 6);
  check("errors: the line map names kernel k2_bad and its .model span",
        d && d->kernel && !strcmp(d->kernel, "k2_bad") && d->span.file == &file && d->span.off == 16);
  check("errors: the message is NVRTC's text",
        d && strstr(d->msg, "identifier \"undefined_thing\" is undefined"));
  char buf[512] = "";
  if (d) cuda_diag_format(d, buf, sizeof buf);
  printf("  formatted: %s\n", buf);
  check("errors: formatted as 'kernel k2_bad (bad.cu:6): error: ...'",
        !strncmp(buf, "kernel k2_bad (bad.cu:6): error: identifier", 43));
  check("errors: the summary counts the errors and quotes the first",
        strstr(r.err, "NVRTC could not compile bad.cu for sm_90: 1 error (first: kernel k2_bad"));
  cuda_compile_result_free(&r);
}

static void test_log_parse(void) {
  static const char log[] = "x.cu(3): warning #177-D: variable \"u\" was declared but never referenced\n"
                            "      float u;\n"
                            "            ^\n"
                            "mlc_cuda.h(9): error: something in a header\n"
                            "error: a message without a place\n"
                            "\n2 errors detected in the compilation of \"x.cu\".\n";
  CudaKernelLines lines[] = {{1, 5, "k0", {0}}};
  CudaSource src = {.name = "x.cu", .lines = lines, .nlines = 1};
  CudaCompileResult r = {0};
  cuda_log_parse(log, &src, &r);
  check("log: three messages (the quoted line, caret and summary skipped)", r.ndiags == 3);
  check("log: a warning with its number dropped, mapped to k0",
        r.ndiags == 3 && !r.diags[0].error && r.diags[0].line == 3 && r.diags[0].kernel &&
            !strcmp(r.diags[0].msg, "variable \"u\" was declared but never referenced"));
  check("log: a header's line maps to no kernel",
        r.ndiags == 3 && r.diags[1].error && !r.diags[1].kernel && !strcmp(r.diags[1].file, "mlc_cuda.h"));
  check("log: a message without a place", r.ndiags == 3 && r.diags[2].error && !r.diags[2].file &&
                                             !strcmp(r.diags[2].msg, "a message without a place"));
  cuda_compile_result_free(&r);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: test_nvrtc WORKDIR PTXAS CC\n");
    return 2;
  }
  workdir = argv[1];
  ptxas = argv[2];
  cc = argv[3];
  if (mkdir(workdir, 0755) != 0 && errno != EEXIST) {
    perror(workdir);
    return 1;
  }
  test_arch_parse();
  test_absent();
  test_bundle_layout();
  test_log_parse();
  char err[1024];
  CudaNvrtc *nv = cuda_nvrtc_open(err, sizeof err);
  if (!nv) {
    skip("NVRTC compiles", err);
  } else {
    int major, minor;
    cuda_nvrtc_version(nv, &major, &minor);
    printf("  NVRTC %d.%d from %s\n", major, minor, cuda_nvrtc_path(nv));
    block_reduce_h = read_text(KDIR "block_reduce.h");
    unsigned char *bundle = NULL;
    size_t len = 0;
    test_kernels(nv, &bundle, &len);
    test_archs(nv);
    test_errors(nv);
    if (bundle) test_bundle_asm(bundle, len);
    else check("bundle of sgemm.cu's images", false);
    free(bundle);
    free((char *)block_reduce_h);
    cuda_nvrtc_close(nv);
  }
  printf("%d passed, %d failed\n", npass, nfail);
  if (nfail) return 1;
  return nskip ? 77 : 0;
}
