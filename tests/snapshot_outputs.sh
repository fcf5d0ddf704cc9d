#!/usr/bin/env bash
# tests/snapshot_outputs.sh OUT: proves a refactor of grpo.c changed no behaviour. Usage, from the repository root:
#   make grpo && bash tests/snapshot_outputs.sh /tmp/before   (before the change; then again after it into /tmp/after)
#   diff -r /tmp/before /tmp/after    must print nothing (times are masked; runs take ~10 s with 2 threads)
# It runs a fixed script of short commands with ./grpo in the CWD and writes
# every output (stdout/stderr with wall-clock fields masked, CSVs without time columns,
# checkpoints) under OUT, for byte-for-byte comparison across a refactor.
set -u
OUT=$1; rm -rf "$OUT"; mkdir -p "$OUT"
G=./grpo
export OMP_NUM_THREADS=2
mask() { sed -E -e "s#$OUT#<OUT>#g" -e 's/[0-9.]+ (tok\/s|tokens\/s)/<T> \1/g' -e 's/t [0-9.\/]+ s( |$)/t <T> s\1/g' -e 's/[0-9.]+ (s|min)([),;]|$)/<T> \1\2/g' \
  -e 's/\| [0-9.]+ s /| <T> s /g' -e 's/in [0-9.]+ s/in <T> s/g'; }
csvcut() { awk -F, 'NR==1{for(i=1;i<=NF;i++) if($i ~ /^(t_|tok_per_s|tokens_per_s|elapsed)/) drop[i]=1}
  {s=""; for(i=1;i<=NF;i++) if(!drop[i]) s=s (s==""?"":",") $i; print s}' "$1"; }
head -20 data/countdown_test.txt > "$OUT/test20.txt"
head -20 data/countdown_val.txt > "$OUT/val20.txt"
R=$OUT/runs
run() { local name=$1; shift; "$G" "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"; echo "rc=$?" >> "$OUT/$name.out";
        mask < "$OUT/$name.out" > "$OUT/$name.stdout"; mask < "$OUT/$name.err" > "$OUT/$name.stderr"; rm "$OUT/$name.out" "$OUT/$name.err"; }
run sft sft --steps 60 --eval-every 30 --val-data "$OUT/val20.txt" --run-dir "$R/sft"
for obj in grpo lambda-grpo; do
  run train_$obj train --objective $obj --steps 6 --eval-every 3 --eval-limit 10 --prompts-per-step 4 --group-size 8 \
      --pass-k 2 --format-reward 0.1 --init "$R/sft/model.bin" --run-dir "$R/$obj" --val-data "$OUT/val20.txt" --test-data "$OUT/test20.txt"
done
run train_opts train --objective lambda-grpo --steps 3 --eval-every 0 --prompts-per-step 2 --group-size 4 --pass-k 0 \
    --loss-agg seq-mean-token-sum-norm --beta 0.05 --num-iterations 2 --micro-batch 3 --mask-truncated 1 --max-new-tokens 20 --format-reward 0.1 \
    --init "$R/sft/model.bin" --run-dir "$R/opts" --val-data "$OUT/val20.txt" --test-data "$OUT/test20.txt"
run tree tree --steps 30 --seeds 2 --run-dir "$R/tree"
run sample sample --model "$R/sft/model.bin" --group-size 8
run eval eval --model "$R/lambda-grpo/model.bin" --data "$OUT/test20.txt" --pass-k 2 --completions "$OUT/eval_completions.txt"
for f in tests/fixtures/check/*.txt; do
  b=$(basename "$f" .txt); e=tests/fixtures/check/$b.expected
  opts=""; [ -f "$e" ] && opts=$(head -1 "$e")
  run check_$b check $opts "$f"
done
for f in "$R"/*/*.csv; do d=$(basename "$(dirname "$f")"); csvcut "$f" > "$OUT/${d}_$(basename "$f")"; done
for f in "$R"/*/*.bin; do d=$(basename "$(dirname "$f")"); cp "$f" "$OUT/${d}_$(basename "$f")"; done
[ -d runs/tree ] && true
rm -rf "$R"
echo "snapshot: $(ls "$OUT" | wc -l) files in $OUT"
