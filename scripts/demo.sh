#!/bin/bash
# demo.sh — from a fresh Debian 12 machine to a working mlc: installs the
# packages (scripts/setup.sh), builds into build/, then checks every example
# with `mlc check --explain`, which prints the inferred shape of every
# expression, the instances and their parameter counts. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
./scripts/build.sh

status=0
for m in examples/*.model; do
  echo
  echo "==== mlc check --explain $m"
  ./build/mlc check --explain "$m" || status=1
done
echo
if [[ $status -eq 0 ]]; then
  echo "demo: every example checks clean"
else
  echo "demo: some examples reported errors (see above)" >&2
fi
exit $status
