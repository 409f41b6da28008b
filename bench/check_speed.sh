#!/bin/bash
# check_speed.sh — how fast `mlc check` is on a ~5,000-line model.
#
#   bench/check_speed.sh [MLC]        (MLC defaults to build/mlc)
#
# Generates bench/out/big.model with bench/gen_model.py, checks it once to
# make sure it is clean, then times 5 runs and reports the best wall time,
# the peak resident set size (from /usr/bin/time -v) and the throughput.
set -euo pipefail
cd "$(dirname "$0")/.."

mlc=${1:-build/mlc}
[[ -x $mlc ]] || { echo "check_speed: $mlc not found; build first (scripts/build.sh)" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "check_speed: /usr/bin/time missing (apt-get install time)" >&2; exit 1; }

mkdir -p bench/out
model=bench/out/big.model
/usr/bin/python3 bench/gen_model.py -o "$model" 2>/dev/null
lines=$(wc -l < "$model")
bytes=$(wc -c < "$model")

if ! "$mlc" check "$model"; then
  echo "check_speed: the generated model does not check clean" >&2
  exit 1
fi

# Wall time is taken with bash's microsecond clock ($EPOCHREALTIME) around
# each run (/usr/bin/time only reports hundredths); peak RSS comes from
# /usr/bin/time -v of the same run.
best=""
rss=0
for i in 1 2 3 4 5; do
  log=$(mktemp)
  t0=$EPOCHREALTIME
  /usr/bin/time -v "$mlc" check "$model" 2> "$log"
  t1=$EPOCHREALTIME
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')
  kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$log")
  rm -f "$log"
  printf 'run %d: %.4f s, peak RSS %d KiB\n' "$i" "$wall" "$kb"
  if [[ -z $best ]] || awk -v a="$wall" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$wall; fi
  (( kb > rss )) && rss=$kb
done

awk -v t="$best" -v n="$lines" -v b="$bytes" -v r="$rss" 'BEGIN {
  printf "mlc check %s: %d lines, %d bytes\n", "bench/out/big.model", n, b
  printf "best of 5: %.4f s wall (%.0f lines/s), peak RSS %.1f MiB\n", t, (t > 0 ? n / t : 0), r / 1024
}'
