#!/bin/bash
# probe.sh — a CUDA program's start on a machine without a GPU: cuda_probe
# (cuda_probe.c) must exit 1 printing exactly one line on standard error and
# nothing on standard output:
#   no driver      "cuda_probe: no CUDA driver (libcuda.so.1 not found)"
#   no device      "cuda_probe: no CUDA device"   (the fake driver with 0 devices,
#                                                 and with cuInit giving CUDA_ERROR_NO_DEVICE)
# and with the fake driver's one device it exits 0 naming it.
#
#   probe.sh PROBE FAKE_DIR
# The no-driver case needs a machine without libcuda.so.1; elsewhere it is
# reported as skipped and the script exits 77 after the other cases.
set -u
probe=$1 fake=$2
pass=0 fail=0 skipped=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect NAME STATUS STDERR-LINE [env...]: runs the probe under env.
expect() {
  local name=$1 want_rc=$2 want_err=$3
  shift 3
  env "$@" "$probe" >"$tmp/out" 2>"$tmp/err"
  local rc=$? lines
  lines=$(wc -l <"$tmp/err")
  if [[ $rc == "$want_rc" && $lines == 1 && "$(cat "$tmp/err")" == "$want_err" && ! -s "$tmp/out" ]]; then
    echo "[PASS] $name"
    pass=$((pass + 1))
  else
    echo "[FAIL] $name: status $rc (want $want_rc), stderr:"
    sed 's/^/    /' "$tmp/err"
    echo "  stdout:"
    sed 's/^/    /' "$tmp/out"
    fail=$((fail + 1))
  fi
}

if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 ' || [[ -e /usr/lib/x86_64-linux-gnu/libcuda.so.1 ]]; then
  echo "[SKIP] no driver: this machine has a libcuda.so.1"
  skipped=1
else
  expect "no driver: one line, status 1" 1 "cuda_probe: no CUDA driver (libcuda.so.1 not found)"
fi
expect "no device (count 0): one line, status 1" 1 "cuda_probe: no CUDA device" \
  LD_LIBRARY_PATH="$fake" MLC_FAKE_CUDA_DEVICES=0
expect "no device (cuInit: CUDA_ERROR_NO_DEVICE): one line, status 1" 1 "cuda_probe: no CUDA device" \
  LD_LIBRARY_PATH="$fake" MLC_FAKE_CUDA_INIT=100

out=$(LD_LIBRARY_PATH="$fake" MLC_FAKE_CUDA_SM=89 "$probe" 2>&1)
if [[ $? == 0 && $out == "cuda_probe: mlc fake CUDA device (CPU emulation) (sm_89)" ]]; then
  echo "[PASS] a device: status 0, its name and sm"
  pass=$((pass + 1))
else
  echo "[FAIL] a device: $out"
  fail=$((fail + 1))
fi

echo "$pass passed, $fail failed"
((fail)) && exit 1
((skipped)) && exit 77
exit 0
