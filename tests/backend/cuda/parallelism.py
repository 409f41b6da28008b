#!/usr/bin/env python3
"""parallelism.py - every launch of the gpu programs has enough parallelism.

    tests/backend/cuda/parallelism.py --mlc build/mlc MODEL...

Runs `mlc build MODEL --target cuda --report` (the recipe's batch) for each
MODEL and reads its "gpu launches" section (compiler/driver/report_gpu.c):
per launch of train_step, eval and predict the grid, the block, and the
longest thread's chain (serial loop trips and updates). The rule, which
the report applies and marks with `!`: a launch fails when its thread's
chain passes 8192 updates (scaled by threads / 16,896 above 16,896 threads,
132 SMs x 128: a launch of several full waves may run longer chains), or when its work (threads x updates) passes
2^22 with fewer than 4096 threads. The script checks the marks and
recomputes the rule from the columns, so a report that stopped marking
fails too; it also fails when a program has no launch table at all.
Exit status 0 when every launch passes, 1 otherwise.

    tests/backend/cuda/parallelism.py --mlc build/mlc [--batch N] --unmarked K1,K2 MODEL...

checks the marks only (each must agree with the rule recomputed from the
columns; a marked launch elsewhere is allowed) and that the kernels K1, K2
have launches and none of them is marked: tests/backend/cuda/gemm/wide.model's
z @ wz (K = 600 in 4 x 4 outputs a thread, 256 blocks) fills the GPU and
passes the chain bound scaled by its threads.
"""
import argparse
import re
import subprocess
import sys

CHAIN_MAX = 8192
WORK_MAX = 1 << 22
MIN_THREADS = 4096
FILL = 132 * 128
ROW = re.compile(r"^\s+(\d+)\s+(\S+)\s+(\d+/\d+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)(\s+!)?\s*$")


def num(s):
    return int(s.replace(",", ""))


def check(mlc, model, unmarked, batch):
    cmd = [mlc, "build", model, "--target", "cuda", "--report"] + (["--batch", str(batch)] if batch else [])
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        print(f"[FAIL] {model}: mlc build --report exited {out.returncode}\n{out.stderr}")
        return False
    text = out.stdout
    if "gpu launches at batch" not in text:
        print(f"[FAIL] {model}: no gpu launches section in the report")
        return False
    section = text.split("gpu launches at batch", 1)[1].split("peak memory", 1)[0]
    ok, prog, seen = True, None, {}
    for line in section.splitlines():
        if re.match(r"^[a-z_]+:$", line):
            prog = line[:-1]
            seen[prog] = 0
            continue
        m = ROW.match(line)
        if not m or prog is None:
            continue
        seen[prog] += 1
        kernel, launch = m.group(2), m.group(3)
        threads, updates = num(m.group(6)), num(m.group(8))
        chain_max = CHAIN_MAX * threads // FILL if threads > FILL else CHAIN_MAX
        bad = updates > chain_max or (threads < MIN_THREADS and threads * updates > WORK_MAX)
        marked = m.group(9) is not None
        if unmarked is not None and kernel in unmarked:
            unmarked[kernel] += 1
        if marked != bad or (bad and (unmarked is None or kernel in unmarked)):
            ok = False
            print(f"[FAIL] {model}: {prog} {kernel} launch {launch}: {threads} threads, a chain of {updates} updates"
                  + ("" if marked == bad else " (the report's mark disagrees)"))
    for p in ("train_step", "eval", "predict"):
        if not seen.get(p):
            ok = False
            print(f"[FAIL] {model}: no launches of {p} in the report")
    for k, n in (unmarked or {}).items():
        if not n:
            ok = False
            print(f"[FAIL] {model}: no launch of {k} in the report")
    if ok and unmarked is not None:
        print(f"[PASS] {model}: every mark agrees with the rule; {', '.join(unmarked)} unmarked")
    elif ok:
        n = sum(seen.values())
        print(f"[PASS] {model}: {n} launches, none with a chain over {CHAIN_MAX} updates or more than 2^22 of work "
              f"on fewer than {MIN_THREADS} threads")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mlc", required=True)
    ap.add_argument("--unmarked", help="kernels that must be unmarked; other marks only checked against the rule")
    ap.add_argument("--batch", type=int, help="the report's batch (default: the recipe's)")
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()
    results = [check(a.mlc, m, None if a.unmarked is None else {k: 0 for k in a.unmarked.split(",")}, a.batch)
               for m in a.models]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
