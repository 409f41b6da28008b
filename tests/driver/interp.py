#!/usr/bin/python3
"""interp.py - `mlc run --interp` as a debugging tool: weights, gradients, saved results, initial state.

    tests/driver/interp.py --mlc build/mlc torch|init|cli [--keep DIR]

Runs from the repository root; each suite is one ctest test (interp_torch,
interp_init, interp_cli):
  torch  examples/fashion_mlp.model from a state_dict PyTorch wrote
         (tests/parity/models.py's twin, saved with tests/parity/safetensors_np.py):
         `--entry loss_grad` gives PyTorch's loss and every parameter's
         gradient for the same batch within 1e-5 in f32 (F32 weights) and
         1e-9 under --f64 (F64 weights drawn in float64, which rounding to
         f32 would move by ~1e-8); every printed number reads back as the
         saved value bit for bit. Skipped (77) without torch.
  init   tests/driver/inits.model (every initialiser, a buffer, AdamW state,
         a plateau schedule, dropout) built into a program:
         `train --epochs 0 --checkpoint` and `--entry init --save` hold the
         same tensors, dtypes and bytes, with the recipe's seed and with
         --seed 3; the program's checkpoint loads as --weights (the module
         hash matches), a corrupted one and another model's (a one-layer
         model built here) are refused;
         the program's first logged step loss (dropout on) is the
         interpreter's train_step.loss within 1e-5.
  cli    --save as .safetensors, .npy and a directory round-trips through
         numpy under the printed names and dtypes; bad --save paths and bad
         weights files (missing, unknown, mis-shaped, wrong-dtype tensors,
         not safetensors) are refused naming the file and the tensor; an F64
         file loads into f32 parameters; loss_grad of a model without a loss
         is refused; a label outside the classes of a cross_entropy with
         ignore_index (computed per row) is refused, naming the file and
         element, while the ignore_index itself is accepted; --precision bf16 / f16 gives numpy's loss over rounded
         matmul operands (not the f32 one), and overrides a recipe's
         `precision`. Skipped (77) without numpy.
Prints `[PASS] name` or `[FAIL] name` with the reasons; exits 1 on a failure.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "parity"))

MLP = "examples/fashion_mlp.model"
INITS = os.path.join(HERE, "inits.model")

try:
    import numpy as np
    import safetensors_np
except ImportError as e:  # every suite reads safetensors and .npy with numpy
    np = None
    NUMPY_ERROR = str(e)


class Ctx:
    def __init__(self, mlc, tmp):
        self.mlc, self.tmp = mlc, tmp

    def path(self, name):
        return os.path.join(self.tmp, name)

    def mlc_run(self, *args):
        """(exit status, stdout, stderr) of `mlc run --interp ARGS`."""
        p = subprocess.run([self.mlc, "run", "--interp"] + list(args), capture_output=True, text=True,
                           timeout=300)
        return p.returncode, p.stdout, p.stderr

    def npy(self, name, array):
        np.save(self.path(name), array)
        return self.path(name)


def printed(out):
    """{name: (dtype text, shape, [number texts])} of mlc run's results."""
    res = {}
    for line in out.splitlines():
        m = re.match(r"^(\S+): (\w+)(?:\[([\d, ]+)\])? = \[(.*)\]$", line)
        if not m:
            raise AssertionError("not a result line: %r" % line[:120])
        shape = tuple(int(d) for d in m.group(3).split(", ")) if m.group(3) else ()
        res[m.group(1)] = (m.group(2), shape, m.group(4).split(", ") if m.group(4) else [])
    return res


def rel_err(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))


def expect_ok(why, what, rc, err):
    if rc != 0:
        why.append("%s: exit %d: %s" % (what, rc, err.strip()[:300]))
    return rc == 0


# ---- torch: loss and gradients against PyTorch ---------------------------------------------------
def torch_reference(torch, models, dtype, seed, x, y):
    """The state_dict (numpy, in dtype), loss and {path: grad} of a FashionMLP drawn in dtype."""
    torch.set_default_dtype(dtype)
    torch.manual_seed(seed)
    net = models.FashionMLP()
    torch.set_default_dtype(torch.float32)
    loss = net.loss(torch.from_numpy(x).to(dtype), torch.from_numpy(y))
    loss.backward()
    state = {k: v.detach().numpy().copy() for k, v in net.state_dict().items()}
    grads = {p: v.grad.numpy().copy() for p, v in net.named_parameters()}
    return state, float(loss.item()), grads


def check_printed_exact(why, out, saved, np_dtype):
    """Every printed number parses back to the saved value, bit for bit."""
    for name, (_, shape, nums) in printed(out).items():
        if name not in saved:
            why.append("printed %s is not in the saved file" % name)
            continue
        back = np.array([np.float64(v) for v in nums], np.float64).astype(np_dtype).reshape(shape)
        want = saved[name].astype(np_dtype)
        if back.tobytes() != want.tobytes():
            k = int(np.argmax(back.ravel() != want.ravel()))
            why.append("%s: printed %s reads back as %r, saved %r" % (name, nums[k], back.ravel()[k],
                                                                     want.ravel()[k]))


def torch_case(ctx, torch, models, mode):
    why = []
    f64 = mode == "f64"
    g = np.random.default_rng(7)
    x = g.random((16, 784), dtype=np.float32)
    y = g.integers(0, 10, 16).astype(np.int32)
    dtype = torch.float64 if f64 else torch.float32
    state, loss, grads = torch_reference(torch, models, dtype, 3, x, y)
    wpath = ctx.path("torch_%s.safetensors" % mode)
    safetensors_np.write(wpath, state)  # as PyTorch's state_dict: no metadata
    out = ctx.path("grads_%s.safetensors" % mode)
    args = [MLP, "--entry", "loss_grad", "--weights", wpath, "--input", "x=" + ctx.npy("x.npy", x),
            "--input", "y=" + ctx.npy("y.npy", y), "--save", out] + (["--f64"] if f64 else [])
    rc, stdout, err = ctx.mlc_run(*args)
    if not expect_ok(why, "mlc run", rc, err):
        return why
    saved, _ = safetensors_np.read(out)
    tol = 1e-9 if f64 else 1e-5
    want_names = {"loss_grad.loss"} | {"loss_grad." + p for p in grads}
    if set(saved) != want_names:
        why.append("results %s, expected %s" % (sorted(saved), sorted(want_names)))
        return why
    e = abs(float(saved["loss_grad.loss"]) - loss) / abs(loss)
    if e > tol:
        why.append("loss %r, PyTorch %r (relative error %.3g > %g)" % (float(saved["loss_grad.loss"]), loss, e, tol))
    worst = 0.0
    for p, gref in grads.items():
        got = saved["loss_grad." + p]
        if got.shape != gref.shape:
            why.append("%s: shape %s, PyTorch %s" % (p, got.shape, gref.shape))
            continue
        e = rel_err(got, gref)
        worst = max(worst, e)
        if e > tol:
            why.append("gradient of %s: error %.3g > %g" % (p, e, tol))
    want_dt = np.float64 if f64 else np.float32
    if any(v.dtype != want_dt for v in saved.values()):
        why.append("saved dtypes %s, expected %s" % (sorted({str(v.dtype) for v in saved.values()}), want_dt))
    check_printed_exact(why, stdout, saved, want_dt)
    print("    %s: largest gradient error %.3g (tolerance %g)" % (mode, worst, tol))
    return why


def suite_torch(ctx):
    try:
        import torch
        import models
    except ImportError as e:
        print("SKIP: PyTorch is not importable here (%s); the loss_grad parity check needs it" % e)
        sys.exit(77)
    yield "loss_grad from a PyTorch state_dict = PyTorch, f32", lambda: torch_case(ctx, torch, models, "f32")
    yield "loss_grad from a PyTorch state_dict = PyTorch, f64", lambda: torch_case(ctx, torch, models, "f64")


# ---- init: the compiled program's initial state ---------------------------------------------------
def build_inits(ctx):
    prog = ctx.path("inits")
    p = subprocess.run([ctx.mlc, "build", INITS, "-o", prog], capture_output=True, text=True, timeout=600)
    if p.returncode:
        raise AssertionError("mlc build %s: %s" % (INITS, p.stderr.strip()[:400]))
    g = np.random.default_rng(5)
    data = "%s,%s" % (ctx.npy("ix.npy", g.standard_normal((8, 6)).astype(np.float32)),
                      ctx.npy("iy.npy", (np.arange(8) % 3).astype(np.int32)))
    return prog, data


def program(prog, *args):
    p = subprocess.run([prog] + list(args), capture_output=True, text=True, timeout=300)
    if p.returncode:
        raise AssertionError("%s %s: %s" % (prog, " ".join(args), p.stderr.strip()[:300]))
    return p.stdout


def init_same(ctx, prog, data, seed):
    why = []
    ck, mine = ctx.path("ck%s.safetensors" % seed), ctx.path("init%s.safetensors" % seed)
    sargs = ["--seed", seed] if seed else []
    program(prog, "train", "--epochs", "0", "--checkpoint", ck, "--train-data", data, *sargs)
    rc, _, err = ctx.mlc_run(INITS, "--entry", "init", "--save", mine, *sargs)
    if not expect_ok(why, "mlc run --entry init", rc, err):
        return why
    a, meta = safetensors_np.read(ck)
    b, _ = safetensors_np.read(mine)
    if sorted(a) != sorted(b):
        why.append("states: program %s, interpreter %s" % (sorted(a), sorted(b)))
    for k in sorted(set(a) & set(b)):
        if a[k].dtype != b[k].dtype or a[k].shape != b[k].shape or a[k].tobytes() != b[k].tobytes():
            why.append("%s: program %s%s, interpreter %s%s, bytes %s" % (
                k, a[k].dtype, a[k].shape, b[k].dtype, b[k].shape,
                "equal" if a[k].tobytes() == b[k].tobytes() else "differ"))
    tn = a.get("mix.tn")
    if tn is None or tn.min() < -0.5 or tn.max() > 0.5:
        why.append("trunc_normal(std = 1.0, a = -0.5, b = 0.5) drew values outside [-0.5, 0.5]: %s"
                   % (None if tn is None else (float(tn.min()), float(tn.max()))))
    if meta.get("mlc.seed") != (seed or "11"):
        why.append("the program's checkpoint has seed %s" % meta.get("mlc.seed"))
    if not any(k.startswith("opt.") and k.endswith("exp_avg") for k in a) or "mix.stat" not in a:
        why.append("the model has no optimizer state or buffer to compare: %s" % sorted(a))
    return why


OTHER_MODEL = """model Other {
  head = Linear(6, 3)
  forward(x: f32[B, 6]) -> f32[B, 3] {
    return head(x)
  }
  loss(x: f32[B, 6], y: i32[B]) -> f32 {
    return cross_entropy(forward(x), y)
  }
}
"""


def init_weights(ctx, prog, data):
    """The program's checkpoint as --weights: accepted, and the same loss as the same seed."""
    why = []
    ck = ctx.path("ck3.safetensors")
    if not os.path.exists(ck):
        program(prog, "train", "--epochs", "0", "--checkpoint", ck, "--train-data", data, "--seed", "3")
    x, y = data.split(",")
    io = ["--entry", "loss", "--input", "x=" + x, "--input", "y=" + y]
    # --seed 3 in both: the loss draws dropout masks from the seed
    rc, from_ck, err = ctx.mlc_run(INITS, *io, "--weights", ck, "--seed", "3")
    expect_ok(why, "--weights the program's checkpoint", rc, err)
    rc, from_seed, err = ctx.mlc_run(INITS, *io, "--seed", "3")
    expect_ok(why, "--seed 3", rc, err)
    if from_ck != from_seed or not from_ck:
        why.append("loss from the checkpoint %r, from the seed %r" % (from_ck, from_seed))
    # another model's checkpoint: a small model of its own, built
    other = ctx.path("other.model")
    with open(other, "w") as f:
        f.write(OTHER_MODEL)
    p = subprocess.run([ctx.mlc, "build", other, "-o", ctx.path("other")], capture_output=True, text=True,
                       timeout=600)
    if p.returncode:
        return why + ["mlc build %s: %s" % (other, p.stderr.strip()[:300])]
    program(ctx.path("other"), "train", "--epochs", "0", "--checkpoint", ctx.path("other.safetensors"),
            "--train-data", data)
    tensors, meta = safetensors_np.read(ck)
    bad = dict(tensors)
    bad["mix.a"] = bad["mix.a"] + np.float32(1)
    safetensors_np.write(ctx.path("corrupt.safetensors"), bad, meta)
    for name, text in (("other.safetensors", "checkpoint of another model"),
                       ("corrupt.safetensors", "corrupted")):
        rc, _, err = ctx.mlc_run(INITS, *io, "--weights", ctx.path(name))
        if rc != 1 or text not in err or ctx.path(name) not in err:
            why.append("%s: exit %d, %r (expected 1 and %r)" % (name, rc, err.strip()[:200], text))
    return why


def init_dropout(ctx, prog, data):
    """The first train_step draws the program's dropout masks: the same loss."""
    why = []
    metrics = ctx.path("metrics.jsonl")
    program(prog, "train", "--max-steps", "1", "--no-shuffle", "--log-every", "1", "--metrics", metrics,
            "--train-data", data)
    with open(metrics) as f:
        steps = [json.loads(l) for l in f if '"loss"' in l]
    x, y = data.split(",")
    rc, out, err = ctx.mlc_run(INITS, "--entry", "train_step", "--input", "x=" + x, "--input", "y=" + y)
    if not expect_ok(why, "--entry train_step", rc, err) or not steps:
        return why + ([] if steps else ["no step in %s" % metrics])
    mine = float(printed(out)["train_step.loss"][2][0])
    theirs = float(steps[0]["loss"])
    if abs(mine - theirs) > 1e-5 * abs(theirs):
        why.append("train_step.loss %r, the program's first step %r" % (mine, theirs))
    # without dropout's masks the loss is another one: the check can tell
    rc, out, _ = ctx.mlc_run(INITS, "--entry", "loss", "--input", "x=" + x, "--input", "y=" + y, "--seed", "4")
    if rc == 0 and abs(float(printed(out)["loss"][2][0]) - theirs) < 1e-4:
        why.append("another seed gives the same loss: dropout does not show in it")
    return why


def suite_init(ctx):
    state = {}

    def built():
        if "prog" not in state:
            state["prog"], state["data"] = build_inits(ctx)
        return state["prog"], state["data"]

    yield "init = the program's initial state, recipe seed", lambda: init_same(ctx, *built(), "")
    yield "init = the program's initial state, --seed 3", lambda: init_same(ctx, *built(), "3")
    yield "the program's checkpoint as --weights; others refused", lambda: init_weights(ctx, *built())
    yield "train_step draws the program's first dropout masks", lambda: init_dropout(ctx, *built())


# ---- cli: --save and bad weights ------------------------------------------------------------------
def mlp_io(ctx):
    g = np.random.default_rng(2)
    return ["--input", "x=" + ctx.npy("cx.npy", g.random((3, 784), dtype=np.float32)),
            "--input", "y=" + ctx.npy("cy.npy", np.array([4, 0, 9], np.int32))]


def cli_save(ctx):
    why = []
    io = mlp_io(ctx)
    st, d, one = ctx.path("g.safetensors"), ctx.path("gdir"), ctx.path("loss.npy")
    rc, out, err = ctx.mlc_run(MLP, "--entry", "loss_grad", *io, "--save", st)
    if not expect_ok(why, "--save .safetensors", rc, err):
        return why
    shown = printed(out)
    saved, meta = safetensors_np.read(st)
    if meta:
        why.append("metadata %r: a results file must load as plain weights" % meta)
    rc, _, err = ctx.mlc_run(MLP, "--entry", "loss_grad", *io, "--save", d)
    expect_ok(why, "--save DIR", rc, err)
    files = sorted(os.listdir(d)) if os.path.isdir(d) else []
    if files != sorted(n + ".npy" for n in shown):
        why.append("directory holds %s, printed %s" % (files, sorted(shown)))
    for name, (dt, shape, nums) in shown.items():
        if name not in saved:
            why.append("%s printed, not saved" % name)
            continue
        arr = np.load(os.path.join(d, name + ".npy")) if name + ".npy" in files else None
        if arr is None or arr.dtype != np.float32 or arr.shape != shape or arr.tobytes() != saved[name].tobytes():
            why.append("%s: .npy %s, safetensors %s%s" % (
                name, None if arr is None else (arr.dtype, arr.shape), saved[name].dtype, saved[name].shape))
        if np.array([float(v) for v in nums], np.float32).tobytes() != saved[name].astype(np.float32).tobytes():
            why.append("%s: printed numbers are not the saved ones" % name)
    rc, out, err = ctx.mlc_run(MLP, "--entry", "loss", *io, "--save", one)
    expect_ok(why, "--save .npy", rc, err)
    if rc == 0 and np.load(one).tobytes() != saved["loss_grad.loss"].tobytes():
        why.append("loss.npy %r, loss_grad.loss %r" % (np.load(one), saved["loss_grad.loss"]))
    # the initial state saved as weights: a file both loaders take
    w = ctx.path("w.safetensors")
    rc, _, err = ctx.mlc_run(MLP, "--entry", "init", "--save", w, "--seed", "9")
    expect_ok(why, "--entry init --save", rc, err)
    rc, a, err = ctx.mlc_run(MLP, "--entry", "loss", *io, "--weights", w)
    rc2, b, _ = ctx.mlc_run(MLP, "--entry", "loss", *io, "--seed", "9")
    if rc or rc2 or a != b:
        why.append("--weights of a saved init: %r, the seed's: %r (%s)" % (a, b, err.strip()[:200]))
    ints = ctx.path("ints")
    rc, _, err = ctx.mlc_run(MLP, "--entry", "init", "--save", ints)
    if rc == 0 and np.load(os.path.join(ints, "opt.step.npy")).dtype != np.int64:
        why.append("opt.step.npy is not int64")
    return why


def cli_bad_save(ctx):
    why = []
    io = mlp_io(ctx)
    cases = [(ctx.path("many.npy"), "7 results for one .npy file"), ("-", "needs a file or directory"),
             (MLP, "not a directory"),
             (ctx.path("no/such/dir/g.safetensors"), "cannot write"),
             (ctx.path("cx.npy") + "/d", "cannot make the directory")]
    for out, text in cases:
        rc, stdout, err = ctx.mlc_run(MLP, "--entry", "loss_grad", *io, "--save", out)
        if rc != 1 or text not in err or stdout:
            why.append("--save %s: exit %d, %r, stdout %r (expected 1 and %r)" % (out, rc, err.strip()[:200],
                                                                                 stdout[:40], text))
    return why


def cli_bad_weights(ctx):
    why = []
    io = mlp_io(ctx)
    w = ctx.path("base.safetensors")
    rc, _, err = ctx.mlc_run(MLP, "--entry", "init", "--save", w)
    if not expect_ok(why, "init", rc, err):
        return why
    good, _ = safetensors_np.read(w)
    good = {k: v for k, v in good.items() if not k.startswith("opt.")}
    variants = {
        "missing": ({k: v for k, v in good.items() if k != "fc2.b"}, "tensor 'fc2.b' is missing"),
        "unknown": (dict(good, **{"fc4.w": np.zeros(3, np.float32)}), "tensor 'fc4.w' is not a state of model FashionMLP"),
        "shape": (dict(good, **{"fc1.w": good["fc1.w"].T.copy()}),
                  "tensor 'fc1.w' is F32[784, 256], but the model's is F32[256, 784]"),
        "dtype": (dict(good, **{"fc3.b": good["fc3.b"].astype(np.int32)}),
                  "tensor 'fc3.b' is I32[10], but the model's is F32[10]"),
    }
    for name, (tensors, text) in variants.items():
        p = ctx.path(name + ".safetensors")
        safetensors_np.write(p, tensors)
        rc, out, err = ctx.mlc_run(MLP, "--entry", "loss", *io, "--weights", p)
        if rc != 1 or p not in err or text not in err or out:
            why.append("%s: exit %d, %r (expected 1, the file and %r)" % (name, rc, err.strip()[:200], text))
    junk = ctx.path("junk.safetensors")
    with open(junk, "wb") as f:
        f.write(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}      ")
    rc, _, err = ctx.mlc_run(MLP, "--entry", "loss", *io, "--weights", junk)
    if rc != 1 or junk not in err:
        why.append("not safetensors: exit %d, %r" % (rc, err.strip()[:200]))
    # f64 weights convert: f32 mode rounds them to the f32 weights' values
    p64 = ctx.path("w64.safetensors")
    safetensors_np.write(p64, {k: v.astype(np.float64) for k, v in good.items()})
    rc, a, err = ctx.mlc_run(MLP, "--entry", "loss", *io, "--weights", p64)
    rc2, b, _ = ctx.mlc_run(MLP, "--entry", "loss", *io, "--weights", w)
    if rc or rc2 or a != b:
        why.append("F64 weights: %r (%s), F32 weights: %r" % (a, err.strip()[:200], b))
    return why


def cli_no_loss(ctx):
    why = []
    m = ctx.path("noloss.model")
    with open(m, "w") as f:
        f.write("model NoLoss {\n  fc = Linear(4, 2)\n  forward(x: f32[B, 4]) -> f32[B, 2] {\n"
                "    return fc(x)\n  }\n}\n")
    rc, _, err = ctx.mlc_run(m, "--entry", "loss_grad")
    if rc != 1 or "model NoLoss has no loss_grad entry point (it has no loss)" not in err:
        why.append("loss_grad without a loss: exit %d, %r" % (rc, err.strip()[:200]))
    return why


def cli_label_range(ctx):
    """A per-row cross_entropy (ignore_index) refuses a label outside the classes, as the program does."""
    why = []
    m = ctx.path("ignore.model")
    with open(m, "w") as f:
        f.write("model Ignore {\n  fc = Linear(4, 3)\n  forward(x: f32[B, 4]) -> f32[B, 3] {\n"
                "    return fc(x)\n  }\n  loss(x: f32[B, 4], y: i32[B]) -> f32 {\n"
                "    return cross_entropy(forward(x), y, ignore_index = -100)\n  }\n}\n")
    x = ["--input", "x=" + ctx.npy("ix.npy", np.ones((3, 4), np.float32))]
    good = ctx.npy("iy.npy", np.array([0, 2, -100], np.int32))
    rc, out, err = ctx.mlc_run(m, "--entry", "loss", *x, "--input", "y=" + good)
    if expect_ok(why, "labels 0, 2 and the ignore_index", rc, err) and "loss" not in printed(out):
        why.append("no loss printed: %r" % out[:200])
    for entry in ("loss", "train_step"):
        for bad, what in ((5, "label 5 is out of range 0..2 and not the ignore_index -100"),
                          (-1, "label -1 is out of range 0..2 and not the ignore_index -100")):
            path = ctx.npy("iy_bad.npy", np.array([0, bad, -100], np.int32))
            rc, out, err = ctx.mlc_run(m, "--entry", entry, *x, "--input", "y=" + path)
            if rc != 1 or "element 2 of input y: " + what not in err or out:
                why.append("%s with label %d: exit %d, %r" % (entry, bad, rc, err.strip()[:200]))
    return why


def round16(a, bits):
    """a (float32) rounded to bfloat16 (bits 16) or IEEE half (bits 13), ties to even."""
    if bits == 13:
        return a.astype(np.float16).astype(np.float32)
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000
    return u.astype(np.uint32).view(np.float32)


def mlp_loss(w, x, y, bits):
    """fashion_mlp's loss with every matmul's operands rounded (bits None: f32), in float64."""
    r = (lambda a: a.astype(np.float64)) if bits is None else (lambda a: round16(a, bits).astype(np.float64))
    h = x
    for i, layer in enumerate(("fc1", "fc2", "fc3")):
        h = (r(np.asarray(h, np.float32)) @ r(w[layer + ".w"]).T + w[layer + ".b"]).astype(np.float32)
        if i < 2:
            h = np.maximum(h, 0)
    z = h.astype(np.float64)
    z = z - z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=1))
    return float(np.mean(lse - z[np.arange(len(y)), y]))


def cli_precision(ctx):
    """--precision bf16 / f16 rounds every matmul's operands: the loss is numpy's
    over rounded operands, not the f32 one; --precision f32 undoes a recipe's bf16."""
    why = []
    g = np.random.default_rng(5)
    # inputs large enough that the initial logits spread: the rounding moves the loss by ~1e-3
    x, y = (g.random((3, 784), dtype=np.float32) * 40).astype(np.float32), np.array([4, 0, 9], np.int32)
    io = ["--input", "x=" + ctx.npy("px.npy", x), "--input", "y=" + ctx.npy("py.npy", y)]
    w_path = ctx.path("pw.safetensors")
    rc, _, err = ctx.mlc_run(MLP, "--entry", "init", "--save", w_path)
    if not expect_ok(why, "--entry init", rc, err):
        return why
    w, _ = safetensors_np.read(w_path)
    losses = {}
    for prec, bits in (("f32", None), ("bf16", 16), ("f16", 13)):
        rc, out, err = ctx.mlc_run(MLP, "--entry", "loss", "--weights", w_path, "--precision", prec, *io)
        if not expect_ok(why, "--precision " + prec, rc, err):
            return why
        got = float(list(printed(out).values())[0][2][0])
        want = mlp_loss(w, x, y, bits)
        losses[prec] = got
        if abs(got - want) > 2e-6 * abs(want):
            why.append("--precision %s: loss %.9g, numpy over rounded operands %.9g" % (prec, got, want))
    for prec in ("bf16", "f16"):
        if abs(losses[prec] - losses["f32"]) <= 1e-4 * abs(losses["f32"]):
            why.append("--precision %s: loss %.9g, about the f32 one %.9g" % (prec, losses[prec], losses["f32"]))
    mixed = "tests/parity/cases/mixed_precision.model"  # its recipe says precision bf16
    xm = ["--input", "x=" + ctx.npy("mx.npy", g.random((2, 1, 14, 14), dtype=np.float32)),
          "--input", "y=" + ctx.npy("my.npy", np.array([1, 7], np.int32))]
    runs = {}
    for flag in ((), ("--precision", "bf16"), ("--precision", "f32")):
        rc, out, err = ctx.mlc_run(mixed, "--entry", "loss", *flag, *xm)
        if not expect_ok(why, "%s %s" % (mixed, " ".join(flag)), rc, err):
            return why
        runs[flag] = out
    if runs[()] != runs[("--precision", "bf16")] or runs[()] == runs[("--precision", "f32")]:
        why.append("the recipe's precision bf16 is not what --precision bf16 gives, or --precision f32 "
                   "does not override it")
    return why


SCALER = "tests/e2e/scaler.model"


def cli_step_names(ctx):
    """train_step's results by name, the scaler's three included, in the step's order."""
    why = []
    g = np.random.default_rng(5)
    io = ["--input", "x=" + ctx.npy("sx.npy", g.random((4, 6), dtype=np.float32)),
          "--input", "y=" + ctx.npy("sy.npy", g.random((4, 1), dtype=np.float32))]
    rc, out, err = ctx.mlc_run(SCALER, "--entry", "train_step", *io)
    if not expect_ok(why, "--entry train_step", rc, err):
        return why
    res = printed(out)
    want = ["train_step.loss", "train_step.grad_norm", "train_step.lr", "train_step.loss_scale",
            "train_step.overflow", "train_step.skipped_steps"]
    if [n for n in res if n in want] != want:
        why.append("results %s, expected %s among them in that order" % (list(res), want))
    elif np.float32(res["train_step.loss_scale"][2][0]) != np.float32(2.0 ** 127) or \
            res["train_step.skipped_steps"][2] != [res["train_step.overflow"][2][0]]:
        why.append("the first step runs at init_scale 2^127 and has skipped only itself if it overflowed: %s"
                   % {n: res[n][2] for n in want[3:]})
    return why


def suite_cli(ctx):
    yield "--precision: the matmuls' operands rounded (numpy), the recipe's overridden", lambda: cli_precision(ctx)
    yield "--save: safetensors, .npy, a directory; names and values as printed", lambda: cli_save(ctx)
    yield "--save: unusable paths refused", lambda: cli_bad_save(ctx)
    yield "--weights: bad files refused naming the tensor; F64 converts", lambda: cli_bad_weights(ctx)
    yield "--entry loss_grad without a loss", lambda: cli_no_loss(ctx)
    yield "a label outside the classes of a per-row cross_entropy refused", lambda: cli_label_range(ctx)
    yield "--entry train_step names the scaler's results", lambda: cli_step_names(ctx)


# ---- main -------------------------------------------------------------------------------------------
SUITES = {"torch": suite_torch, "init": suite_init, "cli": suite_cli}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mlc", required=True)
    ap.add_argument("suite", choices=sorted(SUITES))
    ap.add_argument("--keep", help="work in this folder and keep it")
    opts = ap.parse_args()
    if np is None:
        print("SKIP: numpy is not importable here (%s); these checks read .npy and safetensors with it"
              % NUMPY_ERROR)
        return 77
    tmp = opts.keep or tempfile.mkdtemp(prefix="mlc-interp-")
    os.makedirs(tmp, exist_ok=True)
    failed = passed = 0
    try:
        ctx = Ctx(os.path.abspath(opts.mlc), tmp)
        for name, fn in SUITES[opts.suite](ctx):
            try:
                why = fn()
            except (AssertionError, subprocess.TimeoutExpired) as e:
                why = [str(e)]
            if why:
                failed += 1
                print("[FAIL] %s" % name)
                for w in why:
                    print("    " + w)
            else:
                passed += 1
                print("[PASS] %s" % name)
    finally:
        if not opts.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
