#!/usr/bin/env python3
"""notes/trl/test_trl.py: `make test-trl`. Real TRL training steps on CPU with a tiny local model
(notes/trl/tiny.py), dumped with grpo_trl.check_dump (this checkout's notes/trl/grpo_trl), run
through `./grpo check` with the command the dump prints (run from the dump's directory), and
compared with grpo_trl/compare.py (tolerance 1e-6 of the column scale; see compare.py). Last
line: `N passed, N failed`.

    python3 notes/trl/test_trl.py [--grpo ./grpo] [--keep DIR] [--processes 1,2] [--verl]
    python3 notes/trl/test_trl.py --compare-only     (compare.py's input checks alone: no TRL, seconds)

Covered, with 1 process and with 2 (grpo_trl.launch: accelerate's torchrun launcher on CPU, gloo;
a group's completions then sit on both processes):
  * GRPOTrainer (dump) vs `./grpo check --objective grpo` and LambdaGRPOTrainer vs
    `--objective lambda-grpo`: loss_type dapo, grpo, dr_grpo × β 0, 0.04 × scale_rewards group,
    none × μ = num_iterations 1, 2 (μ = 2: both iterations are dumped and checked); also dapo
    with mask_truncated_completions, scale_rewards batch, and (1 process) bnpo. Loss, every
    token's ∂loss/∂logp, every token's advantage, and |λ| (exact) must agree.
  * LambdaGRPOTrainer with every |λ| forced to 1 equals GRPOTrainer (loss and gradient) for
    every TRL loss type, β 0.04, use_bias_correction_kl True, μ 2: the KL term it re-adds is
    aggregated exactly as TRL's own.
  * Failures that must be detected: a planted off-by-one |λ|, masked truncated completions left
    out of the tree, (2 processes) |λ| counted without gathering the other process's completions, a wrong --clip-eps-high, a gradient changed by 1e-5, TRL's default
    use_bias_correction_kl=True (the gradient check has no such term); the dropout warning; the
    printed command uses only options `./grpo check --help` lists; compare.py's bad-input errors.
  * (1 process) Dropout of each kind is detected and named in the warning, the dump header and
    compare's verdict: GPT-2's nn.Dropout, Llama's attention_dropout under disable_dropout=True;
    none for a GPT-2 with dropout fields whose modules disable_dropout zeroed. The version guard
    (trl.__version__ faked): refused naming the overridden methods; allowed by the argument and by
    GRPO_TRL_ALLOW_UNTESTED=1, with the warning in the dump header and the verdict. Rewards 0.3
    in groups of 6: all-equal groups are named as float32 rounding, not a mismatch (and are one
    without the reward column).
  * From outside the checkout (check_outside): `pip install` of a copy of the package into this
    Python's environment, then in a temporary project: no binary (refused), GRPO_BIN (GRPO), PATH
    (λ-GRPO), and `grpo-trl-cpu-launch 2` (λ-GRPO, two processes); each printed command run from
    /, `grpo-trl-compare`, and a failing binary that leaves no stepS.check.tsv.
"""
import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)   # this checkout's grpo_trl, not an installed one

from grpo_trl import compare, launch  # noqa: E402

RESULTS = []
WORST = {}


def record(name, ok, detail=""):
    RESULTS.append(ok)
    print(f"{'ok  ' if ok else 'FAIL'} {name}" + (f": {detail}" if detail else ""), flush=True)


def matrix(model, binary, P):
    """The configurations checked against ./grpo check, for P processes (12 completions a step)."""
    batch = dict(num_generations=4, per_device_train_batch_size=12 // (2 * P), gradient_accumulation_steps=2)
    cfgs = []
    for trainer in ("grpo", "lambda"):
        for loss in ("dapo", "grpo", "dr_grpo"):
            for beta in (0.0, 0.04):
                for scale in ("group", "none"):
                    for mu in (1, 2):
                        cfgs.append(dict(name=f"{trainer}_{loss}_beta{beta}_{scale}_mu{mu}", trainer=trainer,
                                         loss_type=loss, beta=beta, scale_rewards=scale, num_iterations=mu,
                                         steps=mu, use_bias_correction_kl=False,
                                         epsilon_high=0.28 if loss == "dapo" else None, **batch))
        cfgs.append(dict(name=f"{trainer}_dapo_masktrunc", trainer=trainer, loss_type="dapo", beta=0.04,
                         mask_truncated_completions=True, num_iterations=2, steps=4, use_bias_correction_kl=False,
                         **batch))
        cfgs.append(dict(name=f"{trainer}_dapo_batchscale", trainer=trainer, loss_type="dapo", beta=0.0,
                         scale_rewards="batch", num_iterations=2, steps=2, **batch))
        if P == 1:   # bnpo = check's token-mean only for one micro-batch on one process
            cfgs.append(dict(name=f"{trainer}_bnpo_ga1", trainer=trainer, loss_type="bnpo", beta=0.04,
                             num_generations=4, per_device_train_batch_size=12, gradient_accumulation_steps=1,
                             num_iterations=2, steps=2, use_bias_correction_kl=False))
    for c in cfgs:
        c.update(model=model, grpo_binary=binary)
    return cfgs


def extras(model, dropout_model, llama_dropout, binary, P):
    batch = dict(num_generations=4, per_device_train_batch_size=12 // (2 * P), gradient_accumulation_steps=2)
    cfgs = []
    for loss in ("dapo", "grpo", "dr_grpo", "bnpo", "cispo", "sapo", "luspo", "vespo"):
        for trainer in ("grpo", "lambda-unit"):
            cfgs.append(dict(name=f"unit_{trainer}_{loss}", trainer=trainer, loss_type=loss, beta=0.04,
                             num_iterations=2, steps=2, use_bias_correction_kl=True, **batch))
    cfgs += [
        dict(name="plant_shifted", trainer="lambda-shifted", loss_type="dapo", beta=0.0, **batch),
        dict(name="plant_notrunc", trainer="lambda-no-truncated", loss_type="dapo", beta=0.04,
             mask_truncated_completions=True, num_iterations=2, steps=4, use_bias_correction_kl=False, **batch),
        # steps 2: at step 0 the policy is π_ref, k3 = 0 and the bias correction changes nothing
        dict(name="bias_correction_default", trainer="grpo", loss_type="dapo", beta=0.04, steps=2, **batch),
        dict(name="dropout", trainer="grpo", loss_type="dapo", beta=0.04, disable_dropout=False,
             use_bias_correction_kl=False, model=dropout_model, **batch),
    ]
    if P > 1:
        cfgs.append(dict(name="plant_local", trainer="lambda-local", loss_type="dapo", beta=0.0, steps=4, **batch))
    else:
        k6 = dict(batch, num_generations=6)
        fake = dict(fake_trl_version="1.99.0", loss_type="dapo", beta=0.0, **batch)
        cfgs += [
            dict(name="dropout_llama", trainer="lambda", loss_type="dapo", beta=0.04,
                 use_bias_correction_kl=False, model=llama_dropout, **batch),
            dict(name="dropout_zeroed", trainer="grpo", loss_type="dapo", beta=0.0, model=dropout_model,
                 **batch),
            dict(name="version_refused", trainer="lambda", **fake),
            dict(name="version_allowed_arg", trainer="grpo", allow_untested_trl=True, **fake),
            dict(name="version_allowed_env", trainer="lambda", environ={"GRPO_TRL_ALLOW_UNTESTED": "1"},
                 **fake),
            dict(name="rounding_mixed", trainer="lambda", loss_type="dapo", beta=0.04,
                 use_bias_correction_kl=False, reward="tenths", steps=2, **k6),
            dict(name="rounding_all_equal", trainer="grpo", loss_type="dapo", beta=0.0, reward="constant",
                 **k6)]
    for c in cfgs:
        c.setdefault("model", model)
        c["grpo_binary"] = binary
    return cfgs


def run_configs(cfgs, out, P):
    path = os.path.join(out, "configs.json")
    os.makedirs(out, exist_ok=True)
    with open(path, "w") as f:
        json.dump(cfgs, f)
    script = os.path.join(HERE, "run_configs.py")
    if P == 1:
        cmd = [sys.executable, script, path, out]
    else:   # grpo-trl-cpu-launch's command (`accelerate launch --cpu` would start one process)
        cmd, env = launch.command(P, [script, path, out])
    env = env if P > 1 else dict(os.environ)
    t0 = time.time()
    with open(os.path.join(out, "run.log"), "w") as log:
        rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env).returncode
    text = open(os.path.join(out, "run.log"), errors="replace").read()
    if rc != 0 and P > 1 and "FAILED:\n" not in text and re.search(r"exitcode\s*:\s*-\d+|Signal \d+", text):
        # a process killed by a signal with no Python error of ours (seen once: SIGABRT in one gloo process on
        # a CI machine, not reproduced): said here with its excerpt, and launched once more (a new free port)
        print(f"note P={P}: the launch ended with a process killed by a signal and no Python error; its log is "
              f"{os.path.join(out, 'run.1.log')}; launching once more\n" + failure_excerpt(text), flush=True)
        os.replace(os.path.join(out, "run.log"), os.path.join(out, "run.1.log"))
        for c in cfgs:
            shutil.rmtree(os.path.join(out, c["name"]), ignore_errors=True)
        with open(os.path.join(out, "run.log"), "w") as log:
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env).returncode
    record(f"P={P}: {len(cfgs)} TRL runs ({time.time() - t0:.0f} s)", rc == 0,
           "" if rc == 0 else f"exit {rc}, see {os.path.join(out, 'run.log')}\n"
           + failure_excerpt(open(os.path.join(out, "run.log"), errors="replace").read()))
    return rc == 0


def failure_excerpt(log):
    """What a failed launch's log says first: each rank's last configuration, its traceback or native crash
    report (run_configs.py prints them), then the log's last lines."""
    lines = log.splitlines()
    keep, last = set(), {}
    for i, line in enumerate(lines):
        m = re.match(r"(?:\[rank\d+\]:)?run_configs: rank (\d+): configuration (\d+/\d+: \S+)$", line)
        if m:
            last[m.group(1)] = m.group(2)
        if re.search(r"FAILED:$|Fatal Python error|terminate called|Traceback \(most recent|Error:|what\(\):", line):
            keep.update(range(i, min(i + 12, len(lines))))
    head = "".join(f"  rank {r}: last started configuration {c}\n" for r, c in sorted(last.items()))
    first = "\n".join(lines[i] for i in sorted(keep)[:120])
    return head + first + "\n  --- last lines of the log ---\n" + "\n".join(lines[-25:]) + "\n"


def steps_of(d):
    return sorted(int(m.group(1)) for f in os.listdir(d) if (m := re.fullmatch(r"step(\d+)\.cmd", f)))


def run_cmd(d, step):
    """Runs the printed command (grpo check ... && compare.py ...) as printed, from the dump's directory."""
    with open(os.path.join(d, f"step{step}.cmd")) as f:
        cmd = f.read().strip()
    p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, cwd=d)
    return cmd, p.returncode, p.stdout + p.stderr


def check_matrix(cfgs, out, P, help_options):
    for c in cfgs:
        d = os.path.join(out, c["name"])
        steps = steps_of(d) if os.path.isdir(d) else []
        if len(steps) != c.get("steps", 1):
            record(f"P={P} {c['name']}", False, f"{len(steps)} dumped steps, expected {c.get('steps', 1)}")
            continue
        for s in steps:
            cmd, rc, text = run_cmd(d, s)
            used = set(re.findall(r"(?<= )--[a-z-]+", cmd.split(">")[0]))
            bad = used - help_options
            caveat = "# caveat" in open(os.path.join(d, f"step{s}.trl.tsv")).read()
            ok = rc == 0 and not bad and not caveat
            detail = ""
            if rc == 0:
                _, rep = compare.compare(os.path.join(d, f"step{s}.trl.tsv"), os.path.join(d, f"step{s}.check.tsv"),
                                         out=io.StringIO(), quiet=True)
                for key in ("advantage", "dloss_dlogp", "loss"):
                    WORST[key] = max(WORST.get(key, 0.0), rep[key]["rel"])
                WORST["lambda_rows"] = WORST.get("lambda_rows", 0) + rep["lambda_rows"]
                WORST["tokens"] = WORST.get("tokens", 0) + rep["dloss_dlogp"]["cells"]
                detail = (f"{rep['dloss_dlogp']['cells']} tokens, rel. diff: dloss {rep['dloss_dlogp']['rel']:.1e}, "
                          f"loss {rep['loss']['rel']:.1e}, adv {rep['advantage']['rel']:.1e}"
                          + (f", |λ| {rep['lambda_rows'] - rep['lambda_mismatches']}/{rep['lambda_rows']} exact"
                             if rep["lambda_rows"] else ""))
            else:
                detail = f"exit {rc}: {text.strip()[-600:]}"
            if bad:
                detail += f"; options not in ./grpo check --help: {sorted(bad)}"
            if caveat:
                detail += "; a caveat in the dump header (dropout? untested TRL?)"
            record(f"P={P} {c['name']} step {s}", ok, detail)


def check_extras(out, P, binary):
    # |λ| = 1 LambdaGRPOTrainer == GRPOTrainer, every loss type
    for loss in ("dapo", "grpo", "dr_grpo", "bnpo", "cispo", "sapo", "luspo", "vespo"):
        a, b = os.path.join(out, f"unit_grpo_{loss}"), os.path.join(out, f"unit_lambda-unit_{loss}")
        worst = 0.0
        ok = True
        try:
            for s in (0, 1):
                ra, la = compare.read_table(os.path.join(a, f"step{s}.trl.tsv"), ["line", "t", "dloss_dlogp"])
                rb, lb = compare.read_table(os.path.join(b, f"step{s}.trl.tsv"), ["line", "t", "dloss_dlogp"])
                ok &= set(ra) == set(rb) and all(ra[k]["token"] == rb[k]["token"] for k in ra)
                ga = [float(ra[k]["dloss_dlogp"]) for k in sorted(ra)]
                gb = [float(rb[k]["dloss_dlogp"]) for k in sorted(ra)]
                scale = max(map(abs, ga))
                worst = max(worst, max(abs(x - y) for x, y in zip(ga, gb)) / scale,
                            abs(la - lb) / max(abs(la), sum(map(abs, ga))))
        except (compare.InputError, KeyError) as e:
            ok, worst = False, float("inf")
            print("   ", e)
        record(f"P={P} LambdaGRPOTrainer(|λ|=1) == GRPOTrainer, loss_type {loss}, β 0.04, bias-corrected KL, μ 2",
               ok and worst <= 1e-6, f"max rel. diff {worst:.1e} (loss and gradient, 2 steps)")
    # planted bugs and known differences: the compare must fail
    plants = [("plant_local", "planted: |λ| counted on each process alone (no gather)")] if P > 1 else []
    for name, what in plants + [("plant_shifted", "planted off-by-one |λ|"),
                       ("plant_notrunc", "planted: masked truncated completions out of the tree"),
                       ("bias_correction_default", "TRL's default use_bias_correction_kl=True (known: other gradient)")]:
        d = os.path.join(out, name)
        rcs, texts = [], []
        for s in steps_of(d):
            _, rc, text = run_cmd(d, s)
            rcs.append(rc)
            texts.append(text)
        mism = [t for t in texts if "MISMATCH" in t]
        record(f"P={P} detected: {what}", bool(rcs) and 1 in rcs and all(r in (0, 1) for r in rcs),
               f"compare exit codes {rcs}; " + (mism[0].strip().splitlines()[-1] if mism else "no mismatch"))
    d = os.path.join(out, "bias_correction_default")
    warned = "use_bias_correction_kl" in open(os.path.join(d, "warnings.txt")).read()
    record(f"P={P} warning for use_bias_correction_kl=True", warned)
    # dropout: warned, in the header and the verdict; the dump still reproduces TRL's step (the loss's values)
    cases = [("dropout", "GPT-2's nn.Dropout, disable_dropout=False", "nn.Dropout modules")]
    if P == 1:
        cases.append(("dropout_llama", "Llama's attention_dropout, disable_dropout=True",
                      "config.attention_dropout"))
    for name, what, source in cases:
        d = os.path.join(out, name)
        warned = open(os.path.join(d, "warnings.txt")).read().count("with dropout on")
        header = source in open(os.path.join(d, "step0.trl.tsv")).read()
        _, rc, text = run_cmd(d, 0)
        said = "but TRL trained with dropout on: ratio and KL are noise" in text
        record(f"P={P} dropout ({what}): warned once, named in the header, compare says 'match, but'",
               warned == 1 and header and rc == 0 and said,
               f"warnings {warned}, header names {source}: {header}, compare exit {rc}, verdict: {said}")
    if P != 1:
        return
    check_p1_extras(out)
    # a wrong check option on a μ = 2 step with clipped tokens, and a gradient moved by 1e-5
    d = os.path.join(out, "grpo_dapo_beta0.0_group_mu2")
    txt, check_out = os.path.join(d, "step1.txt"), os.path.join(d, "wrong_clip.tsv")
    cmd = open(os.path.join(d, "step1.cmd")).read().split(">")[0].replace("--clip-eps-high 0.28", "--clip-eps-high 0.2")
    with open(check_out, "w") as f:
        subprocess.run(cmd.split(), stdout=f, cwd=ROOT, check=True)
    rc = compare.main([os.path.join(d, "step1.trl.tsv"), check_out, "--quiet"])
    record("P=1 detected: --clip-eps-high 0.2 instead of TRL's epsilon_high 0.28 (μ=2 step)", rc == 1, f"exit {rc}")
    src, bad = os.path.join(d, "step1.trl.tsv"), os.path.join(d, "bad_grad.trl.tsv")
    lines = open(src).read().splitlines()
    rows = [i for i, line in enumerate(lines) if line.split("\t")[0].isdigit()]
    i = max(rows, key=lambda i: abs(float(lines[i].split("\t")[5])))   # the largest gradient, times 1 + 1e-5
    cells = lines[i].split("\t")
    cells[5] = repr(float(cells[5]) * (1 + 1e-5))
    lines[i] = "\t".join(cells)
    open(bad, "w").write("\n".join(lines) + "\n")
    rc = compare.main([bad, os.path.join(d, "step1.check.tsv"), "--quiet"])
    record("P=1 detected: the largest gradient times 1 + 1e-5", rc == 1, f"exit {rc}")
    # compare.py: bad input gets exit 2 and a FILE:LINE message
    cases = {"missing file": ([os.path.join(d, "nope.tsv"), src], "cannot open"),
             "check output without loss line": ([src, _cut(os.path.join(d, "step1.check.tsv"), out)], "no 'loss' line"),
             "another batch's output": ([src, os.path.join(out, "grpo_dapo_masktrunc", "step2.check.tsv")],
                                        "same batch"),
             "files swapped": ([os.path.join(d, "step1.check.tsv"), src], "header lacks")}
    for what, (argv, want) in cases.items():
        p = subprocess.run([sys.executable, os.path.join(HERE, "grpo_trl", "compare.py"), *argv],
                           capture_output=True, text=True)
        record(f"compare.py bad input ({what}): exit 2, message", p.returncode == 2 and want in p.stderr,
               p.stderr.strip()[:160])


def check_compare_inputs(out, binary):
    """compare.py on inputs made with ./grpo check alone (no TRL): a trainer dump built from check's output of a
    batch with one all-equal-reward group (rewards 0.3), then broken one way at a time."""
    d = os.path.join(out, "compare_inputs")
    os.makedirs(d, exist_ok=True)
    batch = ["group=0 reward=0.3 tokens=1,2,3", "group=0 reward=0.3 tokens=1,2,4", "group=0 reward=0.3 tokens=1,5",
             "group=1 reward=1 tokens=1,2", "group=1 reward=0 tokens=3,4"]
    txt, chk = os.path.join(d, "batch.txt"), os.path.join(d, "check.tsv")
    open(txt, "w").write("\n".join(batch) + "\n")
    with open(chk, "w") as f:
        subprocess.run([binary, "check", txt, "--objective", "grpo"], stdout=f, check=True)
    lines = open(chk).read().splitlines()
    head = lines[0].split("\t")
    rows = [dict(zip(head, line.split("\t"))) for line in lines[1:-1]]

    def dump(name, change=lambda r: None, header_only=False):
        path = os.path.join(d, name)
        out_lines = ["line\tt\ttoken\tadvantage\tlambda_size\tdloss_dlogp\treward"]
        for r in [] if header_only else rows:
            reward = re.search(r"reward=(\S+)", batch[int(r["line"]) - 1]).group(1)
            t = {"line": r["line"], "t": r["t"], "token": r["token"],
                 "advantage": repr(float(r["advantage"]) * float(r["weight"])), "lambda_size": r["lambda_size"],
                 "dloss_dlogp": r["dloss_dlogp"], "reward": reward}
            change(t)
            out_lines.append("\t".join(t[c] for c in ["line", "t", "token", "advantage", "lambda_size",
                                                      "dloss_dlogp", "reward"]))
        open(path, "w").write("\n".join(out_lines + [lines[-1]]) + "\n")
        return path

    def first(col, value):   # the first row's cell
        def change(t):
            if (t["line"], t["t"]) == (rows[0]["line"], rows[0]["t"]):
                t[col] = value
        return change

    def group0(col, value):   # every cell of the all-equal group 0 (lines 1-3)
        def change(t):
            if int(t["line"]) <= 3:
                t[col] = value
        return change

    def run(argv):
        try:
            return subprocess.run([sys.executable, os.path.join(HERE, "grpo_trl", "compare.py"), *argv],
                                  capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(argv, "timeout", "", "timed out")

    p = run([dump("good.tsv"), chk])
    record("compare.py on a dump built from check's own output: match", p.returncode == 0 and "match" in p.stdout,
           f"exit {p.returncode} {p.stderr.strip()[:120]}")
    def big(t):   # rewards 1e30 claimed for the all-equal group, whose advantages check has as 0
        group0("reward", "1e30")(t)
        group0("advantage", "0.5")(t)
    p = run([dump("reward_big.tsv", big), chk])
    record("compare.py: rewards 1e30 do not excuse advantages 0.5 in an all-equal group (exit 1)",
           p.returncode == 1 and "MISMATCH" in p.stdout, f"exit {p.returncode}")
    p = run([dump("rounding.tsv", group0("advantage", "0.0005")), chk])
    record("compare.py: advantages 5e-4 in the all-equal group of rewards 0.3 named as float32 rounding (exit 0)",
           p.returncode == 0 and "float32 rounding of the group mean" in p.stdout, f"exit {p.returncode}")
    p = run([dump("rounding_uneven.tsv", first("advantage", "0.0005")), chk])
    record("compare.py: one token's advantage 5e-4 in the all-equal group (not one a_i) is a mismatch (exit 1)",
           p.returncode == 1 and "rounding" not in p.stdout, f"exit {p.returncode}")
    hdr_mine, hdr_chk = dump("header_only.tsv", header_only=True), os.path.join(d, "header_only.check.tsv")
    open(hdr_chk, "w").write(lines[0] + "\n" + lines[-1] + "\n")
    copy = os.path.join(d, "check_copy.tsv")
    shutil.copy(chk, copy)
    fifo = os.path.join(d, "fifo")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    cases = {"reward inf": ([dump("reward_inf.tsv", group0("reward", "inf")), chk], "reward is not finite (inf)"),
             "reward abc in the all-equal group": ([dump("reward_abc.tsv", group0("reward", "abc")), chk],
                                                   "reward 'abc' is not a number"),
             "token x": ([dump("token_x.tsv", first("token", "x")), chk], "token 'x' is not an integer"),
             "token -": ([dump("token_dash.tsv", first("token", "-")), chk], "token '-' is not an integer"),
             "lambda_size 2.0": ([dump("lam_float.tsv", first("lambda_size", "2.0")), chk],
                                 "lambda_size '2.0' is not an integer"),
             "lambda_size x": ([dump("lam_x.tsv", first("lambda_size", "x")), chk], "lambda_size 'x' is not an integer"),
             "check's output twice": ([chk, chk], "same file"),
             "check's output as the trainer dump": ([copy, chk], "not a trainer dump"),
             "header-only files": ([hdr_mine, hdr_chk], "no tokens to compare"),
             "a FIFO as the trainer dump": ([fifo, chk], "not a regular file"),
             "a FIFO as check's output": ([dump("good.tsv"), fifo], "not a regular file")}
    for what, (argv, want) in cases.items():
        p = run(argv)
        record(f"compare.py bad input ({what}): exit 2, message", p.returncode == 2 and want in p.stderr,
               f"exit {p.returncode}: {p.stderr.strip()[:160]}")
    p = run([dump("nan_grad.tsv", first("dloss_dlogp", "nan")), chk])
    record("compare.py bad input (NaN dloss_dlogp): exit 2 with no verdict line printed before it",
           p.returncode == 2 and "dloss_dlogp is not finite" in p.stderr and not p.stdout.strip(),
           f"exit {p.returncode}, stdout {p.stdout.strip()[:80]!r}")


def check_p1_extras(out):
    d = os.path.join(out, "dropout_zeroed")
    _, rc, text = run_cmd(d, 0)
    quiet = not os.path.getsize(os.path.join(d, "warnings.txt")) and "dropout" not in text
    record("P=1 no dropout reported for GPT-2 dropout fields that disable_dropout zeroed", rc == 0 and quiet,
           f"compare exit {rc}")
    # the version guard, trl.__version__ faked as 1.99.0
    path = os.path.join(out, "version_refused", "refused.txt")
    text = open(path).read() if os.path.exists(path) else ""
    names = ["1.99.0", "1.16.0", "_generate,", "_generate_and_score_completions", "_compute_loss",
             "_get_per_token_logps_and_entropies", "allow_untested_trl=True", "GRPO_TRL_ALLOW_UNTESTED=1"]
    record("P=1 version guard: TRL 1.99.0 refused, naming the overridden methods and both overrides",
           all(n in text for n in names), text.strip()[:200] or "not refused")
    for name in ("version_allowed_arg", "version_allowed_env"):
        d = os.path.join(out, name)
        warned = "TRL 1.99.0 is untested" in open(os.path.join(d, "warnings.txt")).read()
        header = "# caveat: grpo_trl: TRL 1.99.0 is untested" in open(os.path.join(d, "step0.trl.tsv")).read()
        _, rc, text = run_cmd(d, 0)
        record(f"P=1 version guard overridden ({name[16:]}): warned, in the header and the verdict",
               warned and header and rc == 0 and "but grpo_trl: TRL 1.99.0 is untested" in text,
               f"warned {warned}, header {header}, compare exit {rc}")
    # float32 rounding of all-equal rewards 0.3 in groups of 6: named, not a mismatch (without rewards: one)
    for name in ("rounding_mixed", "rounding_all_equal"):
        d = os.path.join(out, name)
        texts = [run_cmd(d, s) for s in steps_of(d)]
        named = sum(t.count("float32 rounding of the group mean") for _, _, t in texts)
        rcs = [rc for _, rc, _ in texts]
        no_reward = os.path.join(d, "no_reward.trl.tsv")
        with open(os.path.join(d, "step0.trl.tsv")) as f, open(no_reward, "w") as g:
            g.write("".join(line.rsplit("\t", 1)[0] + "\n" if "\t" in line and not line.startswith("loss")
                            else line for line in f))
        old = compare.main([no_reward, os.path.join(d, "step0.check.tsv"), "--quiet"])
        record(f"P=1 {name}: all-equal groups of rewards 0.3 named as float32 rounding, the steps match",
               named > 0 and bool(rcs) and all(rc == 0 for rc in rcs) and old == 1,
               f"{named} groups named, compare exits {rcs}; without the reward column exit {old}")


def check_outside(work, grpo, model):
    """The installed package in a temporary project outside the checkout (see the module docstring)."""
    t0 = time.time()
    pkg, proj = os.path.join(work, "pkg"), tempfile.mkdtemp(prefix="grpo_trl_project.")
    os.makedirs(pkg)
    shutil.copy(os.path.join(HERE, "pyproject.toml"), pkg)
    shutil.copytree(os.path.join(HERE, "grpo_trl"), os.path.join(pkg, "grpo_trl"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps"]
    try:
        import setuptools  # noqa: F401  (present: build offline, without an isolated build environment)
        pip.append("--no-build-isolation")
    except ImportError:
        pass
    p = subprocess.run(pip + [pkg], capture_output=True, text=True, cwd=proj)
    record("outside: pip install of notes/trl (a copy) into this environment", p.returncode == 0,
           (p.stdout + p.stderr).strip()[-400:])
    if p.returncode != 0:
        return
    with open(os.path.join(proj, "train.py"), "w") as f:
        f.write(OUTSIDE_SCRIPT)
    bindir = os.path.dirname(sys.executable)
    path = [x for x in os.environ.get("PATH", "").split(os.pathsep)
            if x and not os.path.isfile(os.path.join(x, "grpo"))]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GRPO_BIN")}
    env["PATH"] = os.pathsep.join([bindir] + path)
    # one process for the three 1-process cases (the script sets GRPO_BIN and PATH between them), one launch
    one = subprocess.run([sys.executable, "train.py", model, "none,grpo,lambda", grpo], capture_output=True,
                         text=True, cwd=proj, env=env)
    refusal = [line for line in one.stdout.splitlines() if line.startswith("refused:")]
    record("outside: no grpo binary (no argument, no GRPO_BIN, none on PATH): refused before training",
           bool(refusal) and "pass grpo_binary=PATH, set GRPO_BIN=PATH" in refusal[0],
           (refusal or ["not refused"])[0])
    launcher = os.path.join(bindir, "grpo-trl-cpu-launch")
    two = subprocess.run([launcher, "2", "train.py", model, "lambda2", grpo], capture_output=True, text=True,
                         cwd=proj, env=env)
    for mode in ("grpo", "lambda", "lambda2"):
        p = two if mode == "lambda2" else one
        log = p.stdout + p.stderr
        where = {"grpo": "from GRPO_BIN", "lambda": "from PATH", "lambda2": "from GRPO_BIN"}[mode]
        installed = re.search(r"^grpo_trl from \S*site-packages", log, re.M) is not None
        d = os.path.join(proj, "dumps", mode)
        cmd_file = os.path.join(d, "step0.cmd")
        if p.returncode != 0 or not os.path.exists(cmd_file):
            record(f"outside: {mode} ran", False, f"exit {p.returncode}: {log.strip()[-600:]}")
            continue
        printed = open(cmd_file).read().strip()
        paths = [w for w in printed.split() if "/" in w]
        q = subprocess.run(["bash", "-c", printed], capture_output=True, text=True, cwd="/")
        c = subprocess.run([os.path.join(bindir, "grpo-trl-compare"), os.path.join(d, "step0.trl.tsv"),
                            os.path.join(d, "step0.check.tsv")], capture_output=True, text=True, cwd=proj)
        record(f"outside: {mode}: installed package, binary {where}; the printed command (absolute paths) "
               "run from / and grpo-trl-compare match",
               installed and where in log and printed in log and all(w.startswith("/") for w in paths)
               and q.returncode == 0 and "match:" in q.stdout and c.returncode == 0,
               f"exit {q.returncode}: {(q.stdout + q.stderr).strip().splitlines()[-1:]}; "
               f"grpo-trl-compare exit {c.returncode}")
    d = os.path.join(proj, "dumps", "grpo")
    if os.path.exists(os.path.join(d, "step0.cmd")):
        os.remove(os.path.join(d, "step0.check.tsv"))
        broken = open(os.path.join(d, "step0.cmd")).read().replace(grpo, os.path.join(proj, "missing"), 1)
        q = subprocess.run(["bash", "-c", broken], capture_output=True, text=True, cwd="/")
        record("outside: the printed command with a missing binary fails and leaves no stepS.check.tsv",
               q.returncode != 0 and not os.path.exists(os.path.join(d, "step0.check.tsv")),
               f"exit {q.returncode}")
    print(f"outside the checkout: {time.time() - t0:.0f} s", flush=True)
    shutil.rmtree(proj, ignore_errors=True)


OUTSIDE_SCRIPT = """\
# a user's project: python3 train.py MODEL_DIR MODE[,MODE...] GRPO (the installed grpo_trl). Modes: none (no
# binary anywhere: refused), grpo (GRPO_BIN=GRPO), lambda (GRPO's directory on PATH), lambda2 (GRPO_BIN=GRPO,
# run under grpo-trl-cpu-launch 2)
import os, sys
from datasets import Dataset
from trl import GRPOConfig
import grpo_trl
from grpo_trl import DumpGRPOTrainer, DumpLambdaGRPOTrainer

print("grpo_trl from", os.path.dirname(grpo_trl.__file__), flush=True)
model, modes, grpo = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
P = int(os.environ.get("WORLD_SIZE", "1"))
path = os.environ["PATH"]


def reward(completions, **kwargs):
    return [min(4, sum(w in ("a", "b") for w in c.split())) / 4.0 for c in completions]


args = GRPOConfig(output_dir="out", report_to=[], use_cpu=True, save_strategy="no", seed=0, max_steps=1,
                  num_generations=4, per_device_train_batch_size=12 // (2 * P), gradient_accumulation_steps=2,
                  max_completion_length=5, learning_rate=5e-4, disable_tqdm=True, beta=0.04,
                  use_bias_correction_kl=False)
data = Dataset.from_dict({"prompt": ["a b", "c d e", "f a", "b b c"] * 4})
for mode in modes:
    os.environ.pop("GRPO_BIN", None)
    os.environ["PATH"] = os.pathsep.join([os.path.dirname(grpo), path]) if mode == "lambda" else path
    if mode in ("grpo", "lambda2"):
        os.environ["GRPO_BIN"] = grpo
    cls = DumpGRPOTrainer if mode in ("none", "grpo") else DumpLambdaGRPOTrainer
    try:
        trainer = cls(model=model, reward_funcs=reward, args=args, train_dataset=data,
                      check_dump_dir="dumps/" + mode)
    except FileNotFoundError as e:
        print("refused:", e, flush=True)
        continue
    trainer.train()
"""


def _cut(path, out):
    cut = os.path.join(out, "cut.tsv")
    lines = open(path).read().splitlines()
    open(cut, "w").write("\n".join(lines[:len(lines) // 2]) + "\n")
    return cut


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--grpo", default=os.path.join(ROOT, "grpo"))
    ap.add_argument("--keep", help="work directory to keep (default: a temporary one, removed)")
    ap.add_argument("--processes", default="1,2")
    ap.add_argument("--verl", action="store_true", help="also run notes/verl/test_verl.py and count its tests")
    ap.add_argument("--compare-only", action="store_true",
                    help="only compare.py's input checks (needs ./grpo, not TRL or torch; seconds)")
    a = ap.parse_args()
    if not os.access(a.grpo, os.X_OK):
        sys.exit(f"test_trl.py: {a.grpo} not found: run `make grpo` first")
    if a.compare_only:
        work = a.keep or tempfile.mkdtemp(prefix="test_trl.")
        os.makedirs(work, exist_ok=True)
        check_compare_inputs(work, os.path.abspath(a.grpo))
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
        passed = sum(RESULTS)
        print(f"{passed} passed, {len(RESULTS) - passed} failed")
        return 0 if passed == len(RESULTS) else 1
    try:
        import trl  # noqa: F401
    except ImportError:
        sys.exit("test_trl.py: TRL is not installed: pip install -r notes/trl/requirements.txt")
    help_text = subprocess.run([a.grpo, "check", "--help"], capture_output=True, text=True).stdout
    help_options = set(re.findall(r"^\s+(--[a-z-]+)", help_text, re.M))
    work = a.keep or tempfile.mkdtemp(prefix="test_trl.")
    os.makedirs(work, exist_ok=True)
    t0 = time.time()
    import tiny
    model, dropout_model = tiny.build(os.path.join(work, "model")), tiny.build(os.path.join(work, "model_dropout"),
                                                                            dropout=0.1)
    llama_dropout = tiny.build(os.path.join(work, "llama_dropout"), dropout=0.1, arch="llama")
    binary = os.path.abspath(a.grpo)
    check_compare_inputs(work, binary)
    check_outside(work, binary, model)
    for P in (int(x) for x in a.processes.split(",")):
        out = os.path.join(work, f"p{P}")
        cfgs = matrix(model, binary, P)
        ext = extras(model, dropout_model, llama_dropout, binary, P)
        if run_configs(cfgs + ext, out, P):
            check_matrix(cfgs, out, P, help_options)
            check_extras(out, P, binary)
    if WORST:
        print(f"largest differences over {WORST.get('tokens', 0)} checked tokens (relative to the column scale): "
              f"dloss_dlogp {WORST['dloss_dlogp']:.2e}, loss {WORST['loss']:.2e}, advantage {WORST['advantage']:.2e}; "
              f"|λ| exact on {WORST.get('lambda_rows', 0)} tokens; {time.time() - t0:.0f} s")
    if a.verl:
        p = subprocess.run([sys.executable, os.path.join(ROOT, "notes", "verl", "test_verl.py"), "--grpo", a.grpo],
                           capture_output=True, text=True, cwd=ROOT)
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith(("ok", "FAIL"))]
        print("\n".join(lines), flush=True)
        m = re.search(r"^(\d+) passed, (\d+) failed$", p.stdout, re.M)
        if m is None:
            record("notes/verl/test_verl.py ran", False, (p.stdout + p.stderr).strip()[-800:])
        else:
            RESULTS.extend([True] * int(m.group(1)) + [False] * int(m.group(2)))
            if p.returncode != 0 and int(m.group(2)) == 0:
                record("notes/verl/test_verl.py exit status", False, f"exit {p.returncode}")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    passed = sum(RESULTS)
    print(f"{passed} passed, {len(RESULTS) - passed} failed")
    return 0 if passed == len(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
