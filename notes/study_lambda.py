#!/usr/bin/env python3
"""notes/study_lambda.py STUDY [OUT.csv]: per run of a compare study, where λ-GRPO's weights act.

From each STUDY/runs/METHOD/seed_N/train.csv (columns mean_lambda, mean_lambda_mixed, lambda_share,
frac_all_equal), the means over the run's first and last tenth of steps: mean |λ| over all groups,
mean |λ| over the groups with mixed rewards only (the groups that give a gradient), the share of
advantage weight Σ|a_i|(1 − 1/|λ(i,t)|) / Σ|a_i| that λ-GRPO's 1/|λ| takes away, and the share of
groups whose rewards are all equal. Writes OUT.csv (default STUDY/lambda.csv), one row per run and
window, and prints the means over seeds. Python 3 standard library only.
"""
import csv
import glob
import math
import os
import sys

COLS = ["mean_lambda", "mean_lambda_mixed", "lambda_share", "frac_all_equal"]


def mean(xs):
    xs = [x for x in xs if not math.isnan(x)]
    return sum(xs) / len(xs) if xs else float("nan")


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    study = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) == 3 else os.path.join(study, "lambda.csv")
    rows = []
    for path in sorted(glob.glob(os.path.join(study, "runs", "*", "seed_*", "train.csv"))):
        method = path.split(os.sep)[-3]
        seed = int(path.split(os.sep)[-2][5:])
        with open(path) as f:
            steps = list(csv.DictReader(f))
        if not steps or any(c not in steps[0] for c in COLS):
            sys.exit(f"study_lambda.py: {path} has no {', '.join(COLS)} columns (an older build's log)")
        tenth = max(1, len(steps) // 10)
        for name, part in (("first", steps[:tenth]), ("last", steps[-tenth:])):
            row = {"method": method, "seed": seed, "window": name, "steps": f"{part[0]['step']}-{part[-1]['step']}"}
            for c in COLS:
                row[c] = round(mean([float(r[c]) for r in part]), 4)
            rows.append(row)
    if not rows:
        sys.exit(f"study_lambda.py: no STUDY/runs/*/seed_*/train.csv under {study}")
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["method", "seed", "window", "steps"] + COLS)
        w.writeheader()
        w.writerows(rows)
    print(f"{'method':<14} {'window':<6} " + " ".join(f"{c:>18}" for c in COLS))
    for method in sorted({r["method"] for r in rows}):
        for win in ("first", "last"):
            sel = [r for r in rows if r["method"] == method and r["window"] == win]
            print(f"{method:<14} {win:<6} " + " ".join(f"{mean([r[c] for r in sel]):>18.3f}" for c in COLS))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
