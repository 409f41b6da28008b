#!/usr/bin/env python3
"""scaler.py — dynamic loss scaling end to end (tests/e2e/scaler.model).

    scaler.py MLC WORKDIR

Builds tests/e2e/scaler.model (adam, loss_scale dynamic(init_scale = 2 **
127, growth_interval = 3)), trains it on a small regression set in file
order (--no-shuffle, a metrics line per step) and checks:

  1. reference: a PyTorch loop from the program's initial weights (its
     `--epochs 0` checkpoint) that follows torch.cuda.amp.GradScaler's
     documented rule step by step. GradScaler itself cannot run here: its
     kernels (_amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_)
     exist only for CUDA in torch 1.13, so the rule is written out below:
     backward of loss * S; found_inf if any scaled gradient is not finite;
     gradients times inv_scale = float32(1 / S); a step with found_inf skips
     optimizer.step() (Adam's moments and step count stay), S *= backoff and
     the tracker resets; otherwise Adam steps, the tracker counts, and at
     growth_interval S *= growth (if finite) and the tracker resets. Every
     step's scale, overflow flag and skip count must equal the program's
     exactly (the scales are powers of two), the losses and the final
     parameters within 1e-4 (float32 in a different order of operations);
     there must be skipped steps at the start, later growth, and a skip after
     a growth.
     The same with `accumulate 2` (scaler.scale(loss / 2).backward() per
     micro-batch) and `clip grad_norm = 5.0` (clip_grad_norm_ after
     scaler.unscale_).
  2. a skipped step changes nothing but the step counts and the scaler: the
     checkpoints after the steps before and after one (--max-steps) hold
     bit-identical parameters and Adam moments, opt.step one more, the skip
     count one more, the scale halved, the tracker 0.
  3. resume: a run stopped (--max-steps) while the growth tracker is not 0
     and resumed ends with the uninterrupted run's checkpoint, byte for
     byte in every tensor, and logs the same scales and skips.
     And killed: a run of 50 epochs that writes a checkpoint every 7 steps,
     SIGKILLed at random moments and resumed each time (five kills), ends
     with the uninterrupted run's tensors and step, byte for byte.
  4. static scaling: with sgd (whose step, unlike Adam's, is not invariant
     to the gradients' scale, so a missing unscale would show), loss_scale
     128 ends where loss_scale none does within 1e-6 (power-of-two scaling
     is exact here), and logs scale 128 on every step.
  5. the log lines say `scale S overflow 0|1 skipped N` (the epoch line
     the skip count), and the run record holds the scaler's settings;
     --check-finite (whose checks leave the scaled gradients alone) logs
     the same steps as the unchecked run instead of stopping at an overflow.
  6. the library (`--emit lib`): trained on the same batches, its
     last_loss_scale and skipped_steps after each step are the program's.
  7. `precision f16` alone scales the loss dynamically (the scaler's state is
     in the graph IR), and `loss_scale none` turns that off.
Exit 0 and "[PASS] ..." lines, or 1 with what differed.
"""
import json
import os
import random
import signal
import subprocess
import sys
import time

os.environ.setdefault("OPENBLAS_CORETYPE", "Cooperlake")
import numpy as np  # noqa: E402
import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "parity"))
import safetensors_np  # noqa: E402

MLC, WORK = sys.argv[1], sys.argv[2]
MODEL = os.path.join(HERE, "scaler.model")
INIT_SCALE, GROWTH, BACKOFF, INTERVAL = 2.0 ** 127, 2.0, 0.5, 3
BATCH, EPOCHS, LR = 4, 3, 1e-2
failed = []


def check(ok, what):
    print(("[PASS] " if ok else "[FAIL] ") + what)
    if not ok:
        failed.append(what)
    return ok


def run(*args):
    r = subprocess.run(list(args), capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"{' '.join(args)}: status {r.returncode}\n{r.stdout}{r.stderr}")
    return r.stdout


def build(text, name):
    src = os.path.join(WORK, name + ".model")
    with open(src, "w") as f:
        f.write(text)
    run(MLC, "build", src, "-o", os.path.join(WORK, name))
    return os.path.join(WORK, name)


def data():
    r = np.random.default_rng(1)
    x = (r.standard_normal((40, 6)) * 3).astype(np.float32)
    y = (x @ r.standard_normal((6, 1)) * 2 + 1).astype(np.float32)
    np.save(os.path.join(WORK, "x.npy"), x)
    np.save(os.path.join(WORK, "y.npy"), y)
    return x, y


def train(prog, tag, *extra):
    ck = os.path.join(WORK, tag + ".safetensors")
    met = os.path.join(WORK, tag + ".jsonl")
    for p in (ck, met):
        if os.path.exists(p) and "--resume" not in extra:
            os.remove(p)
    run(prog, "train", "--train-data", f"{WORK}/x.npy,{WORK}/y.npy", "--no-shuffle",
        "--log-every", "1", "--checkpoint", ck, "--metrics", met, *extra)
    steps = [json.loads(l) for l in open(met) if l.strip()]
    return ck, [s for s in steps if s["type"] == "step"]


def tensors(path):
    return safetensors_np.read(path)[0]


# ---- 1. the reference ----------------------------------------------------------------
def reference(init, x, y, K=1, clip=0.0):
    """GradScaler's rule over the program's batches (K micro-batches a step,
    clip_grad_norm_ after unscale_ when clip > 0); one record per step."""
    p = {k: torch.tensor(init[k]).requires_grad_() for k in ("fc1.w", "fc1.b", "fc2.w", "fc2.b")}
    opt = torch.optim.Adam(list(p.values()), lr=LR, foreach=False)
    scale, tracker, skipped, out = np.float32(INIT_SCALE), 0, 0, []
    per = len(x) // (BATCH * K)
    for step in range(EPOCHS * per):
        opt.zero_grad()
        losses = []
        for m in range(K):
            k = (step % per) * K + m
            xb, yb = torch.tensor(x[k * BATCH:(k + 1) * BATCH]), torch.tensor(y[k * BATCH:(k + 1) * BATCH])
            pred = torch.tanh(xb @ p["fc1.w"].T + p["fc1.b"]) @ p["fc2.w"].T + p["fc2.b"]
            loss = torch.nn.functional.mse_loss(pred, yb)
            (loss / K * torch.tensor(scale)).backward()  # scaler.scale(loss / K).backward()
            losses.append(float(loss))
        found = any(not torch.isfinite(t.grad).all() for t in p.values())
        inv = torch.tensor(np.float32(1.0 / np.float64(scale)))
        for t in p.values():
            t.grad.mul_(inv)
        if clip and not found:
            torch.nn.utils.clip_grad_norm_(list(p.values()), clip)
        out.append({"scale": float(scale), "overflow": found, "loss": sum(losses) / K})
        if found:
            scale, tracker, skipped = np.float32(scale * BACKOFF), 0, skipped + 1
        else:
            opt.step()
            tracker += 1
            if tracker == INTERVAL:
                grown = np.float32(scale * GROWTH)
                scale = grown if np.isfinite(grown) else scale
                tracker = 0
        out[-1]["skipped"] = skipped
    return out, {k: v.detach().numpy() for k, v in p.items()}


def check_reference(prog, x, y, tag="full", K=1, clip=0.0):
    ck0, _ = train(prog, "init", "--epochs", "0")
    init = tensors(ck0)
    ck, steps = train(prog, tag)
    ref, params = reference(init, x, y, K, clip)
    if K > 1:
        print(f"  accumulate {K}, clip grad_norm = {clip}:")
    # the metrics file prints 15 significant digits: the nearest float32 is the scale
    got = [(float(np.float32(s["loss_scale"])), s["overflow"], s["skipped_steps"]) for s in steps]
    want = [(r["scale"], r["overflow"], r["skipped"]) for r in ref]
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            print(f"step {i + 1}: program (scale, overflow, skipped) {g}, reference {w}")
            break
    check(len(got) == len(want) and got == want,
          f"{len(got)} steps: scale, overflow and skip count equal the GradScaler reference's")
    if K > 1:
        clipped = sum(1 for st in steps if st["grad_norm"] is not None and st["grad_norm"] > clip)
        check(clipped > 0, f"{clipped} steps clipped")
    flags = [w[1] for w in want]
    grew = any(want[i + 1][0] > want[i][0] for i in range(len(want) - 1))
    reskip = any(flags[i] and not flags[i - 1] for i in range(1, len(flags)))
    check(flags[0] and grew and reskip and not all(flags),
          f"the run skips {sum(flags)} steps: from the first, after a growth, and not all")
    dl = max(abs(s["loss"] - r["loss"]) / max(1.0, abs(r["loss"])) for s, r in zip(steps, ref))
    final = tensors(ck)
    dp = max(float(np.max(np.abs(final[k] - v) / np.maximum(1.0, np.abs(v)))) for k, v in params.items())
    moved = max(float(np.max(np.abs(final[k] - init[k]))) for k in params)
    print(f"  largest relative difference: losses {dl:.3g}, final parameters {dp:.3g} "
          f"(parameters moved up to {moved:.3g})")
    check(dl < 1e-4 and dp < 1e-4 and moved > 1e-2, "losses and final parameters agree with the reference")
    return want, final


# ---- 2. a skipped step ------------------------------------------------------------------
def check_skip(prog, want):
    k = next(i for i in range(1, len(want)) if want[i][1] and not want[i - 1][1])  # 0-based
    a = tensors(train(prog, "before", "--max-steps", str(k))[0])
    b = tensors(train(prog, "after", "--max-steps", str(k + 1))[0])
    scaler = {"opt.step", "opt.scaler.scale", "opt.scaler.skipped", "opt.scaler.growth_tracker"}
    same = [n for n in a if n not in scaler and a[n].tobytes() == b[n].tobytes()]
    rest = [n for n in a if n not in scaler and n not in same]
    check(not rest and any(".exp_avg" in n for n in same),
          f"step {k + 1} (skipped) leaves {len(same)} parameters and Adam moments bit-identical"
          + (f"; changed: {rest}" if rest else ""))
    check(int(b["opt.step"]) == int(a["opt.step"]) + 1 and
          int(b["opt.scaler.skipped"]) == int(a["opt.scaler.skipped"]) + 1 and
          float(b["opt.scaler.scale"]) == float(a["opt.scaler.scale"]) * BACKOFF and
          int(b["opt.scaler.growth_tracker"]) == 0,
          "and counts the step, the skip, halves the scale and resets the tracker")
    g = next(i for i in range(1, len(want)) if not want[i][1])
    c, d = (tensors(train(prog, t, "--max-steps", str(n))[0]) for t, n in (("g0", g), ("g1", g + 1)))
    check(c["fc1.w"].tobytes() != d["fc1.w"].tobytes(), f"while a good step ({g + 1}) moves the weights")


# ---- 3. resume -----------------------------------------------------------------------------
def check_resume(prog, want, final):
    full = train(prog, "full")[1]
    # stop after a good step that leaves the tracker at 1 or 2
    k, tr = None, 0
    for i, w in enumerate(want):
        tr = 0 if w[1] else tr + 1
        tr = 0 if tr == INTERVAL else tr
        if tr and 8 < i < len(want) - 5:
            k = i + 1
            break
    ck, _ = train(prog, "resumed", "--max-steps", str(k))
    tracker = int(tensors(ck)["opt.scaler.growth_tracker"])
    _, tail = train(prog, "resumed", "--resume")
    got = tensors(ck)
    diff = [n for n in final if final[n].tobytes() != got[n].tobytes()]
    logged = [(s["step"], s["loss_scale"], s["overflow"], s["skipped_steps"], s["loss"]) for s in tail]
    ref = [(s["step"], s["loss_scale"], s["overflow"], s["skipped_steps"], s["loss"]) for s in full[k:]]
    print(f"  resumed steps {len(logged)}")
    check(tracker > 0 and not diff and logged == ref,
          f"stopped after step {k} (growth tracker {tracker}) and resumed: every tensor and logged "
          "step equal the uninterrupted run's" + (f"; differ: {diff}" if diff else ""))


def check_kill(prog):
    args = ["train", "--train-data", f"{WORK}/x.npy,{WORK}/y.npy", "--epochs", "50",
            "--checkpoint-every", "7", "--log-every", "1000"]
    ref = os.path.join(WORK, "kill_ref.safetensors")
    ck = os.path.join(WORK, "killed.safetensors")
    for p in (ref, ck):
        if os.path.exists(p):
            os.remove(p)
    run(prog, *args, "--checkpoint", ref)
    rng, kills, resumed = random.Random(5), 0, False
    for _ in range(40):
        p = subprocess.Popen([prog] + args + ["--checkpoint", ck] + (["--resume"] if resumed else []),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        while not os.path.exists(ck) and p.poll() is None:
            time.sleep(0.002)
        time.sleep(rng.uniform(0, 0.05))
        if p.poll() is None and kills < 5:
            p.send_signal(signal.SIGKILL)
            kills += 1
        rc = p.wait()
        resumed = True
        if rc == 0:
            break
        if rc != -signal.SIGKILL:
            sys.exit(f"killed run: status {rc}: {p.stderr.read().decode()}")
    a, b = tensors(ref), tensors(ck)
    diff = [n for n in a if a[n].tobytes() != b[n].tobytes()]
    meta = safetensors_np.read(ck)[1]
    check(kills > 0 and rc == 0 and not diff and meta.get("mlc.step") == safetensors_np.read(ref)[1].get("mlc.step")
          and int(a["opt.scaler.skipped"]) > 0,
          f"{kills} SIGKILLs and resumes end byte for byte where the uninterrupted run ends "
          f"({int(a['opt.scaler.skipped'])} steps skipped, scale {float(a['opt.scaler.scale']):g})"
          + (f"; differ: {diff}" if diff else ""))


# ---- 4. static scaling -------------------------------------------------------------------------
def check_static(x):
    text = open(MODEL).read().replace("optimizer adam(lr = 1e-2)", "optimizer sgd(lr = 1e-3, momentum = 0.9)")
    line = next(l for l in text.splitlines() if "loss_scale" in l)
    none = build(text.replace(line, "  loss_scale none"), "static_none")
    s128 = build(text.replace(line, "  loss_scale 128"), "static_128")
    a, _ = train(none, "none")
    b, steps = train(s128, "s128")
    ta, tb = tensors(a), tensors(b)
    d = max(float(np.max(np.abs(ta[k] - tb[k]) / np.maximum(1.0, np.abs(ta[k]))))
            for k in ("fc1.w", "fc1.b", "fc2.w", "fc2.b"))
    moved = float(np.max(np.abs(ta["fc1.w"] - tensors(train(none, "none0", "--epochs", "0")[0])["fc1.w"])))
    print(f"  loss_scale 128 against none (sgd): largest relative difference {d:.3g} (weights moved {moved:.3g})")
    check(d <= 1e-6 and moved > 1e-3 and all(s["loss_scale"] == 128 and not s["overflow"] for s in steps),
          "loss_scale 128 ends where no scaling ends and logs scale 128, no overflow")


# ---- 5. log lines and run record -----------------------------------------------------------
def check_log(prog, want):
    rec = os.path.join(WORK, "run.json")
    out = run(prog, "train", "--train-data", f"{WORK}/x.npy,{WORK}/y.npy", "--no-shuffle",
              "--log-every", "1", "--run-record", rec)
    lines = [l for l in out.splitlines() if " step " in l]
    flags = [" overflow 1 " in l for l in lines]
    skips = [int(l.split(" skipped ")[1].split()[0]) for l in lines]
    done = [l for l in out.splitlines() if " done: " in l]
    h = json.load(open(rec))["hyperparameters"]
    _, checked = train(prog, "checked", "--check-finite")
    _, plain = train(prog, "plain")
    keys = ("step", "loss", "loss_scale", "overflow", "skipped_steps", "grad_norm")
    check([[c[k] for k in keys] for c in checked] == [[p[k] for k in keys] for p in plain],
          "--check-finite logs the same steps, skips included")
    check(flags == [w[1] for w in want] and skips == [w[2] for w in want] and
          all(" scale " in l for l in lines) and done and f" skipped {want[-1][2]} " in done[-1] and
          h.get("init_scale") == INIT_SCALE and h.get("growth_interval") == INTERVAL and
          h.get("backoff_factor") == BACKOFF and h.get("growth_factor") == GROWTH,
          "step and epoch lines show the scale, overflow and skips; the run record the settings")


# ---- 6. the library's getters -------------------------------------------------------------------
DRIVER = r'''
#include <stdio.h>
#include <stdlib.h>
#include "scaler.h"
int main(int argc, char **argv) {
  int n = atoi(argv[3]), steps = atoi(argv[4]);
  float *x = malloc(sizeof(float) * 6 * n), *y = malloc(sizeof(float) * n), loss;
  FILE *fx = fopen(argv[1], "rb"), *fy = fopen(argv[2], "rb");
  if (!fx || !fy || fread(x, sizeof(float), 6 * (size_t)n, fx) != 6 * (size_t)n ||
      fread(y, sizeof(float), (size_t)n, fy) != (size_t)n) return 2;
  mlc_scaler *m = mlc_scaler_create(NULL);
  if (!m) return 3;
  printf("before %g %lld\n", mlc_scaler_last_loss_scale(m), (long long)mlc_scaler_skipped_steps(m));
  for (int s = 0, b = 0; s < steps; s++, b = (b + 1) % (n / 4)) {
    if (mlc_scaler_train_step(m, 4, x + 24 * b, y + 4 * b, &loss)) return 4;
    printf("%.9g %lld\n", mlc_scaler_last_loss_scale(m), (long long)mlc_scaler_skipped_steps(m));
  }
  mlc_scaler_destroy(m);
  return 0;
}
'''


def check_library(x, y, steps):
    lib = os.path.join(WORK, "lib")
    os.makedirs(lib, exist_ok=True)
    src = os.path.join(lib, "scaler.model")
    with open(src, "w") as f:
        f.write(open(MODEL).read())
    run(MLC, "build", src, "--emit", "lib", "-o", os.path.join(lib, "libscaler.a"))
    with open(os.path.join(lib, "main.c"), "w") as f:
        f.write(DRIVER)
    x.tofile(os.path.join(lib, "x.bin"))
    y.tofile(os.path.join(lib, "y.bin"))
    exe = os.path.join(lib, "drive")
    run(os.environ.get("CC", "cc"), "-std=gnu17", "-I" + lib, os.path.join(lib, "main.c"),
        os.path.join(lib, "libscaler.a"), "-lz", "-lcjson", "-lm", "-lpthread", "-o", exe)
    out = run(exe, os.path.join(lib, "x.bin"), os.path.join(lib, "y.bin"), str(len(x)), str(len(steps)))
    rows = [l.split() for l in out.splitlines()]
    got = [(float(np.float32(float(a))), int(b)) for a, b in rows[1:]]
    want = [(float(np.float32(s["loss_scale"])), s["skipped_steps"]) for s in steps]
    check(rows[0] == ["before", "nan", "0"] and got == want,
          f"the library's last_loss_scale and skipped_steps follow the program's {len(want)} steps"
          + ("" if got == want else f": {got[:6]} vs {want[:6]}"))


# ---- 7. the f16 default ----------------------------------------------------------------------
def check_f16_default():
    text = open(MODEL).read()
    line = next(l for l in text.splitlines() if "loss_scale" in l)
    ir = {}
    for tag, rep in (("f16", "  precision f16"), ("f16_none", "  precision f16\n  loss_scale none")):
        src = os.path.join(WORK, tag + ".model")
        with open(src, "w") as f:
            f.write(text.replace(line, rep))
        ir[tag] = run(MLC, "build", src, "--emit", "ir", "-o", "-")
    check("optstate opt.scaler.growth_tracker" in ir["f16"] and "opt.scaler" not in ir["f16_none"],
          "precision f16 scales the loss dynamically unless loss_scale none")


def main():
    os.makedirs(WORK, exist_ok=True)
    prog = build(open(MODEL).read(), "scaler")
    x, y = data()
    want, final = check_reference(prog, x, y)
    acc = build(open(MODEL).read().replace("seed 3\n", "seed 3\n  accumulate 2\n  clip grad_norm = 5.0\n"), "accum")
    check_reference(acc, x, y, "accum", 2, 5.0)
    check_skip(prog, want)
    check_resume(prog, want, final)
    check_kill(prog)
    check_static(x)
    check_log(prog, want)
    check_library(x, y, train(prog, "full")[1])
    check_f16_default()
    print(f"{'FAIL' if failed else 'PASS'}: {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
