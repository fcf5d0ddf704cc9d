#!/bin/sh
# notes/trl/install.sh VENV_DIR: a virtual environment with what `make test-trl` needs
# (notes/trl/requirements.txt, then verl 0.9.1 without its dependencies). Safe to rerun: pip
# leaves satisfied requirements alone. Then: make test-trl TRL_PYTHON=VENV_DIR/bin/python (which
# also installs the package grpo_trl; by hand: VENV_DIR/bin/pip install ./notes/trl)
set -eu
venv=${1:?usage: sh notes/trl/install.sh VENV_DIR}
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps verl==0.9.1
"$venv/bin/python" -c "import trl, verl.trainer.ppo.core_algos; print('install.sh: trl', trl.__version__, 'and verl core_algos import')"
