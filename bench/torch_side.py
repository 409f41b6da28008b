#!/usr/bin/env python3
"""torch_side.py — the PyTorch / OpenBLAS side of bench/side_by_side.py.

Usage (each prints one JSON line):
  torch_side.py TORCH BLAS gemm M,N,K,TA,TB [M,N,K,TA,TB ...]
  torch_side.py TORCH BLAS train mlp|cnn [--steps S] [--batch B] [--width W] [--compile 1]
  torch_side.py TORCH BLAS infer mlp|cnn [--compile 1]
  torch_side.py TORCH BLAS gpt [--steps S] [--compile 1]

--compile 1 (PyTorch 2.x, e.g. the virtualenv of bench/setup_torch2.sh):
train runs the model through torch.compile, with 5 untimed steps first
(compile_s: their time, the compilation included); infer adds compiled_b1_us
and compiled_b256_img_s (torch.compile of the eval model, warmed up at
both batch sizes first).

TORCH is the intra-op (OpenMP) thread count, BLAS OpenBLAS's own pool; both
are set explicitly, through the environment before torch is imported and
through torch.set_num_threads / threadpoolctl after, because
torch.set_num_threads does not reach OpenBLAS (bench/RESULTS.md, "Fairness").
The models and the recipe are those of examples/fashion_{mlp,cnn}.model:
SGD lr 0.05 momentum 0.9, batch 64, seed 0, the data preloaded as tensors,
only the training loop timed.

gpt is examples/char_transformer.model written as a PyTorch user would
(nanoGPT's layout: nn.Linear, nn.LayerNorm, nn.Embedding, exact GELU, the
tied head; F.scaled_dot_product_attention with is_causal where the PyTorch
has it, 2.0 on, else the masked softmax) and its recipe: AdamW (3e-4, betas
0.9 / 0.95, weight decay 0.1 but not on biases and LayerNorms), gradient
clipping at norm 1, batch 64 of 64-character windows drawn from 1,280
random ones; S steps (default 20) timed after 3 untimed.
"""
import os
import sys

TORCH, BLAS = int(sys.argv[1]), int(sys.argv[2])
os.environ["OMP_NUM_THREADS"] = str(TORCH)
os.environ["OPENBLAS_NUM_THREADS"] = str(BLAS)

import gzip  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import struct  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

try:
    from threadpoolctl import threadpool_info, threadpool_limits
except ImportError:  # Debian python3-threadpoolctl; the env variables above still apply
    threadpool_info = threadpool_limits = None

FASHION = "/usr/share/datasets/fashion-mnist/"


def setup():
    torch.set_num_threads(TORCH)
    info = {"torch_threads": torch.get_num_threads(), "blas_threads": BLAS}
    if threadpool_limits:
        threadpool_limits(BLAS, user_api="blas")
        blas = [p for p in threadpool_info() if p["user_api"] == "blas"]
        if blas:
            info["blas"] = "%s %s (%s), %d threads" % (blas[0]["internal_api"], blas[0]["version"],
                                                      blas[0].get("architecture"), blas[0]["num_threads"])
    return info


def median_time(fn, min_s=0.02, repeats=7):
    fn()
    calls, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < min_s:
        fn()
        calls += 1
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        ts.append((time.perf_counter() - t) / calls)
    return sorted(ts)[repeats // 2]


def gemm(specs):
    out = []
    for spec in specs:
        m, n, k, ta, tb = (int(v) for v in spec.split(","))
        rng = np.random.default_rng(0)
        a = rng.random((k, m) if ta else (m, k), dtype=np.float32)
        b = rng.random((n, k) if tb else (k, n), dtype=np.float32)
        a, b = (a.T if ta else a), (b.T if tb else b)  # views: sgemm with its transpose flags
        t = median_time(lambda: np.matmul(a, b))
        out.append({"m": m, "n": n, "k": k, "ta": ta, "tb": tb, "gflops": 2 * m * n * k / t * 1e-9})
    return {"gemm": out}


def idx(name):
    with gzip.open(FASHION + name, "rb") as f:
        magic = f.read(4)
        dims = struct.unpack(">" + "I" * magic[3], f.read(4 * magic[3]))
        return np.frombuffer(f.read(), dtype=np.uint8).reshape(dims)


def model(kind, width=256):
    if kind == "mlp":
        return nn.Sequential(nn.Linear(784, width), nn.ReLU(), nn.Linear(width, 128), nn.ReLU(),
                             nn.Linear(128, 10))
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 10))


class GptBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.query, self.key, self.value, self.proj = (nn.Linear(d, d) for _ in range(4))
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def attn(self, x):
        B, T, d = x.shape
        q, k, v = (f(x).view(B, T, self.heads, d // self.heads).transpose(1, 2)
                   for f in (self.query, self.key, self.value))
        if hasattr(nn.functional, "scaled_dot_product_attention"):
            y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / (d // self.heads) ** 0.5)
            mask = torch.ones(T, T, dtype=torch.bool).tril()
            y = att.masked_fill(~mask, float("-inf")).softmax(dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(B, T, d))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(nn.functional.gelu(self.fc(self.ln2(x))))


class Gpt(nn.Module):
    def __init__(self, vocab=65, ctx=64, d=64, heads=4, layers=3):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(GptBlock(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)

    def forward(self, idx, y):
        h = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for b in self.blocks:
            h = b(h)
        logits = self.ln_f(h) @ self.tok.weight.T
        return nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1))


def timed_steps(step, steps, res):
    """res with the time of `steps` calls of step() after 3 (the warm-up,
    and the compilation with --compile 1), the last loss and peak RSS."""
    t0 = time.perf_counter()
    for _ in range(3):
        step()
    res["warmup_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = step()
    sec = time.perf_counter() - t0
    res.update({"seconds": sec, "step_ms": sec / steps * 1e3, "loss": float(loss.detach()),
                "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
    return res


def train_gpt(steps, compiled=False):
    torch.manual_seed(0)
    steps = steps if steps > 0 else 20
    data = torch.randint(0, 65, (1280, 65))
    x, y = data[:, :64].contiguous(), data[:, 1:].contiguous()
    net = Gpt()
    decay = [p for n, p in net.named_parameters() if not (n.endswith(".bias") or "ln" in n)]
    rest = [p for n, p in net.named_parameters() if n.endswith(".bias") or "ln" in n]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=3e-4, betas=(0.9, 0.95))
    fwd = torch.compile(net) if compiled else net
    gen = torch.Generator().manual_seed(0)

    def step():
        i = torch.randint(0, len(x), (64,), generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = fwd(x[i], y[i])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        return loss

    res = {"kind": "gpt", "steps": steps, "batch": 64, "torch": torch.__version__,
           "sdpa": hasattr(nn.functional, "scaled_dot_product_attention")}
    return timed_steps(step, steps, res)


class ConvBn(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.c = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return self.bn(self.c(x))


class ResNetCifar(nn.Module):
    """bench/models/resnet_cifar.model in PyTorch."""

    def __init__(self):
        super().__init__()
        self.c1, self.c2 = ConvBn(3, 32), ConvBn(32, 64, 2)
        self.r1, self.r2 = ConvBn(64, 64), ConvBn(64, 64)
        self.c3 = ConvBn(64, 128, 2)
        self.r3, self.r4 = ConvBn(128, 128), ConvBn(128, 128)
        self.fc = nn.Linear(128, 10)

    def forward(self, x):
        relu = nn.functional.relu
        h = relu(self.c1(x))
        h = relu(self.c2(h))
        h = relu(h + self.r2(relu(self.r1(h))))
        h = relu(self.c3(h))
        h = relu(h + self.r4(relu(self.r3(h))))
        return self.fc(h.mean((2, 3)))


class SeparableBn(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.dw = nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False)
        self.pw = nn.Conv2d(cin, cout, 1, bias=False)
        self.bn1, self.bn2 = nn.BatchNorm2d(cin), nn.BatchNorm2d(cout)

    def forward(self, x):
        relu = nn.functional.relu
        return relu(self.bn2(self.pw(relu(self.bn1(self.dw(x))))))


class MobileNetCifar(nn.Module):
    """bench/models/mobilenet_cifar.model in PyTorch."""

    def __init__(self):
        super().__init__()
        self.stem = ConvBn(3, 32)
        self.body = nn.Sequential(SeparableBn(32, 64), SeparableBn(64, 128, 2), SeparableBn(128, 128),
                                  SeparableBn(128, 256, 2), SeparableBn(256, 256))
        self.fc = nn.Linear(256, 10)

    def forward(self, x):
        h = self.body(nn.functional.relu(self.stem(x)))
        return self.fc(h.mean((2, 3)))


def train_resnet(steps, compiled=False, net_class=None):
    torch.manual_seed(0)
    steps = steps if steps > 0 else 20
    x = torch.randn(1280, 3, 32, 32)
    y = torch.randint(0, 10, (1280,))
    net = (net_class or ResNetCifar)()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    fwd = torch.compile(net) if compiled else net
    gen = torch.Generator().manual_seed(0)

    def step():
        i = torch.randint(0, len(x), (64,), generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(fwd(x[i]), y[i])
        loss.backward()
        opt.step()
        return loss

    res = {"kind": "mobilenet" if net_class is MobileNetCifar else "resnet", "steps": steps, "batch": 64,
           "torch": torch.__version__}
    return timed_steps(step, steps, res)


def train(kind, steps, batch, width, compiled=False):
    torch.manual_seed(0)
    shape = (-1, 784) if kind == "mlp" else (-1, 1, 28, 28)
    x = torch.tensor(idx("train-images-idx3-ubyte.gz"), dtype=torch.float32).reshape(shape) / 255
    y = torch.tensor(idx("train-labels-idx1-ubyte.gz"), dtype=torch.int64)
    net = model(kind, width)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    lossf = nn.CrossEntropyLoss()
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    nsteps = len(x) // batch if steps <= 0 else steps
    fwd = torch.compile(net) if compiled else net

    def step(s):
        i = perm[(s * batch) % (len(x) - batch + 1):][:batch]
        opt.zero_grad(set_to_none=True)
        loss = lossf(fwd(x[i]), y[i])
        loss.backward()
        opt.step()
        return loss

    res = {"kind": kind, "steps": nsteps, "batch": batch, "width": width, "torch": torch.__version__}
    if compiled:  # the compilation, and its first steps, outside the timed loop
        t0 = time.perf_counter()
        for s in range(5):
            step(s)
        res["compile_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for s in range(nsteps):
        loss = step(s)
    sec = time.perf_counter() - t0
    res.update({"seconds": sec, "img_s": nsteps * batch / sec, "loss": float(loss.detach()),
                "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
    return res


def infer(kind, compiled=False):
    torch.manual_seed(0)
    net = model(kind).eval()
    shape = (784,) if kind == "mlp" else (1, 28, 28)
    res = {"kind": kind, "torch": torch.__version__}
    with torch.no_grad():
        frozen = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(net)))
        forms = [("eager", net), ("torchscript", frozen)]
        if compiled:
            comp = torch.compile(net)
            for b in (1, 256, 1, 256):  # compile (and any recompile for the second size) untimed
                comp(torch.rand((b,) + shape))
            forms.append(("compiled", comp))
        for name, f in forms:
            x1, x256 = torch.rand((1,) + shape), torch.rand((256,) + shape)
            res[name + "_b1_us"] = median_time(lambda: f(x1)) * 1e6
            res[name + "_b256_img_s"] = 256 / median_time(lambda: f(x256))
    return res


def main():
    info = setup()
    what = sys.argv[3]
    args = sys.argv[4:]
    if what == "gemm":
        info.update(gemm(args))
    elif what == "gpt":
        opts = dict(zip(args[0::2], args[1::2]))
        info.update(train_gpt(int(opts.get("--steps", 0)), opts.get("--compile", "0") == "1"))
    elif what in ("resnet", "mobilenet"):
        opts = dict(zip(args[0::2], args[1::2]))
        info.update(train_resnet(int(opts.get("--steps", 0)), opts.get("--compile", "0") == "1",
                                 MobileNetCifar if what == "mobilenet" else ResNetCifar))
    elif what in ("train", "infer"):
        kind = args[0]
        opts = dict(zip(args[1::2], args[2::2]))
        compiled = opts.get("--compile", "0") == "1"
        if what == "train":
            info.update(train(kind, int(opts.get("--steps", 0)), int(opts.get("--batch", 64)),
                              int(opts.get("--width", 256)), compiled))
        else:
            info.update(infer(kind, compiled))
    else:
        sys.exit("torch_side.py: unknown part " + what)
    print(json.dumps(info))


if __name__ == "__main__":
    main()
