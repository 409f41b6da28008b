#!/bin/bash
# setup.sh — installs the Debian 12 packages mlc needs to build, test and run
# its demo. Idempotent: when every package is already installed it touches
# nothing (no `apt-get update`, no network). Run as root (or with sudo).
#
#   required  re2c bison cmake ninja-build gcc clang llvm-19-dev
#             libclang-rt-14-dev (libFuzzer) zlib1g-dev libcjson-dev python3
#   optional  python3-numpy python3-torch (reference runs)
#             dataset-fashion-mnist (the examples' data)
#             libopenblas0-pthread python3-threadpoolctl time (bench/side_by_side.py:
#             PyTorch's BLAS, its thread pool set explicitly, peak RSS)
# A required package the archive does not offer stops the script; an
# optional one is reported and skipped.
set -euo pipefail

required=(re2c bison cmake ninja-build gcc clang llvm-19-dev libclang-rt-14-dev zlib1g-dev libcjson-dev python3)
optional=(python3-numpy python3-torch dataset-fashion-mnist libopenblas0-pthread python3-threadpoolctl time)

installed() {
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]
}

missing=()
for p in "${required[@]}" "${optional[@]}"; do
  installed "$p" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all packages present"
  exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi

apt=(apt-get -o DPkg::Lock::Timeout=600)
echo "setup: missing ${missing[*]}; updating the package lists"
"${sudo[@]}" "${apt[@]}" update -q

# Only ask apt for packages the archive actually offers. A required one
# that apt-cache does not show gets one more `apt-get update` first: on a
# fresh machine the first query once found llvm-19-dev missing and the
# next, seconds later, found it.
available() {
  apt-cache show "$1" 2>/dev/null | grep -q '^Package:'
}
updated_again=0
install=()
for p in "${missing[@]}"; do
  if ! available "$p" && [[ " ${required[*]} " == *" $p "* ]] && ((!updated_again)); then
    echo "setup: apt-cache does not show $p; updating the package lists once more"
    "${sudo[@]}" "${apt[@]}" update -q
    updated_again=1
  fi
  if available "$p"; then
    install+=("$p")
  elif [[ " ${required[*]} " == *" $p "* ]]; then
    echo "setup: required package $p is not available from the configured apt sources" >&2
    exit 1
  else
    echo "setup: optional package $p is not available; skipping it"
  fi
done

if [[ ${#install[@]} -gt 0 ]]; then
  echo "setup: installing ${install[*]}"
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" "${apt[@]}" install -y --no-install-recommends "${install[@]}"
fi
