// update_affinity.c — what keeping each core's half of a weight in its own
// L2 is worth to an SGD-with-momentum update the size of fashion_mlp's
// fc1.w (256 x 784: weight, momentum and gradient 2.4 MB, 1.2 MB a half),
// on two threads pinned to cores 0 and 1 (docs/design/kernels.md,
// "fashion_mlp's train step at 2 threads").
//
//   cc -O3 -march=native -mprefer-vector-width=256 bench/update_affinity.c -lpthread -o update_affinity
//   ./update_affinity OTHER_KB SWAP [ZEROS]
//
// Each of 2000 rounds, thread t first reads OTHER_KB of its own other data
// (what the rest of a train step brings into its L2), then updates rows
// [t*128, (t+1)*128), or with SWAP the other thread's half every second
// round; prints the mean time of one half-update per thread. ZEROS (0 or
// 1, default 0) makes a third of the gradients zero, so their momentum
// decays by 0.9 a round into subnormals, as a dead unit's does in training.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { R = 256, C = 784, ROUNDS = 2000 };
static float *w, *m, *g, *other;
static long other_kb;
static int swap;
static double mean_s[2];
static pthread_barrier_t bar;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *run(void *vp) {
  long id = (long)vp;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET((int)id, &set);
  sched_setaffinity(0, sizeof set, &set);
  double total = 0;
  volatile float sink = 0;
  for (int it = 0; it < ROUNDS; it++) {
    pthread_barrier_wait(&bar);
    long h = swap && (it & 1) ? 1 - id : id;
    for (long i = id * other_kb * 256; i < (id + 1) * other_kb * 256; i += 16) sink += other[i];
    double t0 = now();
    for (long i = h * (R / 2) * C; i < (h + 1) * (R / 2) * C; i++) {
      float v = m[i] * 0.9f + g[i];
      m[i] = v;
      w[i] += v * -0.05f;
    }
    total += now() - t0;
  }
  mean_s[id] = total / ROUNDS;
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s OTHER_KB SWAP [ZEROS]\n", argv[0]);
    return 2;
  }
  other_kb = atol(argv[1]), swap = atoi(argv[2]);
  int zeros = argc > 3 && atoi(argv[3]);
  size_t bytes = (size_t)R * C * sizeof(float), ob = (size_t)(2 * other_kb + 1) * 1024;
  w = aligned_alloc(64, bytes), m = aligned_alloc(64, bytes), g = aligned_alloc(64, bytes);
  other = aligned_alloc(64, ob);
  if (!w || !m || !g || !other) return 1;
  for (long i = 0; i < (long)R * C; i++) {
    w[i] = 0.01f * (float)(i % 7), m[i] = 0.001f * (float)(i % 5);
    g[i] = zeros && i % 3 == 0 ? 0.0f : 0.002f * (float)(1 + i % 3);
  }
  memset(other, 0, ob);
  pthread_barrier_init(&bar, NULL, 2);
  pthread_t th;
  pthread_create(&th, NULL, run, (void *)1);
  run((void *)0);
  pthread_join(th, NULL);
  printf("other %ld KB swap %d zeros %d: %.1f %.1f us per half-update\n", other_kb, swap, zeros,
         mean_s[0] * 1e6, mean_s[1] * 1e6);
  return 0;
}
