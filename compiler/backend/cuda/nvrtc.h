// nvrtc.h — CUDA C to GPU code at `mlc build` time: NVRTC opened with
// dlopen, one compile per requested architecture, NVRTC's program log parsed
// into messages that name the kernel, and the bundle (bundle.c) that carries
// the results into the generated object.
//
// Nothing links libnvrtc: cuda_nvrtc_open finds libnvrtc.so* in
// $CUDA_HOME/lib64, /usr/local/cuda/lib64 or the loader's path, so mlc builds
// and runs where CUDA is absent and only `--target cuda` needs it.
//
// A compile takes the CUDA C text (mlc's C subset, kernels/cuda/mlc_cuda.h,
// which NVRTC gets as an in-memory header), optional further headers and a
// line map: the generated lines each kernel occupies and the .model span it
// came from (KirKernel.span), so an NVRTC message at generated line 212
// becomes a diagnostic at the user's line naming kernel k12_matmul. It gives
// one cubin per architecture (sm_XX) and, for forward compatibility, the PTX
// of the lowest one (PTX for compute_XX JITs on that architecture and every
// later one).
#ifndef MLC_CUDA_NVRTC_H
#define MLC_CUDA_NVRTC_H

#include <stdio.h>

#include "kernel/kir.h"

typedef struct CudaNvrtc CudaNvrtc; // a loaded libnvrtc and its entry points

// Opens NVRTC from, in order: $CUDA_HOME/lib64, /usr/local/cuda/lib64, the
// loader's path (libnvrtc.so, libnvrtc.so.13, libnvrtc.so.12). NULL with
// "--target cuda needs the CUDA toolkit's NVRTC (libnvrtc.so), not found in
// ..." (the places looked in) or the dlopen/dlsym failure in err.
CudaNvrtc *cuda_nvrtc_open(char *err, size_t errlen);
// The same over explicit folders, then the loader's path when `loader`.
CudaNvrtc *cuda_nvrtc_open_in(const char *const *dirs, int ndirs, bool loader,
                              char *err, size_t errlen);
void cuda_nvrtc_close(CudaNvrtc *nv);
const char *cuda_nvrtc_path(const CudaNvrtc *nv); // the file (or soname) opened
void cuda_nvrtc_version(const CudaNvrtc *nv, int *major, int *minor);
// The architectures this NVRTC can target (sm numbers, ascending): a count
// and *archs (owned by nv).
int cuda_nvrtc_archs(const CudaNvrtc *nv, const int **archs);

enum { CUDA_MAX_ARCHS = 16, CUDA_DEFAULT_ARCH = 90 };

// --cuda-arch's value: "sm_90" or "sm_80,sm_90,sm_100" -> sm numbers,
// ascending, duplicates dropped. The count, or -1 with a message in err.
int cuda_arch_parse(const char *spec, int *archs, int max, char *err,
                    size_t errlen);

// ---- a compile -------------------------------------------------------------------------------
typedef struct CudaHeader {
  const char *name; // as the source includes it: "block_reduce.h"
  const char *text;
} CudaHeader;

// One kernel's place in the generated source.
typedef struct CudaKernelLines {
  int first, last;    // 1-based lines of the source, inclusive
  const char *kernel; // its name ("k12_matmul")
  Span span;          // the .model span it came from (file NULL: none)
} CudaKernelLines;

typedef struct CudaSource {
  const char *name;             // the source's name in NVRTC's log: "fashion_mlp.cu"
  const char *text;             // NUL-terminated CUDA C
  const CudaHeader *headers;    // besides mlc_cuda.h, which every compile has
  int nheaders;
  const CudaKernelLines *lines; // the line map (may be empty)
  int nlines;
} CudaSource;

typedef struct CudaCompileOptions {
  const int *archs; // sm numbers; narchs 0: {CUDA_DEFAULT_ARCH}
  int narchs;
  bool ptx;         // also the PTX of the lowest architecture
  bool lineinfo;    // -lineinfo (source lines in profiles)
  bool fast_math;   // --use_fast_math (approximate exp/div; flush denormals)
} CudaCompileOptions;

// sm_90, PTX on, lineinfo on, fast math off.
CudaCompileOptions cuda_compile_defaults(void);

typedef enum {
  CUDA_IMAGE_CUBIN = 1, // an ELF for exactly one sm (and later minors of its major)
  CUDA_IMAGE_PTX = 2,   // text, NUL included in size; JIT-compiled by the driver
} CudaImageKind;

typedef struct CudaImage {
  CudaImageKind kind;
  int arch;            // 90: sm_90 (cubin) or compute_90 (PTX)
  unsigned char *data; // malloc'd
  size_t size;
} CudaImage;

// One message of NVRTC's log, mapped through the line map.
typedef struct CudaDiag {
  bool error;          // else a warning
  char *file;          // the file the log names (the source or a header)
  int line;            // its line (0: none given)
  const char *kernel;  // the kernel whose lines hold it; NULL: none
  Span span;           // that kernel's .model span
  char *msg;           // the text after "error: " / "warning #N-D: "
} CudaDiag;

typedef struct CudaCompileResult {
  CudaImage *images; // on success: a cubin per architecture (ascending), then the PTX
  int nimages;
  char *log;         // NVRTC's log of the failed compile, else of the last one; NULL: empty
  CudaDiag *diags;   // the log's messages, in order
  int ndiags;
  char err[512];     // on failure: one line (the call and file:line, or the errors' count)
} CudaCompileResult;

// Compiles src for every architecture. 0, or -1 with r->err set and, when
// NVRTC rejected the source, r->log and r->diags. Free r either way.
int cuda_nvrtc_compile(CudaNvrtc *nv, const CudaSource *src,
                       const CudaCompileOptions *o, CudaCompileResult *r);
void cuda_compile_result_free(CudaCompileResult *r);

// One line for a message: "kernel k12_matmul (fashion.cu:212): error:
// identifier "x" is undefined"; without a kernel, "fashion.cu:3: error: ...".
// The driver reports it at d->span (diag_error), or plainly without one.
void cuda_diag_format(const CudaDiag *d, char *buf, size_t n);

// Parses an NVRTC log into r->diags (used by cuda_nvrtc_compile; exposed
// for tests).
void cuda_log_parse(const char *log, const CudaSource *src,
                    CudaCompileResult *r);

// ---- the bundle (bundle.c) -------------------------------------------------------------------
// What the generated object embeds and runtime/cuda/cuda_rt.c reads
// (mlc_cuda_bundle_select), little-endian:
//   0   "MLCCUDA\0"              magic
//   8   u32 version (1), u32 count
//   16  count entries of 24 bytes: u32 kind (CudaImageKind), u32 arch,
//       u64 offset (from the bundle's start), u64 size
//   ..  the images, each at a 64-byte aligned offset
enum { CUDA_BUNDLE_VERSION = 1, CUDA_BUNDLE_HEADER = 16, CUDA_BUNDLE_ENTRY = 24 };

// The bundle of n images (malloc'd, *len bytes); NULL when out of memory.
unsigned char *cuda_bundle_pack(const CudaImage *images, int n, size_t *len);
// Writes the assembler source (for `cc -c x.s`) of a bundle whose bytes
// the caller wrote to bin_path (len of them):
//   SYMBOL       the bytes (.incbin), 64-byte aligned, section .mlc_cuda
//   SYMBOL_size  an unsigned long long, len
// 0, or -1 with errno set by the failed write.
int cuda_bundle_write_asm(FILE *f, const char *symbol, const char *bin_path,
                          size_t len);

#endif
