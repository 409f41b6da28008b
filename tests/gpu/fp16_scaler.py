#!/usr/bin/env python3
"""fp16_scaler.py — f16 training with dynamic loss scaling on the GPU against
the CPU (stdlib only; tests/gpu/run.sh's fp16 step).

    tests/gpu/fp16_scaler.py --mlc build/mlc --work DIR [--steps N]
                             [--fake FAKE_LIBCUDA_DIR --cc CC]

examples/char_transformer.model, its recipe given `loss_scale
dynamic(init_scale = 2.0 ** 40, growth_interval = 10)` (docs/language.md
"Loss scaling": GradScaler's rule), is built with `--target cpu,cuda
--precision f16` and trained N steps from the same seed on generated text
windows (int64 [N, 64] NPY files written here), once with `--device cpu`
and once with `--device cuda`, every step logged. The matmuls round their
operands to f16 on both devices, so a gradient operand whose scaled value
passes f16's 65504 is an overflow on both: the first steps overflow and are
skipped while the scale halves, and every 10 good steps it doubles, which
may overflow again. The check is that the two runs take the same decisions
at every step (the scale, the overflow flag, the skipped-step count, all
equal), that their losses stay within 2e-2 relative of each other (the
GPU's block reductions sum in another order, and the runs drift apart by
rounding only), that every loss is finite, that some step overflowed, and
(for 20 steps or more) that the last loss is below the first.

With --fake the CUDA run goes through the fake driver
(tests/backend/cuda/fake_libcuda.c, kernels under the CPU emulation), a
rehearsal of the script where there is no GPU; keep N small there.
Prints one line per check and a summary; exit 0 when all hold, 1 otherwise.
"""
import argparse
import json
import os
import struct
import subprocess
import sys

MODEL = "examples/char_transformer.model"
WIDTH = 64  # the model's context length


def write_npy(path, rows):
    """An int64 [len(rows), WIDTH] NPY file (format 1.0, little endian)."""
    head = "{'descr': '<i8', 'fortran_order': False, 'shape': (%d, %d), }" % (len(rows), WIDTH)
    head += " " * ((64 - (10 + len(head) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode())
        for r in rows:
            f.write(struct.pack("<%dq" % WIDTH, *r))


def write_data(work):
    """Windows of a text of random words (a fixed LCG), characters as ids 0..26
    (the model has 65 classes), and the same windows shifted by one."""
    words = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "and", "runs", "far",
             "away", "then", "sleeps"]
    state, text = 12345, []
    for _ in range(30000):
        state = (state * 1103515245 + 12345) % 2**31
        text.append(words[(state >> 16) % len(words)])
    ids = [0 if c == " " else ord(c) - ord("a") + 1 for c in " ".join(text)]

    def windows(lo, n):
        return ([ids[lo + WIDTH * i:lo + WIDTH * i + WIDTH] for i in range(n)],
                [ids[lo + WIDTH * i + 1:lo + WIDTH * i + WIDTH + 1] for i in range(n)])

    x, y = windows(0, 1536)
    write_npy(os.path.join(work, "x.npy"), x)
    write_npy(os.path.join(work, "y.npy"), y)
    x, y = windows(WIDTH * 1536 + 7, 64)
    write_npy(os.path.join(work, "vx.npy"), x)
    write_npy(os.path.join(work, "vy.npy"), y)


SCALER = "loss_scale dynamic(init_scale = 2.0 ** 40, growth_interval = 10)"


def build(a, work):
    prog, model = os.path.join(work, "char16"), os.path.join(work, "char16.model")
    with open(MODEL) as f:
        text = f.read()
    anchor = "  clip grad_norm = 1.0\n"
    if anchor not in text:
        raise SystemExit("%s: no '%s' line to put the loss scale after" % (MODEL, anchor.strip()))
    with open(model, "w") as f:
        f.write(text.replace(anchor, anchor + "  " + SCALER + "\n"))
    base = [a.mlc, "build", model, "--precision", "f16"]
    subprocess.run(base + ["--target", "cpu,cuda", "-o", prog], check=True, timeout=900)
    if a.fake:  # the fake driver runs the kernels from an emulation object of the same CUDA C
        cu, so = os.path.join(work, "dev.cu"), os.path.join(work, "emu.so")
        subprocess.run(base + ["--target", "cuda", "--emit", "cuda", "-o", cu], check=True, timeout=900)
        subprocess.run([a.cc, "-std=gnu17", "-O1", "-g0", "-shared", "-fPIC", "-ffp-contract=off", "-w",
                        "-Ikernels/cuda", "-x", "c", cu, "kernels/cuda/cuda_emu.c", "-o", so, "-lm"],
                       check=True, timeout=900)
    return prog


def train(a, work, prog, device):
    env = dict(os.environ)
    if a.fake and device == "cuda":
        env["LD_LIBRARY_PATH"] = os.path.abspath(a.fake)
        env["MLC_FAKE_CUDA_MODULE"] = os.path.join(work, "emu.so")
    metrics = os.path.join(work, device + ".jsonl")
    args = [prog, "train", "--device", device, "--max-steps", str(a.steps), "--log-every", "1",
            "--metrics", metrics, "--train-data", "x.npy,y.npy", "--test-data", "vx.npy,vy.npy"]
    p = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True, timeout=1200)
    if p.returncode:
        raise SystemExit("%s run failed (status %d):\n%s" % (device, p.returncode, p.stderr[-2000:]))
    with open(metrics) as f:
        return [r for r in (json.loads(line) for line in f if line.strip()) if r["type"] == "step"]


def compare(cpu, gpu, steps):
    problems = []
    if len(cpu) != steps or len(gpu) != steps:
        problems.append("logged steps: cpu %d, cuda %d, want %d" % (len(cpu), len(gpu), steps))
    keys = ("loss_scale", "overflow", "skipped_steps")
    for c, g in zip(cpu, gpu):
        if any(k not in c for k in keys):
            problems.append("step %d: no loss scaler in the metrics (%s)" % (c["step"], sorted(c)))
            break
        if tuple(c[k] for k in keys) != tuple(g[k] for k in keys):
            problems.append("step %d: scale/overflow/skipped cpu %s, cuda %s" %
                            (c["step"], [c[k] for k in keys], [g[k] for k in keys]))
            break
        lc, lg = c["loss"], g["loss"]
        if lc != lc or lg != lg or abs(lc) == float("inf") or abs(lg) == float("inf"):
            problems.append("step %d: a non-finite loss (cpu %r, cuda %r)" % (c["step"], lc, lg))
            break
        if abs(lc - lg) > 2e-2 * max(1.0, abs(lc)):
            problems.append("step %d: loss cpu %.6g, cuda %.6g: more than 2e-2 apart" % (c["step"], lc, lg))
            break
    if not any(r.get("overflow") for r in cpu):
        problems.append("no step overflowed: the scaler's backoff was not exercised")
    for name, run in (("cpu", cpu), ("cuda", gpu)):
        if steps >= 20 and len(run) >= 2 and not run[-1]["loss"] < run[0]["loss"]:
            problems.append("%s: the loss did not fall (%.6g -> %.6g)" % (name, run[0]["loss"], run[-1]["loss"]))
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mlc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--fake", help="the fake libcuda.so.1's folder (a rehearsal without a GPU)")
    ap.add_argument("--cc", default="cc")
    a = ap.parse_args()
    a.mlc = os.path.abspath(a.mlc)
    work = os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    write_data(work)
    prog = build(a, work)
    cpu = train(a, work, prog, "cpu")
    gpu = train(a, work, prog, "cuda")
    problems = compare(cpu, gpu, a.steps)
    for p in problems:
        print("[FAIL] " + p)
    skipped = gpu[-1].get("skipped_steps") if gpu else None
    print("char_transformer f16, %d steps: loss %.4f -> %.4f (cuda) / %.4f (cpu), final scale %s, "
          "%s skipped steps%s" % (a.steps, gpu[0]["loss"] if gpu else float("nan"),
                                 gpu[-1]["loss"] if gpu else float("nan"),
                                 cpu[-1]["loss"] if cpu else float("nan"),
                                 gpu[-1].get("loss_scale") if gpu else "?", skipped,
                                 "" if not problems else ": FAILED"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
