#!/usr/bin/env bash
# README command 2: install everything and run the whole test suite.
# Kernel-backend tests need root (they create and remove their own network
# namespaces); elsewhere they skip with the reason. The Python environment is
# chosen as in scripts/python-env.sh (active venv, else python3 unless
# externally managed, else .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
. scripts/python-env.sh
cclab_choose_python
echo "== Rust: engine, algorithms, link emulator =="
cargo test --release --locked -p cclab-netmodel -p cclab-sim -p cclab-link
echo "== Python: schema, metrics, records, CLI, sweeps, figures, kernel backend, the wheel =="
"$PY" -m pytest -q -rs tests  # -rs: every skipped test with its reason
