// main.c — embedding a compiled model in a C program (docs/embedding.md).
//
// Uses the API that `mlc build examples/fashion_mlp.model --emit lib`
// generates (fashion_mlp.h): creates an instance with a counting allocator,
// trains it for a few steps on a small synthetic batch (each class lights one
// band of rows of a 28x28 image), checks that the loss falls and the batch is
// then classified well, saves the weights, loads them into a second instance
// and checks that both predict the same logits.
//
//   ./embed_fashion [WEIGHTS.safetensors]   (default: fashion_mlp.safetensors)
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fashion_mlp.h"

enum { B = 64, N_IN = MLC_FASHION_MLP_X_SIZE, N_OUT = MLC_FASHION_MLP_NUM_OUT };

static size_t live_bytes; // what the allocator hook handed out and not yet freed

static void *count_alloc(size_t size, void *user) {
  (void)user;
  size_t *p = malloc(size + 16);
  if (!p) return NULL;
  *p = size;
  live_bytes += size;
  return (char *)p + 16;
}

static void count_free(void *ptr, void *user) {
  (void)user;
  size_t *p = (size_t *)((char *)ptr - 16);
  live_bytes -= *p;
  free(p);
}

// Image s has class s % 10: rows 3c..3c+2 bright, the rest dark, plus noise.
static void make_batch(float *x, int32_t *y) {
  unsigned r = 12345;
  for (int s = 0; s < B; s++) {
    y[s] = s % 10;
    for (int i = 0; i < N_IN; i++) {
      r = r * 1103515245u + 12345u;
      float noise = (float)((r >> 16) & 0xff) / 255.0f * 0.2f;
      x[s * N_IN + i] = (i / 28) / 3 == y[s] ? 0.8f + noise : noise;
    }
  }
}

static int argmax(const float *row) {
  int best = 0;
  for (int j = 1; j < N_OUT; j++)
    if (row[j] > row[best]) best = j;
  return best;
}

int main(int argc, char **argv) {
  const char *weights = argc > 1 ? argv[1] : "fashion_mlp.safetensors";
  static float x[B * N_IN], out[B * N_OUT], out2[B * N_OUT];
  static int32_t y[B];
  make_batch(x, y);

  mlc_fashion_mlp_options opt = mlc_fashion_mlp_default_options();
  opt.threads = 2, opt.alloc = count_alloc, opt.free = count_free;
  mlc_fashion_mlp *m = mlc_fashion_mlp_create(&opt);
  if (!m) return fprintf(stderr, "embed: cannot create the model\n"), 1;
  printf("created: %zu bytes through the allocator hook\n", live_bytes);

  float first = 0, loss = 0;
  for (int step = 0; step < 30; step++) {
    if (mlc_fashion_mlp_train_step(m, B, x, y, &loss))
      return fprintf(stderr, "embed: train_step: %s\n", mlc_fashion_mlp_error(m)), 1;
    if (step == 0) first = loss;
  }
  printf("30 steps: loss %.4f -> %.4f (lr %g)\n", first, loss, mlc_fashion_mlp_last_lr(m));

  float eloss = 0;
  if (mlc_fashion_mlp_eval(m, B, x, y, &eloss, out))
    return fprintf(stderr, "embed: eval: %s\n", mlc_fashion_mlp_error(m)), 1;
  int good = 0;
  for (int s = 0; s < B; s++) good += argmax(out + s * N_OUT) == y[s];
  printf("eval: loss %.4f, %d/%d correct\n", eloss, good, B);

  if (mlc_fashion_mlp_save_weights(m, weights))
    return fprintf(stderr, "embed: %s\n", mlc_fashion_mlp_error(m)), 1;
  mlc_fashion_mlp *m2 = mlc_fashion_mlp_create(NULL);
  if (!m2 || mlc_fashion_mlp_load_weights(m2, weights))
    return fprintf(stderr, "embed: load: %s\n", m2 ? mlc_fashion_mlp_error(m2) : "no model"), 1;
  if (mlc_fashion_mlp_predict(m, B, x, out) || mlc_fashion_mlp_predict(m2, B, x, out2))
    return fprintf(stderr, "embed: predict failed\n"), 1;
  bool same = memcmp(out, out2, sizeof out) == 0;
  printf("weights saved to %s and reloaded: predictions %s\n", weights, same ? "identical" : "DIFFER");

  mlc_fashion_mlp_destroy(m2);
  mlc_fashion_mlp_destroy(m);
  printf("destroyed: %zu bytes still allocated\n", live_bytes);
  bool ok = loss < first && good >= B * 9 / 10 && same && live_bytes == 0 && isfinite(loss);
  puts(ok ? "embed: ok" : "embed: FAILED");
  return ok ? 0 : 1;
}
