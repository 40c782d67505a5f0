"""The emulator's core (queue, rate, trace, loss with a seeded RNG) — its Rust
unit tests, run through cargo so `pytest tests/kernel` covers them too."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from kernel_helpers import REPO


def test_cclab_link_unit_tests_pass():
    cargo = shutil.which("cargo")
    if cargo is None:
        pytest.skip("cargo is not installed")
    env = dict(os.environ)
    env.setdefault("CARGO_TARGET_DIR", "/tmp/target-link")
    r = subprocess.run([cargo, "test", "-q", "-p", "cclab-link"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "test result: ok" in r.stdout
