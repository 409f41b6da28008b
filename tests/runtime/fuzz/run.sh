#!/bin/bash
# run.sh — the ctest entry for fuzz_readers.
#
#   tests/runtime/fuzz/run.sh FUZZER WORKDIR     (from the repository root)
#
# Runs the libFuzzer binary (tests/runtime/fuzz/fuzz_readers.c) for 20 s over
# the seed corpus (tests/runtime/fuzz/corpus: one small file per reader, its
# first byte the reader's selector). New inputs go to WORKDIR/corpus (kept
# between runs; the seed corpus in the source tree is never written),
# reproducers to WORKDIR/artifacts. Exit: 0 clean, 1 on any finding or when
# FUZZER was configured but not built, 77 (ctest: skipped) when FUZZER is
# empty, i.e. clang with libFuzzer was not found at configure time.
set -uo pipefail

fuzzer=${1:-}
work=${2:-build/tests/runtime/fuzz-run}
if [[ -z "$fuzzer" ]]; then
  echo "fuzz_readers: SKIPPED (clang with libFuzzer not found when configuring)"
  exit 77
fi
if [[ ! -x "$fuzzer" ]]; then
  echo "fuzz_readers: FAILED ($fuzzer is not built; run cmake --build build)"
  exit 1
fi

mkdir -p "$work/corpus" "$work/artifacts"
"$fuzzer" -max_total_time=20 -timeout=5 -rss_limit_mb=2048 -max_len=4096 \
  -dict=tests/runtime/fuzz/readers.dict -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$work/corpus" tests/runtime/fuzz/corpus
rc=$?
if [[ $rc -ne 0 ]]; then
  echo "fuzz_readers: FAILED (libFuzzer exit $rc); reproducers in $work/artifacts/"
  echo "  reproduce: $fuzzer $work/artifacts/<file>"
  exit 1
fi
echo "fuzz_readers: PASSED (20 s, no crash, leak or hang)"
