#!/usr/bin/python3
"""gen.py: random valid dense and sequence models for the differential tests.

    gen.py SEED [--big]   -> a .model file on stdout

The same seed gives the same file. Its first line is `# fuzz: ARGS`, the
options test_e2e_agree runs it with (--batch, --seq). The space (see
docs/design/parity.md, "Differential fuzzing of dense and sequence models"):

* MLPs: 1-5 Linear layers of widths from WIDTHS, each followed by one of
  ACTS, optionally a LayerNorm, a Dropout, a residual add where the widths
  allow; a classifier (cross_entropy, with ignore_index and/or
  label_smoothing, reduction mean/sum/none-then-mean) or a regressor (mse,
  reduction mean/sum/none-then-mean or a mean over one dim).
* sequence models over i64[B, T] (T a constant, odd mostly, or symbolic):
  token + position embeddings, 1-2 pre-norm attention blocks (1-4 heads,
  causal or not) with a GELU feed-forward, a tied or separate head,
  cross_entropy over [B * T, V].
* from seed WIDE (1000) on, also: silu, elu, softplus, hardtanh; MLP inputs
  [B, L, in] (L = 2, 3; the losses over [B * L, ..]); a log_softmax head;
  bce_with_logits regressors.
* recipes: batch from BATCHES; sgd (momentum, nesterov, weight_decay),
  adam, adamw; constant/cosine/linear/exponential/multistep schedules with
  warmup; clip grad_norm; accumulate 1-3; a no-decay parameter group;
  precision f32/bf16/f16 (f16 with its dynamic loss scale, or a static one).

--big lifts the size budget (the long mode's rare 4097-wide layers).
"""
import random
import sys

WIDTHS = [1, 2, 7, 15, 16, 17, 63, 64, 65, 127, 257, 1000, 4097]
BATCHES = [1, 2, 3, 7, 64, 65, 129]
ACTS = ["relu", "gelu", "tanh", "sigmoid", "leaky_relu", "none"]
# seeds from WIDE on also draw these (earlier seeds keep their models)
WIDE = 1000
WIDE_ACTS = ACTS + ["silu", "elu", "softplus", "hardtanh"]


def width(r, big):
    w = r.choice(WIDTHS)
    while w == 4097 and not (big and r.random() < 0.3):
        w = r.choice(WIDTHS)
    return w


def act(r, name, e, rec):
    rec["act"] = name
    if name == "none":
        return e
    if name == "leaky_relu":
        rec["slope"] = r.choice(["0.01", "0.2"])
        return "leaky_relu(%s, slope = %s)" % (e, rec["slope"])
    return "%s(%s)" % (name, e)


def recipe(r, name, batch, params_b):
    lines = ["train %s {" % name, "  batch %d   epochs 2   seed %d" % (batch, r.randrange(100))]
    acc = r.choice([1, 1, 1, 2, 3])
    if acc > 1:
        lines.append("  accumulate %d" % acc)
    opt = r.choice(["sgd", "sgd", "adam", "adamw", "adamw"])
    if opt == "sgd":
        args = ["lr = %s" % r.choice(["0.01", "0.1"])]
        mom = r.choice([0, 0.9])
        if mom:
            args.append("momentum = 0.9")
            if r.random() < 0.5:
                args.append("nesterov = true")
            elif r.random() < 0.3:
                args.append("dampening = 0.1")
        if r.random() < 0.5:
            args.append("weight_decay = %s" % r.choice(["1e-4", "0.01"]))
    else:
        args = ["lr = %s" % r.choice(["1e-3", "1e-2"])]
        if r.random() < 0.5:
            args.append("weight_decay = %s" % r.choice(["0", "0.01", "0.1"]))
        if r.random() < 0.3:
            args.append("beta2 = 0.95")
    lines.append("  optimizer %s(%s)" % (opt, ", ".join(args)))
    if params_b and r.random() < 0.25:
        if opt == "sgd":
            lines.append('  group no_decay(match = "*.b", weight_decay = 0, lr_scale = 2)')
        else:
            lines.append('  group no_decay(match = "*.b", weight_decay = 0, beta1 = 0.8)')
    sch = r.choice(["constant", "cosine", "linear", "exponential", "multistep", None])
    if sch == "cosine":
        lines.append("  schedule cosine(warmup = %d steps, min_lr = 1e-5)" % r.choice([0, 2, 5]))
    elif sch == "linear":
        lines.append("  schedule linear(warmup = %d steps, end_lr = 0)" % r.choice([0, 3]))
    elif sch == "exponential":
        lines.append("  schedule exponential(gamma = 0.9)")
    elif sch == "multistep":
        lines.append("  schedule multistep(milestones = [1, 2], gamma = 0.5)")
    elif sch == "constant":
        lines.append("  schedule constant")
    if r.random() < 0.5:
        lines.append("  clip grad_norm = %s" % r.choice(["0.5", "1.0", "100.0"]))
    p = r.random()
    if p < 0.15:
        lines.append("  precision bf16")
    elif p < 0.25:
        lines.append("  precision f16")
        if r.random() < 0.3:
            lines.append("  loss_scale 128")
    lines.append("  metric loss")
    lines.append("}")
    return lines


def mlp(r, big, wide):
    budget = 6e8 if big else 4e7
    while True:
        n = r.randint(1, 5)
        ws = [width(r, big) for _ in range(n + 1)]
        batch = r.choice(BATCHES)
        cost = batch * sum(a * b for a, b in zip(ws, ws[1:]))
        if cost <= budget:
            break
    classify = r.random() < 0.6
    body, members = [], []
    for i in range(n):
        members.append("  fc%d = Linear(%d, %d)" % (i, ws[i], ws[i + 1]))
    last = n - 1
    spec = {"kind": "mlp", "ws": ws, "batch": batch, "layers": []}
    for i in range(n):
        e = "fc%d(h)" % i if i else "fc0(x)"
        rec = {"act": "none", "res": False, "ln": False, "drop": None}
        spec["layers"].append(rec)
        if i < last:
            e = act(r, r.choice(WIDE_ACTS if wide else ACTS), e, rec)
            if ws[i] == ws[i + 1] and i and r.random() < 0.5:
                e = "h + " + e
                rec["res"] = True
            if r.random() < 0.25:
                members.append("  ln%d = LayerNorm(%d)" % (i, ws[i + 1]))
                e = "ln%d(%s)" % (i, e)
                rec["ln"] = True
            if r.random() < 0.2:
                rec["drop"] = r.choice(["0.1", "0.5"])
                members.append("  drop%d = Dropout(%s)" % (i, rec["drop"]))
                e = "drop%d(%s)" % (i, e)
        body.append("    h = %s" % e)
    out = ws[-1]
    # wide: inputs [B, L, in] (Linear over leading dims), log_softmax heads, bce
    spec["rows"] = r.choice([1, 1, 2, 3]) if wide else 1
    spec["log_softmax"] = wide and classify and r.random() < 0.2
    body.append("    return %s" % ("log_softmax(h, dim = -1)" if spec["log_softmax"] else "h"))
    lead = "B" if spec["rows"] == 1 else "B, %d" % spec["rows"]
    flat = "B" if spec["rows"] == 1 else "B * %d" % spec["rows"]
    fwd = "forward(x)" if spec["rows"] == 1 else "reshape(forward(x), [%s, %d])" % (flat, out)
    head = ["model Fuzz {"] + members + [""]
    head.append("  forward(x: f32[%s, %d]) -> f32[%s, %d] {" % (lead, ws[0], lead, out))
    head += body + ["  }", ""]
    if classify:
        opts = []
        if r.random() < 0.3 and out >= 7 and batch >= 7:
            opts.append("ignore_index = 0")
        elif r.random() < 0.2:
            opts.append("ignore_index = -100")
        if r.random() < 0.3:
            opts.append("label_smoothing = %s" % r.choice(["0.1", "0.5"]))
        red = r.choice(["mean", "mean", "sum", "none"])
        spec["loss"] = {"kind": "ce", "opts": list(opts), "red": red}
        if red != "mean":
            opts.append('reduction = "%s"' % red)
        ce = "cross_entropy(%s, %s%s)" % (fwd, "y" if spec["rows"] == 1 else "reshape(y, [%s])" % flat,
                                          "".join(", " + o for o in opts))
        if red == "none":
            ce = "mean(%s)" % ce
        head += ["  loss(x: f32[%s, %d], y: i32[%s]) -> f32 {" % (lead, ws[0], lead), "    return " + ce, "  }"]
    else:
        red = r.choice(["mean", "mean", "sum", "none", "dim"])
        fn = "bce_with_logits" if wide and r.random() < 0.3 else "mse"
        spec["loss"] = {"kind": fn, "red": red}
        t = "t" if spec["rows"] == 1 else "reshape(t, [%s, %d])" % (flat, out)
        if red in ("mean", "sum"):
            e = '%s(%s, %s%s)' % (fn, fwd, t, "" if red == "mean" else ', reduction = "sum"')
        elif red == "none":
            e = 'mean(%s(%s, %s, reduction = "none"))' % (fn, fwd, t)
        else:
            spec["loss"]["dim"] = r.choice([0, 1])
            e = 'sum(mean(%s(%s, %s, reduction = "none"), dim = %d))' % (fn, fwd, t, spec["loss"]["dim"])
        tt = "f32[%s, %d]" % (lead, out)
        head += ["  loss(x: f32[%s, %d], t: %s) -> f32 {" % (lead, ws[0], tt), "    return " + e, "  }"]
    head.append("}")
    spec["recipe"] = recipe(r, "Fuzz", batch, True)
    return "--batch %d" % batch, head + [""] + spec["recipe"], spec


ATTN = """block Attention(d, heads) {
  query = Linear(d, d)
  key = Linear(d, d)
  value = Linear(d, d)
  proj = Linear(d, d)

  forward(x: f32[B, T, d]) -> f32[B, T, d] {
    flat = reshape(x, [B * T, d])
    q = transpose(reshape(query(flat), [B, T, heads, d / heads]), 1, 2)
    k = transpose(reshape(key(flat), [B, T, heads, d / heads]), 1, 2)
    v = transpose(reshape(value(flat), [B, T, heads, d / heads]), 1, 2)
    att = q @ k.T / sqrt(d / heads)
    %s
    y = transpose(att @ v, 1, 2)
    return reshape(proj(reshape(y, [B * T, d])), [B, T, d])
  }
}
"""


def seq(r, big):
    d = r.choice([2, 8, 16, 17, 64] + ([127] if big else []))
    heads = r.choice([h for h in (1, 2, 4) if d % h == 0])
    vocab = r.choice([7, 17, 65, 257] + ([1000] if big else []))
    sym = r.random() < 0.4
    t = r.choice([1, 3, 5, 7, 9, 17])
    batch = r.choice([b for b in BATCHES if b * t * d * max(d, vocab) <= (4e7 if big else 4e6)] or [1])
    nl = r.choice([1, 1, 2])
    causal = r.random() < 0.7
    soft = "att = softmax(where(causal_mask(T), att, -1e9), dim = -1)" if causal else "att = softmax(att, dim = -1)"
    tdim = "T" if sym else str(t)
    lines = [ATTN.replace("%s", soft).rstrip().replace("[B, T", "[B, T"), "", "model Fuzz {",
             "  tok = Embedding(%d, %d)" % (vocab, d), "  pos = Embedding(%d, %d)" % (t, d)]
    for i in range(nl):
        lines += ["  ln%da = LayerNorm(%d)" % (i, d), "  attn%d = Attention(%d, %d)" % (i, d, heads),
                  "  ln%db = LayerNorm(%d)" % (i, d), "  fc%d = Linear(%d, %d)" % (i, d, 4 * d),
                  "  pr%d = Linear(%d, %d)" % (i, 4 * d, d)]
    tied = r.random() < 0.5
    lines.append("  ln_f = LayerNorm(%d)" % d)
    if not tied:
        lines.append("  head = Linear(%d, %d)" % (d, vocab))
    if r.random() < 0.3:
        lines.append("  drop = Dropout(0.1)")
        dr = "drop(%s)"
    else:
        dr = "%s"
    lines += ["", "  forward(idx: i64[B, %s]) -> f32[B, %s, %d] {" % (tdim, tdim, vocab),
              "    h = %s" % (dr % "tok(idx) + embedding(arange(%s), pos.w)" % tdim)]
    for i in range(nl):
        lines += ["    h = h + attn%d(ln%da(h))" % (i, i),
                  "    h = h + pr%d(%s(fc%d(ln%db(h))))" % (i, r.choice(["gelu", "relu"]), i, i)]
    lines += ["    h = ln_f(h)", "    return %s" % ("h @ tok.w.T" if tied else "head(h)"), "  }", ""]
    opts = []
    if r.random() < 0.3 and vocab >= 7 and batch * t >= 7:
        opts.append("ignore_index = 0")
    if r.random() < 0.3:
        opts.append("label_smoothing = 0.1")
    lines += ["  loss(idx: i64[B, %s], y: i64[B, %s]) -> f32 {" % (tdim, tdim),
              "    return cross_entropy(reshape(forward(idx), [B * %s, %d]), reshape(y, [B * %s])%s)"
              % (tdim, vocab, tdim, "".join(", " + o for o in opts)), "  }", "}", ""]
    return "--batch %d%s" % (batch, " --seq %d" % t if sym else ""), lines + recipe(r, "Fuzz", batch, True), None


def generate_spec(seed, big=False):
    """The model's text and, for an MLP, its structure (torch_check.py's twin)."""
    r = random.Random(seed)
    args, lines, spec = seq(r, big) if r.random() < 0.35 else mlp(r, big, seed >= WIDE)
    return "# fuzz: %s\n# gen.py %d%s\n" % (args, seed, " --big" if big else "") + "\n".join(lines) + "\n", spec


def generate(seed, big=False):
    return generate_spec(seed, big)[0]


if __name__ == "__main__":
    sys.stdout.write(generate(int(sys.argv[1]), "--big" in sys.argv[2:]))
