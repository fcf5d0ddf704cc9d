#!/usr/bin/env python3
"""Figures for notes/ from the CSV logs of grpo.c runs (make figures).

    python3 notes/plot.py [--runs runs] [--out runs/figures]
    python3 notes/plot.py --compare STUDY [--out FILE]     (the figure of ./grpo compare)
    python3 notes/plot.py --length 3=runs/len_t3,5=runs/len_t5,7=runs/len_t7 [--out FILE]
        (the length study: λ-GRPO − GRPO against completion length, probe cosine on a 2nd axis)
    python3 notes/plot.py --dynamics STUDY [--out FILE]      (FILE: STUDY/dynamics.png by default)
        (training dynamics of a compare study's methods against the step: validation accuracy,
         sampled reward, share of all-equal groups, entropy; prints the early and late means)
    python3 notes/plot.py --cost STUDY[,STUDY...] [--out FILE]
        (cost at equal accuracy: generated tokens and seconds to first reach the study's
         pre-registered --target-acc, per method, mean and 95% CI over the runs that reached it)

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
    save_fig(fig, out)


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
    save_fig(fig, out)


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
    save_fig(fig, out)


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
    save_fig(fig, out)
    print(f"plot.py: wrote {out} from {path}")


# t quantiles t_{0.975, df} for the 95% intervals (as ./grpo compare: Student t, n - 1 df)
T975 = {1: 12.7062, 2: 4.3027, 3: 3.1824, 4: 2.7764, 5: 2.5706, 6: 2.4469, 7: 2.3646, 8: 2.3060,
        9: 2.2622, 10: 2.2281, 12: 2.1788, 15: 2.1314, 20: 2.0860, 30: 2.0423}


def mean_ci(xs):
    """mean and half-width of the 95% Student-t interval (nan half-width for one value)"""
    n = len(xs)
    if n == 0:
        return float("nan"), float("nan")
    m = sum(xs) / n
    if n < 2:
        return m, float("nan")
    var = sum((x - m) ** 2 for x in xs) / (n - 1)
    t = T975.get(n - 1) or T975[max(k for k in T975 if k <= n - 1)]
    return m, t * (var / n) ** 0.5


def save_fig(fig, out):
    """fig to the file out, its directory made if missing (only now: a figure that fails to draw
    leaves no directory behind)"""
    if os.path.dirname(out):
        os.makedirs(os.path.dirname(out), exist_ok=True)
    fig.savefig(out, dpi=80)


def out_file(out, default_dir, name):
    """The PNG file a figure of one file goes to: out when it names a file; NAME inside out when
    out is an existing directory or ends with '/'; out + '.png' when it has no extension (as
    matplotlib would write it, so that the path printed is the file written); no out: NAME in
    default_dir"""
    if not out:
        return os.path.join(default_dir, name)
    if out.endswith("/") or os.path.isdir(out):
        return os.path.join(out, name)
    if not os.path.splitext(out)[1]:
        return out + ".png"
    return out


def finished_runs(method_dir):
    """{seed: run dir} of the runs of one method directory that have their done marker"""
    out = {}
    if not os.path.isdir(method_dir):   # a stray file among the method directories
        return out
    for seed in os.listdir(method_dir):
        d = os.path.join(method_dir, seed)
        if seed.startswith("seed_") and os.path.isfile(os.path.join(d, "done")):
            out[int(seed[5:])] = d
    return out


def study_runs(study, method):
    """{seed: run dir} of one method of a compare study: the directory named method, or method
    followed by its options ('grpo+probe-every=10')"""
    root = os.path.join(study, "runs")
    if not os.path.isdir(root):
        raise ValueError(f"{root} is missing (no runs: ./grpo compare --study {study})")
    dirs = [d for d in sorted(os.listdir(root)) if d == method or d.startswith(method + "+")]
    if len(dirs) != 1:
        raise ValueError(f"{root}: {len(dirs)} method directories for {method} ({', '.join(dirs) or 'none'})")
    out = finished_runs(os.path.join(root, dirs[0]))
    if not out:
        raise ValueError(f"{root}/{dirs[0]}: no finished run (no done marker)")
    return out


def result_value(run, key):
    with open(os.path.join(run, "result.txt")) as f:
        for line in f:
            k, _, v = line.partition(" ")
            if k == key:
                return float(v)
    raise ValueError(f"{run}/result.txt has no {key} line")


def column_mean(run, col):
    vals = [float(r[col]) for r in read_csv(os.path.join(run, "train.csv")) if r.get(col, "") not in ("", None)]
    vals = [v for v in vals if v == v]   # a probe of a batch without gradient (all groups equal) is nan
    if not vals:
        raise ValueError(f"{run}/train.csv has no values in column {col}")
    return sum(vals) / len(vals)


def length_figure(spec, out):
    """The length study: per setting (label=STUDY), the paired difference λ-GRPO − GRPO of greedy
    test accuracy at the end (points; mean and 95% CI over the seeds both finished), beside the
    runs' mean |λ| (train.csv mean_lambda), intermediate share and probe cosine (probe_cos, the
    cosine of the two objectives' gradients on the same batch), averaged over steps and over the
    runs of both methods. Prints the table it draws."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot
    rows = []
    for item in spec.split(","):
        label, _, study = item.partition("=")
        if not study:
            raise ValueError(f"'{item}': expected LABEL=STUDY (e.g. 5=runs/len_t5)")
        g, lam = study_runs(study, "grpo"), study_runs(study, "lambda-grpo")
        seeds = sorted(set(g) & set(lam))
        diff = [100 * (result_value(lam[s], "test_acc") - result_value(g[s], "test_acc")) for s in seeds]
        last_val = lambda run: float(read_csv(os.path.join(run, "eval.csv"))[-1]["val_acc"])
        vm, vh = mean_ci([100 * (last_val(lam[s]) - last_val(g[s])) for s in seeds])
        runs = [g[s] for s in seeds] + [lam[s] for s in seeds]
        m, h = mean_ci(diff)
        cos = [column_mean(r, "probe_cos") for r in runs]
        rows.append((label, m, h, len(seeds), vm, vh, sum(column_mean(r, "mean_lambda") for r in runs) / len(runs),
                     sum(column_mean(r, "intermediate") for r in runs) / len(runs), sum(cos) / len(cos)))
    print("setting  λ-GRPO − GRPO, points (95% CI): test at the end  val at the last point  seeds  "
          "mean |λ|  intermediate  probe cos")
    for label, m, h, n, vm, vh, lam_m, inter, cos in rows:
        print(f"{label:>7}  {'':19}{m:+6.2f} ± {h:5.2f}      {vm:+6.2f} ± {vh:5.2f}  {n:5d}  {lam_m:8.2f}  "
              f"{inter:12.3f}  {cos:9.4f}")
    rows = [(r[0], r[1], r[2], r[3], r[6], r[7], r[8]) for r in rows]
    fig, ax = pyplot.subplots(figsize=(6.4, 4))
    xs = list(range(len(rows)))
    ax.errorbar(xs, [r[1] for r in rows], yerr=[r[2] for r in rows], fmt="o-", capsize=4,
                label="λ-GRPO − GRPO, test accuracy (points, 95% CI)")
    ax.axhline(0, color="gray", lw=0.8)
    ax.set_xticks(xs)
    ax.set_xticklabels([f"{r[0]}\n|λ| {r[4]:.1f}" for r in rows])
    ax.set_xlabel("setting (terms), mean |λ| of its runs")
    ax.set_ylabel("paired difference (points)")
    ax2 = ax.twinx()
    ax2.plot(xs, [r[6] for r in rows], "s--", color="tab:red", label="probe cosine (right axis)")
    ax2.set_ylabel("probe cosine of the two gradients", color="tab:red")
    ax2.set_ylim(min(0.5, min(r[6] for r in rows) - 0.05), 1.0)
    lines = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    ax.legend(lines, [ln.get_label() for ln in lines], fontsize=8, loc="best")
    ax.grid(alpha=0.3)
    fig.suptitle("Where λ-GRPO differs from GRPO: completion length", fontsize=10)
    fig.tight_layout()
    save_fig(fig, out)
    print(f"plot.py: wrote {out}")


def prereg_target(study):
    with open(os.path.join(study, "prereg.txt")) as f:
        for line in f:
            if line.strip().startswith("target: validation accuracy "):
                return float(line.split()[3].rstrip(";"))
    raise ValueError(f"{study}/prereg.txt pre-registers no --target-acc")


def first_reach(run, target):
    """(generated tokens, seconds) at which the run's eval.csv first reaches target, linearly
    interpolated between the two evaluation points around the crossing, as ./grpo compare's cost
    view; None if it never does"""
    pts = read_csv(os.path.join(run, "eval.csv"))
    prev = None
    for r in pts:
        acc = float(r["val_acc"])
        if acc >= target:
            if prev is None or float(prev["val_acc"]) >= target:
                return float(r["gen_tokens"]), float(r["seconds"])
            a0 = float(prev["val_acc"])
            f = (target - a0) / (acc - a0)
            return tuple(float(prev[k]) + f * (float(r[k]) - float(prev[k])) for k in ("gen_tokens", "seconds"))
        prev = r
    return None


def cost_figure(studies, out):
    """Cost at equal accuracy: for each study and method, generated tokens and seconds to first
    reach the study's pre-registered target (mean, 95% CI over the runs that reached it, and how
    many of n did), as bars. Prints the table it draws."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot
    bars = []
    for study in studies.split(","):
        target = prereg_target(study)
        root = os.path.join(study, "runs")
        if not os.path.isdir(root):
            raise ValueError(f"{root} is missing or not a directory (no runs: ./grpo compare --study {study})")
        for method in sorted(m for m in os.listdir(root) if os.path.isdir(os.path.join(root, m))):
            runs = study_runs(study, method.split("+")[0])
            hits = [first_reach(r, target) for r in runs.values()]
            got = [h for h in hits if h is not None]
            tok = mean_ci([h[0] for h in got]) if got else (float("nan"), float("nan"))
            sec = mean_ci([h[1] for h in got]) if got else (float("nan"), float("nan"))
            bars.append((f"{os.path.basename(study.rstrip('/'))}\n{method.split('+')[0]}", target, tok, sec,
                         len(got), len(hits)))
    print("study/method                      target  tokens to reach (mean ± CI)  seconds (mean ± CI)  reached")
    for name, target, tok, sec, k, n in bars:
        print(f"{name.replace(chr(10), ' / '):32}  {target:6.3f}  {tok[0]:12.0f} ± {tok[1]:9.0f}  "
              f"{sec[0]:8.1f} ± {sec[1]:6.1f}  {k} of {n}")
    fig, axes = pyplot.subplots(1, 2, figsize=(max(8, 1.1 * len(bars) + 3), 4))
    xs = list(range(len(bars)))
    for ax, idx, ylabel in ((axes[0], 2, "generated tokens to reach X"), (axes[1], 3, "seconds to reach X")):
        ax.bar(xs, [b[idx][0] for b in bars], yerr=[b[idx][1] for b in bars], capsize=3, alpha=0.8)
        for x, b in zip(xs, bars):
            ax.annotate(f"{b[4]} of {b[5]}", (x, 0), xytext=(0, 3), textcoords="offset points", ha="center",
                        fontsize=7)
        ax.set_xticks(xs)
        ax.set_xticklabels([b[0] for b in bars], fontsize=7)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3, axis="y")
    fig.suptitle("Cost at equal accuracy (X pre-registered per study; mean, 95% CI over the runs "
                 "that reached X; 'k of n' reached it)", fontsize=9)
    fig.tight_layout()
    save_fig(fig, out)
    print(f"plot.py: wrote {out}")


def dynamics_figure(study, out):
    """Each method of a compare study against the step, mean over its seeds: greedy validation
    accuracy at the evaluation points (with the 95% interval; x is the point's mean step), and from train.csv (25-step
    means) the sampled reward, the share of groups whose rewards are all equal (no gradient) and
    the entropy estimate (mean -log pi_old of the sampled tokens). Prints each method's means
    over steps 1-50 and over the last 50 steps, with their 95% intervals over seeds."""
    root = os.path.join(study, "runs")
    if not os.path.isdir(root):
        raise ValueError(f"{root} is missing (no runs: ./grpo compare --study {study})")
    methods = sorted(m for m in os.listdir(root) if os.path.isdir(os.path.join(root, m)))
    cols = [("mean_reward", "sampled reward"), ("frac_all_equal", "share of all-equal groups"),
            ("entropy", "entropy estimate (nats/token)")]
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot
    fig, axes = pyplot.subplots(1, 4, figsize=(17, 3.8))
    print(f"{'method':<40} {'column':<15} {'steps 1-50':>16} {'last 50 steps':>16}  seeds")
    drawn = 0
    for method in methods:
        runs = finished_runs(os.path.join(root, method))
        if not runs:
            print(f"plot.py: {root}/{method}: no finished run (no done marker), left out")
            continue
        label = method   # the whole directory name: methods may differ only in their options
        # evaluation points by their index (eval.csv's point): under a token or time budget the
        # seeds reach a point at different steps; x is the mean step over the seeds
        evals = [read_csv(os.path.join(d, "eval.csv")) for d in runs.values()]
        pts = []
        for j in sorted({int(r["point"]) for e in evals for r in e}):
            rows = [r for e in evals for r in e if int(r["point"]) == j]
            if len(rows) == len(evals):
                pts.append((sum(int(r["step"]) for r in rows) / len(rows), *mean_ci([float(r["val_acc"]) for r in rows])))
        line, = axes[0].plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{label} ({len(runs)} seeds)")
        axes[0].fill_between([p[0] for p in pts], [p[1] - p[2] for p in pts], [p[1] + p[2] for p in pts],
                             color=line.get_color(), alpha=0.2)
        drawn += 1
        trains = [read_csv(os.path.join(d, "train.csv")) for d in runs.values()]
        n = min(len(t) for t in trains)
        for ax, (col, _) in zip(axes[1:], cols):
            if any(col not in t[0] for t in trains):
                print(f"plot.py: {root}/{method}: train.csv has no column {col} (a build without it), not drawn")
                continue
            per_seed = [[float(r[col]) for r in t[:n]] for t in trains]
            mean = [sum(v[i] for v in per_seed) / len(per_seed) for i in range(n)]
            ax.plot(range(1, n + 1), smooth(mean, 25), color=line.get_color(), label=label)
            early = mean_ci([sum(v[:50]) / len(v[:50]) for v in per_seed])
            late = mean_ci([sum(v[-50:]) / len(v[-50:]) for v in per_seed])
            print(f"{label:<40} {col:<15} {early[0]:>8.4f}±{early[1]:<7.4f} {late[0]:>8.4f}±{late[1]:<7.4f}  {len(runs)}")
    if not drawn:
        raise ValueError(f"{root}: no finished run of any method")
    axes[0].set_title("greedy validation accuracy (mean, 95% CI)", fontsize=10)
    for ax, (_, title) in zip(axes[1:], cols):
        ax.set_title(title + " (25-step mean)", fontsize=10)
    for ax in axes:
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"training dynamics: {study}")
    fig.tight_layout()
    save_fig(fig, out)
    print(f"plot.py: wrote {out}")


def main():
    ap = argparse.ArgumentParser(description="Figures from the CSV logs of grpo.c runs.")
    ap.add_argument("--runs", default="runs", help="directory holding the run directories [runs]")
    ap.add_argument("--out", default=None,
                    help="where the PNG files go: a directory [runs/figures] (notes/figures holds the committed "
                         "ones). With --compare, --dynamics, --length or --cost, one figure: a file, or a directory "
                         "to hold it [STUDY/compare.png, STUDY/dynamics.png, runs/figures/length.png, "
                         "runs/figures/cost.png]")
    ap.add_argument("--compare", metavar="STUDY",
                    help="draw the figure of ./grpo compare's study STUDY instead")
    ap.add_argument("--length", metavar="L=STUDY,...",
                    help="draw the length study's figure from these compare studies (label=study directory)")
    ap.add_argument("--dynamics", metavar="STUDY",
                    help="draw a compare study's training dynamics (accuracy, reward, all-equal share, entropy)")
    ap.add_argument("--cost", metavar="STUDY,...",
                    help="draw the cost-at-equal-accuracy bars of these compare studies")
    args = ap.parse_args()
    given = [f"--{f}" for f in ("compare", "length", "cost", "dynamics") if getattr(args, f)]
    if len(given) > 1:
        ap.error(f"{' and '.join(given)}: one figure per call")
    for flag, draw, name in (("length", length_figure, "length.png"), ("cost", cost_figure, "cost.png"),
                               ("dynamics", dynamics_figure, "dynamics.png")):
        if getattr(args, flag):
            # the file: --out, else the study's own directory (--dynamics, as --compare), else runs/figures
            out = out_file(args.out, args.dynamics if flag == "dynamics" else os.path.join("runs", "figures"), name)
            try:
                draw(getattr(args, flag), out)
            except ImportError:
                sys.exit(f"plot.py: matplotlib is not installed (pip install matplotlib): --{flag} not drawn")
            except (KeyError, ValueError, OSError) as e:
                sys.exit(f"plot.py --{flag}: {type(e).__name__} {e}")
            return
    if args.compare:
        try:
            compare_figure(args.compare, out_file(args.out, args.compare, "compare.png"))
        except (KeyError, ValueError, OSError) as e:
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
