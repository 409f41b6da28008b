// api_hostile.c — the embedding API of a built library against hostile
// calls: NULL instances, paths and buffers, batches out of range or too
// large for memory, bad labels and NaN inputs, bad options, weights files
// that must be refused (an extra tensor, a tensor of absurd dims), and an
// allocator that fails at every allocation in turn.
//
//   api_hostile DIR     (DIR: extra.st and huge.st, written by run.py)
//
// Built by tests/hostile/run.py against `mlc build tests/hostile/clf.model
// --emit lib` (clf.h): x f32[4], y i32 labels 0..2, 3 outputs. Every check
// states what the contract in clf.h promises; prints [PASS]/[FAIL] per
// check and "N passed, N failed", exit 1 on any failure.
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clf.h"

enum { B = 8, NX = MLC_CLF_X_SIZE, NOUT = MLC_CLF_NUM_OUT };

static int passed, failed;

static void check(bool ok, const char *name, const char *detail) {
  printf("[%s] %s", ok ? "PASS" : "FAIL", name);
  if (!ok && detail && *detail) printf(": %s", detail);
  printf("\n");
  ok ? passed++ : failed++;
}

// Did the last failure say `want`?
static bool said(const mlc_clf *m, const char *want) { return strstr(mlc_clf_error(m), want) != NULL; }

// ---- a counting allocator that can be told to fail ----------------------------------------

typedef struct Heap {
  long live;      // allocations not yet freed
  long calls;     // allocations asked for
  long fail_at;   // the call that fails (1-based); 0: none
} Heap;

static void *heap_alloc(size_t n, void *user) {
  Heap *h = user;
  if (h->fail_at && ++h->calls >= h->fail_at) return NULL;
  if (!h->fail_at) h->calls++;
  void *p = malloc(n);
  if (p) h->live++;
  return p;
}

static void heap_free(void *p, void *user) {
  Heap *h = user;
  h->live--;
  free(p);
}

static mlc_clf_options heap_options(Heap *h) {
  mlc_clf_options o = mlc_clf_default_options();
  o.threads = 1, o.alloc = heap_alloc, o.free = heap_free, o.user = h;
  return o;
}

// ---- checks -----------------------------------------------------------------------------

static void make_batch(float *x, int32_t *y) {
  for (int s = 0; s < B; s++) {
    y[s] = s % 3;
    for (int i = 0; i < NX; i++) x[s * NX + i] = (float)((s * 7 + i * 3) % 5) / 4.0f;
  }
}

static void null_instance(void) {
  float x[B * NX], out[B * NOUT], loss;
  int32_t y[B];
  make_batch(x, y);
  check(mlc_clf_predict(NULL, B, x, out) == -1 && said(NULL, "predict: the model instance is NULL"),
        "NULL instance: predict fails, error(NULL) says why", mlc_clf_error(NULL));
  check(mlc_clf_train_step(NULL, B, x, y, &loss) == -1 && said(NULL, "train_step"),
        "NULL instance: train_step fails", mlc_clf_error(NULL));
  check(mlc_clf_eval(NULL, B, x, y, &loss, out) == -1 && said(NULL, "eval"), "NULL instance: eval fails",
        mlc_clf_error(NULL));
  check(mlc_clf_load_weights(NULL, "x.st") == -1 && said(NULL, "load_weights"),
        "NULL instance: load_weights fails", mlc_clf_error(NULL));
  check(mlc_clf_save_weights(NULL, "x.st") == -1 && said(NULL, "save_weights"),
        "NULL instance: save_weights fails", mlc_clf_error(NULL));
  check(mlc_clf_steps(NULL) == 0 && isnan(mlc_clf_last_lr(NULL)) && isnan(mlc_clf_last_grad_norm(NULL)),
        "NULL instance: steps 0, last_lr and last_grad_norm NAN", NULL);
  check(mlc_clf_skipped_steps(NULL) == 0 && isnan(mlc_clf_last_loss_scale(NULL)),
        "NULL instance: skipped_steps 0, last_loss_scale NAN", NULL);
  int64_t n = 7;
  check(!mlc_clf_state(NULL, "fc1.w", &n) && n == 7, "NULL instance: state is NULL", NULL);
  mlc_clf_destroy(NULL);
  check(mlc_clf_error(NULL) != NULL, "NULL instance: destroy does nothing, error is never NULL", NULL);
}

static void bad_arguments(mlc_clf *m) {
  float x[B * NX], out[B * NOUT], loss;
  int32_t y[B];
  make_batch(x, y);
  check(mlc_clf_predict(m, B, NULL, out) == -1 && said(m, "predict: in_x is NULL"),
        "predict: NULL input named", mlc_clf_error(m));
  check(mlc_clf_predict(m, B, x, NULL) == -1 && said(m, "out is NULL"), "predict: NULL out refused",
        mlc_clf_error(m));
  check(mlc_clf_train_step(m, B, x, NULL, &loss) == -1 && said(m, "train_step: in_y is NULL"),
        "train_step: NULL label input named", mlc_clf_error(m));
  const int64_t batches[] = {0, -1, (int64_t)1 << 62, MLC_CLF_MAX_BATCH + 1};
  for (int i = 0; i < 4; i++) {
    char name[96];
    snprintf(name, sizeof name, "batch %lld refused", (long long)batches[i]);
    check(mlc_clf_train_step(m, batches[i], x, y, &loss) == -1 && said(m, "batch"), name, mlc_clf_error(m));
  }
  // in range, but its buffers cannot exist: refused before anything is allocated
  check(mlc_clf_eval(m, MLC_CLF_MAX_BATCH, x, y, &loss, NULL) == -1 && said(m, "too large"),
        "eval: batch 2^40 refused as too large, not crashed", mlc_clf_error(m));
  check(mlc_clf_steps(m) == 0, "refused calls take no step", NULL);
  y[5] = 3;
  check(mlc_clf_train_step(m, B, x, y, &loss) == -1 &&
            said(m, "in_y[5] (sample 5) is 3, out of range 0..2"),
        "train_step: label 3 named (index, sample, range)", mlc_clf_error(m));
  y[5] = -1;
  check(mlc_clf_eval(m, B, x, y, &loss, out) == -1 && said(m, "in_y[5] (sample 5) is -1"),
        "eval: label -1 named", mlc_clf_error(m));
  y[5] = 2;
  x[9] = NAN;
  check(mlc_clf_predict(m, B, x, out) == -1 && said(m, "in_x[9] (sample 2) is NaN"),
        "predict: NaN input named", mlc_clf_error(m));
  x[9] = INFINITY;
  check(mlc_clf_train_step(m, B, x, y, &loss) == -1 && said(m, "is infinite"),
        "train_step: infinite input named", mlc_clf_error(m));
  check(mlc_clf_steps(m) == 0, "still no step after refused inputs", NULL);
  check(mlc_clf_load_weights(m, NULL) == -1 && said(m, "path is NULL"), "load_weights: NULL path",
        mlc_clf_error(m));
  check(mlc_clf_save_weights(m, NULL) == -1 && said(m, "path is NULL"), "save_weights: NULL path",
        mlc_clf_error(m));
  check(!mlc_clf_state(m, NULL, NULL) && said(m, "path is NULL"), "state: NULL path", mlc_clf_error(m));
  check(!mlc_clf_state(m, "fc9.w", NULL) && said(m, "no state 'fc9.w'"), "state: unknown path",
        mlc_clf_error(m));
  int64_t n = 0;
  check(mlc_clf_state(m, "fc1.w", &n) && n == 16 * NX, "state: fc1.w has 64 elements", NULL);
}

// A refused weights file leaves the weights as they were.
static void bad_weights(mlc_clf *m, const char *dir) {
  char path[1024];
  int64_t n = 0;
  float *w = mlc_clf_state(m, "fc1.w", &n), before[64];
  memcpy(before, w, sizeof before);
  snprintf(path, sizeof path, "%s/extra.st", dir);
  check(mlc_clf_load_weights(m, path) == -1 && said(m, "tensor 'fc3.w' is not a state of model Clf"),
        "load_weights: a file with an extra tensor is refused", mlc_clf_error(m));
  snprintf(path, sizeof path, "%s/huge.st", dir);
  check(mlc_clf_load_weights(m, path) == -1 && said(m, "tensor 'fc1.w' is F32[4503599627370496, 0,"),
        "load_weights: a tensor of 8 absurd dims is named, not overflowed", mlc_clf_error(m));
  snprintf(path, sizeof path, "%s/missing.st", dir);
  check(mlc_clf_load_weights(m, path) == -1 && said(m, "missing.st"), "load_weights: a missing file",
        mlc_clf_error(m));
  check(mlc_clf_load_weights(m, dir) == -1 && said(m, "not a regular file"),
        "load_weights: a directory", mlc_clf_error(m));
  check(!memcmp(before, w, sizeof before), "refused files leave the weights untouched", NULL);
  check(mlc_clf_save_weights(m, dir) == -1, "save_weights to a directory fails", mlc_clf_error(m));
  snprintf(path, sizeof path, "%s/no/such/dir/w.st", dir);
  check(mlc_clf_save_weights(m, path) == -1 && said(m, "w.st"), "save_weights into a missing directory",
        mlc_clf_error(m));
}

static void bad_options(void) {
  Heap h = {0};
  mlc_clf_options o = heap_options(&h);
  o.threads = -1;
  check(!mlc_clf_create(&o) && said(NULL, "threads = -1"), "create: threads -1 refused", mlc_clf_error(NULL));
  o = heap_options(&h), o.max_batch = -5;
  check(!mlc_clf_create(&o) && said(NULL, "max_batch = -5"), "create: max_batch -5 refused",
        mlc_clf_error(NULL));
  o = heap_options(&h), o.steps_per_epoch = (int64_t)1 << 40, o.epochs = (int64_t)1 << 40;
  check(!mlc_clf_create(&o) && said(NULL, "steps_per_epoch"), "create: an overflowing schedule refused",
        mlc_clf_error(NULL));
  o = heap_options(&h), o.free = NULL;
  check(!mlc_clf_create(&o) && said(NULL, "alloc and free"), "create: alloc without free refused",
        mlc_clf_error(NULL));
  check(h.live == 0, "refused options allocate nothing", NULL);
}

// Every allocation of create fails in turn: NULL, a message, nothing leaked.
static void failing_allocator(void) {
  bool all = true;
  long k;
  char why[256] = "";
  for (k = 1; k < 64; k++) {
    Heap h = {.fail_at = k};
    mlc_clf_options o = heap_options(&h);
    mlc_clf *m = mlc_clf_create(&o);
    if (m) {
      mlc_clf_destroy(m);
      all = all && h.live == 0;
      break;
    }
    if (h.live != 0 || !said(NULL, "out of memory")) {
      snprintf(why, sizeof why, "allocation %ld failing: live %ld, error '%s'", k, h.live,
               mlc_clf_error(NULL));
      all = false;
    }
  }
  check(all && k > 3 && k < 64, "create: each allocation failing in turn leaks nothing", why);
  // a batch beyond max_batch grows the scratch: that failing keeps the instance usable
  Heap h = {0};
  mlc_clf_options o = heap_options(&h);
  o.max_batch = B;
  mlc_clf *m = mlc_clf_create(&o);
  float x[4 * B * NX], loss;
  int32_t y[4 * B];
  for (int r = 0; r < 4; r++) make_batch(x + r * B * NX, y + r * B);
  h.fail_at = h.calls + 1;
  int rc = m ? mlc_clf_train_step(m, 4 * B, x, y, &loss) : 0;
  check(m && rc == -1 && said(m, "out of memory"), "train_step: a failed scratch growth is reported",
        m ? mlc_clf_error(m) : "no instance");
  h.fail_at = 0;
  check(m && mlc_clf_train_step(m, 4 * B, x, y, &loss) == 0 && isfinite(loss),
        "the instance works after the failed growth", m ? mlc_clf_error(m) : "");
  mlc_clf_destroy(m);
  check(h.live == 0, "destroy frees everything the hook gave", NULL);
}

// Normal use still works, and save/load round-trips exactly.
static void normal_use(mlc_clf *m, const char *dir) {
  float x[B * NX], out[B * NOUT], out2[B * NOUT], loss = NAN;
  int32_t y[B];
  make_batch(x, y);
  bool ok = true;
  for (int i = 0; i < 5 && ok; i++) ok = mlc_clf_train_step(m, B, x, y, &loss) == 0;
  check(ok && mlc_clf_steps(m) == 5 && isfinite(loss), "5 train steps", mlc_clf_error(m));
  check(mlc_clf_last_loss_scale(m) == 1 && mlc_clf_skipped_steps(m) == 0,
        "without loss scaling: last_loss_scale 1, skipped_steps 0", NULL);
  char path[1024];
  snprintf(path, sizeof path, "%s/api.st", dir);
  mlc_clf *m2 = mlc_clf_create(NULL);
  ok = !mlc_clf_save_weights(m, path) && m2 && !mlc_clf_load_weights(m2, path) &&
       !mlc_clf_predict(m, B, x, out) && !mlc_clf_predict(m2, B, x, out2);
  check(ok && !memcmp(out, out2, sizeof out), "save_weights, load_weights: identical predictions",
        m2 ? mlc_clf_error(m2) : "no second instance");
  mlc_clf_destroy(m2);
}

// predict may keep transposed copies of the weights between calls; every
// way the weights change must still be seen by the next call: a train
// step, a weights file, and writes through state()'s pointer (after it was
// handed out, at any later time). With 1 thread and with 2 (predict and
// eval then hold the pool's worker between products, runtime/core/team.h,
// and train_step and save take it back).
static void weights_seen(const char *dir, int threads) {
  float x[B * NX], p0[NOUT], p1[NOUT], p2[NOUT], q[B * NOUT];
  int32_t y[B];
  make_batch(x, y);
  mlc_clf_options o = mlc_clf_default_options();
  o.threads = threads;
  mlc_clf *m = mlc_clf_create(&o), *r = mlc_clf_create(&o);
  char path[1024];
  snprintf(path, sizeof path, "%s/seen%d.st", dir, threads);
  bool ok = m && r && !mlc_clf_predict(m, 1, x, p0) && !mlc_clf_train_step(m, B, x, y, NULL) &&
            !mlc_clf_predict(m, 1, x, p1) && !mlc_clf_save_weights(m, path) &&
            !mlc_clf_load_weights(r, path) && !mlc_clf_predict(r, 1, x, q);
  check(ok && memcmp(p0, p1, sizeof p0) && !memcmp(p1, q, sizeof p1),
        "predict after train_step uses the updated weights", m ? mlc_clf_error(m) : "no instance");
  ok = ok && !mlc_clf_train_step(r, B, x, y, NULL) && !mlc_clf_predict(r, 1, x, q) &&
       !mlc_clf_load_weights(r, path) && !mlc_clf_predict(r, 1, x, p2);
  check(ok && !memcmp(p1, p2, sizeof p2), "predict after load_weights uses the loaded weights",
        r ? mlc_clf_error(r) : "no instance");
  int64_t n = 0;
  float *w = ok ? mlc_clf_state(m, "fc1.w", &n) : NULL, *v = ok ? mlc_clf_state(r, "fc1.w", NULL) : NULL;
  for (int64_t i = 0; w && v && i < n; i++) w[i] *= -0.5f, v[i] *= -0.5f;
  ok = w && v && !mlc_clf_predict(m, 1, x, p2) && !mlc_clf_predict(r, 8, x, q);
  check(ok && memcmp(p1, p2, sizeof p2) && !memcmp(p2, q, sizeof p2),
        "predict sees writes through state()'s pointer", m ? mlc_clf_error(m) : "no instance");
  for (int64_t i = 0; ok && i < n; i++) w[i] *= 3, v[i] *= 3; // the same pointer, after predict
  ok = ok && !mlc_clf_predict(m, 1, x, p2) && !mlc_clf_eval(r, 1, x, y, NULL, q);
  check(ok && !memcmp(p2, q, sizeof p2), "later writes through the same pointer are seen too",
        m ? mlc_clf_error(m) : "no instance");
  mlc_clf_destroy(m);
  mlc_clf_destroy(r);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: api_hostile DIR\n");
    return 2;
  }
  null_instance();
  bad_options();
  failing_allocator();
  mlc_clf_options o = mlc_clf_default_options();
  o.threads = 1;
  mlc_clf *m = mlc_clf_create(&o);
  check(m != NULL, "create", mlc_clf_error(NULL));
  if (m) {
    bad_arguments(m);
    bad_weights(m, argv[1]);
    normal_use(m, argv[1]);
    mlc_clf_destroy(m);
  }
  weights_seen(argv[1], 1);
  weights_seen(argv[1], 2);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
