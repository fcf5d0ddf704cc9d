"""notes/trl/run_configs.py: runs real TRL training steps for a list of configurations, dumping
every step for ./grpo check (used by test_trl.py; runs alone or under `accelerate launch`).

    python3 notes/trl/run_configs.py CONFIGS.json OUT_DIR
    accelerate launch --num_processes 2 --cpu notes/trl/run_configs.py CONFIGS.json OUT_DIR

CONFIGS.json: a list of objects {name, trainer: grpo|lambda|lambda-unit|lambda-shifted|
lambda-no-truncated|lambda-local, model: DIR, steps, grpo_binary, [fake_trl_version,
allow_untested_trl, environ (set during the run), reward: dyadic|tenths|constant (tiny.py)] ...
GRPOConfig fields}. Each run writes OUT_DIR/NAME/stepS.{txt,trl.tsv,cmd}
and OUT_DIR/NAME/warnings.txt (the main process's warnings from grpo_trl); a run with
fake_trl_version (trl.__version__ set to it for this run) that is refused writes the refusal to
OUT_DIR/NAME/refused.txt instead. The lambda-* trainers with a planted bug exist for the
mutation tests."""
import faulthandler
import json
import os
import sys
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)   # this checkout's grpo_trl, and tiny.py

import trl  # noqa: E402
from trl import GRPOConfig  # noqa: E402

import tiny  # noqa: E402
from grpo_trl.check_dump import DumpGRPOTrainer, DumpLambdaGRPOTrainer  # noqa: E402
from grpo_trl.lambda_grpo import lambda_sizes, lambda_sizes_by_group  # noqa: E402


class UnitLambda(DumpLambdaGRPOTrainer):
    """Every |λ| = 1: must reproduce GRPOTrainer's loss and gradient (checks the KL re-aggregation)."""
    def compute_lambda_sizes(self, all_ids, k):
        return [[1] * len(ids) for ids in all_ids]


class ShiftedLambda(DumpLambdaGRPOTrainer):
    """Planted bug: |λ| of the previous position (off by one token)."""
    def compute_lambda_sizes(self, all_ids, k):
        sizes = lambda_sizes(all_ids, k)
        return [[k] + row[:-1] if row else row for row in sizes]


class NoTruncatedLambda(DumpLambdaGRPOTrainer):
    """Planted bug: masked truncated completions left out of the tree (grpo.c keeps them in)."""
    def compute_lambda_sizes(self, all_ids, k):
        stop = [*self.eos_token_ids, self._tokenizer.pad_token_id]
        kept = [ids if (not self.mask_truncated_completions or (ids and ids[-1] in stop)) else [-1 - i] * len(ids)
                for i, ids in enumerate(all_ids)]
        return lambda_sizes(kept, k)


class LocalLambda(DumpLambdaGRPOTrainer):
    """Planted bug: |λ| counted over this process's completions only (no gather across processes)."""
    def compute_lambda_sizes(self, all_ids, k):
        P, r = self.accelerator.num_processes, self.accelerator.process_index
        B = len(all_ids) // P
        keys = [g // k if r * B <= g < (r + 1) * B else ("elsewhere", g) for g in range(len(all_ids))]
        return lambda_sizes_by_group(all_ids, keys)


TRAINERS = {"grpo": DumpGRPOTrainer, "lambda": DumpLambdaGRPOTrainer, "lambda-unit": UnitLambda,
            "lambda-shifted": ShiftedLambda, "lambda-no-truncated": NoTruncatedLambda,
            "lambda-local": LocalLambda}
OWN_KEYS = {"name", "trainer", "model", "steps", "grpo_binary", "prompts_seed", "fake_trl_version",
            "allow_untested_trl", "environ", "reward"}
REWARDS = {"dyadic": tiny.reward, "tenths": tiny.reward_tenths, "constant": tiny.reward_constant}


def run(cfg, out_root):
    out = os.path.join(out_root, cfg["name"])
    fields = {k: v for k, v in cfg.items() if k not in OWN_KEYS}
    base = dict(output_dir=os.path.join(out, "trainer"), report_to=[], use_cpu=True, save_strategy="no",
                logging_steps=1, learning_rate=5e-4, seed=0, disable_dropout=True, max_completion_length=5,
                max_steps=cfg.get("steps", 1), disable_tqdm=True)
    base.update(fields)
    real_version, real_env = trl.__version__, dict(os.environ)
    trl.__version__ = cfg.get("fake_trl_version", real_version)
    os.environ.update(cfg.get("environ", {}))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            args = GRPOConfig(**base)
            trainer = TRAINERS[cfg["trainer"]](
                model=cfg["model"], reward_funcs=REWARDS[cfg.get("reward", "dyadic")], args=args,
                train_dataset=tiny.prompts(seed=cfg.get("prompts_seed", 0)), check_dump_dir=out,
                grpo_binary=cfg["grpo_binary"], allow_untested_trl=cfg.get("allow_untested_trl"))
            trainer.train()
    except RuntimeError as e:
        if "fake_trl_version" not in cfg or "untested" not in str(e):
            raise
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "refused.txt"), "w") as f:
            f.write(str(e) + "\n")
        return
    finally:
        trl.__version__ = real_version
        os.environ.clear()
        os.environ.update(real_env)
    if trainer.accelerator.is_main_process:
        with open(os.path.join(out, "warnings.txt"), "w") as f:
            for w in caught:
                if any(x in str(w.message) for x in ("check dump", "grpo_trl", "with dropout on")):
                    f.write(str(w.message).replace("\n", " ") + "\n")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: run_configs.py CONFIGS.json OUT_DIR")
    # a crash in native code (SIGABRT, SIGSEGV) prints every thread's Python stack; a Python error names
    # its process and configuration: under torchrun only the last lines of a failed rank reach the log
    faulthandler.enable()
    rank = os.environ.get("RANK", "0")
    with open(sys.argv[1]) as f:
        configs = json.load(f)
    for n, cfg in enumerate(configs):
        print(f"run_configs: rank {rank}: configuration {n + 1}/{len(configs)}: {cfg['name']}", file=sys.stderr, flush=True)
        try:
            run(cfg, sys.argv[2])
        except BaseException:
            print(f"run_configs: rank {rank}: configuration {cfg['name']} FAILED:\n{traceback.format_exc()}",
                  file=sys.stderr, flush=True)
            raise


if __name__ == "__main__":
    main()
