"""safetensors_np.py — a small safetensors reader and writer on numpy + json.

The parity data (tests/parity/data/*.safetensors) is written with it, and
tests/runtime/test_safetensors.c runs it to check that files cross between the
C library and Python both ways. Layout: an 8-byte little-endian header length
N, N bytes of JSON (padded with spaces to a multiple of 8), then the tensors'
bytes, row-major and little-endian, in name order.

    write(path, {"w": np.zeros((2, 3), np.float32)}, {"model": "M"})
    tensors, metadata = read(path)

As a script:  safetensors_np.py dump FILE   prints name dtype shape sum
              safetensors_np.py write FILE  writes the cross-check fixture
"""
import json
import struct
import sys

import numpy as np

DTYPES = {
    "F32": np.dtype("<f4"), "F64": np.dtype("<f8"), "I32": np.dtype("<i4"),
    "I64": np.dtype("<i8"), "U8": np.dtype("u1"), "BOOL": np.dtype("?"),
    "F16": np.dtype("<f2"),
}
NAMES = {v: k for k, v in DTYPES.items()}


def write(path, tensors, metadata=None):
    header, blobs, at = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in sorted(metadata.items())}
    for name in sorted(tensors):
        a = np.asarray(tensors[name])  # ascontiguousarray would make 0-d 1-d
        if not a.flags.c_contiguous:
            a = a.copy(order="C")
        dt = a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype
        if dt not in NAMES:
            raise ValueError(f"{path}: tensor '{name}': dtype {a.dtype} not supported")
        data = a.astype(dt, copy=False).tobytes()
        header[name] = {"dtype": NAMES[dt], "shape": list(a.shape),
                        "data_offsets": [at, at + len(data)]}
        blobs.append(data)
        at += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def read(path):
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: too short")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        raise ValueError(f"{path}: header length {n} exceeds the file")
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    metadata = header.pop("__metadata__", {})
    tensors, spans = {}, []
    for name, e in header.items():
        dt = DTYPES[e["dtype"]]
        b, end = e["data_offsets"]
        count = int(np.prod(e["shape"], dtype=np.int64))
        if end - b != count * dt.itemsize or end > len(data):
            raise ValueError(f"{path}: tensor '{name}': bad data_offsets")
        tensors[name] = np.frombuffer(data[b:end], dtype=dt).reshape(e["shape"]).copy()
        spans.append((b, end))
    at = 0
    for b, end in sorted(spans):
        if b != at:
            raise ValueError(f"{path}: data_offsets leave a gap or overlap at {at}")
        at = end
    if at != len(data):
        raise ValueError(f"{path}: trailing bytes in the data region")
    return tensors, metadata


def _fixture():
    """The tensors both sides of test_safetensors agree on."""
    return {
        "a.f32": np.arange(6, dtype=np.float32).reshape(2, 3) / 4,
        "b.f64": np.array([1.0 / 3, -2.5e-300, 1e300], dtype=np.float64),
        "c.i32": np.array([[-7], [2147483647]], dtype=np.int32),
        "d.i64": np.array(-(2 ** 40), dtype=np.int64),
        "e.u8": np.array([0, 255], dtype=np.uint8),
        "f.bool": np.array([True, False, True]),
        "g.f16": np.array([1.5, -0.0009765625, 65504.0], dtype=np.float16),
        "h.empty": np.zeros((0, 4), dtype=np.float32),
    }, {"producer": "safetensors_np", "note": "fixture"}


def main(argv):
    if len(argv) == 3 and argv[1] == "dump":
        tensors, meta = read(argv[2])
        for k in sorted(meta):
            print(f"meta {k}={meta[k]}")
        for name in sorted(tensors):
            a = tensors[name]
            print(f"{name} {NAMES[a.dtype]} {list(a.shape)} {float(a.astype(np.float64).sum())!r}")
        return 0
    if len(argv) == 3 and argv[1] == "write":
        tensors, meta = _fixture()
        write(argv[2], tensors, meta)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
