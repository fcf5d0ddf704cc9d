#!/usr/bin/env python3
"""Generate countdown problems (prompt + one demonstration) for grpo.c.

Task format (fixed; grpo.c's tokenizer knows only "0123456789+-*/=,>:" and space):

    prompt      "7 3 5>26:"          numbers separated by single spaces, '>', target, ':'
    completion  "7*3=21,21+5=26"     steps "a op b=c" joined by ',', no spaces

Rules (identical to countdown_verify() in grpo.c):
  * the pool starts as the multiset of given numbers; a step "a op b=c" needs a and b
    in the pool, removes them and adds c, so every given number and every
    intermediate result is used at most once;
  * c must equal a op b exactly; results must be positive integers
    (a-b needs a>b, a/b needs b!=0 and an exact division);
  * numbers are decimal, no sign, no leading zeros, at most 6 digits;
  * after the last step the pool must hold exactly one number, equal to the target
    (so every given number is used exactly once).

Each problem: draw k numbers (k uniform in [min_numbers, max_numbers]), pick a
target reachable under the rules (see --target-mode), enumerate every solution
with the brute-force solver below and write a uniformly random one as the
demonstration.  Problems whose prompt + demonstration exceed MAX_TEXT characters
(64 tokens minus <bos> and <eos>) are dropped, as are repeated prompts (the same
numbers in another order count as a different prompt, so the 3-number/4-number
mix stays as drawn) and problems listed in --exclude files (compared as multiset
of numbers + target, so no reordering of an excluded problem gets through).

Output: one `prompt<TAB>completion` line per problem (or just `prompt` with
--prompts-only), preceded by '#' header comments describing how it was made.
Everything is driven by one seeded random.Random, so a given command line always
produces the same file.

The solver functions (apply_op, moves, reachable, solutions, ...) are imported by
data/make_test_split.py and tests/crosscheck_reasoning_gym.py.
"""
import argparse
import random
import sys
from functools import lru_cache

MAX_TEXT = 62          # prompt + completion characters (64 tokens - <bos> - <eos>)
MAX_DIGITS = 6         # numbers have at most 6 decimal digits
MAX_VALUE = 10 ** MAX_DIGITS - 1
OPS = "+-*/"


# --------------------------------------------------------------------------
# Rules and brute-force solver
# --------------------------------------------------------------------------

def apply_op(a, op, b):
    """Return a op b under our rules, or None if the step is not allowed.

    Results must be positive integers of at most MAX_DIGITS digits; division
    must be exact and by a non-zero number.
    """
    if op == "+":
        c = a + b
    elif op == "-":
        c = a - b
    elif op == "*":
        c = a * b
    elif op == "/":
        if b == 0 or a % b != 0:
            return None
        c = a // b
    else:
        raise ValueError(f"unknown operator {op!r}")
    if c <= 0 or c > MAX_VALUE:
        return None
    return c


def moves(pool):
    """Yield every distinct legal step from `pool` (a sorted tuple).

    Yields ((a, op, b, c), new_pool) with new_pool sorted.  Equal values in the
    pool are interchangeable, so each textual step is produced once; "a+b" and
    "b+a" are different texts and both are produced.
    """
    values = sorted(set(pool))
    for a in values:
        for b in values:
            if a == b and pool.count(a) < 2:
                continue
            rest = list(pool)
            rest.remove(a)
            rest.remove(b)
            for op in OPS:
                c = apply_op(a, op, b)
                if c is not None:
                    yield (a, op, b, c), tuple(sorted(rest + [c]))


@lru_cache(maxsize=200_000)
def reachable(pool):
    """Frozenset of all values the sorted tuple `pool` can be reduced to (one number left)."""
    if len(pool) == 1:
        return frozenset(pool)
    out = set()
    for _, rest in moves(pool):
        out |= reachable(rest)
    return frozenset(out)


def solutions(pool, target):
    """List of all solutions (tuples of (a, op, b, c) steps) reducing `pool` to `target`.

    `pool` is any iterable of numbers; the order of the result is deterministic.
    A pool of a single number has no solution (at least one step is required).
    """
    pool = tuple(sorted(pool))
    if len(pool) < 2:
        return []
    return _solutions(pool, target)


def _solutions(pool, target):
    if len(pool) == 1:
        return [()] if pool[0] == target else []
    out = []
    for step, rest in moves(pool):
        if target in reachable(rest):
            for tail in _solutions(rest, target):
                out.append((step,) + tail)
    return out


def is_solvable(numbers, target):
    """True if `numbers` can be combined into `target` under our rules."""
    numbers = tuple(sorted(numbers))
    return len(numbers) >= 2 and target in reachable(numbers)


def random_path_result(numbers, rng):
    """Apply uniformly random legal steps until one number is left; return it (None if stuck)."""
    pool = tuple(sorted(numbers))
    while len(pool) > 1:
        options = list(moves(pool))
        if not options:
            return None
        _, pool = rng.choice(options)
    return pool[0]


# --------------------------------------------------------------------------
# Text format
# --------------------------------------------------------------------------

def format_prompt(numbers, target):
    """'7 3 5>26:'"""
    return " ".join(str(x) for x in numbers) + ">" + str(target) + ":"


def format_completion(steps):
    """'7*3=21,21+5=26' from ((7,'*',3,21), (21,'+',5,26))"""
    return ",".join(f"{a}{op}{b}={c}" for a, op, b, c in steps)


def parse_prompt(prompt):
    """Inverse of format_prompt: '7 3 5>26:' -> ([7, 3, 5], 26). Raises ValueError."""
    if not prompt.endswith(":") or prompt.count(">") != 1:
        raise ValueError(f"malformed prompt {prompt!r}")
    left, right = prompt[:-1].split(">")
    return [int(x) for x in left.split(" ")], int(right)


def problem_key(numbers, target):
    """Order-independent identity of a problem: (sorted numbers, target)."""
    return (tuple(sorted(numbers)), target)


def read_problem_keys(path):
    """Set of problem_key()s of all prompts in a data file (comments skipped)."""
    keys = set()
    with open(path, encoding="ascii") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            keys.add(problem_key(*parse_prompt(line.split("\t")[0])))
    return keys


def shortest_solution_length(numbers, target):
    """Length in characters of the shortest solution text (None if unsolvable)."""
    sols = solutions(numbers, target)
    return min((len(format_completion(s)) for s in sols), default=None)


# --------------------------------------------------------------------------
# Generator
# --------------------------------------------------------------------------

def pick_target(numbers, args, rng):
    """Choose a reachable target in [min_target, max_target] or return None.

    target-mode 'path':    result of a random legal full combination (retried up to
                           20 times until it falls in range); targets with many
                           solutions are more likely, as in reasoning-gym.
    target-mode 'uniform': uniform over all reachable targets in range.
    """
    if args.target_mode == "path":
        for _ in range(20):
            t = random_path_result(numbers, rng)
            if t is not None and args.min_target <= t <= args.max_target:
                return t
        return None
    cands = sorted(t for t in reachable(tuple(sorted(numbers)))
                   if args.min_target <= t <= args.max_target)
    return rng.choice(cands) if cands else None


def generate(args, exclude):
    """Return (lines, stats) for args.n problems."""
    rng = random.Random(args.seed)
    seen = set()
    lines = []
    stats = {"duplicate": 0, "excluded": 0, "too_long": 0, "no_target": 0}
    while len(lines) < args.n:
        k = rng.randint(args.min_numbers, args.max_numbers)
        numbers = [rng.randint(args.min_value, args.max_value) for _ in range(k)]
        target = pick_target(numbers, args, rng)
        if target is None:
            stats["no_target"] += 1
            continue
        key = problem_key(numbers, target)
        if key in exclude:
            stats["excluded"] += 1
            continue
        prompt = format_prompt(numbers, target)
        if prompt in seen:
            stats["duplicate"] += 1
            continue
        sols = solutions(numbers, target)
        demo = format_completion(rng.choice(sols))
        if len(prompt) + len(demo) > MAX_TEXT:
            stats["too_long"] += 1
            continue
        seen.add(prompt)
        lines.append(prompt if args.prompts_only else prompt + "\t" + demo)
    return lines, stats


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--n", type=int, required=True, help="number of problems")
    p.add_argument("--min-numbers", type=int, default=3)
    p.add_argument("--max-numbers", type=int, default=4)
    p.add_argument("--min-value", type=int, default=1)
    p.add_argument("--max-value", type=int, default=20)
    p.add_argument("--min-target", type=int, default=1)
    p.add_argument("--max-target", type=int, default=100)
    p.add_argument("--target-mode", choices=["path", "uniform"], default="path")
    p.add_argument("--exclude", nargs="*", default=[],
                   help="data files whose problems (numbers multiset + target) must not be generated")
    p.add_argument("--prompts-only", action="store_true", help="write prompts without demonstrations")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    if not (2 <= args.min_numbers <= args.max_numbers):
        p.error("need 2 <= min-numbers <= max-numbers")
    if not (1 <= args.min_value <= args.max_value <= MAX_VALUE):
        p.error("need 1 <= min-value <= max-value <= 999999")
    if not (1 <= args.min_target <= args.max_target <= MAX_VALUE):
        p.error("need 1 <= min-target <= max-target <= 999999")

    exclude = set()
    for path in args.exclude:
        exclude |= read_problem_keys(path)
    lines, stats = generate(args, exclude)

    header = [
        "# countdown problems for grpo.c; format: prompt<TAB>completion "
        "(completion = one random solution among all found by the brute-force solver)"
        if not args.prompts_only else "# countdown problems for grpo.c; format: prompt",
        "# made by: python3 data/gen_countdown.py " + " ".join(sys.argv[1:] if argv is None else argv),
        f"# seed={args.seed} n={args.n} numbers={args.min_numbers}..{args.max_numbers} "
        f"values={args.min_value}..{args.max_value} targets={args.min_target}..{args.max_target} "
        f"target_mode={args.target_mode}",
        f"# skipped while generating: {stats['duplicate']} duplicates, "
        f"{stats['excluded']} in exclude files ({', '.join(args.exclude) or 'none'}), "
        f"{stats['too_long']} longer than {MAX_TEXT} chars, {stats['no_target']} draws without target in range",
    ]
    with open(args.out, "w", encoding="ascii", newline="\n") as f:
        f.write("\n".join(header + lines) + "\n")
    print(f"{args.out}: {len(lines)} problems; {stats}", file=sys.stderr)


if __name__ == "__main__":
    main()
