"""ECN on the kernel backend (root): net.ipv4.tcp_ecn = 1 in both namespaces,
the emulator's CoDel marks the kernel's ECT packets CE instead of dropping
them; what the kernel backend refuses about ECN and DCTCP."""

from __future__ import annotations

import pytest
from kernel_helpers import scenario_ir

from cclab.errors import ScenarioError
from cclab.kernel import backend, machine

pytestmark = pytest.mark.usefixtures("no_leftovers")


def test_cubic_with_ecn_behind_codel_is_marked_not_dropped():
    # Four ECN CUBIC flows keep CoDel's queue above target, so it marks
    # (one flow alone rarely does: 3 marks in 8 s at 50 Mbit/s / 40 ms).
    ir = scenario_ir(duration="10s", link={"rate": "20Mbps", "delay": "0ms", "buffer": "8bdp", "qdisc": {"name": "codel", "ecn": True}},
                     flows=[{"cca": "cubic", "rtt": "20ms", "ecn": True, "count": 4}])  # fmt: skip
    raw = backend.run(ir)
    cols = raw["link"]
    marks, aqm, overflow = cols["marks_ce"][-1], cols["drops_aqm"][-1], cols["drops_overflow"][-1]
    retrans = max(raw["flows"]["retrans_segs"])
    print(f"kernel 4 cubic+ECN behind CoDel: marks {marks}, aqm drops {aqm}, overflow {overflow}, retransmissions {retrans}")
    assert raw["meta"]["kernel"]["sysctls"]["net.ipv4.tcp_ecn"] == "1"
    assert marks > 20, "the kernel's packets are ECT and CoDel marks them"
    assert aqm == 0, "CoDel drops no ECT packet"
    assert overflow == 0
    assert retrans == 0, "the senders react to ECE, nothing is lost"


def test_mixed_ecn_flows_are_refused():
    ir = scenario_ir(flows=[{"cca": "cubic", "rtt": "50ms", "ecn": True}, {"cca": "cubic", "rtt": "50ms"}])
    with pytest.raises(ScenarioError, match="ecn"):
        backend.check(ir)


def test_dctcp_is_refused_when_the_kernel_lacks_it():
    if "dctcp" in machine.available_ccas():
        pytest.skip("this kernel has dctcp")
    ir = scenario_ir(flows=[{"cca": "dctcp", "rtt": "1ms", "ecn": True}])
    with pytest.raises(ScenarioError, match=r"'dctcp' is not available in this kernel.*lists: "):
        backend.check(ir)
