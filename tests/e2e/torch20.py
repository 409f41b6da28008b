#!/usr/bin/env python3
"""torch20.py — the PyTorch side of the e2e_torch20 check (tests/e2e/run.sh).

Usage: torch20.py mlp|cnn DATADIR OUTDIR [STEPS]

Builds the PyTorch twin of examples/fashion_mlp.model or
examples/fashion_cnn.model (tests/parity/models.py: the same parameter paths
as mlc's), draws its initial weights with torch.manual_seed(0), and writes
them to OUTDIR/init.safetensors (tests/parity/safetensors_np.py, float32,
no metadata), which the compiled program reads with `train --weights`.
Then trains STEPS (default 20) steps of the examples' recipe — SGD lr 0.05,
momentum 0.9, batch 64, mean cross-entropy — on the first STEPS*64 records
of DATADIR/train-{images,labels}.idx (plain u8 IDX from make_slice.py) in
file order, pixels scaled by 1/255, all in float32, and writes the losses,
one per step, to OUTDIR/torch.json (and prints them).

Exit status 77 when torch cannot be imported (the check is then skipped).
"""
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "parity"))

try:
    import numpy as np
    import torch
except ImportError as e:  # no torch here: nothing to compare with
    print(f"SKIP: {e}")
    sys.exit(77)

import models  # noqa: E402  (tests/parity/models.py)
import safetensors_np  # noqa: E402

BATCH, LR, MOMENTUM = 64, 0.05, 0.9


def read_idx(path, n):
    """The first n records of a plain u8 IDX file as a numpy array."""
    with open(path, "rb") as f:
        magic = f.read(4)
        if magic[:3] != b"\0\0\x08":
            raise ValueError(f"{path}: not a u8 IDX file")
        dims = list(struct.unpack(">" + "I" * magic[3], f.read(4 * magic[3])))
        if dims[0] < n:
            raise ValueError(f"{path}: {dims[0]} records, {n} needed")
        dims[0] = n
        count = int(np.prod(dims))
        return np.frombuffer(f.read(count), dtype=np.uint8).reshape(dims)


def main(argv):
    if len(argv) not in (4, 5) or argv[1] not in ("mlp", "cnn"):
        print(__doc__, file=sys.stderr)
        return 2
    kind, data, out = argv[1], argv[2], argv[3]
    steps = int(argv[4]) if len(argv) == 5 else 20
    n = steps * BATCH
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    net = models.FashionMLP() if kind == "mlp" else models.FashionCNN()
    shape = (n, 784) if kind == "mlp" else (n, 1, 28, 28)
    x = torch.from_numpy(read_idx(os.path.join(data, "train-images.idx"), n).astype(np.float32))
    x = x.reshape(shape) / 255
    y = torch.from_numpy(read_idx(os.path.join(data, "train-labels.idx"), n).astype(np.int64))
    init = {k: v.detach().numpy().astype(np.float32) for k, v in net.state_dict().items()}
    safetensors_np.write(os.path.join(out, "init.safetensors"), init)
    opt = torch.optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM)
    losses = []
    for s in range(steps):
        xb, yb = x[s * BATCH:(s + 1) * BATCH], y[s * BATCH:(s + 1) * BATCH]
        opt.zero_grad()
        loss = net.loss(xb, yb)
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
    with open(os.path.join(out, "torch.json"), "w") as f:
        json.dump(losses, f)
    print(f"pytorch {torch.__version__} {kind}: " + " ".join(f"{v:.6f}" for v in losses))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
