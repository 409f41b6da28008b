// fake_model.c — a model written by hand against the model ABI
// (runtime/include/mlc_model.h), standing in for compiler output in the runtime's
// tests: softmax regression 784 -> 10 with cross-entropy and SGD + momentum,
// i.e. what mlc would compile from
//
//   model Fake {
//     fc = Linear(784, 10)
//     forward(x: f32[B, 784]) -> f32[B, 10] { return fc(x) }
//     loss(x: f32[B, 784], y: i32[B]) -> f32 { return cross_entropy(forward(x), y) }
//   }
//   train Fake { batch 64  epochs 1  seed 0  optimizer sgd(lr = 0.01, momentum = 0.9) }
//
// Built as the program `rt_fake` (main -> mlc_main) and, with
// FAKE_MODEL_NO_MAIN, linked into test_runtime for its descriptors.
// Work is split with mlc_parallel_for by rows (forward) and by output class
// (gradients), so every sum runs in a fixed order: results do not depend on
// the thread count.
#include <math.h>
#include <string.h>

#include "mlc_rt.h"

enum { IN = 784, OUT = 10 };

#define FASHION "/usr/share/datasets/fashion-mnist/"

static const MlcStateDesc states[] = {
    {.path = "fc.w", .dtype = MLC_F32, .rank = 2, .shape = {OUT, IN}, .kind = MLC_STATE_PARAM,
     .trainable = 1,
     .init = {.kind = MLC_INIT_KAIMING_UNIFORM, .a = 2.2360679774997896, .gain = 0.57735026918962573,
              .fan_in = IN, .fan_out = OUT, .mode = MLC_FAN_IN}},
    {.path = "fc.b", .dtype = MLC_F32, .rank = 1, .shape = {OUT}, .kind = MLC_STATE_PARAM,
     .trainable = 1, .init = {.kind = MLC_INIT_ZEROS}},
    {.path = "fc.w.momentum", .dtype = MLC_F32, .rank = 2, .shape = {OUT, IN},
     .kind = MLC_STATE_OPTIM, .init = {.kind = MLC_INIT_ZEROS}},
    {.path = "fc.b.momentum", .dtype = MLC_F32, .rank = 1, .shape = {OUT},
     .kind = MLC_STATE_OPTIM, .init = {.kind = MLC_INIT_ZEROS}},
};

static const MlcInputDesc inputs[] = {
    {.name = "x", .dtype = MLC_F32, .rank = 1, .dims = {IN},
     .train = {.kind = MLC_DATA_IDX, .path = FASHION "train-images-idx3-ubyte.gz", .scale = 1.0 / 255},
     .test = {.kind = MLC_DATA_IDX, .path = FASHION "t10k-images-idx3-ubyte.gz", .scale = 1.0 / 255}},
    {.name = "y", .dtype = MLC_I32, .rank = 0, .num_classes = OUT, .value_limit = OUT,
     .limit_what = "the classes of the loss",
     .train = {.kind = MLC_DATA_IDX, .path = FASHION "train-labels-idx1-ubyte.gz", .scale = 1},
     .test = {.kind = MLC_DATA_IDX, .path = FASHION "t10k-labels-idx1-ubyte.gz", .scale = 1}},
};

static const MlcHyper hyper[] = {{"lr", 0.01}, {"momentum", 0.9}};

static const MlcSite sites[] = {
    {"fake.model:3:47", "matmul"},
    {"fake.model:4:58", "cross_entropy"},
};

// Scratch: probabilities / dlogits [B, OUT], gradients [OUT*IN + OUT], then
// logits [B, OUT] when the caller does not want them.
static size_t scratch_bytes(int64_t b, const int64_t *syms) {
  (void)syms; // no symbolic per-sample dims
  return (size_t)(2 * b * OUT + OUT * IN + OUT) * sizeof(float);
}

typedef struct Fwd {
  const float *x, *w, *b;
  float *logits; // [B, OUT]
} Fwd;

// logits[s, :] = x[s, :] @ w.T + b  over rows [s0, s1)
static void fwd_rows(void *vp, int64_t s0, int64_t s1) {
  const Fwd *f = vp;
  for (int64_t s = s0; s < s1; s++)
    for (int j = 0; j < OUT; j++) {
      float acc = f->b[j];
      const float *xr = f->x + s * IN, *wr = f->w + j * IN;
      for (int k = 0; k < IN; k++) acc += xr[k] * wr[k];
      f->logits[s * OUT + j] = acc;
    }
}

// Softmax of each row into p; returns the mean cross-entropy against y.
static double softmax_xent(const float *logits, const int32_t *y, int64_t B, float *p) {
  double loss = 0;
  for (int64_t s = 0; s < B; s++) {
    const float *l = logits + s * OUT;
    float mx = l[0];
    for (int j = 1; j < OUT; j++) mx = l[j] > mx ? l[j] : mx;
    double z = 0;
    for (int j = 0; j < OUT; j++) z += exp((double)(l[j] - mx));
    for (int j = 0; j < OUT; j++) p[s * OUT + j] = (float)(exp((double)(l[j] - mx)) / z);
    loss += log(z) - (double)(l[y[s]] - mx);
  }
  return loss / (double)B;
}

typedef struct Bwd {
  const float *x, *d; // x [B, IN], d = dloss/dlogits [B, OUT]
  int64_t B;
  float *gw, *gb;     // [OUT, IN], [OUT]
} Bwd;

// gw[j, :] = sum_s d[s, j] x[s, :], gb[j] = sum_s d[s, j]  for classes [j0, j1)
static void bwd_classes(void *vp, int64_t j0, int64_t j1) {
  const Bwd *g = vp;
  for (int64_t j = j0; j < j1; j++) {
    float *gw = g->gw + j * IN, gb = 0;
    memset(gw, 0, IN * sizeof *gw);
    for (int64_t s = 0; s < g->B; s++) {
      float d = g->d[s * OUT + j];
      const float *xr = g->x + s * IN;
      for (int k = 0; k < IN; k++) gw[k] += d * xr[k];
      gb += d;
    }
    g->gb[j] = gb;
  }
}

// Reports the first non-finite logit as the matmul's site.
static int check_logits(MlcCtx *ctx, const float *logits, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!isfinite(logits[i])) {
      ctx->nonfinite_site = 0;
      ctx->nonfinite_value = logits[i];
      return MLC_NONFINITE;
    }
  return MLC_OK;
}

static void forward(MlcCtx *ctx, int64_t B, const float *x, float *logits) {
  Fwd f = {x, ctx->state[0], ctx->state[1], logits};
  mlc_parallel_for(ctx->pool, B, 16, fwd_rows, &f);
}

static int train_step(MlcCtx *ctx, int64_t B, const void *const *in, void *const *out) {
  float *p = (float *)ctx->scratch, *gw = p + B * OUT, *gb = gw + OUT * IN;
  float *logits = out[3] ? out[3] : gb + OUT;
  forward(ctx, B, in[0], logits);
  if (ctx->check_finite && check_logits(ctx, logits, B * OUT)) return MLC_NONFINITE;
  double loss = softmax_xent(logits, in[1], B, p);
  const int32_t *y = in[1];
  for (int64_t s = 0; s < B; s++) {
    p[s * OUT + y[s]] -= 1;
    for (int j = 0; j < OUT; j++) p[s * OUT + j] /= (float)B;
  }
  Bwd g = {in[0], p, B, gw, gb};
  mlc_parallel_for(ctx->pool, OUT, 1, bwd_classes, &g);
  double norm = 0;
  for (int i = 0; i < OUT * IN + OUT; i++) norm += (double)gw[i] * gw[i]; // gb follows gw
  float lr = (float)ctx->lr, mu = 0.9f;
  float *w = ctx->state[0], *b = ctx->state[1], *vw = ctx->state[2], *vb = ctx->state[3];
  for (int i = 0; i < OUT * IN; i++) vw[i] = mu * vw[i] + gw[i], w[i] -= lr * vw[i];
  for (int j = 0; j < OUT; j++) vb[j] = mu * vb[j] + gb[j], b[j] -= lr * vb[j];
  *(float *)out[0] = (float)loss;
  *(float *)out[1] = (float)sqrt(norm);
  *(float *)out[2] = lr;
  if (ctx->check_finite && !isfinite(loss)) {
    ctx->nonfinite_site = 1;
    ctx->nonfinite_value = loss;
    return MLC_NONFINITE;
  }
  return MLC_OK;
}

static int eval(MlcCtx *ctx, int64_t B, const void *const *in, void *const *out) {
  float *logits = out[1], *p = ctx->scratch;
  forward(ctx, B, in[0], logits);
  *(float *)out[0] = (float)softmax_xent(logits, in[1], B, p);
  return MLC_OK;
}

static int predict(MlcCtx *ctx, int64_t B, const void *const *in, void *const *out) {
  forward(ctx, B, in[0], out[0]);
  return MLC_OK;
}

const MlcModel mlc_model_fake = {
    .abi = MLC_ABI_VERSION,
    .name = "Fake",
    .hash = "fa4e0000softmax784x10",
    .compiler = "mlc-test 0.1.0",
    .source = "fake.model",
    .nstates = 4,
    .states = states,
    .ninputs = 2,
    .inputs = inputs,
    .n_forward_inputs = 1,
    .num_out = OUT,
    .out_classes = OUT,
    .recipe = {.batch = 64, .epochs = 1, .seed = 0, .accumulate = 1, .lr = 0.01,
               .optimizer = "sgd", .schedule = "constant", .nhyper = 2, .hyper = hyper,
               .metric = "accuracy"},
    .nsites = 2,
    .sites = sites,
    .scratch_bytes = scratch_bytes,
    .init = NULL, // the runtime initialises from the specs
    .train_step = train_step,
    .eval = eval,
    .predict = predict,
};

#ifndef FAKE_MODEL_NO_MAIN
int main(int argc, char **argv) { return mlc_main(argc, argv, &mlc_model_fake); }
#endif
