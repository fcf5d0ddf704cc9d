#!/usr/bin/env python3
"""Why a countdown answer is wrong: counts the greedy completions of `./grpo eval --completions`.

usage: python3 notes/failures.py FILE.tsv [FILE.tsv ...]     (standard library only)

Each FILE is `./grpo eval --completions` output on a countdown file, one line per prompt:
prompt<TAB>completion<TAB>reward<TAB>eos|no-eos. Every completion is put in one class:

  correct          the reward column is 1
  false last step  the last step writes the target, and its own arithmetic is wrong
                   (e.g. `5+2=9` for target 9): the answer "reaches" the target by a false claim
  false earlier    the last step writes the target and is right, but an earlier step is wrong,
                   a step uses a number that is not available (not given, or used up), or
                   numbers are left unused
  misses target    every step is well formed, and the last one writes another number
  malformed        not `a op b=c` steps joined by ',' (a completion cut by --max-new-tokens,
                   no-eos, is classed by its text like any other: the verifier reads the text)

The rules are the verifier's (countdown_verify in grpo.c): each step takes two available
numbers and puts its result back; + - * /, exact division, every result a positive integer;
correct when one number is left and it is the target. This script checks them again on every
line and counts the lines where it disagrees with the reward column (it should print 0).
Prints one table row per file: the count and share of each class among the wrong answers.
Then, for the false last steps whose earlier steps are right: after which step the target
could no longer be reached from the numbers left (brute force over every order and operation),
i.e. where the plan went wrong before the last step covered it up.
"""
from functools import lru_cache
import os
import re
import sys

# a number as countdown_parse_number reads it: 1 to 6 digits, no leading zero
NUM = r"(0|[1-9]\d{0,5})"
STEP = re.compile(rf"^{NUM}([-+*/]){NUM}={NUM}$")


def parse_prompt(prompt):
    m = re.match(r"^([\d ]+)>(\d+):$", prompt)
    if not m:
        raise ValueError(f"not a countdown prompt: {prompt!r}")
    return [int(x) for x in m.group(1).split()], int(m.group(2))


def apply(a, op, b):
    """a op b under the verifier's rules: a positive integer, or None (exact division only)."""
    r = {"+": a + b, "-": a - b, "*": a * b}.get(op, a // b if b and a % b == 0 else 0)
    return r if r > 0 else None


@lru_cache(maxsize=None)
def reachable(pool, target):
    """Whether the numbers in pool (a sorted tuple) can be combined, all of them, into target."""
    if len(pool) == 1:
        return pool[0] == target
    for i in range(len(pool)):
        for j in range(len(pool)):
            if i == j:
                continue
            a, b = pool[i], pool[j]
            rest = [pool[k] for k in range(len(pool)) if k != i and k != j]
            for op in "+-*/":
                r = apply(a, op, b)
                if r and reachable(tuple(sorted(rest + [r])), target):
                    return True
    return False


def dead_end(prompt, completion):
    """For a completion whose steps before the last are right: the first k (0 = the problem
    itself) after whose k steps the target cannot be reached; None when it still can before the
    last step (then only the last step was wrong)."""
    nums, target = parse_prompt(prompt)
    pool = list(nums)
    steps = [STEP.match(s) for s in completion.split(",")]
    for k in range(len(steps)):
        if not reachable(tuple(sorted(pool)), target):
            return k
        a, b, c = int(steps[k].group(1)), int(steps[k].group(3)), int(steps[k].group(4))
        if k == len(steps) - 1:
            return None
        pool.remove(a)
        pool.remove(b)
        pool.append(c)
    return None


def take(pool, a, b):
    """Removes a, then b, from pool (the numbers still available); whether both were there."""
    for x in (a, b):
        if x not in pool:
            return False
        pool.remove(x)
    return True


def classify(prompt, completion):
    """(class, verified, earlier_right): the completion's class (above, except correct), whether
    the verifier's rules accept it, and whether every step before the last takes available
    numbers and is right."""
    nums, target = parse_prompt(prompt)
    steps = [STEP.match(s) for s in completion.split(",")] if completion else [None]
    if any(s is None for s in steps):
        return "malformed", False, False
    pool = list(nums)
    earlier_right = True
    for s in steps[:-1]:
        a, op, b, c = int(s.group(1)), s.group(2), int(s.group(3)), int(s.group(4))
        earlier_right &= take(pool, a, b) and apply(a, op, b) == c
        pool.append(c)
    a, op, b, c = int(steps[-1].group(1)), steps[-1].group(2), int(steps[-1].group(3)), int(steps[-1].group(4))
    last_available = take(pool, a, b)
    last_false = apply(a, op, b) != c
    pool.append(c)
    verified = earlier_right and last_available and not last_false and len(pool) == 1 and pool[0] == target
    if c != target:
        return "misses target", verified, earlier_right
    if last_false:
        return "false last step", verified, earlier_right
    right = earlier_right and last_available and len(pool) == 1
    return ("correct" if right else "false earlier"), verified, earlier_right


CLASSES = ["false last step", "false earlier", "misses target", "malformed"]


def main(paths):
    print(f"{'file':<40} {'n':>4} {'correct':>8} " + " ".join(f"{c:>16}" for c in CLASSES) + "  disagree")
    ends = []
    for path in paths:
        where = {}
        counts = {c: 0 for c in CLASSES}
        n = correct = disagree = 0
        if not os.path.isfile(path):
            sys.exit(f"failures.py: {path}: no such file (./grpo eval --completions FILE writes one)")
        with open(path) as f:
            for lineno, line in enumerate(f, 1):
                parts = line.rstrip("\n").split("\t")
                if len(parts) != 4 or parts[3] not in ("eos", "no-eos"):
                    sys.exit(f"{path}:{lineno}: expected prompt<TAB>completion<TAB>reward<TAB>eos|no-eos")
                prompt, completion, reward, end = parts
                try:
                    cls, verified, earlier_right = classify(prompt, completion)
                    reward = float(reward)
                except ValueError as e:
                    sys.exit(f"{path}:{lineno}: {e} (failures.py reads countdown's completions)")
                n += 1
                if reward == 1.0:
                    correct += 1
                    disagree += not verified
                else:
                    disagree += verified
                    counts[cls if cls != "correct" else "false earlier"] += 1
                    if cls == "false last step" and earlier_right:
                        k = dead_end(prompt, completion)
                        where[k] = where.get(k, 0) + 1
        wrong = max(n - correct, 1)
        cells = " ".join(f"{counts[c]:>6} ({100 * counts[c] / wrong:4.1f}%)" for c in CLASSES)
        print(f"{path[-40:]:<40} {n:>4} {correct:>8} {cells}  {disagree:>8}")
        ends.append((path, where))
    print("\nfalse last steps whose earlier steps are right: the step after which the target was out of reach")
    print(f"{'file':<40} {'problem':>8} {'step 1':>8} {'step 2':>8} {'step 3+':>8} {'never':>8}")
    for path, where in ends:
        later = sum(v for k, v in where.items() if k is not None and k >= 3)
        print(f"{path[-40:]:<40} {where.get(0, 0):>8} {where.get(1, 0):>8} {where.get(2, 0):>8} {later:>8} "
              f"{where.get(None, 0):>8}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
