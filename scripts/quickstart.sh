#!/usr/bin/env bash
# README command 1: install cclab and run the headline experiment on the simulator.
# The Python environment is chosen as in scripts/python-env.sh (active venv,
# else python3 unless externally managed, else .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/python-env.sh
cclab_choose_python
cclab run examples/cubic-vs-reno.toml --out runs/quickstart --overwrite
if [ "$PY" = "$PWD/.venv/bin/python" ] && [ "${VIRTUAL_ENV:-}" != "$PWD/.venv" ]; then
  echo "cclab is installed in .venv: run 'source .venv/bin/activate' (or use .venv/bin/cclab) for the commands in README.md"
fi
