#!/usr/bin/env bash
# tests/gpu_check.sh: the CUDA backend's checks, for a machine with a GPU. Under a minute on
# an H200, builds included; each step has a time limit, so the script ends within 5 minutes.
#   1. builds `make cuda` (./grpo_cuda) and tests/test_cuda (with the Makefile's rule when it
#      has one, else the same nvcc command), for sm_90 unless CUDA_ARCH is set (-arch=sm_80);
#   2. runs every kernel test (tests/test_cuda: each CUDA kernel against grpo.c's CPU function);
#   3. runs the kernel test again under compute-sanitizer memcheck, racecheck, initcheck and
#      synccheck (1 to 5 s each on an H200) when compute-sanitizer is installed; where it
#      refuses the device (some runtimes) the step fails with the reason in the log.
# Full log: $OUT/gpu_check.log when OUT is set, else /tmp/gpu_check.log. Prints a table last.
# Exit status 1 when a step fails.
set -u
cd "$(dirname "$0")/.."
LOG=${OUT:-/tmp}/gpu_check.log
ARCH=${CUDA_ARCH:--arch=sm_90}
NVCC=${NVCC:-nvcc}
: >"$LOG"
rows=()
status=0

# run_step NAME SECONDS COMMAND...: runs COMMAND with a time limit, output to the log
run_step() {
  local name=$1 limit=$2; shift 2
  local t0 rc dt
  t0=$(date +%s.%N)
  printf '\n== %s: %s\n' "$name" "$*" >>"$LOG"
  timeout "$limit" "$@" >>"$LOG" 2>&1
  rc=$?
  dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  local what=ok
  if [ $rc -eq 124 ]; then what="timeout ${limit}s"; elif [ $rc -ne 0 ]; then what="FAIL rc=$rc"; fi
  [ $rc -ne 0 ] && status=1
  rows+=("$(printf '%-34s %-16s %7ss' "$name" "$what" "$dt")")
  echo "gpu_check: $name: $what (${dt}s)"
  return $rc
}

# the CUDA libraries next to nvcc, in case the loader does not know them
CUDA_LIB=$(dirname "$(command -v "$NVCC")")/../lib64
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$CUDA_LIB"

run_step "nvidia-smi" 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
run_step "nvcc --version" 30 "$NVCC" --version
run_step "make cuda" 150 make cuda CUDA_ARCH="$ARCH"
if grep -q '^tests/test_cuda:' Makefile; then
  run_step "build tests/test_cuda (make)" 150 make tests/test_cuda CUDA_ARCH="$ARCH"
else
  run_step "build tests/test_cuda (nvcc)" 150 bash -c "$NVCC -O3 $ARCH -Xcompiler -fopenmp,-Wall,-Wno-unused-function \
    tests/test_cuda.cu grpo_kernels.cu -o tests/test_cuda -lcublas"
fi

if [ -x tests/test_cuda ]; then
  run_step "test_cuda (full)" 150 ./tests/test_cuda
  if command -v compute-sanitizer >/dev/null 2>&1; then
    for tool in memcheck racecheck initcheck synccheck; do
      run_step "compute-sanitizer $tool" 90 \
        compute-sanitizer --tool "$tool" --error-exitcode 9 ./tests/test_cuda
    done
  else
    rows+=("$(printf '%-34s %-16s' "compute-sanitizer" "not installed")")
  fi
fi

echo
echo "== gpu_check: full log in $LOG"
# the kernel table of the full test run (between its '== summary' line and the end)
awk '/^== test_cuda \(full\)/ { on = 1 } on && /^== summary/ { show = 1 } show && /^== / && !/^== summary/ { show = 0; on = 0 } show' "$LOG"
grep -E '^FAIL' "$LOG" | head -20
printf '%-34s %-16s %8s\n' "step" "result" "time"
for r in "${rows[@]}"; do echo "$r"; done
exit $status
