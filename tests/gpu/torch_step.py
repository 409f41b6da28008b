#!/usr/bin/env python3
"""torch_step.py — the PyTorch side of tests/gpu/run.sh's bench step.

Usage: torch_step.py MLC_RUN_RECORD

Times one epoch of train steps of the PyTorch twin of
examples/fashion_cnn.model (bench/torch_fashion.py's model and recipe: SGD
lr 0.05 momentum 0.9, batch 64, shuffled) on this machine's GPU, eager and
under torch.compile, the data resident on the GPU as mlc's batches are
uploaded to it, and prints one line comparing their images/s with the mlc
program's (the training images/s of the run record MLC_RUN_RECORD, from
`fashion_cnn train --device cuda`). Exits 77 without torch or a CUDA device
for it, 1 when the run record cannot be read.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))


def epoch(net, opt, lossf, x, y, perm, torch):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(0, len(x), 64):
        j = perm[i:i + 64]
        opt.zero_grad(set_to_none=True)
        loss = lossf(net(x[j]), y[j])
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def main():
    try:
        with open(sys.argv[1]) as f:
            rec = json.load(f)
        mlc_ips = rec["epochs"][0]["images_per_second"]
    except (OSError, KeyError, IndexError, ValueError) as e:
        print("cannot read the mlc run record: %s" % e)
        return 1
    try:
        import torch
        from torch import nn
        import torch_fashion as tf
    except ImportError as e:
        print("no PyTorch here (%s)" % e)
        return 77
    if not torch.cuda.is_available():
        print("PyTorch %s sees no CUDA device" % torch.__version__)
        return 77
    dev = torch.device("cuda")
    torch.manual_seed(0)
    x = (torch.tensor(tf.idx("train-images-idx3-ubyte.gz"), dtype=torch.float32).reshape(-1, 1, 28, 28) / 255).to(dev)
    y = torch.tensor(tf.idx("train-labels-idx1-ubyte.gz"), dtype=torch.int64).to(dev)
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(0)).to(dev)
    res = {}
    for name in ("eager", "compile"):
        net = tf.model("cnn").to(dev)
        opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
        run = net
        if name == "compile":
            try:
                run = torch.compile(net)
                epoch(run, opt, nn.CrossEntropyLoss(), x[:640], y[:640], perm[:640] % 640, torch)  # compiles
            except Exception as e:  # no compiler toolchain for inductor
                res[name] = "unavailable (%s)" % str(e).splitlines()[0][:80]
                continue
        secs = epoch(run, opt, nn.CrossEntropyLoss(), x, y, perm, torch)
        res[name] = len(x) / secs
    def fmt(v):
        return "%.0f img/s (mlc %.2fx)" % (v, mlc_ips / v) if isinstance(v, float) else v
    print("fashion_cnn train steps on the GPU: mlc %.0f img/s; PyTorch %s eager %s, torch.compile %s"
          % (mlc_ips, torch.__version__, fmt(res["eager"]), fmt(res["compile"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
