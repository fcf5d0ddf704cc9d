#!/bin/sh
# Regenerate all countdown data files (deterministic). Order matters: the test split comes
# first, val excludes test, train excludes test and val.
# Needs: pip install reasoning-gym (only for the test split).
# Ranges: 4 numbers from 1..9, targets 1..50 (chosen so that the default SFT reaches a greedy
# test accuracy between 15% and 70%, and so that the problems are too many to memorise:
# 16,181 distinct ones, against 1,854 with 3 numbers; see notes/reference.md "The countdown task"). To
# try other ranges, change RANGES for all three.
set -e
cd "$(dirname "$0")/.."
RANGES="--min-numbers 4 --max-numbers 4 --min-value 1 --max-value 9 --min-target 1 --max-target 50"
python3 data/make_test_split.py --seed 2024 --n 400 $RANGES --out data/countdown_test.txt
python3 data/gen_countdown.py --seed 2 --n 400 $RANGES --exclude data/countdown_test.txt \
    --out data/countdown_val.txt
python3 data/gen_countdown.py --seed 1 --n 20000 $RANGES \
    --exclude data/countdown_test.txt data/countdown_val.txt --out data/countdown_train.txt

# countdown with 5 numbers (4 steps; a length setting beside the 4-number default): the same
# ranges but 5 numbers, its own three files, made the same way (same seeds). 61,294 distinct
# problems (python3 data/count_countdown.py --min-numbers 5 --max-numbers 5); completions of
# 23-34 characters, one token each, plus <eos>: --max-new-tokens 36 (notes/reference.md "Countdown with 5 numbers").
# 3 numbers is not made: only 1,854 distinct problems, few enough to memorise.
R5="--min-numbers 5 --max-numbers 5 --min-value 1 --max-value 9 --min-target 1 --max-target 50"
python3 data/make_test_split.py --seed 2024 --n 400 $R5 --out data/countdown_n5_test.txt
python3 data/gen_countdown.py --seed 2 --n 400 $R5 --exclude data/countdown_n5_test.txt \
    --out data/countdown_n5_val.txt
python3 data/gen_countdown.py --seed 1 --n 20000 $R5 \
    --exclude data/countdown_n5_test.txt data/countdown_n5_val.txt --out data/countdown_n5_train.txt

# chain-sum (./grpo --task chain-sum): reasoning-gym's chain_sum problems, 1- or 2-digit terms,
# one file set per length setting (the number of terms: 3, 5, 7; completions of about 10-20,
# 25-40 and 40-60 tokens; notes/chain-sum.md). Test first, val excludes test, train excludes both.
for T in 3 5 7; do
    python3 data/make_chain_sum_test.py --seed 2024 --n 400 --terms $T --out data/chain_sum_t${T}_test.txt
    python3 data/gen_chain_sum.py --seed 2 --n 400 --terms $T --exclude data/chain_sum_t${T}_test.txt \
        --out data/chain_sum_t${T}_val.txt
    python3 data/gen_chain_sum.py --seed 1 --n 20000 --terms $T \
        --exclude data/chain_sum_t${T}_test.txt data/chain_sum_t${T}_val.txt --out data/chain_sum_t${T}_train.txt
done
