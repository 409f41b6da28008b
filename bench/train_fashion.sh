#!/bin/bash
# train_fashion.sh — mlc against PyTorch on Fashion-MNIST, same recipe, same
# machine, one after the other (never at once: the machine has few cores).
#
#   bench/train_fashion.sh [MLC] [THREADS]     (MLC defaults to build/mlc, THREADS to 2)
#
# For examples/fashion_mlp.model (5 epochs) and examples/fashion_cnn.model
# (1 epoch): the `mlc build` time and peak RSS, then the built program's
# training (seconds per epoch and images/s from its log, final test
# accuracy, peak RSS), then bench/torch_fashion.py's figures for the twin
# PyTorch model. Needs /usr/share/datasets/fashion-mnist (dataset-fashion-mnist),
# /usr/bin/time and Debian's python3-torch. Outputs go to bench/out/fashion/.
set -euo pipefail
cd "$(dirname "$0")/.."

mlc=${1:-build/mlc}
threads=${2:-2}
out=bench/out/fashion
mkdir -p "$out"
[[ -x $mlc ]] || { echo "train_fashion: $mlc not found; build first (scripts/build.sh)" >&2; exit 1; }
[[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]] ||
  { echo "train_fashion: Fashion-MNIST missing (apt-get install dataset-fashion-mnist)" >&2; exit 1; }

rss() { awk -F': ' '/Maximum resident/ {printf "%.1f MiB", $2 / 1024}' "$1"; }

for spec in mlp:5 cnn:1; do
  m=${spec%:*} epochs=${spec#*:}
  echo "==== fashion_$m, $epochs epoch(s), $threads threads"
  /usr/bin/time -v -o "$out/build_$m.time" "$mlc" build "examples/fashion_$m.model" -o "$out/fashion_$m" -v \
    2> "$out/build_$m.log"
  echo "mlc build: $(awk -F': ' '/Elapsed/ {print $2}' "$out/build_$m.time") wall, peak RSS $(rss "$out/build_$m.time")"
  cat "$out/build_$m.log"
  /usr/bin/time -v -o "$out/train_$m.time" "$out/fashion_$m" train --epochs "$epochs" --threads "$threads" \
    --run-record "$out/run_$m.json" > "$out/train_$m.log"
  grep ' done:' "$out/train_$m.log"
  echo "mlc program: peak RSS $(rss "$out/train_$m.time")"
  /usr/bin/python3 bench/torch_fashion.py "$m" "$epochs" "$threads" | tee "$out/torch_$m.json"
done
