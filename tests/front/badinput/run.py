#!/usr/bin/python3
"""run.py - hostile inputs and arguments for `mlc check` (Python standard library only).

    tests/front/badinput/run.py --mlc build/mlc [--timeout S] [FILTER...]

Generates each input into a temporary folder (random bytes come from a fixed
seed, so every run sees the same files) and runs mlc on it. Every case must
  - end by itself: no signal, within the timeout (default 30 s: a hang, not a slow machine), under a
    4 GiB address-space limit;
  - exit with one of the codes the case allows (1 for unusable input,
    2 for a usage error, 0 or 1 where the input may well be valid);
  - when it exits non-zero, say so on stderr, naming the file for file cases.
Prints `[PASS] name (seconds)` or `[FAIL] name` with the reason, then
`N passed, N failed`; exits 1 when anything failed.
"""

import argparse
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time

MAX_AS = 4 << 30  # bytes of address space each mlc run may map


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MAX_AS, MAX_AS))


# ---- inputs -----------------------------------------------------------------------
# Each maker returns the file's bytes.

def fn_returning(expr):
    return b"fn f(x: f32) -> f32 {\n  return " + expr + b"\n}\n"


def binary_garbage():
    rng = random.Random(20240601)
    return bytes(rng.randrange(256) for _ in range(64 * 1024))


def invalid_utf8():
    return (b"model M\xff\xfe {\n"
            b"  fc = Linear(784, 10)  # caf\xc3\x28 \xed\xa0\x80 \xf8\x88\x80\x80\x80\n"
            b"  forward(x: f32[B, 784]) -> f32[B, 10] {\n"
            b"    r\xe9sultat = fc(x)\n"
            b"    return fc(x)\n"
            b"  }\n"
            b"}\n")


TEN_MB = 10 * 1024 * 1024


def ten_mb_one_function():
    # About 140,000 valid statements in one function body.
    line = b"  h = relu(x * 2.0 + x) - x / 3.0   # a comment to make the line longer\n"
    return (b"fn big(x: f32[B, 784]) -> f32[B, 784] {\n" + line * (TEN_MB // len(line)) +
            b"  return h\n}\n")


def ten_mb_many_functions():
    # About 127,000 small valid functions (g0, g1, ...; f16 would be a dtype).
    out, size, i = [], 0, 0
    while size < TEN_MB:
        item = (b"fn g%d(x: f32[B, 784]) -> f32[B, 784] {\n"
                b"  return relu(x * 2.0 + x) - x / 3.0\n}\n" % i)
        out.append(item)
        size += len(item)
        i += 1
    return b"".join(out)


def nul_bytes():
    return b"model M {\n  fc = Linear(784, 10)\0\n\0\0\0\n}\n\0"


def many_errors():
    return b"$ ` ?\n" * 50000


CASES_FILES = [
    # name, bytes maker, allowed exit codes
    ("empty file", lambda: b"", {0, 1}),
    ("binary garbage (64 KiB, fixed seed)", binary_garbage, {1}),
    ("invalid UTF-8", invalid_utf8, {1}),
    ("10 MB file: one function of 140,000 statements", ten_mb_one_function, {0, 1}),
    ("10 MB file: 127,000 small functions", ten_mb_many_functions, {0, 1}),
    ("10,000 nested parentheses", lambda: fn_returning(b"(" * 10000 + b"x" + b")" * 10000), {0, 1}),
    ("10,000 nested brackets", lambda: fn_returning(b"[" * 10000 + b"x" + b"]" * 10000), {0, 1}),
    ("10,000 nested unary minus", lambda: fn_returning(b"-" * 10000 + b"x"), {0, 1}),
    ("10,000-term sum", lambda: fn_returning(b" + ".join([b"x"] * 10000)), {0, 1}),
    ("100,000-character identifier", lambda: fn_returning(b"a" * 100000), {1}),
    ("NUL bytes", nul_bytes, {1}),
    ("50,000 lines of stray characters", many_errors, {1}),
    ("unterminated block at end of file", lambda: b"model M {\n  forward(x: f32) -> f32 {\n", {1}),
    ("unterminated string", lambda: b'train M {\n  data { x = idx("abc\n', {1}),
]


# ---- running ---------------------------------------------------------------------

def run(mlc, args, timeout):
    """Returns (rc, stderr text, seconds); rc None on timeout."""
    t0 = time.monotonic()
    proc = subprocess.Popen([mlc] + args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, preexec_fn=limit_memory,
                            start_new_session=True)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None, "", time.monotonic() - t0
    return proc.returncode, err.decode("utf-8", errors="replace"), time.monotonic() - t0


def judge(rc, err, allowed, must_name):
    """Returns the reasons the run is wrong (empty when it is right)."""
    if rc is None:
        return ["did not finish within the timeout (hang or far too slow)"]
    if rc < 0:
        try:
            sig = signal.Signals(-rc).name
        except ValueError:
            sig = "signal %d" % -rc
        return ["crashed: killed by %s" % sig]
    why = []
    if rc not in allowed:
        why.append("exit %d, expected %s" % (rc, " or ".join(map(str, sorted(allowed)))))
    if rc != 0 and not err.strip():
        why.append("exit %d with nothing on stderr" % rc)
    if rc != 0 and must_name and must_name not in err:
        why.append("stderr does not name %s" % must_name)
    return why


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mlc", required=True)
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("filters", nargs="*", metavar="FILTER")
    opts = ap.parse_args()
    mlc = os.path.abspath(opts.mlc)

    passed = failed = 0

    def report(name, rc, err, secs, allowed, must_name):
        nonlocal passed, failed
        why = judge(rc, err, allowed, must_name)
        if why:
            failed += 1
            print("[FAIL] %s" % name)
            for w in why:
                print("    " + w)
            tail = err.strip().splitlines()[:5]
            for ln in tail:
                print("    | " + ln[:200])
        else:
            passed += 1
            print("[PASS] %s (%.2f s, exit %d)" % (name, secs, rc))

    def wanted(name):
        return not opts.filters or any(f in name for f in opts.filters)

    with tempfile.TemporaryDirectory(prefix="mlc-badinput-") as tmp:
        for i, (name, make, allowed) in enumerate(CASES_FILES):
            if not wanted(name):
                continue
            path = os.path.join(tmp, "case%02d.model" % i)
            with open(path, "wb") as f:
                f.write(make())
            rc, err, secs = run(mlc, ["check", path], opts.timeout)
            report(name, rc, err, secs, allowed, path)

        # Paths that cannot be read as a file.
        plain = os.path.join(tmp, "plain.model")
        with open(plain, "wb") as f:
            f.write(b"fn f(x: f32) -> f32 {\n  return x\n}\n")
        folder = os.path.join(tmp, "folder.model")
        os.mkdir(folder)
        paths = [
            ("missing file", os.path.join(tmp, "no-such-file.model")),
            ("a directory", folder),
            ("a path under a non-directory", os.path.join(plain, "x.model")),
        ]
        for name, path in paths:
            if wanted(name):
                rc, err, secs = run(mlc, ["check", path], opts.timeout)
                report(name, rc, err, secs, {1}, path)

        # Usage errors: exit 2 and a message.
        usage = [
            ("no arguments", [], None),
            ("unknown option", ["--frobnicate"], "--frobnicate"),
            ("unknown option after check", ["check", "--frobnicate", plain], "--frobnicate"),
            ("unknown command", ["frobnicate"], "frobnicate"),
            ("check without a file", ["check"], None),
        ]
        for name, args, must_name in usage:
            if wanted(name):
                rc, err, secs = run(mlc, args, opts.timeout)
                report(name, rc, err, secs, {2}, must_name)

    if passed + failed == 0:
        print("[FAIL] no case matches the filter")
        failed = 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
