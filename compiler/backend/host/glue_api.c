// glue_api.c — the embedding API of `mlc build --emit lib`: the public
// header NAME.h and its implementation in the glue.
//
// Input: the collected Glue of one model (host_internal.h). Output: C text.
// The header declares typed functions mlc_NAME_* over an opaque mlc_NAME,
// states the contract (what may be NULL, what is checked, what each error
// returns) and is self-contained (stddef.h, stdint.h). The implementation
// is one line per function: each wraps the runtime's model instance
// (mlc_instance_*, runtime/include/mlc_rt.h), where the checks live, so the
// library and the generated program share one weights loader, one scratch
// sizing and one set of boundary checks. Templates use NAME for the C name.
#include "host_internal.h"

#include <string.h>

static void upper(StrBuf *b, const char *s) {
  for (; *s; s++) sb_putc(b, (char)(*s >= 'a' && *s <= 'z' ? *s - 'a' + 'A' : *s));
}

// Writes text with every NAME replaced by name, in capitals after "MLC_"
// (mlc_NAME_create, MLC_NAME_MAX_BATCH).
static void put_named(StrBuf *b, const char *text, const char *name) {
  for (const char *p = text; *p;) {
    const char *q = strstr(p, "NAME");
    if (!q) {
      sb_puts(b, p);
      break;
    }
    sb_printf(b, "%.*s", (int)(q - p), p);
    if (q - text >= 4 && !strncmp(q - 4, "MLC_", 4)) upper(b, name);
    else sb_puts(b, name);
    p = q + 4;
  }
}

// "const float *in_x, const int32_t *in_y" (input names are prefixed by in_
// so that none clashes with the API's own parameters).
static void api_params(StrBuf *b, const Glue *g, int n) {
  for (int i = 0; i < n; i++) sb_printf(b, ", const %s *in_%s", glue_c_type(g->in[i].dt), g->in[i].name);
}

// ---- the header -------------------------------------------------------------------------------

static const char contract[] =
    "//\n"
    "// The contract. Every function checks it at its boundary; nothing in this\n"
    "// library aborts, exits or prints.\n"
    "//   * Functions returning int return 0 on success and -1 on failure; the\n"
    "//     reason is in mlc_NAME_error(m). A failed call changes no state, except\n"
    "//     train_step once its update ran (a non-finite loss, see there).\n"
    "//   * m may be NULL in every call: the call fails (the getters return 0 or\n"
    "//     NAN, state returns NULL, destroy does nothing) and mlc_NAME_error(NULL)\n"
    "//     says why. mlc_NAME_error(NULL) also says why the last create on this\n"
    "//     thread returned NULL.\n"
    "//   * batch must be 1..MLC_NAME_MAX_BATCH; a batch whose buffers would not\n"
    "//     fit in memory is refused before anything is allocated.\n"
    "//   * Every in_* pointer must be non-NULL and hold batch samples. Integer\n"
    "//     inputs are checked against the model's ranges (class labels,\n"
    "//     embedding rows) and float inputs must be finite; the first bad value\n"
    "//     is named (input, element, sample) and nothing runs.\n"
    "//   * predict's out must be non-NULL; loss and eval's out may be NULL.\n"
    "//   * path must be non-NULL; files are read and written as documented at\n"
    "//     load_weights and save_weights.\n"
    "//   * An instance is not thread-safe; it runs its kernels on its own pool.\n";

static const char options[] =
    "typedef struct mlc_NAME mlc_NAME; // one model instance: weights, optimizer state, scratch\n\n"
    "typedef struct mlc_NAME_options {\n"
    "  uint64_t seed;            // initial weights and dropout stream\n"
    "  int threads;              // kernel threads, 0..MLC_NAME_MAX_THREADS; 0: one per CPU\n"
    "  int64_t max_batch;        // scratch is sized for it (grown on demand); 0: the recipe's\n"
    "  int64_t steps_per_epoch;  // for learning-rate schedules; 0: 1\n"
    "  int64_t epochs;           // schedule length in epochs; 0: 1\n"
    "  // Allocator hook for the instance, its weights, optimizer state, scratch\n"
    "  // and output buffer (both NULL: malloc/free; one without the other is\n"
    "  // refused). alloc(size, user) may return any alignment.\n"
    "  void *(*alloc)(size_t size, void *user);\n"
    "  void (*free)(void *ptr, void *user);\n"
    "  void *user;\n"
    "  // Where it runs: 0 the CPU; 1 a CUDA GPU (a library built with --target\n"
    "  // cuda; create fails without a driver or device); 2 the GPU when the\n"
    "  // library has a device side and one is present, else the CPU.\n"
    "  int device;\n"
    "  // On a GPU: train steps train_step may leave in flight, 0..3 (0: each\n"
    "  // call waits for its step). With N > 0 train_step returns once its step\n"
    "  // is issued; the step's *loss (which must stay valid) is written, and\n"
    "  // its failure returned, when it is collected: by a train_step that finds\n"
    "  // N in flight, by mlc_NAME_sync, or first thing in any other call. No\n"
    "  // effect on the CPU.\n"
    "  int queue_steps;\n"
    "} mlc_NAME_options;\n\n"
    "// The recipe's seed, batch and epochs; all CPUs; steps_per_epoch 1; malloc.\n"
    "mlc_NAME_options mlc_NAME_default_options(void);\n"
    "// A new instance with freshly initialised weights (opt NULL: the defaults).\n"
    "// NULL when an option is out of range or memory runs out:\n"
    "// mlc_NAME_error(NULL) says which.\n"
    "mlc_NAME *mlc_NAME_create(const mlc_NAME_options *opt);\n"
    "void mlc_NAME_destroy(mlc_NAME *m);\n"
    "// Collects every train step still in flight (queue_steps): 0, or -1 with the\n"
    "// first failed step's reason in mlc_NAME_error.\n"
    "int mlc_NAME_sync(mlc_NAME *m);\n"
    "// The last failure's message (\"\" when none); never NULL.\n"
    "const char *mlc_NAME_error(const mlc_NAME *m);\n"
    "// Where m runs: \"cpu\", \"cuda: <the GPU>\", or with device 2 why not the GPU:\n"
    "// \"cpu (no CUDA device)\"; never NULL.\n"
    "const char *mlc_NAME_device(const mlc_NAME *m);\n\n"
    "// Weights as safetensors. load: parameters and buffers by name, from a\n"
    "// checkpoint of the generated program, a file of save_weights, or a\n"
    "// PyTorch state_dict saved with safetensors under the model's names,\n"
    "// dtypes and shapes; a file holding a tensor the model lacks, missing one,\n"
    "// of another model, or corrupted is refused and the weights stay as they\n"
    "// were. save: a full checkpoint (weights, optimizer state, step, RNG),\n"
    "// replaced atomically (a failed save leaves the old file).\n"
    "int mlc_NAME_load_weights(mlc_NAME *m, const char *path);\n"
    "int mlc_NAME_save_weights(mlc_NAME *m, const char *path);\n\n";

static const char getters[] =
    "// Train steps taken (issued, with queue_steps), the learning rate and\n"
    "// gradient norm of the last one (collected).\n"
    "int64_t mlc_NAME_steps(const mlc_NAME *m);\n"
    "float mlc_NAME_last_lr(const mlc_NAME *m);\n"
    "float mlc_NAME_last_grad_norm(const mlc_NAME *m);\n"
    "// Loss scaling: the scale the last step ran with (1 when the recipe does not\n"
    "// scale the loss; NAN before the first step) and the steps skipped so far\n"
    "// because their scaled gradients overflowed (0 without loss scaling).\n"
    "float mlc_NAME_last_loss_scale(const mlc_NAME *m);\n"
    "int64_t mlc_NAME_skipped_steps(const mlc_NAME *m);\n"
    "// A state tensor by path (\"fc1.w\", \"opt.fc1.w.momentum_buffer\"): its bytes\n"
    "// (row-major, the dtype of the model) and element count (numel may be\n"
    "// NULL); NULL for an unknown path.\n"
    "void *mlc_NAME_state(mlc_NAME *m, const char *path, int64_t *numel);\n\n";

static void inputs_comment(StrBuf *b, const Glue *g) {
  sb_puts(b, "// Inputs, per sample (a batch of B samples is B of these, contiguous):\n");
  for (int i = 0; i < g->nin; i++) {
    const GlueInput *in = &g->in[i];
    sb_printf(b, "//   %-10s %s[", in->name, glue_c_type(in->dt));
    for (int d = 0; d < in->rank; d++) sb_printf(b, "%s%lld", d ? ", " : "", (long long)in->dims[d]);
    sb_printf(b, "]%s", i < g->nfwd ? "  (forward input)" : "");
    if (in->num_classes && in->has_ignore)
      sb_printf(b, "  (class label, 0..%lld, or %lld: ignored)", (long long)in->num_classes - 1,
                (long long)in->ignore_value);
    else if (in->num_classes) sb_printf(b, "  (class label, 0..%lld)", (long long)in->num_classes - 1);
    else if (in->value_limit)
      sb_printf(b, "  (values 0..%lld: %s)", (long long)in->value_limit - 1, in->limit_what);
    sb_putc(b, '\n');
  }
  sb_printf(b, "// Output of predict/eval: float[B, %lld], the forward result%s.\n",
            (long long)g->num_out, g->out_classes ? " (logits for a classifier)" : "");
}

static void defines(StrBuf *b, const Glue *g) {
  const BuildUnit *u = g->u;
  const char *n = u->cname;
  sb_puts(b, "#define MLC_"), upper(b, n), sb_printf(b, "_NUM_OUT %lld\n", (long long)g->num_out);
  sb_puts(b, "#define MLC_"), upper(b, n);
  sb_printf(b, "_BATCH %lld\n", (long long)(u->recipe.batch * u->recipe.opt.accumulate));
  sb_puts(b, "#define MLC_"), upper(b, n), sb_printf(b, "_MAX_BATCH %lldLL\n", (long long)MLC_MAX_BATCH);
  sb_puts(b, "#define MLC_"), upper(b, n), sb_printf(b, "_MAX_THREADS %d\n", MLC_MAX_THREADS);
  for (int i = 0; i < g->nin; i++) {
    sb_puts(b, "#define MLC_"), upper(b, n), sb_putc(b, '_'), upper(b, g->in[i].name);
    sb_printf(b, "_SIZE %lld\n", (long long)g->in[i].numel);
  }
  sb_putc(b, '\n');
}

static void entry_decls(StrBuf *b, const Glue *g) {
  const BuildUnit *u = g->u;
  const char *n = u->cname;
  sb_printf(b, "// Forward pass in eval mode: out = float[batch, %lld].\n", (long long)g->num_out);
  sb_printf(b, "int mlc_%s_predict(mlc_%s *m, int64_t batch", n, n), api_params(b, g, g->nfwd);
  sb_puts(b, ", float *out);\n");
  sb_puts(b, "// One optimizer step on a batch (the model's recipe: optimizer, schedule,\n"
             "// clipping). loss (may be NULL): the batch's mean loss before the update.\n"
             "// A NaN or infinite loss returns -1 after the update ran: the state is then\n"
             "// no longer finite (load weights saved before to go on).\n");
  if (u->recipe.opt.accumulate > 1)
    sb_printf(b, "// The batch is split into %d micro-batches of batch / %d samples whose\n"
                 "// gradients are averaged (a remainder is left out).\n",
              u->recipe.opt.accumulate, u->recipe.opt.accumulate);
  sb_printf(b, "int mlc_%s_train_step(mlc_%s *m, int64_t batch", n, n), api_params(b, g, g->nin);
  sb_puts(b, ", float *loss);\n");
  sb_printf(b, "// Loss (mean) and, when out is not NULL, the outputs float[batch, %lld]\n"
               "// in eval mode; no state changes.\n",
            (long long)g->num_out);
  sb_printf(b, "int mlc_%s_eval(mlc_%s *m, int64_t batch", n, n), api_params(b, g, g->nin);
  sb_puts(b, ", float *loss, float *out);\n\n");
  if (u->k_plateau)
    sb_printf(b, "// The plateau schedule's update, once after each epoch: metric (finite) is\n"
                 "// the epoch's test %s; the lr is scaled by the recipe's factor after too\n"
                 "// many epochs without improvement.\nint mlc_%s_epoch_end(mlc_%s *m, double metric);\n",
              u->recipe.opt.plateau_max ? "accuracy" : "loss", n, n);
}

void glue_api_header(StrBuf *b, const Glue *g) {
  const BuildUnit *u = g->u;
  const char *n = u->cname;
  sb_printf(b, "// %s.h — C API of the model %s, compiled by mlc %s from %s.\n", n, u->model, MLC_VERSION, u->path);
  sb_puts(b, "// Generated; do not edit. Documentation: docs/embedding.md in the mlc sources.\n//\n");
  sb_printf(b, "// Link: cc app.c lib%s.a -lz -lcjson -lm -lpthread\n//\n", n);
  inputs_comment(b, g);
  put_named(b, contract, n);
  sb_puts(b, "#ifndef MLC_"), upper(b, n), sb_puts(b, "_H\n#define MLC_"), upper(b, n), sb_puts(b, "_H\n\n");
  sb_puts(b, "#include <stddef.h>\n#include <stdint.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
  defines(b, g);
  put_named(b, options, n);
  entry_decls(b, g);
  put_named(b, getters, n);
  sb_puts(b, "#ifdef __cplusplus\n}\n#endif\n\n#endif // MLC_"), upper(b, n), sb_puts(b, "_H\n");
}

void build_glue_header(StrBuf *b, const BuildUnit *u) {
  char err[256];
  Glue g = {.u = u, .err = err, .errlen = sizeof err};
  if (glue_collect(&g)) glue_api_header(b, &g);
}

// ---- the implementation -------------------------------------------------------------------------

static const char impl[] =
    "#define INST(m) ((MlcInstance *)(m))\n\n"
    "mlc_NAME_options mlc_NAME_default_options(void) {\n"
    "  MlcOptions o = mlc_instance_defaults(&mlc_model_NAME);\n"
    "  return (mlc_NAME_options){.seed = o.seed, .threads = o.threads, .max_batch = o.max_batch,\n"
    "                            .steps_per_epoch = o.steps_per_epoch, .epochs = o.epochs};\n"
    "}\n\n"
    "mlc_NAME *mlc_NAME_create(const mlc_NAME_options *opt) {\n"
    "  if (!opt) return (mlc_NAME *)mlc_instance_new(&mlc_model_NAME, NULL);\n"
    "  MlcOptions o = {.seed = opt->seed, .threads = opt->threads, .max_batch = opt->max_batch,\n"
    "                  .steps_per_epoch = opt->steps_per_epoch, .epochs = opt->epochs,\n"
    "                  .alloc = opt->alloc, .free = opt->free, .user = opt->user, .device = opt->device,\n"
    "                  .queue_steps = opt->queue_steps};\n"
    "  return (mlc_NAME *)mlc_instance_new(&mlc_model_NAME, &o);\n"
    "}\n\n"
    "void mlc_NAME_destroy(mlc_NAME *m) { mlc_instance_free(INST(m)); }\n"
    "int mlc_NAME_sync(mlc_NAME *m) { return mlc_instance_sync(INST(m)); }\n"
    "const char *mlc_NAME_error(const mlc_NAME *m) { return mlc_instance_error((const MlcInstance *)m); }\n"
    "const char *mlc_NAME_device(const mlc_NAME *m) { return mlc_instance_device((const MlcInstance *)m); }\n"
    "int mlc_NAME_load_weights(mlc_NAME *m, const char *path) { return mlc_instance_load(INST(m), path); }\n"
    "int mlc_NAME_save_weights(mlc_NAME *m, const char *path) { return mlc_instance_save(INST(m), path); }\n"
    "int64_t mlc_NAME_steps(const mlc_NAME *m) { return mlc_instance_steps((const MlcInstance *)m); }\n"
    "float mlc_NAME_last_lr(const mlc_NAME *m) { return mlc_instance_last_lr((const MlcInstance *)m); }\n"
    "float mlc_NAME_last_grad_norm(const mlc_NAME *m) {\n"
    "  return mlc_instance_last_grad_norm((const MlcInstance *)m);\n"
    "}\n"
    "float mlc_NAME_last_loss_scale(const mlc_NAME *m) {\n"
    "  return mlc_instance_last_loss_scale((const MlcInstance *)m);\n"
    "}\n"
    "int64_t mlc_NAME_skipped_steps(const mlc_NAME *m) {\n"
    "  return mlc_instance_skipped_steps((const MlcInstance *)m);\n"
    "}\n"
    "void *mlc_NAME_state(mlc_NAME *m, const char *path, int64_t *numel) {\n"
    "  return mlc_instance_state(INST(m), path, numel);\n"
    "}\n\n";

// const void *in[] = {in_x, in_y}; for the first n inputs.
static void input_array(StrBuf *b, const Glue *g, int n) {
  sb_puts(b, "  const void *in[NIN + 1] = {");
  for (int i = 0; i < n; i++) sb_printf(b, "%sin_%s", i ? ", " : "", g->in[i].name);
  sb_puts(b, "};\n");
}

static void entries(StrBuf *b, const Glue *g) {
  const char *n = g->u->cname;
  sb_printf(b, "int mlc_%s_predict(mlc_%s *m, int64_t batch", n, n), api_params(b, g, g->nfwd);
  sb_puts(b, ", float *out) {\n"), input_array(b, g, g->nfwd);
  sb_puts(b, "  return mlc_instance_predict(INST(m), batch, in, out);\n}\n\n");
  sb_printf(b, "int mlc_%s_train_step(mlc_%s *m, int64_t batch", n, n), api_params(b, g, g->nin);
  sb_puts(b, ", float *loss) {\n"), input_array(b, g, g->nin);
  sb_puts(b, "  return mlc_instance_train_step(INST(m), batch, in, loss);\n}\n\n");
  sb_printf(b, "int mlc_%s_eval(mlc_%s *m, int64_t batch", n, n), api_params(b, g, g->nin);
  sb_puts(b, ", float *loss, float *out) {\n"), input_array(b, g, g->nin);
  sb_puts(b, "  return mlc_instance_eval(INST(m), batch, in, loss, out);\n}\n");
  if (g->u->k_plateau)
    sb_printf(b, "\nint mlc_%s_epoch_end(mlc_%s *m, double metric) {\n"
                 "  return mlc_instance_epoch_end(INST(m), metric);\n}\n", n, n);
}

void glue_api_source(StrBuf *b, const Glue *g) {
  sb_puts(b, "\n// ---- the embedding API: wrappers of the runtime's model instances ----\n");
  glue_api_header(b, g);
  sb_putc(b, '\n');
  put_named(b, impl, g->u->cname);
  entries(b, g);
}
