#!/usr/bin/env python3
"""Cross-check our countdown verifier against reasoning-gym's countdown scorer.

For val and test problems (data/countdown_val.txt, data/countdown_test.txt) plus
a few synthetic large-number problems, build completions of many kinds:
correct solutions from the brute-force solver (several orders per problem) and
corruptions of every failure kind (wrong arithmetic, number not offered, number
reused, intermediate reused, missing step, unused number, wrong final, division
by zero, inexact division, negative / zero / fractional intermediates, 7-digit
numbers, trailing comma / junk, empty, leading zeros, spaces, NUL bytes,
truncation, deleted characters, bare expressions).

Each completion gets three verdicts:
  ours   -- grpo.c's verifier through `./grpo verify FILE` (built with make if
            missing), or any command given with --verifier CMD, run as `CMD FILE`;
  ref    -- reference_verify() below, an independent Python implementation of
            the same rules; `ours` must equal `ref` on every completion;
  rg     -- reasoning-gym's CountdownDataset.score_answer(answer, entry), where
            answer = to_rg_expression(completion) and entry carries the numbers
            and target in entry["metadata"] (the only fields score_answer reads).
            score_answer returns 1.0 for a solution, 0.05 for a parseable wrong
            answer and 0.01 for empty / unparseable text; rg "accepts" = 1.0.

Every ours/rg disagreement is classified by explain_disagreement() from the
completion itself (not from the kind label).  The script prints a per-kind table
and the disagreement categories with explanations, and exits non-zero if
  * ours != ref anywhere, or
  * a disagreement cannot be classified, or
  * fewer than 1000 completions were checked.
"""
import argparse
import os
import random
import re
import shlex
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from fractions import Fraction
from importlib.metadata import version

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "data"))
import gen_countdown as gc  # noqa: E402

# --------------------------------------------------------------------------
# Reference implementation of our rules (independent of the C code)
# --------------------------------------------------------------------------

_NUM = rb"(0|[1-9][0-9]{0,5})"
_STEP_RE = re.compile(_NUM + rb"([-+*/])" + _NUM + rb"=" + _NUM)


def reference_verify(nums, target, text):
    """1 if bytes `text` solves (nums, target) under our rules, else 0."""
    if not text:
        return 0
    pool = Counter(nums)
    for step in text.split(b","):
        m = _STEP_RE.fullmatch(step)
        if not m:
            return 0
        a, op, b, c = int(m[1]), m[2].decode(), int(m[3]), int(m[4])
        for x in (a, b):
            if pool[x] <= 0:
                return 0
            pool[x] -= 1
        if gc.apply_op(a, op, b) != c:       # None for inexact / non-positive / >6 digits
            return 0
        pool[c] += 1
    left = [v for v, k in pool.items() for _ in range(k)]
    return int(left == [target])


# --------------------------------------------------------------------------
# Conversion of our step format into reasoning-gym's answer format
# --------------------------------------------------------------------------

# Lenient number: optional sign and decimals, so that completions written with
# reasoning-gym semantics ("3-5=-2,10--2=12", "7/2=3.5,3.5*4=14") convert too.
_LNUM = r"-?\d+(?:\.\d+)?"
_LSTEP = rf"({_LNUM})([-+*/])({_LNUM})=({_LNUM})"
_LSTEP_RE = re.compile(_LSTEP)
_LSTEPS_RE = re.compile(rf"{_LSTEP}(?:,{_LSTEP})*")


def _eval(a, op, b):
    """Exact rational a op b; None if undefined (division by zero or undefined operand)."""
    if a is None or b is None:
        return None
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    return None if b == 0 else a / b


class Conversion:
    """Result of to_rg_expression().

    answer    string given to score_answer
    steps     None if the text is not in (lenient) step format; else one dict per
              step: a, op, b (operand tokens), claim (token), value (exact true
              value of the subexpression, None if undefined), a_true / b_true
              (operand token, or the true value of the intermediate it refers to)
    """

    def __init__(self, answer, steps):
        self.answer = answer
        self.steps = steps


def to_rg_expression(nums, text):
    """Convert a completion (bytes) into one arithmetic expression for reasoning-gym.

    Each step "a op b=c" becomes "(A op B)" where A and B are the expressions of
    the pool entries whose claimed value matches the operand token (the most
    recent such entry; a given number contributes its token as written).  An
    operand that matches nothing stays a literal, so reasoning-gym sees an extra
    number.  The answer is the expression of the last step; unused pool entries
    are left out (reasoning-gym then sees missing numbers).  Text that is not in
    step format is passed through unchanged.
    """
    s = text.decode("latin-1")
    if not _LSTEPS_RE.fullmatch(s):
        return Conversion(s, None)
    pool = [(Fraction(x), None, Fraction(x)) for x in nums]   # (claim, expr or None=leaf, true value)
    steps, expr = [], None
    for m in _LSTEP_RE.finditer(s):
        a, op, b, c = m.groups()
        parts, vals, canon = [], [], []
        for tok in (a, b):
            want = Fraction(tok)
            idx = next((i for i in range(len(pool) - 1, -1, -1) if pool[i][0] == want), None)
            if idx is None:
                e, v = tok, want                                  # not in pool: literal
                canon.append(tok)
            else:
                _, e, v = pool.pop(idx)
                if e is None:
                    e = tok                                       # given number: as written
                    canon.append(tok)
                else:                                             # intermediate: its true value
                    canon.append(None if v is None else fmt_value(v))
            parts.append(f"({e})" if e.startswith("-") else e)
            vals.append(v)
        value = _eval(vals[0], op, vals[1])
        expr = f"({parts[0]}{op}{parts[1]})"
        pool.append((Fraction(c), expr, value))
        steps.append({"a": a, "op": op, "b": b, "claim": c, "value": value,
                      "a_true": canon[0], "b_true": canon[1]})
    if expr.startswith("(") and expr.endswith(")"):
        expr = expr[1:-1]
    return Conversion(expr, steps)


# --------------------------------------------------------------------------
# Disagreement classification
# --------------------------------------------------------------------------

EXPLANATIONS = {
    "bare_expression":
        "reasoning-gym's answer format is one arithmetic expression (e.g. '7*3+5'); our format "
        "requires the steps 'a op b=c', so a bare expression scores 0 with us and 1.0 with rg.",
    "fractional_intermediate":
        "rg evaluates the expression exactly with sympy rationals, so a non-integer intermediate "
        "(e.g. (7/2)*4=14) is fine for it; our rules require every division to be exact.",
    "negative_intermediate":
        "rg allows negative intermediates (e.g. 10-(3-5)=12); our rules require every result to be "
        "positive (a-b needs a>b), and our number syntax has no sign.",
    "zero_intermediate":
        "rg allows an intermediate of 0 (e.g. (5-5)+7); our rules require every result to be positive.",
    "too_many_digits":
        "rg has no size limit; our rules cap every number at 6 digits (protects the C verifier "
        "from overflow), so a 7-digit intermediate is rejected even though the final answer is right.",
    "claims_not_checked":
        "rg only sees the converted expression, never the '=c' results written in the steps "
        "(including the last one): if the expression tree is right but a written result is wrong, "
        "zero-padded, too long, truncated or has junk appended, rg accepts and we reject.",
}


def explain_disagreement(nums, target, text, conv, ours, rg_ok):
    """Name the category of an ours/rg disagreement, or None if unexplained."""
    if ours == 1 or not rg_ok:
        return None                      # we accept, rg rejects: never expected
    if conv.steps is None:
        return "bare_expression"
    values = [st["value"] for st in conv.steps]
    if any(v is None for v in values):
        return None
    if any(v.denominator != 1 for v in values):
        return "fractional_intermediate"
    if any(v < 0 for v in values):
        return "negative_intermediate"
    if any(v == 0 for v in values):
        return "zero_intermediate"
    if any(v > gc.MAX_VALUE for v in values):
        return "too_many_digits"
    # the same steps with every written intermediate result replaced by its true value
    canon = ",".join(f"{st['a_true']}{st['op']}{st['b_true']}={st['value']}" for st in conv.steps).encode()
    if reference_verify(nums, target, canon):
        return "claims_not_checked"
    return None


# --------------------------------------------------------------------------
# Completion generators
# --------------------------------------------------------------------------

def fmt_value(v):
    """Write an exact value as a number token: '12', '-2', '3.5', '2.333333'."""
    if v.denominator == 1:
        return str(v.numerator)
    return f"{float(v):.6f}".rstrip("0")


def steps_text(steps):
    return ",".join(f"{a}{op}{b}={c}" for a, op, b, c in steps).encode()


def rg_semantics_solutions(nums, target):
    """All step sequences reaching target with exact rational arithmetic (reasoning-gym's
    semantics: negative, zero and fractional intermediates allowed).  Returns
    {"negative": [...], "zero": [...], "fraction": [...]} holding the sequences whose
    only kind of non-positive-integer intermediate is that one."""
    out = {"negative": [], "zero": [], "fraction": []}

    def rec(pool, steps):
        if len(pool) == 1:
            if pool[0] == target:
                kinds = {("fraction" if v.denominator != 1 else "negative" if v < 0 else "zero")
                         for *_, v in steps if v.denominator != 1 or v <= 0}
                if len(kinds) == 1:
                    out[kinds.pop()].append(list(steps))
            return
        for i in range(len(pool)):
            for j in range(len(pool)):
                if i == j:
                    continue
                rest = [pool[k] for k in range(len(pool)) if k not in (i, j)]
                for op in gc.OPS:
                    v = _eval(pool[i], op, pool[j])
                    if v is None:
                        continue
                    steps.append((pool[i], op, pool[j], v))
                    rec(rest + [v], steps)
                    steps.pop()

    rec([Fraction(x) for x in nums], [])
    return out


def annotate(nums, sol):
    """For a valid solution, list per step which operands are given numbers ('g') or
    intermediates ('i', with the index of the producing step)."""
    pool = [(x, "g", None) for x in nums]
    src = []
    for k, (a, op, b, c) in enumerate(sol):
        row = []
        for x in (a, b):
            idx = next(i for i in range(len(pool) - 1, -1, -1) if pool[i][0] == x)
            row.append(pool.pop(idx)[1:])
        pool.append((c, "i", k))
        src.append(row)
    return src


def make_completions(nums, target, rng, semantic_budget):
    """Yield (kind, completion bytes) for one problem."""
    sols = gc.solutions(nums, target)
    if not sols:
        return
    picks = rng.sample(sols, min(3, len(sols)))
    for s in picks:                                              # several orders
        yield "correct", steps_text(s)
    sol = list(picks[0])
    good = steps_text(sol)
    src = annotate(nums, sol)
    T = target

    # wrong arithmetic on an intermediate, carried forward consistently
    if len(sol) >= 2:
        k = rng.randrange(len(sol) - 1)
        a, op, b, c = sol[k]
        c2 = max(1, c + rng.choice([-2, -1, 1, 2]))
        if c2 == c:
            c2 = c + 1
        bad = [list(st) for st in sol]
        bad[k][3] = c2
        for j in range(k + 1, len(sol)):
            hit = [n for n in (0, 1) if src[j][n] == ("i", k)]
            if hit:
                bad[j][0 if hit[0] == 0 else 2] = c2
                break
        yield "wrong_arith_intermediate", steps_text(bad)

    # wrong arithmetic in the last step, claim still = target
    a, op, b, c = sol[-1]
    for op2 in rng.sample(gc.OPS, 4):
        if op2 != op and gc.apply_op(a, op2, b) != T:
            yield "wrong_arith_final", steps_text(sol[:-1] + [(a, op2, b, T)])
            break

    given_slots = [(j, n) for j in range(len(sol)) for n in (0, 1) if src[j][n][0] == "g"]

    def set_operand(steps, j, n, v):
        st = list(steps[j])
        st[0 if n == 0 else 2] = v
        out = [tuple(x) for x in steps]
        out[j] = tuple(st)
        return out

    # number not offered
    j, n = rng.choice(given_slots)
    v = rng.choice([x for x in range(1, 31) if x not in nums])
    yield "number_not_offered", steps_text(set_operand(sol, j, n, v))

    # given number used twice: a later given operand replaced by an earlier-used given value
    once = [x for x in nums if nums.count(x) == 1]
    for (j1, n1) in given_slots:
        used = sol[j1][0 if n1 == 0 else 2]
        later = [(j, n) for (j, n) in given_slots if (j, n) > (j1, n1)
                 and sol[j][0 if n == 0 else 2] != used]
        if used in once and later:
            j, n = rng.choice(later)
            yield "given_used_twice", steps_text(set_operand(sol, j, n, used))
            break

    # intermediate used twice: a later given operand replaced by an already consumed intermediate
    cands = []
    for k in range(len(sol)):
        consumer = next((j for j in range(len(sol)) if ("i", k) in src[j]), None)
        if consumer is None:
            continue
        cands += [(j, n, sol[k][3]) for (j, n) in given_slots
                  if j > consumer and sol[j][0 if n == 0 else 2] != sol[k][3]]
    if cands:
        j, n, v = rng.choice(cands)
        yield "intermediate_used_twice", steps_text(set_operand(sol, j, n, v))

    yield "missing_step", steps_text(sol[:-1])

    # all given numbers but one reach the target
    for drop in rng.sample(range(len(nums)), len(nums)):
        sub = nums[:drop] + nums[drop + 1:]
        if len(sub) >= 2:
            sub_sols = gc.solutions(sub, T)
            if sub_sols:
                yield "unused_number", steps_text(rng.choice(sub_sols))
                break

    # a complete legal combination with the wrong result
    for _ in range(20):
        pool, steps = tuple(sorted(nums)), []
        while len(pool) > 1:
            st, pool = rng.choice(list(gc.moves(pool)))
            steps.append(st)
        if pool[0] != T:
            yield "wrong_final", steps_text(steps)
            break

    # division by zero: a real zero (v-v) when some value is duplicated, else a literal 0
    dup = [x for x in set(nums) if nums.count(x) >= 2]
    if dup and len(nums) >= 3:
        x = dup[0]
        rest = list(nums)
        rest.remove(x)
        rest.remove(x)
        y = rest.pop(0)
        steps = [(x, "-", x, 0), (y, "/", 0, 0)]
        acc = 0
        for z in rest:
            steps.append((acc, "+", z, acc + z))
            acc += z
        yield "division_by_zero", steps_text(steps)
    else:
        j = rng.randrange(len(sol))
        a, op, b, c = sol[j]
        yield "division_by_zero", steps_text(sol[:j] + [(a, "/", 0, c)] + sol[j + 1:])

    # inexact division replacing a step (claim = floor), rest unchanged
    opts = [j for j, (a, op, b, c) in enumerate(sol) if b and a % b]
    if opts:
        j = rng.choice(opts)
        a, op, b, c = sol[j]
        yield "inexact_division", steps_text(sol[:j] + [(a, "/", b, a // b)] + sol[j + 1:])

    # reasoning-gym-valid solutions with negative / zero / fractional intermediates
    if semantic_budget["budget"] > 0:
        semantic_budget["budget"] -= 1
        alt = rg_semantics_solutions(nums, T)
        if alt["fraction"]:
            s = rng.choice(alt["fraction"])
            yield "fractional_intermediate", steps_text(
                [(fmt_value(a), op, fmt_value(b), fmt_value(c)) for a, op, b, c in s])
            floors = {}
            fl = lambda v: floors.get(v, v.numerator // v.denominator)   # noqa: E731
            out = []
            for a, op, b, c in s:
                out.append((fl(a), op, fl(b), fl(c)))
                floors[c] = fl(c)
            yield "inexact_division_floored", steps_text(out)
        for kind in ("negative", "zero"):
            if alt[kind]:
                s = rng.choice(alt[kind])
                yield f"{kind}_intermediate", steps_text(
                    [(fmt_value(a), op, fmt_value(b), fmt_value(c)) for a, op, b, c in s])

    # text-level corruptions of a correct solution
    yield "trailing_comma", good + b","
    junk = "".join(rng.choice("0123456789+-*/=,>: ") for _ in range(rng.randint(1, 3)))
    yield "trailing_junk", good + junk.encode()
    yield "empty", b""
    toks = [m.span() for m in re.finditer(rb"\d+", good)]
    st, _ = rng.choice(toks)
    yield "leading_zero", good[:st] + b"0" + good[st:]
    yield "seven_digits_padded", good[:st] + b"0" * 6 + good[st:]
    p = rng.randrange(len(good) + 1)
    yield "space", good[:p] + b" " + good[p:]
    p = rng.randrange(1, len(good))
    yield "embedded_nul", good[:p] + b"\0" + good[p:]
    yield "truncated", good[:rng.randrange(1, len(good))]
    p = rng.randrange(len(good))
    yield "deleted_char", good[:p] + good[p + 1:]
    expr = to_rg_expression(nums, good).answer
    yield "bare_expression", expr.encode()


def big_number_problems(rng, k):
    """Synthetic problems solvable under our rules whose natural solution has a 7-digit
    intermediate: 'a b b>a:' with a*b >= 10**6, solved as a*b=P,P/b=a."""
    out = []
    while len(out) < k:
        a, b = rng.randint(1000, 9999), rng.randint(1000, 9999)
        if a * b >= 10 ** 6:
            out.append(([a, b, b], a, [(a, "*", b, a * b), (a * b, "/", b, a)]))
    return out


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------

def read_prompts(path):
    out = []
    with open(path, encoding="ascii") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            out.append(gc.parse_prompt(line.rstrip("\n").split("\t")[0]))
    return out


def run_verifier(cmd, items):
    """Run cmd (argument list) + [FILE] on prompt<TAB>completion lines, in the caller's
    directory; return the list of float rewards."""
    with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as f:
        for nums, target, _, text in items:
            f.write(gc.format_prompt(nums, target).encode() + b"\t" + text + b"\n")
        path = f.name
    try:
        res = subprocess.run(cmd + [path], capture_output=True)
        if res.returncode != 0:
            sys.exit(f"verifier {' '.join(cmd)} failed (exit {res.returncode}): {res.stderr.decode(errors='replace').strip()}")
    finally:
        os.unlink(path)
    out = [float(x) for x in res.stdout.decode().split()]
    if len(out) != len(items):
        sys.exit(f"verifier printed {len(out)} rewards for {len(items)} lines")
    return out


def default_verifier():
    """[ROOT/grpo, "verify"] (countdown_verify in grpo.c), built with make if missing."""
    exe = os.path.join(ROOT, "grpo")
    if not os.path.exists(exe):
        subprocess.run(["make", "-C", ROOT, "grpo"], check=True)
    return [exe, "verify"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--verifier", help='command run as `CMD FILE`, e.g. "./grpo verify" '
                                      "(default: ./grpo verify, built if needed)")
    p.add_argument("--val", default=os.path.join(ROOT, "data", "countdown_val.txt"))
    p.add_argument("--test", default=os.path.join(ROOT, "data", "countdown_test.txt"))
    p.add_argument("--problems", type=int, default=150, help="problems taken from each of val and test")
    p.add_argument("--rg-semantic-problems", type=int, default=150,
                   help="problems searched for negative/zero/fractional-intermediate solutions")
    p.add_argument("--big", type=int, default=20, help="synthetic 7-digit-intermediate problems")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--markdown", help="also write the tables as markdown to this file")
    args = p.parse_args(argv)

    import reasoning_gym
    rg_ds = reasoning_gym.create_dataset("countdown", seed=0, size=1)
    rng = random.Random(args.seed)

    problems = read_prompts(args.val)[:args.problems] + read_prompts(args.test)[:args.problems]
    items = []                                          # (nums, target, kind, text)
    semantic_budget = {"budget": args.rg_semantic_problems}
    valid_corruptions = 0
    for nums, target in problems:
        for kind, text in make_completions(nums, target, rng, semantic_budget):
            if kind != "correct" and reference_verify(nums, target, text):
                valid_corruptions += 1          # a corruption that happens to be a solution
                continue
            items.append((nums, target, kind, text))
    for nums, target, sol in big_number_problems(rng, args.big):
        items.append((nums, target, "seven_digit_intermediate", steps_text(sol)))

    ours = run_verifier(shlex.split(args.verifier) if args.verifier else default_verifier(), items)

    per_kind = defaultdict(Counter)
    categories = defaultdict(lambda: {"n": 0, "kinds": Counter(), "example": None})
    mismatches, unexplained = [], []
    for (nums, target, kind, text), o in zip(items, ours):
        ref = reference_verify(nums, target, text)
        if o != ref:
            mismatches.append((nums, target, kind, text, o, ref))
        conv = to_rg_expression(nums, text)
        entry = {"question": "", "answer": "", "metadata": {"numbers": list(nums), "target": target}}
        score = rg_ds.score_answer(conv.answer, entry)
        rg_ok = score == 1.0
        c = per_kind[kind]
        c["n"] += 1
        c["ours"] += o == 1
        c["rg"] += rg_ok
        c[f"rg={score:g}"] += 1
        if (o == 1) == rg_ok:
            c["agree"] += 1
            continue
        c["disagree"] += 1
        cat = explain_disagreement(nums, target, text, conv, o, rg_ok)
        ex = f"{gc.format_prompt(nums, target)} {text!r} -> rg answer {conv.answer!r}: ours {o:g}, rg {score:g}"
        if cat is None:
            unexplained.append(ex)
            continue
        categories[cat]["n"] += 1
        categories[cat]["kinds"][kind] += 1
        categories[cat]["example"] = categories[cat]["example"] or ex

    # ---- report ----
    lines = [f"reasoning-gym {version('reasoning-gym')}, sympy {version('sympy')}; "
             f"verifier: {args.verifier or './grpo verify'}; {len(items)} completions on "
             f"{len(problems)} val/test problems + {args.big} synthetic large-number problems "
             f"({valid_corruptions} corruptions that happened to be valid solutions were skipped)",
             "rg scores: 1 = solved, 0.05 = parseable but wrong, 0.01 = empty or unparseable", ""]
    hdr = ["kind", "n", "ours=1", "rg=1", "agree", "disagree", "rg scores"]
    rows = []
    tot = Counter()
    for kind, c in per_kind.items():
        scores = " ".join(f"{k[3:]}:{v}" for k, v in sorted(c.items()) if k.startswith("rg="))
        rows.append([kind, c["n"], c["ours"], c["rg"], c["agree"], c["disagree"], scores])
        for k in ("n", "ours", "rg", "agree", "disagree"):
            tot[k] += c[k]
    rows.append(["TOTAL", tot["n"], tot["ours"], tot["rg"], tot["agree"], tot["disagree"], ""])
    widths = [max(len(str(r[i])) for r in rows + [hdr]) for i in range(len(hdr))]
    table = ["| " + " | ".join(str(x).ljust(w) for x, w in zip(r, widths)) + " |" for r in [hdr] + rows]
    table.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    lines += table + ["", "Disagreement categories (ours rejects, reasoning-gym accepts):", ""]
    for cat, d in sorted(categories.items(), key=lambda kv: -kv[1]["n"]):
        kinds = ", ".join(f"{k} {v}" for k, v in d["kinds"].most_common())
        lines += [f"- **{cat}** ({d['n']}; kinds: {kinds}): {EXPLANATIONS[cat]}",
                  f"  e.g. `{d['example']}`"]
    lines += ["", f"ours vs Python reference mismatches: {len(mismatches)}",
              f"unexplained disagreements: {len(unexplained)}"]
    for m in mismatches[:20]:
        lines.append(f"  MISMATCH {m}")
    for u in unexplained[:20]:
        lines.append(f"  UNEXPLAINED {u}")
    report = "\n".join(lines)
    print(report)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(report + "\n")
    if mismatches or unexplained or len(items) < 1000:
        why = [f"{mismatches} mismatches with the Python reference"] if mismatches else []
        why += [f"{unexplained} unexplained disagreements"] if unexplained else []
        why += [f"only {len(items)} completions (at least 1000 needed)"] if len(items) < 1000 else []
        print("FAILED: " + "; ".join(why), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
