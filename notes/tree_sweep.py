#!/usr/bin/env python3
"""notes/tree_sweep.py OUT: the Table 1 map's summary (notes/studies/tree_sweep.prereg.txt).

Reads OUT/lr<LR>_k<K>/tree_steps.csv (notes/tree_sweep.sh writes them), writes
  OUT/tree_sweep.csv  one row per run: lr, k, n, r_neg, seed, objective, target frequency averaged
                      over steps 201-250 (at250) and 951-1000 (at1000)
  OUT/tree_sweep.txt  per (lr, k): the six-cell means of GRPO and λ-GRPO and the paired difference
                      λ − GRPO with its 95% t interval over seeds, the paired t test's p and Holm's
                      adjusted p over the 18 (lr, k) hypotheses, at 250 steps (tested) and 1000
                      (described); per cell, the paired differences at 250; the default-lr rule
  OUT/tree_sweep.png  the gap against lr, a line per group size, at 250 and 1000 (with matplotlib)
Or, given a tree_sweep.csv instead of OUT, only the summary (from the per-seed record alone).
Needs Python 3 and mpmath (the t distribution); matplotlib only for the figure.
"""
import csv
import math
import os
import sys
from collections import defaultdict

import mpmath

LRS = ["1e-4", "2e-4", "3e-4", "5e-4", "1e-3", "3e-3"]
KS = [6, 16, 36]
CELLS = [(1, -0.5), (1, -1.0), (1, -1.5), (2, -0.5), (2, -1.0), (2, -1.5)]
WINDOWS = {"at250": (201, 250), "at1000": (951, 1000)}


def t_tail2(t, df):
    """P(|T| > t) for Student's t with df degrees of freedom."""
    return float(mpmath.betainc(df / 2.0, 0.5, 0, df / (df + t * t), regularized=True))


def t_quantile(p2, df):
    """the t with P(|T| > t) = p2, by bisection (as grpo.c's t_quantile)."""
    lo, hi = 0.0, 1e4
    while hi - lo > 1e-12:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if t_tail2(mid, df) > p2 else (lo, mid)
    return 0.5 * (lo + hi)


def paired(d):
    """mean, 95% half-width, p of the paired t test, for the differences d."""
    n = len(d)
    mean = sum(d) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
    se = sd / math.sqrt(n)
    half = t_quantile(0.05, n - 1) * se
    p = t_tail2(abs(mean) / se, n - 1) if se > 0 else (1.0 if mean == 0 else 0.0)
    mde = (t_quantile(0.05, n - 1) + t_quantile(0.4, n - 1)) * se
    return mean, half, p, mde


def holm(ps):
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    adj, run = [0.0] * len(ps), 0.0
    for j, i in enumerate(order):
        run = max(run, min(1.0, (len(ps) - j) * ps[i]))
        adj[i] = run
    return adj


def read_runs(out):
    rows = []
    for lr in LRS:
        for k in KS:
            path = os.path.join(out, f"lr{lr}_k{k}", "tree_steps.csv")
            if not os.path.exists(path):
                sys.exit(f"tree_sweep.py: {path} is missing: run sh notes/tree_sweep.sh first")
            acc = defaultdict(lambda: defaultdict(float))
            with open(path) as f:
                for r in csv.DictReader(f):
                    step = int(r["step"])
                    key = (r["objective"], int(r["n"]), float(r["r_neg"]), int(r["seed"]))
                    for name, (a, b) in WINDOWS.items():
                        if a <= step <= b:
                            acc[key][name] += float(r["target_freq"]) / (b - a + 1)
            for (obj, n, rneg, seed), v in sorted(acc.items()):
                rows.append({"lr": lr, "k": k, "n": n, "r_neg": rneg, "seed": seed, "objective": obj,
                             "at250": round(v["at250"], 6), "at1000": round(v["at1000"], 6)})
    return rows


def summarize(rows):
    val = {}
    for r in rows:
        val[(r["lr"], int(r["k"]), int(r["n"]), float(r["r_neg"]), int(r["seed"]), r["objective"])] = \
            (float(r["at250"]), float(r["at1000"]))
    seeds = sorted({k[4] for k in val})
    lines = [f"Table 1 as a map: ./grpo tree, {len(seeds)} seeds, 1,000 steps at a constant lr; target-leaf "
             "frequency averaged over steps 201-250 (at 250) and 951-1000 (at 1000); λ − GRPO paired by seed",
             "", "per (lr, k), the six cells' mean: GRPO, λ-GRPO, λ − GRPO ± 95% t interval (19 df), p, Holm's "
             "adjusted p over the 18 (lr, k) at 250 steps (tested), then at 1000 steps (described)"]
    tests, results = [], {}
    for lr in LRS:
        for k in KS:
            out = {}
            for w in (0, 1):
                g = [sum(val[(lr, k, n, rn, s, "grpo")][w] for n, rn in CELLS) / 6 for s in seeds]
                l = [sum(val[(lr, k, n, rn, s, "lambda-grpo")][w] for n, rn in CELLS) / 6 for s in seeds]
                out[w] = (sum(g) / len(g), sum(l) / len(l)) + paired([b - a for a, b in zip(g, l)])
            results[(lr, k)] = out
            tests.append(out[0][4])
    adj = dict(zip([(lr, k) for lr in LRS for k in KS], holm(tests)))
    lines.append(f"{'lr':>6} {'k':>3} | {'GRPO':>6} {'λ-GRPO':>6} {'λ − GRPO at 250':>17} {'p':>8} {'Holm':>7} "
                 f"{'MDE':>6} | {'GRPO':>6} {'λ-GRPO':>6} {'λ − GRPO at 1000':>17}")
    for lr in LRS:
        for k in KS:
            (g0, l0, m0, h0, p0, d0), (g1, l1, m1, h1, _, _) = results[(lr, k)][0], results[(lr, k)][1]
            verdict = "*" if adj[(lr, k)] < 0.05 else " "
            lines.append(f"{lr:>6} {k:>3} | {g0:6.3f} {l0:6.3f} {m0:+8.3f} ± {h0:.3f} {p0:8.2g} {adj[(lr, k)]:7.2g}"
                         f"{verdict}{d0:6.3f} | {g1:6.3f} {l1:6.3f} {m1:+8.3f} ± {h1:.3f}")
    lines += ["(* : supported after Holm's correction; MDE: the difference detectable with 80% power at that sd)",
              "", "per cell at 250 steps: λ − GRPO ± 95% t interval (descriptive)",
              f"{'lr':>6} {'k':>3} | " + " ".join(f"{f'n={n} r={rn}':>15}" for n, rn in CELLS)]
    for lr in LRS:
        for k in KS:
            cells = []
            for n, rn in CELLS:
                d = [val[(lr, k, n, rn, s, "lambda-grpo")][0] - val[(lr, k, n, rn, s, "grpo")][0] for s in seeds]
                m, h, _, _ = paired(d)
                cells.append(f"{m:+.3f}±{h:.3f}")
            lines.append(f"{lr:>6} {k:>3} | " + " ".join(f"{c:>15}" for c in cells))
    best = max(LRS, key=lambda lr: (results[(lr, 16)][0][0], -float(lr)))
    lines += ["", "default-lr rule (pre-registered, GRPO's runs alone): the lr with GRPO's highest six-cell mean at "
              f"250 steps at k = 16: {best} (GRPO " + ", ".join(f"{lr} {results[(lr, 16)][0][0]:.3f}" for lr in LRS) + ")"]
    return "\n".join(lines) + "\n", results


def figure(results, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("tree_sweep.py: matplotlib not installed (pip install matplotlib): no figure")
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, w, title in ((axes[0], 0, "at 250 steps"), (axes[1], 1, "at 1,000 steps")):
        for k in KS:
            xs = [float(lr) for lr in LRS]
            ys = [results[(lr, k)][w][2] for lr in LRS]
            hs = [results[(lr, k)][w][3] for lr in LRS]
            ax.errorbar(xs, ys, yerr=hs, marker="o", capsize=3, label=f"group size {k}")
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("learning rate")
        ax.set_title(title)
    axes[0].set_ylabel("λ-GRPO − GRPO, target frequency (six cells)")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"tree_sweep.py: wrote {path}")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    arg = sys.argv[1]
    if arg.endswith(".csv"):
        with open(arg) as f:
            rows = list(csv.DictReader(f))
        text, _ = summarize(rows)
        sys.stdout.write(text)
        return
    rows = read_runs(arg)
    with open(os.path.join(arg, "tree_sweep.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    text, results = summarize(rows)
    with open(os.path.join(arg, "tree_sweep.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    figure(results, os.path.join(arg, "tree_sweep.png"))


if __name__ == "__main__":
    main()
