#!/usr/bin/env python3
"""notes/trl/compare.py: compare a trainer's own results with `./grpo check`'s output.

    python3 notes/trl/compare.py TRAINER_TSV CHECK_OUTPUT [--tol 1e-6] [--quiet]

TRAINER_TSV (written by notes/trl/check_dump.py as stepS.trl.tsv, or by notes/verl/): `#`
comments, a header `line t token advantage lambda_size dloss_dlogp`, one row per completion
token (line = the completion's line in the check input file), then `loss <value>`. A cell may be
`-` (not produced by that trainer: not compared). CHECK_OUTPUT: what `./grpo check FILE ...`
printed (its header, one row per token, `loss`).

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


def compare(trainer_path, check_path, tol=1e-6, out=sys.stdout, quiet=False):
    """Returns (ok, report dict). Raises InputError on unreadable input."""
    mine, my_loss = read_table(trainer_path, ["line", "t", "token", "advantage", "lambda_size", "dloss_dlogp"])
    ref, ref_loss = read_table(check_path, ["line", "t", "token", "lambda_size", "weight", "advantage",
                                            "dloss_dlogp"])
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

    def column(name, want_of):
        keys = [k for k in sorted(ref) if mine[k][name] != "-"]
        if not keys:
            return None
        got = [_num(mine[k][name], trainer_path, mine[k]["_n"], name) for k in keys]
        want = [want_of(ref[k], k) for k in keys]
        diffs = [abs(g - w) for g, w in zip(got, want)]
        scale = max(abs(w) for w in want)
        worst = max(range(len(keys)), key=lambda i: diffs[i])
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

    column("advantage", check_adv)
    column("dloss_dlogp", lambda r, k: _num(r["dloss_dlogp"], check_path, r["_n"], "dloss_dlogp"))
    loss_scale = max(abs(ref_loss), sum(abs(float(r["dloss_dlogp"])) for r in ref.values()))
    dl = abs(my_loss - ref_loss)
    rel = dl / loss_scale if loss_scale > 0 else (0.0 if dl == 0 else math.inf)
    report["loss"] = {"trainer": my_loss, "check": ref_loss, "abs": dl, "rel": rel}
    ok = rel <= tol
    if not quiet or not ok:
        print(f"{'loss':12s} trainer {my_loss:.9g}  check {ref_loss:.9g}  |diff| {dl:.3e}  relative {rel:.3e} "
              f"(of {loss_scale:.3e})  {'ok' if ok else 'MISMATCH'}", file=out)
    if not ok:
        fails.append(f"loss: |diff| {dl:.3e} is {rel:.3e} of its scale (tolerance {tol:g})")
    if lam_rows and not quiet:
        print(f"lambda_size  {len(lam_rows):5d} cells  {len(lam_bad)} differ", file=out)
    for msg in fails:
        print("MISMATCH: " + msg, file=out)
    if not fails and not quiet:
        print(f"match: {len(ref)} tokens within {tol:g}", file=out)
    return not fails, report


def main(argv=None):
    ap = argparse.ArgumentParser(description="Compare a trainer's dumped results (stepS.trl.tsv) with ./grpo "
                                 "check's output; exit 0 on a match, 1 on a mismatch, 2 on bad input.")
    ap.add_argument("trainer_tsv")
    ap.add_argument("check_output")
    ap.add_argument("--tol", type=float, default=1e-6, help="relative tolerance (default 1e-6)")
    ap.add_argument("--quiet", action="store_true", help="print only mismatches")
    a = ap.parse_args(argv)
    if not (a.tol >= 0 and math.isfinite(a.tol)):
        print("compare.py: --tol must be a finite number >= 0", file=sys.stderr)
        return 2
    try:
        ok, _ = compare(a.trainer_tsv, a.check_output, a.tol, quiet=a.quiet)
    except InputError as e:
        print(f"compare.py: {e}", file=sys.stderr)
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
