#!/usr/bin/env python3
"""make_slice.py — a small IDX training/test set for the end-to-end tests.

Usage: make_slice.py OUTDIR NTRAIN NTEST

Writes OUTDIR/{train,test}-{images,labels}.idx (plain IDX, u8): the first
NTRAIN training and NTEST test images of Fashion-MNIST when the Debian package
is installed (/usr/share/datasets/fashion-mnist), else a generated set of
28x28 images whose class (0..9) decides which horizontal band is bright, plus
noise: learnable, so accuracy far above chance is expected either way.
Standard library only.
"""
import gzip
import os
import random
import struct
import sys

FASHION = "/usr/share/datasets/fashion-mnist"


def read_idx(path, n):
    with gzip.open(path, "rb") as f:
        magic = f.read(4)
        rank = magic[3]
        dims = list(struct.unpack(">" + "I" * rank, f.read(4 * rank)))
        per = 1
        for d in dims[1:]:
            per *= d
        dims[0] = min(n, dims[0])
        return dims, f.read(dims[0] * per)


def write_idx(path, dims, data):
    with open(path, "wb") as f:
        f.write(bytes([0, 0, 0x08, len(dims)]))
        f.write(struct.pack(">" + "I" * len(dims), *dims))
        f.write(data)


def generated(n, seed):
    rng = random.Random(seed)
    labels = bytes(rng.randrange(10) for _ in range(n))
    img = bytearray()
    for c in labels:
        for r in range(28):
            bright = r // 3 == c or (c == 9 and r >= 27)
            for _ in range(28):
                img.append(min(255, (200 if bright else 20) + rng.randrange(40)))
    return bytes(img), labels


def main():
    out, ntrain, ntest = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    os.makedirs(out, exist_ok=True)
    for split, n, src in (("train", ntrain, "train"), ("test", ntest, "t10k")):
        imgs = os.path.join(FASHION, src + "-images-idx3-ubyte.gz")
        labs = os.path.join(FASHION, src + "-labels-idx1-ubyte.gz")
        if os.path.exists(imgs) and os.path.exists(labs):
            dims, data = read_idx(imgs, n)
            ldims, ldata = read_idx(labs, n)
            source = "fashion-mnist"
        else:
            data, ldata = generated(n, 1 if split == "train" else 2)
            dims, ldims = [n, 28, 28], [n]
            source = "generated"
        write_idx(os.path.join(out, split + "-images.idx"), dims, data)
        write_idx(os.path.join(out, split + "-labels.idx"), ldims, ldata)
    print(source)


if __name__ == "__main__":
    main()
