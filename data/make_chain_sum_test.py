#!/usr/bin/env python3
"""Make data/chain_sum_tN_test.txt from reasoning-gym's chain_sum generator.

Uses reasoning_gym.create_dataset('chain_sum', seed=..., min_terms=max_terms=N, min_digits,
max_digits, allow_negation=False), converts each item's expression ("12 + 7 - 3") to our
prompt ("12+7-3:"), checks that reasoning-gym's answer equals our left-to-right value, and
keeps the first --n items that are not duplicates of an earlier item. Nothing else is dropped:
every chain_sum problem of these ranges is expressible in our format (negative running values
are written with '-'). The header records the reasoning-gym version and what was dropped.

Output: prompts only, one per line, '#' header comments first.
Run this BEFORE generating train/val (they exclude the test prompts): data/regenerate.sh.
"""
import argparse
import os
import sys
from importlib.metadata import version

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_chain_sum as cs  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=2024)
    p.add_argument("--n", type=int, default=400)
    p.add_argument("--terms", type=int, required=True)
    p.add_argument("--min-digits", type=int, default=1)
    p.add_argument("--max-digits", type=int, default=2)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)

    import reasoning_gym

    cfg = dict(min_terms=args.terms, max_terms=args.terms, min_digits=args.min_digits,
               max_digits=args.max_digits, allow_negation=False)
    ds = reasoning_gym.create_dataset("chain_sum", seed=args.seed, size=20 * args.n, **cfg)
    kept, seen, dup, i = [], set(), 0, 0
    while len(kept) < args.n:
        if i >= len(ds):
            sys.exit("ran out of reasoning-gym items; raise size")
        item = ds[i]
        i += 1
        terms, ops = cs.parse_prompt(item["metadata"]["expression"] + ":")
        if cs.evaluate(terms, ops) != int(item["answer"]):
            sys.exit(f"item {i - 1}: reasoning-gym's answer {item['answer']} differs from ours")
        prompt = cs.format_prompt(terms, ops)
        if prompt in seen:
            dup += 1
            continue
        seen.add(prompt)
        kept.append(prompt)
    header = [
        "# chain-sum test prompts for grpo.c --task chain-sum, from reasoning-gym's chain_sum generator; "
        "format: prompt",
        "# made by: python3 data/make_chain_sum_test.py " + " ".join(sys.argv[1:] if argv is None else argv),
        f"# reasoning-gym {version('reasoning-gym')}: create_dataset('chain_sum', seed={args.seed}, "
        + ", ".join(f"{k}={v}" for k, v in cfg.items()) + ")",
        f"# kept the first {len(kept)} items of indices 0..{i - 1}; dropped {dup} duplicates",
    ]
    with open(args.out, "w", encoding="ascii", newline="\n") as f:
        f.write("\n".join(header + kept) + "\n")
    print(f"{args.out}: {len(kept)} prompts; dropped {dup} duplicates", file=sys.stderr)


if __name__ == "__main__":
    main()
