#!/usr/bin/env python3
"""side_by_side.py — mlc against PyTorch 1.13 (Debian) and its OpenBLAS, in
one run, one measurement right after the other, with ratios.

    bench/side_by_side.py [--mlc build/mlc] [--parts gemm,train,sweep,infer,build]
                          [--quick] [--torch2 PYTHON]

Parts (docs/design/kernels.md and bench/RESULTS.md explain the figures):
  gemm   sgemm GFLOP/s, build/bench_kernels (mlc_sgemm) vs numpy.matmul
         (OpenBLAS), at the MLP's own shapes (forward x @ w^T, dW = dy^T x,
         dX = dy w) and at 256..2048 squares, 1 and 2 threads
  train  one epoch of examples/fashion_mlp and fashion_cnn: the built
         program's `train --epochs 1 --threads N` (its own training time,
         peak RSS from /usr/bin/time -v) vs the same recipe in PyTorch at
         torch/BLAS threads 1/1 and the best split (MLP 1/2, CNN 2/1)
  sweep  training throughput against batch size (16..1024) and hidden
         width (256..4096) of the MLP, 1 thread each side
  infer  batch-1 latency and batch-256 throughput: the `--emit lib`
         library's predict (bench/infer_bench.c) vs PyTorch eager and
         TorchScript (frozen, optimize_for_inference)
  build  `mlc build` wall time and peak RSS per example
  transformer (not in the default parts) examples/char_transformer's
         train step (AdamW, clipping, batch 64 x 64 characters, on 1,280
         random windows; mlc: `train --epochs 1`, 20 steps, its own
         training time) vs its PyTorch form (bench/torch_side.py gpt: 20
         steps after 3) at torch/BLAS 1/1 and the better of 2/1 and 1/2
  resnet (not in the default parts) bench/models/resnet_cifar.model, a
         CIFAR-shaped residual network with batch norm and stride-2
         convolutions (none of the examples has them), its train step on
         1,280 random images (20 steps of batch 64, `train --epochs 1`)
         vs bench/torch_side.py's resnet (20 steps after 3), 1 and 2 threads
  mobilenet (not in the default parts) bench/models/mobilenet_cifar.model,
         depthwise-separable convolutions (groups = channels) under batch
         norm, on the resnet part's data, vs bench/torch_side.py's mobilenet
  torch2 (not in the default parts) PyTorch 2.x from PyPI, eager and
         torch.compile: the training epoch of both examples at 1 and 2
         threads, and batch-1 / batch-256 inference, against mlc in the
         same run; PYTHON is --torch2, default bench/.venv-torch2/bin/python
         (bench/setup_torch2.sh makes it). Its wheels bring MKL and
         OpenMP, one pool: T threads means OMP_NUM_THREADS = T.
--quick trains the CNN for 150 steps instead of an epoch and shortens the
sweep (a check that the harness runs, not figures to publish).

Both thread pools of PyTorch are set explicitly (bench/torch_side.py). When
OpenBLAS does not know this CPU (it then reports the "Prescott" SSE3 kernels)
the script sets OPENBLAS_CORETYPE to its AVX-512 kernels, which is what a
PyTorch user would do; the line "OpenBLAS:" in the output says what ran.
The report goes to stdout and to bench/out/side_by_side.txt, the raw
figures to bench/out/side_by_side.json.
"""
import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench", "out", "side")
PY = "/usr/bin/python3"
TORCH = os.path.join(ROOT, "bench", "torch_side.py")
FASHION = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"

report_lines = []
raw = {}


def say(line=""):
    print(line, flush=True)
    report_lines.append(line)


def run(cmd, env=None, check=True):
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if check and p.returncode:
        sys.exit("side_by_side: %s failed (%d):\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p


def torch_run(threads, blas, *args, py=PY):
    p = run([py, TORCH, str(threads), str(blas)] + [str(a) for a in args])
    return json.loads(p.stdout.strip().splitlines()[-1])


def timed(cmd):
    """Runs cmd under /usr/bin/time -v: (stdout, wall seconds, peak RSS MiB)."""
    tf = os.path.join(OUT, "time.txt")
    p = run(["/usr/bin/time", "-v", "-o", tf] + cmd)
    txt = open(tf).read()
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", txt).group(1)) / 1024
    m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", txt)
    wall = int(m.group(1) or 0) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
    return p.stdout + p.stderr, wall, rss


# ---- setup ------------------------------------------------------------------------------------
def openblas_coretype():
    """Keeps the user's OPENBLAS_CORETYPE; otherwise picks the AVX-512 kernels
    when OpenBLAS would fall back to Prescott on an AVX-512 CPU."""
    if "OPENBLAS_CORETYPE" in os.environ:
        return
    probe = ("from threadpoolctl import threadpool_info; import numpy; "
             "print([p.get('architecture') for p in threadpool_info() if p['user_api']=='blas'][0])")
    p = run([PY, "-c", probe], check=False)
    flags = open("/proc/cpuinfo").read()
    if p.returncode == 0 and p.stdout.strip() == "Prescott" and " avx512f " in flags:
        os.environ["OPENBLAS_CORETYPE"] = "Cooperlake" if " avx512_bf16 " in flags else "SkylakeX"


def machine():
    model = re.search(r"model name\s*: (.*)", open("/proc/cpuinfo").read()).group(1)
    commit = run(["git", "rev-parse", "--short", "HEAD"], check=False).stdout.strip()
    dirty = run(["git", "status", "--porcelain", "--untracked-files=no"], check=False).stdout.strip()
    load = open("/proc/loadavg").read().split()[:3]
    info = torch_run(1, 1, "gemm")
    say("date %s, commit %s%s, %s, %d CPUs, load average %s" % (
        datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), commit, " + working tree" if dirty else "",
        model, os.cpu_count(), " ".join(load)))
    say("OpenBLAS: %s, OPENBLAS_CORETYPE=%s; mlc GEMM variant: %s" % (
        info.get("blas", "threadpoolctl missing: pools set through the environment only"),
        os.environ.get("OPENBLAS_CORETYPE", "(unset)"), mlc_variant()))


def mlc_variant():
    p = run([os.path.join(ROOT, "build", "bench_kernels"), "gemm", "1", "8", "8", "8"])
    return re.search(r"variant=(\w+)", p.stdout).group(1)


# ---- gemm -------------------------------------------------------------------------------------
GEMM_SHAPES = [  # name, M, N, K, trans A, trans B
    ("fc1 forward x@w^T", 64, 256, 784, 0, 1), ("fc1 dW = dy^T x", 256, 784, 64, 1, 0),
    ("fc1 dX = dy w", 64, 784, 256, 0, 0), ("fc2 forward", 64, 128, 256, 0, 1),
    ("fc2 dW", 128, 256, 64, 1, 0), ("fc2 dX", 64, 256, 128, 0, 0),
    ("square 256", 256, 256, 256, 0, 0), ("square 512", 512, 512, 512, 0, 0),
    ("square 1024", 1024, 1024, 1024, 0, 0), ("square 2048", 2048, 2048, 2048, 0, 0),
]


def part_gemm(args):
    rounds = 1 if args.quick else 3
    say("\n## sgemm GFLOP/s: mlc_sgemm vs OpenBLAS (numpy.matmul); each side the median of %d round(s) "
        "(mlc, then OpenBLAS, shape by shape), each round a median of 7" % rounds)
    say("| shape (M x N x K, op) | threads | mlc | OpenBLAS | mlc / OpenBLAS |")
    say("|---|---|---|---|---|")
    specs = ["%d,%d,%d,%d,%d" % s[1:] for s in GEMM_SHAPES]
    res = []
    for t in (1, 2):
        ours = {spec: [] for spec in specs}
        theirs = {spec: [] for spec in specs}
        for _ in range(rounds):
            for spec in specs:
                p = run([os.path.join(ROOT, "build", "bench_kernels"), "gemm", str(t)] + spec.split(","))
                ours[spec].append(float(re.search(r": ([\d.]+) GFLOP/s", p.stdout).group(1)))
                theirs[spec].append(torch_run(1, t, "gemm", spec)["gemm"][0]["gflops"])
        for (name, m, n, k, ta, tb), spec in zip(GEMM_SHAPES, specs):
            o, b = median(ours[spec]), median(theirs[spec])
            say("| %s %dx%dx%d %s%s | %d | %.1f | %.1f | %.2f |" % (
                name, m, n, k, "T" if ta else "N", "T" if tb else "N", t, o, b, o / b))
            res.append({"name": name, "m": m, "n": n, "k": k, "threads": t, "mlc": ours[spec],
                        "openblas": theirs[spec]})
    raw["gemm"] = res


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else 0.5 * (xs[len(xs) // 2 - 1] + xs[len(xs) // 2])


# ---- train ------------------------------------------------------------------------------------
def build_model(args, src, name, emit=None):
    exe = os.path.join(OUT, name)
    cmd = [args.mlc, "build", src, "-o", exe] + (["--emit", emit] if emit else [])
    _, wall, rss = timed(cmd)
    return exe, wall, rss


def mlc_train(exe, threads, steps=0, batch=0):
    cmd = [exe, "train", "--epochs", "1", "--threads", str(threads)]
    if steps:
        cmd += ["--max-steps", str(steps), "--log-every", str(steps)]
    if batch:
        cmd += ["--batch", str(batch)]
    out, wall, rss = timed(cmd)
    ips = float(re.findall(r"img/s ([\d.]+)", out)[-1])
    done = re.search(r"done:.* time ([\d.]+)s", out)
    return {"img_s": ips, "seconds": float(done.group(1)) if done else None, "peak_rss_mib": rss}


def part_train(args):
    say("\n## One training epoch (batch 64, SGD 0.05 m0.9), training loop only")
    say("| model | mlc 1 thread | mlc 2 threads | PyTorch 1/1 | PyTorch best split | "
        "1-thread ratio (PyTorch/mlc time) | 2-thread ratio | peak RSS mlc / PyTorch |")
    say("|---|---|---|---|---|---|---|---|")
    res = {}
    for kind, split in (("mlp", (1, 2)), ("cnn", (2, 1))):
        exe, _, _ = build_model(args, "examples/fashion_%s.model" % kind, "fashion_" + kind)
        steps = 150 if args.quick and kind == "cnn" else 0
        ours = [mlc_train(exe, t, steps) for t in (1, 2)]
        theirs = [torch_run(a, b, "train", kind, "--steps", steps) for a, b in ((1, 1), split)]
        # seconds per epoch: each side's own training time, or 60,000 images at its rate
        o1, o2, t1, t2 = (60000 / r["img_s"] if steps else r["seconds"] for r in ours + theirs)
        say("| fashion_%s%s | %.2f s (%.0f img/s) | %.2f s (%.0f img/s) | %.2f s | %.2f s (torch %d / BLAS %d) | "
            "%.2f | %.2f | %.0f / %.0f MiB |" % (
                kind, " (%d steps, s/epoch extrapolated)" % steps if steps else "", o1, ours[0]["img_s"], o2,
                ours[1]["img_s"], t1, t2, split[0], split[1], t1 / o1, t2 / o2,
                ours[1]["peak_rss_mib"], theirs[1]["peak_rss_mib"]))
        res[kind] = {"mlc": ours, "torch": theirs, "split": split}
    raw["train"] = res


# ---- sweep ------------------------------------------------------------------------------------
def width_model(w):
    src = open(os.path.join(ROOT, "examples", "fashion_mlp.model")).read()
    src = src.replace("Linear(784, 256)", "Linear(784, %d)" % w).replace("Linear(256, 128)", "Linear(%d, 128)" % w)
    path = os.path.join(OUT, "mlp_w%d.model" % w)
    open(path, "w").write(src)
    return path


def part_sweep(args):
    say("\n## MLP training throughput (img/s) against batch size and hidden width, 1 thread each side")
    say("| batch | width | mlc img/s | PyTorch 1/1 img/s | mlc / PyTorch |")
    say("|---|---|---|---|---|")
    images = 3200 if args.quick else 12800
    res = []
    exe, _, _ = build_model(args, "examples/fashion_mlp.model", "fashion_mlp")
    points = [(b, 256, exe) for b in (16, 64, 256, 1024)]
    for w in ((1024,) if args.quick else (1024, 4096)):
        points.append((64, w, build_model(args, width_model(w), "mlp_w%d" % w)[0]))
    for batch, width, e in points:
        steps = max(10, images // batch)
        ours = mlc_train(e, 1, steps, batch)
        theirs = torch_run(1, 1, "train", "mlp", "--steps", steps, "--batch", batch, "--width", width)
        say("| %d | %d | %.0f | %.0f | %.2f |" % (batch, width, ours["img_s"], theirs["img_s"],
                                                 ours["img_s"] / theirs["img_s"]))
        res.append({"batch": batch, "width": width, "mlc": ours, "torch": theirs})
    raw["sweep"] = res


# ---- infer ------------------------------------------------------------------------------------
def infer_bench(args, kind):
    name = "fashion_" + kind
    lib, _, _ = build_model(args, "examples/%s.model" % name, "lib%s.a" % name, emit="lib")
    exe = os.path.join(OUT, "infer_" + kind)
    run(["cc", "-O2", "-DNAME=" + name, "-DUPPER=" + name.upper(), "-include",
         os.path.join(OUT, name + ".h"), os.path.join(ROOT, "bench", "infer_bench.c"), lib,
         "-lz", "-lcjson", "-lm", "-lpthread", "-o", exe])
    return exe


def part_infer(args):
    say("\n## Inference: batch-1 latency and batch-256 throughput")
    say("| model | threads (mlc; torch/BLAS) | mlc B1 us | eager B1 us | TorchScript B1 us | "
        "mlc B256 img/s | eager B256 | TorchScript B256 | B1 ratio (TS/mlc) | B256 ratio (mlc/TS) |")
    say("|---|---|---|---|---|---|---|---|---|---|")
    res = []
    for kind, split in (("mlp", (1, 2)), ("cnn", (2, 1))):
        exe = infer_bench(args, kind)
        for t, (a, b) in ((1, (1, 1)), (2, split)):
            out = run([exe, str(t)]).stdout
            b1 = float(re.search(r"latency_us B1 ([\d.]+)", out).group(1))
            b256 = float(re.search(r"throughput_img_s B256 ([\d.]+)", out).group(1))
            th = torch_run(a, b, "infer", kind)
            say("| fashion_%s | %d; %d/%d | %.1f | %.1f | %.1f | %.0f | %.0f | %.0f | %.2f | %.2f |" % (
                kind, t, a, b, b1, th["eager_b1_us"], th["torchscript_b1_us"], b256, th["eager_b256_img_s"],
                th["torchscript_b256_img_s"], th["torchscript_b1_us"] / b1, b256 / th["torchscript_b256_img_s"]))
            res.append({"kind": kind, "threads": t, "mlc_b1_us": b1, "mlc_b256_img_s": b256, "torch": th})
    raw["infer"] = res


# ---- transformer ------------------------------------------------------------------------------
def gpt_data():
    """1,280 random windows of 64 characters and their shifts, as the
    recipe's npy files (the recipe's paths are relative to the data)."""
    import numpy as np
    rng = np.random.default_rng(0)
    files = []
    for name, n in (("train", 1280), ("val", 64)):
        data = rng.integers(0, 65, (n, 65)).astype(np.int64)
        for part, arr in (("x", data[:, :64]), ("y", data[:, 1:])):
            path = os.path.join(OUT, "gpt_%s_%s.npy" % (name, part))
            np.save(path, np.ascontiguousarray(arr))
            files.append(path)
    return ",".join(files[:2]), ",".join(files[2:])


def step_part(args, key, title, model, name, data, kind, splits):
    """A train step of `model` (`train --epochs 1` on data's files, ms per
    step from its img/s) against bench/torch_side.py's `kind` at each
    thread count's torch/BLAS splits, the best of them reported."""
    say("\n## %s, ms per step" % title)
    say("| threads | mlc | PyTorch (torch/BLAS) | PyTorch / mlc |")
    say("|---|---|---|---|")
    exe, _, _ = build_model(args, model, name)
    train, test = data()
    res = []
    for t, sp in splits:
        out = run([exe, "train", "--epochs", "1", "--threads", str(t), "--train-data", train,
                   "--test-data", test, "--log-every", "20", "--checkpoint", os.path.join(OUT, name + ".st")]).stdout
        ms = 64 / float(re.search(r"done:.* img/s ([\d.]+)", out).group(1)) * 1e3
        theirs = [torch_run(a, b, kind) for a, b in sp]
        best = min(theirs, key=lambda r: r["step_ms"])
        say("| %d | %.1f | %.1f (%d/%d) | %.2f |" % (t, ms, best["step_ms"], best["torch_threads"],
                                                    best["blas_threads"], best["step_ms"] / ms))
        res.append({"threads": t, "mlc_step_ms": ms, "torch": theirs})
    raw[key] = res


def part_transformer(args):
    step_part(args, "transformer", "char_transformer train step (batch 64 x 64, AdamW, clip 1.0)",
              "examples/char_transformer.model", "char_transformer", gpt_data, "gpt",
              ((1, ((1, 1),)), (2, ((2, 1), (1, 2)))))


def resnet_data():
    """1,280 random 3 x 32 x 32 images and labels (and 64 to test on), as
    npy files for bench/models/resnet_cifar.model's recipe."""
    import numpy as np
    rng = np.random.default_rng(0)
    files = []
    for name, n in (("train", 1280), ("test", 64)):
        for part, arr in (("x", rng.standard_normal((n, 3, 32, 32)).astype(np.float32)),
                          ("y", rng.integers(0, 10, n).astype(np.int32))):
            path = os.path.join(OUT, "resnet_%s_%s.npy" % (name, part))
            np.save(path, arr)
            files.append(path)
    return ",".join(files[:2]), ",".join(files[2:])


def part_resnet(args):
    step_part(args, "resnet", "resnet_cifar train step (batch 64 x 3 x 32 x 32, batch norm, SGD)",
              "bench/models/resnet_cifar.model", "resnet_cifar", resnet_data, "resnet",
              ((1, ((1, 1),)), (2, ((2, 1),))))


def part_mobilenet(args):
    step_part(args, "mobilenet", "mobilenet_cifar train step (batch 64 x 3 x 32 x 32, depthwise-separable, SGD)",
              "bench/models/mobilenet_cifar.model", "mobilenet_cifar", resnet_data, "mobilenet",
              ((1, ((1, 1),)), (2, ((2, 1),))))


# ---- torch2 -----------------------------------------------------------------------------------
def part_torch2(args):
    py = args.torch2
    if not os.path.exists(py):
        sys.exit("side_by_side: %s is missing (bench/setup_torch2.sh makes the virtualenv)" % py)
    ver = run([py, "-c", "import torch; print(torch.__version__)"]).stdout.strip()
    say("\n## PyTorch %s (PyPI): eager and torch.compile, one training epoch (batch 64, SGD 0.05 m0.9)" % ver)
    say("| model | threads | mlc | PyTorch %s eager | torch.compile (compile + 5 steps) | eager / mlc | "
        "compile / mlc |" % ver)
    say("|---|---|---|---|---|---|---|")
    res = {"version": ver, "train": [], "infer": []}
    for kind in ("mlp", "cnn"):
        exe, _, _ = build_model(args, "examples/fashion_%s.model" % kind, "fashion_" + kind)
        steps = 150 if args.quick and kind == "cnn" else 0
        for t in (1, 2):
            ours = mlc_train(exe, t, steps)
            eager = torch_run(t, t, "train", kind, "--steps", steps, py=py)
            comp = torch_run(t, t, "train", kind, "--steps", steps, "--compile", 1, py=py)
            o, e, c = (60000 / r["img_s"] if steps else r["seconds"] for r in (ours, eager, comp))
            say("| fashion_%s%s | %d | %.2f s | %.2f s | %.2f s (%.1f s) | %.2f | %.2f |" % (
                kind, " (%d steps, s/epoch extrapolated)" % steps if steps else "", t, o, e, c,
                comp["compile_s"], e / o, c / o))
            res["train"].append({"kind": kind, "threads": t, "mlc": ours, "eager": eager, "compiled": comp})
    say("\n| model | threads | mlc B1 us | eager B1 us | compiled B1 us | mlc B256 img/s | eager B256 | "
        "compiled B256 | B1 ratio (compiled/mlc) | B256 ratio (mlc/compiled) |")
    say("|---|---|---|---|---|---|---|---|---|---|")
    for kind in ("mlp", "cnn"):
        exe = infer_bench(args, kind)
        for t in (1, 2):
            out = run([exe, str(t)]).stdout
            b1 = float(re.search(r"latency_us B1 ([\d.]+)", out).group(1))
            b256 = float(re.search(r"throughput_img_s B256 ([\d.]+)", out).group(1))
            th = torch_run(t, t, "infer", kind, "--compile", 1, py=py)
            say("| fashion_%s | %d | %.1f | %.1f | %.1f | %.0f | %.0f | %.0f | %.2f | %.2f |" % (
                kind, t, b1, th["eager_b1_us"], th["compiled_b1_us"], b256, th["eager_b256_img_s"],
                th["compiled_b256_img_s"], th["compiled_b1_us"] / b1, b256 / th["compiled_b256_img_s"]))
            res["infer"].append({"kind": kind, "threads": t, "mlc_b1_us": b1, "mlc_b256_img_s": b256, "torch": th})
    raw["torch2"] = res


# ---- build ------------------------------------------------------------------------------------
def part_build(args):
    say("\n## `mlc build` per example (executable, default -O3)")
    say("| example | wall | peak RSS |")
    say("|---|---|---|")
    res = []
    for f in sorted(os.listdir(os.path.join(ROOT, "examples"))):
        if not f.endswith(".model"):
            continue
        _, wall, rss = build_model(args, "examples/" + f, f[:-6])
        say("| %s | %.2f s | %.0f MiB |" % (f, wall, rss))
        res.append({"example": f, "wall_s": wall, "peak_rss_mib": rss})
    raw["build"] = res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mlc", default=os.path.join(ROOT, "build", "mlc"))
    ap.add_argument("--parts", default="gemm,train,sweep,infer,build")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--torch2", default=os.path.join(ROOT, "bench", ".venv-torch2", "bin", "python"),
                    help="the PyTorch 2.x interpreter of the torch2 part")
    args = ap.parse_args()
    for need in (args.mlc, os.path.join(ROOT, "build", "bench_kernels"), "/usr/bin/time", FASHION):
        if not os.path.exists(need):
            sys.exit("side_by_side: %s is missing (scripts/build.sh; scripts/setup.sh installs "
                     "time, python3-torch, python3-threadpoolctl, dataset-fashion-mnist)" % need)
    if shutil.which("cc") is None:
        sys.exit("side_by_side: cc is missing")
    os.makedirs(OUT, exist_ok=True)
    openblas_coretype()
    machine()
    parts = {"gemm": part_gemm, "train": part_train, "sweep": part_sweep, "infer": part_infer,
             "build": part_build, "torch2": part_torch2, "transformer": part_transformer,
             "resnet": part_resnet, "mobilenet": part_mobilenet}
    for p in args.parts.split(","):
        parts[p](args)
    open(os.path.join(ROOT, "bench", "out", "side_by_side.txt"), "w").write("\n".join(report_lines) + "\n")
    json.dump(raw, open(os.path.join(ROOT, "bench", "out", "side_by_side.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
