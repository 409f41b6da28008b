#!/usr/bin/python3
"""device_path.py - a program built with --target cpu,cuda (and cuda alone) run on the
fake CUDA driver, end to end, without a GPU (stdlib only).

    tests/backend/cuda/device_path.py --mlc build/mlc --fake build/tests/fake-cuda
                                      --cc cc --work DIR

The program is tests/backend/cuda/device/device.model (dropout, accumulation,
clipping, AdamW, an auxiliary loss value, reduce-on-plateau) on CSV data this
script writes. The fake driver (fake_libcuda.c) runs the program's kernels
under the CPU emulation: its CUDA C (`mlc build --emit cuda`) compiled as C into
a shared object named by MLC_FAKE_CUDA_MODULE. So `--device cuda` runs the
real device path: the bundle's module (cubin, or PTX on a newer GPU), the
launches with the printed geometry, one arena laid out by the memory plan,
state resident on the "device", the batch uploads and the downloads of
results and checkpoints. Checked:
  - device selection: the one stderr line ("device cuda: ...", "device cpu (no
    CUDA device)"), --device cpu|cuda, usage errors (exit 2), the exact
    messages without a driver or a device (exit 1), PTX on sm_100, the refusal
    on sm_80;
  - train on the device against train on the CPU: every logged step (loss,
    the auxiliary value, accuracy, lr, grad norm) and the epoch lines within
    1e-5 relative, the checkpoints' tensors within 1e-5 (same names, dtypes,
    shapes, metadata but the checksum);
  - checkpoints cross over: the device's evaluates on the CPU and the CPU's
    on the device to the same line; a CPU checkpoint resumes on the device
    and ends where a CPU run of two epochs ends; predict agrees;
  - --check-finite on the device (the checked train_step) gives the same
    losses, and a diverging lr stops the run naming the site;
  - the launch sequence: one module load per instance, every launch a kernel
    of the program's CUDA C with the block size it was printed for, the
    train steps launch every kernel of train_step, and the next batch is
    uploaded between a step's launches and its results' download;
  - queued steps: the host waits for a train step's results only after the
    next step was issued (at most 3 ahead), from the fake's log of event
    records and waits, and every copy of the train steps is pinned; a run
    stopped by --max-steps mid-queue logs every step and resumes byte for
    byte; --checkpoint-every between queued steps
    changes nothing; a diverging run stops at the CPU's step with later
    steps in flight;
  - --target cuda alone: runs on the device like the cpu,cuda build, refuses
    --device cpu, and fails with "no CUDA device" where there is none;
  - the library (--emit lib --target cpu,cuda): options.device 0, 1 and 2,
    mlc_NAME_device, train steps on the device against the CPU instance,
    weights saved from the device and loaded on the CPU predict alike,
    create failing with "no CUDA device" where there is none.
With --real (tests/gpu/run.sh, on a GPU machine) the same program runs on
the machine's driver and GPU instead: the cases that steer the fake driver
(no device, other architectures, the launch log) are left out, and the
comparisons with the CPU allow 1e-3 (the GPU's expf and logf are not libm's).
Prints `[PASS] name`, `[SKIP] name: why` or `[FAIL] name: why`; exits 77 when
NVRTC is missing (no bundle can be built), 1 when anything failed.
"""

import argparse
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys

MODEL = "tests/backend/cuda/device/device.model"
TOL = 1e-5

results = {"pass": 0, "fail": 0, "skip": 0}


def report(name, why=None, skip=False):
    if skip:
        print("[SKIP] %s: %s" % (name, why))
        results["skip"] += 1
    elif why:
        print("[FAIL] %s: %s" % (name, why))
        results["fail"] += 1
    else:
        print("[PASS] %s" % name)
        results["pass"] += 1
    sys.stdout.flush()


class Ctx:
    def __init__(self, a):
        self.mlc = os.path.abspath(a.mlc)
        self.fake = os.path.abspath(a.fake) if a.fake else None
        self.cc = a.cc
        self.work = os.path.abspath(a.work)
        self.root = os.getcwd()

    def env(self, fake=True, module=None, **extra):
        e = dict(os.environ)
        e.pop("MLC_FAKE_CUDA_LOG", None)
        if self.real:
            return e
        if fake:
            e["LD_LIBRARY_PATH"] = self.fake
            e["MLC_FAKE_CUDA_MODULE"] = module or os.path.join(self.work, "emu.so")
        else:
            e.pop("LD_LIBRARY_PATH", None)
            e.pop("MLC_FAKE_CUDA_MODULE", None)
        for k, v in extra.items():
            e[k] = str(v)
        return e

    def run(self, prog, args, env, timeout=600):
        p = subprocess.run([os.path.join(self.work, prog)] + args, cwd=self.work, env=env,
                           capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr


def close(a, b, tol=None):
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    tol = max(tol or TOL, 1e-3 if REAL else 0)
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


REAL = False


# ---- data and builds --------------------------------------------------------------------------

def write_data(work):
    rng = random.Random(1)
    if os.path.exists(os.path.join(work, "predict.csv")):
        os.remove(os.path.join(work, "predict.csv"))
    for name, n in (("train.csv", 96), ("test.csv", 32)):
        with open(os.path.join(work, name), "w") as f:
            for _ in range(n):
                x = [rng.gauss(0, 1) for _ in range(8)]
                y = 0 if x[0] + x[1] > 0.5 else 1 if x[2] > 0 else 2
                f.write(",".join("%.5f" % v for v in x) + ",%d\n" % y)
                if name == "test.csv":
                    with open(os.path.join(work, "predict.csv"), "a") as g:
                        g.write(",".join("%.5f" % v for v in x) + "\n")


def build(ctx, target, out, emit=None):
    if ctx.keep and os.path.exists(os.path.join(ctx.work, out)):
        return
    args = [ctx.mlc, "build", MODEL, "--target", target, "-o", os.path.join(ctx.work, out)]
    if emit:
        args += ["--emit", emit]
    p = subprocess.run(args, capture_output=True, text=True, timeout=900)
    if p.returncode and "NVRTC" in p.stderr:
        print("[SKIP] device path: %s" % p.stderr.strip().splitlines()[-1])
        sys.exit(77)
    if p.returncode:
        raise SystemExit("mlc build --target %s failed:\n%s" % (target, p.stderr))


def emulation_object(ctx):
    cu = os.path.join(ctx.work, "dev.cu")
    so = os.path.join(ctx.work, "emu.so")
    subprocess.run([ctx.cc, "-std=gnu17", "-O1", "-g0", "-shared", "-fPIC", "-ffp-contract=off", "-w",
                    "-Ikernels/cuda", "-x", "c", cu, "kernels/cuda/cuda_emu.c", "-o", so, "-lm"],
                   check=True, timeout=600)


# ---- what a run printed ---------------------------------------------------------------------------

def metrics(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def compare_metrics(a, b):
    if len(a) != len(b):
        return "%d metric lines on the device, %d on the CPU" % (len(a), len(b))
    for i, (x, y) in enumerate(zip(a, b)):
        for k in x:
            if k in ("images_per_second", "seconds"):
                continue
            if k not in y:
                return "line %d: %s missing on the CPU" % (i + 1, k)
            if x[k] is None or y[k] is None:
                if x[k] != y[k]:
                    return "line %d: %s is %r on the device, %r on the CPU" % (i + 1, k, x[k], y[k])
                continue
            if not close(x[k], y[k]):
                return "line %d: %s is %r on the device, %r on the CPU" % (i + 1, k, x[k], y[k])
    return None


def safetensors(path):
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    data = b[8 + n:]
    meta = h.pop("__metadata__", {})
    t = {}
    for k, v in h.items():
        s, e = v["data_offsets"]
        t[k] = (v["dtype"], v["shape"], data[s:e])
    return meta, t


def values(dtype, raw):
    fmt = {"F32": "f", "F64": "d", "I64": "q", "I32": "i"}.get(dtype)
    if not fmt:
        return list(raw)
    return list(struct.unpack("<%d%s" % (len(raw) // struct.calcsize(fmt), fmt), raw))


def compare_ckpt(pa, pb):
    ma, ta = safetensors(pa)
    mb, tb = safetensors(pb)
    ma.pop("mlc.checksum", None), mb.pop("mlc.checksum", None)
    if ma != mb:
        diff = [k for k in set(ma) | set(mb) if ma.get(k) != mb.get(k)]
        return "metadata differs: %s" % ", ".join(sorted(diff))
    if sorted(ta) != sorted(tb):
        return "tensors %s vs %s" % (sorted(ta), sorted(tb))
    for k in ta:
        (da, sa, ra), (db, sb, rb) = ta[k], tb[k]
        if da != db or sa != sb:
            return "%s: %s%s vs %s%s" % (k, da, sa, db, sb)
        for j, (x, y) in enumerate(zip(values(da, ra), values(db, rb))):
            if not close(x, y):
                return "%s[%d]: %r vs %r" % (k, j, x, y)
    return None


def compare_ckpt_exact(pa, pb):
    ma, ta = safetensors(pa)
    mb, tb = safetensors(pb)
    ma.pop("mlc.checksum", None), mb.pop("mlc.checksum", None)
    if ma != mb:
        diff = [k for k in set(ma) | set(mb) if ma.get(k) != mb.get(k)]
        return "metadata differs: %s" % ", ".join(sorted(diff))
    if sorted(ta) != sorted(tb):
        return "tensors %s vs %s" % (sorted(ta), sorted(tb))
    bad = [k for k in ta if ta[k] != tb[k]]
    return "tensors differ in their bytes: %s" % ", ".join(sorted(bad)[:5]) if bad else None


def device_line(err):
    lines = [l for l in err.splitlines() if re.match(r"^\w+: device ", l)]
    return lines[0] if len(lines) == 1 else "%d device lines in %r" % (len(lines), err)


def has_driver():
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    except OSError:
        out = ""
    return "libcuda.so.1 " in out or os.path.exists("/usr/lib/x86_64-linux-gnu/libcuda.so.1")


# ---- cases ---------------------------------------------------------------------------------------------

FAKE_NAME = "mlc fake CUDA device (CPU emulation)"


def case_selection(ctx):
    rc, out, err = ctx.run("dev", ["train", "--help"], ctx.env())
    report("--help lists --device", None if "--device cpu|cuda" in out else "not in:\n" + out)
    if ctx.real:
        rc, _, err = ctx.run("dev", ["eval", "--weights", "cpu1.st"], ctx.env())
        line = device_line(err)
        report("default: the GPU (%s)" % line, None if rc == 0 and line.startswith("dev: device cuda: ")
               else "status %d, stderr %r" % (rc, err))
        rc, _, err = ctx.run("cpu_only", ["eval", "--weights", "cpu1.st", "--device", "cuda"], ctx.env())
        report("--device cuda on a CPU-only program", None if rc == 2 and "without --target cuda" in err
               else "status %d, stderr %r" % (rc, err))
        return
    rc, _, err = ctx.run("dev", ["eval", "--weights", "cpu1.st"], ctx.env())
    want = "dev: device cuda: %s (sm_90; sm_90 cubin)" % FAKE_NAME
    report("default: the GPU, said in one line", None if rc == 0 and device_line(err) == want
           else "status %d, stderr %r" % (rc, err))
    rc, _, err = ctx.run("dev", ["eval", "--weights", "cpu1.st"], ctx.env(MLC_FAKE_CUDA_DEVICES=0))
    want = "dev: device cpu (no CUDA device)"
    report("default without a device: the CPU, saying why", None if rc == 0 and device_line(err) == want
           else "status %d, stderr %r" % (rc, err))
    rc, _, err = ctx.run("dev", ["eval", "--weights", "cpu1.st", "--device", "cuda"],
                         ctx.env(MLC_FAKE_CUDA_DEVICES=0))
    report("--device cuda without a device", None if rc == 1 and err == "dev: no CUDA device\n"
           else "status %d, stderr %r" % (rc, err))
    rc, _, err = ctx.run("dev", ["eval", "--weights", "cpu1.st", "--device", "cuda"],
                         ctx.env(MLC_FAKE_CUDA_INIT=100))
    report("--device cuda when cuInit finds no device", None if rc == 1 and err == "dev: no CUDA device\n"
           else "status %d, stderr %r" % (rc, err))
    rc, _, err = ctx.run("dev", ["eval", "--weights", "cpu1.st", "--device", "gpu"], ctx.env())
    report("--device gpu is a usage error", None if rc == 2 and "neither cpu nor cuda" in err
           else "status %d, stderr %r" % (rc, err))
    rc, _, err = ctx.run("dev", ["eval", "--weights", "cpu1.st"], ctx.env(MLC_FAKE_CUDA_SM=100))
    want = "dev: device cuda: %s (sm_100; compute_90 PTX)" % FAKE_NAME
    report("sm_100 loads the PTX", None if rc == 0 and device_line(err) == want
           else "status %d, stderr %r" % (rc, err))
    rc, _, err = ctx.run("dev", ["eval", "--weights", "cpu1.st", "--device", "cuda"], ctx.env(MLC_FAKE_CUDA_SM=80))
    report("sm_80 is refused, naming --cuda-arch", None if rc == 1 and "--cuda-arch=sm_80" in err
           else "status %d, stderr %r" % (rc, err))
    if has_driver():
        report("no driver", "this machine has a libcuda.so.1", skip=True)
    else:
        rc, _, err = ctx.run("dev", ["eval", "--weights", "cpu1.st", "--device", "cuda"], ctx.env(fake=False))
        want = "dev: no CUDA driver (libcuda.so.1 not found)\n"
        report("--device cuda without a driver", None if rc == 1 and err == want
               else "status %d, stderr %r" % (rc, err))
        rc, out, err = ctx.run("dev", ["eval", "--weights", "cpu1.st"], ctx.env(fake=False))
        want = "dev: device cpu (no CUDA driver (libcuda.so.1 not found))"
        report("default without a driver: the CPU", None if rc == 0 and device_line(err) == want
               else "status %d, stderr %r" % (rc, err))
    rc, _, err = ctx.run("cpu_only", ["eval", "--weights", "cpu1.st", "--device", "cuda"], ctx.env())
    report("--device cuda on a CPU-only program", None if rc == 2 and "without --target cuda" in err
           else "status %d, stderr %r" % (rc, err))
    rc, _, err = ctx.run("cpu_only", ["eval", "--weights", "cpu1.st"], ctx.env())
    report("a CPU-only program says nothing about devices", None if rc == 0 and "device" not in err
           else "status %d, stderr %r" % (rc, err))


def train(ctx, prog, name, device, extra=(), env=None):
    args = ["train", "--device", device, "--log-every", "1", "--checkpoint", name + ".st",
            "--metrics", name + ".jsonl"] + list(extra)
    rc, out, err = ctx.run(prog, args, env or ctx.env())
    return rc, out, err


def case_train(ctx):
    rc, out, err = train(ctx, "dev", "cpu", "cpu")
    if rc:
        return report("train on the CPU", "status %d: %s" % (rc, err))
    rc, gout, err = train(ctx, "dev", "gpu", "cuda")
    if rc:
        return report("train on the device", "status %d: %s" % (rc, err))
    report("train on the device: the logged steps and epochs match the CPU's",
           compare_metrics(metrics(os.path.join(ctx.work, "gpu.jsonl")),
                           metrics(os.path.join(ctx.work, "cpu.jsonl"))))
    # loss scaling: the recipe's first steps overflow; both sides log the same
    # scales and skips (compare_metrics compared every key), so check that
    # there is a skip and an update to compare
    steps = [m for m in metrics(os.path.join(ctx.work, "cpu.jsonl")) if m["type"] == "step"]
    flags = [m.get("overflow") for m in steps]
    report("train on the device: the loss scale backs off and grows as on the CPU (%d of %d steps skipped)"
           % (flags.count(True), len(flags)),
           None if True in flags and False in flags and len({m["loss_scale"] for m in steps}) > 2
           else "scales %r, overflow %r" % ([m.get("loss_scale") for m in steps], flags))
    report("train on the device: the checkpoint matches the CPU's",
           compare_ckpt(os.path.join(ctx.work, "gpu.st"), os.path.join(ctx.work, "cpu.st")))
    # a checkpoint of each, evaluated on the other
    lines = {}
    for ck in ("cpu", "gpu"):
        for dev in ("cpu", "cuda"):
            rc, out, err = ctx.run("dev", ["eval", "--weights", ck + ".st", "--device", dev], ctx.env())
            lines[ck, dev] = out if rc == 0 else "status %d: %s" % (rc, err)
    nums = {k: [float(x) for x in re.findall(r"[-\d.]+(?:e[-+]\d+)?", v.split("(")[0])] for k, v in lines.items()}
    ref = nums["cpu", "cpu"]
    bad = ["%s on %s: %r" % (k[0], k[1], lines[k]) for k in lines
           if len(nums[k]) != len(ref) or not all(close(a, b, 1e-4) for a, b in zip(nums[k], ref))]
    report("checkpoints evaluate alike on the CPU and the device", "; ".join(bad) if bad else None)
    # predict on both
    outs = {}
    for dev in ("cpu", "cuda"):
        rc, out, err = ctx.run("dev", ["predict", "--weights", "gpu.st", "--device", dev, "predict.csv"], ctx.env())
        outs[dev] = out if rc == 0 else "status %d: %s" % (rc, err)
    def rows(out):
        return [[float(x) for x in l.split()] for l in out.splitlines()] if out[:1].isdigit() else []
    a, b = rows(outs["cpu"]), rows(outs["cuda"])
    ok = len(a) == 32 and len(a) == len(b) and all(
        len(x) == len(y) and all(close(p, q, 1e-4) for p, q in zip(x, y)) for x, y in zip(a, b))
    report("predict agrees on the device", None if ok else "cpu %r vs cuda %r" % (outs["cpu"][:200], outs["cuda"][:200]))


def case_resume(ctx):
    rc, _, err = train(ctx, "dev", "cpu1", "cpu", ["--epochs", "1"])
    if rc:
        return report("resume", "train --epochs 1 on the CPU: %s" % err)
    shutil.copy(os.path.join(ctx.work, "cpu1.st"), os.path.join(ctx.work, "res.st"))
    rc, _, err = ctx.run("dev", ["train", "--device", "cuda", "--checkpoint", "res.st", "--resume",
                                 "--epochs", "2"], ctx.env())
    if rc:
        return report("a CPU checkpoint resumes on the device", "status %d: %s" % (rc, err))
    report("a CPU checkpoint resumes on the device and ends where the CPU's two epochs end",
           compare_ckpt(os.path.join(ctx.work, "res.st"), os.path.join(ctx.work, "cpu.st")))


def case_checked(ctx):
    rc, _, err = train(ctx, "dev", "chk", "cuda", ["--check-finite"])
    if rc:
        return report("--check-finite on the device", "status %d: %s" % (rc, err))
    report("--check-finite on the device: the same steps",
           compare_metrics(metrics(os.path.join(ctx.work, "chk.jsonl")),
                           metrics(os.path.join(ctx.work, "cpu.jsonl"))))
    res = {}
    for dev in ("cpu", "cuda"):
        rc, _, err = ctx.run("dev", ["train", "--device", dev, "--check-finite", "--lr", "1e38", "--epochs", "1"],
                             ctx.env())
        res[dev] = (rc, [l for l in err.splitlines() if not re.match(r"^\w+: device ", l)])
    # Both stop with exit 1 at the same step, naming a site in the model. At
    # lr 1e38 several values overflow in the same step, and the first check
    # to see one follows each target's kernel order (the cpu schedule's
    # library calls and epilogues order the kernels differently from the gpu
    # programs), so the op named may differ.
    site = re.compile(r"^dev: step (\d+): loss became \w+ at tests/backend/cuda/device/device\.model:\d+:\d+ ")
    steps = {d: [site.match(l).group(1) for l in res[d][1] if site.match(l)] for d in res}
    ok = res["cpu"][0] == 1 and res["cuda"][0] == 1 and steps["cpu"] and steps["cuda"] == steps["cpu"]
    report("a diverging run stops on the device as on the CPU", None if ok else "cpu %r, cuda %r" % (res["cpu"], res["cuda"]))


def printed_kernels(cu):
    with open(cu) as f:
        text = f.read()
    # MLC_KERNEL MLC_LAUNCH_BOUNDS(n) name(...)
    ks = {}
    for m in re.finditer(r"MLC_KERNEL\s+(?:MLC_LAUNCH_BOUNDS\((\d+)\)\s+)?(\w+)\s*\(", text):
        ks[m.group(2)] = int(m.group(1)) if m.group(1) else None
    return ks


def case_launches(ctx):
    if ctx.real:
        return
    log = os.path.join(ctx.work, "launch.log")
    if os.path.exists(log):
        os.remove(log)
    rc, _, err = ctx.run("dev", ["train", "--device", "cuda", "--epochs", "1", "--max-steps", "2"],
                         ctx.env(MLC_FAKE_CUDA_LOG=log))
    if rc:
        return report("the launch sequence", "status %d: %s" % (rc, err))
    with open(log) as f:
        lines = f.read().splitlines()
    ks = printed_kernels(os.path.join(ctx.work, "dev.cu"))
    loads = [l for l in lines if l.startswith("load ")]
    why = []
    if loads != ["load cubin"]:
        why.append("module loads %r" % loads)
    launched = set()
    for l in lines:
        m = re.match(r"launch (\w+) grid (\d+) block (\d+) shared (\d+)$", l)
        if not m:
            continue
        name, block = m.group(1), int(m.group(3))
        launched.add(name)
        if name not in ks:
            why.append("%s is not a kernel of the program's CUDA C" % name)
        elif ks[name] and block > ks[name]:
            why.append("%s launched with %d threads, bounds %d" % (name, block, ks[name]))
    # the next batch is uploaded while a step computes: a copy to the device
    # between a train step's last launch and the download of its results
    # (windows of launches up to a download; the train steps are the
    # longest, predict before each step is a short one)
    windows, n, ahead = [], 0, False
    for l in lines:
        if l.startswith("launch "):
            n, ahead = n + 1, False
        elif l.startswith("htod") and n:
            ahead = True
        elif l.startswith("dtoh") and n:
            windows.append((n, ahead))
            n, ahead = 0, False
    most = max((w[0] for w in windows), default=0)
    steps = [a for k, a in windows if k == most]
    if len(steps) != 2 or not all(steps):
        why.append("%d of %d train steps uploaded the next batch while computing" % (sum(steps), len(steps)))
    train_ks = {k for k in ks if k.startswith("train_step_k")}
    missing = train_ks - launched
    if not train_ks or missing:
        why.append("train_step kernels never launched: %s" % sorted(missing)[:5])
    report("the launch sequence: %d launches of %d kernels" % (len(lines) - len(loads), len(launched)),
           "; ".join(why[:5]) if why else None)


def queue_order(lines):
    """The train steps' results waited for on the host, from the fake's log:
    [(step, steps issued before the wait)]. A step's results event is the one
    recorded on the compute stream right after its downloads (with predict
    before the step, twice: a run of records of one event is one step); a
    step is issued once its last record is in the log."""
    recs, last = [], None  # (line, event) of the results records
    for i, l in enumerate(lines):
        if l.startswith("dtoh"):
            last = i
        m = re.match(r"record event (\d+) stream \d+$", l)
        if m and last == i - 1:
            recs.append((i, m.group(1)))
    steps = []  # [event, first line, last line]
    for i, e in recs:
        if steps and steps[-1][0] == e and not any(
                re.match(r"wait event %s$" % e, l) for l in lines[steps[-1][2]:i]):
            steps[-1][2] = i
        else:
            steps.append([e, i, i])
    waits = []
    for i, l in enumerate(lines):
        m = re.match(r"wait event (\d+)$", l)
        if not m:
            continue
        mine = [k for k, (e, first, _) in enumerate(steps) if e == m.group(1) and first < i]
        if mine and (not waits or mine[-1] + 1 not in [s for s, _ in waits]):
            waits.append((mine[-1] + 1, sum(1 for _, _, end in steps if end < i)))
    return waits


def case_queue(ctx):
    """Train steps are queued ahead of their results: the host waits for a
    step's results only after the next step's launches are issued (at most
    MLC_CUDA_QUEUE_DEPTH = 3 steps ahead); the log is the CPU's (case_train
    compares it at --log-every 1); a run stopped by --max-steps mid-queue
    logs every step it ran and resumes to the uninterrupted run's bytes."""
    if not ctx.real:  # the fake's log
        queue_log(ctx)
    stopped_mid_queue(ctx)


def queue_log(ctx):
    log = os.path.join(ctx.work, "queue.log")
    if os.path.exists(log):
        os.remove(log)
    rc, _, err = ctx.run("dev", ["train", "--device", "cuda", "--epochs", "1", "--batch", "8", "--log-every", "1"],
                         ctx.env(MLC_FAKE_CUDA_LOG=log))
    if rc:
        return report("steps queued ahead of their results", "status %d: %s" % (rc, err))
    with open(log) as f:
        lines = f.read().splitlines()
    waits = queue_order(lines)
    pinned_steps(lines)
    steps = [s for s, _ in waits]
    ahead = [s for s, n in waits if n > s]
    why = None
    if steps != list(range(1, 13)):
        why = "results waited for, by step: %r (want 1..12)" % steps
    elif ahead != list(range(1, 12)) or any(n - s > 3 for s, n in waits):
        why = "(step, steps issued) at each wait: %r" % waits
    report("steps queued ahead of their results: steps 1-11 of 12 waited for after the next step was issued, "
           "at most 3 ahead", why)


def pinned_steps(lines):
    """Every copy from the first train step's launch to the last queued
    step's results event (the batches, the step slots, the results; eval
    and the state's download at the epoch's end come after it) is from or
    to pinned memory: from pageable memory a real driver may wait for the
    stream, which would undo the queue (the fake marks such a copy
    " pageable")."""
    first = next((i for i, l in enumerate(lines) if l.startswith("launch train_step_k")), None)
    # a queued step's results event is recorded right after its downloads
    last = max((i for i, l in enumerate(lines) if l.startswith("record event ") and i
                and lines[i - 1].startswith("dtoh")), default=None)
    copies = [l for l in lines[first:last] if re.match(r"(htod|dtoh) ", l)] if first is not None and last else []
    paged = [l for l in copies if l.endswith(" pageable")]
    report("the train steps' %d copies are all from or to pinned memory" % len(copies),
           None if copies and not paged else "no train steps" if not copies else
           "%d pageable: %r" % (len(paged), sorted(set(paged))[:4]))


def stopped_mid_queue(ctx):
    # stopped after step 2 of 3 (both in flight), then resumed
    for f in ("mq.st", "mq.jsonl"):
        if os.path.exists(os.path.join(ctx.work, f)):
            os.remove(os.path.join(ctx.work, f))
    rc, _, err = train(ctx, "dev", "mq", "cuda", ["--max-steps", "2"])
    if rc:
        return report("a run stopped mid-queue", "status %d: %s" % (rc, err))
    got = [m for m in metrics(os.path.join(ctx.work, "mq.jsonl")) if m["type"] == "step"]
    full = [m for m in metrics(os.path.join(ctx.work, "gpu.jsonl")) if m["type"] == "step"][:2]
    report("a run stopped mid-queue logs each of its 2 steps as the whole run does",
           compare_metrics(got, full) if len(got) == 2 else "%d step lines" % len(got))
    rc, _, err = ctx.run("dev", ["train", "--device", "cuda", "--checkpoint", "mq.st", "--resume", "--epochs", "2"],
                         ctx.env())
    if rc:
        return report("a run stopped mid-queue resumes", "status %d: %s" % (rc, err))
    report("a run stopped mid-queue resumes to the uninterrupted run's bytes",
           compare_ckpt_exact(os.path.join(ctx.work, "mq.st"), os.path.join(ctx.work, "gpu.st")))
    # a diverging run whose first non-finite step has later steps in flight
    # stops naming that step, as on the CPU (with --check-finite the op named
    # may differ: case_checked)
    for extra in ([], ["--check-finite"]):
        res = {}
        for dev in ("cpu", "cuda"):
            rc, _, err = ctx.run("dev", ["train", "--device", dev, "--lr", "1e30", "--epochs", "1", "--batch", "8"]
                                 + extra, ctx.env())
            lines = [l for l in err.splitlines() if not re.match(r"^\w+: device ", l)]
            res[dev] = (rc, lines if not extra else [re.sub(r" at .*", "", l) for l in lines])
        step = re.match(r"dev: step (\d+): loss became", (res["cpu"][1] or [""])[0])
        ok = res["cpu"][0] == 1 and res["cpu"] == res["cuda"] and step and int(step.group(1)) > 1
        report("a diverging run %sstops at the step the CPU names, later steps in flight" % " ".join(extra + [""]),
               None if ok else "cpu %r, cuda %r" % (res["cpu"], res["cuda"]))
    # checkpoints every 2 steps read the queue first and change nothing
    rc, _, err = train(ctx, "dev", "ce", "cuda", ["--checkpoint-every", "2"])
    if rc:
        return report("--checkpoint-every with queued steps", "status %d: %s" % (rc, err))
    why = compare_metrics(metrics(os.path.join(ctx.work, "ce.jsonl")), metrics(os.path.join(ctx.work, "gpu.jsonl")))
    report("--checkpoint-every 2 with queued steps: the same log and the uninterrupted run's bytes",
           why or compare_ckpt_exact(os.path.join(ctx.work, "ce.st"), os.path.join(ctx.work, "gpu.st")))


def case_cuda_only(ctx):
    rc, _, err = ctx.run("cuda_only", ["eval", "--weights", "cpu.st", "--device", "cpu"], ctx.env())
    report("--target cuda alone refuses --device cpu", None if rc == 2 and "--target cuda alone" in err
           else "status %d, stderr %r" % (rc, err))
    if not ctx.real:
        rc, _, err = ctx.run("cuda_only", ["eval", "--weights", "cpu.st"], ctx.env(MLC_FAKE_CUDA_DEVICES=0))
        report("--target cuda alone without a device", None if rc == 1 and err == "cuda_only: no CUDA device\n"
               else "status %d, stderr %r" % (rc, err))
        if not has_driver():
            rc, _, err = ctx.run("cuda_only", ["eval", "--weights", "cpu.st"], ctx.env(fake=False))
            want = "cuda_only: no CUDA driver (libcuda.so.1 not found)\n"
            report("--target cuda alone without a driver", None if rc == 1 and err == want
                   else "status %d, stderr %r" % (rc, err))
    rc, _, err = train(ctx, "cuda_only", "only", "cuda")
    if rc:
        return report("--target cuda alone trains", "status %d: %s" % (rc, err))
    report("--target cuda alone trains like the cpu,cuda build on the device",
           compare_ckpt(os.path.join(ctx.work, "only.st"), os.path.join(ctx.work, "gpu.st")))

LIB_MAIN = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dev.h"

enum { B = 32 };
static float x[B * 8], out[2][B * 3];
static int32_t y[B];
static int bad;
#define CHECK(c, ...) do { if (!(c)) { printf("[FAIL] library: " __VA_ARGS__); printf("\n"); bad = 1; } } while (0)

static mlc_dev *make(int device) {
  mlc_dev_options o = mlc_dev_default_options();
  o.device = device;
  o.threads = 1;
  return mlc_dev_create(&o);
}

static int close_to(double a, double b) { return fabs(a - b) <= 1e-5 * fmax(1, fmax(fabs(a), fabs(b))); }

// queue_steps 2 on the device: train_step returns before its step's results
// (written when collected: the third call collects the first step, sync the
// rest, predict first collects), the same bits as waiting each step; on the
// CPU the option changes nothing; 4 is refused.
static void queued(void) {
  enum { N = 5, UNSET = -7 };
  mlc_dev_options o = mlc_dev_default_options();
  o.device = 1, o.threads = 1, o.queue_steps = 2;
  mlc_dev *q = mlc_dev_create(&o), *s = make(1);
  o.device = 0;
  mlc_dev *cpu = mlc_dev_create(&o);
  CHECK(q && s && cpu, "create with queue_steps 2: %s", mlc_dev_error(NULL));
  if (!q || !s || !cpu) return;
  float lq[N], ls[N], lc = UNSET;
  for (int i = 0; i < N; i++) lq[i] = UNSET;
  for (int step = 0; step < N; step++) {
    CHECK(!mlc_dev_train_step(q, B, x, y, &lq[step]), "queued train_step: %s", mlc_dev_error(q));
    CHECK(!mlc_dev_train_step(s, B, x, y, &ls[step]), "train_step: %s", mlc_dev_error(s));
    if (step == 1) CHECK(lq[0] == UNSET && lq[1] == UNSET, "steps 1 and 2 collected before a third was issued");
    if (step == 2) CHECK(lq[0] != UNSET && lq[1] == UNSET && lq[2] == UNSET, "the third call collected %s",
                         lq[1] != UNSET ? "more than step 1" : "nothing");
  }
  CHECK(mlc_dev_steps(q) == N, "steps %lld issued, want %d", (long long)mlc_dev_steps(q), N);
  CHECK(!mlc_dev_sync(q), "sync: %s", mlc_dev_error(q));
  for (int i = 0; i < N; i++) CHECK(lq[i] == ls[i], "step %d: queued loss %.9g, waited %.9g", i + 1, lq[i], ls[i]);
  CHECK(mlc_dev_last_lr(q) == mlc_dev_last_lr(s) && mlc_dev_last_grad_norm(q) == mlc_dev_last_grad_norm(s),
        "last lr / grad norm after sync differ");
  // a failed call (a batch below accumulate 2) queues nothing: the steps
  // around it keep their results
  float l1 = UNSET;
  CHECK(mlc_dev_train_step(q, 1, x, y, &l1) && strstr(mlc_dev_error(q), "smaller than accumulate") && l1 == UNSET,
        "a batch of 1: %s", mlc_dev_error(q));
  CHECK(mlc_dev_train_step(s, 1, x, y, &l1), "a batch of 1 on the waiting instance");
  CHECK(!mlc_dev_train_step(q, B, x, y, &lq[0]) && !mlc_dev_train_step(s, B, x, y, &ls[0]) && !mlc_dev_sync(q) &&
        lq[0] == ls[0], "the step after a failed one: queued loss %.9g, waited %.9g", lq[0], ls[0]);
  lq[0] = UNSET;
  CHECK(!mlc_dev_train_step(q, B, x, y, &lq[0]) && lq[0] == UNSET, "a seventh queued step");
  CHECK(!mlc_dev_predict(q, B, x, out[0]) && lq[0] != UNSET, "predict did not collect the step in flight");
  CHECK(!mlc_dev_train_step(cpu, B, x, y, &lc) && lc != UNSET, "on the CPU queue_steps changed train_step");
  o.queue_steps = 4;
  CHECK(!mlc_dev_create(&o) && strstr(mlc_dev_error(NULL), "queue_steps = 4 is out of range 0..3"),
        "queue_steps 4: %s", mlc_dev_error(NULL));
  mlc_dev_destroy(q), mlc_dev_destroy(s), mlc_dev_destroy(cpu);
}

int main(int argc, char **argv) {
  if (argc > 1) { // create with this device where there is none: the reason
    mlc_dev *m = make(atoi(argv[1]));
    printf("%s\n", m ? mlc_dev_device(m) : mlc_dev_error(NULL));
    mlc_dev_destroy(m);
    return 0;
  }
  unsigned r = 7;
  for (int i = 0; i < B * 8; i++) r = r * 1103515245u + 12345u, x[i] = (float)((r >> 16) & 0xff) / 128.0f - 1;
  for (int s = 0; s < B; s++) y[s] = x[s * 8] > 0 ? 0 : x[s * 8 + 1] > 0 ? 1 : 2;
  mlc_dev *m[2] = {make(0), make(1)};
  CHECK(m[0] && m[1], "create: %s", mlc_dev_error(NULL));
  if (!m[0] || !m[1]) return 1;
  CHECK(!strcmp(mlc_dev_device(m[0]), "cpu"), "device 0 runs on %s", mlc_dev_device(m[0]));
  CHECK(!strncmp(mlc_dev_device(m[1]), "cuda: ", 6), "device 1 runs on %s", mlc_dev_device(m[1]));
  for (int step = 0; step < 3; step++) {
    float loss[2] = {0};
    for (int k = 0; k < 2; k++) CHECK(!mlc_dev_train_step(m[k], B, x, y, &loss[k]), "train_step: %s", mlc_dev_error(m[k]));
    CHECK(close_to(loss[0], loss[1]), "step %d: loss %.9g on the CPU, %.9g on the device", step, loss[0], loss[1]);
  }
  int64_t n[2];
  float *w[2] = {mlc_dev_state(m[0], "fc1.w", &n[0]), mlc_dev_state(m[1], "fc1.w", &n[1])};
  CHECK(w[0] && w[1] && n[0] == n[1], "state fc1.w: %s", mlc_dev_error(m[1]));
  for (int64_t i = 0; w[0] && w[1] && i < n[0]; i++)
    if (!close_to(w[0][i], w[1][i])) { CHECK(0, "fc1.w[%lld]: %.9g vs %.9g", (long long)i, w[0][i], w[1][i]); break; }
  CHECK(!mlc_dev_save_weights(m[1], "lib.st"), "save_weights: %s", mlc_dev_error(m[1]));
  mlc_dev *c = make(0);
  CHECK(c && !mlc_dev_load_weights(c, "lib.st"), "load_weights: %s", mlc_dev_error(c));
  CHECK(!mlc_dev_predict(m[1], B, x, out[0]) && !mlc_dev_predict(c, B, x, out[1]), "predict failed");
  for (int i = 0; i < B * 3; i++)
    if (!close_to(out[0][i], out[1][i])) { CHECK(0, "predict[%d]: %.9g on the device, %.9g on the CPU", i, out[0][i], out[1][i]); break; }
  mlc_dev_destroy(c);
  mlc_dev_destroy(m[0]);
  mlc_dev_destroy(m[1]);
  queued();
  if (!bad) printf("ok\n");
  return bad;
}
"""


def case_library(ctx):
    main_c = os.path.join(ctx.work, "lib_main.c")
    with open(main_c, "w") as f:
        f.write(LIB_MAIN)
    exe = os.path.join(ctx.work, "lib_main")
    p = subprocess.run([ctx.cc, "-std=gnu17", "-O1", "-I", ctx.work, main_c, os.path.join(ctx.work, "libdev.a"),
                        "-lz", "-lcjson", "-lm", "-lpthread", "-ldl", "-o", exe], capture_output=True, text=True)
    if p.returncode:
        return report("the library on the device", "cc: %s" % p.stderr[-800:])
    rc, out, err = ctx.run("lib_main", [], ctx.env())
    report("the library: device 0 and 1 train alike, weights cross over, queue_steps 2 leaves steps in flight",
           None if rc == 0 and out.strip().endswith("ok") else "status %d: %s%s" % (rc, out, err))
    if ctx.real:
        return
    rc, out, err = ctx.run("lib_main", ["2"], ctx.env(MLC_FAKE_CUDA_DEVICES=0))
    report("the library: device 2 without a device runs on the CPU, saying why",
           None if rc == 0 and out == "cpu (no CUDA device)\n" else "status %d: %r %r" % (rc, out, err))
    rc, out, err = ctx.run("lib_main", ["1"], ctx.env(MLC_FAKE_CUDA_DEVICES=0))
    report("the library: device 1 without a device fails create", None if rc == 0 and out == "no CUDA device\n"
           else "status %d: %r %r" % (rc, out, err))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mlc", required=True)
    ap.add_argument("--fake", help="the fake driver's folder (build/tests/fake-cuda)")
    ap.add_argument("--real", action="store_true", help="the machine's driver and GPU instead of the fake")
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--work", required=True)
    ap.add_argument("--keep", action="store_true", help="reuse the programs a run before built in --work")
    a = ap.parse_args()
    if not a.real and not a.fake:
        ap.error("--fake DIR or --real")
    global REAL
    REAL = a.real
    ctx = Ctx(a)
    ctx.keep, ctx.real = a.keep, a.real
    if not a.keep:
        shutil.rmtree(ctx.work, ignore_errors=True)
    os.makedirs(ctx.work, exist_ok=True)
    write_data(ctx.work)
    build(ctx, "cpu,cuda", "dev")
    if not ctx.real:
        build(ctx, "cpu,cuda", "dev.cu", emit="cuda")
        emulation_object(ctx)
    build(ctx, "cpu", "cpu_only")
    build(ctx, "cuda", "cuda_only")
    build(ctx, "cpu,cuda", "libdev.a", emit="lib")
    case_train(ctx)  # cpu.st, gpu.st
    case_resume(ctx)  # cpu1.st: the weights the selection cases evaluate
    case_selection(ctx)
    case_checked(ctx)
    case_launches(ctx)
    case_queue(ctx)
    case_cuda_only(ctx)
    case_library(ctx)
    print("%d passed, %d failed, %d skipped" % (results["pass"], results["fail"], results["skip"]))
    sys.exit(1 if results["fail"] else 0)


if __name__ == "__main__":
    main()
