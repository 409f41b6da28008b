// bundle.c — the container that carries a module's GPU code into the
// generated object: the cubins (one per architecture) and the PTX of one
// compile, each tagged with its kind and architecture (layout in nvrtc.h).
// runtime/cuda/cuda_rt.c reads it back (mlc_cuda_bundle_select) and picks
// the image for the device it runs on.
#include "nvrtc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { ALIGN = 64 };

static size_t align_up(size_t n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }

static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

unsigned char *cuda_bundle_pack(const CudaImage *images, int n, size_t *len) {
  size_t off = align_up(CUDA_BUNDLE_HEADER + (size_t)n * CUDA_BUNDLE_ENTRY), total = off;
  for (int i = 0; i < n; i++) total = align_up(total) + images[i].size;
  unsigned char *b = calloc(1, total ? total : 1);
  if (!b) return NULL;
  memcpy(b, "MLCCUDA", 8);
  put_u32(b + 8, CUDA_BUNDLE_VERSION);
  put_u32(b + 12, (uint32_t)n);
  for (int i = 0; i < n; i++) {
    unsigned char *e = b + CUDA_BUNDLE_HEADER + (size_t)i * CUDA_BUNDLE_ENTRY;
    off = align_up(off);
    put_u32(e, (uint32_t)images[i].kind);
    put_u32(e + 4, (uint32_t)images[i].arch);
    put_u64(e + 8, off);
    put_u64(e + 16, images[i].size);
    memcpy(b + off, images[i].data, images[i].size);
    off += images[i].size;
  }
  *len = total;
  return b;
}

// A file name as a string of the assembler's (\" \\ and octal escapes).
static void asm_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 32 || c >= 127) fprintf(f, "\\%03o", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

// The assembler includes the bytes as they are (.incbin), so no compiler
// parses them: as a C array initializer the bundle was a text file of
// about 4 bytes per byte and most of `cc -O2`'s time on a large model.
// %object and %progbits are the spellings every ELF gas and clang accept.
int cuda_bundle_write_asm(FILE *f, const char *symbol, const char *bin_path, size_t len) {
  fprintf(f, "/* CUDA images for mlc's runtime (a bundle: compiler/backend/cuda/nvrtc.h),\n"
             "   %zu bytes from the file below. */\n",
          len);
  fprintf(f, "\t.section .mlc_cuda,\"a\",%%progbits\n\t.balign 64\n");
  fprintf(f, "\t.globl %s\n\t.type %s, %%object\n\t.size %s, %zu\n%s:\n", symbol, symbol, symbol, len ? len : 1,
          symbol);
  if (len) {
    fputs("\t.incbin ", f);
    asm_string(f, bin_path);
    fputc('\n', f);
  } else {
    fputs("\t.byte 0\n", f);
  }
  fprintf(f, "\t.section .rodata\n\t.balign 8\n");
  fprintf(f, "\t.globl %s_size\n\t.type %s_size, %%object\n\t.size %s_size, 8\n%s_size:\n\t.quad %zu\n", symbol,
          symbol, symbol, symbol, len);
  fprintf(f, "\t.section .note.GNU-stack,\"\",%%progbits\n"); // no executable stack
  if (fflush(f) != 0 || ferror(f)) {
    if (!errno) errno = EIO;
    return -1;
  }
  return 0;
}
