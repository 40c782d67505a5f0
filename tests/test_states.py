"""One set of algorithm-state names for both backends (cclab.states, docs/record.md).

The simulator's tables (from the engine itself) must equal the ones the
kernel backend maps onto; the kernel's tcp_ca_state mapping must follow the
simulator's ``loss_based_state``. The kernel side of the comparison — the
same BBR scenario on both backends — is in tests/kernel/test_states_kernel.py.
"""

from __future__ import annotations

import json

import pytest

import cclab._native as native
from cclab import states
from cclab.resolve import resolve
from cclab.scenario import scenario_from_dict

needs_sim = pytest.mark.skipif(not hasattr(native, "simulate"), reason="the native engine is not built")


@needs_sim
@pytest.mark.parametrize("cca", ["reno", "cubic", "bbr"])
def test_simulator_state_names_are_the_canonical_ones(cca):
    ir = resolve(scenario_from_dict({"name": "s", "duration": "100ms", "link": {"rate": "10Mbps", "buffer": "1bdp"},
                                     "flows": [{"cca": cca, "rtt": "20ms"}]}))  # fmt: skip
    out = native.simulate(json.dumps(ir))
    assert tuple(out["state_names"][cca]) == states.kernel_names(cca)


def test_kernel_ca_state_maps_like_the_simulator():
    ca, inf = states.CA_STATE, 0x7FFFFFFF
    assert states.LOSS_BASED[states.loss_based_code(ca["open"], 10, inf)] == "SLOW_START"
    assert states.LOSS_BASED[states.loss_based_code(ca["open"], 20, 20)] == "CONG_AVOID"
    assert states.LOSS_BASED[states.loss_based_code(ca["disorder"], 5, 20)] == "SLOW_START"
    assert states.LOSS_BASED[states.loss_based_code(ca["disorder"], 30, 20)] == "CONG_AVOID"
    assert states.LOSS_BASED[states.loss_based_code(ca["cwr"], 30, 20)] == "RECOVERY"
    assert states.LOSS_BASED[states.loss_based_code(ca["recovery"], 30, 20)] == "RECOVERY"
    assert states.LOSS_BASED[states.loss_based_code(ca["loss"], 1, 20)] == "LOSS"
    assert states.kernel_names("bbr") == ("STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT")
    assert states.kernel_names("htcp") == states.LOSS_BASED
