#!/usr/bin/env python3
"""notes/verl/test_verl.py: the λ-GRPO recipe (lambda_grpo_verl.py) at function level, with verl's
own functions, against `./grpo check --objective lambda-grpo` (and GRPO against --objective grpo).

    python3 notes/verl/test_verl.py [--grpo ./grpo]

Needs verl importable on CPU: pip install --no-deps verl==0.9.1, plus omegaconf tensordict
codetiming hydra-core ray orjson pillow (notes/verl/requirements.txt); no GPU, no Ray cluster,
no vLLM. Called for real: core_algos.compute_grpo_outcome_advantage (inside the recipe's
estimator, reached through verl's registry get_adv_estimator_fn("lambda_grpo")),
compute_policy_loss_vanilla (→ agg_loss) with a real ActorConfig, kl_penalty(..., "low_var_kl")
and agg_loss for the KL term; the sum pg_loss + kl_loss_coef · kl_loss is composed as verl's
ppo_loss does, with the recipe's 1/|λ| multiplied into kld for λ-GRPO at β > 0 (the actor-side
change β > 0 needs). Gradients by autograd on log_prob (float32, as verl). Batch: 4 prompts × 6
responses, rows shuffled (uid not contiguous), shared prefixes, duplicates, a strict prefix,
binary rewards; one padded width T. Last line: `N passed, N failed`.
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "notes", "trl", "grpo_trl"))

import torch  # noqa: E402

import compare  # noqa: E402  (notes/trl/grpo_trl/compare.py)
import lambda_grpo_verl  # noqa: E402

RESULTS = []


def record(name, ok, detail=""):
    RESULTS.append(ok)
    print(f"{'ok  ' if ok else 'FAIL'} {name}" + (f": {detail}" if detail else ""), flush=True)


def make_batch(seed=0, groups=4, k=6, T=7):
    rng = random.Random(seed)
    rows = []
    for g in range(groups):
        uid = f"prompt-{rng.randrange(10**6)}"
        stems = [[rng.randrange(2, 6) for _ in range(rng.randint(1, 3))] for _ in range(2)]
        comps = []
        for j in range(k):
            c = list(rng.choice(stems)) + [rng.randrange(2, 6) for _ in range(rng.randint(0, T - 3))]
            comps.append(c[:T])
        comps[1] = list(comps[0])                   # a duplicate
        comps[2] = comps[0][:max(1, len(comps[0]) - 1)]   # a strict prefix (or a duplicate)
        for c in comps:
            rows.append((uid, c, float(rng.random() < 0.5)))
        if all(r[2] == rows[-1][2] for r in rows[-k:]):   # keep a signal in every group
            rows[-1] = (rows[-1][0], rows[-1][1], 1.0 - rows[-1][2])
    rng.shuffle(rows)
    bs = len(rows)
    responses = torch.zeros((bs, T), dtype=torch.int64)
    mask = torch.zeros((bs, T), dtype=torch.float32)
    rewards = torch.zeros((bs, T), dtype=torch.float32)
    uid = []
    for i, (u, c, r) in enumerate(rows):
        responses[i, :len(c)] = torch.tensor(c)
        mask[i, :len(c)] = 1
        rewards[i, len(c) - 1] = r                   # verl: the score on the last response token
        uid.append(u)
    import numpy as np
    uid = np.array(uid, dtype=object)

    def prefix_value(i, t, salt):                    # log-probs as functions of the token prefix
        h = random.Random(zlib.crc32(repr((uid[i], responses[i, :t + 1].tolist(), salt)).encode()))
        return -0.2 - 2.0 * h.random()
    logp = torch.tensor([[prefix_value(i, t, 0) if t < mask[i].sum() else 0.0 for t in range(T)] for i in range(bs)])
    old = logp + 0.3 * (torch.rand((bs, T), generator=torch.Generator().manual_seed(seed)) - 0.5) * mask
    ref = logp + 0.4 * (torch.rand((bs, T), generator=torch.Generator().manual_seed(seed + 1)) - 0.5) * mask
    return dict(responses=responses, response_mask=mask, token_level_rewards=rewards, uid=uid,
                logp=logp.float(), old=old.float(), ref=ref.float())


def fmt(xs):
    return ",".join(f"{float(x):.9g}" for x in xs)


def verl_step(b, lam, agg, beta, norm_std, clip_high, plant=None):
    from omegaconf import OmegaConf
    from verl.trainer.ppo import core_algos
    from verl.workers.config import ActorConfig
    mask = b["response_mask"]
    if lam:
        est = core_algos.get_adv_estimator_fn("lambda_grpo")
        adv, _ = est(token_level_rewards=b["token_level_rewards"], response_mask=mask, index=b["uid"],
                     responses=b["responses"] if plant is None else plant(b["responses"]),
                     norm_adv_by_std_in_grpo=norm_std)
    else:
        adv, _ = core_algos.compute_grpo_outcome_advantage(token_level_rewards=b["token_level_rewards"],
                                                           response_mask=mask, index=b["uid"],
                                                           norm_adv_by_std_in_grpo=norm_std)
    cfg = ActorConfig(strategy="fsdp", rollout_n=6, clip_ratio=0.2, clip_ratio_low=0.2, clip_ratio_high=clip_high,
                      loss_agg_mode=agg, use_kl_loss=beta > 0, kl_loss_coef=beta, kl_loss_type="low_var_kl",
                      ppo_micro_batch_size_per_gpu=1)
    logp = b["logp"].clone().requires_grad_(True)
    pg_loss, _ = core_algos.compute_policy_loss_vanilla(old_log_prob=b["old"], log_prob=logp, advantages=adv,
                                                        response_mask=mask.bool(), loss_agg_mode=agg, config=cfg)
    loss = pg_loss
    if beta > 0:   # as verl's ppo_loss: policy_loss += agg_loss(kl_penalty(...)) * kl_loss_coef
        kld = core_algos.kl_penalty(logprob=logp, ref_logprob=b["ref"], kl_penalty="low_var_kl")
        if lam:    # the recipe's actor-side change for β > 0: the KL term weighted by 1/|λ| too
            kld = kld * lambda_grpo_verl.lambda_weights(b["responses"], mask, b["uid"])
        loss = loss + core_algos.agg_loss(loss_mat=kld, loss_mask=mask.bool(), loss_agg_mode=agg,
                                          **cfg.global_batch_info) * beta
    loss.backward()
    return adv, logp.grad, float(loss.detach())


def write_files(b, adv, grad, loss, lam, d, name, lambda_sizes):
    txt, tsv = os.path.join(d, name + ".txt"), os.path.join(d, name + ".verl.tsv")
    gid = {u: g for g, u in enumerate(dict.fromkeys(b["uid"]))}
    with open(txt, "w") as f, open(tsv, "w") as g:
        g.write("line\tt\ttoken\tadvantage\tlambda_size\tdloss_dlogp\n")
        for i in range(b["responses"].size(0)):
            n = int(b["response_mask"][i].sum())
            f.write(f"group={gid[b['uid'][i]]} reward={float(b['token_level_rewards'][i].sum()):.9g} "
                    f"tokens={','.join(str(int(t)) for t in b['responses'][i, :n])} logp={fmt(b['logp'][i, :n])} "
                    f"logp_old={fmt(b['old'][i, :n])} logp_ref={fmt(b['ref'][i, :n])}\n")
            for t in range(n):
                ls = int(lambda_sizes[i, t]) if lam else "-"
                g.write(f"{i + 1}\t{t}\t{int(b['responses'][i, t])}\t{float(adv[i, t]):.9g}\t{ls}\t"
                        f"{float(grad[i, t]):.9g}\n")
        g.write(f"loss\t{loss:.9g}\n")
    return txt, tsv


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--grpo", default=os.path.join(ROOT, "grpo"))
    a = ap.parse_args()
    if not os.access(a.grpo, os.X_OK):
        sys.exit(f"test_verl.py: {a.grpo} not found: run `make grpo` first")
    try:
        from verl.trainer.ppo import core_algos  # noqa: F401
    except ImportError as e:
        sys.exit(f"test_verl.py: verl does not import ({e}): see notes/verl/requirements.txt")
    lambda_grpo_verl.register()
    b = make_batch()
    sizes = lambda_grpo_verl.lambda_sizes(b["responses"], b["response_mask"], b["uid"])
    shared = int((sizes > 1).sum())
    d = tempfile.mkdtemp(prefix="test_verl.")
    T = b["responses"].size(1)
    cases = []
    for lam in (True, False):
        for agg in ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm"):
            cases.append((lam, agg, 0.0, True, 0.28))
        cases += [(lam, "token-mean", 0.04, True, 0.28), (lam, "seq-mean-token-mean", 0.04, False, 0.2)]
    for lam, agg, beta, norm_std, clip_high in cases:
        name = f"{'lambda' if lam else 'grpo'}_{agg}_beta{beta}_{'std' if norm_std else 'nostd'}"
        adv, grad, loss = verl_step(b, lam, agg, beta, norm_std, clip_high)
        txt, tsv = write_files(b, adv, grad, loss, lam, d, name, sizes)
        opts = ["--objective", "lambda-grpo" if lam else "grpo", "--loss-agg", agg, "--adv-eps", "1e-6",
                "--adv-std", "sample" if norm_std else "none", "--clip-eps-low", "0.2", "--clip-eps-high",
                str(clip_high), "--beta", str(beta), "--max-new-tokens", str(T)]
        out = os.path.join(d, name + ".check.tsv")
        with open(out, "w") as f:
            rc = subprocess.run([a.grpo, "check", txt, *opts], stdout=f, stderr=subprocess.PIPE, text=True).returncode
        if rc != 0:
            record(name, False, f"./grpo check exit {rc}")
            continue
        import io
        ok, rep = compare.compare(tsv, out, out=io.StringIO(), quiet=True)
        record(f"verl {name} vs ./grpo check {' '.join(opts[:4])}", ok,
               f"{rep['dloss_dlogp']['cells']} tokens ({shared} with |λ| > 1), rel. diff dloss "
               f"{rep['dloss_dlogp']['rel']:.1e}, loss {rep['loss']['rel']:.1e}, adv {rep['advantage']['rel']:.1e}"
               + (f", |λ| {rep['lambda_rows'] - rep['lambda_mismatches']}/{rep['lambda_rows']} exact" if lam else ""))
    # the compute_advantage wrapper on a real DataProto (verl.protocol); ray_trainer itself needs verl's
    # full install, so its compute_advantage is stood in by one that records the call
    from verl.protocol import DataProto
    data = DataProto.from_dict(tensors={"responses": b["responses"], "response_mask": b["response_mask"],
                                        "token_level_rewards": b["token_level_rewards"]},
                               non_tensors={"uid": b["uid"]})
    calls = []
    wrapped = lambda_grpo_verl.make_compute_advantage(lambda data, est, *a, **k: calls.append(est) or data, None)
    wrapped(data, "grpo")
    wrapped(data, "lambda_grpo", norm_adv_by_std_in_grpo=True)
    want, _ = lambda_grpo_verl.compute_lambda_grpo_outcome_advantage(
        b["token_level_rewards"], b["response_mask"], b["uid"], responses=b["responses"])
    record("compute_advantage wrapper: lambda_grpo on a DataProto, other estimators passed through",
           calls == ["grpo"] and torch.equal(data.batch["advantages"], want), f"passed through: {calls}")
    # planted bugs: must fail
    def dedupe(responses):        # a wrong |λ|: duplicates given distinct last tokens (counted once)
        r = responses.clone()
        seen = set()
        for i in range(r.size(0)):
            key = (b["uid"][i], tuple(r[i].tolist()))
            if key in seen:
                n = int(b["response_mask"][i].sum())
                r[i, n - 1] = 99 + i
            seen.add(key)
        return r
    adv, grad, loss = verl_step(b, True, "token-mean", 0.0, True, 0.28, plant=dedupe)
    txt, tsv = write_files(b, adv, grad, loss, True, d, "plant", lambda_grpo_verl.lambda_sizes(
        dedupe(b["responses"]), b["response_mask"], b["uid"]))
    out = os.path.join(d, "plant.check.tsv")
    with open(out, "w") as f:
        subprocess.run([a.grpo, "check", txt, "--objective", "lambda-grpo", "--adv-eps", "1e-6", "--clip-eps-high",
                        "0.28"], stdout=f, check=True)
    import io
    ok, _ = compare.compare(tsv, out, out=io.StringIO(), quiet=True)
    record("detected: planted wrong |λ| (duplicates' last token counted once)", not ok)
    adv, grad, loss = verl_step(b, True, "token-mean", 0.04, True, 0.28)
    # β > 0 without the actor-side weighting: the advantage alone is not λ-GRPO
    from verl.trainer.ppo import core_algos
    kld_unweighted = core_algos.kl_penalty(logprob=b["logp"], ref_logprob=b["ref"], kl_penalty="low_var_kl")
    w = lambda_grpo_verl.lambda_weights(b["responses"], b["response_mask"], b["uid"])
    gap = float(0.04 * ((kld_unweighted * (1 - w)) * b["response_mask"]).sum() / b["response_mask"].sum())
    record("β > 0: the unweighted KL term differs from λ-GRPO's (the recipe's actor change is needed)", gap > 1e-6,
           f"loss gap {gap:.2e}")
    # bad input
    try:
        lambda_grpo_verl.lambda_sizes(b["responses"], torch.ones_like(b["response_mask"]).index_fill_(1,
                                      torch.tensor([0]), 0), b["uid"])
        record("lambda_sizes refuses a non-prefix response_mask", False)
    except ValueError as e:
        record("lambda_sizes refuses a non-prefix response_mask", "prefix mask" in str(e), str(e)[:80])
    try:
        core_algos.get_adv_estimator_fn("lambda_grpo")(token_level_rewards=b["token_level_rewards"],
                                                       response_mask=b["response_mask"], index=b["uid"])
        record("lambda_grpo without responses: clear error", False)
    except ValueError as e:
        record("lambda_grpo without responses: clear error", "install()" in str(e), str(e)[:80])
    passed = sum(RESULTS)
    print(f"{passed} passed, {len(RESULTS) - passed} failed")
    return 0 if passed == len(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
