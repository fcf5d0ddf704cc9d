#!/usr/bin/env python3
"""Figures for notes/ from the CSV logs of grpo.c runs (make figures).

Reads (whichever exist):
  runs/tree/tree_steps.csv         ./grpo tree: per-step target frequency of every run
  runs/stats_k6/train.csv          ./grpo train --objective grpo --group-size 6 (paper §3.2)
  runs/stats_k36/train.csv         ./grpo train --objective grpo --group-size 36
  runs/grpo/train.csv, runs/grpo_plain/train.csv   the main job (λ-GRPO) and GRPO with the
                                   same settings from the same SFT checkpoint
Writes PNG files to notes/figures/. Needs matplotlib (pip install matplotlib); the build and
the tests never need it.
"""
import csv
import os
import sys
from collections import defaultdict

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

OUT = "notes/figures"


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def smooth(xs, w=10):
    out, acc = [], []
    for x in xs:
        acc.append(x)
        if len(acc) > w:
            acc.pop(0)
        out.append(sum(acc) / len(acc))
    return out


def tree_figure(path):
    rows = read_csv(path)
    runs = defaultdict(list)  # (n, r_neg, objective) -> list of per-seed curves
    per = defaultdict(dict)
    for r in rows:
        key = (int(r["n"]), float(r["r_neg"]), r["objective"])
        per[key].setdefault(int(r["seed"]), []).append((int(r["step"]), float(r["target_freq"])))
    for key, seeds in per.items():
        for s, pts in sorted(seeds.items()):
            pts.sort()
            runs[key].append([f for _, f in pts])
    fig, axes = plt.subplots(2, 3, figsize=(13, 7), sharex=True, sharey=True)
    colors = {"grpo": "tab:red", "lambda-grpo": "tab:blue"}
    for a, n in enumerate([1, 2]):
        for b, rneg in enumerate([-0.5, -1.0, -1.5]):
            ax = axes[a][b]
            for obj in ["grpo", "lambda-grpo"]:
                curves = runs.get((n, rneg, obj), [])
                if not curves:
                    continue
                steps = len(curves[0])
                mean = [sum(c[t] for c in curves) / len(curves) for t in range(steps)]
                for c in curves:
                    ax.plot(range(1, steps + 1), smooth(c), color=colors[obj], alpha=0.15, lw=0.8)
                label = ("GRPO" if obj == "grpo" else "λ-GRPO") + f" (mean of {len(curves)})"
                ax.plot(range(1, steps + 1), smooth(mean), color=colors[obj], lw=2, label=label)
            ax.set_title(f"n = {n}, r_neg = {rneg}")
            ax.set_ylim(-0.02, 1.02)
            if a == 1:
                ax.set_xlabel("step")
            if b == 0:
                ax.set_ylabel("target frequency (10-step mean)")
            ax.grid(alpha=0.3)
    axes[0][0].legend(loc="upper left", fontsize=8)
    fig.suptitle("Synthetic binary-tree task (paper §4.3): frequency of the target leaf")
    fig.tight_layout()
    out = os.path.join(OUT, "tree_task.png")
    fig.savefig(out, dpi=80)
    print("wrote", out)


def stats_figure(paths):
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    cols = [("nontrivial", "share of groups with a non-trivial tree"),
            ("path_depth", "mean path depth (process steps)"),
            ("intermediate", "intermediate proportion")]
    for label, path in paths:
        rows = read_csv(path)
        steps = [int(r["step"]) for r in rows]
        for ax, (col, title) in zip(axes, cols):
            ax.plot(steps, smooth([float(r[col]) for r in rows]), label=label)
            ax.set_title(title, fontsize=10)
            ax.set_xlabel("step")
            ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("Process-set statistics of plain GRPO on countdown (paper §3.2)")
    fig.tight_layout()
    out = os.path.join(OUT, "process_sets.png")
    fig.savefig(out, dpi=80)
    print("wrote", out)


def main_job_figure(paths):
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for label, path in paths:
        rows = read_csv(path)
        steps = [int(r["step"]) for r in rows]
        axes[0].plot(steps, smooth([float(r["mean_reward"]) for r in rows]), label=label)
        val = [(int(r["step"]), float(r["val_acc"])) for r in rows if float(r["val_acc"]) >= 0]
        if val:
            axes[1].plot(*zip(*val), marker="o", label=label)
    axes[0].set_title("mean reward of sampled completions (10-step mean)", fontsize=10)
    axes[1].set_title("validation accuracy (greedy)", fontsize=10)
    for ax in axes:
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    out = os.path.join(OUT, "main_job.png")
    fig.savefig(out, dpi=80)
    print("wrote", out)


def main():
    os.makedirs(OUT, exist_ok=True)
    made = 0
    if os.path.exists("runs/tree/tree_steps.csv"):
        tree_figure("runs/tree/tree_steps.csv"); made += 1
    stats = [(f"k = {k}", f"runs/stats_k{k}/train.csv") for k in (6, 36)]
    stats = [(l, p) for l, p in stats if os.path.exists(p)]
    if stats:
        stats_figure(stats); made += 1
    jobs = [("λ-GRPO", "runs/grpo/train.csv"), ("GRPO", "runs/grpo_plain/train.csv")]
    jobs = [(l, p) for l, p in jobs if os.path.exists(p)]
    if jobs:
        main_job_figure(jobs); made += 1
    if not made:
        sys.exit("plot.py: no CSV logs found under runs/ (run ./grpo tree or ./grpo train first)")


if __name__ == "__main__":
    main()
