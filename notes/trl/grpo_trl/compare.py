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
as rounding, not a mismatch, when every trainer advantage in it is within twice that bound; its
tokens' gradient and loss are then allowed |advantage|·(ratio + 1) more (the most a policy term
with that advantage can add).
"""
import argparse
import math
import sys


class InputError(Exception):
    pass


def read_table(path, need):
    """Rows (dict by column) keyed by (line, t), and the loss. Raises InputError with FILE:LINE."""
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
    return rows, loss


def _num(s, path, n, what):
    try:
        v = float(s)
    except ValueError:
        raise InputError(f"{path}:{n}: {what} {s!r} is not a number")
    if not math.isfinite(v):
        raise InputError(f"{path}:{n}: {what} is not finite ({s})")
    return v


def _int(s, path, n, what):
    try:
        return int(s)
    except ValueError:
        raise InputError(f"{path}:{n}: {what} {s!r} is not an integer")


def read_caveats(path):
    """The TEXT of each `# caveat: TEXT` line of a trainer dump."""
    with open(path) as f:
        return [line[len("# caveat: "):].strip() for line in f if line.startswith("# caveat: ")]


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
                or any(float(ref[k]["advantage"]) != 0 for k in keys)):
            continue
        bound = 2 * len({k[0] for k in keys}) * 2.0 ** -24 * abs(float(rewards.pop())) / adv_eps
        size = max(abs(float(mine[k]["advantage"])) for k in keys)
        if 0 < size <= bound:   # (0: nothing rounded, nothing to name)
            found[g] = (bound, keys)
    return found


def compare(trainer_path, check_path, tol=1e-6, out=sys.stdout, quiet=False, adv_eps=1e-4):
    """Returns (ok, report dict). Raises InputError on unreadable input."""
    mine, my_loss = read_table(trainer_path, ["line", "t", "token", "advantage", "lambda_size", "dloss_dlogp"])
    ref, ref_loss = read_table(check_path, ["line", "group", "t", "token", "lambda_size", "weight",
                                            "advantage", "ratio", "dloss_dlogp"])
    only_mine, only_ref = sorted(set(mine) - set(ref)), sorted(set(ref) - set(mine))
    if only_mine or only_ref:
        k = (only_mine or only_ref)[0]
        side = trainer_path if only_mine else check_path
        raise InputError(f"the two files hold different tokens: {len(only_mine)} rows only in {trainer_path}, "
                         f"{len(only_ref)} only in {check_path} (first: line {k[0]} t {k[1]} in {side}); "
                         "were they made from the same batch file?")
    fails, report = [], {}
    tok_bad = [k for k in ref if int(mine[k]["token"]) != int(ref[k]["token"])]
    if tok_bad:
        raise InputError(f"token ids differ at {len(tok_bad)} rows (first: line {tok_bad[0][0]} t {tok_bad[0][1]}): "
                         "not the same batch")
    lam_rows = [k for k in ref if mine[k]["lambda_size"] != "-"]
    lam_bad = [k for k in lam_rows if int(mine[k]["lambda_size"]) != int(ref[k]["lambda_size"])]
    report["lambda_rows"], report["lambda_mismatches"] = len(lam_rows), len(lam_bad)
    if lam_bad:
        k = lam_bad[0]
        fails.append(f"lambda_size differs at {len(lam_bad)} of {len(lam_rows)} tokens (first: line {k[0]} t {k[1]}: "
                     f"trainer {mine[k]['lambda_size']}, check {ref[k]['lambda_size']})")

    rounding = rounding_groups(mine, ref, adv_eps)
    # the most such an advantage A can move a cell: |A|·(ratio + 1)·c, c the largest normaliser check
    # applied to another token's policy term (|dloss_dlogp| / |ratio·advantage·weight|; 1 when none)
    unit = {k: float(r["ratio"]) * float(r["advantage"]) * float(r["weight"]) for k, r in ref.items()}
    per_unit = [abs(float(ref[k]["dloss_dlogp"]) / u) for k, u in unit.items() if u != 0]
    c = min(1.0, max(per_unit)) if per_unit else 1.0
    allow = {k: abs(float(mine[k]["advantage"])) * (float(ref[k]["ratio"]) + 1) * c
             for _, keys in rounding.values() for k in keys}
    report["rounding_groups"] = len(rounding)
    for g, (bound, keys) in sorted(rounding.items(), key=lambda x: int(x[0])):
        lines = sorted({k[0] for k in keys})
        top = max(abs(float(mine[k]["advantage"])) for k in keys)
        print(f"rounding     group {g} (lines {lines[0]}-{lines[-1]}): rewards all {mine[keys[0]]['reward']}, "
              f"check's advantages exactly 0, the trainer's up to {top:.1e} (float32 rounding of the group "
              f"mean; bound {bound:.1e} for eps {adv_eps:g}): not a mismatch", file=out)

    def column(name, want_of, allow):
        keys = [k for k in sorted(ref) if mine[k][name] != "-"]
        if not keys:
            return None
        got = [_num(mine[k][name], trainer_path, mine[k]["_n"], name) for k in keys]
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
        return (_num(r["advantage"], check_path, r["_n"], "advantage")
                * _num(r["weight"], check_path, r["_n"], "weight"))

    column("advantage", check_adv, {k: abs(float(mine[k]["advantage"])) for k in allow})   # within the bound
    column("dloss_dlogp", lambda r, k: _num(r["dloss_dlogp"], check_path, r["_n"], "dloss_dlogp"), allow)
    loss_scale = max(abs(ref_loss), sum(abs(float(r["dloss_dlogp"])) for r in ref.values()))
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
