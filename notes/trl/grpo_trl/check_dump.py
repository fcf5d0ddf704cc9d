"""grpo_trl.check_dump: dump TRL GRPO steps for `./grpo check`, without patching TRL
(tested with TRL 1.16.0; other versions: see guard.py).

    from grpo_trl import DumpGRPOTrainer, DumpLambdaGRPOTrainer      # pip install ./notes/trl
    trainer = DumpGRPOTrainer(model=..., reward_funcs=..., args=GRPOConfig(...), train_dataset=...,
                              check_dump_dir="dumps", check_dump_steps=[0, 1])   # None: every step
    trainer.train()

grpo.c's binary: the grpo_binary argument, else $GRPO_BIN, else `grpo` on PATH (find_grpo_binary;
none of them: refused before training); the one used is printed and named in every dump header.

For each dumped optimizer step S (every iteration of μ = num_iterations is its own step) the
main process writes, in check_dump_dir:
  stepS.txt      the batch in `./grpo check`'s format: one line per completion of the whole
                 step (every process, every micro-batch), in the global order of TRL's
                 generation batch; group = global index // num_generations; reward = the
                 completion's own reward (TRL's gathered rewards sliced with TRL's process_slice);
                 tokens = the unpadded completion ids; logp = the log-probs of the very forward
                 pass TRL's loss used; logp_old = TRL's old_per_token_logps when it has them
                 (else TRL uses logp.detach(), ratio 1, and the key is left out); logp_ref when
                 β != 0; truncated = TRL's own test (last id not EOS/pad).
  stepS.trl.tsv  TRL's own results for the same rows: the advantage TRL used per token (a_i, or
                 a_i/|λ| for LambdaGRPOTrainer), |λ| (LambdaGRPOTrainer; '-' otherwise), the
                 completion's reward (for compare's float32-rounding rule), and the
                 gradient of TRL's step loss with respect to each token's log-prob, captured by a
                 hook on the log-prob tensor during TRL's own backward; then `loss`, the step's
                 loss. Step loss = (1/P) Σ over processes and micro-batches of what
                 `_compute_loss` returned (DDP averages gradients over the P processes), and the
                 gradient is likewise the hook's gradient / P.
  stepS.cmd      the `./grpo check` command for this trainer's configuration and the compare
                 command (also printed; absolute paths; check's output is written to a .part file
                 renamed on success, so a failed check leaves no stepS.check.tsv), see check_command().
Header lines `# caveat: ...` (dropout on, an untested TRL version) reach compare's verdict.
Each process first writes stepS.rankR.jsonl; the main process merges them after a barrier.
"""
import json
import math
import os
import shlex
import shutil
import sys
import warnings

import torch
import trl

from .lambda_grpo import GuardedGRPOTrainer, LambdaGRPOTrainer
from .guard import dropout_text

HERE = os.path.dirname(os.path.abspath(__file__))

# the options `./grpo check --help` lists (what check_command may emit; a test checks the list)
CHECK_OPTIONS = {"--threads", "--max-new-tokens", "--objective", "--loss-agg", "--adv-std", "--adv-std-scope",
                 "--adv-eps", "--clip-eps-low", "--clip-eps-high", "--beta", "--mask-truncated"}


def check_command(trainer, lambda_grpo=None):
    """(options, problems): `./grpo check` options reproducing this trainer's loss, and the reasons
    (strings) why check cannot reproduce it exactly. options is None when no option set can."""
    args = trainer.args
    if lambda_grpo is None:
        lambda_grpo = isinstance(trainer, LambdaGRPOTrainer)
    problems = []
    P = trainer.accelerator.num_processes
    ga = args.gradient_accumulation_steps
    agg = {"dapo": "token-mean", "bnpo": "token-mean", "grpo": "seq-mean-token-mean",
           "dr_grpo": "seq-mean-token-sum-norm"}.get(trainer.loss_type)
    if agg is None:
        return None, [f"loss_type={trainer.loss_type!r} has no ./grpo check equivalent (check has the clipped "
                      "PPO term only: dapo, bnpo, grpo, dr_grpo)"]
    opts = ["--objective", "lambda-grpo" if lambda_grpo else "grpo", "--loss-agg", agg]
    if trainer.scale_rewards == "group":
        opts += ["--adv-std", "sample", "--adv-std-scope", "group"]
    elif trainer.scale_rewards == "batch":
        opts += ["--adv-std", "sample", "--adv-std-scope", "batch"]
    else:
        opts += ["--adv-std", "none"]
    opts += ["--adv-eps", "0.0001",   # TRL's fixed eps
             "--clip-eps-low", repr(float(trainer.epsilon_low)),
             # epsilon_high=None means epsilon_high = epsilon in TRL (GRPOTrainer.__init__)
             "--clip-eps-high", repr(float(trainer.epsilon_high)),
             "--beta", repr(float(trainer.beta)),
             "--max-new-tokens", str(int(trainer.max_completion_length))]
    if trainer.mask_truncated_completions:
        opts += ["--mask-truncated", "1"]
        if trainer.loss_type in ("grpo", "dr_grpo"):
            problems.append(f"mask_truncated_completions with loss_type={trainer.loss_type!r}: TRL still counts the "
                            "masked completions in its sequence count, check's --mask-truncated 1 does not")
    if trainer.loss_type == "bnpo" and P * ga > 1:
        problems.append("loss_type='bnpo' normalises by each micro-batch's own token count (per process); check's "
                        "token-mean divides by the whole step's: equal only with 1 process and "
                        "gradient_accumulation_steps=1")
    if args.steps_per_generation != ga:
        problems.append(f"steps_per_generation={args.steps_per_generation} != gradient_accumulation_steps={ga}: "
                        "an optimizer step is not one generation batch")
    if trainer.beta != 0.0 and args.use_bias_correction_kl:
        problems.append("use_bias_correction_kl=True (TRL's default) multiplies k3 by the ratio: same loss "
                        "on-policy, another gradient; check has no such term (use_bias_correction_kl=False)")
    if trainer.importance_sampling_level != "token":
        problems.append("importance_sampling_level='sequence' (GSPO): check's ratio is per token")
    if args.delta is not None:
        problems.append("delta (two-sided clipping of the ratio): check has no such clip")
    if trainer.top_entropy_quantile < 1.0:
        problems.append("top_entropy_quantile < 1 masks tokens by entropy: check has no such mask")
    if trainer.off_policy_mask_threshold is not None:
        problems.append("off_policy_mask_threshold (OPSM) drops sequences: check has no such mask")
    if getattr(trainer, "_entropy_bonus_enabled", False):
        problems.append("entropy bonus (entropy_coef): check has no entropy term")
    if trainer.use_vllm and trainer.vllm_importance_sampling_correction:
        problems.append("vLLM importance-sampling correction multiplies the policy term: check has no such factor")
    if trainer.multi_objective_aggregation != "sum_then_normalize":
        problems.append("multi_objective_aggregation='normalize_then_sum': check normalises one reward per completion")
    if getattr(trainer, "aux_loss_enabled", False):
        problems.append("the MoE load-balancing loss is added to TRL's loss: check has none")
    return opts, problems


def find_grpo_binary(binary=None):
    """(absolute path, where it came from) of grpo.c's binary: the argument, else $GRPO_BIN, else
    `grpo` on PATH. Raises FileNotFoundError when the one named, or any, is not an executable file."""
    for value, source in ((binary, "the grpo_binary argument"), (os.environ.get("GRPO_BIN"), "GRPO_BIN")):
        if value:
            path = os.path.abspath(os.path.expanduser(value))
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                raise FileNotFoundError(f"check dump: {source} names {value!r}, which is not an executable "
                                        "file (build grpo.c with `make grpo` and give its path)")
            return path, source
    path = shutil.which("grpo")
    if path is None:
        raise FileNotFoundError("check dump: no grpo binary: pass grpo_binary=PATH, set GRPO_BIN=PATH, or "
                                "put `grpo` on PATH (build it with `make grpo` in the grpo.c checkout)")
    return os.path.abspath(path), "PATH"


def _fmt(values):
    return ",".join(f"{float(x):.9g}" for x in values)


class CheckDumpMixin:
    """Mix into a GRPOTrainer subclass (before it): DumpGRPOTrainer, DumpLambdaGRPOTrainer."""

    def __init__(self, *args, check_dump_dir=None, check_dump_steps=None, grpo_binary=None, **kwargs):
        self.grpo_binary = self.grpo_binary_source = None
        if check_dump_dir is not None:   # before building: refuse early
            self.grpo_binary, self.grpo_binary_source = find_grpo_binary(grpo_binary)
        super().__init__(*args, **kwargs)
        self.check_dump_dir = None if check_dump_dir is None else os.path.abspath(check_dump_dir)
        self.check_dump_steps = None if check_dump_steps is None else set(int(s) for s in check_dump_steps)
        self._dump_pending = []
        self._dump_generation = -1
        if check_dump_dir is None:
            return
        if self.args.steps_per_generation != self.args.gradient_accumulation_steps:
            raise ValueError("check_dump_dir: needs steps_per_generation == gradient_accumulation_steps (TRL's "
                             f"default; here {self.args.steps_per_generation} and "
                             f"{self.args.gradient_accumulation_steps}), so that one optimizer step is one whole "
                             "generation batch (whole groups)")
        if self.accelerator.is_main_process:
            os.makedirs(self.check_dump_dir, exist_ok=True)
            print(f"check dump: grpo binary {self.grpo_binary} (from {self.grpo_binary_source})", flush=True)
        opts, problems = check_command(self)
        for p in problems:
            warnings.warn("check dump: ./grpo check will not reproduce this configuration exactly: " + p, stacklevel=2)
        self._check_opts = opts

    # ---- per completion: the unpadded ids, its own reward, its global index
    def _generate(self, prompts):
        out = super()._generate(prompts)
        self._dump_ids = [[int(t) for t in ids] for ids in out[1]]
        return out

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._dump_rewards_per_func = rewards_per_func   # gathered over every process, in process order
        return rewards_per_func

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        if self.check_dump_dir is None or not self.model.training:
            return output
        if "tool_mask" in output:
            raise NotImplementedError("check dump: completions with tool/environment tokens (tool_mask) cannot be "
                                      "checked: check would count tokens the model did not sample")
        ids = self._dump_ids
        B, dev = len(ids), output["completion_ids"].device
        rpf = self._dump_rewards_per_func
        rewards = (rpf * self.reward_weights.to(rpf.device).unsqueeze(0)).nansum(dim=1)   # TRL's sum of rewards
        rewards[torch.isnan(rpf).all(dim=1)] = float("nan")
        first = self.accelerator.process_index * B   # TRL's process_slice
        stop = [*self.eos_token_ids, self._tokenizer.pad_token_id]
        self._dump_generation += 1
        output["check_index"] = torch.arange(first, first + B, device=dev)
        output["check_reward"] = rewards[first:first + B].to(dev)
        output["check_len"] = torch.tensor([len(x) for x in ids], device=dev)
        output["check_truncated"] = torch.tensor([int(len(x) > 0 and x[-1] not in stop) for x in ids], device=dev)
        output["check_generation"] = torch.tensor(self._dump_generation, device=dev)
        return output

    # ---- the loss pass: its log-probs, and the gradient TRL's backward sends into them
    def _dumping(self):
        if self.check_dump_dir is None or not self.model.training:
            return False
        return self.check_dump_steps is None or self.state.global_step in self.check_dump_steps

    def _get_per_token_logps_and_entropies(self, *args, **kwargs):
        out = super()._get_per_token_logps_and_entropies(*args, **kwargs)
        if getattr(self, "_dump_capture", False):
            self._dump_logps = out[0]
        return out

    def _compute_loss(self, model, inputs):
        if not self._dumping():
            return super()._compute_loss(model, inputs)
        self._dump_capture, self._dump_logps = True, None
        try:
            loss = super()._compute_loss(model, inputs)
        finally:
            self._dump_capture = False
        logps = self._dump_logps
        n = inputs["check_len"].tolist()
        adv = inputs["advantages"]
        adv = adv.unsqueeze(1).expand_as(logps) if adv.dim() == 1 else adv
        rec = {"loss": float(loss.detach()), "grad": None, "n": n,
               "index": inputs["check_index"].tolist(), "reward": inputs["check_reward"].tolist(),
               "truncated": inputs["check_truncated"].tolist(),
               "tokens": [row[:k] for row, k in zip(inputs["completion_ids"].tolist(), n)],
               "logp": logps.detach().float().cpu(), "adv": adv.detach().float().cpu(),
               "generation": int(inputs["check_generation"]),
               "iteration": (self._step // self.args.steps_per_generation) % self.num_iterations}
        for key in ("old_per_token_logps", "ref_per_token_logps", "lambda_weight"):
            rec[key] = inputs[key].detach().float().cpu() if key in inputs else None
        if logps.requires_grad:
            def hook(grad, rec=rec):
                rec["grad"] = grad.detach().float().cpu()
            logps.register_hook(hook)
        self._dump_pending.append(rec)
        return loss

    def training_step(self, model, inputs, num_items_in_batch):
        out = super().training_step(model, inputs, num_items_in_batch)   # TRL's forward, loss, backward
        if self.check_dump_dir is not None and self._step % self.current_gradient_accumulation_steps == 0:
            if self._dumping():
                self._write_dump()
            self._dump_pending = []
        return out

    def _write_dump(self):
        P, rank = self.accelerator.num_processes, self.accelerator.process_index
        step = self.state.global_step
        base = os.path.join(self.check_dump_dir, f"step{step}")
        rows = []
        for rec in self._dump_pending:
            for b, k in enumerate(rec["n"]):
                grad = rec["grad"][b, :k] / P if rec["grad"] is not None else torch.zeros(k)
                row = {"index": rec["index"][b], "reward": rec["reward"][b], "tokens": rec["tokens"][b],
                       "truncated": rec["truncated"][b], "logp": rec["logp"][b, :k].tolist(),
                       "adv": rec["adv"][b, :k].tolist(), "grad": grad.tolist()}
                for key, name in (("old_per_token_logps", "logp_old"), ("ref_per_token_logps", "logp_ref")):
                    if rec[key] is not None:
                        row[name] = rec[key][b, :k].tolist()
                if rec["lambda_weight"] is not None:
                    row["lambda"] = [round(1.0 / w) for w in rec["lambda_weight"][b, :k].tolist()]
                rows.append(row)
        meta = {"loss": sum(r["loss"] for r in self._dump_pending) / P,
                "generation": self._dump_pending[0]["generation"], "iteration": self._dump_pending[0]["iteration"]}
        with open(f"{base}.rank{rank}.jsonl", "w") as f:
            f.write(json.dumps(meta) + "\n")
            for row in rows:
                f.write(json.dumps(row) + "\n")
        self.accelerator.wait_for_everyone()
        if self.accelerator.is_main_process:
            merge_rank_files(base, P, self, self._check_opts)
        self.accelerator.wait_for_everyone()


def merge_rank_files(base, P, trainer, opts):
    """Merge base.rank*.jsonl into base.txt (check input), base.trl.tsv (TRL's results), base.cmd."""
    rows, loss, meta = [], 0.0, None
    for r in range(P):
        with open(f"{base}.rank{r}.jsonl") as f:
            meta = json.loads(f.readline())
            loss += meta["loss"]
            rows += [json.loads(line) for line in f]
    rows.sort(key=lambda row: row["index"])
    idx = [row["index"] for row in rows]
    if idx != list(range(len(rows))):
        raise RuntimeError(f"{base}: the processes' completions are not one generation batch (indices {idx[:8]}...)")
    k = trainer.num_generations
    names = [type(trainer).__name__, f"TRL {trl.__version__} step {trainer.state.global_step}",
             f"generation {meta['generation']}", f"iteration {meta['iteration']}", f"processes {P}",
             f"num_generations {k}", f"grpo binary {trainer.grpo_binary} (from {trainer.grpo_binary_source})"]
    head = "# " + ", ".join(names) + "\n" + "".join(f"# caveat: {c}\n" for c in caveats(trainer))
    first = head.count("\n") + 1   # the first completion's line in stepS.txt
    with open(base + ".txt", "w") as f, open(base + ".trl.tsv", "w") as g:
        f.write(head)
        g.write(head)
        g.write("line\tt\ttoken\tadvantage\tlambda_size\tdloss_dlogp\treward\n")
        for i, row in enumerate(rows):
            if not math.isfinite(row["reward"]):
                raise RuntimeError(f"{base}: completion {i} has no reward (every reward function returned None)")
            line = (f"group={row['index'] // k} reward={row['reward']:.9g} tokens={','.join(map(str, row['tokens']))} "
                    f"logp={_fmt(row['logp'])}")
            for name in ("logp_old", "logp_ref"):
                if name in row:
                    line += f" {name}={_fmt(row[name])}"
            f.write(line + f" truncated={row['truncated']}\n")
            for t, tok in enumerate(row["tokens"]):
                lam = row["lambda"][t] if "lambda" in row else "-"
                g.write(f"{first + i}\t{t}\t{tok}\t{row['adv'][t]:.9g}\t{lam}\t{row['grad'][t]:.9g}\t"
                        f"{row['reward']:.9g}\n")
        g.write(f"loss\t{loss:.9g}\n")
    cmd = command_lines(base, trainer, opts)
    with open(base + ".cmd", "w") as f:
        f.write(cmd + "\n")
    print(cmd, flush=True)


def caveats(trainer):
    """What makes a matching step less than it seems (written as `# caveat:` header lines)."""
    found = [dropout_text(trainer.dropout)] if trainer.dropout else []
    return found + ([trainer.untested_trl] if trainer.untested_trl else [])


def command_lines(base, trainer, opts):
    """The shell command: ./grpo check into stepS.check.tsv (via a .part file renamed on success), then
    compare.py; absolute paths, so it runs from any directory."""
    if opts is None:
        return f"# {base}.txt: no ./grpo check command reproduces this configuration (see the warnings)"
    q = shlex.quote
    out = q(base + ".check.tsv")
    return (f"{q(trainer.grpo_binary)} check {q(base + '.txt')} {' '.join(opts)} > {out}.part && "
            f"mv {out}.part {out} && {q(sys.executable)} {q(os.path.join(HERE, 'compare.py'))} "
            f"{q(base + '.trl.tsv')} {out}")


class DumpGRPOTrainer(CheckDumpMixin, GuardedGRPOTrainer):
    """TRL's GRPOTrainer, dumping steps for `./grpo check --objective grpo`."""


class DumpLambdaGRPOTrainer(CheckDumpMixin, LambdaGRPOTrainer):
    """LambdaGRPOTrainer, dumping steps for `./grpo check --objective lambda-grpo`."""
