"""grpo_trl: λ-GRPO for TRL and TRL steps dumped for grpo.c's `./grpo check` (pip install ./notes/trl).

    from grpo_trl import LambdaGRPOTrainer                          # λ-GRPO, a drop-in GRPOTrainer
    from grpo_trl import DumpGRPOTrainer, DumpLambdaGRPOTrainer     # + check_dump_dir=..., dumps
    grpo-trl-compare stepS.trl.tsv stepS.check.tsv                  # the console command (compare.py)
    grpo-trl-cpu-launch 2 train.py                                  # two processes on CPU (launch.py)

The trainers are imported on first use, so `grpo_trl.compare` needs neither torch nor TRL. Tested
TRL versions: guard.TESTED_TRL_VERSIONS; another one is refused unless allowed (guard.py)."""
__version__ = "0.1.0"

_LAZY = {"LambdaGRPOTrainer": "lambda_grpo", "GuardedGRPOTrainer": "lambda_grpo",
         "lambda_sizes": "lambda_grpo", "DumpGRPOTrainer": "check_dump", "DumpLambdaGRPOTrainer": "check_dump",
         "find_grpo_binary": "check_dump", "TESTED_TRL_VERSIONS": "guard", "find_dropout": "guard"}
__all__ = sorted(_LAZY)


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'grpo_trl' has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
