// nvrtc.c — NVRTC through dlopen: finding libnvrtc, compiling a CUDA C
// source once per architecture to a cubin (plus the lowest one's PTX), and
// turning the program log into messages that name the kernel (nvrtc.h).
//
// NVRTC's few entry points are declared here with their C ABI (nvrtcResult
// is an int-sized enum, nvrtcProgram an opaque pointer), so mlc needs no
// CUDA header to build; every call is checked and a failure names this
// file's line, the call and NVRTC's own error string.
#include "nvrtc.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

// kernels/cuda/mlc_cuda.h, embedded by CMake (scripts/embed.cmake).
extern const char mlc_cuda_h_src[];
extern const char mlc_philox_h_src[]; // kernels/philox.h, which mlc_cuda.h includes

typedef int NvResult;                   // nvrtcResult: 0 is NVRTC_SUCCESS
typedef struct NvProgram_ *NvProgram;   // nvrtcProgram
enum { NV_ERROR_COMPILATION = 6 };      // NVRTC_ERROR_COMPILATION

// The entry points, by their exported names.
#define NVRTC_FUNCS(X)                                                          \
  X(nvrtcGetErrorString, const char *, (NvResult))                             \
  X(nvrtcVersion, NvResult, (int *, int *))                                    \
  X(nvrtcGetNumSupportedArchs, NvResult, (int *))                              \
  X(nvrtcGetSupportedArchs, NvResult, (int *))                                 \
  X(nvrtcCreateProgram, NvResult,                                              \
    (NvProgram *, const char *, const char *, int, const char *const *,        \
     const char *const *))                                                     \
  X(nvrtcDestroyProgram, NvResult, (NvProgram *))                              \
  X(nvrtcCompileProgram, NvResult, (NvProgram, int, const char *const *))      \
  X(nvrtcGetProgramLogSize, NvResult, (NvProgram, size_t *))                   \
  X(nvrtcGetProgramLog, NvResult, (NvProgram, char *))                         \
  X(nvrtcGetPTXSize, NvResult, (NvProgram, size_t *))                          \
  X(nvrtcGetPTX, NvResult, (NvProgram, char *))                                \
  X(nvrtcGetCUBINSize, NvResult, (NvProgram, size_t *))                        \
  X(nvrtcGetCUBIN, NvResult, (NvProgram, char *))

struct CudaNvrtc {
  void *lib;
  char path[4096];
  int major, minor;
  int archs[64];
  int narchs;
#define X(name, ret, args) ret(*name) args;
  NVRTC_FUNCS(X)
#undef X
};

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

static void say(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *err, size_t n, const char *fmt, ...) {
  if (!err || !n) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, n, fmt, ap);
  va_end(ap);
}

// 0, or -1 with "nvrtc.c:LINE: CALL: NVRTC's error string" in err.
static int nv_check(const CudaNvrtc *nv, NvResult rc, const char *call, int line, char *err,
                    size_t n) {
  if (rc == 0) return 0;
  say(err, n, "%s:%d: %s: %s", base_name(__FILE__), line, call, nv->nvrtcGetErrorString(rc));
  return -1;
}
#define NV_CHECK(nv, call, err, n) nv_check(nv, (nv)->call, #call, __LINE__, err, n)

// ---- finding and opening libnvrtc ------------------------------------------------------------
// A library file name NVRTC may have in a toolkit's lib64: libnvrtc.so or
// libnvrtc.so.N[.M...] (not libnvrtc-builtins, not libnvrtc.alt).
static bool nvrtc_name(const char *name) {
  if (strncmp(name, "libnvrtc.so", 11) != 0) return false;
  const char *v = name + 11;
  if (!*v) return true;
  if (*v != '.') return false;
  for (v++; *v; v++)
    if (!isdigit((unsigned char)*v) && *v != '.') return false;
  return true;
}

// The preferred libnvrtc file in dir ("libnvrtc.so" first, else the
// greatest versioned name), into out; false when there is none.
static bool find_in_dir(const char *dir, char *out, size_t n) {
  DIR *d = opendir(dir);
  if (!d) return false;
  char best[256] = "";
  for (struct dirent *e; (e = readdir(d));) {
    if (!nvrtc_name(e->d_name)) continue;
    if (!strcmp(e->d_name, "libnvrtc.so") ||
        (strcmp(best, "libnvrtc.so") && strcmp(e->d_name, best) > 0))
      snprintf(best, sizeof best, "%s", e->d_name);
  }
  closedir(d);
  if (!best[0]) return false;
  snprintf(out, n, "%s/%s", dir, best);
  return true;
}

// Resolves every entry point; 0 or -1 naming the missing one.
static int load_symbols(CudaNvrtc *nv, char *err, size_t n) {
#define X(name, ret, args)                                                     \
  *(void **)&nv->name = dlsym(nv->lib, #name);                                 \
  if (!nv->name) {                                                             \
    say(err, n, "%s has no %s (an NVRTC older than CUDA 11.2?)", nv->path, #name); \
    return -1;                                                                 \
  }
  NVRTC_FUNCS(X)
#undef X
  return 0;
}

static int query(CudaNvrtc *nv, char *err, size_t n) {
  if (NV_CHECK(nv, nvrtcVersion(&nv->major, &nv->minor), err, n)) return -1;
  if (NV_CHECK(nv, nvrtcGetNumSupportedArchs(&nv->narchs), err, n)) return -1;
  if (nv->narchs < 0 || nv->narchs > (int)(sizeof nv->archs / sizeof nv->archs[0])) {
    say(err, n, "%s: nvrtcGetNumSupportedArchs gave %d architectures", nv->path, nv->narchs);
    return -1;
  }
  return NV_CHECK(nv, nvrtcGetSupportedArchs(nv->archs), err, n);
}

static CudaNvrtc *open_file(const char *file, char *err, size_t n) {
  void *lib = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    say(err, n, "cannot open NVRTC: %s", dlerror());
    return NULL;
  }
  CudaNvrtc *nv = calloc(1, sizeof *nv);
  if (!nv) {
    dlclose(lib);
    say(err, n, "out of memory");
    return NULL;
  }
  nv->lib = lib;
  snprintf(nv->path, sizeof nv->path, "%s", file);
  if (load_symbols(nv, err, n) || query(nv, err, n)) {
    cuda_nvrtc_close(nv);
    return NULL;
  }
  return nv;
}

CudaNvrtc *cuda_nvrtc_open_in(const char *const *dirs, int ndirs, bool loader,
                              char *err, size_t errlen) {
  char file[4096];
  for (int i = 0; i < ndirs; i++)
    if (dirs[i] && find_in_dir(dirs[i], file, sizeof file)) return open_file(file, err, errlen);
  static const char *const sonames[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"};
  for (size_t i = 0; loader && i < sizeof sonames / sizeof *sonames; i++) {
    void *probe = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
    if (!probe) continue;
    dlclose(probe);
    return open_file(sonames[i], err, errlen);
  }
  // Name every place looked in.
  char where[2048] = "";
  size_t len = 0;
  for (int i = 0; i < ndirs; i++)
    if (dirs[i] && len < sizeof where)
      len += (size_t)snprintf(where + len, sizeof where - len, "%s%s", len ? ", " : "", dirs[i]);
  if (loader && len < sizeof where)
    snprintf(where + len, sizeof where - len, "%sthe loader's path", len ? " or " : "");
  say(err, errlen,
      "--target cuda needs the CUDA toolkit's NVRTC (libnvrtc.so), not found in %s; "
      "install the CUDA toolkit or set CUDA_HOME",
      where[0] ? where : "(nowhere)");
  return NULL;
}

CudaNvrtc *cuda_nvrtc_open(char *err, size_t errlen) {
  char home[4096] = "";
  const char *h = getenv("CUDA_HOME");
  if (h && *h) snprintf(home, sizeof home, "%s/lib64", h);
  const char *dirs[] = {home[0] ? home : NULL, "/usr/local/cuda/lib64"};
  return cuda_nvrtc_open_in(dirs, 2, true, err, errlen);
}

void cuda_nvrtc_close(CudaNvrtc *nv) {
  if (!nv) return;
  if (nv->lib) dlclose(nv->lib);
  free(nv);
}

const char *cuda_nvrtc_path(const CudaNvrtc *nv) { return nv->path; }

void cuda_nvrtc_version(const CudaNvrtc *nv, int *major, int *minor) {
  *major = nv->major;
  *minor = nv->minor;
}

int cuda_nvrtc_archs(const CudaNvrtc *nv, const int **archs) {
  *archs = nv->archs;
  return nv->narchs;
}

// ---- architectures ---------------------------------------------------------------------------
static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

// One "sm_NN" item of length len; its number or -1.
static int parse_one_arch(const char *s, size_t len) {
  if (len < 5 || len > 6 || strncmp(s, "sm_", 3) != 0) return -1;
  int v = 0;
  for (size_t i = 3; i < len; i++) {
    if (!isdigit((unsigned char)s[i])) return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v >= 10 ? v : -1;
}

int cuda_arch_parse(const char *spec, int *archs, int max, char *err, size_t errlen) {
  int n = 0;
  for (const char *s = spec;;) {
    size_t len = strcspn(s, ",");
    int v = parse_one_arch(s, len);
    if (v < 0) {
      say(err, errlen, "--cuda-arch: '%.*s' is not an architecture (expected sm_NN, e.g. sm_90)",
          (int)len, s);
      return -1;
    }
    bool dup = false;
    for (int i = 0; i < n; i++) dup |= archs[i] == v;
    if (!dup) {
      if (n == max) {
        say(err, errlen, "--cuda-arch: more than %d architectures", max);
        return -1;
      }
      archs[n++] = v;
    }
    if (!s[len]) break;
    s += len + 1;
  }
  qsort(archs, (size_t)n, sizeof *archs, cmp_int);
  return n;
}

CudaCompileOptions cuda_compile_defaults(void) {
  static const int def[] = {CUDA_DEFAULT_ARCH};
  return (CudaCompileOptions){.archs = def, .narchs = 1, .ptx = true, .lineinfo = true};
}

// ---- the log -----------------------------------------------------------------------------------
static char *dup_range(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = 0;
  }
  return d;
}

static const CudaKernelLines *kernel_at(const CudaSource *src, const char *file, int line) {
  if (!file || strcmp(file, src->name) != 0) return NULL;
  for (int i = 0; i < src->nlines; i++)
    if (line >= src->lines[i].first && line <= src->lines[i].last) return &src->lines[i];
  return NULL;
}

// Parses one log line "FILE(LINE): error: MSG" or "FILE(LINE): warning #N-D:
// MSG" (also without "FILE(LINE): "); false for any other line (the quoted
// source, the caret, the summary).
static bool parse_line(const char *s, size_t len, CudaDiag *d) {
  const char *end = s + len, *p = s;
  *d = (CudaDiag){0};
  const char *open = memchr(s, '(', len);
  if (open && open > s) {
    const char *q = open + 1;
    int line = 0;
    while (q < end && isdigit((unsigned char)*q)) line = line * 10 + (*q++ - '0');
    if (q + 3 <= end && q > open + 1 && !strncmp(q, "): ", 3)) {
      d->file = dup_range(s, (size_t)(open - s));
      d->line = line;
      p = q + 3;
    }
  }
  if ((size_t)(end - p) >= 7 && !strncmp(p, "error: ", 7)) {
    d->error = true;
    p += 7;
  } else if ((size_t)(end - p) >= 8 && !strncmp(p, "warning ", 8) && memchr(p, ':', (size_t)(end - p))) {
    p = (const char *)memchr(p, ':', (size_t)(end - p)) + 1;
    while (p < end && *p == ' ') p++;
  } else {
    free(d->file);
    d->file = NULL;
    return false;
  }
  d->msg = dup_range(p, (size_t)(end - p));
  return true;
}

void cuda_log_parse(const char *log, const CudaSource *src, CudaCompileResult *r) {
  for (const char *s = log; s && *s;) {
    size_t len = strcspn(s, "\n");
    CudaDiag d;
    if (parse_line(s, len, &d)) {
      CudaDiag *v = realloc(r->diags, (size_t)(r->ndiags + 1) * sizeof *v);
      if (!v) {
        free(d.file);
        free(d.msg);
        return;
      }
      const CudaKernelLines *k = kernel_at(src, d.file, d.line);
      if (k) {
        d.kernel = k->kernel;
        d.span = k->span;
      }
      r->diags = v;
      r->diags[r->ndiags++] = d;
    }
    s += len + (s[len] == '\n');
  }
}

void cuda_diag_format(const CudaDiag *d, char *buf, size_t n) {
  const char *lvl = d->error ? "error" : "warning";
  const char *file = d->file ? d->file : "nvrtc";
  if (d->kernel)
    say(buf, n, "kernel %s (%s:%d): %s: %s", d->kernel, file, d->line, lvl, d->msg);
  else if (d->line)
    say(buf, n, "%s:%d: %s: %s", file, d->line, lvl, d->msg);
  else
    say(buf, n, "%s: %s: %s", file, lvl, d->msg);
}

void cuda_compile_result_free(CudaCompileResult *r) {
  for (int i = 0; i < r->nimages; i++) free(r->images[i].data);
  for (int i = 0; i < r->ndiags; i++) {
    free(r->diags[i].file);
    free(r->diags[i].msg);
  }
  free(r->images);
  free(r->diags);
  free(r->log);
  r->images = NULL;
  r->diags = NULL;
  r->log = NULL;
  r->nimages = r->ndiags = 0;
}

// ---- compiling -------------------------------------------------------------------------------
static bool arch_supported(const CudaNvrtc *nv, int arch) {
  for (int i = 0; i < nv->narchs; i++)
    if (nv->archs[i] == arch) return true;
  return false;
}

static int check_archs(const CudaNvrtc *nv, const CudaCompileOptions *o, CudaCompileResult *r) {
  if (o->narchs < 1 || o->narchs > CUDA_MAX_ARCHS) {
    say(r->err, sizeof r->err, "%d CUDA architectures (1 to %d allowed)", o->narchs, CUDA_MAX_ARCHS);
    return -1;
  }
  for (int i = 0; i < o->narchs; i++) {
    if (arch_supported(nv, o->archs[i])) continue;
    char list[512] = "";
    size_t len = 0;
    for (int j = 0; j < nv->narchs && len < sizeof list; j++)
      len += (size_t)snprintf(list + len, sizeof list - len, "%ssm_%d", j ? " " : "", nv->archs[j]);
    say(r->err, sizeof r->err, "sm_%d is not an architecture NVRTC %d.%d compiles for (it does: %s)",
        o->archs[i], nv->major, nv->minor, list);
    return -1;
  }
  return 0;
}

// Appends an image of size bytes fetched by get (nvrtcGetCUBIN/GetPTX).
static int add_image(CudaNvrtc *nv, NvProgram p, CudaImageKind kind, int arch, size_t size,
                     NvResult (*get)(NvProgram, char *), const char *call, CudaCompileResult *r) {
  CudaImage *v = realloc(r->images, (size_t)(r->nimages + 1) * sizeof *v);
  unsigned char *data = malloc(size ? size : 1);
  if (!v || !data) {
    if (v) r->images = v;
    free(data);
    say(r->err, sizeof r->err, "out of memory for a %zu-byte image", size);
    return -1;
  }
  r->images = v;
  if (nv_check(nv, get(p, (char *)data), call, __LINE__, r->err, sizeof r->err)) {
    free(data);
    return -1;
  }
  r->images[r->nimages++] = (CudaImage){kind, arch, data, size};
  return 0;
}

// The program log into r->log (replacing the previous one).
static int fetch_log(CudaNvrtc *nv, NvProgram p, CudaCompileResult *r) {
  size_t n = 0;
  if (NV_CHECK(nv, nvrtcGetProgramLogSize(p, &n), r->err, sizeof r->err)) return -1;
  free(r->log);
  r->log = NULL;
  if (n <= 1) return 0;
  r->log = malloc(n);
  if (!r->log) return 0;
  if (NV_CHECK(nv, nvrtcGetProgramLog(p, r->log), r->err, sizeof r->err)) return -1;
  return 0;
}

static int count_errors(const CudaCompileResult *r) {
  int n = 0;
  for (int i = 0; i < r->ndiags; i++) n += r->diags[i].error;
  return n;
}

// NVRTC rejected the source: the log's messages and a summary line.
static int rejected(const CudaSource *src, int arch, CudaCompileResult *r) {
  cuda_log_parse(r->log, src, r);
  int nerr = count_errors(r);
  char first[400] = "see the log";
  for (int i = 0; i < r->ndiags; i++)
    if (r->diags[i].error) {
      cuda_diag_format(&r->diags[i], first, sizeof first);
      break;
    }
  say(r->err, sizeof r->err, "NVRTC could not compile %s for sm_%d: %d error%s (first: %s)",
      src->name, arch, nerr, nerr == 1 ? "" : "s", first);
  return -1;
}

// The option strings of one compile, in opts (storage in buf).
static int make_options(const CudaCompileOptions *o, int arch, char *buf, size_t n,
                        const char **opts) {
  int k = 0;
  snprintf(buf, n, "--gpu-architecture=sm_%d", arch);
  opts[k++] = buf;
  opts[k++] = "--std=c++17";
  opts[k++] = "-default-device";
  if (o->lineinfo) opts[k++] = "-lineinfo";
  if (o->fast_math) opts[k++] = "--use_fast_math";
  return k;
}

// One NVRTC program for one architecture: the cubin, and the PTX if want_ptx.
static int compile_arch(CudaNvrtc *nv, const CudaSource *src, const CudaCompileOptions *o,
                        int arch, bool want_ptx, CudaCompileResult *r) {
  int nh = src->nheaders + 2;
  const char **hname = calloc((size_t)nh, sizeof *hname), **htext = calloc((size_t)nh, sizeof *htext);
  if (!hname || !htext) {
    free(hname);
    free(htext);
    say(r->err, sizeof r->err, "out of memory");
    return -1;
  }
  hname[0] = "mlc_cuda.h";
  htext[0] = mlc_cuda_h_src;
  hname[1] = "../philox.h"; // as mlc_cuda.h includes it (kernels/philox.h beside kernels/cuda)
  htext[1] = mlc_philox_h_src;
  for (int i = 0; i < src->nheaders; i++) {
    hname[i + 2] = src->headers[i].name;
    htext[i + 2] = src->headers[i].text;
  }
  NvProgram p = NULL;
  int rc = NV_CHECK(nv, nvrtcCreateProgram(&p, src->text, src->name, nh, htext, hname), r->err,
                    sizeof r->err);
  free(hname);
  free(htext);
  if (rc) return -1;
  char archopt[64];
  const char *opts[8];
  int nopts = make_options(o, arch, archopt, sizeof archopt, opts);
  NvResult crc = nv->nvrtcCompileProgram(p, nopts, opts);
  rc = fetch_log(nv, p, r);
  if (!rc && crc == NV_ERROR_COMPILATION) rc = rejected(src, arch, r);
  else if (!rc) rc = nv_check(nv, crc, "nvrtcCompileProgram", __LINE__, r->err, sizeof r->err);
  size_t size = 0;
  if (!rc) rc = NV_CHECK(nv, nvrtcGetCUBINSize(p, &size), r->err, sizeof r->err);
  if (!rc) rc = add_image(nv, p, CUDA_IMAGE_CUBIN, arch, size, nv->nvrtcGetCUBIN, "nvrtcGetCUBIN", r);
  if (!rc && want_ptx) rc = NV_CHECK(nv, nvrtcGetPTXSize(p, &size), r->err, sizeof r->err);
  if (!rc && want_ptx) rc = add_image(nv, p, CUDA_IMAGE_PTX, arch, size, nv->nvrtcGetPTX, "nvrtcGetPTX", r);
  char ignore[256];
  NV_CHECK(nv, nvrtcDestroyProgram(&p), ignore, sizeof ignore); // nothing to do if it fails
  return rc;
}

int cuda_nvrtc_compile(CudaNvrtc *nv, const CudaSource *src, const CudaCompileOptions *o,
                       CudaCompileResult *r) {
  *r = (CudaCompileResult){0};
  CudaCompileOptions def = cuda_compile_defaults();
  if (!o) o = &def;
  const int *archs = o->narchs ? o->archs : def.archs;
  int narchs = o->narchs ? o->narchs : def.narchs;
  CudaCompileOptions use = *o;
  use.archs = archs;
  use.narchs = narchs;
  if (check_archs(nv, &use, r) || narchs < 1 || narchs > CUDA_MAX_ARCHS) return -1;
  int sorted[CUDA_MAX_ARCHS];
  memcpy(sorted, archs, (size_t)narchs * sizeof *archs);
  qsort(sorted, (size_t)narchs, sizeof *sorted, cmp_int);
  for (int i = 0; i < narchs; i++)
    if ((i == 0 || sorted[i] != sorted[i - 1]) &&
        compile_arch(nv, src, &use, sorted[i], use.ptx && i == 0, r))
      return -1;
  // The PTX was appended right after the first cubin: move it last.
  if (use.ptx && r->nimages > 1) {
    CudaImage ptx = r->images[1];
    memmove(&r->images[1], &r->images[2], (size_t)(r->nimages - 2) * sizeof *r->images);
    r->images[r->nimages - 1] = ptx;
  }
  cuda_log_parse(r->log, src, r); // the warnings of the last compile
  return 0;
}
