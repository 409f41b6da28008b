#!/bin/bash
# demo.sh — from a fresh Debian 12 machine to a trained model: installs the
# packages (scripts/setup.sh, including Debian's Fashion-MNIST), builds mlc
# into build/, checks examples/fashion_mlp.model, compiles it into a native
# program with `mlc build`, trains it for the recipe's 5 epochs on
# Fashion-MNIST and prints the test accuracy. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
./scripts/build.sh

model=examples/fashion_mlp.model
out=build/demo
mkdir -p "$out"
data=/usr/share/datasets/fashion-mnist
if [[ ! -f $data/train-images-idx3-ubyte.gz ]]; then
  echo "demo: $data is missing (apt-get install dataset-fashion-mnist)" >&2
  exit 1
fi

echo
echo "==== mlc check $model"
./build/mlc check "$model" && echo "clean"

echo
echo "==== mlc build $model -o $out/fashion_mlp"
start=$EPOCHREALTIME
./build/mlc build "$model" -o "$out/fashion_mlp"
awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "built in %.2f s\n", b - a }'

echo
echo "==== $out/fashion_mlp train   (SGD lr 0.05 momentum 0.9, batch 64, 5 epochs)"
"$out/fashion_mlp" train --checkpoint "$out/fashion_mlp.safetensors" \
  --run-record "$out/run.json" | grep --line-buffered ' done:'

acc=$(/usr/bin/python3 -c 'import json,sys; print("%.4f" % json.load(open(sys.argv[1]))["final"]["test_accuracy"])' \
  "$out/run.json" 2>/dev/null || true)
echo
echo "==== $out/fashion_mlp eval --weights $out/fashion_mlp.safetensors"
"$out/fashion_mlp" eval --weights "$out/fashion_mlp.safetensors"
echo
echo "demo: test accuracy after 5 epochs: ${acc:-see the log above}"
