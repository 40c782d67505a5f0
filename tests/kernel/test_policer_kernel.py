"""The token-bucket policer (link.policer) on the kernel backend (root): the
emulator runs the same link model (cclab-netmodel) on real packets, so a
policed kernel flow is capped at the token rate and the excess is counted
as drops_policer, not as overflow."""

from __future__ import annotations

import pytest
from kernel_helpers import scenario_ir

from cclab.kernel import backend

pytestmark = pytest.mark.usefixtures("no_leftovers")


def test_the_emulator_polices_kernel_packets():
    # 5 Mbit/s of tokens (30 KB bucket) in front of a 20 Mbit/s link, one kernel BBR flow, 5 s.
    ir = scenario_ir(duration="5s", link={"rate": "20Mbps", "delay": "0ms", "buffer": "4bdp",
                                          "policer": {"rate": "5Mbps", "burst": "30KB"}},
                     flows=[{"cca": "bbr", "rtt": "40ms"}])  # fmt: skip
    raw = backend.run(ir)
    cols = raw["link"]
    policed, overflow = cols["drops_policer"][-1], cols["drops_overflow"][-1]
    egress_bits = cols["egress_bytes"][-1] * 8
    elapsed_s = cols["time_ns"][-1] / 1e9
    print(f"kernel bbr behind a 5 Mbit/s policer: {egress_bits / elapsed_s / 1e6:.2f} Mbit/s left the link, "
          f"{policed:.0f} policed, {overflow:.0f} overflow")
    assert raw["meta"]["emulator"]["counters"]["drops_policer"] >= policed > 0
    assert overflow == 0, "the queue behind a 5 Mbit/s policer never fills at 20 Mbit/s"
    # what passed is at most the bucket plus rate × time (the bucket is full at the start)
    assert egress_bits <= 5e6 * elapsed_s + 30_000 * 8 + 1
