// subnormal_ops.c — which AVX-512 float operations take a microcode assist
// when an operand or the result is subnormal, and what one costs
// (docs/design/kernels.md, "Subnormals, measured").
//
//   cc -O2 -march=native -ffp-contract=off bench/subnormal_ops.c -o subnormal_ops
//   ./subnormal_ops
//
// Each line times 2000 iterations of one 16-lane (or 8-lane f64) operation
// on constant operands (an empty asm keeps it from being hoisted), the best
// of 20 rounds, in TSC cycles per iteration: about 0.7 is the loop itself,
// so any line near it has no penalty; the assisted ones cost 80-140.
#include <immintrin.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <x86intrin.h>
#define N 2000
static inline uint64_t t0(void){ unsigned a; _mm_lfence(); uint64_t t=__rdtscp(&a); return t; }
static float bitsf(uint32_t u){ float f; memcpy(&f,&u,4); return f; }
typedef __m512 V; typedef __m512d D;
#define BENCH(name, init, body) do { \
  uint64_t best = ~0ull; \
  for (int r = 0; r < 20; r++) { init; uint64_t s = t0(); \
    for (int i = 0; i < N; i++) { body; } \
    uint64_t e = t0(); if (e - s < best) best = e - s; sink(&x0,&x1,&x2,&x3); } \
  printf("%-44s %8.2f TSC cycles per op\n", name, (double)best / N); } while (0)
static volatile float vs;
static void sink(void *a, void *b, void *c, void *d){ float f[16]; memcpy(f,a,64); vs+=f[0]; (void)b;(void)c;(void)d; }
int main(void){
  float sub = bitsf(0x00012345), nrm = 1.2345f, one = 1.0f, tiny = bitsf(0x00800000); // 2^-126
  V a_n = _mm512_set1_ps(nrm), a_s = _mm512_set1_ps(sub), c09 = _mm512_set1_ps(0.9f), c1=_mm512_set1_ps(one);
  V a_t = _mm512_set1_ps(tiny);
  V z = _mm512_setzero_ps();
  /* throughput: 4 independent ops, operands constant so no chain */
  V x0 = _mm512_setzero_ps(), x1 = x0, x2 = x0, x3 = x0;
#define TP4(op) x0 = op; __asm__ volatile("" : "+v"(x0));
#define VOL(v) __asm__ volatile("" : "+v"(v))
  V A, B;
  BENCH("mulps normal*normal", (A=a_n,B=c09), {VOL(A);VOL(B); TP4(_mm512_mul_ps(A,B))});
  BENCH("mulps subnormal*0.9 (sub in, sub out)", (A=a_s,B=c09), {VOL(A);VOL(B); TP4(_mm512_mul_ps(A,B))});
  BENCH("mulps subnormal*1.0 (sub in, sub out)", (A=a_s,B=c1), {VOL(A);VOL(B); TP4(_mm512_mul_ps(A,B))});
  BENCH("mulps 2^-126*0.9 (normal in, sub out)", (A=a_t,B=c09), {VOL(A);VOL(B); TP4(_mm512_mul_ps(A,B))});
  { V big = _mm512_set1_ps(1e30f);
  BENCH("mulps subnormal*1e30 (sub in, normal out)", (A=a_s,B=big), {VOL(A);VOL(B); TP4(_mm512_mul_ps(A,B))}); }
  BENCH("mulps 0*0.9", (A=z,B=c09), {VOL(A);VOL(B); TP4(_mm512_mul_ps(A,B))});
  BENCH("addps normal+normal", (A=a_n,B=c09), {VOL(A);VOL(B); TP4(_mm512_add_ps(A,B))});
  BENCH("addps subnormal+0 (sub in, sub out)", (A=a_s,B=z), {VOL(A);VOL(B); TP4(_mm512_add_ps(A,B))});
  BENCH("addps subnormal+normal", (A=a_s,B=c09), {VOL(A);VOL(B); TP4(_mm512_add_ps(A,B))});
  { V mt = _mm512_set1_ps(-bitsf(0x00812345));
  BENCH("addps normal-normal -> sub out", (A=_mm512_set1_ps(bitsf(0x00812346)),B=mt), {VOL(A);VOL(B); TP4(_mm512_add_ps(A,B))}); }
  BENCH("subps subnormal-normal", (A=a_s,B=c09), {VOL(A);VOL(B); TP4(_mm512_sub_ps(B,A))});
  BENCH("fmadd normal", (A=a_n,B=c09), {VOL(A);VOL(B); TP4(_mm512_fmadd_ps(A,B,c1))});
  BENCH("fmadd sub*0.9+0", (A=a_s,B=c09), {VOL(A);VOL(B); TP4(_mm512_fmadd_ps(A,B,z))});
  BENCH("fmadd sub*0.9+1", (A=a_s,B=c09), {VOL(A);VOL(B); TP4(_mm512_fmadd_ps(A,B,c1))});
  BENCH("divps normal", (A=a_n,B=c09), {VOL(A);VOL(B); TP4(_mm512_div_ps(A,B))});
  BENCH("divps sub/0.9", (A=a_s,B=c09), {VOL(A);VOL(B); TP4(_mm512_div_ps(A,B))});
  BENCH("sqrtps normal", (A=a_n,B=c09), {VOL(A);VOL(B); TP4(_mm512_sqrt_ps(A))});
  BENCH("sqrtps sub", (A=a_s,B=c09), {VOL(A);VOL(B); TP4(_mm512_sqrt_ps(A))});
  BENCH("cmpps (mask) sub", (A=a_s,B=c09), {VOL(A);VOL(B); __mmask16 m=_mm512_cmp_ps_mask(A,B,_CMP_LT_OQ); TP4(_mm512_maskz_mov_ps(m,A))});
  BENCH("maxps sub", (A=a_s,B=z), {VOL(A);VOL(B); TP4(_mm512_max_ps(A,B))});
  BENCH("getexpps normal", (A=a_n,B=c09), {VOL(A);VOL(B); TP4(_mm512_getexp_ps(A))});
  BENCH("getexpps sub", (A=a_s,B=c09), {VOL(A);VOL(B); TP4(_mm512_getexp_ps(A))});
  BENCH("getmantps sub", (A=a_s,B=c09), {VOL(A);VOL(B); TP4(_mm512_getmant_ps(A,_MM_MANT_NORM_1_2,_MM_MANT_SIGN_src))});
  BENCH("scalefps normal", (A=a_n,B=c09), {VOL(A);VOL(B); TP4(_mm512_scalef_ps(A,B))});
  { V m30 = _mm512_set1_ps(-130.f);
  BENCH("scalefps 1.2*2^-130 (sub out)", (A=a_n,B=m30), {VOL(A);VOL(B); TP4(_mm512_scalef_ps(A,B))});
  BENCH("scalefps sub in", (A=a_s,B=c1), {VOL(A);VOL(B); TP4(_mm512_scalef_ps(A,B))}); }
  /* conversions */
  { D d0,d1,d2,d3; (void)d0;
#define TPD(op) d0=op; __asm__ volatile("" : "+v"(d0)); x0=_mm512_castpd_ps(d0);
    __m256 hn = _mm256_set1_ps(nrm), hs = _mm256_set1_ps(sub), H;
    BENCH("cvtps2pd normal", (H=hn), {VOL(H); TPD(_mm512_cvtps_pd(H))});
    BENCH("cvtps2pd subnormal in", (H=hs), {VOL(H); TPD(_mm512_cvtps_pd(H))});
    D dn = _mm512_set1_pd(1.2345), ds = _mm512_set1_pd((double)sub), ds2 = _mm512_set1_pd((double)sub*0.9), DD;
#define TPH(op) { __m256 h0=op; __asm__ volatile("" : "+v"(h0)); }
    BENCH("cvtpd2ps normal", (DD=dn,x0=x1=x2=x3=z), {VOL(DD); TPH(_mm512_cvtpd_ps(DD))});
    BENCH("cvtpd2ps -> exact subnormal out", (DD=ds,x0=x1=x2=x3=z), {VOL(DD); TPH(_mm512_cvtpd_ps(DD))});
    BENCH("cvtpd2ps -> inexact subnormal out", (DD=ds2,x0=x1=x2=x3=z), {VOL(DD); TPH(_mm512_cvtpd_ps(DD))});
    BENCH("mulpd normal", (DD=dn,x0=x1=x2=x3=z), {VOL(DD); TPD(_mm512_mul_pd(DD,DD))});
    BENCH("addpd", (DD=ds,x0=x1=x2=x3=z), {VOL(DD); TPD(_mm512_add_pd(DD,DD))});
  }
  /* scalar */
  { float sa, sb; __m128 q0,q1,q2,q3;
#define TPS(op) { q0=_mm_set_ss(op);q1=q0;q2=q0;q3=q0; float t0_=op,t1_=op,t2_=op,t3_=op; __asm__ volatile("" : "+x"(t0_),"+x"(t1_),"+x"(t2_),"+x"(t3_)); }
    x0=x1=x2=x3=z; x0=z;
    BENCH("mulss normal", (sa=nrm,sb=0.9f), {__asm__ volatile("":"+x"(sa),"+x"(sb)); TPS(sa*sb)});
    BENCH("mulss sub*0.9", (sa=sub,sb=0.9f), {__asm__ volatile("":"+x"(sa),"+x"(sb)); TPS(sa*sb)});
    (void)q0;(void)q1;(void)q2;(void)q3;
  }
  return 0;
}
