#!/usr/bin/env python3
"""Generate chain-sum problems (prompt + scratchpad demonstration) for grpo.c's --task chain-sum.

The problems are those of reasoning-gym's `chain_sum` generator (reasoning_gym/arithmetic/
chain_sum.py, ChainSumDataset._generate_task): num_terms terms, all with the same number of
digits num_digits (drawn per problem from min..max digits; 1 digit means 0..9, d digits
10^(d-1)..10^d-1), joined by '+' or '-' drawn uniformly, evaluated left to right. This script
re-implements that draw with its own seeded random.Random (train and val: no reasoning-gym
needed); data/make_chain_sum_test.py takes the test split from reasoning-gym itself.

Task format (grpo.c's tokenizer knows only "0123456789+-*/=,>:" and space):

    prompt      "12+7-3+25:"          the expression without spaces, then ':'
    completion  "12+7=19,19-3=16,16+25=41"
                one step "a op b=c" per operator, left to right, joined by ',': a is the running
                value (the first term, then the previous step's c), b the next term, c = a op b.

Running values may be negative (terms are not: reasoning-gym's allow_negation=False); a negative
value is written with a leading '-' (tokens '-' then digits): "3-8=-5,-5+2=-3". The tokenizer
has '-', so nothing is avoided and no range is filtered.

The verifier (chain_sum_verify in grpo.c) reads only the number after the last '=' and compares
it with the answer (the sum); see notes/chain-sum.md for the rule on malformed completions.

The length knob is the number of terms (--terms): k terms give k-1 steps. Each output file
holds problems of one setting; data/regenerate.sh writes the settings 3, 5 and 7 terms.
Problems listed in --exclude files (compared by prompt text, which is the problem) are not
generated, nor are repeated prompts.

Output: one `prompt<TAB>completion` line per problem (just `prompt` with --prompts-only),
preceded by '#' header comments describing how it was made. One seeded random.Random drives
everything, so a given command line always produces the same file.
"""
import argparse
import random
import sys


def draw_problem(rng, min_terms, max_terms, min_digits, max_digits):
    """(terms, ops) drawn as reasoning-gym's chain_sum draws them (allow_negation=False)."""
    num_terms = rng.randint(min_terms, max_terms)
    num_digits = rng.randint(min_digits, max_digits)
    lo = 0 if num_digits == 1 else 10 ** (num_digits - 1)
    hi = 10 ** num_digits - 1
    terms = [rng.randint(lo, hi) for _ in range(num_terms)]
    ops = [rng.choice(["+", "-"]) for _ in range(num_terms - 1)]
    return terms, ops


def evaluate(terms, ops):
    """The left-to-right value of the expression."""
    v = terms[0]
    for op, t in zip(ops, terms[1:]):
        v = v + t if op == "+" else v - t
    return v


def format_prompt(terms, ops):
    """'12+7-3+25:' from ([12, 7, 3, 25], ['+', '-', '+'])"""
    s = str(terms[0])
    for op, t in zip(ops, terms[1:]):
        s += op + str(t)
    return s + ":"


def parse_prompt(prompt):
    """Inverse of format_prompt (also accepts reasoning-gym's spaced expression + ':'). ValueError if malformed."""
    p = prompt.replace(" ", "")
    if not p.endswith(":"):
        raise ValueError(f"malformed prompt {prompt!r}")
    body = p[:-1]
    terms, ops, cur = [], [], ""
    for ch in body:
        if ch.isdigit():
            cur += ch
        elif ch in "+-" and cur:
            terms.append(int(cur))
            ops.append(ch)
            cur = ""
        else:
            raise ValueError(f"malformed prompt {prompt!r}")
    if not cur:
        raise ValueError(f"malformed prompt {prompt!r}")
    terms.append(int(cur))
    return terms, ops


def scratchpad(terms, ops):
    """'12+7=19,19-3=16,16+25=41': one step per operator, left to right."""
    steps, v = [], terms[0]
    for op, t in zip(ops, terms[1:]):
        c = v + t if op == "+" else v - t
        steps.append(f"{v}{op}{t}={c}")
        v = c
    return ",".join(steps)


def read_prompts(path):
    """Set of the prompts (first field) of a data file, comments skipped."""
    out = set()
    with open(path, encoding="ascii") as f:
        for line in f:
            line = line.rstrip("\n")
            if line and not line.startswith("#"):
                out.add(line.split("\t")[0])
    return out


def distinct_problems(terms, min_digits, max_digits):
    """How many distinct prompts one setting can produce: per digit count d, values^terms x 2^(terms-1)."""
    total = 0
    for d in range(min_digits, max_digits + 1):
        values = 10 if d == 1 else 9 * 10 ** (d - 1)
        total += values ** terms * 2 ** (terms - 1)
    return total


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--n", type=int, required=True, help="number of problems")
    p.add_argument("--terms", type=int, required=True, help="terms per problem (the length knob)")
    p.add_argument("--min-digits", type=int, default=1)
    p.add_argument("--max-digits", type=int, default=2)
    p.add_argument("--exclude", nargs="*", default=[], help="data files whose prompts must not be generated")
    p.add_argument("--prompts-only", action="store_true", help="write prompts without demonstrations")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    if not 2 <= args.terms <= 8:
        p.error("need 2 <= terms <= 8 (grpo.c reads at most 8 numbers a prompt, MAX_NUMS)")
    if not 1 <= args.min_digits <= args.max_digits <= 4:
        p.error("need 1 <= min-digits <= max-digits <= 4")
    exclude = set()
    for path in args.exclude:
        exclude |= read_prompts(path)
    rng = random.Random(args.seed)
    seen, lines = set(), []
    stats = {"duplicate": 0, "excluded": 0}
    while len(lines) < args.n:
        terms, ops = draw_problem(rng, args.terms, args.terms, args.min_digits, args.max_digits)
        prompt = format_prompt(terms, ops)
        if prompt in exclude:
            stats["excluded"] += 1
            continue
        if prompt in seen:
            stats["duplicate"] += 1
            continue
        seen.add(prompt)
        lines.append(prompt if args.prompts_only else prompt + "\t" + scratchpad(terms, ops))
    longest = max(len(l) for l in lines)
    header = [
        "# chain-sum problems for grpo.c --task chain-sum; format: prompt<TAB>completion "
        "(completion = the left-to-right scratchpad)" if not args.prompts_only
        else "# chain-sum problems for grpo.c --task chain-sum; format: prompt",
        "# made by: python3 data/gen_chain_sum.py " + " ".join(sys.argv[1:] if argv is None else argv),
        f"# seed={args.seed} n={args.n} terms={args.terms} digits={args.min_digits}..{args.max_digits} "
        f"(reasoning-gym chain_sum's draw); distinct problems of this setting: "
        f"{distinct_problems(args.terms, args.min_digits, args.max_digits)}",
        f"# skipped while generating: {stats['duplicate']} duplicates, {stats['excluded']} in exclude files "
        f"({', '.join(args.exclude) or 'none'}); longest line {longest} characters",
    ]
    with open(args.out, "w", encoding="ascii", newline="\n") as f:
        f.write("\n".join(header + lines) + "\n")
    print(f"{args.out}: {len(lines)} problems; {stats}; longest line {longest}", file=sys.stderr)


if __name__ == "__main__":
    main()
