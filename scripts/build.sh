#!/bin/bash
# build.sh — configures (once) and builds mlc into build/ with CMake + Ninja.
# Extra arguments are passed to the configure step (e.g. -DMLC_WERROR=ON);
# configuring again with the same arguments is a no-op for CMake.
set -euo pipefail
cd "$(dirname "$0")/.."

# The generator is chosen only on the first configure (CMake refuses to switch).
if [[ -f build/CMakeCache.txt ]]; then
  cmake -S . -B build "$@"
else
  cmake -S . -B build -G Ninja "$@"
fi
cmake --build build
