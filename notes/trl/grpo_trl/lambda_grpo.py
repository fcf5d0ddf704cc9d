"""grpo_trl.lambda_grpo: λ-GRPO for TRL (tested with TRL 1.16.0), as `./grpo check
--objective lambda-grpo` computes it.

λ-GRPO (Sullivan & Koller, arXiv 2509.21154, eq. 11) divides each completion token's whole loss
term (policy term and k3 KL) by |λ(i,t)|: the number of completions of the same group whose first
t+1 tokens equal completion i's first t+1 tokens (i itself and exact duplicates included).
grpo.c's rule, followed here: |λ| is counted over each group's unpadded completion ids, every
completion included (also those that `mask_truncated_completions` takes out of the loss: they
are in the group's tree, they only get no loss); the loss aggregation is TRL's own.

    from grpo_trl import LambdaGRPOTrainer           # pip install ./notes/trl
    trainer = LambdaGRPOTrainer(model=..., reward_funcs=..., args=GRPOConfig(...), train_dataset=...)

Before training (GuardedGRPOTrainer): a TRL version other than guard.TESTED_TRL_VERSIONS is refused
(allow_untested_trl=True or GRPO_TRL_ALLOW_UNTESTED=1: a warning), and dropout of any kind
(guard.find_dropout) is warned about once; `self.untested_trl` and `self.dropout` keep both.

How (subclass overrides only; TRL's loss code is called, not copied):
  * `_generate` keeps the unpadded completion ids; `_generate_and_score_completions` gathers them
    from every process (a group's completions can sit on several processes), counts |λ| per
    group of `num_generations` consecutive completions (TRL's layout), and replaces this
    process's advantages a_i (B,) by a_i / |λ(i,t)| (B, T). TRL's `_compute_loss` takes (B, T)
    advantages. Every TRL policy term (clipped ratio, cispo, sapo, vespo, luspo; token- or
    sequence-level ratio) is linear in the advantage and reads only its sign otherwise, so at
    β = 0 this is exactly the per-token term divided by |λ|.
  * β > 0: the KL term must be divided too, and TRL adds β·k3 inside `_compute_loss`. The override
    calls TRL's `_compute_loss` with β = 0 (the weighted policy term, with all of TRL's
    normalisers), then adds β·Σ k3/|λ| aggregated with the loss type's normaliser
    (`_aggregate` below, one line per loss type, mirroring TRL 1.16; a test checks it against
    TRL's own loss with every |λ| set to 1). `use_bias_correction_kl` multiplies k3 by the
    ratio as TRL does (`./grpo check` has no such option: compare with it False).
"""
import warnings

import torch
from accelerate.utils import gather_object
from trl import GRPOTrainer

from .guard import check_trl_version, dropout_text, find_dropout


def lambda_sizes(completions, group_size):
    """|λ(i,t)| for completions grouped in consecutive blocks of group_size (TRL's layout).
    completions: list of token-id sequences (unpadded). Returns a list of lists of ints."""
    if group_size < 1 or len(completions) % group_size:
        raise ValueError(f"{len(completions)} completions do not form groups of {group_size}")
    keys = [g // group_size for g in range(len(completions))]
    return lambda_sizes_by_group(completions, keys)


def lambda_sizes_by_group(completions, group_keys):
    """|λ(i,t)| where completions with equal group_keys[i] form a group (anywhere in the list).
    A prefix tree per group: node = (group, parent node, token); |λ| = completions through it."""
    if len(completions) != len(group_keys):
        raise ValueError(f"{len(completions)} completions but {len(group_keys)} group keys")
    node_of, count, paths = {}, [], []
    for ids, key in zip(completions, group_keys):
        parent, path = ("root", key), []
        for tok in ids:
            edge = (parent, int(tok))
            node = node_of.get(edge)
            if node is None:
                node = node_of[edge] = len(count)
                count.append(0)
            count[node] += 1
            path.append(node)
            parent = node
        paths.append(path)
    return [[count[n] for n in path] for path in paths]


class GuardedGRPOTrainer(GRPOTrainer):
    """GRPOTrainer that refuses an untested TRL version before building and warns once about dropout."""

    def __init__(self, *args, allow_untested_trl=None, **kwargs):
        self.untested_trl = check_trl_version(type(self), allow_untested_trl)
        super().__init__(*args, **kwargs)
        self.dropout = find_dropout(self.model)   # after TRL's disable_dropout
        if self.dropout:
            lead = (f"{type(self).__name__}: training with dropout on: each forward pass draws its own mask, "
                    "so the ratio and the KL will be noise")
            warnings.warn(dropout_text(self.dropout, lead), stacklevel=2)


class LambdaGRPOTrainer(GuardedGRPOTrainer):
    """GRPOTrainer with λ-GRPO's per-token weights 1/|λ(i,t)| (see the module docstring)."""

    # ---- the completion ids, before TRL pads and masks them
    def _generate(self, prompts):
        out = super()._generate(prompts)
        self._lambda_ids = [[int(t) for t in ids] for ids in out[1]]  # out[1]: completion_ids
        return out

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        if "tool_mask" in output:
            raise NotImplementedError("LambdaGRPOTrainer: completions with tool or environment tokens "
                                      "(tool_mask) are not supported: |λ| would count tokens the model did not sample")
        ids = self._lambda_ids
        mode = "train" if self.model.training else "eval"
        k = self.num_generations if mode == "train" else self.num_generations_eval
        all_ids = gather_object(ids)  # every process's completions, in process order (as TRL's process_slice)
        start = self.accelerator.process_index * len(ids)
        sizes = self.compute_lambda_sizes(all_ids, k)[start:start + len(ids)]
        comp = output["completion_ids"]
        weight = torch.zeros(comp.shape, dtype=torch.float32, device=comp.device)
        for i, row in enumerate(sizes):
            if row:
                weight[i, :len(row)] = 1.0 / torch.tensor(row, dtype=torch.float32)
        adv = output["advantages"]
        if adv.dim() != 1:
            raise ValueError("LambdaGRPOTrainer expects TRL's per-completion advantages (B,)")
        output["advantages"] = adv.unsqueeze(1) * weight   # a_i / |λ(i,t)|, (B, T)
        output["lambda_weight"] = weight
        return output

    def compute_lambda_sizes(self, all_ids, group_size):
        """|λ| for the gathered completions (a method, so a test can plant a wrong count)."""
        return lambda_sizes(all_ids, group_size)

    # ---- the loss: TRL's, with the KL term weighted too
    def _get_per_token_logps_and_entropies(self, *args, **kwargs):
        out = super()._get_per_token_logps_and_entropies(*args, **kwargs)
        if getattr(self, "_lambda_capture", False):
            self._lambda_logps = out[0]
        return out

    def _compute_loss(self, model, inputs):
        if self.beta == 0.0:
            return super()._compute_loss(model, inputs)
        beta = self.beta
        self.beta, self._lambda_capture, self._lambda_logps = 0.0, True, None
        try:
            loss = super()._compute_loss(model, inputs)   # TRL's policy term with a_i/|λ|, no KL
        finally:
            self.beta, self._lambda_capture = beta, False
        logp = self._lambda_logps
        mask = inputs["completion_mask"]
        if "tool_mask" in inputs:
            mask = mask * inputs["tool_mask"]
        ref = inputs["ref_per_token_logps"]
        kl = torch.exp(ref - logp) - (ref - logp) - 1        # k3, as TRL
        if self.args.use_bias_correction_kl:                   # TRL's bias correction: × the ratio
            old = inputs.get("old_per_token_logps")
            log_ratio = logp - (logp.detach() if old is None else old)
            if self.importance_sampling_level == "sequence":
                log_ratio = ((log_ratio * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).unsqueeze(-1)
            kl = kl * torch.exp(log_ratio)
        loss = loss + beta * self._aggregate(kl * inputs["lambda_weight"], mask, inputs)
        # TRL logs the (unweighted) mean k3 when β > 0; it skipped that above, so log it here
        mode = "train" if self.model.training else "eval"
        totals = self.accelerator.reduce(torch.stack([(kl.detach() * mask).sum(), mask.sum().float()]),
                                         reduction="sum")
        self._metrics[mode]["kl"].append((totals[0] / totals[1].clamp(min=1.0)).item())
        return loss

    def _aggregate(self, per_token, mask, inputs):
        """TRL 1.16's aggregation of a per-token loss term for self.loss_type (its _compute_loss)."""
        train = self.model.training
        ga = self.current_gradient_accumulation_steps if train else 1.0
        x = per_token * mask
        if self.loss_type in ("grpo", "sapo"):
            return (x.sum(-1) / mask.sum(-1).clamp(min=1.0)).mean() / ga
        if self.loss_type == "bnpo":
            return x.sum() / mask.sum().clamp(min=1.0) / ga
        if self.loss_type == "dr_grpo":
            return x.sum() / (x.size(0) * self.max_completion_length) / ga
        if self.loss_type in ("cispo", "dapo", "vespo"):
            normalizer = inputs["num_items_in_batch"].clamp(min=1.0) / self.accelerator.num_processes
            if train:
                normalizer = normalizer * self.current_gradient_accumulation_steps / self.args.steps_per_generation
            return x.sum() / normalizer
        if self.loss_type == "luspo":
            return x.sum(-1).mean() / ga
        raise ValueError(f"LambdaGRPOTrainer: unknown loss_type {self.loss_type!r}")
