"""CPU saturation is judged by the emulator's own scheduling delay, not machine-wide CPU use (root).

Two busy loops at nice 19 (started here, ended by their pid) keep both CPUs
100 % busy; the emulator runs SCHED_FIFO and is not delayed by them, so the
run is valid, and the machine's CPU use is recorded as information only.
Measured (docs/kernel.md): with such load, timed wake-ups p99 52 µs; with
the emulator in the normal class (CCLAB_LINK_RT_PRIO=0) and the loops at
nice −20, p99 205 ms — that run is flagged.
"""

from __future__ import annotations

import os
import subprocess

import pytest
from kernel_helpers import scenario_ir

from cclab.kernel import backend

pytestmark = pytest.mark.usefixtures("no_leftovers")


def test_unrelated_load_does_not_invalidate_a_run():
    hogs = [subprocess.Popen(["nice", "-n", "19", "sh", "-c", "while :; do :; done"]) for _ in range(os.cpu_count() or 2)]
    try:
        raw = backend.run(scenario_ir(duration="3s", link={"rate": "50Mbps", "delay": "0ms", "buffer": "1bdp"}))
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    meta = raw["meta"]
    wake = meta["emulator"]["wakeup_lateness_ns"]
    print(f"machine CPU {meta['kernel']['cpu_busy_fraction'] * 100:.0f} %, wake-ups p99 {wake['p99'] / 1e3:.0f} µs, {meta['invalid_reasons']}")
    assert meta["kernel"]["cpu_busy_fraction"] >= 0.9  # the machine was busy …
    assert wake["count"] > 1000
    # … the emulator was not starved (its own reason; a lateness reason may name the CPU time the VM's host took)
    assert not [r for r in meta["invalid_reasons"] if "CPU-starved" in r], meta["invalid_reasons"]
    # the endpoints' own waiting for a CPU is kept as information (docs/kernel.md): the nice-19 hogs
    # hardly delay the normal-priority traffic processes
    wait = meta["kernel"]["endpoint_wait"]
    assert set(wait) == {"emulator", "send", "recv", "ksoftirqd"} and all(0.0 <= v <= 1.0 for v in wait.values()), wait
    assert wait["send"] < 0.5 and wait["recv"] < 0.5, wait
    # the whole lateness distributions are kept (docs/kernel.md, provenance): one count per packet written
    emu = meta["emulator"]
    for direction, written in (("data", "data_out"), ("ack", "ack_out")):
        hist = emu[f"lateness_hist_ns_{direction}"]
        assert sum(n for _, n in hist) == emu[f"lateness_ns_{direction}"]["count"] == emu["counters"][written] > 0
        assert [e for e, _ in hist] == sorted(e for e, _ in hist)
