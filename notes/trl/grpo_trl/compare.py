#!/usr/bin/env python3
"""grpo_trl.compare: compare a trainer's own results with `./grpo check`'s output.

    grpo-trl-compare TRAINER_TSV CHECK_OUTPUT [--tol 1e-6] [--adv-eps 1e-4] [--quiet]
    python3 notes/trl/grpo_trl/compare.py ...      (the same; this file needs only Python)

TRAINER_TSV (written by grpo_trl.check_dump as stepS.trl.tsv, or by notes/verl/): `#`
comments, a header `line t token advantage lambda_size dloss_dlogp [reward]`, one row per
completion token (line = the completion's line in the check input file), then `loss <value>`. A
cell may be `-` (not produced by that trainer: not compared). Comment lines `# caveat: TEXT`
(dropout on, an untested TRL) are repeated in the verdict: `match, but TEXT`. CHECK_OUTPUT: what
`./grpo check FILE ...` printed (its header, one row per token, `loss`).

Compared, for every (line, t): token (exact), lambda_size (exact), advantage against check's
advantage × weight (the advantage the trainer applies to that token: a_i, or a_i/|λ(i,t)|), and
dloss_dlogp; then the loss.

Tolerance (--tol, 1e-6): a column passes when max_t |trainer − check| <= tol · max_t |check|
(the error relative to the column's scale: both sides are float32, a few roundings of 6e-8
relative to the operands; single near-zero cells, e.g. a gradient where policy and KL parts
cancel, cannot be held to their own relative accuracy). The loss passes when
|Δloss| <= tol · max(|loss|, Σ_t |dloss_dlogp_t|) (the second term: the size of the summed
per-token terms, as the loss is often a small difference of them). Prints the largest
differences; exit status 0 when everything passes, 1 on a mismatch, 2 on unreadable input.

Float32 rounding (needs the trainer's reward column): in a group whose rewards are all equal,
check's advantages are exactly 0 while a trainer's float32 group mean can leave (r − mean)/(std +
eps) of up to k·2^-24·|r|/eps (k the group size, eps --adv-eps: TRL's 1e-4). Such a group is named
as rounding, not a mismatch, when every trainer advantage in it is within twice that bound (at
most 0.1, whatever rewards the dump names: the bound of rewards up to 84/k at eps 1e-4) and the
trainer's advantage / check's weight is one value across the group (equal rewards give every
completion the same a_i); its tokens' gradient and loss are then allowed |advantage|·(ratio + 1)
more (the most a policy term with that advantage can add).

Refused as bad input (exit 2): a file that is not a regular file (a FIFO would hang), the same file
twice, ./grpo check's output given as the trainer dump, files with no token rows, and any cell that
is not a (finite) number or an integer where one is needed; all cells are read before any verdict.
"""
import argparse
import math
import os
import re
import stat
import sys


class InputError(Exception):
    pass


def read_table(path, need):
    """Rows (dict by column) keyed by (line, t), and the loss. Raises InputError with FILE:LINE."""
    rows, loss, _ = _read_table(path, need)
    return rows, loss


def _regular(path):
    """os.stat of path; refuses what is not a regular file (a FIFO or a terminal would block the read)."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise InputError(f"{path}: cannot open: {e.strerror}")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path}: not a regular file (a directory, FIFO or device): give the file itself")
    return st


def _read_table(path, need):
    _regular(path)
    try:
        f = open(path)
    except OSError as e:
        raise InputError(f"{path}: cannot open: {e.strerror}")
    rows, header, loss = {}, None, None
    with f:
        for n, raw in enumerate(f, 1):
            text = raw.rstrip("\n")
            if not text.strip() or text.startswith("#"):
                continue
            cells = text.split("\t")
            if header is None:
                header = cells
                missing = [c for c in need if c not in header]
                if missing:
                    raise InputError(f"{path}:{n}: header lacks column(s) {', '.join(missing)} "
                                     f"(is this {'a ./grpo check output' if 'weight' in need else 'a trainer dump'}?)")
                continue
            if cells[0] == "loss":
                if len(cells) != 2:
                    raise InputError(f"{path}:{n}: expected 'loss<TAB>value'")
                loss = _num(cells[1], path, n, "loss")
                continue
            if len(cells) != len(header):
                raise InputError(f"{path}:{n}: {len(cells)} cells, the header has {len(header)}")
            row = dict(zip(header, cells))
            key = (_int(row["line"], path, n, "line"), _int(row["t"], path, n, "t"))
            if key in rows:
                raise InputError(f"{path}:{n}: row for line {key[0]} t {key[1]} given twice")
            row["_n"] = n
            rows[key] = row
    if header is None:
        raise InputError(f"{path}: empty (no header)")
    if loss is None:
        raise InputError(f"{path}: no 'loss' line (a cut-off file, or ./grpo check failed?)")
    return rows, loss, header


def _num(s, path, n, what):
    try:
        v = float(s)
    except ValueError:
        raise InputError(f"{path}:{n}: {what} {s!r} is not a number")
    if not math.isfinite(v):
        raise InputError(f"{path}:{n}: {what} is not finite ({s})")
    return v


def _int(s, path, n, what):
    if not re.fullmatch(r"[+-]?[0-9]+", s):   # (int() would also take '1_0', ' 1', other scripts' digits)
        raise InputError(f"{path}:{n}: {what} {s!r} is not an integer")
    return int(s)


# the cells compare() reads as numbers, by file: (column, parse, '-' allowed)
_TRAINER_CELLS = [("token", _int, False), ("lambda_size", _int, True), ("advantage", _num, True),
                  ("dloss_dlogp", _num, True), ("reward", _num, True)]
_CHECK_CELLS = [("group", _int, False), ("token", _int, False), ("lambda_size", _int, False),
                ("weight", _num, False), ("advantage", _num, False), ("ratio", _num, False),
                ("dloss_dlogp", _num, False)]
# columns of ./grpo check's output that no trainer dump has
_CHECK_ONLY = ["group", "weight", "step_advantage", "ratio", "kl"]


def _parse_cells(rows, path, cells):
    """Replaces each listed cell of every row by its number ('-' kept where allowed); InputError with FILE:LINE."""
    for k in sorted(rows):
        row = rows[k]
        for name, parse, dash in cells:
            if name in row and not (dash and row[name] == "-"):
                row[name] = parse(row[name], path, row["_n"], name)


def read_caveats(path):
    """The TEXT of each `# caveat: TEXT` line of a trainer dump."""
    with open(path) as f:
        return [line[len("# caveat: "):].strip() for line in f if line.startswith("# caveat: ")]


ROUNDING_CAP = 0.1   # the largest advantage taken for rounding (bound 0.1: rewards up to 84/k at eps 1e-4)


def rounding_groups(mine, ref, adv_eps):
    """{group: (bound, rows)} for groups with all-equal rewards, check's advantages all exactly 0 and the
    trainer's not all 0 but within float32 rounding of 0 (see the module docstring)."""
    groups = {}
    for k, r in ref.items():
        groups.setdefault(r["group"], []).append(k)
    found = {}
    for g, keys in groups.items():
        rewards = {mine[k].get("reward", "-") for k in keys}
        if ("-" in rewards or len(rewards) != 1 or any(mine[k]["advantage"] == "-" for k in keys)
                or any(ref[k]["advantage"] != 0 for k in keys)):
            continue
        # (at most ROUNDING_CAP, whatever reward the dump names: a huge one must not excuse any advantage)
        bound = min(ROUNDING_CAP, 2 * len({k[0] for k in keys}) * 2.0 ** -24 * abs(rewards.pop()) / adv_eps)
        size = max(abs(mine[k]["advantage"]) for k in keys)
        # equal rewards give every completion one a_i: the trainer's advantage / check's weight is one value
        per = [mine[k]["advantage"] / ref[k]["weight"] for k in keys if ref[k]["weight"] != 0]
        one = not per or max(per) - min(per) <= 1e-5 * max(map(abs, per))
        if one and 0 < size <= bound:   # (0: nothing rounded, nothing to name)
            found[g] = (bound, keys)
    return found


def compare(trainer_path, check_path, tol=1e-6, out=sys.stdout, quiet=False, adv_eps=1e-4):
    """Returns (ok, report dict). Raises InputError on unreadable input."""
    st_mine, st_ref = _regular(trainer_path), _regular(check_path)
    if (st_mine.st_dev, st_mine.st_ino) == (st_ref.st_dev, st_ref.st_ino):
        raise InputError(f"{trainer_path} and {check_path} are the same file: give the trainer's dump, "
                         "then ./grpo check's output")
    mine, my_loss, my_header = _read_table(trainer_path, ["line", "t", "token", "advantage", "lambda_size",
                                                          "dloss_dlogp"])
    ref, ref_loss, _ = _read_table(check_path, ["line", "group", "t", "token", "lambda_size", "weight",
                                                "advantage", "ratio", "dloss_dlogp"])
    theirs = [c for c in _CHECK_ONLY if c in my_header]
    if theirs:
        raise InputError(f"{trainer_path}: header has ./grpo check's column(s) {', '.join(theirs)}: this is check's "
                         "output, not a trainer dump (give the trainer's stepS.trl.tsv first)")
    only_mine, only_ref = sorted(set(mine) - set(ref)), sorted(set(ref) - set(mine))
    if only_mine or only_ref:
        k = (only_mine or only_ref)[0]
        side = trainer_path if only_mine else check_path
        raise InputError(f"the two files hold different tokens: {len(only_mine)} rows only in {trainer_path}, "
                         f"{len(only_ref)} only in {check_path} (first: line {k[0]} t {k[1]} in {side}); "
                         "were they made from the same batch file?")
    if not ref:
        raise InputError(f"no tokens to compare: {trainer_path} and {check_path} have no token rows")
    # every cell read (and refused: FILE:LINE) before any verdict line is printed
    _parse_cells(mine, trainer_path, _TRAINER_CELLS)
    _parse_cells(ref, check_path, _CHECK_CELLS)
    fails, report = [], {}
    tok_bad = [k for k in ref if mine[k]["token"] != ref[k]["token"]]
    if tok_bad:
        raise InputError(f"token ids differ at {len(tok_bad)} rows (first: line {tok_bad[0][0]} t {tok_bad[0][1]}): "
                         "not the same batch")
    lam_rows = [k for k in ref if mine[k]["lambda_size"] != "-"]
    lam_bad = [k for k in lam_rows if mine[k]["lambda_size"] != ref[k]["lambda_size"]]
    report["lambda_rows"], report["lambda_mismatches"] = len(lam_rows), len(lam_bad)
    if lam_bad:
        k = lam_bad[0]
        fails.append(f"lambda_size differs at {len(lam_bad)} of {len(lam_rows)} tokens (first: line {k[0]} t {k[1]}: "
                     f"trainer {mine[k]['lambda_size']}, check {ref[k]['lambda_size']})")

    rounding = rounding_groups(mine, ref, adv_eps)
    # the most such an advantage A can move a cell: |A|·(ratio + 1)·c, c the largest normaliser check
    # applied to another token's policy term (|dloss_dlogp| / |ratio·advantage·weight|; 1 when none)
    unit = {k: r["ratio"] * r["advantage"] * r["weight"] for k, r in ref.items()}
    per_unit = [abs(ref[k]["dloss_dlogp"] / u) for k, u in unit.items() if u != 0]
    c = min(1.0, max(per_unit)) if per_unit else 1.0
    allow = {k: abs(mine[k]["advantage"]) * (ref[k]["ratio"] + 1) * c
             for _, keys in rounding.values() for k in keys}
    report["rounding_groups"] = len(rounding)
    for g, (bound, keys) in sorted(rounding.items()):
        lines = sorted({k[0] for k in keys})
        top = max(abs(mine[k]["advantage"]) for k in keys)
        print(f"rounding     group {g} (lines {lines[0]}-{lines[-1]}): rewards all {mine[keys[0]]['reward']}, "
              f"check's advantages exactly 0, the trainer's up to {top:.1e} (float32 rounding of the group "
              f"mean; bound {bound:.1e} for eps {adv_eps:g}): not a mismatch", file=out)

    def column(name, want_of, allow):
        keys = [k for k in sorted(ref) if mine[k][name] != "-"]
        if not keys:
            return None
        got = [mine[k][name] for k in keys]
        want = [want_of(ref[k], k) for k in keys]
        diffs = [max(0.0, abs(g - w) - allow.get(k, 0.0)) for g, w, k in zip(got, want, keys)]
        scale = max(abs(w) for w in want)
        rel = max(diffs) / scale if scale > 0 else (0.0 if max(diffs) == 0 else math.inf)
        report[name] = {"max_abs": max(diffs), "scale": scale, "rel": rel, "cells": len(keys)}
        top = sorted(range(len(keys)), key=lambda i: -diffs[i])[:3]
        detail = "; ".join(f"line {keys[i][0]} t {keys[i][1]}: {got[i]:.9g} vs {want[i]:.9g}" for i in top)
        ok = rel <= tol
        if not quiet or not ok:
            print(f"{name:12s} {len(keys):5d} cells  max|diff| {max(diffs):.3e}  column scale {scale:.3e}  "
                  f"relative {rel:.3e}  {'ok' if ok else 'MISMATCH'}  (largest: {detail})", file=out)
        if not ok:
            fails.append(f"{name}: max |diff| {max(diffs):.3e} is {rel:.3e} of the column scale (tolerance {tol:g})")
        return keys

    def check_adv(r, k):
        return r["advantage"] * r["weight"]

    column("advantage", check_adv, {k: abs(mine[k]["advantage"]) for k in allow})   # within the bound
    column("dloss_dlogp", lambda r, k: r["dloss_dlogp"], allow)
    loss_scale = max(abs(ref_loss), sum(abs(r["dloss_dlogp"]) for r in ref.values()))
    dl = abs(my_loss - ref_loss)
    excess = max(0.0, dl - sum(allow.values()))
    rel = excess / loss_scale if loss_scale > 0 else (0.0 if excess == 0 else math.inf)
    report["loss"] = {"trainer": my_loss, "check": ref_loss, "abs": dl, "rel": rel}
    ok = rel <= tol
    if not quiet or not ok:
        extra = f", less the rounding groups' {sum(allow.values()):.1e}" if allow else ""
        print(f"{'loss':12s} trainer {my_loss:.9g}  check {ref_loss:.9g}  |diff| {dl:.3e}{extra}  "
              f"relative {rel:.3e} (of {loss_scale:.3e})  {'ok' if ok else 'MISMATCH'}", file=out)
    if not ok:
        fails.append(f"loss: |diff| {dl:.3e} is {rel:.3e} of its scale (tolerance {tol:g})")
    if lam_rows and not quiet:
        print(f"lambda_size  {len(lam_rows):5d} cells  {len(lam_bad)} differ", file=out)
    for msg in fails:
        print("MISMATCH: " + msg, file=out)
    notes = read_caveats(trainer_path)
    report["caveats"] = notes
    if not fails and (not quiet or notes):
        verdict = f"match: {len(ref)} tokens within {tol:g}"
        if rounding:
            verdict += (f" ({len(allow)} of them in {len(rounding)} all-equal-reward groups, within float32 "
                        "rounding)")
        print(verdict + "".join(f", but {c}" for c in notes), file=out)
    return not fails, report


def main(argv=None):
    ap = argparse.ArgumentParser(description="Compare a trainer's dumped results (stepS.trl.tsv) with ./grpo "
                                 "check's output; exit 0 on a match, 1 on a mismatch, 2 on bad input.")
    ap.add_argument("trainer_tsv")
    ap.add_argument("check_output")
    ap.add_argument("--tol", type=float, default=1e-6, help="relative tolerance (default 1e-6)")
    ap.add_argument("--adv-eps", type=float, default=1e-4,
                    help="the eps the trainer adds to the std (TRL 1e-4, verl 1e-6): the rounding bound")
    ap.add_argument("--quiet", action="store_true", help="print only mismatches (and a match's caveats)")
    a = ap.parse_args(argv)
    if not (a.tol >= 0 and math.isfinite(a.tol)) or not (a.adv_eps > 0 and math.isfinite(a.adv_eps)):
        print("compare.py: --tol must be a finite number >= 0 and --adv-eps one > 0", file=sys.stderr)
        return 2
    try:
        ok, _ = compare(a.trainer_tsv, a.check_output, a.tol, quiet=a.quiet, adv_eps=a.adv_eps)
    except InputError as e:
        print(f"compare.py: {e}", file=sys.stderr)
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
