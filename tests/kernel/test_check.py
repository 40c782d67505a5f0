"""What the kernel backend refuses, before any namespace exists (no root needed
for most: ``check`` reads /proc and the IR only)."""

from __future__ import annotations

import pytest

from cclab.errors import ScenarioError
from cclab.kernel import backend, machine

from kernel_helpers import cclab_namespaces, scenario_ir


def test_missing_algorithm_is_named_with_the_kernels_list(kernel_ready):
    ir = scenario_ir(flows=[{"cca": "cubic", "rtt": "50ms"}, {"cca": "vegas", "rtt": "50ms"}])
    if "vegas" in machine.available_ccas():
        pytest.skip("this kernel has vegas")
    before = cclab_namespaces()
    with pytest.raises(ScenarioError) as err:
        backend.run(ir)
    msg = str(err.value)
    assert "vegas" in msg and "flows[1].cca" in msg
    for cca in machine.available_ccas():
        assert cca in msg
    assert "\n" not in msg
    assert cclab_namespaces() == before, "nothing may be created before the check"


def test_rate_beyond_the_emulator_is_refused():
    ir = scenario_ir(link={"rate": "10Gbps", "delay": "0ms", "buffer": "100KB"})
    with pytest.raises(ScenarioError, match=r"link.rate: .*beyond what the kernel backend's emulator sustains"):
        backend.check(ir)


def test_too_many_flows_are_refused():
    ir = scenario_ir(flows=[{"cca": "cubic", "rtt": "50ms", "count": machine.MAX_FLOWS + 1}])
    with pytest.raises(ScenarioError, match=r"^flows: .*at most"):
        backend.check(ir)


def test_missing_trace_file_is_refused():
    ir = scenario_ir()
    ir["link"]["capacity"] = {"kind": "trace", "path": "/nonexistent/trace.down", "opportunities_ns": [1_000_000],
                              "period_ns": 1_000_000, "bytes_per_opportunity": 1500}  # fmt: skip
    with pytest.raises(ScenarioError, match="link.trace: trace file does not exist"):
        backend.check(ir)


def test_state_inference_for_bbr_gains():
    # tcp_bbr.c: high_gain 2885/1000 (STARTUP), drain 1000/2885, PROBE_RTT gains 1/1, PROBE_BW 1.25/2
    assert backend._bbr_mode({"pacing_gain": 739 / 256, "cwnd_gain": 739 / 256}) == 0
    assert backend._bbr_mode({"pacing_gain": 88 / 256, "cwnd_gain": 739 / 256}) == 1
    assert backend._bbr_mode({"pacing_gain": 1.25, "cwnd_gain": 2.0}) == 2
    assert backend._bbr_mode({"pacing_gain": 1.0, "cwnd_gain": 1.0}) == 3
    # before the first bandwidth sample the kernel reports bw 0 and gains 1/1: STARTUP (bbr_init), not PROBE_RTT
    assert backend._bbr_mode({"bw_bytes_per_s": 0.0, "pacing_gain": 1.0, "cwnd_gain": 1.0}) == 0
    assert backend._bbr_mode({"bw_bytes_per_s": 6e6, "pacing_gain": 1.0, "cwnd_gain": 1.0}) == 3
    assert backend.BBR_MODES[0] == "STARTUP"
