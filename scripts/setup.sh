#!/usr/bin/env bash
# Install everything cclab needs on a Debian-like machine, idempotently.
#   bash scripts/setup.sh          runtime: the Python package (compiles the Rust engine and link emulator)
#   bash scripts/setup.sh --test   also what the test suite needs (iperf3, chromium, pytest, Dask)
# Needs a Rust toolchain ≥ 1.82 (cargo) and Python ≥ 3.11 with pip; as root it
# apt-installs the system packages, otherwise it says which are missing.
# Which Python: an active virtual environment; else python3 unless it is
# externally managed (PEP 668); else the project venv .venv, created here
# (scripts/python-env.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/python-env.sh

want_test=0
[ "${1:-}" = "--test" ] && want_test=1

say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

# 1. Toolchains that must already be there (no registry ships a current Rust).
if ! command -v cargo >/dev/null 2>&1; then
  echo "error: cargo (Rust ≥ 1.82) is required to build the simulator; install it with rustup" >&2
  exit 1
fi
rust_minor=$(rustc --version | sed -E 's/^rustc 1\.([0-9]+).*/\1/')
if [ "$rust_minor" -lt 82 ]; then
  echo "error: Rust ≥ 1.82 is required (found $(rustc --version))" >&2
  exit 1
fi
python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' || {
  echo "error: Python ≥ 3.11 is required (found $(python3 --version))" >&2; exit 1; }
cclab_choose_python

# 2. System packages: iperf3 for the kernel backend, chromium for the report test, g++ for
#    the ns-3 comparison's test (it builds a dumbbell against the ns3 wheel), python3-venv
#    where the project venv must be created and ensurepip is missing.
pkgs=(iperf3 iproute2)
[ $want_test -eq 1 ] && pkgs+=(chromium g++)
if [ "$CCLAB_NEEDS_VENV" -eq 1 ] && ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
  pkgs+=("python3-venv")
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    say "not root: skipping system packages ${missing[*]} (kernel-backend / report tests will skip)"
  fi
fi

# 3. The Python environment: the project venv where python3 is externally managed.
if [ "$CCLAB_NEEDS_VENV" -eq 1 ]; then
  say "python3 is externally managed (PEP 668): creating the project venv .venv"
  python3 -m venv .venv
fi
say "python: $PY"

# 4. The Python package; pip builds the Rust engine (simulator + link emulator) through maturin.
extra=""
[ $want_test -eq 1 ] && extra="[test]"
say "pip install -e .$extra (compiles the Rust simulator and link emulator; first build takes a few minutes)"
"$PY" -m pip install -q --disable-pip-version-check --root-user-action=ignore -e ".$extra"
say "done: $(cclab version 2>/dev/null | sed -n 1p) ($PY)"
