#!/bin/bash
# test.sh — installs the packages (scripts/setup.sh), builds into build/ with
# warnings as errors, and runs the whole ctest suite: unit tests, golden
# suites, hostile inputs and a 30 s fuzz run. Safe to run again.
# Arguments are passed to ctest (e.g. -L golden, -R diag).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
./scripts/build.sh -DMLC_WERROR=ON

# --output-on-failure shows a failing test's output; ctest's own last lines
# are the summary ("100% tests passed, 0 tests failed out of N", skipped tests,
# total time).
ctest --test-dir build --output-on-failure -j2 "$@"
