#!/usr/bin/env python3
"""Make data/countdown_test.txt from reasoning-gym's countdown generator.

Uses reasoning_gym.create_dataset('countdown', ...) with ranges matching our
generator (data/gen_countdown.py defaults), converts each item's numbers and
target to our prompt format ("7 3 5>26:"), and keeps the first --n items that
  * have numbers and target inside our ranges,
  * are solvable under OUR rules (positive integer intermediates, exact division,
    each number used exactly once; checked with the brute-force solver in
    gen_countdown.py) -- reasoning-gym's generator also makes problems whose only
    solutions need negative, zero or fractional intermediates,
  * have at least one solution short enough for grpo.c's 64-token context
    (prompt + completion <= 62 characters),
  * are not duplicates (same multiset of numbers and target) of an earlier item.
The number of items dropped for each reason is written in the header comment,
together with the reasoning-gym and sympy versions.

Output: prompts only, one per line, '#' header comments first.
Run this BEFORE generating train/val (they exclude the test problems).
"""
import argparse
import os
import sys
from importlib.metadata import version

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_countdown as gc  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=2024)
    p.add_argument("--n", type=int, default=500, help="test prompts to keep")
    p.add_argument("--min-numbers", type=int, default=3)
    p.add_argument("--max-numbers", type=int, default=4)
    p.add_argument("--min-value", type=int, default=1)
    p.add_argument("--max-value", type=int, default=20)
    p.add_argument("--min-target", type=int, default=1)
    p.add_argument("--max-target", type=int, default=100)
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                 "countdown_test.txt"))
    args = p.parse_args(argv)

    import reasoning_gym

    cfg = dict(min_numbers=args.min_numbers, max_numbers=args.max_numbers,
               min_value=args.min_value, max_value=args.max_value,
               min_target=args.min_target, max_target=args.max_target)
    # Items are generated lazily and item i depends only on (seed, i), so a large
    # size costs nothing; we stop after keeping args.n prompts.
    ds = reasoning_gym.create_dataset("countdown", seed=args.seed, size=20 * args.n, **cfg)

    kept, seen = [], set()
    dropped = {"out_of_range": 0, "unsolvable_under_our_rules": 0, "too_long": 0, "duplicate": 0}
    examples = {k: [] for k in dropped}
    i = 0
    while len(kept) < args.n:
        if i >= len(ds):
            sys.exit("ran out of reasoning-gym items; raise size")
        item = ds[i]
        i += 1
        numbers, target = list(item["metadata"]["numbers"]), int(item["metadata"]["target"])
        prompt = gc.format_prompt(numbers, target)
        reason = None
        if not (args.min_numbers <= len(numbers) <= args.max_numbers
                and all(args.min_value <= x <= args.max_value for x in numbers)
                and args.min_target <= target <= args.max_target):
            reason = "out_of_range"
        elif not gc.is_solvable(numbers, target):
            reason = "unsolvable_under_our_rules"
        elif len(prompt) + gc.shortest_solution_length(numbers, target) > gc.MAX_TEXT:
            reason = "too_long"
        elif gc.problem_key(numbers, target) in seen:
            reason = "duplicate"
        if reason:
            dropped[reason] += 1
            examples[reason].append(f"{prompt} (rg answer: {item['answer']})")
            continue
        seen.add(gc.problem_key(numbers, target))
        kept.append(prompt)

    n_drop = sum(dropped.values())
    header = [
        "# countdown test prompts for grpo.c, from reasoning-gym's countdown generator; format: prompt",
        "# made by: python3 data/make_test_split.py " + " ".join(sys.argv[1:] if argv is None else argv),
        f"# reasoning-gym {version('reasoning-gym')}, sympy {version('sympy')}: "
        f"create_dataset('countdown', seed={args.seed}, "
        + ", ".join(f"{k}={v}" for k, v in cfg.items()) + ")",
        f"# kept the first {len(kept)} usable items of indices 0..{i - 1}; dropped {n_drop}: "
        + ", ".join(f"{v} {k}" for k, v in dropped.items()),
        "# (unsolvable_under_our_rules = every solution needs a negative, zero or fractional intermediate)",
    ]
    for reason, ex in examples.items():
        for e in ex[:5]:
            header.append(f"# dropped {reason}: {e}")
    with open(args.out, "w", encoding="ascii", newline="\n") as f:
        f.write("\n".join(header + kept) + "\n")
    print(f"{args.out}: {len(kept)} prompts; dropped {dropped}", file=sys.stderr)


if __name__ == "__main__":
    main()
