"""Fixtures of the kernel-backend tests.

Root/TUN tests skip with a reason where root or /dev/net/tun is missing. The
emulator is the one built into the extension module (``python -m
cclab._link``); only with an extension built without it is the cclab-link
binary built once per session (``cargo build --release -p cclab-link``). The emulator's Rust unit tests run in
scripts/test.sh's ``cargo test``. Every test that creates namespaces goes through
``cclab.kernel.backend`` (which removes them in a ``finally``) and the
``no_leftovers`` fixture asserts nothing with the cclab prefix remains.
"""

from __future__ import annotations

import os

import pytest
from kernel_helpers import _build_binary, cclab_link_processes_of, cclab_namespaces

from cclab.kernel import machine, netns


@pytest.fixture(scope="session")
def kernel_ready() -> list[str]:
    """Skip unless this machine can run the kernel backend; returns the command that starts cclab-link."""
    if not machine.is_root():
        pytest.skip("kernel backend tests need root (network namespaces, TUN devices)")
    if not machine.tun_available():
        pytest.skip("kernel backend tests need /dev/net/tun")
    binary = _build_binary()
    if binary is None:
        pytest.skip("cclab-link is not built and cargo is not available")
    return binary


@pytest.fixture
def no_leftovers(kernel_ready: list[str]):
    """Assert the test left no cclab namespace or cclab-link process behind (ours: by pid prefix)."""
    mine = f"{netns.PREFIX}{os.getpid()}-"
    yield
    left = [n for n in cclab_namespaces() if n.startswith(mine)]
    procs = cclab_link_processes_of(mine)
    if left or procs:
        netns.clean(include_live=False)
    assert not left, f"namespaces left behind: {left}"
    assert not procs, f"cclab-link processes left behind: {procs}"
