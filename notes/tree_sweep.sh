#!/bin/sh
# notes/tree_sweep.sh [GRPO] [OUT]: the Table 1 map (notes/results.md "Table 1 as a map"): ./grpo tree
# at every learning rate x group size of the pre-registration (notes/studies/tree_sweep.prereg.txt),
# 20 seeds, 1,000 steps at a constant rate, one thread per command, JOBS (default 2) commands at
# once; then notes/tree_sweep.py writes OUT/tree_sweep.csv (per seed) and OUT/tree_sweep.txt.
# A command whose tree_steps.csv is complete is not run again (rerun to continue).
set -eu
G=${1:-./grpo}
OUT=${2:-runs/tree_sweep}
JOBS=${JOBS:-2}
[ -x "$G" ] || { echo "tree_sweep.sh: '$G' is not an executable (make grpo, or give its path)" >&2; exit 2; }
mkdir -p "$OUT"
for lr in 1e-4 2e-4 3e-4 5e-4 1e-3 3e-3; do
  for k in 6 16 36; do
    d="$OUT/lr${lr}_k$k"
    # 240 runs x 1,000 steps, one line each, and the header: 240,001 lines when done
    ow=""   # a command cut off before its end is run again from the start, over its partial log
    if [ -f "$d/tree_steps.csv" ]; then
      [ "$(wc -l < "$d/tree_steps.csv")" -eq 240001 ] && continue
      ow=" --overwrite 1"
    fi
    echo "OMP_WAIT_POLICY=PASSIVE $G tree --threads 1 --seeds 20 --steps 1000 --lr $lr --group-size $k --run-dir $d$ow > $d.log 2>&1"
  done
done | xargs -P "$JOBS" -I{} sh -c '{}'
python3 notes/tree_sweep.py "$OUT"
