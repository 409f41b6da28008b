// build_glue.c — the C glue between compiled kernel programs and the
// runtime: writes the C source of one model object (and, for libraries, the
// public header of its embedding API).
//
// Input: a BuildUnit (build.h) whose train_step / eval / predict are lowered
// to kernel IR and compiled under the symbol prefix mlc_<cname>_k_ (backend.h
// gives their ABI). Output: C text defining
//   const MlcModel mlc_model_<cname>     runtime/include/mlc_model.h: state descs (every
//                                         module param, buffer and optimizer
//                                         slot with its initialiser), inputs
//                                         (per-sample dims, labels, default
//                                         data; symbolic dims such as T are
//                                         -1 + an index into syms, bound by
//                                         the runtime from the data), the
//                                         recipe, sites (of the checked
//                                         train_step), scratch
//   train_step / eval / predict          MlcEntry wrappers: the dims array from
//                                         the batch and per-sample dims, state
//                                         pointers in each program's KBUF_STATE
//                                         order, the run-time step counts;
//                                         train_step runs the checked variant
//                                         under ctx->check_finite and maps a
//                                         failed finite check to MLC_NONFINITE
//   epoch_end (plateau schedule only)    plateau_update on the epoch's metric
//   main (executables)                   mlc_main(argc, argv, &mlc_model_<cname>)
//   mlc_<cname>_* (libraries)            the API of build_glue_header (glue_api.c)
// The glue is compiled by the system C compiler (build.c) in a directory
// holding the runtime headers it includes (glue_headers.c writes them:
// mlc_rt.h, mlc_model.h, kernels/abi.h) and libc headers. The ranges the
// runtime checks data against (labels, embedding rows, sequence lengths)
// come from the graph (glue_ranges.c).
#include "host_internal.h"
#include "passes/optim.h"
#include "runtime/include/mlc_model.h" // MlcInit: host_init_spec

#include <math.h>
#include <string.h>

// ---- small printers -------------------------------------------------------------------------------
void glue_c_str(StrBuf *b, const char *s) {
  if (!s) {
    sb_puts(b, "NULL");
    return;
  }
  sb_putc(b, '"');
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') sb_printf(b, "\\%c", c);
    else if (c < 32 || c >= 127) sb_printf(b, "\\%03o", c);
    else sb_putc(b, (char)c);
  }
  sb_putc(b, '"');
}

static void c_double(StrBuf *b, double v) {
  if (isnan(v)) sb_puts(b, "NAN");
  else if (isinf(v)) sb_puts(b, v > 0 ? "INFINITY" : "-INFINITY");
  else sb_printf(b, "%.17g", v);
}

static const char *mlc_dtype(DType dt) {
  switch (dt) {
  case DT_F32: return "MLC_F32";
  case DT_F64: return "MLC_F64";
  case DT_I32: return "MLC_I32";
  case DT_I64: return "MLC_I64";
  case DT_U8: return "MLC_U8";
  case DT_BOOL: return "MLC_BOOL";
  default: return NULL;
  }
}

const char *glue_c_type(DType dt) {
  switch (dt) {
  case DT_F32: return "float";
  case DT_F64: return "double";
  case DT_I32: return "int32_t";
  case DT_I64: return "int64_t";
  default: return "uint8_t";
  }
}

// ---- what the descriptor needs, checked ---------------------------------------------------------------
// (GlueInput and Glue: host_internal.h)

static bool fail(Glue *g, const char *msg, const char *arg) {
  snprintf(g->err, g->errlen, msg, arg);
  return false;
}

// The index of symbol `name` in g->syms, added when new (add); -1 if absent
// or there are too many.
static int sym_index(Glue *g, const char *name, bool add) {
  for (int k = 0; k < g->nsyms; k++)
    if (!strcmp(g->syms[k], name)) return k;
  if (!add || g->nsyms == MLC_MAX_SYMS) return -1;
  g->syms[g->nsyms] = name;
  return g->nsyms++;
}

// Per-sample shape of a [B, ...] type whose trailing dims are constants or
// symbols (dims[d] = -1, sym[d] their index; new ones added when add):
// returns the product of the constant dims, -1 if the type does not fit.
static int64_t sample_dims(Glue *g, const Type *t, Sym *batch, int64_t *dims, int *sym, int *rank,
                           bool add) {
  // functions have their own Sym objects: dims are matched by name
  Sym *s0 = t->rank >= 1 ? dim_as_sym(t->dims[0]) : NULL;
  if (!s0 || strcmp(s0->name, batch->name) || t->rank > MLC_MAX_RANK) return -1;
  int64_t n = 1;
  for (int i = 1; i < t->rank; i++) {
    Sym *s = dim_as_sym(t->dims[i]);
    sym[i - 1] = -1;
    if (dim_is_const(t->dims[i], &dims[i - 1])) n *= dims[i - 1];
    else if (!s || !strcmp(s->name, batch->name) || (sym[i - 1] = sym_index(g, s->name, add)) < 0)
      return -1;
    else dims[i - 1] = -1;
  }
  *rank = t->rank - 1;
  return n;
}

static bool collect_inputs(Glue *g) {
  IrFunc *loss = g->u->lr.loss, *pred = g->u->predict;
  g->nin = loss->params.len, g->nfwd = pred->params.len;
  // Sema checked all of this at the signatures (sema/sema_entry.c).
  MLC_ASSERT(g->nin <= MLC_MAX_INPUTS);
  Sym *batch = NULL;
  IrNode *x0 = VEC_AT(loss->params, IrNode, 0);
  if (x0->type->rank) batch = dim_as_sym(x0->type->dims[0]);
  MLC_ASSERT(batch);
  // the forward inputs first: the symbols predict can bind
  for (int pass = 0; pass < 2; pass++)
    for (int i = pass ? g->nfwd : 0; i < (pass ? g->nin : g->nfwd); i++) {
      IrNode *x = VEC_AT(loss->params, IrNode, i);
      GlueInput *in = &g->in[i];
      in->name = x->name, in->dt = x->type->dtype;
      in->numel = sample_dims(g, x->type, batch, in->dims, in->sym, &in->rank, true);
      MLC_ASSERT(in->numel >= 0 && mlc_dtype(in->dt));
    }
  Type *ot = VEC_AT(pred->outputs, IrNode, 0)->type;
  int orank, osym[MLC_MAX_RANK], nfwd_syms = g->nsyms;
  int64_t odims[MLC_MAX_RANK];
  g->num_out = sample_dims(g, ot, batch, odims, osym, &orank, false);
  MLC_ASSERT(g->num_out >= 0);
  for (int d = 0; d < orank; d++) {
    MLC_ASSERT(osym[d] < nfwd_syms);
    if (osym[d] >= 0) g->out_syms[g->nout_syms++] = osym[d];
  }
  for (int i = 0; i < g->u->lr.module->params.len; i++) {
    IrParam *p = VEC_AT(g->u->lr.module->params, IrParam, i);
    int64_t v;
    MLC_ASSERT(mlc_dtype(p->type->dtype) && p->type->rank <= MLC_MAX_RANK);
    for (int d = 0; d < p->type->rank; d++)
      MLC_ASSERT(dim_is_const(p->type->dims[d], &v));
  }
  return true;
}

// ---- descriptor tables ----------------------------------------------------------------------------
static double kaiming_gain(const IrInit *in) {
  const char *n = in->nonlinearity ? in->nonlinearity : "leaky_relu";
  if (!strcmp(n, "relu")) return sqrt(2.0);
  if (!strcmp(n, "tanh")) return 5.0 / 3;
  if (!strcmp(n, "selu")) return 0.75;
  if (!strcmp(n, "leaky_relu")) return sqrt(2.0 / (1 + in->a * in->a));
  return 1;
}

void host_init_spec(const IrParam *p, const OptimRecipe *r, MlcInit *out) {
  const IrInit *in = p->init;
  *out = (MlcInit){.kind = MLC_INIT_ZEROS};
  if (p->kind == IRP_OPTSTATE) {
    double v = optim_state_init(r, p->name);
    if (v != 0) *out = (MlcInit){.kind = MLC_INIT_CONSTANT, .value = v};
    return;
  }
  if (!in) return;
  static const MlcInitKind kinds[] = {
      [IRI_ZEROS] = MLC_INIT_ZEROS, [IRI_ONES] = MLC_INIT_ONES, [IRI_NORMAL] = MLC_INIT_NORMAL,
      [IRI_UNIFORM] = MLC_INIT_UNIFORM, [IRI_CONSTANT] = MLC_INIT_CONSTANT,
      [IRI_KAIMING_UNIFORM] = MLC_INIT_KAIMING_UNIFORM, [IRI_KAIMING_NORMAL] = MLC_INIT_KAIMING_NORMAL,
      [IRI_XAVIER_UNIFORM] = MLC_INIT_XAVIER_UNIFORM, [IRI_XAVIER_NORMAL] = MLC_INIT_XAVIER_NORMAL,
      [IRI_TRUNC_NORMAL] = MLC_INIT_TRUNC_NORMAL,
  };
  bool kaiming = in->kind == IRI_KAIMING_UNIFORM || in->kind == IRI_KAIMING_NORMAL;
  *out = (MlcInit){.kind = kinds[in->kind], .value = in->value, .mean = in->mean, .std = in->std,
                   .low = in->low, .high = in->high, .a = in->a,
                   .gain = kaiming ? kaiming_gain(in) : in->gain, .fan_in = in->fan_in,
                   .fan_out = in->fan_out,
                   .mode = in->mode && !strcmp(in->mode, "fan_out") ? MLC_FAN_OUT : MLC_FAN_IN};
}

// host_init_spec's MlcInit as a C initializer (every double exact: %.17g).
static void init_spec(StrBuf *b, const IrParam *p, const OptimRecipe *r) {
  static const char *kinds[] = {
      [MLC_INIT_ZEROS] = "ZEROS", [MLC_INIT_ONES] = "ONES", [MLC_INIT_CONSTANT] = "CONSTANT",
      [MLC_INIT_NORMAL] = "NORMAL", [MLC_INIT_UNIFORM] = "UNIFORM",
      [MLC_INIT_KAIMING_UNIFORM] = "KAIMING_UNIFORM", [MLC_INIT_KAIMING_NORMAL] = "KAIMING_NORMAL",
      [MLC_INIT_XAVIER_UNIFORM] = "XAVIER_UNIFORM", [MLC_INIT_XAVIER_NORMAL] = "XAVIER_NORMAL",
      [MLC_INIT_TRUNC_NORMAL] = "TRUNC_NORMAL",
  };
  MlcInit in;
  host_init_spec(p, r, &in);
  sb_printf(b, "{.kind = MLC_INIT_%s, .value = ", kinds[in.kind]);
  c_double(b, in.value), sb_puts(b, ", .mean = "), c_double(b, in.mean);
  sb_puts(b, ", .std = "), c_double(b, in.std), sb_puts(b, ", .low = "), c_double(b, in.low);
  sb_puts(b, ", .high = "), c_double(b, in.high), sb_puts(b, ", .a = "), c_double(b, in.a);
  sb_puts(b, ", .gain = "), c_double(b, in.gain);
  sb_printf(b, ", .fan_in = %lld, .fan_out = %lld, .mode = %s}", (long long)in.fan_in, (long long)in.fan_out,
            in.mode == MLC_FAN_OUT ? "MLC_FAN_OUT" : "MLC_FAN_IN");
}

static void states_table(StrBuf *b, const Glue *g) {
  IrModule *m = g->u->lr.module;
  sb_puts(b, "static const MlcStateDesc states[] = {\n");
  for (int i = 0; i < m->params.len; i++) {
    IrParam *p = VEC_AT(m->params, IrParam, i);
    sb_puts(b, "    {.path = "), glue_c_str(b, p->name);
    sb_printf(b, ", .dtype = %s, .rank = %d, .shape = {", mlc_dtype(p->type->dtype), p->type->rank);
    if (!p->type->rank) sb_putc(b, '0');
    for (int d = 0; d < p->type->rank; d++) {
      int64_t v = 0;
      dim_is_const(p->type->dims[d], &v);
      sb_printf(b, "%s%lld", d ? ", " : "", (long long)v);
    }
    const char *kind = p->kind == IRP_PARAM ? "PARAM" : p->kind == IRP_BUFFER ? "BUFFER" : "OPTIM";
    sb_printf(b, "}, .kind = MLC_STATE_%s, .trainable = %d,\n     .init = ", kind,
              p->kind == IRP_PARAM && p->trainable);
    init_spec(b, p, &g->u->recipe.opt);
    sb_puts(b, "},\n");
  }
  if (!m->params.len) sb_puts(b, "    {0},\n");
  sb_puts(b, "};\n\n");
}

static const RecipeSource *source_for(const Vec *v, const char *input) {
  for (int i = 0; i < v->len; i++) {
    RecipeSource *s = VEC_AT(*v, RecipeSource, i);
    if (s->input && !strcmp(s->input, input)) return s;
  }
  return NULL;
}

// A source's CSV column selection as two arrays, cols_<tag> (index, or -1
// for a header name) and colnames_<tag>; false when it has none.
static bool csv_selection(StrBuf *b, const RecipeSource *s, const char *tag) {
  if (!s || !s->kind || strcmp(s->kind, "csv") || s->ncols <= 0) return false;
  sb_printf(b, "static const int64_t cols_%s[] = {", tag);
  for (int k = 0; k < s->ncols; k++)
    sb_printf(b, "%s%lld", k ? ", " : "", s->colnames[k] ? -1LL : (long long)s->cols[k]);
  sb_printf(b, "};\nstatic const char *const colnames_%s[] = {", tag);
  for (int k = 0; k < s->ncols; k++) sb_puts(b, k ? ", " : ""), glue_c_str(b, s->colnames[k]);
  sb_puts(b, "};\n");
  return true;
}

static void data_source(StrBuf *b, const RecipeSource *s, bool sel, const char *tag) {
  if (!s || !s->kind) {
    sb_puts(b, "{.kind = MLC_DATA_NONE, .scale = 1}");
    return;
  }
  const char *k = !strcmp(s->kind, "idx") ? "IDX" : !strcmp(s->kind, "csv") ? "CSV" : "NPY";
  sb_printf(b, "{.kind = MLC_DATA_%s, .path = ", k), glue_c_str(b, s->path);
  sb_puts(b, ", .scale = "), c_double(b, s->scale ? s->scale : 1);
  bool csv = !strcmp(s->kind, "csv");
  sb_printf(b, ", .header = %d", csv && s->header ? 1 : 0);
  if (sel) sb_printf(b, ", .ncols = %d, .cols = cols_%s, .colnames = colnames_%s", s->ncols, tag, tag);
  sb_putc(b, '}');
}

static void inputs_table(StrBuf *b, const Glue *g) {
  const Recipe *r = &g->u->recipe;
  bool sel[MLC_MAX_INPUTS][2];
  for (int i = 0; i < g->nin; i++)
    for (int t = 0; t < 2; t++) {
      char tag[16];
      snprintf(tag, sizeof tag, "%s%d", t ? "test" : "train", i);
      sel[i][t] = csv_selection(b, source_for(t ? &r->test_data : &r->train_data, g->in[i].name), tag);
    }
  sb_puts(b, "static const MlcInputDesc inputs[] = {\n");
  for (int i = 0; i < g->nin; i++) {
    const GlueInput *in = &g->in[i];
    sb_puts(b, "    {.name = "), glue_c_str(b, in->name);
    sb_printf(b, ", .dtype = %s, .rank = %d, .dims = {", mlc_dtype(in->dt), in->rank);
    if (!in->rank) sb_putc(b, '0');
    for (int d = 0; d < in->rank; d++) sb_printf(b, "%s%lld", d ? ", " : "", (long long)in->dims[d]);
    sb_puts(b, "}, .sym = {");
    if (!in->rank) sb_putc(b, '0');
    for (int d = 0; d < in->rank; d++) sb_printf(b, "%s%d", d ? ", " : "", in->sym[d] < 0 ? 0 : in->sym[d]);
    sb_printf(b, "}, .num_classes = %lld,\n     .value_limit = %lld, .limit_what = ",
              (long long)in->num_classes, (long long)in->value_limit);
    glue_c_str(b, in->limit_what);
    char tag[16];
    snprintf(tag, sizeof tag, "train%d", i);
    sb_puts(b, ",\n     .train = ");
    data_source(b, source_for(&r->train_data, in->name), sel[i][0], tag);
    snprintf(tag, sizeof tag, "test%d", i);
    sb_puts(b, ",\n     .test = ");
    data_source(b, source_for(&r->test_data, in->name), sel[i][1], tag);
    if (in->has_ignore)
      sb_printf(b, ",\n     .has_ignore = 1, .ignore_value = %lld", (long long)in->ignore_value);
    sb_puts(b, "},\n");
  }
  sb_puts(b, "};\n\n");
}

static void recipe_tables(StrBuf *b, const Glue *g) {
  const Recipe *r = &g->u->recipe;
  const OptimRecipe *o = &r->opt;
  sb_puts(b, "static const MlcHyper hyper[] = {\n");
  sb_puts(b, "    {\"lr\", "), c_double(b, o->lr), sb_puts(b, "},\n");
  if (o->opt == OPT_SGD) sb_puts(b, "    {\"momentum\", "), c_double(b, o->momentum), sb_puts(b, "},\n");
  else {
    sb_puts(b, "    {\"beta1\", "), c_double(b, o->beta1), sb_puts(b, "},\n");
    sb_puts(b, "    {\"beta2\", "), c_double(b, o->beta2), sb_puts(b, "},\n");
    sb_puts(b, "    {\"eps\", "), c_double(b, o->eps), sb_puts(b, "},\n");
  }
  sb_puts(b, "    {\"weight_decay\", "), c_double(b, o->weight_decay), sb_puts(b, "},\n");
  sb_puts(b, "    {\"clip\", "), c_double(b, o->clip), sb_puts(b, "},\n");
  sb_printf(b, "    {\"warmup_steps\", %lld},\n", (long long)o->warmup);
  if (o->loss_scale != LSCALE_NONE) // the scaler's settings (static: its scale)
    sb_puts(b, "    {\"init_scale\", "), c_double(b, o->scale_init), sb_puts(b, "},\n");
  if (o->loss_scale == LSCALE_DYNAMIC) {
    sb_puts(b, "    {\"growth_factor\", "), c_double(b, o->scale_growth), sb_puts(b, "},\n");
    sb_puts(b, "    {\"backoff_factor\", "), c_double(b, o->scale_backoff), sb_puts(b, "},\n");
    sb_printf(b, "    {\"growth_interval\", %lld},\n", (long long)o->scale_interval);
  }
  sb_puts(b, "};\n\n");
}

// The checked train_step's sites (kir.h): where --check-finite points.
static int sites_table(StrBuf *b, const Glue *g) {
  const Vec *sites = &g->u->checked.sites;
  sb_puts(b, "static const MlcSite sites[] = {\n");
  for (int i = 0; i < sites->len; i++) {
    KirSite *st = VEC_AT(*sites, KirSite, i);
    int line = 0, col = 0;
    if (st->span.file) span_linecol(st->span, &line, &col);
    char loc[512];
    snprintf(loc, sizeof loc, "%s:%d:%d", st->span.file ? st->span.file->path : "?", line, col);
    sb_puts(b, "    {"), glue_c_str(b, loc), sb_puts(b, ", "), glue_c_str(b, st->op), sb_puts(b, "},\n");
  }
  if (!sites->len) sb_puts(b, "    {NULL, NULL},\n");
  sb_puts(b, "};\n\n");
  return sites->len;
}

// state index (into states[]) of each KBUF_STATE buffer of p, in p->bufs order
int glue_state_map(StrBuf *b, const Glue *g, const KirProgram *p, const char *name) {
  IrModule *m = g->u->lr.module;
  int n = 0;
  sb_printf(b, "static const int %s_state[] = {", name);
  for (int i = 0; i < p->bufs.len; i++) {
    KirBuf *kb = kir_buf(p, i);
    if (kb->kind != KBUF_STATE) continue;
    int j = 0;
    while (j < m->params.len && strcmp(VEC_AT(m->params, IrParam, j)->name, kb->path)) j++;
    MLC_ASSERT(j < m->params.len);
    sb_printf(b, "%s%d", n++ ? ", " : "", j);
  }
  sb_printf(b, "%s};\n", n ? "" : "-1");
  return n;
}

static int param_index(const Glue *g, const char *path) {
  IrModule *m = g->u->lr.module;
  for (int j = 0; j < m->params.len; j++)
    if (!strcmp(VEC_AT(m->params, IrParam, j)->name, path)) return j;
  return -1;
}

// ---- the wrappers (fixed text around the tables) ---------------------------------------------------------
// Where the device entry points go (--target cuda): after the helpers they
// share with the CPU ones, before the entry points that hand calls to them.
static const char DEVICE_MARK[] = "";

static const char *const wrappers[] = {
    "typedef int32_t (*ProgFn)(const int64_t *, void *const *, void *const *, void *const *, void *,\n"
    "                          uint64_t, MlcPool *, const char **);\n"
    "typedef int64_t (*ScratchFn)(const int64_t *);\n"
    "\n",
    "static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }\n"
    "\n",
    "// dims[arg * MLC_MAX_RANK + d] of nargs arguments, argument a being input a % NIN of\n"
    "// micro-batch a / NIN, each [b, per-sample dims...]; a symbolic dim is its\n"
    "// value in syms (bound from the data).\n"
    "static void fill_dims(int64_t *dims, int nargs, int64_t b, const int64_t *syms) {\n"
    "  memset(dims, 0, sizeof(int64_t) * MLC_MAX_RANK * (size_t)nargs);\n"
    "  for (int a = 0; a < nargs; a++) {\n"
    "    const MlcInputDesc *in = &inputs[a % NIN];\n"
    "    dims[a * MLC_MAX_RANK] = b;\n"
    "    for (int d = 0; d < in->rank; d++)\n"
    "      dims[a * MLC_MAX_RANK + 1 + d] = in->dims[d] < 0 ? syms[in->sym[d]] : in->dims[d];\n"
    "  }\n"
    "}\n"
    "\n",
    "static size_t sample_bytes(int i, const int64_t *syms) {\n"
    "  return mlc_dtype_size(inputs[i].dtype) * (size_t)mlc_input_numel(&inputs[i], syms);\n"
    "}\n"
    "\n"
    "// Forward output floats per sample.\n"
    "static int64_t out_numel(const int64_t *syms) {\n"
    "  int64_t n = NUM_OUT;\n"
    "  for (int k = 0; k < NOUT_SYMS; k++) n *= syms[out_syms[k]];\n"
    "  return n;\n"
    "}\n"
    "\n",
    "// A failed finite check of the checked train_step: \"nonfinite SITE KIND at ...\"\n"
    "// (KIND nan, inf or -inf) sets the site and value; 0 for any other message.\n"
    "static int nonfinite(MlcCtx *ctx, const char *msg) {\n"
    "  if (strncmp(msg, \"nonfinite \", 10)) return 0;\n"
    "  char *end;\n"
    "  long site = strtol(msg + 10, &end, 10);\n"
    "  ctx->nonfinite_site = (int)site;\n"
    "  ctx->nonfinite_value = !strncmp(end, \" -inf\", 5) ? -INFINITY : !strncmp(end, \" inf\", 4) ? INFINITY : NAN;\n"
    "  return 1;\n"
    "}\n"
    "\n",
    "static int run(MlcCtx *ctx, ProgFn fn, const int *map, int nmap, const int64_t *dims,\n"
    "               const void *const *in, void *const *out, void *scratch, uint64_t seed) {\n"
    "  void *st[NSTATE + 1];\n"
    "  for (int i = 0; i < nmap; i++) st[i] = ctx->state[map[i]];\n"
    "  const char *msg = NULL;\n"
    "  if (!fn(dims, (void *const *)in, out, st, scratch, seed, ctx->pool, &msg)) return MLC_OK;\n"
    "  snprintf(ctx->err, sizeof ctx->err, \"%s\", msg ? msg : \"a run-time check failed\");\n"
    "  return msg && nonfinite(ctx, msg) ? MLC_NONFINITE : MLC_ERROR;\n"
    "}\n"
    "\n",
    "// the fused train_step and its checked (unfused) variant: the larger scratch\n"
    "static size_t train_scratch(const int64_t *dims) {\n"
    "  size_t tc = (size_t)TRAIN_CHECKED_SCRATCH(dims), tn = (size_t)TRAIN_SCRATCH(dims);\n"
    "  return tc > tn ? tc : tn;\n"
    "}\n"
    "\n"
    "static size_t scratch_bytes(int64_t b, const int64_t *syms) {\n"
    "  int64_t dims[MLC_MAX_RANK * (NIN * ACC + 1)];\n"
    "  int64_t mb = b / ACC > 0 ? b / ACC : 1;\n"
    "  fill_dims(dims, NIN * ACC, mb, syms);\n"
    "  size_t t = align64(train_scratch(dims)) + (STEP_OUT ? (size_t)(b * out_numel(syms)) * sizeof(float) : 0);\n"
    "  fill_dims(dims, NIN, b, syms);\n"
    "  size_t e = (size_t)EVAL_SCRATCH(dims);\n"
    "  fill_dims(dims, NFWD, b, syms);\n"
    "  size_t p = (size_t)PREDICT_SCRATCH(dims);\n"
    "  size_t m = t > e ? t : e;\n"
    "  return (m > p ? m : p) + 64;\n"
    "}\n"
    "\n",
    "static void set_i64(MlcCtx *ctx, int i, int64_t v) {\n"
    "  if (i >= 0) *(int64_t *)ctx->state[i] = v;\n"
    "}\n"
    "\n",
    "// The base learning rate slot has the loss's float dtype.\n"
    "static void set_float(MlcCtx *ctx, int i, double v) {\n"
    "  if (i < 0) return;\n"
    "  if (ctx->model->states[i].dtype == MLC_F64) *(double *)ctx->state[i] = v;\n"
    "  else *(float *)ctx->state[i] = (float)v;\n"
    "}\n"
    "\n",
    "static int predict(MlcCtx *ctx, int64_t b, const void *const *in, void *const *out);\n",
    DEVICE_MARK,
    "\n"
    "// One optimizer step over the batch: with accumulate K, K micro-batches of\n"
    "// b / K samples (a remainder of a partial last batch is left out). Without\n"
    "// the forward output among train_step's results, training accuracy comes\n"
    "// from predict on the batch before the update.\n"
    "static int train_step(MlcCtx *ctx, int64_t b, const void *const *in, void *const *out) {\n"
    "  ON_DEVICE(train_step);\n"
    "  if (b < ACC) {\n"
    "    snprintf(ctx->err, sizeof ctx->err, \"batch %lld is smaller than accumulate %d\", (long long)b, ACC);\n"
    "    return MLC_ERROR;\n"
    "  }\n"
    "  if (!STEP_OUT && HAS_LABEL && out[3]) {\n"
    "    void *pout[1] = {out[3]};\n"
    "    if (predict(ctx, b, in, pout) != MLC_OK) return MLC_ERROR;\n"
    "  }\n"
    "  int64_t mb = b / ACC, dims[MLC_MAX_RANK * NIN * ACC];\n"
    "  const void *args[NIN * ACC];\n"
    "  fill_dims(dims, NIN * ACC, mb, ctx->syms);\n"
    "  for (int k = 0; k < ACC; k++)\n"
    "    for (int i = 0; i < NIN; i++) args[k * NIN + i] = (const char *)in[i] + (size_t)(k * mb) * sample_bytes(i, ctx->syms);\n"
    "  set_i64(ctx, STEP_SLOT, ctx->step);\n"
    "  set_i64(ctx, SPE_SLOT, ctx->steps_per_epoch > 0 ? ctx->steps_per_epoch : 1);\n"
    "  set_i64(ctx, TOTAL_SLOT, ctx->total_steps > 0 ? ctx->total_steps : 1);\n"
    "  set_float(ctx, LR_SLOT, ctx->lr);\n"
    "  // the program's results: loss, grad norm, lr, the loss's auxiliary values, the\n"
    "  // loss scaler's values (scale, overflow, skipped steps), the forward output\n"
    "  void *outs[4 + NAUX + NSCALER] = {out[0], out[1], out[2]};\n"
    "  for (int i = 0; i < NAUX + NSCALER; i++) outs[3 + i] = out[4 + i];\n"
    "  if (STEP_OUT)\n"
    "    outs[3 + NAUX + NSCALER] = out[3] ? out[3] : (char *)ctx->scratch + align64(train_scratch(dims));\n"
    "  // the checked variant (unfused; its check kernels use no scratch) runs in the same scratch\n"
    "  if (ctx->check_finite)\n"
    "    return run(ctx, TRAIN_CHECKED_FN, train_state, NTRAIN_STATE, dims, args, outs, ctx->scratch, ctx->step_seed);\n"
    "  return run(ctx, TRAIN_FN, train_state, NTRAIN_STATE, dims, args, outs, ctx->scratch, ctx->step_seed);\n"
    "}\n"
    "\n",
    "// The loss and the forward output; a loss that does not call forward\n"
    "// leaves the output to predict.\n"
    "static int eval(MlcCtx *ctx, int64_t b, const void *const *in, void *const *out) {\n"
    "  if (!EVAL_OUT && out[1]) {\n"
    "    void *pout[1] = {out[1]};\n"
    "    if (predict(ctx, b, in, pout) != MLC_OK) return MLC_ERROR;\n"
    "  }\n"
    "  ON_DEVICE(eval);\n"
    "  int64_t dims[MLC_MAX_RANK * NIN];\n"
    "  fill_dims(dims, NIN, b, ctx->syms);\n"
    "  return run(ctx, EVAL_FN, eval_state, NEVAL_STATE, dims, in, out, ctx->scratch, 0);\n"
    "}\n"
    "\n",
    "static int predict(MlcCtx *ctx, int64_t b, const void *const *in, void *const *out) {\n"
    "  ON_DEVICE(predict);\n"
    "  int64_t dims[MLC_MAX_RANK * NIN];\n"
    "  fill_dims(dims, NFWD, b, ctx->syms);\n"
    "  return run(ctx, PREDICT_FN, predict_state, NPREDICT_STATE, dims, in, out, ctx->scratch, 0);\n"
    "}\n\n",
    NULL};

static void prototypes(StrBuf *b, const char *cname, bool plateau) {
  const char *progs[] = {"train_step", "eval", "predict", "train_step_checked", "plateau_update"};
  for (int i = 0; i < 4 + plateau; i++) {
    sb_printf(b,
              "int32_t mlc_%s_k_%s(const int64_t *, void *const *, void *const *, void *const *, void *,\n"
              "    uint64_t, MlcPool *, const char **);\n",
              cname, progs[i]);
    sb_printf(b, "int64_t mlc_%s_k_%s_scratch_bytes(const int64_t *);\n", cname, progs[i]);
  }
  sb_putc(b, '\n');
}

static void descriptor(StrBuf *b, const Glue *g, int nsites) {
  const BuildUnit *u = g->u;
  const Recipe *r = &u->recipe;
  sb_printf(b, "const MlcModel mlc_model_%s = {\n", u->cname);
  sb_puts(b, "    .abi = MLC_ABI_VERSION,\n    .name = "), glue_c_str(b, u->model);
  sb_puts(b, ",\n    .hash = "), glue_c_str(b, u->hash);
  sb_puts(b, ",\n    .compiler = \"mlc " MLC_VERSION "\",\n    .source = "), glue_c_str(b, u->path);
  sb_printf(b, ",\n    .nstates = NSTATE,\n    .states = states,\n    .ninputs = NIN,\n    .inputs = inputs,\n");
  sb_printf(b, "    .n_forward_inputs = NFWD,\n    .num_out = NUM_OUT,\n    .output_is_prob = 0,\n");
  sb_printf(b, "    .out_classes = %lld,\n", (long long)g->out_classes);
  sb_printf(b, "    .nout_syms = NOUT_SYMS,\n    .out_syms = {");
  for (int k = 0; k < g->nout_syms; k++) sb_printf(b, "%s%d", k ? ", " : "", g->out_syms[k]);
  sb_printf(b, "%s},\n    .nsyms = %d,\n    .syms = sym_names,\n", g->nout_syms ? "" : "0", g->nsyms);
  sb_puts(b, "    .sym_max = sym_max,\n    .sym_max_what = sym_max_what,\n");
  sb_puts(b, "    .sym_min = sym_min,\n    .sym_min_what = sym_min_what,\n");
  sb_puts(b, "    .naux = NAUX,\n    .aux_names = aux_names,\n    .loss_scale = NSCALER > 0,\n");
  // batch: samples per train_step call, i.e. accumulate micro-batches of the recipe's batch
  sb_printf(b, "    .recipe = {.batch = %lld, .epochs = %lld, .seed = %lluull, .accumulate = ACC, .lr = ",
            (long long)(r->batch * r->opt.accumulate), (long long)r->epochs, (unsigned long long)r->seed);
  c_double(b, r->opt.lr);
  sb_puts(b, ",\n               .optimizer = "), glue_c_str(b, r->optimizer ? r->optimizer : "sgd");
  sb_puts(b, ", .schedule = "), glue_c_str(b, r->schedule ? r->schedule : "constant");
  sb_puts(b, ",\n               .nhyper = sizeof hyper / sizeof hyper[0], .hyper = hyper, .metric = ");
  glue_c_str(b, r->metric);
  sb_puts(b, ", .precision = ");
  glue_c_str(b, r->precision == DT_F32 ? NULL : dtype_name((DType)r->precision));
  sb_printf(b, "},\n    .nsites = %d,\n    .sites = sites,\n    .scratch_bytes = scratch_bytes,\n", nsites);
  sb_puts(b, "    .init = NULL, // the runtime fills state from the specs\n");
  sb_puts(b, "    .train_step = train_step,\n    .eval = eval,\n    .predict = predict,\n");
  sb_printf(b, "    .epoch_end = %s,\n", u->k_plateau ? "epoch_end" : "NULL");
  sb_printf(b, "    .device = %s,\n    .device_only = %d,\n};\n\n", u->cuda ? "&device" : "NULL", u->cuda && !u->cpu);
}

// The reduce-on-plateau schedule's per-epoch call (MlcModel.epoch_end):
// plateau_update(metric) -> (scale), the metric in the loss's float dtype.
static void epoch_end_wrapper(StrBuf *b, const BuildUnit *u) {
  DType dt = VEC_AT(u->plateau->params, IrNode, 0)->type->dtype;
  sb_printf(b,
            "static int epoch_end(MlcCtx *ctx, int64_t b, const void *const *in, void *const *out) {\n"
            "  ON_DEVICE(epoch_end);\n"
            "  (void)b;\n"
            "  int64_t dims[MLC_MAX_RANK] = {0};\n"
            "  if ((size_t)PLATEAU_SCRATCH(dims) > ctx->scratch_size) {\n"
            "    snprintf(ctx->err, sizeof ctx->err, \"plateau_update needs more scratch than allocated\");\n"
            "    return MLC_ERROR;\n"
            "  }\n"
            "  %s metric = (%s)*(const double *)in[0], scale = 0;\n"
            "  const void *args[1] = {&metric};\n"
            "  void *outs[1] = {&scale};\n"
            "  int rc = run(ctx, PLATEAU_FN, plateau_state, NPLATEAU_STATE, dims, args, outs, ctx->scratch, 0);\n"
            "  if (rc == MLC_OK && out && out[0]) *(double *)out[0] = (double)scale;\n"
            "  return rc;\n"
            "}\n\n",
            glue_c_type(dt), glue_c_type(dt));
}

bool glue_collect(Glue *g) {
  if (!collect_inputs(g)) return false;
  glue_ranges(g);
  return true;
}

// The symbols' names and limits, and the output's symbolic dims.
static void sym_tables(StrBuf *b, const Glue *g) {
  sb_puts(b, "static const char *const sym_names[] = {");
  for (int k = 0; k < g->nsyms; k++) sb_puts(b, k ? ", " : ""), glue_c_str(b, g->syms[k]);
  sb_printf(b, "%s};\nstatic const int64_t sym_max[] = {", g->nsyms ? "" : "NULL");
  for (int k = 0; k < g->nsyms; k++) sb_printf(b, "%s%lld", k ? ", " : "", (long long)g->sym_max[k]);
  sb_printf(b, "%s};\nstatic const char *const sym_max_what[] = {", g->nsyms ? "" : "0");
  for (int k = 0; k < g->nsyms; k++) sb_puts(b, k ? ", " : ""), glue_c_str(b, g->sym_max_what[k]);
  sb_printf(b, "%s};\nstatic const int64_t sym_min[] = {", g->nsyms ? "" : "0");
  for (int k = 0; k < g->nsyms; k++) sb_printf(b, "%s%lld", k ? ", " : "", (long long)g->sym_min[k]);
  sb_printf(b, "%s};\nstatic const char *const sym_min_what[] = {", g->nsyms ? "" : "0");
  for (int k = 0; k < g->nsyms; k++) sb_puts(b, k ? ", " : ""), glue_c_str(b, g->sym_min_what[k]);
  sb_printf(b, "%s};\nstatic const int out_syms[] = {", g->nsyms ? "" : "NULL");
  for (int k = 0; k < g->nout_syms; k++) sb_printf(b, "%s%d", k ? ", " : "", g->out_syms[k]);
  sb_printf(b, "%s};\nenum { NOUT_SYMS = %d };\n", g->nout_syms ? "" : "0", g->nout_syms);
  const LowerResult *lr = &g->u->lr;
  sb_puts(b, "static const char *const aux_names[] = {");
  for (int k = 0; k < lr->naux; k++) sb_puts(b, k ? ", " : ""), glue_c_str(b, lr->aux_names[k]);
  sb_printf(b, "%s};\nenum { NAUX = %d };\n", lr->naux ? "" : "NULL", lr->naux);
  sb_printf(b, "// loss scaling: train_step's results after the auxiliary values\nenum { NSCALER = %d };\n",
            g->u->recipe.opt.loss_scale != LSCALE_NONE ? MLC_SCALER_OUTPUTS : 0);
}

bool build_glue_source(StrBuf *b, const BuildUnit *u, bool with_main, bool with_api, char *err, size_t errlen) {
  Glue g = {.u = u, .err = err, .errlen = errlen};
  if (!glue_collect(&g)) return false;
  if (with_api && g.nsyms)
    return fail(&g, "--emit lib needs constant per-sample dims; symbol %s is bound from the data only by "
                "the generated program (--emit exe or obj)", g.syms[0]);
  const char *cn = u->cname;
  sb_printf(b, "// Generated by mlc %s from %s (model %s); do not edit.\n", MLC_VERSION, u->path, u->model);
  sb_puts(b, "#include <math.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
             "#include <string.h>\n\n");
  sb_puts(b, "#include \"mlc_rt.h\"\n\n");
  if (u->cpu) prototypes(b, cn, u->k_plateau != NULL);
  else glue_no_cpu(b);
  states_table(b, &g);
  inputs_table(b, &g);
  recipe_tables(b, &g);
  int nsites = sites_table(b, &g);
  int nt = glue_state_map(b, &g, u->k_train, "train");
  if (u->k_train_checked) { // the checked variant runs with train's state table
    StrBuf x = {0}, y = {0};
    glue_state_map(&x, &g, u->k_train, "t");
    glue_state_map(&y, &g, u->k_train_checked, "t");
    MLC_ASSERT(!strcmp(x.data, y.data));
    sb_free(&x), sb_free(&y);
  }
  int ne = glue_state_map(b, &g, u->k_eval, "eval");
  int np = glue_state_map(b, &g, u->k_predict, "predict");
  int nl = u->k_plateau ? glue_state_map(b, &g, u->k_plateau, "plateau") : 0;
  sym_tables(b, &g);
  sb_printf(b, "\nenum { NSTATE = %d, NIN = %d, NFWD = %d, NUM_OUT = %lld, ACC = %d, STEP_OUT = %d };\n",
            u->lr.module->params.len, g.nin, g.nfwd, (long long)g.num_out, u->recipe.opt.accumulate,
            u->step_has_out);
  sb_printf(b, "enum { NTRAIN_STATE = %d, NEVAL_STATE = %d, NPREDICT_STATE = %d, NPLATEAU_STATE = %d };\n",
            nt, ne, np, nl);
  bool label = false;
  for (int i = 0; i < g.nin; i++) label |= g.in[i].num_classes > 0;
  sb_printf(b, "enum { HAS_LABEL = %d };\n", label);
  sb_printf(b, "enum { EVAL_OUT = %d }; // eval returns the forward output\n",
            !u->eval || u->eval->outputs.len > 1);
  sb_printf(b, "enum { STEP_SLOT = %d, SPE_SLOT = %d, TOTAL_SLOT = %d, LR_SLOT = %d };\n",
            param_index(&g, "opt.step"), param_index(&g, "opt.steps_per_epoch"),
            param_index(&g, "opt.total_steps"), param_index(&g, "opt.base_lr"));
  const char *progs[] = {"TRAIN", "train_step", "EVAL", "eval", "PREDICT", "predict",
                         "TRAIN_CHECKED", "train_step_checked"};
  const char *plateau[] = {"PLATEAU", "plateau_update"};
  for (int i = 0; i < 8 + (u->k_plateau ? 2 : 0); i += 2) {
    const char **pr = i < 8 ? &progs[i] : plateau;
    if (!u->cpu) {
      sb_printf(b, "#define %s_FN no_cpu\n#define %s_SCRATCH no_cpu_scratch\n", pr[0], pr[0]);
      continue;
    }
    sb_printf(b, "#define %s_FN mlc_%s_k_%s\n", pr[0], cn, pr[1]);
    sb_printf(b, "#define %s_SCRATCH mlc_%s_k_%s_scratch_bytes\n", pr[0], cn, pr[1]);
  }
  sb_putc(b, '\n');
  if (u->cuda) glue_device_defs(b, &g);
  sb_puts(b, u->cuda ? "#define ON_DEVICE(fn) if (ctx->device) return fn##_dev(ctx, b, in, out)\n\n"
                     : "#define ON_DEVICE(fn) (void)0\n\n");
  for (int i = 0; wrappers[i]; i++) {
    if (wrappers[i] == DEVICE_MARK && u->cuda) glue_device_wrappers(b, &g);
    sb_puts(b, wrappers[i]);
  }
  if (u->k_plateau) epoch_end_wrapper(b, u);
  descriptor(b, &g, nsites);
  if (with_main)
    sb_printf(b, "int main(int argc, char **argv) { return mlc_main(argc, argv, &mlc_model_%s); }\n", cn);
  if (with_api) glue_api_source(b, &g);
  return true;
}
