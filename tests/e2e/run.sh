#!/bin/bash
# run.sh — end-to-end checks of `mlc build` (registered in tests/CMakeLists.txt).
#
# Usage: run.sh train|embed|torch20 MLC PYTHON WORKDIR   (from the repo root)
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
# first value that went non-finite, as the .model source line and op.
finite() {
  "$mlc" build tests/e2e/diverge.model -o "$work/diverge" || fail "mlc build diverge.model"
  local rc=0
  "$work/diverge" train --check-finite >"$work/finite.log" 2>"$work/finite.err" || rc=$?
  cat "$work/finite.err"
  [[ $rc == 1 ]] || fail "--check-finite exit status $rc, want 1"
  grep -Eq '^diverge: step [0-9]+: loss became (NaN|infinite) at tests/e2e/diverge\.model:[0-9]+:[0-9]+ \([a-z_0-9]+\)$' \
    "$work/finite.err" || fail "no step, tests/e2e/diverge.model:LINE:COL and op in the report"
  # without the flag the run goes on (through NaN) and succeeds
  "$work/diverge" train >"$work/plain.log" 2>&1 || fail "the unchecked run failed"
  echo "[PASS] e2e finite"
}

case $what in
train) train ;;
embed) embed ;;
torch20) torch20 ;;
finite) finite ;;
*) fail "unknown check '$what'" ;;
esac
