#!/usr/bin/env python3
"""torch_fashion.py — the PyTorch side of bench/train_fashion.sh.

Usage: torch_fashion.py mlp|cnn EPOCHS [THREADS]

Trains the PyTorch twin of examples/fashion_mlp.model (784-256-128-10, ReLU)
or examples/fashion_cnn.model (two 3x3 convs + ReLU + 2x2 max pool, linear
head) on Debian's Fashion-MNIST with the examples' recipe: SGD lr 0.05
momentum 0.9, batch 64, shuffled each epoch by a seeded generator (seed 0),
pixels scaled by 1/255. Prints one JSON line: seconds per epoch (training
only, as mlc's log measures it), images/s, final test accuracy and loss,
peak RSS.
"""
import gzip
import json
import resource
import struct
import sys
import time

import numpy as np
import torch
from torch import nn

FASHION = "/usr/share/datasets/fashion-mnist/"


def idx(name):
    with gzip.open(FASHION + name, "rb") as f:
        magic = f.read(4)
        dims = struct.unpack(">" + "I" * magic[3], f.read(4 * magic[3]))
        return np.frombuffer(f.read(), dtype=np.uint8).reshape(dims)


def model(kind):
    if kind == "mlp":
        return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 10))


def main():
    kind, epochs = sys.argv[1], int(sys.argv[2])
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    shape = (-1, 784) if kind == "mlp" else (-1, 1, 28, 28)
    xtr = torch.tensor(idx("train-images-idx3-ubyte.gz"), dtype=torch.float32).reshape(shape) / 255
    ytr = torch.tensor(idx("train-labels-idx1-ubyte.gz"), dtype=torch.int64)
    xte = torch.tensor(idx("t10k-images-idx3-ubyte.gz"), dtype=torch.float32).reshape(shape) / 255
    yte = torch.tensor(idx("t10k-labels-idx1-ubyte.gz"), dtype=torch.int64)
    net = model(kind)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    lossf = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(0)
    train_s = 0.0
    for _ in range(epochs):
        net.train()
        perm = torch.randperm(len(xtr), generator=gen)
        t0 = time.perf_counter()
        for i in range(0, len(xtr), 64):
            j = perm[i:i + 64]
            opt.zero_grad()
            loss = lossf(net(xtr[j]), ytr[j])
            loss.backward()
            opt.step()
        train_s += time.perf_counter() - t0
    net.eval()
    with torch.no_grad():
        correct, total_loss = 0, 0.0
        for i in range(0, len(xte), 1000):
            out = net(xte[i:i + 1000])
            total_loss += lossf(out, yte[i:i + 1000]).item() * len(out)
            correct += (out.argmax(1) == yte[i:i + 1000]).sum().item()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"side": "pytorch " + torch.__version__, "model": kind, "epochs": epochs,
                      "threads": threads, "seconds_per_epoch": round(train_s / epochs, 2),
                      "images_per_second": round(len(xtr) * epochs / train_s),
                      "test_accuracy": round(correct / len(xte), 4),
                      "test_loss": round(total_loss / len(xte), 4), "peak_rss_mib": round(rss / 1024, 1)}))


if __name__ == "__main__":
    main()
