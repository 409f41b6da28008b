#!/usr/bin/env python3
"""synth_fashion.py — generated stand-ins for Fashion-MNIST's four files.

Usage: synth_fashion.py DIR

Writes DIR/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz in the dataset's
own format (idx, gzip): 60,000 and 10,000 28 x 28 grey images of 10 classes,
for a GPU machine that has not the Debian package (tests/gpu/run.sh with
MLC_GPU_SYNTH_DATA=1). Each class is a fixed pattern of a few soft blobs,
shared in part with the next class; an image is its class's pattern shifted
by up to 3 pixels, scaled in contrast and noised, so that a small CNN learns
it in one epoch to well under 100 % (the GPU and the CPU are compared on the
same files, not against the real dataset's accuracy). Deterministic: the
same files on every machine.
"""
import gzip
import os
import struct
import sys

import numpy as np


def patterns(rng):
    yy, xx = np.mgrid[0:28, 0:28].astype(np.float32)
    blobs = []
    for _ in range(20):
        cy, cx = rng.uniform(5, 23, 2)
        s = rng.uniform(2.0, 5.0)
        blobs.append(np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * s * s)))
    pats = []
    for c in range(10):  # blobs 2c, 2c+1 its own; 2c+2 shared with the next class
        p = blobs[2 * c] + blobs[2 * c + 1] + 0.7 * blobs[(2 * c + 2) % 20]
        pats.append(p / p.max())
    return np.stack(pats)


def images(rng, pats, n):
    y = rng.integers(0, 10, n).astype(np.uint8)
    x = np.empty((n, 28, 28), np.float32)
    shifts = rng.integers(-3, 4, (n, 2))
    for i in range(n):
        x[i] = np.roll(pats[y[i]], tuple(shifts[i]), axis=(0, 1))
    x *= rng.uniform(0.5, 1.0, (n, 1, 1)).astype(np.float32)
    x += rng.normal(0, 0.35, x.shape).astype(np.float32)
    return np.clip(x * 255, 0, 255).astype(np.uint8), y


def write(path, magic, arr):
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in arr.shape))
        f.write(arr.tobytes())


def main():
    d = sys.argv[1]
    rng = np.random.default_rng(20261204)
    pats = patterns(rng)
    for name, n in (("train", 60000), ("t10k", 10000)):
        x, y = images(rng, pats, n)
        write(os.path.join(d, "%s-images-idx3-ubyte.gz" % name), 0x803, x)
        write(os.path.join(d, "%s-labels-idx1-ubyte.gz" % name), 0x801, y)
    print("synth_fashion: generated 60000 + 10000 images of 10 classes in %s" % d)


if __name__ == "__main__":
    main()
