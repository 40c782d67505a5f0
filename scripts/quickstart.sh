#!/usr/bin/env bash
# README command 1: install cclab and run the headline experiment on the simulator.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cclab run examples/cubic-vs-reno.toml --out runs/quickstart --overwrite
