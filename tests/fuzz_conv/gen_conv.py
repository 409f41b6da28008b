#!/usr/bin/python3
"""gen_conv.py — random convolutional models for the differential tester.

gen(seed) returns (source, cfg): the text of a valid .model file and a dict
(the batch size, whether to try --conv winograd and --precision bf16, the
layers drawn) deterministic from the seed (Python's random.Random(seed); no
other state). The space (docs/design/testing.md "Convolution fuzzing"):

  * 1-4 convolutions, each a prelude Conv2d(cin, cout, k, ...) or, about a
    fifth of the time, a bare conv2d over params of its own with a
    non-square kernel and pair strides, paddings and dilations;
  * channels from CHANNELS (513 rarely), kernel 1/3/5 (2 and 4 in the
    non-square ones), stride 1/2, padding 0..2, dilation 1/2, groups that
    divide both channel counts (depthwise among them);
  * batch norm sometimes, then relu / leaky_relu / gelu / none, sometimes a
    residual add where the shapes allow;
  * pools: max 2x2 stride 2 on a relu'd conv output (the pool's picks path;
    most often, on even and odd planes; sometimes with an average pool of
    the same output added, a second reader), max 3 stride 2, average with
    padding, none;
  * input planes 1x1 .. 64x64, odd and non-square, 1-3 input channels
    sets; batch from BATCHES (the recipe's batch and the tester's);
  * a flatten and a Linear to 2..10 classes, cross entropy; or, a fifth of
    the time, symbolic planes (x: f32[B, C, H, W], the tester's --dim
    giving H and W their drawn sizes) and a mean over the plane before the
    Linear.

Seeds from EXT (100000) on also draw, from a third generator, the
activations, pools, concat and transpose of EXT_ACTS / draw_ext_pool and
a recipe of their own (ext_recipe; cfg "f16", "frozen", "steps" 2).

A work budget (multiply-adds per sample times the batch) keeps each model
to seconds in the reference interpreter; a draw over it shrinks the batch,
then is drawn again.

Usage: gen_conv.py SEED [OUT.model]   (prints the model, or writes it and
prints the cfg as one line of JSON)
"""
import json
import random
import sys

CHANNELS = [1, 2, 3, 7, 16, 17, 31, 32, 64, 96, 129, 200]
# seeds from EXT on also draw, from a third generator (the first two's
# draws stay the seed's): more activations, pools with pair kernels and
# padding, a transpose of the plane, a concat of h and relu(-h) over the
# channels, and a recipe of their own (ext_recipe: optimizers, accumulate,
# clipping, freeze, groups, schedules, f16), checked over 2 steps
EXT = 100000
EXT_ACTS = {"silu": "silu({0})", "sigmoid": "sigmoid({0})", "tanh": "tanh({0})", "elu": "elu({0})",
            "hardtanh": "hardtanh({0}, lo = -0.5, hi = 0.5)"}
BATCHES = [1, 2, 7, 64, 65]
BUDGET = 20_000_000  # multiply-adds of one forward, all samples


def out_size(n, k, s, p, d):
    return (n + 2 * p - d * (k - 1) - 1) // s + 1


def reads_input(n, k, s, p, d, no):
    """Whether some output position's window meets the input (not only
    padding). A conv of padding alone is constant over its plane: batch
    norm after it divides 0 by sqrt(eps) and a relu after that sits
    exactly on its kink, where PyTorch's f32 and f64 gradients already
    differ."""
    return any(0 <= i * s - p + a * d < n for i in range(no) for a in range(k))


def pick_channels(r):
    if r.random() < 0.02:
        return 513
    return r.choice(CHANNELS)


def common_groups(r, cin, cout):
    gs = [g for g in (2, 3, 4, 7, 8, 16, 17, 31, 32) if cin % g == 0 and cout % g == 0]
    if cin == cout and cin > 1:
        gs.append(cin)  # depthwise
    return r.choice(gs) if gs and r.random() < 0.25 else 1


def draw_conv(r, cin, h, w, raw, small=False, cout=None):
    """A convolution's arguments on [cin, h, w] (to cout channels where
    given, to at most 7 where small), or None where none fits."""
    want = cout
    for _ in range(50):
        cout = want or (r.choice([1, 2, 3, 7]) if small else pick_channels(r))
        g = common_groups(r, cin, cout)
        if raw:
            kh, kw = r.choice([1, 2, 3, 4, 5]), r.choice([1, 2, 3, 5])
            sh, sw = r.choice([1, 1, 2]), r.choice([1, 1, 2])
            ph, pw = r.randint(0, 2), r.randint(0, 2)
            dh, dw = r.choice([1, 1, 1, 2]), r.choice([1, 1, 1, 2])
        else:
            kh = kw = r.choice([1, 3, 3, 3, 5])
            sh = sw = r.choice([1, 1, 2])
            ph = pw = r.randint(0, 2)
            dh = dw = r.choice([1, 1, 1, 2])
        ho, wo = out_size(h, kh, sh, ph, dh), out_size(w, kw, sw, pw, dw)
        if ho >= 1 and wo >= 1 and reads_input(h, kh, sh, ph, dh, ho) and reads_input(w, kw, sw, pw, dw, wo):
            return dict(cin=cin, cout=cout, g=g, k=(kh, kw), s=(sh, sw), p=(ph, pw), d=(dh, dw), ho=ho, wo=wo,
                        raw=raw, macs=cout * (cin // g) * kh * kw * ho * wo)
    return None


def draw_pool(r, h, w, act):
    """(text template, ho, wo) of a pool on [h, w], or None."""
    u = r.random()
    if act == "relu" and u < 0.6 or u < 0.3:
        if h >= 2 and w >= 2 and r.random() < 0.15:  # the pooled conv output has a second reader
            return ("max_pool2d({0}, 2) + 0.5 * avg_pool2d({0}, 2)", h // 2, w // 2)
        if h >= 2 and w >= 2:
            return ("max_pool2d({0}, 2)", h // 2, w // 2)
    u = r.random()
    if u < 0.3 and h >= 3 and w >= 3:
        return ("max_pool2d({0}, 3, stride = 2)", out_size(h, 3, 2, 0, 1), out_size(w, 3, 2, 0, 1))
    if u < 0.6 and h >= 2 and w >= 2:
        k, s = r.choice([(3, 1), (3, 2), (2, 2)])
        p = 1 if k == 3 else r.choice([0, 1])
        return ("avg_pool2d({0}, %d, stride = %d, padding = %d)" % (k, s, p),
                out_size(h, k, s, p, 1), out_size(w, k, s, p, 1))
    return None


def flattens(n, k, s, p, no):
    """Whether every window of a pool along a dim of n covers all of it."""
    return all(i * s - p <= 0 and i * s - p + k >= n for i in range(no))


def constant_pool(pool, h, w):
    """Whether pool (draw_pool's triple) on an [h, w] plane makes a plane
    of more than one position whose every window saw the whole input: an
    average pool's output is then constant, and a max pool's ties after a
    convolution of it pick by rounding (PyTorch and mlc apart)."""
    if not pool or pool[1] * pool[2] < 2:
        return False
    t = pool[0].replace(" ", "")
    nums = [int(v) for v in t.replace("[", ",").replace("]", ",").replace("=", ",").replace(")", ",").split(",")
            if v.isdigit()]
    k = nums[0:2] if t.count("[") else [nums[0]] * 2
    rest = nums[2:] if t.count("[") else nums[1:]
    if "stride" in t:
        s, rest = (rest[0:2], rest[2:]) if "stride=[" in t else ([rest[0]] * 2, rest[1:])
    else:
        s = k
    p = (rest[0:2] if "padding=[" in t else [rest[0]] * 2) if "padding" in t else [0, 0]
    return flattens(h, k[0], s[0], p[0], pool[1]) and flattens(w, k[1], s[1], p[1], pool[2])


def draw_ext_pool(r3, h, w):
    """(text template, ho, wo) of one of the pools draw_pool does not draw
    (pair kernels and strides, max with padding, stride 1), or None."""
    kh, kw = r3.choice([2, 3]), r3.choice([1, 2, 3])
    sh, sw = r3.choice([1, 2]), r3.choice([1, 2])
    ph, pw = r3.randint(0, kh // 2), r3.randint(0, kw // 2)
    ho, wo = out_size(h, kh, sh, ph, 1), out_size(w, kw, sw, pw, 1)
    if ho < 1 or wo < 1:
        return None
    fn = r3.choice(["max_pool2d", "avg_pool2d"])
    return ("%s({0}, [%d, %d], stride = [%d, %d], padding = [%d, %d])" % (fn, kh, kw, sh, sw, ph, pw), ho, wo)


def ext_recipe(r3, name, batch, seed, layers):
    """The train block of a seed from EXT on, whether it is f16, and the
    frozen path (or None)."""
    lines = ["train %s {" % name, "  batch %d epochs 1 seed %d" % (batch, seed % 1000)]
    if r3.random() < 0.3:
        lines.append("  accumulate %d" % r3.choice([2, 3]))
    opt = r3.choice(["sgd(lr = 0.01, momentum = 0.9)", "sgd(lr = 0.05, nesterov = true, momentum = 0.5, weight_decay = 0.01)",
                     "adam(lr = 1e-3)", "adamw(lr = 1e-3, weight_decay = 0.1)", "adam(lr = 1e-2, eps = 0.1, weight_decay = 0.01)"])
    lines.append("  optimizer " + opt)
    if r3.random() < 0.3:
        lines.append('  group nd(match = "*.b", weight_decay = 0, lr_scale = 0.5)')
    frozen = None
    if r3.random() < 0.3:
        frozen = r3.choice(["fc.w", "fc"] + [("w%d" if l["raw"] else "c%d.w") % i for i, l in enumerate(layers)])
        if frozen == "fc" and "  group" in lines[-1]:
            frozen = "fc.w"  # a frozen param cannot be in a group
        lines.append("  freeze %s" % frozen)
    lines.append("  schedule %s" % r3.choice(["constant", "cosine(warmup = 1 steps)", "step(step_size = 1, gamma = 0.5)",
                                              "linear(warmup = 0 steps, end_lr = 0)"]))
    if r3.random() < 0.4:
        lines.append("  clip grad_norm = %s" % r3.choice(["0.1", "1.0"]))
    f16 = r3.random() < 0.2
    if f16:
        lines.append("  precision f16")
        if r3.random() < 0.5:
            lines.append("  loss_scale %s" % r3.choice(["128", "dynamic(init_scale = 2 ** 20, growth_interval = 1)",
                                                         "dynamic(init_scale = 3e38, backoff_factor = 0.25)"]))
    lines.append("}")
    return lines, f16, frozen


def pair(v):
    return "[%d, %d]" % v


def gen(seed):
    r = random.Random(seed)
    while True:
        src, cfg = attempt(r, seed)
        if src:
            return src, cfg


def attempt(r, seed):
    # --conv winograd's predict is checked bit for bit against kir_run, whose
    # erf is libm's double erf rounded once, where the compiled code calls
    # erff (docs/design/llvm.md): one ulp apart now and then, so no gelu there.
    winograd, bf16 = r.random() < 0.3, r.random() < 0.2
    acts = ["relu", "relu", "relu", "leaky_relu", "leaky_relu" if winograd else "gelu", "none"]
    # draws added later come from r2, so that the seeds of seeds.txt keep their models
    r2 = random.Random(seed ^ 0x5EED)
    r3 = random.Random(seed ^ 0xC0DE) if seed >= EXT else None
    cin = r.choice([1, 1, 2, 3, 3, 7, 16])
    mode = r.random()
    big = mode < 0.1  # planes past 8192 positions (the bias-gradient fold's bound)
    wide = 0.1 <= mode < 0.15  # batch 1, a conv output past the 4 MiB scratch
    # symbolic planes: forward(x: f32[B, C, H, W]), the tester gives H and W
    # their drawn sizes (--dim); the schedule sees sizes it cannot bound, and
    # a mean over the plane (global average pooling) ends the convolutions
    sym = not big and not wide and r.random() < 0.2
    if big:
        cin = r.choice([1, 2, 3])
        h = r.choice([91, 96, 100, 128])
        w = r.choice([h, 65, 91, 128])
    elif wide:
        cin = r.choice([1, 2])
        h = w = r.choice([46, 48, 63, 64])
    elif r.random() < 0.15:
        h = w = r.choice([1, 2, 3])
    else:
        h = r.choice([4, 5, 7, 8, 9, 12, 13, 15, 16, 17, 24, 28, 31, 32, 33, 48, 64])
        w = h if r.random() < 0.7 else r.choice([5, 8, 11, 16, 20, 27, 32, 64])
    h0, w0, c0 = h, w, cin
    members, body, layers, macs = [], [], [], 0
    nconv = r.choice([1, 2]) if big or wide else r.choice([1, 2, 2, 3, 3, 4])
    c = cin
    for i in range(nconv):
        conv = draw_conv(r, c, h, w, r.random() < 0.2, small=big or wide and i > 0,
                         cout=r.choice([200, 513]) if wide and i == 0 else None)
        if conv and winograd and c >= 32 and r2.random() < 0.6:  # a conv --conv winograd takes
            p = r2.randint(0, 2)
            conv.update(k=(3, 3), s=(1, 1), d=(1, 1), p=(p, p), g=1, ho=h + 2 * p - 2, wo=w + 2 * p - 2)
            conv["macs"] = conv["cout"] * c * 9 * conv["ho"] * conv["wo"]
            if conv["ho"] < 1 or conv["wo"] < 1:
                conv = None
        if conv is None:
            break
        if wide and i == 0:  # stride 1, relu, the 2x2 pool: the pooled forward's unstored y
            conv.update(k=(3, 3), s=(1, 1), p=(1, 1), d=(1, 1), g=1, ho=h, wo=w, raw=False,
                        macs=conv["cout"] * c * 9 * h * w)
        if conv is None:
            break
        macs += conv["macs"]
        if conv["raw"]:
            kh, kw = conv["k"]
            members.append("param w%d: f32[%d, %d, %d, %d]" % (i, conv["cout"], c // conv["g"], kh, kw))
            members.append("param b%d: f32[%d] init zeros" % (i, conv["cout"]))
            call = "conv2d({x}, w%d, bias = b%d, stride = %s, padding = %s, dilation = %s, groups = %d)" % (
                i, i, pair(conv["s"]), pair(conv["p"]), pair(conv["d"]), conv["g"])
        else:
            members.append("c%d = Conv2d(%d, %d, %d, stride = %d, padding = %d, dilation = %d, groups = %d)" % (
                i, c, conv["cout"], conv["k"][0], conv["s"][0], conv["p"][0], conv["d"][0], conv["g"]))
            call = "c%d({x})" % i
        e = call.format(x="h")
        # batch norm of one value per channel is PyTorch's error (mlc's NaN variance)
        bn = r.random() < 0.25 and conv["ho"] * conv["wo"] >= 2
        if bn:
            members.append("bn%d = BatchNorm2d(%d)" % (i, conv["cout"]))
            e = "bn%d(%s)" % (i, e)
        act = "relu" if wide and i == 0 else r.choice(acts)
        # kir_run's transcendental functions are libm's double ones rounded
        # once (a Winograd seed's predict is compared bit for bit): none there
        if r3 and not winograd and not (wide and i == 0) and r3.random() < 0.3:
            act = r3.choice(sorted(EXT_ACTS))
            e = EXT_ACTS[act].format(e)
        elif act == "relu":
            e = "relu(%s)" % e
        elif act == "leaky_relu":
            e = "leaky_relu(%s, slope = 0.1)" % e
        elif act == "gelu":
            e = "gelu(%s)" % e
        residual = conv["cout"] == c and conv["ho"] == h and conv["wo"] == w and r.random() < 0.2
        if residual:
            e = "%s + h" % e
        c, h, w = conv["cout"], conv["ho"], conv["wo"]
        pool = draw_pool(r, h, w, act) if not residual or r.random() < 0.5 else None
        if wide and i == 0:
            pool = ("max_pool2d({0}, 2)", h // 2, w // 2)
        elif r3 and r3.random() < 0.3:
            pool = draw_ext_pool(r3, h, w) or pool
        if r3 and constant_pool(pool, h, w):
            pool = None
        if pool and pool[0].count("{0}") > 1:
            body.append("t%d = %s" % (i, e))
            e = pool[0].format("t%d" % i)
            h, w = pool[1], pool[2]
        elif pool:
            e = pool[0].format(e)
            h, w = pool[1], pool[2]
        crelu = perm = False
        # concat([h, relu(-h)]) over the channels, where h has negative
        # values (after relu or sigmoid the second half is all zeros: a
        # constant plane, batch norm's 0 / sqrt(eps) and a relu's kink)
        if r3 and r3.random() < 0.1 and 2 * c <= 400 and act not in ("relu", "sigmoid"):
            body.append("u%d = %s" % (i, e))
            e, c, crelu = "concat([u%d, relu(neg(u%d))], dim = 1)" % (i, i), 2 * c, True
        if r3 and r3.random() < 0.15:  # the plane transposed: [B, c, w, h]
            e, h, w, perm = "permute(%s, [0, 1, 3, 2])" % e, w, h, True
        body.append("h = %s    # [B, %d, %d, %d]" % (e, c, h, w))
        layers.append(dict(conv, bn=bn, act=act, residual=residual, pool=pool[0] if pool else None,
                           crelu=crelu, perm=perm))
    if not layers:
        return None, None
    classes = r.choice([2, 5, 10])
    feat = c if sym else c * h * w
    if feat > (600_000 if wide else 200_000):
        return None, None
    macs += feat * classes
    batch = 1 if wide else r.choice(BATCHES)
    if batch * macs > BUDGET and r.random() < 0.7:
        return None, None  # draw again: keep the large batches
    while batch > 1 and batch * macs > BUDGET:
        batch = {65: 7, 64: 7, 7: 2, 2: 1}[batch]
    if batch * macs > BUDGET:
        return None, None
    name = "FuzzConv%d" % seed
    shape = "f32[B, %d, H, W]" % c0 if sym else "f32[B, %d, %d, %d]" % (c0, h0, w0)
    lines = ["# generated by tests/fuzz_conv/gen_conv.py, seed %d" % seed, "model %s {" % name]
    lines += ["  " + m for m in members]
    lines.append("  fc = Linear(%d, %d)" % (feat, classes))
    lines.append("")
    lines.append("  forward(x: %s) -> f32[B, %d] {" % (shape, classes))
    lines.append("    h = x")
    lines += ["    " + b for b in body]
    lines.append("    return fc(mean(h, dim = [2, 3]))" if sym else "    return fc(flatten(h))")
    lines.append("  }")
    lines.append("  loss(x: %s, y: i32[B]) -> f32 {" % shape)
    lines.append("    return cross_entropy(forward(x), y)")
    lines.append("  }")
    lines.append("}")
    f16, frozen = False, None
    if r3:
        rec, f16, frozen = ext_recipe(r3, name, batch, seed, layers)
        lines += rec
        bf16 = bf16 and not f16
    else:
        lines.append("train %s {" % name)
        lines.append("  batch %d epochs 1 seed %d" % (batch, seed % 1000))
        lines.append("  optimizer sgd(lr = 0.01, momentum = 0.9)")
        lines.append("}")
    cfg = dict(f16=f16, steps=2 if r3 else 1, frozen=frozen, seed=seed, batch=batch, macs=macs, input=[c0, h0, w0], classes=classes, feat=feat, layers=layers, dims={"H": h0, "W": w0} if sym else {},
               winograd=winograd, bf16=bf16)
    return "\n".join(lines) + "\n", cfg


def main():
    seed = int(sys.argv[1])
    src, cfg = gen(seed)
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            f.write(src)
        print(json.dumps(cfg))
    else:
        sys.stdout.write(src)


if __name__ == "__main__":
    main()
