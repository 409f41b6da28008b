#!/usr/bin/python3
"""torch_ref.py — the PyTorch twin of a gen_conv.py model, as a parity reference.

torch_ref.py SEED DIR writes DIR/fuzz_conv_SEED.model (gen_conv.gen(SEED))
and DIR/fuzz_conv_SEED.safetensors in tests/parity/gen.py's layout
(param/..., input/x, input/y, f64/ and f32/ loss, grad and grad_input;
metadata model, source, inputs), which test_parity reads when given the
file's path. The twin is built from the generator's layer list: conv
(torch.nn.functional.conv2d with the same stride, padding, dilation,
groups), batch norm in training mode, the activation (leaky slope 0.1,
exact gelu, silu, sigmoid, tanh, elu, hardtanh to [-0.5, 0.5]), the
residual add, the pool (avg_pool2d counts the padding, as mlc's does),
the concat of h and relu(-h), the plane's transpose, then flatten, Linear and cross entropy. The batch is at most
7 samples (the parity run is the reference interpreter in f64 and f32).

Run with OPENBLAS_CORETYPE=Cooperlake /usr/bin/python3.
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "parity"))
import gen_conv  # noqa: E402
import models  # noqa: E402
import safetensors_np  # noqa: E402


class Twin(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        for i, l in enumerate(cfg["layers"]):
            kh, kw = l["k"]
            w = torch.nn.Parameter(torch.empty(l["cout"], l["cin"] // l["g"], kh, kw))
            torch.nn.init.kaiming_uniform_(w, a=math.sqrt(5))
            bound = 1 / math.sqrt(l["cin"] // l["g"] * kh * kw)
            b = torch.nn.Parameter(torch.empty(l["cout"]).uniform_(-bound, bound))
            if l["raw"]:
                self.register_parameter("w%d" % i, w)
                self.register_parameter("b%d" % i, b)
            else:
                m = torch.nn.Module()
                m.w, m.b = w, b
                setattr(self, "c%d" % i, m)
            if l["bn"]:
                setattr(self, "bn%d" % i, models.BatchNorm2d(l["cout"]))
        self.fc = models.Linear(cfg["feat"], cfg["classes"])
        f = cfg.get("frozen")  # the recipe's freeze: mlc computes no gradient there
        for name, v in self.named_parameters():
            if f and (name == f or name.startswith(f + ".")):
                v.requires_grad_(False)

    def forward(self, x):
        h = x
        for i, l in enumerate(self.cfg["layers"]):
            w, b = (getattr(self, "w%d" % i), getattr(self, "b%d" % i)) if l["raw"] else \
                (getattr(self, "c%d" % i).w, getattr(self, "c%d" % i).b)
            e = F.conv2d(h, w, b, stride=tuple(l["s"]), padding=tuple(l["p"]), dilation=tuple(l["d"]), groups=l["g"])
            if l["bn"]:
                e = getattr(self, "bn%d" % i)(e)
            e = {"relu": F.relu, "leaky_relu": lambda t: F.leaky_relu(t, 0.1), "gelu": F.gelu,
                 "silu": F.silu, "sigmoid": torch.sigmoid, "tanh": torch.tanh, "elu": F.elu,
                 "hardtanh": lambda t: F.hardtanh(t, -0.5, 0.5), "none": lambda t: t}[l["act"]](e)
            if l["residual"]:
                e = e + h
            if l["pool"]:
                text = l["pool"].replace(" = ", "=").replace("max_pool2d", "F.max_pool2d")
                e = eval(text.replace("avg_pool2d", "F.avg_pool2d").format("e"), {"F": F, "e": e})
            if l.get("crelu"):
                e = torch.cat([e, F.relu(-e)], dim=1)
            if l.get("perm"):
                e = e.permute(0, 1, 3, 2)
            h = e
        return self.fc(h.mean(dim=(2, 3)) if self.cfg["dims"] else h.flatten(1))

    def loss(self, x, y):
        return F.cross_entropy(self.forward(x), y)


def write(seed, out_dir):
    src, cfg = gen_conv.gen(seed)
    model_path = os.path.join(out_dir, "fuzz_conv_%d.model" % seed)
    with open(model_path, "w") as f:
        f.write(src)
    torch.manual_seed(seed)
    twin = Twin(cfg)
    n = min(cfg["batch"], 7)
    g = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(n, *cfg["input"], generator=g)
    y = torch.randint(0, cfg["classes"], (n,), generator=g, dtype=torch.int32)
    out = {"param/" + p: v.detach().numpy().copy() for p, v in twin.named_parameters()}
    out.update({"param/" + p: v.detach().numpy().copy() for p, v in twin.named_buffers()})
    out["input/x"], out["input/y"] = x.numpy().copy(), y.numpy().copy()
    for tag, dt in (("f64", torch.float64), ("f32", torch.float32)):
        m = Twin(cfg)
        m.load_state_dict(twin.state_dict())
        m = m.to(dt)
        xa = x.to(dt).clone().requires_grad_()
        loss = m.loss(xa, y.long())
        loss.backward()
        out[tag + "/loss"] = loss.detach().numpy().copy()
        for p, v in m.named_parameters():
            if v.requires_grad:
                out[tag + "/grad/" + p] = v.grad.numpy().copy()
        out[tag + "/grad_input/x"] = xa.grad.numpy().copy()
    meta = {"example": "fuzz_conv_%d" % seed, "model": "FuzzConv%d" % seed, "source": model_path,
            "inputs": "x,y", "seed": str(seed), "batch": str(n), "torch": torch.__version__}
    path = os.path.join(out_dir, "fuzz_conv_%d.safetensors" % seed)
    safetensors_np.write(path, out, meta)
    return path


if __name__ == "__main__":
    print(write(int(sys.argv[1]), sys.argv[2]))
