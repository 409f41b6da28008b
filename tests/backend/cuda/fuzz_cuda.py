#!/usr/bin/python3
"""fuzz_cuda.py — the random models of the differential testers through the CUDA printer.

For each seed, tests/fuzz_conv/gen_conv.py or tests/fuzz_dense/gen.py
writes a random model, and test_cuda_examples checks its CUDA C:

  emu    the printed kernels under the CPU emulation (kernels/cuda/cuda_emu.h)
         against the graph interpreter and the CPU backend: train_step, eval
         and predict at the model's batch (--batches=N), its symbolic planes
         or sequence length at the generator's sizes (--dim=H=h, --dim=T=t)
  nvrtc  NVRTC compiles the device source for sm_90 and ptxas accepts the PTX

--precision bf16|f16 builds every model at that precision (else the
model's own). A [FAIL] line, a crash, a model the pipeline refuses or a
timeout fails the seed; the failing models are kept with --keep DIR.

Usage: fuzz_cuda.py --gen conv|dense --mode emu|nvrtc [--seeds A-B | --seed S...]
                    [--precision P] [--jobs J] [--timeout S] [--keep DIR]
                    [--tool build/tests/test_cuda_examples] [--cc cc]
                    [--ptxas /usr/local/cuda/bin/ptxas] [--workdir DIR]
Exits 1 when any seed fails, printing its seed and the tool's [FAIL] lines.
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "fuzz_conv"))
sys.path.insert(0, os.path.join(ROOT, "tests", "fuzz_dense"))
import gen as gen_dense  # noqa: E402
import gen_conv  # noqa: E402


def model(kind, seed):
    """(text, batch, {symbol: size}) of seed's model."""
    if kind == "conv":
        src, cfg = gen_conv.gen(seed)
        return src, cfg["batch"], dict(cfg["dims"])
    src, _ = gen_dense.generate_spec(seed)
    args = re.match(r"# fuzz: (.*)", src).group(1).split()
    opts = dict(zip(args[0::2], args[1::2]))
    return src, int(opts["--batch"]), {"T": int(opts["--seq"])} if "--seq" in opts else {}


def check(a, seed, tmp):
    src, batch, dims = model(a.gen, seed)
    name = "%s_%d" % (a.gen, seed)
    path = os.path.join(tmp, name + ".model")
    with open(path, "w") as f:
        f.write(src)
    opts = ["--precision=" + a.precision] if a.precision else []
    if a.mode == "emu":
        opts += ["--batches=%d" % batch] + ["--dim=%s=%d" % kv for kv in sorted(dims.items())]
    tool = a.cc if a.mode == "emu" else a.ptxas
    t0 = time.time()
    try:
        p = subprocess.run([a.tool, a.mode, a.workdir, tool] + opts + [path], capture_output=True, text=True,
                           timeout=a.timeout, cwd=ROOT)
        out, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired:
        out, rc = "timeout after %d s" % a.timeout, -1
    ok = rc == 0 and "[FAIL]" not in out and "[PASS]" in out
    if not ok and a.keep:
        os.makedirs(a.keep, exist_ok=True)
        shutil.copy(path, a.keep)
    return seed, ok, time.time() - t0, out


def seeds(a):
    if a.seed:
        return a.seed
    lo, hi = (int(x) for x in a.seeds.split("-"))
    return list(range(lo, hi + 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gen", choices=["conv", "dense"], required=True)
    ap.add_argument("--mode", choices=["emu", "nvrtc"], required=True)
    ap.add_argument("--seeds", default="0-9")
    ap.add_argument("--seed", type=int, action="append")
    ap.add_argument("--precision", choices=["bf16", "f16"])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--keep")
    ap.add_argument("--tool", default=os.path.join(ROOT, "build", "tests", "test_cuda_examples"))
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--ptxas", default="/usr/local/cuda/bin/ptxas")
    ap.add_argument("--workdir")
    a = ap.parse_args()
    a.tool = os.path.abspath(a.tool)
    tmp = tempfile.mkdtemp(prefix="fuzz_cuda_")
    a.workdir = a.workdir or tmp
    fails = 0
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for seed, ok, secs, out in ex.map(lambda s: check(a, s, tmp), seeds(a)):
            print("%s %s seed %d (%.1f s)" % ("[PASS]" if ok else "[FAIL]", a.gen, seed, secs), flush=True)
            if not ok:
                fails += 1
                bad = [l for l in out.splitlines() if "[FAIL]" in l or "error" in l]
                print("\n".join("    " + l for l in (bad or out.splitlines()[-8:])[:12]), flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    n = len(seeds(a))
    print("%d seeds, %d passed, %d failed" % (n, n - fails, fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
