"""notes/verl/lambda_grpo_verl.py: λ-GRPO for verl (tested at function level with verl 0.9.1).

λ-GRPO divides each response token's loss term by |λ(i,t)|, the number of responses of the same
prompt (same `uid`) whose first t+1 tokens equal response i's. At β = 0 (no KL loss) that is
exactly GRPO with per-token advantages a_i / |λ(i,t)|: every verl policy term used here (the
vanilla clipped loss, its dual clip at clip_ratio_c included) is positively homogeneous in the
advantage, and the aggregation (agg_loss) is linear in the per-token loss.

Use (the driver process, before the trainer is built):

    import lambda_grpo_verl            # PYTHONPATH=notes/verl
    lambda_grpo_verl.install()         # then algorithm.adv_estimator=lambda_grpo

install() registers the advantage estimator "lambda_grpo" (register()) and wraps verl's
compute_advantage (verl.trainer.ppo.ray_trainer and the v1 trainer's import of it), because
verl 0.9.1 passes a registered estimator only token_level_rewards, response_mask, index (uid)
and config, not the response ids that |λ| needs; the wrapper passes data.batch["responses"].

β > 0 (actor.use_kl_loss=True) needs more than advantages: verl adds
kl_loss_coef · agg_loss(kl_penalty(log_prob, ref_log_prob)) in the actor
(verl/workers/utils/losses.py ppo_loss; dp_actor.update_policy in the legacy worker), so the
per-token kld must be multiplied by 1/|λ| there before agg_loss: carry the weights in the batch
(lambda_weights(...) below, e.g. as data.batch["lambda_weight"]) and patch that line. Not done
here; the test composes it as the actor does, with the weights.
"""

import torch


def lambda_sizes(responses, response_mask, uid):
    """|λ(i,t)| (bs, T) int64, 0 beyond each response's length. responses (bs, T) token ids,
    response_mask (bs, T) 1 on the response's tokens (a prefix of the row, as verl's), uid (bs,)
    the group of each row (any hashable; rows of one group can be anywhere in the batch)."""
    responses = torch.as_tensor(responses)
    mask = torch.as_tensor(response_mask).bool()
    bs, T = responses.shape
    if len(uid) != bs:
        raise ValueError(f"{bs} responses but {len(uid)} uids")
    lengths = mask.sum(-1)
    if not torch.equal(mask, torch.arange(T, device=mask.device).unsqueeze(0) < lengths.unsqueeze(1)):
        raise ValueError("response_mask is not a prefix mask (1s then 0s) in every row: |λ| is defined on the "
                         "response's leading tokens")
    ids = responses.tolist()
    node_of, count, paths = {}, [], []
    for i in range(bs):
        parent, path = ("root", uid[i]), []
        for tok in ids[i][:int(lengths[i])]:
            edge = (parent, tok)
            node = node_of.get(edge)
            if node is None:
                node = node_of[edge] = len(count)
                count.append(0)
            count[node] += 1
            path.append(node)
            parent = node
        paths.append(path)
    out = torch.zeros((bs, T), dtype=torch.int64)
    for i, path in enumerate(paths):
        if path:
            out[i, :len(path)] = torch.tensor([count[n] for n in path])
    return out.to(responses.device)


def lambda_weights(responses, response_mask, uid, dtype=torch.float32):
    """1/|λ(i,t)| on response tokens, 0 elsewhere (bs, T)."""
    sizes = lambda_sizes(responses, response_mask, uid)
    return torch.where(sizes > 0, 1.0 / sizes.clamp(min=1).to(dtype), torch.zeros((), dtype=dtype))


def compute_lambda_grpo_outcome_advantage(token_level_rewards, response_mask, index, responses=None,
                                          epsilon=1e-6, norm_adv_by_std_in_grpo=True, config=None, **kwargs):
    """verl's own compute_grpo_outcome_advantage, then each token's advantage divided by |λ(i,t)|."""
    from verl.trainer.ppo import core_algos
    if responses is None:
        raise ValueError("lambda_grpo needs the response ids (responses=data.batch['responses']): call "
                         "lambda_grpo_verl.install() so verl's compute_advantage passes them")
    if config is not None:
        norm_adv_by_std_in_grpo = config.get("norm_adv_by_std_in_grpo", norm_adv_by_std_in_grpo)
    adv, ret = core_algos.compute_grpo_outcome_advantage(
        token_level_rewards=token_level_rewards, response_mask=response_mask, index=index, epsilon=epsilon,
        norm_adv_by_std_in_grpo=norm_adv_by_std_in_grpo)
    w = lambda_weights(responses, response_mask, index, dtype=adv.dtype).to(adv.device)
    return adv * w, ret * w


def register():
    """Register the advantage estimator "lambda_grpo" in verl's registry (core_algos only)."""
    from verl.trainer.ppo import core_algos
    if "lambda_grpo" not in core_algos.ADV_ESTIMATOR_REGISTRY:
        core_algos.register_adv_est("lambda_grpo")(compute_lambda_grpo_outcome_advantage)


def make_compute_advantage(original, compute_response_mask):
    """verl's compute_advantage(data, adv_estimator, ...) with "lambda_grpo" routed to the estimator
    above, given data.batch["responses"]; every other estimator goes to `original` unchanged."""
    def compute_advantage(data, adv_estimator, *args, norm_adv_by_std_in_grpo=True, config=None, **kwargs):
        if str(getattr(adv_estimator, "value", adv_estimator)) != "lambda_grpo":
            return original(data, adv_estimator, *args, norm_adv_by_std_in_grpo=norm_adv_by_std_in_grpo,
                            config=config, **kwargs)
        if "response_mask" not in data.batch.keys():
            data.batch["response_mask"] = compute_response_mask(data)
        adv, ret = compute_lambda_grpo_outcome_advantage(
            data.batch["token_level_rewards"], data.batch["response_mask"], data.non_tensor_batch["uid"],
            responses=data.batch["responses"], norm_adv_by_std_in_grpo=norm_adv_by_std_in_grpo)
        data.batch["advantages"], data.batch["returns"] = adv, ret
        return data
    compute_advantage._lambda_grpo = True
    return compute_advantage


def install():
    """register(), and make verl's trainers (legacy ray_trainer and v1) use the wrapped
    compute_advantage. Needs verl's full install (ray_trainer imports torchdata, torchtitan, ...)."""
    register()
    from verl.trainer.ppo import ray_trainer
    if getattr(ray_trainer.compute_advantage, "_lambda_grpo", False):
        return
    wrapped = make_compute_advantage(ray_trainer.compute_advantage, ray_trainer.compute_response_mask)
    ray_trainer.compute_advantage = wrapped
    try:
        from verl.trainer.ppo.v1 import utils as v1_utils
        v1_utils.compute_advantage = wrapped
    except ImportError:
        pass
