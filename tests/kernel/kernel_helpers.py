"""Helpers shared by the kernel-backend tests (fixtures are in conftest.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cclab.kernel import machine, netns

REPO = Path(__file__).resolve().parents[2]


def scenario_ir(**overrides: Any) -> dict[str, Any]:
    """The IR of a small scenario (via the real schema + resolver)."""
    from cclab.resolve import resolve
    from cclab.scenario import scenario_from_dict

    data: dict[str, Any] = {
        "name": "kernel-test",
        "duration": "4s",
        "seed": 1,
        "sample_interval": "10ms",
        "link": {"rate": "50Mbps", "delay": "0ms", "buffer": "1bdp"},
        "flows": [{"cca": "cubic", "rtt": "50ms"}],
    }
    for k, v in overrides.items():
        data[k] = v
    return resolve(scenario_from_dict(data))


def _build_binary() -> list[str] | None:
    """How the emulator starts (machine.link_command): the one built into the
    extension module; only an extension built without it needs a cargo build."""
    found = machine.link_command()
    if found:
        return found
    cargo = shutil.which("cargo")
    if not cargo:
        return None
    r = subprocess.run([cargo, "build", "--release", "-p", "cclab-link"], cwd=REPO, capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail("cargo build -p cclab-link failed:\n" + r.stderr[-2000:])
    return machine.link_command()


def cclab_namespaces() -> list[str]:
    try:
        return sorted(n for n in os.listdir(netns.NETNS_DIR) if n.startswith(netns.PREFIX))
    except FileNotFoundError:
        return []


def cclab_link_processes_of(prefix: str) -> list[int]:
    """cclab-link processes serving namespaces whose names start with ``prefix``
    (other runs on the machine — a benchmark, another test session — are not ours)."""
    mine = []
    for pid in netns.cclab_link_processes():
        args = netns._cmdline(pid)
        if any(a.startswith(f"{netns.NETNS_DIR}/{prefix}".encode()) for a in args):
            mine.append(pid)
    return mine


def valid_kernel_run(scenario: Any, out: Path) -> Any:
    """``cclab.run(scenario, backend="kernel")`` into ``out``, run once more (into ``out``-retry) if its
    self-check marked it invalid — the policy of ``cclab parity`` (docs/validation.md §4 "Validity"):
    on a shared VM the host can stall the emulator for milliseconds in any run (docs/kernel.md), and
    a test of what a valid run shows must not fail on one such draw. The last run is returned; the
    caller asserts that it is valid."""
    import copy

    import cclab

    run = cclab.run(copy.deepcopy(scenario), backend="kernel", out=out, plot=False)
    if not run.meta["valid"]:
        print(f"kernel run invalid ({'; '.join(run.meta['invalid_reasons'])}): run once more")
        run = cclab.run(copy.deepcopy(scenario), backend="kernel", out=out.with_name(out.name + "-retry"), plot=False)
    return run
