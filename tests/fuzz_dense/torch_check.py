#!/usr/bin/python3
"""torch_check.py: gen.py's MLPs against PyTorch, loss and gradients.

    OPENBLAS_CORETYPE=Cooperlake torch_check.py MLC [--seeds N] [--first S] [--wide N]

For each seed whose model is an MLP without dropout (its masks are the
runtime's draws; the sequence models' twins are tests/parity's and
tests/e2e/torch20.py's), at f32 (a bf16/f16 recipe is compared at f32:
mlc's rounded products are checked against the interpreter by run.py):
`mlc run --interp --entry init` saves the initial weights, `--entry
loss_grad` on a random batch (floats uniform in [-1, 1), targets uniform
over the classes) saves the loss and every parameter's gradient, and a twin
torch module in float64 from the same weights computes them. Each tensor
must satisfy |mlc - torch| <= 1e-4 * max(1, max |torch|) (f32's sums of up
to 4097 terms against an exact-ish reference). Exit 77 without torch, 1 on
any mismatch or mlc failure, else 0.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.append(os.path.join(HERE, "..", "parity"))
import gen  # noqa: E402
import safetensors_np  # noqa: E402

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError:
    print("torch_check: no torch; skipped")
    sys.exit(77)

TOL = 1e-4


def act(rec, h):
    a = rec["act"]
    if a == "none":
        return h
    if a == "leaky_relu":
        return F.leaky_relu(h, float(rec["slope"]))
    return {"relu": F.relu, "gelu": F.gelu, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "silu": F.silu,
            "elu": F.elu, "softplus": F.softplus, "hardtanh": F.hardtanh}[a](h)


def ext(rec, p, h):
    """gen.py's EXT_OPS op of a hidden layer (rec["ext"]), on h."""
    e, f = rec.get("ext"), rec.get("fmt")
    if not e:
        return h
    w, i, a = f["w"], f["i"], f["a"]
    ops = {
        "softmax": lambda: F.softmax(h, dim=-1),
        "log_sigmoid": lambda: F.logsigmoid(h),
        "clamp": lambda: torch.clamp(h, -0.5, 0.5),
        "abs": lambda: h.abs(),
        "center": lambda: h - h.mean(dim=-1, keepdim=True),
        "maxnorm": lambda: h / (h.abs().amax(dim=-1, keepdim=True) + 1.0),
        "minshift": lambda: h - h.amin(dim=-1, keepdim=True),
        "where": lambda: torch.where(h > 0, h, 0.5 * h),
        "rms": lambda: h * torch.rsqrt((h * h).mean(dim=-1, keepdim=True) + 1e-5),
        "smooth": lambda: torch.sqrt(h * h + 1.0) - torch.exp(torch.clamp(h, -3, 3)) * 0.1,
        "pow": lambda: (h.abs() + 0.5) ** 1.5,
        "detach": lambda: h * torch.sigmoid(h).detach(),
        "scale": lambda: h * p["s%d" % i],
        "matmul": lambda: h @ p["m%d" % i],
        "matmul_t": lambda: h @ p["m%d" % i].T,
        "reuse": lambda: torch.tanh(h) @ p["fc%d.w" % i].T + p["fc%d.b" % i],
        "rotate": lambda: torch.cat([h[..., a:w], h[..., 0:a]], dim=-1),
        "evenodd": lambda: torch.cat([h[..., 0:w:2], h[..., 1:w:2]], dim=-1),
        "rowmix": lambda: h + h.mean(dim=1, keepdim=True),
        "batch_norm": lambda: F.batch_norm(h, p["bn%d_rm" % i].detach().clone(), p["bn%d_rv" % i].detach().clone(),
                                           p["bn%d_w" % i], p["bn%d_b" % i], training=True, momentum=0.1, eps=1e-5),
    }
    return ops[e]()


def forward(spec, p, x):
    h = x
    n = len(spec["layers"])
    for i, rec in enumerate(spec["layers"]):
        y = h @ p["fc%d.w" % i].T + p["fc%d.b" % i]
        if i < n - 1:
            y = act(rec, y)
            if rec["res"]:
                y = h + y
            if rec["ln"]:
                y = F.layer_norm(y, (y.shape[-1],), p["ln%d.weight" % i], p["ln%d.bias" % i], 1e-5)
            y = ext(rec, p, y)
        h = y
    return F.log_softmax(h, dim=-1) if spec.get("log_softmax") else h


def loss(spec, p, x, y):
    out, l = forward(spec, p, x), spec["loss"]
    out = out.reshape(-1, out.shape[-1])  # [B, L, out] inputs: the losses see [B * L, out]
    if l["kind"] == "ce":
        kw = {}
        for o in l["opts"]:
            k, v = o.split(" = ")
            if k == "ignore_index":
                kw["ignore_index"] = int(v)
            elif k == "label_smoothing":
                kw["label_smoothing"] = float(v)
        r = l["red"]
        v = F.cross_entropy(out, y.reshape(-1), reduction="none" if r == "none" else r, **kw)
        return v.mean() if r == "none" else v
    y = y.reshape(out.shape)
    per = (out - y) ** 2 if l["kind"] == "mse" else F.binary_cross_entropy_with_logits(out, y, reduction="none")
    return {"mean": per.mean, "sum": per.sum, "none": per.mean}[l["red"]]() if l["red"] != "dim" \
        else per.mean(dim=l["dim"]).sum()


def check(mlc, seed, tmp):
    text, spec = gen.generate_spec(seed)
    # dropout's masks and rand / randn's draws are the runtime's own
    if spec is None or any(rec["drop"] or rec.get("ext") in ("noise", "mask") for rec in spec["layers"]):
        return None
    path = os.path.join(tmp, "m.model")
    with open(path, "w") as f:
        f.write(text)
    init, grads = os.path.join(tmp, "init.safetensors"), os.path.join(tmp, "grads.safetensors")
    rng = np.random.default_rng(seed)
    b, ws, rows = spec["batch"], spec["ws"], spec.get("rows", 1)
    lead = (b,) if rows == 1 else (b, rows)
    x = rng.uniform(-1, 1, lead + (ws[0],)).astype(np.float32)
    if spec["loss"]["kind"] == "ce":
        y = rng.integers(0, ws[-1], lead).astype(np.int32)
        if any(o == "ignore_index = 0" for o in spec["loss"]["opts"]):
            y.flat[0] = 1 % ws[-1]  # at least one row counted
    else:
        y = rng.uniform(-1, 1, lead + (ws[-1],)).astype(np.float32)
    np.save(os.path.join(tmp, "x.npy"), x)
    np.save(os.path.join(tmp, "y.npy"), y)
    yname = "y" if spec["loss"]["kind"] == "ce" else "t"
    for cmd in ([mlc, "run", "--interp", "--precision", "f32", path, "--entry", "init", "--save", init],
                [mlc, "run", "--interp", "--precision", "f32", path, "--entry", "loss_grad", "--weights", init,
                 "--input", "x=" + os.path.join(tmp, "x.npy"), "--input", "%s=%s" % (yname, os.path.join(tmp, "y.npy")),
                 "--save", grads]):
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if p.returncode:
            return "mlc failed: %s" % p.stderr.decode(errors="replace")[-1000:]
    w, _ = safetensors_np.read(init)
    g, _ = safetensors_np.read(grads)
    params = {k: torch.tensor(v.astype(np.float64), requires_grad=True) for k, v in w.items()
              if not k.startswith("opt.")}
    yt = torch.tensor(y.astype(np.int64)) if yname == "y" else torch.tensor(y.astype(np.float64))
    l = loss(spec, params, torch.tensor(x.astype(np.float64)), yt)
    l.backward()
    want = {"loss_grad.loss": l.detach().numpy()}
    # buffers (batch norm's running statistics) have no gradient, and the
    # recipe's frozen params none that loss_grad reports
    frozen = [l.split()[1] for l in spec["recipe"] if l.startswith("  freeze ")]
    want.update({"loss_grad." + k: v.grad.numpy() for k, v in params.items() if v.grad is not None
                 and not any(k == f or k.startswith(f + ".") for f in frozen)})
    for k, t in sorted(want.items()):
        if k not in g:
            return "%s: not in mlc's results (%s)" % (k, ", ".join(sorted(g)))
        m = g[k].astype(np.float64).reshape(t.shape)
        err = np.abs(m - t).max() if t.size else 0.0
        bound = TOL * max(1.0, float(np.abs(t).max()) if t.size else 0.0)
        if not err <= bound:
            return "%s: max |mlc - torch| %.3g > %.3g" % (k, err, bound)
    return ""


def main():
    argv = sys.argv[1:]
    mlc, seeds, first = argv[0], 40, 0
    wide = 0  # --wide N: seeds gen.WIDE.. gen.WIDE+N-1 as well
    if "--seeds" in argv:
        seeds = int(argv[argv.index("--seeds") + 1])
    if "--first" in argv:
        first = int(argv[argv.index("--first") + 1])
    if "--wide" in argv:
        wide = int(argv[argv.index("--wide") + 1])
    bad = compared = 0
    with tempfile.TemporaryDirectory() as tmp:
        for s in list(range(first, first + seeds)) + list(range(gen.WIDE, gen.WIDE + wide)):
            why = check(mlc, s, tmp)
            if why is None:
                continue
            compared += 1
            print("[%s] gen.py %d%s" % ("FAIL" if why else "PASS", s, ": " + why if why else ""), flush=True)
            bad += bool(why)
    print("%d MLPs compared with torch, %d failed" % (compared, bad))
    return 1 if bad or not compared else 0


if __name__ == "__main__":
    sys.exit(main())
