#!/usr/bin/env bash
# tests/gpu_check.sh: the CUDA build's checks, for a machine with a GPU. The whole script
# stays within 5 minutes: every step has its own time limit, cut further to what is left of
# a 290 s budget (a step with under 5 s left is skipped and reported so).
#   1. builds ./grpo (CPU) and `make cuda` (./grpo_cuda) and tests/test_cuda, for sm_90 unless
#      CUDA_ARCH is set (-arch=sm_80);
#   2. tests/test_cuda: every CUDA kernel against grpo.c's CPU function, then full GRPO and
#      λ-GRPO steps on the GPU against the CPU from one checkpoint, and GPU determinism;
#   3. the same under compute-sanitizer memcheck (when installed);
#   4. make bench-cuda: training and sampling tokens/s of grpo_cuda (default model and
#      L=8 C=512 maxT=256), the step's sgemms against cuBLAS alone, PyTorch beside it;
#   5. the default main job (sft, then train) with ./grpo_cuda, then with ./grpo, each in a
#      temporary run directory, timed;
#   6. ./grpo_cuda sample and ./grpo_cuda tree (20 steps), checked to run;
#   7. compute-sanitizer racecheck (kernel tests only: with the full steps it ran past 150 s),
#      initcheck and synccheck on tests/test_cuda --quick.
# Full log: $OUT/gpu_check.log when OUT is set, else /tmp/gpu_check.log. Prints the main-job
# table and the step table last. Exit status 1 when a step fails or is skipped for time.
# Environment: GPU_CHECK_BUDGET (seconds, default 290), GPU_CHECK_CPU_JOB=0 (skip the CPU
# build's main job, e.g. on a rerun), CUDA_ARCH (default -arch=sm_90), NVCC.
set -u
cd "$(dirname "$0")/.."
LOG=${OUT:-/tmp}/gpu_check.log
ARCH=${CUDA_ARCH:--arch=sm_90}
NVCC=${NVCC:-nvcc}
BUDGET=${GPU_CHECK_BUDGET:-290}   # seconds; a first look on a fresh port may set more
START=$(date +%s)
: >"$LOG"
rows=()
declare -A took
status=0

# run_step NAME SECONDS COMMAND...: runs COMMAND with a time limit (at most what is left of
# the budget), output to the log; records the seconds it took in took[NAME]
run_step() {
  local name=$1 limit=$2; shift 2
  local t0 rc dt left
  left=$((BUDGET - ($(date +%s) - START)))
  if [ "$left" -lt 5 ]; then
    rows+=("$(printf '%-40s %-16s' "$name" "skipped (time)")"); status=1
    echo "gpu_check: $name: skipped, the 5-minute budget is spent"
    return 1
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  t0=$(date +%s.%N)
  printf '\n== %s: %s\n' "$name" "$*" >>"$LOG"
  timeout "$limit" "$@" >>"$LOG" 2>&1
  rc=$?
  dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  took[$name]=$dt
  local what=ok
  if [ $rc -eq 124 ]; then what="timeout ${limit}s"; elif [ $rc -ne 0 ]; then what="FAIL rc=$rc"; fi
  [ $rc -ne 0 ] && status=1
  rows+=("$(printf '%-40s %-16s %7ss' "$name" "$what" "$dt")")
  echo "gpu_check: $name: $what (${dt}s)"
  return $rc
}

# the CUDA libraries next to nvcc, in case the loader does not know them
CUDA_LIB=$(dirname "$(command -v "$NVCC")")/../lib64
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$CUDA_LIB"
SAN=$(command -v compute-sanitizer || true)

run_step "nvidia-smi" 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
run_step "nvcc --version" 30 "$NVCC" --version
rm -f grpo_kernels.o   # built for $ARCH below (make does not track CUDA_ARCH)
run_step "make grpo grpo_cuda tests/test_cuda" 150 make -j"$(nproc)" grpo grpo_cuda tests/test_cuda CUDA_ARCH="$ARCH"

if [ -x tests/test_cuda ]; then
  run_step "test_cuda (kernels + full steps)" 120 ./tests/test_cuda
  if [ -n "$SAN" ]; then
    run_step "compute-sanitizer memcheck" 60 "$SAN" --tool memcheck --error-exitcode 9 ./tests/test_cuda --quick
  else
    rows+=("$(printf '%-40s %-16s' "compute-sanitizer" "not installed")")
  fi
fi

[ -x grpo_cuda ] && run_step "make bench-cuda" 90 make bench-cuda CUDA_ARCH="$ARCH"
# where the larger model's training step spends its GPU time, kernel by kernel
[ -x grpo_cuda ] && run_step "kernel times (L8 C512 T256)" 60 ./grpo_cuda bench --layers 8 --heads 8 --channels 512 \
  --context 256 --kernel-times 1

# the default main job, CUDA build then CPU build, each from scratch in its own directory
RUN=$(mktemp -d /tmp/gpu_check_run.XXXXXX)
for b in cuda cpu; do
  bin=./grpo_cuda; [ $b = cpu ] && bin=./grpo
  [ -x "$bin" ] || continue
  if [ $b = cpu ] && [ "${GPU_CHECK_CPU_JOB:-1}" = 0 ]; then   # a rerun may skip the CPU build's job
    rows+=("$(printf '%-40s %-16s' "main job cpu" "not run (GPU_CHECK_CPU_JOB=0)")"); continue
  fi
  run_step "main job $b: sft" 120 "$bin" sft --run-dir "$RUN/$b/sft" &&
    run_step "main job $b: train" 150 "$bin" train --init "$RUN/$b/sft/model.bin" --run-dir "$RUN/$b/grpo"
done

# the CUDA build's other commands that use the model: sample (one group and its prefix tree,
# from the main job's SFT checkpoint) and tree (the synthetic experiment, a short grid)
if [ -x grpo_cuda ] && [ -f "$RUN/cuda/sft/model.bin" ]; then
  run_step "grpo_cuda sample" 30 ./grpo_cuda sample --model "$RUN/cuda/sft/model.bin"
fi
[ -x grpo_cuda ] && run_step "grpo_cuda tree (20 steps)" 45 ./grpo_cuda tree --steps 20 --run-dir "$RUN/tree"

if [ -n "$SAN" ] && [ -x tests/test_cuda ]; then
  for tool in racecheck initcheck synccheck; do
    limit=60; [ $tool = racecheck ] && limit=120   # racecheck is the slow one
    args=--quick; [ $tool = racecheck ] && args="--quick --kernels"   # racecheck: the kernels alone fit
    run_step "compute-sanitizer $tool" $limit "$SAN" --tool "$tool" --error-exitcode 9 ./tests/test_cuda $args
  done
fi

echo
echo "== gpu_check: full log in $LOG"
# the kernel and step table of the full test run (between its '== summary' line and the next step)
awk '/^== test_cuda \(kernels/ { on = 1 } on && /^== summary/ { show = 1 } show && /^== / && !/^== summary/ { show = 0; on = 0 } show' "$LOG"
grep -E '^FAIL' "$LOG" | head -20
grep -E '^(train|sample|sgemm|bench) ' "$LOG" | head -12
awk '/^kernel times per training step/ { on = 1; n = 0 } on && (n++ < 14 || /^  total/) { print } /^  total/ { on = 0 }' "$LOG"
echo
printf '%-6s %10s %10s  %s\n' "build" "sft (s)" "train (s)" "result"
for b in cuda cpu; do
  res=$(awk -v b="$b" '$0 ~ "^== main job " b ": train" { on = 1 } on && /^result:/ { print; exit }' "$LOG")
  printf '%-6s %10s %10s  %s\n' "$b" "${took["main job $b: sft"]:--}" "${took["main job $b: train"]:--}" "${res:-(none)}"
done
echo
printf '%-40s %-16s %8s\n' "step" "result" "time"
for r in "${rows[@]}"; do echo "$r"; done
printf 'total %ds of the %ds budget\n' $(( $(date +%s) - START )) "$BUDGET"
rm -rf "$RUN"
exit $status
