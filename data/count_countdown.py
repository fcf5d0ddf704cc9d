#!/usr/bin/env python3
"""Count the distinct countdown problems of a range setting (for notes/reference.md).

A problem is a multiset of numbers and a target (problem_key() of gen_countdown.py: the
same numbers in another order are the same problem). For each multiset of k numbers from
min-value..max-value (k in min-numbers..max-numbers) it counts the targets in
min-target..max-target that the brute-force solver of gen_countdown.py can reach under our
rules. (It does not apply gen_countdown.py's 62-character limit; with 1-digit numbers, up to
5 of them, and targets up to 50 no problem comes near it.)

    python3 data/count_countdown.py --min-numbers 4 --max-numbers 4   # 16181 (today's data)
    python3 data/count_countdown.py --min-numbers 3 --max-numbers 3   # 1854
    python3 data/count_countdown.py --min-numbers 5 --max-numbers 5
"""
import argparse
import itertools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_countdown as gc  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--min-numbers", type=int, default=4)
    p.add_argument("--max-numbers", type=int, default=4)
    p.add_argument("--min-value", type=int, default=1)
    p.add_argument("--max-value", type=int, default=9)
    p.add_argument("--min-target", type=int, default=1)
    p.add_argument("--max-target", type=int, default=50)
    args = p.parse_args(argv)
    values = range(args.min_value, args.max_value + 1)
    total = 0
    for k in range(args.min_numbers, args.max_numbers + 1):
        n_k = multisets = 0
        for pool in itertools.combinations_with_replacement(values, k):
            multisets += 1
            n_k += sum(1 for t in gc.reachable(pool) if args.min_target <= t <= args.max_target)
        print(f"{k} numbers: {multisets} multisets, {n_k} distinct problems")
        total += n_k
    print(f"total: {total} distinct problems")


if __name__ == "__main__":
    main()
