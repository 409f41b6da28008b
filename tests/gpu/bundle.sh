#!/bin/bash
# bundle.sh — pack a CMake build's GPU programs, with the shared libraries
# they load, for a GPU machine whose image cannot build mlc (no LLVM 19,
# re2c, bison or cJSON there, and nothing to install them from):
#
#   tests/gpu/bundle.sh [BUILD_DIR] [OUT]   (default: build, .gpu/bundle.tar.xz)
#
# then, on the GPU machine, from the repository root:
#
#   MLC_GPU_BUNDLE=.gpu/bundle.tar.xz tests/gpu/run.sh
#
# The bundle holds mlc, the test programs run.sh calls (debug info stripped),
# libmlc_rt.a (what mlc links programs against), and lib/: every shared
# library those programs need beyond the C library (libLLVM and what it
# loads, libcjson for the programs mlc links). run.sh unpacks it, puts on
# LD_LIBRARY_PATH only the libraries that machine lacks (its own zlib,
# libstdc++ and the rest stay in use), and points mlc at the archive.
# Both machines are x86-64 Linux; the bundle's programs need a C library at
# least as new as the one they were built against (Debian 12's glibc 2.36).
set -eu
cd "$(dirname "$0")/../.."
bld=${1:-build}
out=${2:-.gpu/bundle.tar.xz}
progs=(mlc tests/test_cuda_examples tests/test_cuda_gpu tests/test_nvrtc tests/cuda_probe)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/tests" "$stage/lib"
for p in "${progs[@]}"; do
  [[ -x $bld/$p ]] || { echo "bundle: no $bld/$p (build it first)" >&2; exit 1; }
  strip -g -o "$stage/$p" "$bld/$p"
done
strip -g -o "$stage/libmlc_rt.a" "$bld/libmlc_rt.a"
# every library the programs load, less the C library's own
for p in "${progs[@]}"; do ldd "$bld/$p"; done | awk '$3 ~ /^\// { print $3 }' | sort -u |
  grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux-x86-64)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
# the programs mlc links take -lcjson (and -lz): the link-time names too
cjson=$(ldconfig -p | awk '/libcjson\.so\.1 .*x86-64/ { print $NF; exit }')
[[ -n $cjson ]] || { echo "bundle: no libcjson.so.1 here (apt-get install libcjson-dev)" >&2; exit 1; }
cp -L "$cjson" "$stage/lib/libcjson.so.1"
ln -s libcjson.so.1 "$stage/lib/libcjson.so"
mkdir -p "$(dirname "$out")"
tar -C "$stage" -cf - . | xz -6 -T0 >"$out"
echo "bundle: $out ($(du -h "$out" | cut -f1)): ${progs[*]} libmlc_rt.a, lib/: $(ls "$stage/lib" | tr '\n' ' ')"
