#!/bin/bash
# run.sh — the ctest entry for fuzz_frontend.
#
#   tests/front/fuzz/run.sh FUZZER WORKDIR     (from the repository root)
#
# Runs the libFuzzer binary for 30 s over the seed corpus (tests/front/fuzz/corpus)
# and every .model file the test suites hold. New inputs go to WORKDIR/corpus
# (kept between runs, so coverage accumulates; the seed corpus in the source
# tree is never written), crash/leak/timeout reproducers to WORKDIR/artifacts.
# Exit: 0 clean, 1 on any finding or when FUZZER was configured but not
# built, 77 (ctest: skipped) when FUZZER is empty, i.e. clang with libFuzzer
# was not found at configure time.
set -uo pipefail

fuzzer=${1:-}
work=${2:-build/tests/front/fuzz-run}
if [[ -z "$fuzzer" ]]; then
  echo "fuzz_frontend: SKIPPED (clang with libFuzzer not found when configuring)"
  exit 77
fi
if [[ ! -x "$fuzzer" ]]; then
  echo "fuzz_frontend: FAILED ($fuzzer is not built; run cmake --build build)"
  exit 1
fi

mkdir -p "$work/corpus" "$work/artifacts"
seeds=(tests/front/fuzz/corpus)
for d in examples tests/sema/ok tests/sema/diag tests/front/parse tests/front/lex tests/sema/explain; do
  [[ -d $d ]] && seeds+=("$d")
done

# libFuzzer's own exit codes (77 for errors by default) are folded into 1 so
# a finding can never read as "skipped".
"$fuzzer" -max_total_time=30 -timeout=5 -rss_limit_mb=2048 \
  -dict=tests/front/fuzz/mlc.dict -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$work/corpus" "${seeds[@]}"
rc=$?
if [[ $rc -ne 0 ]]; then
  echo "fuzz_frontend: FAILED (libFuzzer exit $rc); reproducers in $work/artifacts/"
  echo "  reproduce: $fuzzer $work/artifacts/<file>"
  exit 1
fi
echo "fuzz_frontend: PASSED (30 s, no crash, leak or hang)"
