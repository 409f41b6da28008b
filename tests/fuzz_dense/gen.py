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

* from seed EXT (100000) on, also (from a second generator, so the rest
  of the model stays the seed's): an EXT_OPS op after some hidden layers
  (softmax, norms and reductions, slices and concats, params of their
  own, batch_norm, noise), a SEQ_EXT_OPS op after some sequence blocks,
  and ext_recipe's options (freeze, a group of one
  weight, the step schedule, loss scales of their own).

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
# seeds from EXT on also draw, from a second generator (so that the draws
# above stay those of the seed), an extra width-keeping op after a hidden
# layer's activation (EXT_OPS) and more recipe options (ext_recipe)
EXT = 100000
# name: the lines that map h (f32[.., w]) to h, {w} the width, {i} the layer,
# {lead} the leading dims; "members" the params and buffers it needs
EXT_OPS = {
    "softmax": ["h = softmax(h, dim = -1)"],
    "log_sigmoid": ["h = log_sigmoid(h)"],
    "clamp": ["h = clamp(h, -0.5, 0.5)"],
    "abs": ["h = abs(h)"],
    "center": ["h = h - mean(h, dim = -1, keepdim = true)"],
    "maxnorm": ["h = h / (max(abs(h), dim = -1, keepdim = true) + 1.0)"],
    "minshift": ["h = h - min(h, dim = -1, keepdim = true)"],
    "where": ["h = where(h > 0, h, 0.5 * h)"],
    "rms": ["h = h * rsqrt(mean(h * h, dim = -1, keepdim = true) + 1e-5)"],
    "smooth": ["h = sqrt(h * h + 1.0) - exp(clamp(h, -3, 3)) * 0.1"],
    "pow": ["h = (abs(h) + 0.5) ** 1.5"],
    "detach": ["h = h * stop_gradient(sigmoid(h))"],
    "scale": ["h = h * s{i}"],
    "matmul": ["h = h @ m{i}"],
    "matmul_t": ["h = h @ m{i}.T"],
    "reuse": ["h = fc{i}(tanh(h))"],  # the layer's Linear (square) called twice
    "rotate": ["h = concat([slice(h, -1, {a}, {w}), slice(h, -1, 0, {a})], dim = -1)"],
    "evenodd": ["h = concat([slice(h, -1, 0, {w}, 2), slice(h, -1, 1, {w}, 2)], dim = -1)"],
    "rowmix": ["h = h + mean(h, dim = 1, keepdim = true)"],
    "batch_norm": ["h = batch_norm(h, bn{i}_w, bn{i}_b, bn{i}_rm, bn{i}_rv)"],
    "noise": ["h = h + 0.1 * randn([{lead}, {w}])"],
    "mask": ["h = h * cast(rand([{lead}, {w}]) >= 0.25, f32)"],
}
# the sequence models' (seeds from EXT on, after a block): ops over h:
# f32[B, T, d] along T (a token shift by slices, for T >= 2; the mean, max
# and softmax over T) and a permuted relu
SEQ_EXT_OPS = {
    "shift": "h = concat([slice(h, 1, 0, 1), slice(h, 1, 0, -1)], dim = 1)",
    "tmean": "h = h - mean(h, dim = 1, keepdim = true)",
    "tmax": "h = h + max(h, dim = 1, keepdim = true)",
    "tsoft": "h = h * softmax(h, dim = 1)",
    "perm": "h = permute(relu(permute(h, [2, 0, 1])), [1, 2, 0])",
}
EXT_MEMBERS = {
    "scale": ["  param s{i}: f32 init constant(0.5)"],
    "matmul": ["  param m{i}: f32[{w}, {w}] init normal(0, {std})"],
    "matmul_t": ["  param m{i}: f32[{w}, {w}] init normal(0, {std})"],
    "batch_norm": ["  param bn{i}_w: f32[{w}] init ones", "  param bn{i}_b: f32[{w}] init zeros",
                   "  buffer bn{i}_rm: f32[{w}] init zeros", "  buffer bn{i}_rv: f32[{w}] init ones"],
}


def ext_op(r2, w, rows, batch, square=False, const=False):
    """An EXT_OPS name that fits a hidden layer of width w, or None."""
    if r2.random() < 0.5:
        return None
    names = [n for n in EXT_OPS
             if not (n in ("rotate", "evenodd") and w < 2)
             and not (n == "rowmix" and rows == 1)
             and not (n in ("matmul", "matmul_t") and w > 257)
             and not (n == "reuse" and not square)
             # LayerNorm(1)'s output is its bias exactly (0 at first), where
             # PyTorch's rounding leaves noise: no kink at 0 there
             and not (const and n in ("where", "abs", "pow", "maxnorm", "minshift"))
             # batch norm: [N, C] only, and one value per channel makes the
             # running variance's unbiased update 0 / 0
             and not (n == "batch_norm" and (rows != 1 or batch < 2))]
    return r2.choice(names)


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


def recipe(r, name, batch, params_b, ext=None):
    """The train block's lines. ext (seeds from EXT on): {"r2": the second
    generator, "freeze": {instance path that may be frozen: what to freeze
    instead where a group matches "*.b"}, "last": a weight that may get a
    group of its own}, for ext_recipe's options."""
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
        if ext and ext["r2"].random() < 0.3:
            args.append("eps = %s" % ext["r2"].choice(["1e-6", "0.1"]))
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
    if ext:
        ext_recipe(ext, lines, opt, args)
    lines.append("  metric loss")
    lines.append("}")
    return lines


def ext_recipe(ext, lines, opt, args):
    """Seeds from EXT on: freeze an instance (or, where a group matches its
    bias, its weight), a group of its own for the last layer's weight
    (sgd: momentum, nesterov; adam: beta2, eps; or lr), the step schedule
    where none was drawn, a dynamic loss scale's own arguments or a static
    scale at any precision."""
    r2 = ext["r2"]
    grouped = any(l.startswith("  group") for l in lines)
    frozen = None
    if ext["freeze"] and r2.random() < 0.3:
        frozen = r2.choice(sorted(ext["freeze"]))
        frozen = ext["freeze"][frozen] if grouped else frozen
        lines.append("  freeze %s" % frozen)
    if ext.get("last") and not (frozen and (ext["last"] + ".").startswith(frozen + ".")) and r2.random() < 0.3:
        if opt == "sgd":  # nesterov needs momentum and no dampening, in the group as merged
            kw = ["lr = 0.05", "weight_decay = 0.1"]
            if "nesterov = true" in args:
                kw += ["momentum = 0.5", "nesterov = false, dampening = 0.5"]
            elif "dampening = 0.1" in args:
                kw += ["momentum = 0", "dampening = 0, nesterov = true"]
            elif "momentum = 0.9" in args:
                kw += ["nesterov = true", "dampening = 0.5", "momentum = 0"]
            else:
                kw += ["momentum = 0.5, nesterov = true", "momentum = 0.5, dampening = 0.5"]
            kw = r2.choice(kw)
        else:
            kw = r2.choice(["beta2 = 0.9, eps = 1e-4", "lr = 0.002", "weight_decay = 0.5", "beta1 = 0"])
        lines.append('  group last(match = "%s", %s)' % (ext["last"], kw))
    if not any(l.startswith("  schedule") for l in lines) and r2.random() < 0.5:
        lines.append("  schedule step(step_size = 1, gamma = 0.5)")
    if not any(l.startswith("  loss_scale") for l in lines) and r2.random() < 0.3:
        f16 = "  precision f16" in lines
        lines.append("  loss_scale %s" % (r2.choice(["dynamic(init_scale = 1024, growth_interval = 1)",
                                                     "dynamic(init_scale = 3e38, backoff_factor = 0.25)"])
                                          if f16 else r2.choice(["64", "dynamic(growth_interval = 2)"])))


def ext_layers(r2, spec, members, body, ext_at):
    """Draw each hidden layer's EXT_OPS op (spec's layers get "ext" and
    "fmt") and insert its line after the layer's (from the last, so that
    ext_at's indices stay right)."""
    ws, rows, batch = spec["ws"], spec["rows"], spec["batch"]
    lead = "B" if rows == 1 else "B, %d" % rows
    for i, rec in enumerate(spec["layers"][:-1]):
        w = ws[i + 1]
        rec["ext"] = ext_op(r2, w, rows, batch, ws[i] == w, rec["ln"] and w == 1)
        if rec["ext"]:
            rec["fmt"] = dict(i=i, w=w, a=r2.randint(1, w - 1) if w >= 2 else 0, lead=lead,
                              std="%.4g" % (1 / w ** 0.5))
            members += [m.format(**rec["fmt"]) for m in EXT_MEMBERS.get(rec["ext"], [])]
    for i in reversed(range(len(spec["layers"]) - 1)):
        rec = spec["layers"][i]
        if rec.get("ext"):
            body[ext_at[i]:ext_at[i]] = ["    " + l.format(**rec["fmt"]) for l in EXT_OPS[rec["ext"]]]


def mlp(r, big, wide, r2=None):
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
    ext_at = []  # where each layer's line ends in body
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
        ext_at.append(len(body))
    out = ws[-1]
    # wide: inputs [B, L, in] (Linear over leading dims), log_softmax heads, bce
    spec["rows"] = r.choice([1, 1, 2, 3]) if wide else 1
    spec["log_softmax"] = wide and classify and r.random() < 0.2
    if r2:
        ext_layers(r2, spec, members, body, ext_at)
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
    ext = r2 and {"r2": r2, "freeze": {"fc%d" % i: "fc%d.w" % i for i in range(n)}, "last": "fc%d.w" % (n - 1)}
    spec["recipe"] = recipe(r, "Fuzz", batch, True, ext)
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


def seq(r, big, r2=None):
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
        if r2 and r2.random() < 0.5:
            # a shift at T = 1 slices no rows: sema refuses an empty slice
            # (and a built program data that makes one)
            lines.append("    " + SEQ_EXT_OPS[r2.choice([o for o in sorted(SEQ_EXT_OPS) if o != "shift" or t >= 2])])
    lines += ["    h = ln_f(h)", "    return %s" % ("h @ tok.w.T" if tied else "head(h)"), "  }", ""]
    opts = []
    if r.random() < 0.3 and vocab >= 7 and batch * t >= 7:
        opts.append("ignore_index = 0")
    if r.random() < 0.3:
        opts.append("label_smoothing = 0.1")
    lines += ["  loss(idx: i64[B, %s], y: i64[B, %s]) -> f32 {" % (tdim, tdim),
              "    return cross_entropy(reshape(forward(idx), [B * %s, %d]), reshape(y, [B * %s])%s)"
              % (tdim, vocab, tdim, "".join(", " + o for o in opts)), "  }", "}", ""]
    return "--batch %d%s" % (batch, " --seq %d" % t if sym else ""), lines + recipe(r, "Fuzz", batch, True, r2 and {
        "r2": r2, "freeze": {"pos": "pos", "ln_f": "ln_f", "attn0": "attn0.query.w", "attn0.query": "attn0.query.w"}, "last": "fc0.w"}), None


def generate_spec(seed, big=False):
    """The model's text and, for an MLP, its structure (torch_check.py's twin)."""
    r = random.Random(seed)
    r2 = random.Random(seed ^ 0xE47) if seed >= EXT else None
    args, lines, spec = seq(r, big, r2) if r.random() < 0.35 else mlp(r, big, seed >= WIDE, r2)
    return "# fuzz: %s\n# gen.py %d%s\n" % (args, seed, " --big" if big else "") + "\n".join(lines) + "\n", spec


def generate(seed, big=False):
    return generate_spec(seed, big)[0]


if __name__ == "__main__":
    sys.stdout.write(generate(int(sys.argv[1]), "--big" in sys.argv[2:]))
