"""Endpoint options on the kernel backend (root; docs/topologies.md): delayed_ack = false as the
receiver's route attribute quickack, sack = false as net.ipv4.tcp_sack = 0, and what Linux cannot
do refused before any namespace exists."""

from __future__ import annotations

import pytest
from kernel_helpers import cclab_namespaces, scenario_ir

from cclab.errors import ScenarioError
from cclab.kernel import backend

pytestmark = pytest.mark.usefixtures("no_leftovers")


def _acks_per_segment(**flow: object) -> tuple[float, dict]:
    ir = scenario_ir(duration="3s", link={"rate": "20Mbps", "delay": "0ms", "buffer": "1bdp"},
                     flows=[{"cca": "cubic", "rtt": "20ms", **flow}])  # fmt: skip
    raw = backend.run(ir)
    c = raw["meta"]["emulator"]["counters"]
    return c["ack_in"] / c["data_in"], raw


def test_delayed_ack_off_acks_every_segment_and_sack_off_reaches_the_namespaces():
    default, _ = _acks_per_segment()
    every, raw = _acks_per_segment(delayed_ack=False, sack=False)
    print(f"kernel: ACKs per data segment {default:.2f} (Linux's delayed ACKs), {every:.2f} (quickack route)")
    # Linux ACKs every second full segment in steady state (plus quick-acks at the start)
    assert default < 0.7
    assert every > 0.95
    assert raw["meta"]["kernel"]["sysctls"]["net.ipv4.tcp_sack"] == "0"


def test_what_linux_cannot_do_is_refused_before_any_namespace():
    before = cclab_namespaces()
    with pytest.raises(ScenarioError, match=r"flows\[0\]\.ack_every: .*at least every second full segment"):
        backend.run(scenario_ir(flows=[{"cca": "cubic", "rtt": "20ms", "ack_every": 4}]))
    with pytest.raises(ScenarioError, match=r"flows\[1\]\.sack: .*all flows of a run or none"):
        backend.run(scenario_ir(flows=[{"cca": "cubic", "rtt": "20ms"}, {"cca": "reno", "rtt": "20ms", "sack": False}]))
    assert cclab_namespaces() == before
