#!/usr/bin/python3
"""run_fuzz.py — the convolution differential tester's driver.

For each seed, gen_conv.py writes a random model, and test_e2e_agree
checks it: train_step, eval and predict compiled as `mlc build` compiles
them against the graph interpreter, fused and --no-fuse, at the model's
batch size, and one train step, eval and predict on pools of 1, 2 and 3
threads, which must give the same bytes, and for the seeds the generator
marks, with --conv winograd and at --precision bf16 (a seed from
gen_conv.EXT on over two steps, its recipe's own). A model the compiler
rejects, a crash, a timeout or any [FAIL] line fails the seed.

With --parity build/tests/test_parity, every --parity-every'th seed (and
each seed of seeds.txt marked "parity") is also checked against PyTorch: torch_ref.py
writes the model's twin's f64 and f32 loss and gradients, and test_parity
runs the reference interpreter on the same weights and batch (f64 within
1e-9, f32 within 1e-4 of PyTorch, test_parity.c's norms).

Usage: run_fuzz.py --tool build/tests/test_e2e_agree [--seeds N | --seed S...]
                   [--first S] [--keep DIR] [--jobs J]
                   [--parity build/tests/test_parity [--parity-every K]]
  default: the minimised models of tests/fuzz_conv/regress/ (each with its
  options on its first line, "# agree: --batch 2 --dim H=13"), the seeds of
  tests/fuzz_conv/seeds.txt, then MLC_FUZZ_SEEDS (default 0) more, counting
  up from --first (default 1000). Exits 1 when any seed fails, printing
  its seed and the tool's [FAIL] lines (77 when all pass but --parity was
  asked for and /usr/bin/python3 has no torch); --keep DIR keeps every
  failing model there.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_conv  # noqa: E402


def tool_args(cfg, path):
    a = ["--batch", str(cfg["batch"]), "--threads", "1,2,3", "--steps", str(cfg.get("steps", 1))]
    if (cfg["bf16"] or cfg.get("f16")) and any(l["act"] in ("tanh", "silu", "sigmoid", "elu") for l in cfg["layers"]):
        # libm's tanhf and expf are an ulp from the interpreter's double
        # ones; a 16-bit operand rounding can make that 2^-9 of an element
        # (tests/fuzz_dense/run.py's tolerance at these precisions)
        a += ["--tol", "2e-3"]
    for k, v in sorted(cfg["dims"].items()):
        a += ["--dim", "%s=%d" % (k, v)]
    if cfg["winograd"]:
        a.append("--winograd")
    if cfg["bf16"]:
        a += ["--precision", "bf16"]
    return a + [path]


def parity(tool, seed, tmp, timeout):
    """(ok, output) of the PyTorch comparison of seed's model."""
    env = dict(os.environ, OPENBLAS_CORETYPE="Cooperlake")
    sub = os.path.join(tmp, "parity_%d" % seed)
    os.makedirs(sub, exist_ok=True)
    try:
        p = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "torch_ref.py"), str(seed), sub],
                           capture_output=True, text=True, timeout=timeout, env=env)
        if p.returncode:
            return False, "torch_ref.py: " + p.stdout + p.stderr
        p = subprocess.run([tool, p.stdout.strip()], capture_output=True, text=True, timeout=timeout)
        out = p.stdout + p.stderr
        return p.returncode == 0 and "[PASS]" in out, out
    except subprocess.TimeoutExpired:
        return False, "parity: timeout"


def check(tool, seed, tmp, timeout, parity_tool=None):
    src, cfg = gen_conv.gen(seed)
    path = os.path.join(tmp, "fuzz_conv_%d.model" % seed)
    with open(path, "w") as f:
        f.write(src)
    t0 = time.time()
    try:
        p = subprocess.run([tool] + tool_args(cfg, path), capture_output=True, text=True, timeout=timeout)
        out, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), "timeout"
    fails = [l for l in out.splitlines() if l.startswith("[FAIL]")]
    passes = sum(1 for l in out.splitlines() if l.startswith("[PASS]"))
    ok = rc == 0 and not fails and passes > 0
    if parity_tool:
        pok, pout = parity(parity_tool, seed, tmp, timeout)
        ok = ok and pok
        out += "\n" + "\n".join("[parity] " + l for l in pout.splitlines()) if not pok else ""
        out += "" if not pok else "\n[PASS] parity with PyTorch"
    return seed, ok, cfg, path, out, rc, time.time() - t0


def check_model(tool, path, timeout):
    """A regression model of regress/: its first line "# agree: ARGS" gives
    test_e2e_agree's options (with --threads 1,2,3 --steps 1 always)."""
    with open(path) as f:
        first = f.readline()
    args = first.split("agree:", 1)[1].split() if "agree:" in first else []
    t0 = time.time()
    try:
        p = subprocess.run([tool, "--threads", "1,2,3", "--steps", "1"] + args + [path], capture_output=True, text=True, timeout=timeout)
        out, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired:
        out, rc = "", "timeout"
    ok = rc == 0 and "[FAIL]" not in out and "[PASS]" in out
    print("[%s] %s (%.1fs)" % ("PASS" if ok else "FAIL", os.path.relpath(path), time.time() - t0), flush=True)
    if not ok:
        print("  rc %s" % rc)
        for l in out.splitlines():
            if not l.startswith("[PASS]"):
                print("  " + l)
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--seeds", type=int, default=int(os.environ.get("MLC_FUZZ_SEEDS", "0")))
    ap.add_argument("--first", type=int, default=1000)
    ap.add_argument("--seed", type=int, action="append", default=[])
    ap.add_argument("--no-regressions", action="store_true")
    ap.add_argument("--keep")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--parity")
    ap.add_argument("--parity-every", type=int, default=4)
    a = ap.parse_args()
    seeds = list(a.seed)
    regress = set()
    if not a.seed and not a.no_regressions:
        with open(os.path.join(HERE, "seeds.txt")) as f:
            lines = [l.split("#")[0].split() for l in f]
        seeds += [int(l[0]) for l in lines if l]
        regress = {int(l[0]) for l in lines if l and "parity" in l[1:]}
    drawn = set(a.seed) if a.seed else set(range(a.first, a.first + a.seeds))
    if not a.seed:
        seeds += list(range(a.first, a.first + a.seeds))
    no_torch = False
    if a.parity and subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True).returncode:
        print("[SKIP] parity with PyTorch: /usr/bin/python3 has no torch")
        a.parity, no_torch = None, True
    tmp = tempfile.mkdtemp(prefix="fuzz_conv_")
    nfail = 0
    if not a.seed and not a.no_regressions:
        rdir = os.path.join(HERE, "regress")
        models = sorted(os.path.join(rdir, m) for m in os.listdir(rdir) if m.endswith(".model"))
        for m in models:
            nfail += not check_model(a.tool, m, a.timeout)
        print("%d regression models, %d failed" % (len(models), nfail))
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for seed, ok, cfg, path, out, rc, dt in ex.map(lambda s: check(
                a.tool, s, tmp, a.timeout,
                a.parity if a.parity and (s in regress or s in drawn and s % a.parity_every == 0) else None), seeds):
            tag = "PASS" if ok else "FAIL"
            if ok and "[PASS] parity" in out:
                shape = "(+ PyTorch) "
            else:
                shape = ""
            shape += " ".join("%d->%d k%s s%s p%s d%s g%d%s%s" % (
                l["cin"], l["cout"], "x".join(map(str, l["k"])), "x".join(map(str, l["s"])),
                "x".join(map(str, l["p"])), "x".join(map(str, l["d"])), l["g"],
                " " + l["act"] if l["act"] != "none" else "", " pool" if l["pool"] else "") for l in cfg["layers"])
            print("[%s] seed %d (%.1fs): batch %d in %s: %s%s%s" % (
                tag, seed, dt, cfg["batch"], "x".join(map(str, cfg["input"])) + (" (H, W)" if cfg["dims"] else ""), shape,
                " winograd" if cfg["winograd"] else "", " bf16" if cfg["bf16"] else " f16" if cfg.get("f16") else ""), flush=True)
            if not ok:
                nfail += 1
                print("  rc %s" % rc)
                for l in out.splitlines():
                    if not l.startswith("[PASS]"):
                        print("  " + l)
                if a.keep:
                    os.makedirs(a.keep, exist_ok=True)
                    shutil.copy(path, a.keep)
    shutil.rmtree(tmp)
    print("%d seeds, %d failed" % (len(seeds), nfail))
    return 1 if nfail else 77 if no_torch else 0


if __name__ == "__main__":
    sys.exit(main())
