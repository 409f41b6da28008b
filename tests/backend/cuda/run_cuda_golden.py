#!/usr/bin/python3
"""run_cuda_golden.py - CUDA printer goldens: scheduled .kir in, .cu out.

    tests/backend/cuda/run_cuda_golden.py --tool build/tests/cuda_tool [--update] [FILTER...]

Each tests/backend/cuda/golden/NAME.kir starts with a line

    ; args: ARGS                       (cuda_tool's options, e.g. --host)

and is run as `cuda_tool ARGS tests/backend/cuda/golden/NAME.kir` from the
repository root; its stdout (the device source, with --host the host source
after it, or the refusal) must equal NAME.cu. `; expect: error` on the second
line says the exit status must be 1 (a refusal the case exists to show),
otherwise 0. --update rewrites the .cu files (never from a crash). Output:
[PASS]/[FAIL] per case and `N passed, N failed`; exit 1 when anything failed.
"""

import argparse
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(REPO, "tests"))
import run_golden  # noqa: E402  (tests/run_golden.py)

FOLDER = "tests/backend/cuda/golden"


def directives(path):
    with open(path, encoding="utf-8") as f:
        first, second = f.readline(), f.readline()
    if not first.startswith("; args:"):
        return None, False
    return shlex.split(first[len("; args:"):]), second.strip() == "; expect: error"


def check(opts, path):
    res = run_golden.Result()
    args, want_error = directives(path)
    if args is None:
        res.fail("first line must be '; args: ...'")
        return res
    try:
        rc, out, err = run_golden.run_mlc(opts.tool, args, path, opts.timeout)
    except subprocess.TimeoutExpired:
        res.fail("timed out after %g s" % opts.timeout)
        return res
    if rc != (1 if want_error else 0):
        res.fail("expected exit %d, got %s" % (1 if want_error else 0, run_golden.describe_rc(rc)))
        if err:
            res.fail("stderr:\n" + run_golden.text(err).rstrip("\n"))
    golden = os.path.splitext(path)[0] + ".cu"
    return run_golden.compare_golden(res, golden, out, "stdout", opts.update and rc in (0, 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tool", required=True, help="path to cuda_tool")
    ap.add_argument("--update", action="store_true", help="rewrite the goldens")
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("filters", nargs="*", metavar="FILTER")
    opts = ap.parse_args()
    opts.tool = os.path.abspath(opts.tool)
    os.chdir(REPO)
    names = sorted(os.listdir(FOLDER))
    cases = [os.path.join(FOLDER, n) for n in names if n.endswith(".kir")]
    orphans = [os.path.join(FOLDER, n) for n in names
               if n.endswith(".cu") and n[:-len(".cu")] + ".kir" not in names]
    if opts.filters:
        cases = [c for c in cases if any(f in c for f in opts.filters)]
    passed = failed = 0
    for path in orphans:
        print("[FAIL] %s: golden without a .kir input" % path)
        failed += 1
    for path in cases:
        if run_golden.print_result(path, check(opts, path)):
            passed += 1
        else:
            failed += 1
    if not cases:
        print("[FAIL] no cases in %s" % FOLDER)
        failed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
