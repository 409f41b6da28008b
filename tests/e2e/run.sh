#!/bin/bash
# run.sh — end-to-end checks of `mlc build` (registered in tests/CMakeLists.txt).
#
# Usage: run.sh train|embed|torch20|finite|plateau|seq|aux|masked|noise|scaler|cnn MLC PYTHON WORKDIR
#        (from the repo root; masked, noise, scaler and cnn are described above their functions)
#
#   train  builds examples/fashion_mlp.model into a program and trains it for
#          3 epochs on a 2,000-image slice (tests/e2e/make_slice.py), twice
#          with one seed (2 threads, then 1): the loss falls, test accuracy
#          is >= 0.6 (chance: 0.1), and both runs log identical losses
#          (tests/e2e/check_train.py); then the same for tests/e2e/accum.model
#          (dropout, accumulation, clipping, AdamW + cosine, 2 epochs); and a
#          run stopped at step 40 and resumed from its checkpoint ends with
#          the uninterrupted run's test loss and accuracy.
#          MLC_LONG_TESTS=1 also trains on the
#          whole of Fashion-MNIST for the recipe's 5 epochs: test accuracy
#          >= 0.86.
#   embed  builds the model with --emit lib, then examples/embed (its own
#          CMake project) against it, and runs it.
#   torch20  for examples/fashion_mlp.model and fashion_cnn.model: PyTorch
#          (tests/e2e/torch20.py) draws initial weights with a fixed seed,
#          writes them as safetensors under mlc's paths and trains 20 steps
#          of the recipe (SGD lr 0.05 momentum 0.9, batch 64) on the first
#          1,280 training images in file order; the built program trains from
#          the same file (`train --weights F --no-shuffle`) and its 20 losses
#          must match within 1e-4. Exits 77 (skipped) when PYTHON cannot
#          import torch.
set -euo pipefail
what=$1 mlc=$2 py=$3 work=$4
rm -rf "$work"
mkdir -p "$work"

fail() {
  echo "[FAIL] $*"
  exit 1
}

train() {
  "$mlc" build examples/fashion_mlp.model -o "$work/fashion_mlp" || fail "mlc build"
  local src d=$work/data
  src=$("$py" tests/e2e/make_slice.py "$d" 2000 500)
  echo "data: 2000 training and 500 test images ($src)"
  for run in a:2 b:1; do
    "$work/fashion_mlp" train --train-data "$d/train-images.idx,$d/train-labels.idx" \
      --test-data "$d/test-images.idx,$d/test-labels.idx" --epochs 3 --seed 3 \
      --threads "${run#*:}" --log-every 4 --metrics "$work/${run%:*}.jsonl" \
      --run-record "$work/${run%:*}.json" >"$work/${run%:*}.log" 2>&1 ||
      { cat "$work/${run%:*}.log"; fail "training run ${run%:*}"; }
  done
  tail -n 2 "$work/a.log"
  "$py" tests/e2e/check_train.py 0.6 "$work/a.jsonl" "$work/b.jsonl" || fail "training checks"
  # resume: 40 steps, a checkpoint, then the rest ends where run a ended
  local args=(--train-data "$d/train-images.idx,$d/train-labels.idx"
    --test-data "$d/test-images.idx,$d/test-labels.idx" --epochs 3 --seed 3)
  "$work/fashion_mlp" train "${args[@]}" --checkpoint "$work/ck.safetensors" --max-steps 40 \
    >"$work/r1.log" 2>&1 || { cat "$work/r1.log"; fail "run to step 40"; }
  "$work/fashion_mlp" train "${args[@]}" --checkpoint "$work/ck.safetensors" --resume \
    --metrics "$work/r2.jsonl" >"$work/r2.log" 2>&1 || { cat "$work/r2.log"; fail "resumed run"; }
  "$py" - "$work/a.jsonl" "$work/r2.jsonl" <<'PY' || fail "resume is not exact"
import json, sys
def last(path):
    recs = [json.loads(l) for l in open(path) if l.strip()]
    r = [x for x in recs if x["type"] == "epoch"][-1]
    return (r["test_loss"], r["test_accuracy"])
a, b = last(sys.argv[1]), last(sys.argv[2])
print(f"resumed after 40 steps: test loss, accuracy {b} (uninterrupted: {a})")
sys.exit(0 if a == b else 1)
PY
  # --lr reaches the compiled step: a tiny rate leaves the loss near its start
  "$work/fashion_mlp" train "${args[@]}" --epochs 1 --max-steps 30 --lr 1e-9 \
    --metrics "$work/lr.jsonl" >"$work/lr.log" 2>&1 || { cat "$work/lr.log"; fail "--lr run"; }
  "$py" - "$work/lr.jsonl" "$work/a.jsonl" <<'PY' || fail "--lr has no effect"
import json, sys
steps = lambda p: [r for r in (json.loads(l) for l in open(p) if l.strip()) if r["type"] == "step"]
tiny, normal = steps(sys.argv[1]), steps(sys.argv[2])
ok = all(abs(r["lr"] - 1e-9) < 1e-15 for r in tiny) and tiny[-1]["loss"] > 2.0 > normal[-1]["loss"]
print(f"--lr 1e-9: lr {tiny[-1]['lr']}, loss {tiny[-1]['loss']:.4f} (recipe lr: {normal[-1]['loss']:.4f})")
sys.exit(0 if ok else 1)
PY
  # dropout, accumulation, clipping, AdamW + cosine: the same checks
  "$mlc" build tests/e2e/accum.model -o "$work/accum" || fail "mlc build accum.model"
  for run in c:2 e:1; do
    "$work/accum" train --train-data "$d/train-images.idx,$d/train-labels.idx" \
      --test-data "$d/test-images.idx,$d/test-labels.idx" --threads "${run#*:}" --log-every 4 \
      --metrics "$work/${run%:*}.jsonl" >"$work/${run%:*}.log" 2>&1 ||
      { cat "$work/${run%:*}.log"; fail "accum.model run ${run%:*}"; }
  done
  tail -n 1 "$work/c.log"
  "$py" tests/e2e/check_train.py 0.6 "$work/c.jsonl" "$work/e.jsonl" || fail "accum.model checks"
  if [[ "${MLC_LONG_TESTS:-0}" == 1 ]]; then
    [[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]] || fail "MLC_LONG_TESTS needs Fashion-MNIST"
    "$work/fashion_mlp" train --metrics "$work/full.jsonl" >"$work/full.log" 2>&1 || fail "full run"
    grep done "$work/full.log"
    "$py" tests/e2e/check_train.py 0.86 "$work/full.jsonl" || fail "5-epoch accuracy"
  fi
  echo "[PASS] e2e train"
}

embed() {
  mkdir -p "$work/lib"
  "$mlc" build examples/fashion_mlp.model --emit lib -o "$work/lib/libfashion_mlp.a" || fail "mlc build --emit lib"
  [[ -f "$work/lib/fashion_mlp.h" ]] || fail "no header next to the library"
  cmake -S examples/embed -B "$work/build" -DMLC_MODEL_DIR="$work/lib" \
    -DCMAKE_C_FLAGS="-Wall -Wextra -Wpedantic -Werror" >"$work/cmake.log" 2>&1 ||
    { cat "$work/cmake.log"; fail "configure examples/embed"; }
  cmake --build "$work/build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; fail "build examples/embed"; }
  (cd "$work" && ./build/embed_fashion) || fail "examples/embed run"
  echo "[PASS] e2e embed"
}

torch20() {
  if ! "$py" -c "import torch, numpy" >/dev/null 2>&1; then
    echo "SKIP: $py cannot import torch"
    exit 77
  fi
  local d=$work/data src kind
  src=$("$py" tests/e2e/make_slice.py "$d" 1280 64)
  echo "data: the first 1280 training images ($src)"
  for kind in mlp cnn; do
    local out=$work/$kind
    mkdir -p "$out"
    "$mlc" build "examples/fashion_$kind.model" -o "$out/prog" || fail "mlc build fashion_$kind"
    "$py" tests/e2e/torch20.py "$kind" "$d" "$out" 20 >"$out/torch.log" 2>&1 ||
      { cat "$out/torch.log"; fail "torch20.py $kind"; }
    "$out/prog" train --weights "$out/init.safetensors" --no-shuffle --epochs 1 --max-steps 20 \
      --train-data "$d/train-images.idx,$d/train-labels.idx" \
      --test-data "$d/test-images.idx,$d/test-labels.idx" --log-every 1 \
      --metrics "$out/mlc.jsonl" >"$out/mlc.log" 2>&1 || { cat "$out/mlc.log"; fail "fashion_$kind train"; }
    "$py" - "$kind" "$out/torch.json" "$out/mlc.jsonl" <<'PY' || fail "fashion_$kind losses differ from PyTorch"
import json, sys
kind, want = sys.argv[1], json.load(open(sys.argv[2]))
got = [r["loss"] for r in (json.loads(l) for l in open(sys.argv[3]) if l.strip()) if r["type"] == "step"]
if len(got) != len(want):
    print(f"{kind}: {len(got)} mlc losses, {len(want)} PyTorch losses")
    sys.exit(1)
diff = [abs(a - b) for a, b in zip(got, want)]
worst = max(range(len(diff)), key=diff.__getitem__)
print(f"fashion_{kind}: 20 losses {want[0]:.6f} .. {want[-1]:.6f}; max |mlc - pytorch| = "
      f"{diff[worst]:.3g} (step {worst + 1})")
for i, (a, b) in enumerate(zip(got, want)):
    if abs(a - b) > 1e-4:
        print(f"  step {i + 1}: mlc {a:.7f} pytorch {b:.7f}")
sys.exit(0 if diff[worst] <= 1e-4 else 1)
PY
  done
  echo "[PASS] e2e torch20"
}

# finite: tests/e2e/diverge.model (lr 1e6) overflows within a few steps; with
# --check-finite the program stops with status 1 and names the step and the
# first value that went non-finite, as the .model source line and op; without
# it the program stops with status 1 as well, keeping the last checkpoint
# whose weights were finite.
finite() {
  "$mlc" build tests/e2e/diverge.model -o "$work/diverge" || fail "mlc build diverge.model"
  local rc=0
  "$work/diverge" train --check-finite >"$work/finite.log" 2>"$work/finite.err" || rc=$?
  cat "$work/finite.err"
  [[ $rc == 1 ]] || fail "--check-finite exit status $rc, want 1"
  grep -Eq '^diverge: step [0-9]+: loss became (NaN|infinite) at tests/e2e/diverge\.model:[0-9]+:[0-9]+ \([a-z_0-9]+\)$' \
    "$work/finite.err" || fail "no step, tests/e2e/diverge.model:LINE:COL and op in the report"
  # without the flag the run stops too (status 1), and the checkpoint on disk
  # is the last finite one: every step's is written, none after the loss broke
  rc=0
  "$work/diverge" train --checkpoint "$work/ck.st" --checkpoint-every 1 >"$work/plain.log" \
    2>"$work/plain.err" || rc=$?
  cat "$work/plain.err"
  [[ $rc == 1 ]] || fail "a non-finite loss without --check-finite: exit status $rc, want 1"
  grep -Eq '^diverge: step [0-9]+: loss became (NaN|infinite); the run stops \(the checkpoint .*ck\.st from step [0-9]+ is kept\)' \
    "$work/plain.err" || fail "no step and kept checkpoint in the report"
  local kept
  kept=$(sed -nE 's/.*from step ([0-9]+) is kept.*/\1/p' "$work/plain.err")
  "$py" - "$work/ck.st" "$kept" <<'PY' || fail "the kept checkpoint is not the last finite one"
import json, math, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
meta, data = head.pop("__metadata__"), raw[8 + n:]
bad = [k for k, t in head.items() if t["dtype"] == "F32" and not k.startswith("opt.")
       and not all(math.isfinite(v) for v in struct.unpack(f"<{(t['data_offsets'][1] - t['data_offsets'][0]) // 4}f",
                                                          data[t["data_offsets"][0]:t["data_offsets"][1]]))]
print(f"kept checkpoint: step {meta['mlc.step']}, non-finite tensors: {bad}")
sys.exit(0 if not bad and meta["mlc.step"] == sys.argv[2] else 1)
PY
  ls "$work" | grep -q '\.tmp\.' && fail "a temporary checkpoint file was left behind"
  echo "[PASS] e2e finite"
}

# plateau: tests/e2e/plateau.model (schedule plateau(factor = 0.5, patience =
# 0)) on random labels, where the test loss soon stops improving: every
# epoch's logged lr is the previous one, halved when that epoch's test loss
# was no new best (torch's ReduceLROnPlateau rule, threshold 1e-4), and at
# least one halving happens; runs stopped at step 40 (mid-epoch) and at step
# 32 (an epoch's last step) and resumed log the uninterrupted run's lrs and
# end with its test loss.
plateau() {
  if ! "$py" -c "import numpy" >/dev/null 2>&1; then
    echo "SKIP: $py cannot import numpy"
    exit 77
  fi
  "$mlc" build tests/e2e/plateau.model -o "$work/plateau" || fail "mlc build plateau.model"
  "$py" - "$work" <<'PY' || fail "make the random-label data"
import sys, numpy as np
r = np.random.default_rng(0)
for name, n in (("train", 256), ("test", 128)):
    np.save(f"{sys.argv[1]}/{name}_x.npy", r.standard_normal((n, 8)).astype(np.float32))
    np.save(f"{sys.argv[1]}/{name}_y.npy", r.integers(0, 4, n).astype(np.int64))
PY
  local args=(--train-data "$work/train_x.npy,$work/train_y.npy"
    --test-data "$work/test_x.npy,$work/test_y.npy" --log-every 1)
  "$work/plateau" train "${args[@]}" --metrics "$work/p.jsonl" >"$work/p.log" 2>&1 ||
    { cat "$work/p.log"; fail "plateau run"; }
  for stop in 40 32; do
    rm -f "$work/ck$stop.safetensors"
    "$work/plateau" train "${args[@]}" --checkpoint "$work/ck$stop.safetensors" --max-steps $stop \
      >"$work/p$stop.log" 2>&1 || { cat "$work/p$stop.log"; fail "plateau run to step $stop"; }
    "$work/plateau" train "${args[@]}" --checkpoint "$work/ck$stop.safetensors" --resume \
      --metrics "$work/p$stop.jsonl" >>"$work/p$stop.log" 2>&1 ||
      { cat "$work/p$stop.log"; fail "plateau resumed from step $stop"; }
  done
  "$py" - "$work/p.jsonl" "$work/p40.jsonl" "$work/p32.jsonl" <<'PY' || fail "plateau checks"
import json, sys
load = lambda p: [json.loads(l) for l in open(p) if l.strip()]
recs = load(sys.argv[1])
steps = [r for r in recs if r["type"] == "step"]
epochs = [r for r in recs if r["type"] == "epoch"]
lr_of = {}
for r in steps:
    lr_of.setdefault(r["epoch"], set()).add(r["lr"])
ok, best, want, halvings = True, float("inf"), 0.2, 0
for e in epochs:
    got = lr_of[e["epoch"]]
    if len(got) != 1 or abs(got.pop() - want) > 1e-7 * want:
        print(f"epoch {e['epoch']}: lr {sorted(lr_of[e['epoch']])}, want {want}")
        ok = False
    print(f"epoch {e['epoch']}: lr {want:g}, test loss {e['test_loss']:.6f} (best {best:.6f})")
    if e["test_loss"] < best * (1 - 1e-4):
        best = e["test_loss"]
    else:
        want, halvings = want * 0.5, halvings + 1
if not halvings:
    print("the test loss improved every epoch: no halving to check")
    ok = False
for p in sys.argv[2:]:
    res = load(p)
    tail = {r["step"]: r["lr"] for r in res if r["type"] == "step"}
    full = {r["step"]: r["lr"] for r in steps if r["step"] in tail}
    last = [r for r in res if r["type"] == "epoch"][-1]["test_loss"]
    if tail != full or last != epochs[-1]["test_loss"]:
        print(f"{p}: resumed lrs or final test loss {last} differ from the uninterrupted run's")
        ok = False
print(f"{halvings} halvings; resumed runs {'agree' if ok else 'differ'}")
sys.exit(0 if ok else 1)
PY
  echo "[PASS] e2e plateau"
}

# seq: tests/e2e/tiny_gpt.model, whose inputs idx, y: i64[B, T] have a second
# symbolic dim T, built (-O1: build time) and trained 2 epochs on windows of 8
# characters of docs/language.md written as NPY: T is bound from the records,
# the loss falls and per-position accuracy beats chance (1/32); windows of 16
# for y alone, or as test data, are refused naming the file; predict prints
# one row of 32 probabilities per position.
seq_dim() {
  if ! "$py" -c "import numpy" >/dev/null 2>&1; then
    echo "SKIP: $py cannot import numpy"
    exit 77
  fi
  "$mlc" build tests/e2e/tiny_gpt.model -O1 -o "$work/tiny_gpt" || fail "mlc build tiny_gpt.model"
  "$py" - "$work" <<'PY' || fail "make the character windows"
import sys, numpy as np
alpha = "abcdefghijklmnopqrstuvwxyz .,\n()"
text = open("docs/language.md", encoding="utf-8").read().lower()[:30000]
ids = np.array([alpha.index(c) if c in alpha else 1 for c in text], dtype=np.int64)
def save(name, start, n, t):
    s = start + np.arange(n) * t
    np.save(f"{sys.argv[1]}/{name}_x.npy", np.stack([ids[i:i + t] for i in s]))
    np.save(f"{sys.argv[1]}/{name}_y.npy", np.stack([ids[i + 1:i + t + 1] for i in s]))
save("train", 0, 512, 8)
save("test", 20000, 128, 8)
save("t16", 0, 128, 16)
PY
  local w=$work
  "$w/tiny_gpt" train --train-data "$w/train_x.npy,$w/train_y.npy" --test-data "$w/test_x.npy,$w/test_y.npy" \
    --log-every 4 --metrics "$w/s.jsonl" --checkpoint "$w/s.safetensors" >"$w/s.log" 2>&1 ||
    { cat "$w/s.log"; fail "tiny_gpt run"; }
  tail -n 1 "$w/s.log"
  "$py" - "$w/s.jsonl" <<'PY' || fail "tiny_gpt did not learn"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
steps = [r for r in recs if r["type"] == "step"]
last = [r for r in recs if r["type"] == "epoch"][-1]
ok = last["test_loss"] < steps[0]["loss"] - 0.3 and last["test_accuracy"] > 2 / 32
print(f"loss {steps[0]['loss']:.4f} -> test loss {last['test_loss']:.4f}, "
      f"per-position test accuracy {last['test_accuracy']:.4f}")
sys.exit(0 if ok else 1)
PY
  local rc=0
  "$w/tiny_gpt" train --train-data "$w/train_x.npy,$w/t16_y.npy" --epochs 1 >"$w/bad.log" 2>&1 || rc=$?
  [[ $rc == 1 ]] && grep -q "t16_y.npy: input y has T = 16, but .*train_x.npy gave T = 8" "$w/bad.log" ||
    { cat "$w/bad.log"; fail "a T mismatch between inputs is not refused naming the file"; }
  rc=0
  "$w/tiny_gpt" train --train-data "$w/train_x.npy,$w/train_y.npy" --test-data "$w/t16_x.npy,$w/t16_y.npy" \
    --epochs 1 >"$w/bad.log" 2>&1 || rc=$?
  [[ $rc == 1 ]] && grep -q "t16_x.npy: T = 16, but the training data has T = 8" "$w/bad.log" ||
    { cat "$w/bad.log"; fail "test data with another T is not refused"; }
  "$w/tiny_gpt" predict --weights "$w/s.safetensors" "$w/test_x.npy" >"$w/pred.txt" ||
    fail "tiny_gpt predict"
  [[ $(wc -l <"$w/pred.txt") == 1024 && $(head -n 1 "$w/pred.txt" | wc -w) == 33 ]] ||
    fail "predict: want 128 * 8 rows of a class and 32 probabilities"
  echo "[PASS] e2e seq"
}

# aux: a loss returning (loss, ce: f32, mse: f32) logs ce and mse next to
# the loss; the loss is ce + 0.5 * mse in every logged step (accumulation:
# each the mean of the micro-batches'), and the epoch's train_ce, train_mse.
aux() {
  if ! "$py" -c "import numpy" >/dev/null 2>&1; then
    echo "SKIP: $py cannot import numpy"
    exit 77
  fi
  "$mlc" build tests/e2e/two_heads.model -O1 -o "$work/two_heads" || fail "mlc build two_heads.model"
  "$py" - "$work" <<'PY' || fail "make the data"
import sys, numpy as np
r = np.random.default_rng(0)
x = r.standard_normal((96, 8)).astype(np.float32)
np.save(f"{sys.argv[1]}/x.npy", x)
np.save(f"{sys.argv[1]}/y.npy", (x[:, 0] > 0).astype(np.int32) + (x[:, 1] > 0))
np.save(f"{sys.argv[1]}/t.npy", x[:, 2:3] * 2)
PY
  local w=$work
  "$w/two_heads" train --train-data "$w/x.npy,$w/y.npy,$w/t.npy" --log-every 1 \
    --metrics "$w/a.jsonl" >"$w/a.log" 2>&1 || { cat "$w/a.log"; fail "two_heads run"; }
  tail -n 1 "$w/a.log"
  grep -q "^epoch 3 done: train_loss [0-9.]* train_ce [0-9.]* train_mse [0-9.]*" "$w/a.log" ||
    { cat "$w/a.log"; fail "the epoch line has no train_ce and train_mse"; }
  "$py" - "$w/a.jsonl" <<'PY' || fail "the logged ce and mse are not the loss's terms"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
steps = [r for r in rows if r["type"] == "step"]
assert len(steps) == 18, len(steps)
for r in steps:
    assert abs(r["loss"] - (r["ce"] + 0.5 * r["mse"])) <= 1e-5 * max(1, abs(r["loss"])), r
epochs = [r for r in rows if r["type"] == "epoch"]
assert all("train_ce" in e and "train_mse" in e for e in epochs), epochs
assert epochs[-1]["train_mse"] < epochs[0]["train_mse"], epochs
print(f"{len(steps)} steps: loss = ce + 0.5 * mse; train_mse {epochs[0]['train_mse']:.4f} -> "
      f"{epochs[-1]['train_mse']:.4f}")
PY
  echo "[PASS] e2e aux"
}

# tests/e2e/masked.model with ignore_index = -100 (PyTorch's padding value,
# outside the classes): the program loads targets holding -100, trains, and
# the class loss falls. Accuracy counts only the positions whose target is
# not -100: eval's, the last epoch's test_accuracy (metrics file and run
# record) and the run record's final one equal the accuracy of the classes
# `predict` prints over those positions (computed here, in Python), and the
# training accuracy of an epoch at lr 1e-30 equals that of the initial
# weights. The same for ignore_index = 0 (a padding class): rows of class 0
# count for nothing.
masked() {
  if ! "$py" -c "import numpy" >/dev/null 2>&1; then
    echo "SKIP: $py cannot import numpy"
    exit 77
  fi
  sed 's/ignore_index = 0/ignore_index = -100/' tests/e2e/masked.model >"$work/m100.model"
  grep -q "ignore_index = -100" "$work/m100.model" || fail "no ignore_index in tests/e2e/masked.model"
  "$mlc" build "$work/m100.model" -O1 -o "$work/m100" || fail "mlc build masked.model (ignore_index = -100)"
  "$mlc" build tests/e2e/masked.model -O1 -o "$work/m0" || fail "mlc build masked.model"
  "$py" - "$work" <<'PY' || fail "make the data"
import sys, numpy as np
r = np.random.default_rng(0)
idx = r.integers(1, 16, (256, 6)).astype(np.int64)
y = (idx % 5).astype(np.int64)
noisy = r.random((256, 6)) < 0.25                  # a quarter of the classes are noise
y[noisy] = r.integers(0, 5, int(noisy.sum()))
y0 = y.copy()
y[:, -2:] = -100                                   # padding, ignored
t = (idx / 16.0).astype(np.float32)
m = (r.random((256, 6)) > 0.3).astype(np.float32)
for n, a in dict(idx=idx, y=y, y0=y0, t=t, m=m).items():
    np.save(f"{sys.argv[1]}/{n}.npy", a)
PY
  local w=$work k y prog
  for k in -100 0; do
    [[ $k == 0 ]] && y=y0 prog=m0 || y=y prog=m100
    local d="$w/idx.npy,$w/$y.npy,$w/t.npy,$w/m.npy"
    "$w/$prog" train --train-data "$d" --test-data "$d" --epochs 4 --log-every 8 --metrics "$w/m$k.jsonl" \
      --run-record "$w/r$k.json" --checkpoint "$w/m$k.safetensors" >"$w/m$k.log" 2>&1 ||
      { cat "$w/m$k.log"; fail "a run on targets holding $k (ignore_index = $k)"; }
    tail -n 1 "$w/m$k.log"
    grep -q "step 32/32 .* acc [0-9.]* " "$w/m$k.log" && grep -q "train_acc [0-9.]* .*test_acc [0-9.]*" "$w/m$k.log" ||
      { cat "$w/m$k.log"; fail "no accuracy logged with ignore_index = $k"; }
    "$w/$prog" eval --weights "$w/m$k.safetensors" --data "$d" >"$w/e$k.txt" 2>&1 ||
      { cat "$w/e$k.txt"; fail "eval (ignore_index = $k)"; }
    "$w/$prog" predict --weights "$w/m$k.safetensors" "$w/idx.npy" >"$w/p$k.txt" 2>&1 ||
      { cat "$w/p$k.txt"; fail "predict (ignore_index = $k)"; }
    # the initial weights, and an epoch that leaves them as they are
    "$w/$prog" train --train-data "$d" --epochs 0 --checkpoint "$w/i$k.safetensors" >/dev/null 2>&1 &&
      "$w/$prog" predict --weights "$w/i$k.safetensors" "$w/idx.npy" >"$w/q$k.txt" 2>&1 &&
      "$w/$prog" train --train-data "$d" --epochs 1 --lr 1e-30 --metrics "$w/z$k.jsonl" >"$w/z$k.log" 2>&1 ||
      { cat "$w/z$k.log"; fail "the initial weights (ignore_index = $k)"; }
    "$py" - "$w" "$k" "$y" <<'PY' || fail "accuracy over the targets that are not $k"
import json, re, sys, numpy as np
w, k, yname = sys.argv[1], int(sys.argv[2]), sys.argv[3]
y = np.load(f"{w}/{yname}.npy")
keep = y != k
def ref(path):                       # the classes predict printed, over the kept positions
    cls = np.array([int(l.split()[0]) for l in open(path) if l.strip()]).reshape(y.shape)
    return float((cls[keep] == y[keep]).mean()), float((cls == y).mean())
acc, naive = ref(f"{w}/p{k}.txt")
acc0, _ = ref(f"{w}/q{k}.txt")
rows = [json.loads(l) for l in open(f"{w}/m{k}.jsonl")]
ep = [r for r in rows if r["type"] == "epoch"]
rec = json.load(open(f"{w}/r{k}.json"))
ev = float(re.search(r"accuracy ([0-9.]+)", open(f"{w}/e{k}.txt").read()).group(1))
z = [r for r in (json.loads(l) for l in open(f"{w}/z{k}.jsonl")) if r["type"] == "epoch"][-1]
print(f"ignore_index {k}: accuracy over {int(keep.sum())} of {y.size} positions {acc:.6f} "
      f"(all positions: {naive:.6f}); eval {ev}, test_accuracy {ep[-1]['test_accuracy']:.6f}, "
      f"final {rec['final']['test_accuracy']:.6f}; initial {acc0:.6f}, lr 1e-30 epoch {z['train_accuracy']:.6f}; "
      f"train_ce {ep[0]['train_ce']:.4f} -> {ep[-1]['train_ce']:.4f}")
ok = abs(ep[-1]["test_accuracy"] - acc) < 1e-12 and abs(rec["final"]["test_accuracy"] - acc) < 1e-12
ok &= abs(rec["epochs"][-1]["test_accuracy"] - acc) < 1e-12 and abs(ev - acc) <= 5e-5
ok &= abs(z["train_accuracy"] - acc0) < 1e-12 and abs(acc - naive) > 0.05 and 0.3 < acc < 1
ok &= ep[-1]["train_ce"] < ep[0]["train_ce"] - 0.2
sys.exit(0 if ok else 1)
PY
  done
  echo "[PASS] e2e masked"
}

# tests/e2e/denoise.model (rand and randn in forward): two runs with one seed
# log identical losses (the noise is seeded), another seed logs others; eval
# and predict are deterministic (no noise there).
noise() {
  if ! "$py" -c "import numpy" >/dev/null 2>&1; then
    echo "SKIP: $py cannot import numpy"
    exit 77
  fi
  "$mlc" build tests/e2e/denoise.model -O1 -o "$work/denoise" || fail "mlc build denoise.model"
  "$py" -c "import sys, numpy as np; np.save(sys.argv[1], np.random.default_rng(1).standard_normal((256, 16)).astype(np.float32))" \
    "$work/x.npy" || fail "make the data"
  local w=$work
  for run in a b; do
    "$w/denoise" train --train-data "$w/x.npy" --epochs 2 --log-every 4 --checkpoint "$w/$run.safetensors" \
      >"$w/$run.log" 2>&1 || { cat "$w/$run.log"; fail "denoise run $run"; }
  done
  "$w/denoise" train --train-data "$w/x.npy" --epochs 2 --log-every 4 --seed 9 >"$w/c.log" 2>&1 ||
    { cat "$w/c.log"; fail "denoise run with --seed 9"; }
  losses() { grep -o "step [0-9/]* loss [0-9.]*" "$1"; }
  [[ -n $(losses "$w/a.log") && $(losses "$w/a.log") == $(losses "$w/b.log") ]] ||
    { diff <(losses "$w/a.log") <(losses "$w/b.log"); fail "one seed, different losses"; }
  [[ $(losses "$w/a.log") != $(losses "$w/c.log") ]] || fail "another seed, the same losses"
  "$w/denoise" eval --weights "$w/a.safetensors" --data "$w/x.npy" >"$w/e1.txt" &&
    "$w/denoise" eval --weights "$w/a.safetensors" --data "$w/x.npy" >"$w/e2.txt" || fail "eval"
  cmp -s "$w/e1.txt" "$w/e2.txt" || fail "eval is not deterministic"
  "$w/denoise" predict --weights "$w/a.safetensors" "$w/x.npy" >"$w/p1.txt" &&
    "$w/denoise" predict --weights "$w/a.safetensors" "$w/x.npy" >"$w/p2.txt" || fail "predict"
  cmp -s "$w/p1.txt" "$w/p2.txt" || fail "predict is not deterministic"
  cat "$w/e1.txt"
  echo "[PASS] e2e noise"
}

# scaler: dynamic and static loss scaling (tests/e2e/scaler.py): every step's
# scale and skip against torch.cuda.amp.GradScaler's rule, skipped steps
# bit-identical, resume exact (stopped, and SIGKILLed), loss_scale 128 equal to
# none; 77 without torch.
scaler() {
  if ! "$py" -c "import torch, numpy" >/dev/null 2>&1; then
    echo "SKIP: $py cannot import torch and numpy"
    exit 77
  fi
  "$py" tests/e2e/scaler.py "$mlc" "$work" || fail "loss scaling"
  echo "[PASS] e2e scaler"
}

# cnn: examples/fashion_cnn.model, whose train step keeps the pools' picks
# (conv2d_pool_pick; the backward's conv2d_grad_weight_pick and
# conv2d_grad_pick read them: fusion.md, "Around the conv calls"), trains 20
# steps on a 1,280-image slice at 1, 2 and 3 threads, and at 2 threads with
# the kernels capped to AVX2 (MLC_CPU_ISA=avx2: the AVX2 GEMM, pools and
# channel-lane forward where the CPU has AVX-512 too): every step's loss and
# the checkpoints are byte-identical, and the loss falls.
cnn() {
  "$mlc" build examples/fashion_cnn.model --emit memplan -o "$work/cnn.kir" || fail "mlc build --emit memplan"
  for call in conv2d_pool_pick conv2d_grad_weight_pick conv2d_grad_pick; do
    grep -q "call $call(" "$work/cnn.kir" || fail "the train step has no call $call"
  done
  "$mlc" build examples/fashion_cnn.model -o "$work/cnn" || fail "mlc build"
  local d=$work/data src
  src=$("$py" tests/e2e/make_slice.py "$d" 1280 64)
  echo "data: 1280 training and 64 test images ($src)"
  for t in 1 2 3 2avx2; do
    MLC_CPU_ISA=$([ "$t" = 2avx2 ] && echo avx2) \
      "$work/cnn" train --train-data "$d/train-images.idx,$d/train-labels.idx" \
      --test-data "$d/test-images.idx,$d/test-labels.idx" --epochs 1 --seed 3 --threads "${t%avx2}" \
      --log-every 1 --metrics "$work/t$t.jsonl" --checkpoint "$work/t$t.safetensors" >"$work/t$t.log" 2>&1 ||
      { cat "$work/t$t.log"; fail "training at $t threads"; }
    grep -o '"loss":[^,]*' "$work/t$t.jsonl" >"$work/t$t.loss"
  done
  for t in 2 3 2avx2; do
    cmp "$work/t1.loss" "$work/t$t.loss" || fail "losses at $t threads differ from 1 thread's"
    cmp "$work/t1.safetensors" "$work/t$t.safetensors" || fail "checkpoint at $t threads differs from 1 thread's"
  done
  "$py" - "$work/t1.loss" <<'PY' || fail "the loss does not fall"
import sys
loss = [float(l.split(":")[1]) for l in open(sys.argv[1])]
assert len(loss) >= 20 and sum(loss[-5:]) < sum(loss[:5]), loss
PY
  echo "[PASS] e2e cnn: $(wc -l <"$work/t1.loss") losses and the checkpoint identical at 1, 2, 3 threads and capped to AVX2"
}

case $what in
cnn) cnn ;;
scaler) scaler ;;
masked) masked ;;
noise) noise ;;
train) train ;;
aux) aux ;;
seq) seq_dim ;;
plateau) plateau ;;
embed) embed ;;
torch20) torch20 ;;
finite) finite ;;
*) fail "unknown check '$what'" ;;
esac
