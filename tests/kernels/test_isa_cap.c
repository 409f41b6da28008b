// test_isa_cap.c — the kernel library's ISA cap (MLC_CPU_ISA, gemm.c):
// run as `test_isa_cap WANT` with MLC_CPU_ISA set by ctest (WANT: avx2,
// scalar, or none for no cap), it checks what every kernel family picks
// against what the cap allows on this CPU: the GEMM variant (also when
// MLC_GEMM_VARIANT asks for a wider one), mlc_gemm_select of a capped
// variant, the pool rows, the bias rows and the channel-lane convolution's
// width. A CPU without the ISA the test needs (AVX2 for the avx2 cap)
// reports itself skipped (77): there the cap has nothing to take away.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/conv_internal.h"
#include "kernels/cpu/gemm_internal.h"
#include "kernels/cpu/pool_internal.h"
#include "mlc_kernels.h"
#include "unit.h"

#if defined(__x86_64__) || defined(__i386__)
static int cpu_avx512(void) {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma");
}
static int cpu_avx2(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
#else
static int cpu_avx512(void) { return 0; }
static int cpu_avx2(void) { return 0; }
#endif

int main(int argc, char **argv) {
  const char *want = argc > 1 ? argv[1] : "none", *env = getenv("MLC_CPU_ISA");
  __builtin_cpu_init();
  if (!strcmp(want, "avx2") && !cpu_avx2()) {
    printf("[SKIP] this CPU has no AVX2: the avx2 cap takes nothing away\n");
    return 77;
  }
  char msg[200];
  snprintf(msg, sizeof msg, "MLC_CPU_ISA is '%s' (the test's environment)", env ? env : "(unset)");
  check(msg, strcmp(want, "none") ? env && !strcmp(env, want) : !env || !*env); // "": no cap
  int a512 = cpu_avx512() && !strcmp(want, "none"), a2 = cpu_avx2() && strcmp(want, "scalar");
  const char *best = a512 ? "avx512" : a2 ? "avx2" : "generic";
  snprintf(msg, sizeof msg, "gemm_have_avx512 %d, gemm_have_avx2 %d (want %d, %d)", gemm_have_avx512(),
           gemm_have_avx2(), a512, a2);
  check(msg, gemm_have_avx512() == a512 && gemm_have_avx2() == a2);
  snprintf(msg, sizeof msg, "the GEMM variant is %s (want %s; MLC_GEMM_VARIANT %s)", mlc_gemm_variant(), best,
           getenv("MLC_GEMM_VARIANT") ? getenv("MLC_GEMM_VARIANT") : "unset");
  check(msg, !strcmp(mlc_gemm_variant(), best));
  snprintf(msg, sizeof msg, "mlc_gemm_select(\"avx512\") %s", a512 ? "succeeds" : "is refused");
  check(msg, (mlc_gemm_select("avx512") == 0) == a512);
  check("mlc_gemm_select(\"generic\") succeeds", mlc_gemm_select("generic") == 0);
  PoolRows rows = a512 ? POOL_ROWS_AVX512 : a2 ? POOL_ROWS_AVX2 : POOL_ROWS_SCALAR;
  snprintf(msg, sizeof msg, "pool_rows() %d (want %d)", (int)pool_rows(), (int)rows);
  check(msg, pool_rows() == rows);
  ConvBiasIsa bias = a512 ? CONV_BIAS_AVX512 : a2 ? CONV_BIAS_AVX2 : CONV_BIAS_SCALAR;
  snprintf(msg, sizeof msg, "conv_bias_isa() %d (want %d)", (int)conv_bias_isa(), (int)bias);
  check(msg, conv_bias_isa() == bias);
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
