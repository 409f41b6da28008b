// fake_kernels.c — the "module" of fake_libcuda.c: the hand-written test
// kernels compiled as C against the CPU emulation, by name.
#include "mlc_cuda.h"

#include "kernels/elementwise.cu"
#include "kernels/reduce.cu"
#include "kernels/sgemm.cu"
#include "kernels/softmax.cu"

typedef struct FakeKernel {
  const char *name;
  MlcEmuEntry entry;
} FakeKernel;

const FakeKernel fake_kernels[] = {
    {"ew_axpy_relu", ew_axpy_relu_entry},   {"row_sum", row_sum_entry},
    {"sum_atomic", sum_atomic_entry},       {"softmax_stats", softmax_stats_entry},
    {"softmax_apply", softmax_apply_entry}, {"sgemm16", sgemm16_entry},
    {NULL, NULL},
};
