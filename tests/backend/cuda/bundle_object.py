#!/usr/bin/python3
"""bundle_object.py - NVRTC's bundle reaches the built object intact (stdlib only).

    tests/backend/cuda/bundle_object.py --mlc build/mlc --work DIR

Builds examples/regression.model with --target cuda for --emit obj, lib and
exe, each with --keep-temps, so the build's folder keeps cuda_bundle.bin, the
bytes mlc wrote for the assembler to include (.incbin in cuda_bundle.s). In
each output (the object; the archive's member cuda_bundle.o; the program)
the symbol mlc_regression_cuda_bundle is found through the ELF symbol table
and checked: in section .mlc_cuda, 64-byte aligned, its size and the value
of mlc_regression_cuda_bundle_size equal to the file's length, its bytes the
file's. The bundle itself is then read as runtime/cuda/cuda_module.c reads
it: "MLCCUDA\\0", version 1, its entries inside it, 64-byte aligned, a cubin
an ELF object for its sm, the PTX NUL-terminated text with a `.target
sm_XX` line. Prints `[PASS] name` or `[FAIL] name: why`; exits 77 when NVRTC
is missing (no bundle can be built), 1 when anything failed.
"""

import argparse
import os
import re
import shutil
import struct
import subprocess
import sys

MODEL = "examples/regression.model"
SYMBOL = "mlc_regression_cuda_bundle"
failed = 0


def check(name, ok, why=""):
    global failed
    print(f"[PASS] {name}" if ok else f"[FAIL] {name}: {why}")
    failed += not ok


def elf_symbols(data):
    """{name: (value, size, section name, section offset, section addr)} of an ELF64 LE file."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a little-endian ELF64 file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    def strz(off):
        return data[off:data.index(b"\0", off)].decode()
    names = [strz(secs[shstrndx][4] + s[0]) for s in secs]
    out = {}
    for s in secs:
        if s[1] != 2:  # SHT_SYMTAB
            continue
        strtab = secs[s[6]][4]
        for k in range(s[5] // 24):
            st_name, _info, _other, shndx, value, size = struct.unpack_from("<IBBHQQ", data, s[4] + k * 24)
            if 0 < shndx < len(secs):
                sec = secs[shndx]
                out[strz(strtab + st_name)] = (value, size, names[shndx], sec[4], sec[3], sec[8])
    return out


def symbol_bytes(data, syms, name):
    """A symbol's bytes: its section's file offset plus its value (less the section's address)."""
    value, size, _sec, off, addr, _align = syms[name]
    start = off + value - addr
    return data[start:start + size]


def ar_member(data, member):
    """The named member of a System V / GNU archive (short names only)."""
    if data[:8] != b"!<arch>\n":
        raise ValueError("not an archive")
    at = 8
    while at + 60 <= len(data):
        head = data[at:at + 60]
        name, size = head[:16].decode().strip(), int(head[48:58].decode())
        if name.rstrip("/") == member:
            return data[at + 60:at + 60 + size]
        at += 60 + size + (size & 1)
    raise ValueError(f"no member {member}")


def check_object(what, data, want):
    try:
        syms = elf_symbols(data)
    except ValueError as e:
        return check(f"{what}: an ELF file", False, str(e))
    if SYMBOL not in syms or SYMBOL + "_size" not in syms:
        return check(f"{what}: defines {SYMBOL} and {SYMBOL}_size", False, "missing")
    value, size, sec, _off, _addr, align = syms[SYMBOL]
    check(f"{what}: {SYMBOL} in .mlc_cuda, 64-byte aligned", sec == ".mlc_cuda" and value % 64 == 0 and align >= 64,
          f"section {sec}, value {value:#x}, section alignment {align}")
    got_size, = struct.unpack("<Q", symbol_bytes(data, syms, SYMBOL + "_size"))
    check(f"{what}: symbol size and {SYMBOL}_size are the bundle's length",
          size == len(want) and got_size == len(want), f"{size} and {got_size}, want {len(want)}")
    check(f"{what}: {SYMBOL}'s bytes are cuda_bundle.bin's", symbol_bytes(data, syms, SYMBOL) == want,
          "the bytes differ")


def check_bundle(b):
    """The bundle as runtime/cuda/cuda_module.c reads it."""
    ok = len(b) >= 16 and b[:8] == b"MLCCUDA\0"
    version, count = struct.unpack_from("<II", b, 8) if ok else (0, 0)
    check("bundle: MLCCUDA header, version 1, images", ok and version == 1 and count >= 2,
          f"magic {b[:8]!r}, version {version}, {count} images")
    kinds = []
    for i in range(count if ok else 0):
        kind, arch, off, size = struct.unpack_from("<IIQQ", b, 16 + 24 * i)
        image = b[off:off + size]
        if off % 64 or off + size > len(b) or off < 16 + 24 * count:
            check(f"bundle: entry {i} inside the bundle, 64-byte aligned", False, f"offset {off}, size {size}")
            continue
        if kind == 1:
            good = image[:4] == b"\x7fELF" and image[4] == 2
            check(f"bundle: entry {i} is an sm_{arch} cubin (ELF64)", good, f"starts {image[:8]!r}")
        elif kind == 2:
            text = image[:-1].decode(errors="replace")
            good = image.endswith(b"\0") and b"\0" not in image[:-1] and re.search(rf"^\.target sm_{arch}\b", text, re.M)
            check(f"bundle: entry {i} is compute_{arch} PTX (.target sm_{arch}, NUL-terminated)", bool(good),
                  f"starts {image[:40]!r}")
        else:
            check(f"bundle: entry {i} has a known kind", False, f"kind {kind}")
        kinds.append(kind)
    check("bundle: a cubin and the PTX", sorted(set(kinds)) == [1, 2], f"kinds {kinds}")


def build(mlc, work, emit, out):
    r = subprocess.run([mlc, "build", MODEL, "--target", "cuda", "--emit", emit, "--keep-temps", "-o", out],
                       capture_output=True, text=True)
    if "NVRTC" in r.stderr and "not found" in r.stderr:
        print(f"[SKIP] NVRTC missing: {r.stderr.strip()}")
        sys.exit(77)
    m = re.search(r"temporaries kept in (\S+)", r.stderr)
    check(f"--emit {emit}: builds, keeping its temporaries", r.returncode == 0 and m, r.stderr.strip())
    return m.group(1) if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mlc", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    first = None
    for emit, name in (("obj", "regression.o"), ("lib", "libregression.a"), ("exe", "regression")):
        out = os.path.join(a.work, name)
        tmp = build(a.mlc, a.work, emit, out)
        if not tmp:
            continue
        with open(os.path.join(tmp, "cuda_bundle.bin"), "rb") as f:
            want = f.read()
        with open(out, "rb") as f:
            data = f.read()
        shutil.rmtree(tmp)
        try:
            check_object(f"--emit {emit}", ar_member(data, "cuda_bundle.o") if emit == "lib" else data, want)
        except ValueError as e:
            check(f"--emit {emit}: the output reads", False, str(e))
        if first is None:
            first = want
            check_bundle(want)
        else:
            check(f"--emit {emit}: the same bundle as --emit obj", want == first, "the bundles differ")
    print(f"{'FAIL' if failed else 'ok'}: {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
