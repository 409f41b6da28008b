#!/usr/bin/python3
"""run.py: the dense/sequence differential fuzz test.

    run.py AGREE [--seeds N] [--first S] [--big] [--keep DIR] [MODEL...]

AGREE is build/tests/test_e2e_agree. Each model (the regression cases given
as MODEL, then gen.py's seeds: S..S+N-1 with --seeds N or $MLC_FUZZ_SEEDS=N,
S from --first or 0; otherwise the fixed DEFAULT_SEEDS, small models that
keep the suite's run short; --big or $MLC_FUZZ_BIG=1: gen.py --big)
runs under test_e2e_agree with the options its `# fuzz:` line names plus
--threads 1,2,3 --steps 3 --rows: train_step, eval and predict compiled
(fused and --no-fuse) against the graph interpreter, three steps of
train_step then eval and predict the same bits at 1, 2 and 3 threads, and
predict at batch 1 row by row the same bits as at the batch. A failing,
crashing or hanging check (or a model the pipeline rejects) fails the run;
the failing models are written to --keep (default: a temporary dir) and
named at the end. Exit 0 only if every model passed.
"""
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen  # noqa: E402

# the default suite's seeds (each a few seconds): MLPs and a sequence model,
# batches 1 to 129; sgd with momentum, nesterov and weight decay, adam,
# adamw; accumulation, clipping, a parameter group, cosine, exponential and
# multistep schedules, bf16
DEFAULT_SEEDS = [0, 4, 6, 9, 15, 16]


def fuzz_args(text):
    first = text.split("\n", 1)[0]
    return first[len("# fuzz:"):].split() if first.startswith("# fuzz:") else []


def check(agree, path, text, timeout):
    cmd = [agree, "--threads", "1,2,3", "--steps", "3", "--rows"] + fuzz_args(text) + [path]
    if "precision bf16" in text or "precision f16" in text:
        # libm's tanhf and erff are within an ulp or two of the interpreter's
        # double-precision results; a 16-bit operand rounding can turn that
        # into 2^-9 (bf16) of one element
        cmd[1:1] = ["--tol", "2e-3"]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, "timed out after %d s" % timeout
    out = p.stdout.decode(errors="replace")
    bad = [l for l in out.splitlines() if l.startswith("[FAIL]")]
    if p.returncode != 0 or bad or "[PASS]" not in out:
        return False, "rc %d\n%s" % (p.returncode, "\n".join(bad) if bad else out[-2000:])
    return True, ""


def main():
    argv = sys.argv[1:]
    if not argv:
        print(__doc__)
        return 2
    agree, rest = argv[0], argv[1:]
    seeds = int(os.environ["MLC_FUZZ_SEEDS"]) if os.environ.get("MLC_FUZZ_SEEDS") else None
    first, big, keep, models = 0, os.environ.get("MLC_FUZZ_BIG") == "1", None, []
    i = 0
    while i < len(rest):
        a = rest[i]
        if a == "--seeds":
            seeds, i = int(rest[i + 1]), i + 1
        elif a == "--first":
            first, i = int(rest[i + 1]), i + 1
        elif a == "--big":
            big = True
        elif a == "--keep":
            keep, i = rest[i + 1], i + 1
        else:
            models.append(a)
        i += 1
    keep = keep or tempfile.mkdtemp(prefix="fuzz_dense.")
    os.makedirs(keep, exist_ok=True)
    timeout = int(os.environ.get("MLC_FUZZ_TIMEOUT", "600"))
    cases = [(m, open(m).read()) for m in models]
    for s in DEFAULT_SEEDS if seeds is None else range(first, first + seeds):
        path = os.path.join(keep, "seed%d.model" % s)
        text = gen.generate(s, big)
        with open(path, "w") as f:
            f.write(text)
        cases.append((path, text))
    failed = []
    for path, text in cases:
        t0 = time.time()
        ok, why = check(agree, path, text, timeout)
        print("[%s] %s (%s, %.1f s)%s" % ("PASS" if ok else "FAIL", path, " ".join(fuzz_args(text)),
                                          time.time() - t0, "" if ok else "\n" + why), flush=True)
        if ok and path.startswith(keep):
            os.remove(path)
        elif not ok:
            failed.append(path)
    print("%d models, %d failed%s" % (len(cases), len(failed), "".join("\n  " + f for f in failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
