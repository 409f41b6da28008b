// jit_runtime.h — the runtime functions generated code calls, for tests and
// tools that run programs through ORC LLJIT (llvm_jit_new): the pool's
// mlc_parallel_for and the kernel library's entry points (kernels/cpu,
// the `call` statements of kernel IR), from the libmlc_rt the binary links.
#ifndef MLC_TEST_JIT_RUNTIME_H
#define MLC_TEST_JIT_RUNTIME_H

#include "backend/llvm/llvm.h"
#include "kernels/cpu/mlc_kernels.h"
#include "mlc_rt.h"

#define JIT_SYM(f) {#f, (void (*)(void))f}
static const LlvmJitSymbol jit_runtime[] = {
    JIT_SYM(mlc_parallel_for), JIT_SYM(mlc_sgemm), JIT_SYM(mlc_sgemm_batched), JIT_SYM(mlc_conv2d),
    JIT_SYM(mlc_conv2d_grad_input), JIT_SYM(mlc_conv2d_grad_weight), JIT_SYM(mlc_conv2d_grad_weight_bias),
    JIT_SYM(mlc_conv2d_grad_weight_pool),
    JIT_SYM(mlc_conv2d_pool),
    JIT_SYM(mlc_max_pool2d), JIT_SYM(mlc_max_pool2d_grad),
    JIT_SYM(mlc_conv2d_pool_pick), JIT_SYM(mlc_conv2d_grad_weight_pick), JIT_SYM(mlc_max_pool2d_grad_pick),
    JIT_SYM(mlc_conv2d_grad_pick),
};
#undef JIT_SYM
enum { JIT_RUNTIME_N = sizeof jit_runtime / sizeof jit_runtime[0] };

#endif
