"""grpo_trl.launch: N training processes on CPU on this machine, in one command.

    grpo-trl-cpu-launch N SCRIPT [ARGS...]      (or: python -m grpo_trl.launch N SCRIPT ...)

`accelerate launch --cpu --num_processes N` starts ONE process in accelerate 1.15 (its simple
launcher; several CPU processes only through mpirun). This runs accelerate's torchrun launcher
(--multi_gpu) with ACCELERATE_USE_CPU=true (TrainingArguments then acts as use_cpu=True, gloo
backend), the rendezvous on 127.0.0.1 at a port accelerate picks free, and GLOO_SOCKET_IFNAME=lo
unless set (gloo otherwise may pick an interface it cannot reach)."""
import os
import subprocess
import sys


def command(n, script_args):
    """(argv, env) launching script_args = [SCRIPT, ARGS...] as n CPU processes."""
    if n < 2:
        raise ValueError("grpo-trl-cpu-launch: N must be 2 or more (one process: run the script itself)")
    argv = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", str(n),
            "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
            "--main_process_ip", "127.0.0.1", "--main_process_port", "0", *script_args]
    env = dict(os.environ, ACCELERATE_USE_CPU="true")
    env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    return argv, env


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2 or not argv[0].isdigit() or int(argv[0]) < 2:
        print("usage: grpo-trl-cpu-launch N SCRIPT [ARGS...]   (N >= 2 processes on CPU; one process: run "
              "the script itself)", file=sys.stderr)
        return 2
    cmd, env = command(int(argv[0]), argv[1:])
    return subprocess.run(cmd, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
