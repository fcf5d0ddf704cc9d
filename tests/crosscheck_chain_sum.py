#!/usr/bin/env python3
"""Cross-check grpo.c's chain-sum verifier against reasoning-gym's chain_sum score_answer.

For the val and test prompts of every length setting (data/chain_sum_t{3,5,7}_{val,test}.txt)
build completions of many kinds: the correct scratchpad, scratchpads with a wrong step that
still ends at the right answer, and corruptions (wrong final answer, off by one, sign flipped,
trailing comma / space / junk, a '+' sign, leading zeros, "-0" style, no '=' at all (a bare
answer), nothing after the last '=', truncation, a deleted character, a decimal ".0", a
thousands comma, empty).

Each completion gets three verdicts:
  ours -- `./grpo verify --task chain-sum FILE` (built with make if missing);
  ref  -- reference_verify() below, an independent Python statement of the rule in grpo.c
          (the text after the last '=' must be exactly the integer answer: optional '-',
          1-7 digits, no leading zero, not "-0"); ours must equal ref everywhere;
  rg   -- reasoning-gym's ChainSumDataset.score_answer(answer, entry) with answer = the text
          after the last '=' (the whole completion when it has no '='): what a reasoning-gym
          user extracting the final answer would pass. rg "accepts" = 1.0 (it also gives
          partial credit, len(oracle)/len(answer), when the answer contains the oracle).

Every ours/rg disagreement is classified by explain() from the answer text; the script prints a
per-kind table and the disagreement classes, and exits non-zero if ours != ref anywhere, if a
disagreement is unexplained, or if fewer than 1000 completions were checked.
"""
import os
import random
import re
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from importlib.metadata import version

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "data"))
import gen_chain_sum as cs  # noqa: E402

_INT = re.compile(r"-?(0|[1-9][0-9]{0,6})")


def reference_verify(answer, text):
    """1 if the text after the last '=' of `text` is exactly the integer `answer`, else 0."""
    if "=" not in text:
        return 0
    tail = text.rsplit("=", 1)[1]
    if not _INT.fullmatch(tail) or tail == "-0":
        return 0
    return int(int(tail) == answer)


def rg_answer(text):
    return text.rsplit("=", 1)[1] if "=" in text else text


def explain(answer, text, ours, rg):
    """The class of an ours/rg disagreement, from the text itself (None: unexplained)."""
    a = rg_answer(text)
    if ours == 0 and rg == 1.0:
        if "=" not in text:
            return "no '=': rg scores the bare text as the answer; ours needs a final '= answer'"
        if a.endswith(",") or "," in a:
            return "commas after the last '=': rg strips commas (strip_commas=True); ours needs an integer"
        if a != a.strip():
            return "spaces around the answer: Python's Decimal ignores them; ours does not"
        if a.startswith("+"):
            return "a '+' sign: Decimal reads '+41'; ours writes no '+'"
        if re.fullmatch(r"-?0[0-9]+", a):
            return "leading zeros: Decimal reads '041' as 41; ours requires the canonical form"
        if a == "-0":
            return "'-0': Decimal('-0') == 0; ours requires '0'"
        if "." in a:
            return "a decimal point: Decimal('41.0') == 41; the tokenizer has no '.', so a model cannot write it"
        return None
    return None


def corruptions(terms, ops, rng):
    """(kind, completion) pairs for one problem."""
    good = cs.scratchpad(terms, ops)
    ans = cs.evaluate(terms, ops)
    head = good.rsplit("=", 1)[0]
    out = [("correct", good)]
    steps = good.split(",")
    if len(steps) >= 2:   # a wrong intermediate that the next step 'repairs'
        i = rng.randrange(len(steps) - 1)
        a_op_b, c = steps[i].rsplit("=", 1)
        bad = steps[:]
        bad[i] = f"{a_op_b}={int(c) + rng.choice([-1, 1, 10])}"
        out.append(("wrong step, right answer", ",".join(bad)))
    out += [
        ("wrong answer", f"{head}={ans + rng.choice([-7, -1, 1, 2, 10])}"),
        ("sign flipped", f"{head}={-ans}" if ans != 0 else f"{head}=1"),
        ("trailing comma", good + ","),
        ("trailing space", good + " "),
        ("leading space in answer", f"{head}= {ans}"),
        ("trailing junk", good + rng.choice(["=", "+", "1", ">", ":"])),
        ("plus sign", f"{head}=+{ans}" if ans >= 0 else f"{head}={ans}+"),
        ("leading zero", f"{head}=0{abs(ans)}" if ans >= 0 else f"{head}=-0{-ans}"),
        ("bare answer, no '='", str(ans)),
        ("nothing after '='", head + "="),
        ("truncated", good[: rng.randrange(1, len(good))]),
        ("deleted character", (lambda k: good[:k] + good[k + 1:])(rng.randrange(len(good)))),
        ("decimal .0", f"{head}={ans}.0"),
        ("thousands comma", f"{head}={ans:,}" if abs(ans) >= 1000 else f"{head}={ans},"),
        ("empty", ""),
        ("answer only after '='", f"={ans}"),
    ]
    if ans == 0:
        out.append(("minus zero", f"{head}=-0"))
    return out


def main():
    import reasoning_gym
    from reasoning_gym.arithmetic.chain_sum import ChainSumConfig, ChainSumDataset

    scorer = ChainSumDataset(ChainSumConfig(size=1, seed=0))
    rng = random.Random(7)
    rows = []   # (kind, prompt, completion, ref, rg)
    for t in (3, 5, 7):
        for split in ("val", "test"):
            path = os.path.join(ROOT, "data", f"chain_sum_t{t}_{split}.txt")
            for line in open(path, encoding="ascii"):
                if line.startswith("#") or not line.strip():
                    continue
                prompt = line.rstrip("\n").split("\t")[0]
                terms, ops = cs.parse_prompt(prompt)
                ans = cs.evaluate(terms, ops)
                entry = {"answer": str(ans), "metadata": {}}
                for kind, comp in corruptions(terms, ops, rng):
                    rows.append((kind, prompt, comp, reference_verify(ans, comp),
                                 scorer.score_answer(rg_answer(comp), entry)))
    # ours, through the binary (a completion with a '.' cannot be written to the model's
    # alphabet, but the verifier reads any bytes, so it is scored too)
    grpo = os.path.join(ROOT, "grpo")
    if not os.path.exists(grpo):
        subprocess.run(["make", "-C", ROOT, "grpo"], check=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        for _, p, c, _, _ in rows:
            f.write(f"{p}\t{c}\n")
        name = f.name
    res = subprocess.run([grpo, "verify", "--task", "chain-sum", name], capture_output=True, text=True)
    os.unlink(name)
    if res.returncode != 0:
        sys.exit(f"grpo verify failed: {res.stderr}")
    ours = [int(float(x)) for x in res.stdout.split()]
    assert len(ours) == len(rows)

    per_kind = defaultdict(Counter)
    classes, unexplained, ref_bad = Counter(), [], []
    for (kind, p, c, ref, rg), o in zip(rows, ours):
        k = per_kind[kind]
        k["n"] += 1
        k["ours"] += o
        k["rg"] += rg == 1.0
        if o != ref:
            ref_bad.append((p, c, o, ref))
        if o != (rg == 1.0):
            k["disagree"] += 1
            why = explain(int(cs.evaluate(*cs.parse_prompt(p))), c, o, rg)
            if why:
                classes[why] += 1
            else:
                unexplained.append((kind, p, c, o, rg))
    print(f"# chain-sum verifier vs reasoning-gym {version('reasoning-gym')} chain_sum score_answer: "
          f"{len(rows)} completions")
    print(f"{'kind':28s} {'n':>6s} {'ours=1':>7s} {'rg=1':>6s} {'disagree':>8s}")
    for kind, k in per_kind.items():
        print(f"{kind:28s} {k['n']:6d} {k['ours']:7d} {k['rg']:6d} {k['disagree']:8d}")
    print("\n# disagreements by cause")
    for why, n in classes.most_common():
        print(f"{n:6d}  {why}")
    for u in unexplained[:20]:
        print("UNEXPLAINED", u)
    for r in ref_bad[:20]:
        print("OURS != REF", r)
    ok = not unexplained and not ref_bad and len(rows) >= 1000
    print(f"\n{'OK' if ok else 'FAILED'}: {len(rows)} checked, {len(ref_bad)} ours != ref, "
          f"{sum(classes.values())} explained disagreements, {len(unexplained)} unexplained")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
