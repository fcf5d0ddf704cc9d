"""grpo_trl.guard: what the trainers check before training: the TRL version (they override private
TRL methods) and dropout of every kind (it makes the ratio and the KL noise)."""
import os
import warnings

import torch

TESTED_TRL_VERSIONS = ("1.16.0",)
ALLOW_ENV = "GRPO_TRL_ALLOW_UNTESTED"   # "1": an untested TRL version is a warning, not a refusal


def overridden_methods(cls):
    """Names of the GRPOTrainer methods that grpo_trl's classes in cls's MRO define again."""
    from trl import GRPOTrainer
    names = {name for c in cls.__mro__ if c.__module__.startswith("grpo_trl.")
             for name in vars(c) if name != "__init__" and callable(getattr(GRPOTrainer, name, None))}
    return sorted(names)


def check_trl_version(cls, allow=None):
    """None on a tested TRL version; on another one, raises RuntimeError, or (allow True, or the
    environment variable GRPO_TRL_ALLOW_UNTESTED=1) warns and returns the warning's text."""
    import trl
    version = getattr(trl, "__version__", "unknown")
    if version in TESTED_TRL_VERSIONS:
        return None
    if allow is None:
        allow = os.environ.get(ALLOW_ENV, "") not in ("", "0")
    text = (f"grpo_trl: TRL {version} is untested (tested: {', '.join(TESTED_TRL_VERSIONS)}); {cls.__name__} "
            f"overrides TRL's private methods {', '.join(overridden_methods(cls))}, which may have changed")
    if not allow:
        raise RuntimeError(text + f". To run anyway: {cls.__name__}(..., allow_untested_trl=True) or "
                           f"{ALLOW_ENV}=1 (then every dump header repeats this warning)")
    warnings.warn(text, stacklevel=3)
    return text


CONFIG_KEYS = ("dropout", "pdrop")   # config fields named like these: attention_dropout, resid_pdrop, ...


def config_dropout(config, prefix="config"):
    """'config.NAME=value' for every numeric dropout field above 0 (sub-configs included)."""
    found = []
    items = config.to_dict().items() if hasattr(config, "to_dict") else config.items()
    for key, value in ((str(k), v) for k, v in items):
        if isinstance(value, dict):
            found += config_dropout(value, f"{prefix}.{key}")
        elif (any(k in key for k in CONFIG_KEYS) and isinstance(value, (int, float))
              and not isinstance(value, bool) and value > 0):
            found.append(f"{prefix}.{key}={value:g}")
    return found


def find_dropout(model):
    """[] when two train-mode forward passes on one input agree; else what draws random masks: the
    nn.Dropout modules with p > 0, the config's dropout fields above 0 (e.g. Llama's
    attention_dropout, applied inside the attention call, which disable_dropout does not reach), and
    the largest logit difference. The RNG state and the train/eval mode are restored."""
    modules = [name for name, m in model.named_modules()
               if isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0]
    fields = config_dropout(model.config) if hasattr(model, "config") else []
    try:
        param = next(model.parameters())
        vocab = model.get_input_embeddings().num_embeddings
        ids = (torch.arange(16, device=param.device) * 7 + 1).remainder(vocab).unsqueeze(0)
        devices = [param.device] if param.device.type == "cuda" else []
        was_training = model.training
        try:
            with torch.random.fork_rng(devices=devices), torch.no_grad():
                model.train()
                a, b = (model(input_ids=ids).logits.float() for _ in range(2))
        finally:
            model.train(was_training)
        diff = float((a - b).abs().max())
        if diff <= 1e-5 * max(float(a.abs().max()), 1.0):
            return []
        test = f"two train-mode passes on one input differ by up to {diff:.2g} in a logit"
    except Exception as e:   # a model that cannot run here (e.g. sharded): the static findings only
        if not modules and not fields:
            return []
        test = f"not confirmed by running the model ({type(e).__name__}: {e})"
    named = [f"{len(modules)} nn.Dropout modules with p > 0 (e.g. {modules[0]})"] if modules else []
    return named + fields + [test]


def dropout_text(found, lead="TRL trained with dropout on: ratio and KL are noise"):
    """The warning (or, by default, the dump's caveat) for find_dropout's findings."""
    return (lead + " (" + "; ".join(found) + "; "
            "set GRPOConfig(disable_dropout=True) and the config's dropout fields to 0: disable_dropout "
            "zeroes only nn.Dropout modules)")
