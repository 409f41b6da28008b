#!/bin/bash
# run.sh — the checks that need a real NVIDIA GPU, in one run of a few
# minutes, ending in a compact report (docs/design/cuda.md, "Running the GPU
# checks"). Meant for a machine lent with a GPU (an H200), from the
# repository root:
#
#   tests/gpu/run.sh [REPORT_DIR]      (default: $OUT when set, else build-gpu/)
#
# Steps, each with its own time limit, each one line in the report (they
# run env, build, probe, kernels, parity, device, fashion, fp16, bench,
# nvrtc: the most telling first, for a run cut short by its deadline):
#   env       the GPU, driver and toolkit as nvidia-smi and nvcc see them
#   build     the GPU programs: with CMake into build-gpu/ when the whole
#             project configures there (LLVM 19, re2c, bison, cJSON present),
#             else the few files they need straight with cc (a GPU machine's
#             image need not have the compiler's build dependencies)
#   probe     a CUDA program's start: status 0 and the device's name
#   nvrtc     tests/backend/cuda/test_nvrtc.c (NVRTC, ptxas) on this toolkit
#   kernels   tests/backend/cuda/test_cuda_gpu.c on the GPU: the hand-written
#             kernels from cubin and from JIT-compiled PTX against the C
#             references, the device arena, the double-buffered upload stage
# The steps below need mlc itself (the CMake build; LLVM 19 and the rest):
# without it each says so and counts as failed.
#   parity    tests/backend/cuda/test_cuda_examples.c gpu: every example's
#             train_step (loss, grad norm, the updated state, so every
#             gradient), eval and predict printed, compiled by NVRTC and run
#             on the GPU against the graph interpreter and the CPU backend
#             (1e-3 relative), from the same random state and batch; then
#             tests/backend/cuda/gemm/*.model with --exact: the tiled GEMMs'
#             outputs and updated weights bit for bit; and at bf16 / f16
#             (the tensor-core GEMMs) gemm.model, fashion_cnn and
#             char_transformer within 1e-3
#   device    tests/backend/cuda/device_path.py --real: a program built with
#             --target cpu,cuda (and cuda alone) trains, evaluates, predicts
#             and resumes on the GPU against the same program on the CPU
#             (every logged step, the checkpoints, both ways across)
#   fashion   one epoch of examples/fashion_cnn.model on the GPU and on the
#             CPU side by side (Debian's Fashion-MNIST): the GPU's test
#             accuracy within 0.01 of the CPU's; both images/s; the log gets
#             the report's table of every launch's grid, block and chain
#   bench     the same epoch's train steps in PyTorch on this GPU, eager and
#             torch.compile (tests/gpu/torch_step.py), against mlc's images/s
#             from the fashion step (skipped without torch or its CUDA)
#   fp16      tests/gpu/fp16_scaler.py: examples/char_transformer.model built
#             with --precision f16 and a dynamic loss scale from 2^40 trains
#             the same 100 steps on the GPU and on the CPU: the same scale,
#             overflow and skip at every step, losses within 2e-2, the loss
#             falling
#
# The report (gpu-report.txt) and every step's full output (gpu-log.txt) go
# to REPORT_DIR. Exit status: 0 when every step passed, 1 otherwise. A step
# that reports itself skipped (77) counts as failed here: on a GPU machine
# nothing may skip.
#
# MLC_GPU_BUILD=cc skips the CMake attempt; MLC_GPU_BUILD=DIR (a path) takes
# the programs from an existing CMake build folder instead of building;
# MLC_GPU_BUNDLE=FILE takes them from tests/gpu/bundle.sh's bundle, made on a
# machine that builds mlc, for a GPU image that cannot (no LLVM 19 there).
# MLC_GPU_DEADLINE_S=N ends the run N seconds after it starts: each step's
# limit is cut to the time left, and a step with none left is reported as not
# run (a lent GPU's time is short; the steps come most telling first).
# MLC_GPU_SYNTH_DATA=1, where Debian's Fashion-MNIST is absent, writes
# generated images of 10 classes in its files and paths (idx, gzip; 60,000
# and 10,000) so that the fashion and bench steps run; their report lines
# then say the data was generated.
# MLC_GPU_FAKE_DRIVER=DIR rehearses the script where there is no GPU: DIR
# holds a stand-in libcuda.so.1 (build/tests/fake-cuda, from
# tests/backend/cuda/fake_libcuda.c) and the report says so on every line.
set -u
cd "$(dirname "$0")/../.." || exit 1
root=$(pwd)
report_dir=${1:-${OUT:-$root/build-gpu}}
bld=$root/build-gpu
mkdir -p "$report_dir" "$bld" || exit 1
report=$report_dir/gpu-report.txt
log=$report_dir/gpu-log.txt
: >"$report"
: >"$log"
failed=0
fake=""
if [[ -n ${MLC_GPU_FAKE_DRIVER:-} ]]; then
  export LD_LIBRARY_PATH=$MLC_GPU_FAKE_DRIVER${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export MLC_GPU_FAKE_DRIVER MLC_TEST_FAKE_EMU=1 # parity: the fake driver runs the emulation object
  fake=" [fake driver: $MLC_GPU_FAKE_DRIVER]"
fi
cuda=${CUDA_HOME:-/usr/local/cuda}

say() { echo "$*" | tee -a "$report"; }

# step NAME LIMIT_S CMD...: runs CMD (a program or an exported function) with a time limit, its output into the
# log; one report line with the status, the time and the last line CMD printed.
step() {
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  if [[ -n ${MLC_GPU_DEADLINE_S:-} ]]; then
    local left=$((MLC_GPU_DEADLINE_S - SECONDS))
    if ((left < 5)); then
      failed=1
      say "$(printf '%-8s %-7s %4ss  %s' "$name" "NOT RUN" 0 "the run's deadline (${MLC_GPU_DEADLINE_S}s) has passed")"
      return 1
    fi
    ((limit > left)) && limit=$left
  fi
  echo "===== $name: $*" >>"$log"
  timeout --kill-after=10 "$limit" bash -c '"$@"' "$name" "$@" >"$bld/$name.out" 2>&1
  local rc=$?
  cat "$bld/$name.out" >>"$log"
  local last
  last=$(grep -v '^\s*$' "$bld/$name.out" | tail -n 1 | cut -c1-150)
  local status=PASS
  case $rc in
    0) ;;
    77) status=SKIP failed=1 ;;
    124 | 137) status=TIMEOUT failed=1 last="over ${limit}s" ;;
    *) status=FAIL failed=1 ;;
  esac
  local note=$fake
  [[ $name == fashion || $name == bench ]] && note+=${synth:-}
  say "$(printf '%-8s %-7s %4ss  %s%s' "$name" "$status" $((SECONDS - t0)) "$last" "$note")"
  return $rc
}

env_info() {
  echo "$(nproc) CPUs; kernel $(uname -r)"
  ls "$cuda"/lib64/libnvrtc.so* 2>/dev/null | head -n 1
  if [[ -x $cuda/bin/nvcc ]]; then "$cuda/bin/nvcc" --version | grep -i release; fi
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  else
    echo "nvidia-smi: not found"
  fi
}

# The GPU programs with CMake (the project's own build), if it configures.
build_cmake() {
  cmake -S "$root" -B "$bld/cmake" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    cmake --build "$bld/cmake" --target test_cuda_gpu test_nvrtc cuda_probe mlc test_cuda_examples &&
    ln -sf "$bld/cmake/tests/test_cuda_gpu" "$bld/cmake/tests/test_nvrtc" \
      "$bld/cmake/tests/cuda_probe" "$bld/cmake/mlc" "$bld/cmake/tests/test_cuda_examples" "$bld/"
}

# The same three programs from their few sources with cc: the CUDA backend's
# NVRTC and bundle files, the runtime's CUDA layer, the tests.
build_cc() {
  local cflags=(-std=gnu17 -O2 -g -Wall -Wextra -I"$root/compiler" -I"$root" -I"$root/runtime"
                -I"$root/runtime/include" -I"$root/tests" -isystem "$cuda/include")
  cmake -DINPUT="$root/kernels/cuda/mlc_cuda.h" -DOUTPUT="$bld/mlc_cuda_h_src.c" -DSYMBOL=mlc_cuda_h \
    -P "$root/scripts/embed.cmake" || return 1
  cmake -DINPUT="$root/kernels/philox.h" -DOUTPUT="$bld/mlc_philox_h_src.c" -DSYMBOL=mlc_philox_h \
    -P "$root/scripts/embed.cmake" || return 1
  local be=("$root"/compiler/backend/cuda/*.c "$bld/mlc_cuda_h_src.c" "$bld/mlc_philox_h_src.c")
  local rt=("$root"/runtime/cuda/*.c)
  cc "${cflags[@]}" "${be[@]}" "${rt[@]}" "$root/tests/backend/cuda/test_cuda_gpu.c" -ldl -lm -pthread \
    -o "$bld/test_cuda_gpu" &&
    cc "${cflags[@]}" "${be[@]}" "$root/tests/backend/cuda/test_nvrtc.c" -ldl -lm -o "$bld/test_nvrtc" &&
    cc "${cflags[@]}" "${rt[@]}" "$root/tests/backend/cuda/cuda_probe.c" -ldl -o "$bld/cuda_probe"
}

# The programs of an existing CMake build folder.
build_use() {
  local d=$1
  ln -sf "$d/tests/test_cuda_gpu" "$d/tests/test_nvrtc" "$d/tests/cuda_probe" "$d/mlc" \
    "$d/tests/test_cuda_examples" "$bld/" && echo "the programs of $d"
}

# The programs of tests/gpu/bundle.sh's bundle: unpacked into $bld/bundle;
# of its lib/ only what this machine lacks goes on LD_LIBRARY_PATH, all of it
# on LIBRARY_PATH (the programs mlc links take -lcjson), and this machine's
# zlib under its link-time name when it has no libz.so.
build_bundle() {
  local d=$bld/bundle
  rm -rf "$d" && mkdir -p "$d/ld" || return 1
  if command -v xz >/dev/null; then xz -dc "$MLC_GPU_BUNDLE"; else
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$MLC_GPU_BUNDLE"
  fi | tar -C "$d" -xf - || return 1
  local lib soname
  for lib in "$d"/lib/*.so.*; do
    soname=$(basename "$lib")
    ldconfig -p | grep -q "^[[:space:]]*$soname " || ln -sf "$lib" "$d/ld/$soname"
  done
  # (POSIX classes, not \s: the machine's awk may be mawk)
  local z
  z=$(ldconfig -p | awk '/^[[:space:]]*libz[.]so[.]1 .*x86-64/ { print $NF; exit }')
  if ! ldconfig -p | grep -q '^[[:space:]]*libz[.]so ' && [[ -n $z ]]; then ln -sf "$z" "$d/lib/libz.so"; fi
  echo "unpacked $MLC_GPU_BUNDLE; libraries this machine lacks: $(ls "$d/ld" | tr '\n' ' ')"
  build_use "$d"
}

build() {
  if [[ -n ${MLC_GPU_BUNDLE:-} ]]; then
    build_bundle
  elif [[ ${MLC_GPU_BUILD:-} == /* ]]; then
    build_use "$MLC_GPU_BUILD"
  elif [[ ${MLC_GPU_BUILD:-} == cc ]]; then
    build_cc && echo "built with cc in $bld"
  elif build_cmake; then
    echo "built with CMake in $bld/cmake"
  else
    echo "CMake could not build the project here; building the GPU programs with cc"
    build_cc && echo "built with cc in $bld"
  fi
}

probe() {
  local out rc
  out=$("$bld/cuda_probe" 2>&1)
  rc=$?
  echo "$out"
  return $rc
}

# needs FILE: 77 (said) when the CMake build did not make FILE.
needs() {
  [[ -x $bld/$1 ]] && return 0
  echo "no $bld/$1: the CMake build failed here (mlc needs LLVM 19, re2c, bison, cJSON)"
  return 77
}

parity() {
  needs mlc && needs test_cuda_examples || return 77
  mkdir -p "$bld/parity-work" || return 1
  local models=() # default: every example
  # rehearsed on the fake driver: one model (the emulation is slow)
  [[ -n ${MLC_GPU_FAKE_DRIVER:-} ]] && models=(examples/regression.model)
  "$bld/test_cuda_examples" gpu "$bld/parity-work" cc "${models[@]}"
  local st=$?
  ((st == 77)) && return 77
  # the tiled GEMMs bit for bit on the GPU (their sums are explicit fmaf
  # chains, so NVRTC's contraction cannot change them): a few seconds
  "$bld/test_cuda_examples" gpu "$bld/parity-work" cc --exact tests/backend/cuda/gemm/gemm.model \
    tests/backend/cuda/gemm/gemm_chunks.model || st=1
  # the tensor-core GEMMs (mma.sync m16n8k16 at bf16 and f16): the tensor
  # cores' own sum order inside each mma, so within the 1e-3 tolerance, not
  # bit for bit (docs/design/cuda.md, "Tensor cores"); not rehearsed (slow
  # under the emulation, which cuda_emu_*_bf16/_f16 cover)
  [[ -n ${MLC_GPU_FAKE_DRIVER:-} ]] && return "$st"
  "$bld/test_cuda_examples" gpu "$bld/parity-work" cc --precision=bf16 tests/backend/cuda/gemm/gemm.model \
    examples/fashion_cnn.model --precision=f16 tests/backend/cuda/gemm/gemm.model examples/char_transformer.model || st=1
  return "$st"
}

device() {
  needs mlc || return 77
  local how=(--real)
  [[ -n ${MLC_GPU_FAKE_DRIVER:-} ]] && how=(--fake "$MLC_GPU_FAKE_DRIVER")
  python3 "$root/tests/backend/cuda/device_path.py" "${how[@]}" --mlc "$bld/mlc" --work "$bld/device-work"
}

FASHION=/usr/share/datasets/fashion-mnist
synth=""
if [[ -n ${MLC_GPU_SYNTH_DATA:-} && ! -e $FASHION/train-images-idx3-ubyte.gz ]]; then
  mkdir -p "$FASHION" && python3 "$root/tests/gpu/synth_fashion.py" "$FASHION" >>"$log" 2>&1 &&
    synth=" [generated data: $FASHION]"
fi
# One epoch of fashion_cnn on the GPU and on the CPU at once (the CPU run
# gets all but two cores); their run records compared.
fashion() {
  needs mlc || return 77
  if [[ ! -e $FASHION/train-images-idx3-ubyte.gz ]]; then
    echo "no Fashion-MNIST in $FASHION"
    return 77
  fi
  if [[ -n ${MLC_GPU_FAKE_DRIVER:-} ]]; then
    echo "not rehearsed: an epoch under the fake driver's emulation takes far too long"
    return 77
  fi
  # the launches' grids and longest thread chains (mlc build --report), into the log next to the timings
  "$bld/mlc" build "$root/examples/fashion_cnn.model" --target cuda --report | sed -n '/^gpu launches/,/^peak memory/p'
  "$bld/mlc" build "$root/examples/fashion_cnn.model" --target cpu,cuda -o "$bld/fashion_cnn" || return 1
  local threads=$(($(nproc) > 4 ? $(nproc) - 2 : 2))
  "$bld/fashion_cnn" train --device cpu --threads "$threads" --run-record "$bld/fashion-cpu.json" \
    >"$bld/fashion-cpu.log" 2>&1 &
  local cpu=$!
  "$bld/fashion_cnn" train --device cuda --run-record "$bld/fashion-gpu.json" >"$bld/fashion-gpu.log" 2>&1
  local grc=$?
  wait $cpu
  local crc=$?
  tail -n 3 "$bld/fashion-gpu.log" "$bld/fashion-cpu.log"
  ((grc == 0 && crc == 0)) || return 1
  python3 - "$bld/fashion-gpu.json" "$bld/fashion-cpu.json" <<'PY'
import json, sys
g, c = (json.load(open(p)) for p in sys.argv[1:3])
ga, ca = g["final"]["test_accuracy"], c["final"]["test_accuracy"]
gi, ci = g["epochs"][0]["images_per_second"], c["epochs"][0]["images_per_second"]
ok = abs(ga - ca) <= 0.01 and g.get("device", "").startswith("cuda")
print("fashion_cnn, 1 epoch: GPU accuracy %.4f (%.0f img/s, %s), CPU %.4f (%.0f img/s)%s"
      % (ga, gi, g.get("device"), ca, ci, "" if ok else ": FAILED (0.01 apart at most, on the GPU)"))
sys.exit(0 if ok else 1)
PY
}

fp16() {
  needs mlc || return 77
  local how=()
  [[ -n ${MLC_GPU_FAKE_DRIVER:-} ]] && how=(--steps 2 --fake "$MLC_GPU_FAKE_DRIVER") # ~100 s a step
  python3 "$root/tests/gpu/fp16_scaler.py" --mlc "$bld/mlc" --work "$bld/fp16-work" "${how[@]}"
}

bench() {
  [[ -e $bld/fashion-gpu.json ]] || { echo "no mlc GPU epoch to compare (the fashion step failed)"; return 77; }
  python3 "$root/tests/gpu/torch_step.py" "$bld/fashion-gpu.json"
}

export root bld cuda FASHION
if [[ -n ${MLC_GPU_BUNDLE:-} ]]; then # filled by the build step (build_bundle)
  export MLC_RT_LIB=$bld/bundle/libmlc_rt.a LIBRARY_PATH=$bld/bundle/lib${LIBRARY_PATH:+:$LIBRARY_PATH}
  export LD_LIBRARY_PATH=$bld/bundle/ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
export -f env_info build_cmake build_cc build_use build_bundle build probe needs parity device fashion fp16 bench
say "mlc GPU checks, $(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$root" rev-parse --short HEAD 2>/dev/null)"
step env 30 env_info
step build 300 build || {
  say "build failed: see $log"
  exit 1
}
step probe 30 probe
step kernels 120 "$bld/test_cuda_gpu"
grep -E '^\s+(device|.*: loaded|ew_axpy_relu: )' "$bld/kernels.out" | sed 's/^ */  /' | tee -a "$report"
step parity 300 parity
grep -E '^\[FAIL\]' "$bld/parity.out" | head -n 5 | cut -c1-200 | tee -a "$report"
step device 180 device
grep -E '^\[FAIL\]' "$bld/device.out" | head -n 5 | cut -c1-200 | tee -a "$report"
step fashion 300 fashion
step fp16 240 fp16
grep -E '^\[FAIL\]' "$bld/fp16.out" | head -n 3 | cut -c1-200 | tee -a "$report"
step bench 150 bench
step nvrtc 120 "$bld/test_nvrtc" "$bld/nvrtc-work" "$cuda/bin/ptxas" cc
say "$( ((failed)) && echo "GPU checks: FAILED (full output: $log)" || echo "GPU checks: all passed")"
exit $failed
