// glue_device.c — the host glue's device side, for a model built with
// --target cuda: the gpu programs' launchers (their host C is the cuda
// stage's, compiled next to the glue), the MlcDeviceModel the runtime opens
// (the bundle of cubins and PTX, the kernel and message tables, the device
// scratch size), and the device entry points train_step_dev, eval_dev,
// predict_dev (epoch_end_dev) that the CPU ones hand a call to when
// ctx->device is set.
//
// A device entry point does what its CPU twin does (build_glue.c: dims, the
// micro-batches of accumulate, the schedule's step slots, the checked
// train_step under --check-finite) with device addresses: the batch through
// ops->inputs (uploaded, or the copy prefetched while the last step ran),
// the state where it lives on the device, its outputs in device slots, then
// ops->run (the launches) and ops->finish (the results downloaded, a failed
// check's message, a non-finite site as MLC_NONFINITE). Without the cpu
// target the CPU entry points fail with a message instead of calling kernels
// that were not built.
#include "host_internal.h"

#include <string.h>

static const char *const device_text[] = {
    "static const MlcDeviceOps *const DOPS = &mlc_cuda_device_ops;\n"
    "\n"
    "// A failed device call: its reason in ctx->err (a check's message may name a\n"
    "// non-finite value's site).\n"
    "static int dev_fail(MlcCtx *ctx, int rc) {\n"
    "  snprintf(ctx->err, sizeof ctx->err, \"%s\", DOPS->error(ctx->device));\n"
    "  return rc == 1 && nonfinite(ctx, ctx->err) ? MLC_NONFINITE : MLC_ERROR;\n"
    "}\n"
    "\n"
    "static void dev_states(MlcCtx *ctx, const int *map, int nmap, uint64_t *st) {\n"
    "  for (int i = 0; i < nmap; i++) st[i] = DOPS->state(ctx->device, map[i]);\n"
    "}\n"
    "\n"
    "static int dev_set_i64(MlcCtx *ctx, int i, int64_t v) {\n"
    "  return i < 0 ? 0 : DOPS->set_state(ctx->device, i, &v, sizeof v);\n"
    "}\n"
    "\n"
    "static int dev_set_float(MlcCtx *ctx, int i, double v) {\n"
    "  if (i < 0) return 0;\n"
    "  float f = (float)v;\n"
    "  if (ctx->model->states[i].dtype == MLC_F64) return DOPS->set_state(ctx->device, i, &v, sizeof v);\n"
    "  return DOPS->set_state(ctx->device, i, &f, sizeof f);\n"
    "}\n"
    "\n",
    "static size_t dev_scratch_bytes(int64_t b, const int64_t *syms) {\n"
    "  int64_t dims[MLC_MAX_RANK * (NIN * ACC + 1)];\n"
    "  int64_t mb = b / ACC > 0 ? b / ACC : 1;\n"
    "  fill_dims(dims, NIN * ACC, mb, syms);\n"
    "  size_t tc = (size_t)CU_TRAIN_CHECKED_SCRATCH(dims), tn = (size_t)CU_TRAIN_SCRATCH(dims);\n"
    "  size_t m = tc > tn ? tc : tn;\n"
    "  fill_dims(dims, NIN, b, syms);\n"
    "  size_t e = (size_t)CU_EVAL_SCRATCH(dims);\n"
    "  fill_dims(dims, NFWD, b, syms);\n"
    "  size_t p = (size_t)CU_PREDICT_SCRATCH(dims);\n"
    "  m = m > e ? m : e;\n"
    "  m = m > p ? m : p;\n"
    "  memset(dims, 0, sizeof dims);\n"
    "  size_t l = (size_t)CU_PLATEAU_SCRATCH(dims);\n"
    "  return (m > l ? m : l) + 256;\n"
    "}\n"
    "\n",
    "// predict on inputs already on the device\n"
    "static int predict_run(MlcCtx *ctx, int64_t b, const uint64_t *din, void *const *out) {\n"
    "  MlcDevice *d = ctx->device;\n"
    "  int64_t dims[MLC_MAX_RANK * NIN];\n"
    "  uint64_t st[NSTATE + 1];\n"
    "  fill_dims(dims, NFWD, b, ctx->syms);\n"
    "  size_t n[1] = {(size_t)(b * out_numel(ctx->syms)) * sizeof(float)};\n"
    "  uint64_t dout[1] = {DOPS->output(d, 0, n[0])};\n"
    "  dev_states(ctx, dpredict_state, NDPREDICT_STATE, st);\n"
    "  int rc = DOPS->run(d, CU_PREDICT_FN, dims, din, dout, st, 0, 0);\n"
    "  if (!rc) rc = DOPS->finish(d, out, dout, n, 1);\n"
    "  return rc ? dev_fail(ctx, rc) : MLC_OK;\n"
    "}\n"
    "\n"
    "static int predict_dev(MlcCtx *ctx, int64_t b, const void *const *in, void *const *out) {\n"
    "  uint64_t din[NIN];\n"
    "  if (DOPS->inputs(ctx->device, in, NFWD, b, din)) return dev_fail(ctx, -1);\n"
    "  return predict_run(ctx, b, din, out);\n"
    "}\n"
    "\n",
    "static int eval_dev(MlcCtx *ctx, int64_t b, const void *const *in, void *const *out) {\n"
    "  MlcDevice *d = ctx->device;\n"
    "  int64_t dims[MLC_MAX_RANK * NIN];\n"
    "  uint64_t din[NIN], st[NSTATE + 1];\n"
    "  fill_dims(dims, NIN, b, ctx->syms);\n"
    "  if (DOPS->inputs(d, in, NIN, b, din)) return dev_fail(ctx, -1);\n"
    "  // the loss, and the forward output when eval computes it (EVAL_OUT;\n"
    "  // else eval() took it from predict)\n"
    "  size_t n[2] = {EVAL_LOSS_BYTES, (size_t)(b * out_numel(ctx->syms)) * sizeof(float)};\n"
    "  uint64_t dout[2] = {DOPS->output(d, 0, n[0]), EVAL_OUT ? DOPS->output(d, 1, n[1]) : 0};\n"
    "  dev_states(ctx, deval_state, NDEVAL_STATE, st);\n"
    "  int rc = DOPS->run(d, CU_EVAL_FN, dims, din, dout, st, 0, 0);\n"
    "  if (!rc) rc = DOPS->finish(d, out, dout, n, EVAL_OUT ? 2 : 1);\n"
    "  return rc ? dev_fail(ctx, rc) : MLC_OK;\n"
    "}\n"
    "\n",
    "static int train_step_dev(MlcCtx *ctx, int64_t b, const void *const *in, void *const *out) {\n"
    "  MlcDevice *d = ctx->device;\n"
    "  if (b < ACC) {\n"
    "    snprintf(ctx->err, sizeof ctx->err, \"batch %lld is smaller than accumulate %d\", (long long)b, ACC);\n"
    "    return MLC_ERROR;\n"
    "  }\n"
    "  int64_t mb = b / ACC, dims[MLC_MAX_RANK * NIN * ACC];\n"
    "  uint64_t din[NIN], args[NIN * ACC], st[NSTATE + 1];\n"
    "  if (DOPS->inputs(d, in, NIN, b, din)) return dev_fail(ctx, -1);\n"
    "  if (!STEP_OUT && HAS_LABEL && out[3]) { // the batch's predictions before the update\n"
    "    void *pout[1] = {out[3]};\n"
    "    int rc = predict_run(ctx, b, din, pout);\n"
    "    if (rc != MLC_OK) return rc;\n"
    "  }\n"
    "  fill_dims(dims, NIN * ACC, mb, ctx->syms);\n"
    "  for (int k = 0; k < ACC; k++)\n"
    "    for (int i = 0; i < NIN; i++) args[k * NIN + i] = din[i] + (uint64_t)(k * mb) * sample_bytes(i, ctx->syms);\n"
    "  set_i64(ctx, STEP_SLOT, ctx->step);\n"
    "  set_i64(ctx, SPE_SLOT, ctx->steps_per_epoch > 0 ? ctx->steps_per_epoch : 1);\n"
    "  set_i64(ctx, TOTAL_SLOT, ctx->total_steps > 0 ? ctx->total_steps : 1);\n"
    "  set_float(ctx, LR_SLOT, ctx->lr);\n"
    "  if (dev_set_i64(ctx, STEP_SLOT, ctx->step) ||\n"
    "      dev_set_i64(ctx, SPE_SLOT, ctx->steps_per_epoch > 0 ? ctx->steps_per_epoch : 1) ||\n"
    "      dev_set_i64(ctx, TOTAL_SLOT, ctx->total_steps > 0 ? ctx->total_steps : 1) ||\n"
    "      dev_set_float(ctx, LR_SLOT, ctx->lr))\n"
    "    return dev_fail(ctx, -1);\n"
    "  // loss, grad norm, lr, the loss's auxiliary values, the loss scaler's values,\n"
    "  // the forward output\n"
    "  enum { NR = 3 + NAUX + NSCALER };\n"
    "  size_t n[NR + 1];\n"
    "  uint64_t dout[NR + 1];\n"
    "  void *host[NR + 1];\n"
    "  for (int i = 0; i < NR; i++) {\n"
    "    n[i] = dtrain_out_bytes[i], dout[i] = DOPS->output(d, i, n[i]);\n"
    "    host[i] = i < 3 ? out[i] : out[4 + (i - 3)];\n"
    "  }\n"
    "  n[NR] = STEP_OUT ? (size_t)(b * out_numel(ctx->syms)) * sizeof(float) : 0;\n"
    "  dout[NR] = STEP_OUT ? DOPS->output(d, NR, n[NR]) : 0;\n"
    "  host[NR] = STEP_OUT ? out[3] : NULL;\n"
    "  dev_states(ctx, dtrain_state, NDTRAIN_STATE, st);\n"
    "  MlcDeviceProgram fn = ctx->check_finite ? CU_TRAIN_CHECKED_FN : CU_TRAIN_FN;\n"
    "  int rc = DOPS->run(d, fn, dims, args, dout, st, ctx->step_seed, 1);\n"
    "  if (!rc) rc = DOPS->finish(d, host, dout, n, NR + 1);\n"
    "  return rc ? dev_fail(ctx, rc) : MLC_OK;\n"
    "}\n"
    "\n",
    NULL};

// Launcher and scratch prototypes of the gpu programs, and the tables of
// the host C the cuda stage prints.
static void device_prototypes(StrBuf *b, const BuildUnit *u) {
  const char *cn = u->cname;
  const char *progs[] = {"train_step", "eval", "predict", "train_step_checked", "plateau_update"};
  for (int i = 0; i < 4 + (u->g_plateau != NULL); i++) {
    sb_printf(b, "int32_t mlc_%s_cu_%s(MlcLauncher *, const int64_t *, const uint64_t *, const uint64_t *,\n"
                 "    const uint64_t *, uint64_t, uint64_t, uint64_t);\n", cn, progs[i]);
    sb_printf(b, "int64_t mlc_%s_cu_%s_scratch_bytes(const int64_t *);\n", cn, progs[i]);
  }
  sb_printf(b, "extern const char *const mlc_%s_cu_kernels[];\nextern const char *const mlc_%s_cu_messages[];\n", cn, cn);
  sb_printf(b, "extern const unsigned char mlc_%s_cuda_bundle[];\nextern const unsigned long long mlc_%s_cuda_bundle_size;\n",
            cn, cn);
  sb_puts(b, "extern const MlcDeviceOps mlc_cuda_device_ops; // runtime/cuda/cuda_model.c\n");
  const char *names[] = {"TRAIN", "train_step", "EVAL", "eval", "PREDICT", "predict", "TRAIN_CHECKED",
                         "train_step_checked"};
  for (int i = 0; i < 8; i += 2) {
    sb_printf(b, "#define CU_%s_FN mlc_%s_cu_%s\n", names[i], cn, names[i + 1]);
    sb_printf(b, "#define CU_%s_SCRATCH mlc_%s_cu_%s_scratch_bytes\n", names[i], cn, names[i + 1]);
  }
  if (u->g_plateau) {
    sb_printf(b, "#define CU_PLATEAU_FN mlc_%s_cu_plateau_update\n", cn);
    sb_printf(b, "#define CU_PLATEAU_SCRATCH mlc_%s_cu_plateau_update_scratch_bytes\n", cn);
  } else {
    sb_puts(b, "#define CU_PLATEAU_SCRATCH(dims) ((void)(dims), (int64_t)0)\n");
  }
  sb_putc(b, '\n');
}

// The bytes of output i of p (a scalar: its dtype's size).
static int out_bytes(const KirProgram *p, int i) {
  for (int b = 0; b < p->bufs.len; b++) {
    const KirBuf *kb = kir_buf(p, b);
    if (kb->kind == KBUF_OUTPUT && kb->index == i) return dtype_size(kb->dtype);
  }
  return 4;
}

void glue_device_defs(StrBuf *b, const Glue *g) {
  const BuildUnit *u = g->u;
  sb_puts(b, "// ---- the device path (--target cuda) ----\n");
  device_prototypes(b, u);
  int nt = glue_state_map(b, g, u->g_train, "dtrain");
  int ne = glue_state_map(b, g, u->g_eval, "deval");
  int np = glue_state_map(b, g, u->g_predict, "dpredict");
  int nl = u->g_plateau ? glue_state_map(b, g, u->g_plateau, "dplateau") : 0;
  sb_printf(b, "enum { NDTRAIN_STATE = %d, NDEVAL_STATE = %d, NDPREDICT_STATE = %d, NDPLATEAU_STATE = %d };\n", nt,
            ne, np, nl);
  sb_puts(b, "// train_step's scalar results: loss, grad norm, lr, the auxiliary values, the scaler's\n");
  sb_puts(b, "static const size_t dtrain_out_bytes[] = {");
  int nscaler = u->recipe.opt.loss_scale != LSCALE_NONE ? MLC_SCALER_OUTPUTS : 0;
  for (int i = 0; i < 3 + u->lr.naux + nscaler; i++) sb_printf(b, "%s%d", i ? ", " : "", out_bytes(u->g_train, i));
  sb_printf(b, "};\nenum { EVAL_LOSS_BYTES = %d };\n\n", out_bytes(u->g_eval, 0));
}

void glue_device_wrappers(StrBuf *b, const Glue *g) {
  const BuildUnit *u = g->u;
  for (int i = 0; device_text[i]; i++) sb_puts(b, device_text[i]);
  if (u->g_plateau) {
    DType dt = VEC_AT(u->plateau->params, IrNode, 0)->type->dtype;
    sb_printf(b,
              "static int epoch_end_dev(MlcCtx *ctx, int64_t b, const void *const *in, void *const *out) {\n"
              "  (void)b;\n"
              "  MlcDevice *d = ctx->device;\n"
              "  int64_t dims[MLC_MAX_RANK] = {0};\n"
              "  %s metric = (%s)*(const double *)in[0], scale = 0;\n"
              "  uint64_t din[1] = {DOPS->scalar(d, &metric, sizeof metric)}, st[NSTATE + 1];\n"
              "  uint64_t dout[1] = {DOPS->output(d, 0, sizeof scale)};\n"
              "  size_t n[1] = {sizeof scale};\n"
              "  void *host[1] = {&scale};\n"
              "  dev_states(ctx, dplateau_state, NDPLATEAU_STATE, st);\n"
              "  int rc = din[0] ? DOPS->run(d, CU_PLATEAU_FN, dims, din, dout, st, 0, 1) : -1;\n"
              "  if (!rc) rc = DOPS->finish(d, host, dout, n, 1);\n"
              "  if (rc) return dev_fail(ctx, rc);\n"
              "  if (out && out[0]) *(double *)out[0] = (double)scale;\n"
              "  return MLC_OK;\n"
              "}\n\n",
              glue_c_type(dt), glue_c_type(dt));
  }
  const char *cn = u->cname;
  sb_printf(b,
            "static const MlcDeviceModel device = {\n"
            "    .bundle = mlc_%s_cuda_bundle, .bundle_size = &mlc_%s_cuda_bundle_size,\n"
            "    .kernels = mlc_%s_cu_kernels, .messages = mlc_%s_cu_messages,\n"
            "    .scratch_bytes = dev_scratch_bytes, .ops = &mlc_cuda_device_ops,\n"
            "};\n\n",
            cn, cn, cn, cn);
}

// Without CPU kernels: entry points that say so (the CPU wrappers call them).
void glue_no_cpu(StrBuf *b) {
  sb_puts(b,
          "// built with --target cuda alone: no CPU kernels\n"
          "static int32_t no_cpu(const int64_t *dims, void *const *in, void *const *out, void *const *st, void *scratch,\n"
          "                      uint64_t seed, MlcPool *pool, const char **err) {\n"
          "  (void)dims, (void)in, (void)out, (void)st, (void)scratch, (void)seed, (void)pool;\n"
          "  *err = \"this program was built with --target cuda alone: it runs only on a CUDA device\";\n"
          "  return 1;\n"
          "}\n"
          "static int64_t no_cpu_scratch(const int64_t *dims) { (void)dims; return 0; }\n\n");
}
