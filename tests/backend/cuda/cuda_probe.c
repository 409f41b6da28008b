// cuda_probe.c — what a program built for CUDA does first: open the device
// through the runtime's CUDA layer; where there is none, print the one line
// the runtime gives ("PROG: no CUDA driver (libcuda.so.1 not found)" or
// "PROG: no CUDA device") on standard error and exit 1; else print the
// device and exit 0. tests/backend/cuda/probe.sh checks both ends.
#include <stdio.h>
#include <string.h>

#include "cuda/cuda_rt.h"

int main(int argc, char **argv) {
  (void)argc;
  const char *prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
  char err[512];
  MlcCuda *c = mlc_cuda_open(0, err, sizeof err);
  if (!c) {
    fprintf(stderr, "%s: %s\n", prog, err);
    return 1;
  }
  const MlcCudaInfo *in = mlc_cuda_info(c);
  printf("%s: %s (sm_%d)\n", prog, in->name, in->sm);
  mlc_cuda_close(c);
  return 0;
}
