#!/usr/bin/env python3
"""
tests/gen_check_fixtures.py: writes tests/fixtures/check/*.{txt,expected}, the fixtures that
tests/test_check.c runs through `./grpo check` (see README.md "Checking another trainer").

Every fixture is a random batch (several groups, shared prefixes, duplicates, one completion
that is a strict prefix of another, binary / continuous / all-equal rewards) whose expected
advantages, loss and dloss/dlogp come from another system's own code, called on float64
tensors, with the gradient taken by torch autograd on logp:

  verl_*     verl (pip install verl --no-deps), functions called for real from
             verl/trainer/ppo/core_algos.py: compute_grpo_outcome_advantage,
             compute_policy_loss_vanilla (-> agg_loss, all four loss_agg_mode values),
             kl_penalty(..., "low_var_kl"); the KL term is composed as verl's actor does
             (verl/workers/utils/losses.py ppo_loss: pg_loss + kl_loss_coef * agg_loss(kld)).
  trl_*      TRL (pip install trl --no-deps): GRPOTrainer._compute_loss called for real on a
             stand-in `self` (attributes only, no model); the advantage is TRL's formula from
             _generate_and_score_completions (a 2,000-line generation method that cannot be
             called alone), reproduced with TRL's own trl.trainer.utils.nanstd.
  authors_*  the authors' λ-GRPO code (github.com/coli-saar/grpo-prm, fetched locally, NOT
             part of this repository): LambdaGRPOTrainer.__call__ / _step called for real on a
             stand-in `self` and a stand-in model whose log_softmax returns the fixture's logp;
             their InfPRMTree builds the tree. Pass --authors-repo DIR (a checkout or an
             extracted snapshot); without it the committed authors_* fixtures are kept.

Columns the other system does not produce (lambda_size and weight for GRPO runs of verl/TRL,
step_advantage, ratio, and kl for TRL) come from this script's own float64 reference
(own_reference below), which is also compared against every external result: the script stops
if they disagree by more than 1e-7 of the column scale (verl's seq-mean-token-mean adds 1e-8
to each length; everything else agrees to ~1e-15), so a mis-mapped convention cannot slip into a
fixture. Inputs (logp, logp_old, logp_ref, rewards) are float32-representable and printed with
%.9g, so grpo.c (float32) reads exactly the numbers the float64 reference used: the comparison
tolerance in tests/test_check.c is about grpo.c's float32 arithmetic only.

.expected format: line 1 = the ./grpo check options; then grpo.c's TSV header, one row per
token, `loss\t<value>`, and `loss_scale\t<value>` = Σ |coef·weight·ℓ| (policy and KL parts
separately), the scale against which the loss's absolute error is measured.

Run (from the repository root):
  python3 -m venv --system-site-packages /tmp/venv && /tmp/venv/bin/pip install --no-deps verl trl
  /tmp/venv/bin/python tests/gen_check_fixtures.py [--authors-repo DIR]
Needs torch and numpy. verl and TRL are imported with stand-ins for their heavy imports
(ray, transformers, ...); the functions called are the installed packages' own.
"""
import argparse
import importlib.abc
import importlib.machinery
import importlib.util
import math
import os
import sys
import types
from collections import defaultdict
from types import SimpleNamespace

import numpy as np
import torch

torch.set_default_dtype(torch.float64)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "check")
COLS = ["line", "group", "t", "token", "lambda_size", "weight", "advantage", "step_advantage",
        "ratio", "kl", "dloss_dlogp"]

# ----------------------------------------------------------------------------
# Stand-in modules for imports the called functions never use


class _StubModule(types.ModuleType):
    """Any attribute is a fresh empty class (usable as a base class, type hint or decorator
    target); is_*() helpers return False; __version__ is a high version string."""

    def __getattr__(self, name):
        if name == "__version__":
            return "99.0.0"
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if name.startswith("is_"):
            v = lambda *a, **k: False  # noqa: E731
        else:
            v = type(name, (object,), {"__init__": lambda self, *a, **k: None,
                                       "__class_getitem__": classmethod(lambda c, i: c)})
        setattr(self, name, v)
        return v


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, names):
        self.names = set(names)

    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] in self.names or fullname in self.names:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        m = _StubModule(spec.name)
        m.__path__ = []
        return m

    def exec_module(self, module):
        pass


def stub_modules(names):
    sys.meta_path.insert(0, _StubFinder(names))


def load_verl():
    """verl.trainer.ppo.core_algos, imported from the installed package without running
    verl/__init__.py (which starts Ray): the package objects are created empty and point at
    the real directories, so core_algos.py and utils/torch_functional.py load from their
    real files; only config classes used as type hints are stand-ins."""
    spec = importlib.util.find_spec("verl")
    if spec is None:
        sys.exit("verl is not installed: pip install verl --no-deps")
    root = os.path.dirname(spec.origin)
    for name in ["verl", "verl.trainer", "verl.trainer.ppo", "verl.utils", "verl.workers"]:
        m = types.ModuleType(name)
        m.__path__ = [os.path.join(root, *name.split(".")[1:])]
        sys.modules[name] = m
    sys.modules["verl.utils"].as_torch_index = None    # imported by core_algos, used by
    sys.modules["verl.utils"].group_mean_std = None    # estimators this script does not call
    stub_modules(["ray", "tensordict", "transformers", "omegaconf", "codetiming", "hydra",
                  "verl.trainer.config", "verl.workers.config"])
    import verl.trainer.ppo.core_algos as ca
    with open(os.path.join(root, "version", "version")) as f:
        version = f.read().strip()
    return ca, version


def load_trl():
    from importlib.metadata import version as pkg_version
    stub_modules(["pandas", "transformers", "accelerate", "datasets", "huggingface_hub", "pyarrow",
                  "trl.trainer.grpo_config"])   # GRPOConfig subclasses transformers' TrainingArguments
    import trl.trainer.grpo_trainer as gt
    from trl.trainer.utils import nanstd
    return gt, nanstd, pkg_version("trl")


def load_authors(repo):
    """The authors' lambda_grpo package from a local checkout (never copied into this
    repository). Their imports of peft / transformers / tqdm are stand-ins."""
    stub_modules(["peft", "transformers", "tqdm"])
    sys.path.insert(0, repo)
    import lambda_grpo.trainer as tr
    import lambda_grpo.utils as ut
    return tr, ut

# ----------------------------------------------------------------------------
# Random batches


def f32(x):
    return float(np.float32(x))


class Batch:
    """completions: list of dicts with group, reward, tokens, logp, logp_old, logp_ref (lists
    of float32-representable floats, or None when the field is left out of the file)."""

    def __init__(self, comps):
        self.comps = comps


def make_batch(rng, group_ids, sizes, reward_kinds, vocab=4, maxlen=7, with_logp=True,
               with_old=False, with_ref=False, old_spread=0.7, ref_spread=1.5, allow_empty=False,
               clip_edges=(0.8, 1.2, 1.28), shuffle=False, avoid_equal_k1=True):
    """Groups with shared prefixes, duplicates and strict prefixes. Log-probs are functions of
    (group, token prefix), as a real policy's are, so shared prefixes carry equal values."""
    table = {}

    def values(g, prefix):
        key = (g, tuple(prefix))
        if key not in table:
            while True:     # log-probs of real distributions: all < 0
                lp = f32(-rng.exponential(1.0) - 0.02)
                lo = f32(lp - rng.uniform(-old_spread, old_spread))
                lr = f32(lp + rng.uniform(-ref_spread, ref_spread))
                ratio = math.exp(lp - lo)
                if lo < -0.005 and lr < -0.005 and all(abs(ratio - e) > 3e-3 for e in clip_edges):
                    break
            table[key] = (lp, lo, lr)
        return table[key]

    comps = []
    for g, k, kind in zip(group_ids, sizes, reward_kinds):
        seqs = []
        for i in range(k):
            u = rng.random()
            if seqs and u < 0.25:                               # duplicate
                s = list(seqs[rng.integers(len(seqs))])
            elif seqs and u < 0.55:                             # shared prefix, then diverge
                base = seqs[rng.integers(len(seqs))]
                cut = int(rng.integers(0, len(base) + 1))
                s = list(base[:cut]) + [int(x) for x in rng.integers(1, vocab + 1, rng.integers(1, 4))]
            elif seqs and u < 0.65 and max(len(x) for x in seqs) > 1:   # strict prefix of another
                base = max(seqs, key=len)
                s = list(base[:int(rng.integers(1, len(base)))])
            else:
                s = [int(x) for x in rng.integers(1, vocab + 1, rng.integers(1, maxlen + 1))]
            s = s[:maxlen]
            if not s and not allow_empty:
                s = [1]
            seqs.append(s)
        if allow_empty and g == group_ids[0]:
            seqs[-1] = []
        if kind == "binary":
            r = [float(x) for x in rng.integers(0, 2, k)]
            if len(set(r)) == 1:
                r[0] = 1.0 - r[0]
        elif kind == "cont":
            r = [f32(x) for x in rng.normal(0.3, 1.0, k)]
        elif kind.startswith("equal"):
            r = [float(kind[5:] or 1.0)] * k
        else:
            raise ValueError(kind)
        for s, ri in zip(seqs, r):
            vals = [values(g, s[:t + 1]) for t in range(len(s))]
            comps.append({"group": g, "reward": ri, "tokens": s,
                          "logp": [v[0] for v in vals] if with_logp else None,
                          "logp_old": [v[1] for v in vals] if with_old else None,
                          "logp_ref": [v[2] for v in vals] if with_ref else None})
    if shuffle:
        perm = rng.permutation(len(comps))
        comps = [comps[i] for i in perm]
    return Batch(comps)

# ----------------------------------------------------------------------------
# Own float64 reference (independent of grpo.c; used for the columns the other systems do not
# produce and to check every external result)


def own_reference(batch, o):
    comps = batch.comps
    N = len(comps)
    members = defaultdict(list)
    for i, c in enumerate(comps):
        members[c["group"]].append(i)
    adv = [0.0] * N

    def std(vals, mode):
        m = sum(vals) / len(vals)
        ss = sum((v - m) ** 2 for v in vals)
        return math.sqrt(ss / (len(vals) - 1)) if mode == "sample" else math.sqrt(ss / len(vals))

    allr = [c["reward"] for c in comps]
    for g, idx in members.items():
        r = [comps[i]["reward"] for i in idx]
        mean = sum(r) / len(r)
        if o["adv_std"] == "none":
            denom = 1.0
        else:
            sd = std(allr, o["adv_std"]) if o["scope"] == "batch" else std(r, o["adv_std"])
            denom = sd + o["eps"]
        for i in idx:
            adv[i] = 0.0 if len(set(r)) == 1 else (comps[i]["reward"] - mean) / denom
    total = sum(len(c["tokens"]) for c in comps)
    rows, loss, scale = [], 0.0, 0.0
    lo_c, hi_c, beta = 1.0 - o["clip_low"], 1.0 + o["clip_high"], o["beta"]
    for i, c in enumerate(comps):
        n = len(c["tokens"])
        agg = o["loss_agg"]
        coef = (1.0 / total if agg == "token-mean" else
                (1.0 / (N * n) if n else 0.0) if agg == "seq-mean-token-mean" else
                1.0 / N if agg == "seq-mean-token-sum" else 1.0 / (N * o["max_new"]))
        lp = c["logp"] or [0.0] * n
        lo = c["logp_old"] or lp
        for t in range(n):
            lam = [j for j in members[c["group"]]
                   if len(comps[j]["tokens"]) > t and comps[j]["tokens"][:t + 1] == c["tokens"][:t + 1]]
            w = 1.0 / len(lam) if o["objective"] == "lambda-grpo" else 1.0
            A = adv[i]
            ratio = math.exp(lp[t] - lo[t])
            cr = min(max(ratio, lo_c), hi_c)
            unc, clp = -ratio * A, -cr * A
            take_clip = clp > unc
            pg = clp if take_clip else unc
            dpg = 0.0 if take_clip else -ratio * A
            kl = dkl = 0.0
            if beta != 0.0:
                d = c["logp_ref"][t] - lp[t]
                kl, dkl = math.exp(d) - d - 1.0, 1.0 - math.exp(d)
            loss += coef * w * (pg + beta * kl)
            scale += coef * w * (abs(pg) + beta * abs(kl))
            rows.append({"i": i, "group": c["group"], "t": t, "token": c["tokens"][t],
                         "lambda_size": len(lam), "weight": w, "advantage": A,
                         "step_advantage": sum(adv[j] for j in lam) / len(lam),
                         "ratio": ratio, "kl": kl, "dloss_dlogp": coef * w * (dpg + beta * dkl),
                         "clipped": take_clip})
    return {"rows": rows, "loss": loss, "loss_scale": scale, "adv": adv}

# ----------------------------------------------------------------------------
# Padded tensors


def padded(batch, key, width=None, fill=0.0):
    comps = batch.comps
    T = width or max(1, max(len(c["tokens"]) for c in comps))
    x = torch.full((len(comps), T), fill)
    m = torch.zeros((len(comps), T))
    for i, c in enumerate(comps):
        n = len(c["tokens"])
        m[i, :n] = 1.0
        if key == "tokens" and n:
            x[i, :n] = torch.tensor(c["tokens"], dtype=torch.float64)
        elif key != "tokens" and c[key] is not None and n:
            x[i, :n] = torch.tensor(c[key])
    return x, m


def grad_rows(batch, grad):
    return [float(grad[i, t]) for i, c in enumerate(batch.comps) for t in range(len(c["tokens"]))]

# ----------------------------------------------------------------------------
# verl


class VerlActorConfig(dict):
    """The attributes compute_policy_loss_vanilla reads from verl's ActorConfig."""

    def __init__(self, clip_low, clip_high):
        super().__init__()
        self.clip_ratio = clip_low
        self.clip_ratio_low = clip_low
        self.clip_ratio_high = clip_high
        self.global_batch_info = {}     # one data-parallel rank, whole batch in one micro-batch


def run_verl(ca, batch, mode, eps=1e-6, norm_by_std=True, clip_low=0.2, clip_high=0.2, kl_coef=0.0,
             horizon=None, lambda_weights=None):
    comps = batch.comps
    lp, mask = padded(batch, "logp", horizon)
    lp = lp.clone().requires_grad_(True)
    old, _ = padded(batch, "logp_old", horizon)
    for i, c in enumerate(comps):                       # missing logp_old: ratio 1
        if c["logp_old"] is None:
            old[i] = lp[i].detach()
    scores = torch.zeros_like(mask)
    for i, c in enumerate(comps):                       # outcome reward on the last token
        assert c["tokens"], "verl drops empty responses from its sequence count: no empty ones here"
        scores[i, len(c["tokens"]) - 1] = c["reward"]
    index = np.array([c["group"] for c in comps])
    adv, _ = ca.compute_grpo_outcome_advantage(scores, mask, index, epsilon=eps,
                                               norm_adv_by_std_in_grpo=norm_by_std)
    cfg = VerlActorConfig(clip_low, clip_high)
    isw = None
    if lambda_weights is not None:                      # λ-GRPO through verl's per-token weights
        isw = torch.zeros_like(mask)
        k = 0
        for i, c in enumerate(comps):
            for t in range(len(c["tokens"])):
                isw[i, t] = lambda_weights[k]
                k += 1
    pg_loss, _ = ca.compute_policy_loss_vanilla(old, lp, adv, mask.bool(), loss_agg_mode=mode,
                                                config=cfg, rollout_is_weights=isw)
    loss = pg_loss
    kld_rows = None
    if kl_coef:
        ref, _ = padded(batch, "logp_ref", horizon)
        kld = ca.kl_penalty(logprob=lp, ref_logprob=ref, kl_penalty="low_var_kl")
        loss = loss + ca.agg_loss(loss_mat=kld, loss_mask=mask.bool(), loss_agg_mode=mode) * kl_coef
        kld_rows = [float(kld.detach()[i, t]) for i, c in enumerate(comps) for t in range(len(c["tokens"]))]
    loss.backward()
    return {"adv": [float(adv[i, 0]) for i in range(len(comps))], "loss": float(loss.detach()),
            "dloss": grad_rows(batch, lp.grad), "kl": kld_rows}

# ----------------------------------------------------------------------------
# TRL


class _Acc:
    num_processes = 1
    sync_gradients = True

    def gather(self, x):
        return x

    def gather_for_metrics(self, x):
        return x

    def reduce(self, x, reduction="sum"):
        return x


def trl_advantages(nanstd, rewards, k, scale):
    """TRL 1.x GRPOTrainer._generate_and_score_completions, single reward function
    (multi_objective_aggregation "sum_then_normalize"): groups are k consecutive rows."""
    rewards = torch.tensor(rewards)
    mean = torch.nanmean(rewards.view(-1, k), dim=1).repeat_interleave(k, dim=0)
    if scale in ["group", "none"]:
        std = nanstd(rewards.view(-1, k), dim=1).repeat_interleave(k, dim=0)
    else:   # "batch"
        std = nanstd(rewards).expand_as(rewards)
    adv = rewards - mean
    if scale != "none":
        adv = adv / (std + 1e-4)
    return adv


def run_trl(gt, nanstd, batch, loss_type, scale="group", beta=0.0, eps=0.2, eps_high=None,
            max_completion_length=16, bias_correction_kl=False, lambda_weights=None):
    comps = batch.comps
    k = sum(1 for c in comps if c["group"] == comps[0]["group"])
    assert all(comps[i]["group"] == comps[(i // k) * k]["group"] for i in range(len(comps)))
    adv = trl_advantages(nanstd, [c["reward"] for c in comps], k, scale)
    lp, mask = padded(batch, "logp")
    lp = lp.clone().requires_grad_(True)
    ids, _ = padded(batch, "tokens")
    B, T = mask.shape
    inputs = {"prompt_ids": torch.ones((B, 2), dtype=torch.long), "prompt_mask": torch.ones((B, 2)),
              "completion_ids": ids.long(), "completion_mask": mask, "advantages": adv,
              "num_items_in_batch": mask.sum()}
    if any(c["logp_old"] is not None for c in comps):
        old, _ = padded(batch, "logp_old")
        inputs["old_per_token_logps"] = old
    if beta:
        inputs["ref_per_token_logps"] = padded(batch, "logp_ref")[0]
    use_vllm = lambda_weights is not None
    if use_vllm:        # λ-GRPO through TRL's per-token importance weights (applied before the KL)
        w = torch.zeros_like(mask)
        kk = 0
        for i, c in enumerate(comps):
            for t in range(len(c["tokens"])):
                w[i, t] = lambda_weights[kk]
                kk += 1
        inputs["importance_sampling_ratio"] = w
    self = SimpleNamespace(
        _get_per_token_logps_and_entropies=lambda *a, **kw: (lp, torch.zeros_like(lp), None),
        top_entropy_quantile=1.0, off_policy_mask_threshold=None, importance_sampling_level="token",
        beta=beta, loss_type=loss_type, epsilon_low=eps, epsilon_high=eps_high if eps_high is not None else eps,
        args=SimpleNamespace(delta=None, use_bias_correction_kl=bias_correction_kl, steps_per_generation=1),
        use_vllm=use_vllm, vllm_importance_sampling_correction=use_vllm,
        model=SimpleNamespace(training=True), current_gradient_accumulation_steps=1,
        max_completion_length=max_completion_length, accelerator=_Acc(), _entropy_bonus_enabled=False,
        aux_loss_enabled=False, _metrics={"train": defaultdict(list), "eval": defaultdict(list)})
    loss = gt.GRPOTrainer._compute_loss(self, None, inputs)
    loss.backward()
    return {"adv": [float(a) for a in adv], "loss": float(loss.detach()), "dloss": grad_rows(batch, lp.grad)}

# ----------------------------------------------------------------------------
# The authors' λ-GRPO trainer


class _AuthorsModel:
    """Stands in for the policy: log_softmax(logits)[next token] is the fixture's log-prob of
    that token (one leaf tensor per (completion, position), so the gradient is per token).
    Rows arrive in the order _step visits completions (shuffling is turned off)."""

    def __init__(self, seqs, P, values, V):
        self.seqs, self.P, self.V, self.next = seqs, P, V, 0
        self.set(values)

    def set(self, values):
        self.leaves = [torch.tensor(v, requires_grad=True) for v in values]

    def __call__(self, input_ids, attention_masks):
        B, L = input_ids.shape
        sink = self.V - 1
        rows = []
        for b in range(B):
            j = self.next % len(self.seqs)
            self.next += 1
            ids = input_ids[b]
            body = ids[ids != PAD_ID].tolist()
            assert body == self.seqs[j], (body, self.seqs[j])
            first = L - len(body) + self.P - 1       # position whose logits predict completion token 0
            vecs = []
            for p in range(L):
                t = p - first
                if 0 <= t < len(body) - self.P:
                    lpv = self.leaves[j][t]
                    v = torch.full((self.V,), -1e4)
                    v = v.index_put((torch.tensor([body[self.P + t]]),), lpv.view(1))
                    v = v.index_put((torch.tensor([sink]),), torch.log(-torch.expm1(lpv)).view(1))
                    vecs.append(v)
                else:
                    vecs.append(torch.zeros(self.V))
            rows.append(torch.stack(vecs))
        return SimpleNamespace(logits=torch.stack(rows))


PAD_ID = 0


def run_authors(tr, batch, k, loss_type="grpo", beta=0.0, grad_acc=1, batch_steps=1, eps=0.2, P=3):
    """Runs LambdaGRPOTrainer.__call__ (tree build, loss scales, one or two optimizer steps) on a
    stand-in self whose _sample returns this batch. With batch_steps=2 the stand-in optimizer
    moves the policy from logp_old to logp after the first step, so the second step is the
    clipped update π_θ/π_old of the fixture; its gradient and loss are the expected ones."""
    comps = batch.comps
    N = len(comps)
    groups = [c["group"] for c in comps]
    seqs = [[50 + g % 50, 60, 61][:P] + c["tokens"] for g, c in zip(groups, comps)]
    V = 128
    final = [c["logp"] for c in comps]
    first = [c["logp_old"] or c["logp"] for c in comps]
    model = _AuthorsModel(seqs, P, first if batch_steps > 1 else final, V)
    captured = {"grads": [], "losses": []}

    class Opt:
        def step(self_opt):
            captured["grads"].append([leaf.grad.clone() if leaf.grad is not None else torch.zeros(len(leaf))
                                      for leaf in model.leaves])
            if batch_steps > 1 and len(captured["grads"]) == 1:
                model.set(final)

        def zero_grad(self_opt):
            for leaf in model.leaves:
                leaf.grad = None

    rewards = [c["reward"] for c in comps]
    advs = []
    for s in range(0, N, k):    # LambdaGRPOTrainer._sample: r_g.std() + 1e-4, sample std
        r_g = torch.tensor(rewards[s:s + k])
        r_mean, r_std = r_g.mean(dim=0), r_g.std(dim=0) + 1e-4
        for j, r in enumerate(r_g):
            advs.append(torch.full((1, len(comps[s + j]["tokens"])), ((r - r_mean) / r_std).item()))
    input_ids = [torch.tensor(s) for s in seqs]
    attn = [torch.ones_like(x) for x in input_ids]
    ref_logits = [torch.tensor(c["logp_ref"]).view(1, -1) for c in comps] if beta else []
    n_logits = [P] * N

    self = SimpleNamespace(group_size=k, batch_size=None, grad_acc_batch_size=grad_acc,
                           batch_steps=batch_steps, beta=beta, _eps_min=1 - eps, _eps_max=1 + eps,
                           loss_scale=True, loss_type=loss_type, model=SimpleNamespace(train=lambda: None),
                           tokenizer=SimpleNamespace(pad_token_id=PAD_ID, decode=lambda x: ""),
                           optimizer=Opt())
    self.model = model
    model.train = lambda: None
    self._sample = lambda p, t, u: (advs, input_ids, rewards, attn, ref_logits, n_logits)
    self._strip_padding = lambda *a: tr.LambdaGRPOTrainer._strip_padding(self, *a)

    def step(*a, **kw):
        out = tr.LambdaGRPOTrainer._step(self, *a, **kw)
        captured["losses"].append(out[0] if isinstance(out, tuple) else out)
        return out
    self._step = step
    saved_random = tr.random
    tr.random = SimpleNamespace(shuffle=lambda x: None)
    try:
        tr.LambdaGRPOTrainer.__call__(self, ["p"] * (N // k), None, use_tqdm=False)
    finally:
        tr.random = saved_random
    # the loss scales their __call__ computed, recomputed with their tree for the weight column
    weights = []
    for s in range(0, N, k):
        ls = tr.InfPRMTree(input_ids[s:s + k]).loss_scales(dtype=torch.float64)
        for j in range(k):
            n = len(comps[s + j]["tokens"])
            weights.extend(float(x) for x in ls[j][-n:]) if n else None
    g = captured["grads"][-1]
    return {"adv": [float(a.flatten()[0]) if a.numel() else float("nan") for a in advs],
            "loss": captured["losses"][-1], "weights": weights,
            "dloss": [float(g[i][t]) for i in range(N) for t in range(len(comps[i]["tokens"]))]}

# ----------------------------------------------------------------------------
# Writing fixtures


def fmt(x):
    return "%.9g" % x


def write_fixture(name, header, batch, options, o, ext, report):
    """ext: external results with keys adv (per completion), loss, dloss (per token) and
    optionally kl, weights (per token). Checks them against own_reference first."""
    ref = own_reference(batch, o)
    rows = ref["rows"]

    def close(a, b, what, tol=1e-7, floor=1e-12):
        scale = max([abs(x) for x in b] + [floor])
        worst = max(abs(x - y) / scale for x, y in zip(a, b)) if a else 0.0
        if not worst <= tol:
            sys.exit(f"{name}: {what} from the external code differs from the own reference "
                     f"by {worst:.3e} (relative to the column scale)")
        return worst

    diffs = {"advantage": close(ext["adv"], ref["adv"], "advantage"),
             "dloss_dlogp": close(ext["dloss"], [r["dloss_dlogp"] for r in rows], "dloss_dlogp"),
             "loss": close([ext["loss"]], [ref["loss"]], "loss", floor=ref["loss_scale"])}
    if ext.get("kl") is not None:
        diffs["kl"] = close(ext["kl"], [r["kl"] for r in rows], "kl")
    if ext.get("weights") is not None:
        diffs["weight"] = close(ext["weights"], [r["weight"] for r in rows], "weight")
    for r, d in zip(rows, ext["dloss"]):
        r["dloss_dlogp"] = d
    for r in rows:
        r["advantage"] = ext["adv"][r["i"]]
    if ext.get("kl") is not None:
        for r, v in zip(rows, ext["kl"]):
            r["kl"] = v
    if ext.get("weights") is not None:
        for r, v in zip(rows, ext["weights"]):
            r["weight"] = v
            r["lambda_size"] = int(round(1.0 / v))
    # the check file
    comps = batch.comps
    keys = [(c["group"], tuple(c["tokens"])) for c in comps]
    stats = ("batch: %d completions in %d groups, %d tokens; %d duplicate completions; %d tokens with |λ| > 1; "
             "%d all-equal-reward groups; %d tokens clipped (ratio < 1-ε_low: %d, > 1+ε_high: %d)" % (
                 len(comps), len(set(c["group"] for c in comps)), len(rows), len(keys) - len(set(keys)),
                 sum(r["lambda_size"] > 1 for r in rows),
                 sum(len(set(c["reward"] for c in comps if c["group"] == g)) == 1 for g in set(c["group"] for c in comps)),
                 sum(r["clipped"] for r in rows), sum(r["clipped"] and r["ratio"] < 1 for r in rows),
                 sum(r["clipped"] and r["ratio"] > 1 for r in rows)))
    lines = ["# " + h for h in header] + ["# " + stats]
    lines.append("# expected output: %s.expected (first line: the ./grpo check options)" % name)
    first_line = len(lines) + 1
    for c in batch.comps:
        f = ["group=%d" % c["group"], "reward=%s" % fmt(c["reward"]),
             "tokens=" + ",".join(str(x) for x in c["tokens"])]
        for key in ["logp", "logp_old", "logp_ref"]:
            if c[key] is not None:
                f.append(key + "=" + ",".join(fmt(x) for x in c[key]))
        lines.append(" ".join(f))
    with open(os.path.join(OUT, name + ".txt"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    with open(os.path.join(OUT, name + ".expected"), "w") as fh:
        fh.write(options + "\n")
        fh.write("\t".join(COLS) + "\n")
        for r in rows:
            fh.write("\t".join([str(first_line + r["i"]), str(r["group"]), str(r["t"]), str(r["token"]),
                                str(r["lambda_size"])] +
                               [fmt(r[c]) for c in COLS[5:]]) + "\n")
        fh.write("loss\t%s\n" % fmt(ext["loss"]))
        fh.write("loss_scale\t%s\n" % fmt(ref["loss_scale"]))
    report.append((name, len(batch.comps), len(rows), diffs, stats))


def opts_dict(objective="grpo", loss_agg="token-mean", adv_std="sample", scope="group", eps=1e-4,
              clip_low=0.2, clip_high=0.2, beta=0.0, max_new=1024):
    return dict(objective=objective, loss_agg=loss_agg, adv_std=adv_std, scope=scope, eps=eps,
                clip_low=clip_low, clip_high=clip_high, beta=beta, max_new=max_new)


def opts_string(o):
    s = ["--objective", o["objective"], "--loss-agg", o["loss_agg"], "--adv-std", o["adv_std"],
         "--adv-std-scope", o["scope"], "--adv-eps", "%g" % o["eps"], "--clip-eps-low", "%g" % o["clip_low"],
         "--clip-eps-high", "%g" % o["clip_high"], "--beta", "%g" % o["beta"], "--max-new-tokens", str(o["max_new"])]
    return " ".join(s)

# ----------------------------------------------------------------------------


def verl_fixtures(report, seed):
    ca, version = load_verl()
    rng = np.random.default_rng(seed)
    H = 16          # verl pads responses to max_response_length; agg_loss's default horizon is that width
    common = ["verl %s, verl.trainer.ppo.core_algos: compute_grpo_outcome_advantage (epsilon=1e-6, sample std),"
              % version,
              "compute_policy_loss_vanilla (clip_ratio_c=3 dual clip inactive: every ratio < 3), agg_loss;",
              "gradient: torch autograd wrt logp in float64 (tests/gen_check_fixtures.py)."]
    groups = [3, 11, 4, 7]
    kinds = ["binary", "cont", "binary", "equal1"]
    for mode in ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm"]:
        b = make_batch(rng, groups, [5, 4, 6, 3], kinds, with_old=True, shuffle=True)
        o = opts_dict(loss_agg=mode, eps=1e-6, max_new=H)
        ext = run_verl(ca, b, mode, horizon=H)
        note = ("verl divides by global_batch_size * loss_scale_factor (default: the padded response "
                "width, here %d) = --max-new-tokens %d" % (H, H)) if mode.endswith("norm") else \
               "loss_agg_mode=%s" % mode
        write_fixture("verl_" + mode.replace("-", "_"),
                      common + ["options: loss_agg_mode=%s, clip_ratio 0.2, μ > 1 (logp_old given)" % mode, note],
                      b, opts_string(o), o, ext, report)
    # clipping active, asymmetric (DAPO clip-higher)
    b = make_batch(rng, [1, 2, 3], [6, 5, 6], ["cont", "binary", "cont"], with_old=True, old_spread=1.0,
                   clip_edges=(0.8, 1.28), shuffle=True)
    o = opts_dict(loss_agg="token-mean", eps=1e-6, clip_low=0.2, clip_high=0.28, max_new=H)
    write_fixture("verl_clip", common + ["options: clip_ratio_low 0.2, clip_ratio_high 0.28, token-mean; ratios in"
                                         " [0.37, 2.7]"],
                  b, opts_string(o), o, run_verl(ca, b, "token-mean", clip_low=0.2, clip_high=0.28, horizon=H),
                  report)
    # k3 KL (low_var_kl) with β > 0, |ref - logp| <= 1.5 so verl's clamps (±20, k3 <= 10) are inactive
    b = make_batch(rng, [0, 1, 2], [4, 6, 5], ["binary", "cont", "equal0"], with_old=True, with_ref=True,
                   shuffle=True)
    o = opts_dict(loss_agg="seq-mean-token-mean", eps=1e-6, beta=0.04, max_new=H)
    write_fixture("verl_kl_k3", common + ["options: use_kl_loss, kl_loss_type=low_var_kl (k3; verl clamps ref-logp to",
                                          "±20 and k3 to <= 10: inactive here), kl_loss_coef=0.04, seq-mean-token-mean;",
                                          "loss = pg_loss + 0.04 * agg_loss(kld) as verl/workers/utils/losses.py"],
                  b, opts_string(o), o, run_verl(ca, b, "seq-mean-token-mean", kl_coef=0.04, horizon=H), report)
    # no std (Dr. GRPO advantage)
    b = make_batch(rng, [4, 9], [6, 6], ["cont", "binary"], with_old=True)
    o = opts_dict(loss_agg="seq-mean-token-sum", adv_std="none", eps=1e-6, max_new=H)
    write_fixture("verl_no_std", common + ["options: norm_adv_by_std_in_grpo=False (--adv-std none), seq-mean-token-sum"],
                  b, opts_string(o), o, run_verl(ca, b, "seq-mean-token-sum", norm_by_std=False, horizon=H), report)
    # λ-GRPO: 1/|λ| from the own reference enters verl's policy loss as rollout_is_weights
    b = make_batch(rng, [0, 1], [8, 6], ["binary", "cont"], with_old=True, vocab=3)
    o = opts_dict(objective="lambda-grpo", loss_agg="token-mean", eps=1e-6, max_new=H)
    w = [r["weight"] for r in own_reference(b, o)["rows"]]
    write_fixture("verl_lambda", common + ["options: λ-GRPO: the weights 1/|λ| (own reference tree) are passed as",
                                           "compute_policy_loss_vanilla(rollout_is_weights=...), β = 0, token-mean"],
                  b, opts_string(o), o, run_verl(ca, b, "token-mean", horizon=H, lambda_weights=w), report)
    return version


def trl_fixtures(report, seed):
    gt, nanstd, version = load_trl()
    rng = np.random.default_rng(seed)
    L = 12      # max_completion_length
    common = ["TRL %s: GRPOTrainer._compute_loss called on a stand-in self (importance_sampling_level token);"
              % version,
              "advantages: TRL's formula (r - mean) / (nanstd + 1e-4), reproduced with trl.trainer.utils.nanstd;",
              "gradient: torch autograd wrt logp in float64 (tests/gen_check_fixtures.py)."]
    cases = [
        # name, loss_type, scale_rewards, agg, beta, eps_high, logp_old, empty completion, logp given
        ("trl_grpo", "grpo", "group", "seq-mean-token-mean", 0.0, None, True, True, True),
        ("trl_grpo_noscale", "grpo", "none", "seq-mean-token-mean", 0.0, None, True, False, True),
        ("trl_bnpo", "bnpo", "group", "token-mean", 0.0, None, True, False, True),
        ("trl_dapo_batchscale", "dapo", "batch", "token-mean", 0.0, 0.28, True, False, True),
        ("trl_dapo_noscale", "dapo", "none", "token-mean", 0.0, None, False, False, True),
        ("trl_dr_grpo", "dr_grpo", "group", "seq-mean-token-sum-norm", 0.0, None, True, False, True),
        ("trl_dr_grpo_noscale", "dr_grpo", "none", "seq-mean-token-sum-norm", 0.0, None, False, False, False),
        ("trl_beta", "grpo", "group", "seq-mean-token-mean", 0.04, 0.28, True, False, True),
    ]
    for name, lt, scale, agg, beta, eh, has_old, empty, has_logp in cases:
        k = 6
        b = make_batch(rng, [0, 1, 2], [k] * 3, ["binary", "cont", "equal1"], with_old=has_old,
                       with_ref=beta > 0, allow_empty=empty, with_logp=has_logp, maxlen=8,
                       clip_edges=(0.8, 1.2, 1.28))
        o = opts_dict(loss_agg=agg, adv_std="none" if scale == "none" else "sample",
                      scope="batch" if scale == "batch" else "group", eps=1e-4, clip_high=eh or 0.2,
                      beta=beta, max_new=L)
        ext = run_trl(gt, nanstd, b, lt, scale=scale, beta=beta, eps_high=eh, max_completion_length=L)
        h = common + ["options: loss_type=%s, scale_rewards=%s, epsilon=0.2, epsilon_high=%s, beta=%g, "
                      "max_completion_length=%d, num_generations=%d" % (lt, scale, eh or 0.2, beta, L, k)]
        if beta:
            h.append("use_bias_correction_kl=False (TRL 1.x defaults to True: KL term times the ratio; grpo.c has none)")
        if lt == "dapo":
            h.append("dapo: normaliser num_items_in_batch (one process, one accumulation step) = token-mean")
        if empty:
            h.append("one empty completion (tokens=): TRL counts it in the sequence mean, as grpo.c")
        if not has_logp:
            h.append("no logp given: grpo.c reads logp = 0 (ratio 1); TRL run on logp = 0")
        if not has_old:
            h.append("no logp_old: μ = 1, old_per_token_logps = logp.detach() (ratio 1)")
        write_fixture(name, h, b, opts_string(o), o, ext, report)
    # λ-GRPO through TRL's per-token importance_sampling_ratio (β = 0: that weight is applied before the KL)
    b = make_batch(rng, [0, 1, 2], [6] * 3, ["binary", "binary", "cont"], with_old=True, vocab=3, maxlen=6)
    o = opts_dict(objective="lambda-grpo", loss_agg="token-mean", max_new=L)
    w = [r["weight"] for r in own_reference(b, o)["rows"]]
    write_fixture("trl_lambda", common + ["options: loss_type=bnpo, scale_rewards=group; λ-GRPO: the weights 1/|λ| (own",
                                          "reference tree) enter as inputs['importance_sampling_ratio'] (use_vllm and",
                                          "vllm_importance_sampling_correction on), which multiplies the per-token loss"],
                  b, opts_string(o), o, run_trl(gt, nanstd, b, "bnpo", lambda_weights=w, max_completion_length=L),
                  report)
    return version


def authors_fixtures(report, seed, repo):
    tr, ut = load_authors(repo)
    rng = np.random.default_rng(seed)
    commit = ""
    try:
        import subprocess
        commit = subprocess.run(["git", "-C", repo, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        pass
    if not commit and os.path.isfile(os.path.join(repo, "HEAD")):
        commit = open(os.path.join(repo, "HEAD")).read().strip()[:7]
    common = ["authors' code github.com/coli-saar/grpo-prm %s (run locally, not in this repository):" % commit,
              "LambdaGRPOTrainer.__call__ builds InfPRMTree per group on prompt+completion ids and slices the",
              "loss scales to the completion; _step computes the loss; lambda_size = 1/loss scale, weight, loss and",
              "dloss_dlogp (autograd through their _step) come from their code; advantage: their _sample formula;",
              "step_advantage, ratio, kl: own float64 reference."]
    k = 6
    # μ = 1, β = 0.04, loss_type grpo (per-sequence mean), grad_acc_batch_size 1 (their defaults)
    b = make_batch(rng, [0, 1, 2], [k] * 3, ["binary", "cont", "binary"], with_ref=True, vocab=3, maxlen=6)
    o = opts_dict(objective="lambda-grpo", loss_agg="seq-mean-token-mean", beta=0.04)
    write_fixture("authors_grpo_beta", common + ["options: loss_type=grpo, beta=0.04, batch_steps=1 (ratio 1), "
                                                 "grad_acc_batch_size=1, group_size=6"],
                  b, opts_string(o), o, run_authors(tr, b, k, "grpo", beta=0.04), report)
    # two batch steps: second step clipped, loss_type dapo with the whole batch in one mini-batch
    b = make_batch(rng, [0, 1, 2], [k] * 3, ["cont", "binary", "binary"], with_old=True, with_ref=True, vocab=3,
                   maxlen=6, clip_edges=(0.8, 1.2))
    o = opts_dict(objective="lambda-grpo", loss_agg="token-mean", beta=0.04)
    write_fixture("authors_dapo_clip", common + ["options: loss_type=dapo, grad_acc_batch_size=18 (one mini-batch: "
                                                 "token-mean), beta=0.04, epsilon=0.2,",
                                                 "batch_steps=2: expected = the second step, policy logp vs logp_old "
                                                 "(the first step's policy)"],
                  b, opts_string(o), o, run_authors(tr, b, k, "dapo", beta=0.04, grad_acc=3 * k, batch_steps=2),
                  report)
    # their tree builder alone on many random groups vs a brute-force count
    bad = crashes = 0
    for trial in range(300):
        kk = int(rng.integers(2, 9))
        bb = make_batch(rng, [0], [kk], ["binary"], vocab=int(rng.integers(2, 4)), maxlen=int(rng.integers(1, 8)))
        o = opts_dict(objective="lambda-grpo")
        want = [r["weight"] for r in own_reference(bb, o)["rows"]]
        seqs = [torch.tensor([50, 60, 61] + c["tokens"]) for c in bb.comps]
        ls = ut.InfPRMTree(seqs).loss_scales(dtype=torch.float64)
        got = [float(x) for c, s in zip(bb.comps, ls) for x in s[len(s) - len(c["tokens"]):]]
        bad += any(abs(a - b_) > 1e-15 for a, b_ in zip(got, want)) or len(got) != len(want)
        try:    # completion ids only (no prompt): their padding uses len(z) of an (idx, tokens) pair
            ut.InfPRMTree([torch.tensor(c["tokens"]) for c in bb.comps]).loss_scales(dtype=torch.float64)
        except Exception:
            crashes += 1
    print("authors' InfPRMTree on 300 random groups (prompt + completion): %d disagree with the brute-force "
          "|λ|; on completion ids alone it raised on %d groups" % (bad, crashes))
    return commit


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--authors-repo", default=os.environ.get("GRPO_PRM_REPO", ""),
                    help="local checkout of github.com/coli-saar/grpo-prm (authors_* fixtures)")
    ap.add_argument("--only", default="", help="comma list: verl,trl,authors")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    report = []
    only = set(args.only.split(",")) if args.only else {"verl", "trl", "authors"}
    if "verl" in only:
        verl_fixtures(report, 1)
    if "trl" in only:
        trl_fixtures(report, 2)
    if "authors" in only:
        if args.authors_repo:
            authors_fixtures(report, 3, args.authors_repo)
        else:
            print("no --authors-repo: authors_* fixtures left as committed")
    for name, n, nt, diffs, stats in report:
        size = os.path.getsize(os.path.join(OUT, name + ".txt")) + os.path.getsize(os.path.join(OUT, name + ".expected"))
        print("%-28s %3d completions %4d tokens %6d bytes  external vs own reference: %s" % (
            name, n, nt, size, " ".join("%s %.1e" % kv for kv in diffs.items())))
        print("    " + stats)


if __name__ == "__main__":
    main()
