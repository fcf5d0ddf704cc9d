#!/usr/bin/env python3
"""Figures for notes/ from the CSV logs of grpo.c runs (make figures).

    python3 notes/plot.py [--runs runs] [--out runs/figures]
    python3 notes/plot.py --compare STUDY [--out FILE]     (the figure of ./grpo compare)

Each figure is drawn only when all of its logs exist under --runs; for a missing log it
prints the command that writes it. PNG files go to --out (runs/figures by default; the
committed figures are in notes/figures, and `make figures OUT=notes/figures` replaces them).
Exit status 1 when no figure could be drawn. Needs matplotlib (pip install matplotlib); the
build and the tests never need it.
"""
import argparse
import csv
import os
import sys
from collections import defaultdict

plt = None   # matplotlib.pyplot, imported in main() after the logs are found: a missing log is reported without it


def figures(runs):
    """(file name, what it shows, [(label, csv path, command that writes it)], draw function)"""
    stats = "./grpo train --objective grpo --prompts-per-step 4 --temperature 0.75"
    return [
        ("tree_task.png", "the synthetic tree task; notes/results.md's is from 20 seeds",
         [("", f"{runs}/tree/tree_steps.csv", f"./grpo tree --seeds 20 --run-dir {runs}/tree")],
         tree_figure),
        ("process_sets.png", "process-set statistics of plain GRPO on countdown, paper §3.2",
         [("k = 6", f"{runs}/stats_k6/train.csv",
           f"{stats} --group-size 6 --steps 300 --run-dir {runs}/stats_k6"),
          ("k = 36", f"{runs}/stats_k36/train.csv",
           f"{stats} --group-size 36 --steps 100 --run-dir {runs}/stats_k36")],
         stats_figure),
        ("main_job.png", "the main job, λ-GRPO beside GRPO from the same SFT checkpoint",
         [("λ-GRPO", f"{runs}/grpo/train.csv",
           f"./grpo train --run-dir {runs}/grpo  (make run does this after SFT)"),
          ("GRPO", f"{runs}/grpo_plain/train.csv",
           f"./grpo train --objective grpo --run-dir {runs}/grpo_plain")],
         main_job_figure),
    ]


def read_csv(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError("no rows after the header (a run stopped before its first step?)")
    return rows


def smooth(xs, w=10):
    out, acc = [], []
    for x in xs:
        acc.append(x)
        if len(acc) > w:
            acc.pop(0)
        out.append(sum(acc) / len(acc))
    return out


def tree_figure(inputs, out):
    rows = read_csv(inputs[0][1])
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
    fig.savefig(out, dpi=80)


def stats_figure(paths, out):
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    cols = [("nontrivial", "share of groups with a non-trivial tree"),
            ("path_depth", "mean path depth (process steps)"),
            ("intermediate", "intermediate proportion")]
    for label, path, _ in paths:
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
    fig.savefig(out, dpi=80)


def main_job_figure(paths, out):
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for label, path, _ in paths:
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
    fig.savefig(out, dpi=80)


def compare_figure(study, out):
    """./grpo compare's figure: validation accuracy against generated tokens and against seconds,
    each method's mean over seeds with its 95% interval as a band, from STUDY/curves.csv (the
    views that compare printed: the same points, means and Student-t intervals)."""
    path = os.path.join(study, "curves.csv")
    if not os.path.isfile(path):
        sys.exit(f"plot.py: {path} is missing: ./grpo compare --study {study} writes it when its runs "
                 "are done")
    rows = read_csv(path)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as pyplot
    except ImportError:
        sys.exit("plot.py: matplotlib is not installed (pip install matplotlib): compare figure not drawn")
    views = [("gen_tokens", "generated tokens"), ("seconds", "training seconds (one thread per run)")]
    fig, axes = pyplot.subplots(1, 2, figsize=(11, 3.8))
    for ax, (view, xlabel) in zip(axes, views):
        curves = defaultdict(list)   # method -> [(x, mean, lo, hi, n)]
        for r in rows:
            if r["view"] == view:
                point = [float(r[k]) for k in ("x", "mean", "ci_lo", "ci_hi")]
                curves[r["method"]].append((*point, int(r["n"])))
        if not curves:
            raise ValueError(f"no rows of the view '{view}' in {path}")
        for method, pts in curves.items():
            pts.sort()
            xs = [p[0] for p in pts]
            line, = ax.plot(xs, [p[1] for p in pts], marker="o", label=f"{method} ({pts[0][4]} seeds)")
            ax.fill_between(xs, [p[2] for p in pts], [p[3] for p in pts], color=line.get_color(), alpha=0.2)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("greedy validation accuracy")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_title("at matched generated tokens (mean, 95% CI)", fontsize=10)
    axes[1].set_title("at matched time (mean, 95% CI)", fontsize=10)
    fig.suptitle(f"./grpo compare: {study}")
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    print(f"plot.py: wrote {out} from {path}")


def main():
    ap = argparse.ArgumentParser(description="Figures from the CSV logs of grpo.c runs.")
    ap.add_argument("--runs", default="runs", help="directory holding the run directories [runs]")
    ap.add_argument("--out", default=None,
                    help="directory for the PNG files [runs/figures]; notes/figures holds the committed ones "
                         "(with --compare: the PNG file [STUDY/compare.png])")
    ap.add_argument("--compare", metavar="STUDY",
                    help="draw the figure of ./grpo compare's study STUDY instead")
    args = ap.parse_args()
    if args.compare:
        try:
            compare_figure(args.compare, args.out or os.path.join(args.compare, "compare.png"))
        except (KeyError, ValueError) as e:
            sys.exit(f"plot.py: cannot read {args.compare}/curves.csv: {type(e).__name__} {e}")
        return
    if args.out is None:
        args.out = "runs/figures"
    runs = args.runs.rstrip("/") or "/"
    print(f"plot.py: logs from {runs}/, figures to {args.out}/")
    ready, skipped, train = [], [], False
    for name, what, inputs, draw in figures(runs):
        missing = [(p, cmd) for _, p, cmd in inputs if not os.path.isfile(p) or os.path.getsize(p) == 0]
        if missing:
            print(f"  {name} ({what}): skipped, missing:")
            for p, cmd in missing:
                print(f"      {p}\n          written by: {cmd}")
                train = train or cmd.startswith("./grpo train")
            skipped.append(name)
        else:
            ready.append((name, inputs, draw))
    if train:
        print("  (./grpo train starts from the SFT checkpoint runs/sft/model.bin: ./grpo sft writes it)")
    drawn = []
    if ready:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot
        except ImportError:
            names = ", ".join(n for n, _, _ in ready)
            sys.exit(f"plot.py: matplotlib is not installed (pip install matplotlib): not drawn: {names}")
        global plt
        plt = matplotlib.pyplot
        os.makedirs(args.out, exist_ok=True)
        for name, inputs, draw in ready:
            out = os.path.join(args.out, name)
            try:
                draw(inputs, out)
            except (KeyError, ValueError, IndexError) as e:   # a log of another program or version
                print(f"  {name}: skipped, cannot read {', '.join(p for _, p, _ in inputs)}: "
                      f"{type(e).__name__} {e}")
                skipped.append(name)
                continue
            print(f"  {name}: wrote {out} from {', '.join(p for _, p, _ in inputs)}")
            drawn.append(name)
    print(f"plot.py: drew {len(drawn)} of {len(drawn) + len(skipped)} figures into {args.out}/"
          + (f" (skipped: {', '.join(skipped)})" if skipped else ""))
    if not drawn:
        sys.exit(1)


if __name__ == "__main__":
    main()
