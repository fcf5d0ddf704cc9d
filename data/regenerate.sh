#!/bin/sh
# Regenerate all countdown data files (deterministic). Order matters: the test
# split comes first, val excludes test, train excludes test and val.
# Needs: pip install reasoning-gym (only for the test split).
# To try other ranges, pass the same --min-value/--max-value/--min-target/... to all three.
set -e
cd "$(dirname "$0")/.."
python3 data/make_test_split.py --seed 2024 --n 500 --out data/countdown_test.txt
python3 data/gen_countdown.py --seed 2 --n 500 --exclude data/countdown_test.txt \
    --out data/countdown_val.txt
python3 data/gen_countdown.py --seed 1 --n 20000 \
    --exclude data/countdown_test.txt data/countdown_val.txt --out data/countdown_train.txt
