"""The kernel backend's per-packet distributions (docs/record.md "Distributions") — in namespaces (root).

The emulator runs the simulator's bottleneck model and counts the queueing
delay of every packet that leaves it in the measure window into the same
log-linear histogram; per-flow RTTs come from tcp_info (smoothed, one per
sample) and the summary says so.
"""

from __future__ import annotations

import numpy as np
import pytest
from kernel_helpers import late_under_steal, scenario_ir, valid_raw_run

from cclab import metrics
from cclab.kernel import backend

pytestmark = pytest.mark.usefixtures("no_leftovers")


def test_the_emulator_counts_every_departing_packet_in_the_window():
    ir = scenario_ir(duration="4s", measure={"from": "1s"}, link={"rate": "20Mbps", "buffer": "2bdp"},
                     flows=[{"cca": "cubic", "rtt": "40ms"}])  # fmt: skip
    raw = backend.run(ir)
    link = metrics.link_frame(raw, ir)
    flows = metrics.flows_frame(raw, ir)
    soj = raw["histograms"]["sojourn"]
    in_window = link[metrics.in_window(link["time_s"], ir)]
    # the same packets as the link series' departures in (1 s, 4 s], once each
    assert int(np.sum(soj["count"])) == int(in_window["departed_packets"].sum()) > 1000
    # the exact mean is the link series' Σ sojourn / departures over the window
    mean_ms = float(soj["sum_ns"][0]) / float(soj["n"][0]) / 1e6
    s = metrics.summary(flows, link, ir, histograms=raw["histograms"])
    agg = s["aggregate"]
    assert agg["queue_delay_source"] == "packets"
    assert agg["queue_delay_ms_mean"] == pytest.approx(mean_ms, rel=1e-9)
    assert agg["queue_delay_ms_min"] <= agg["queue_delay_ms_p50"] <= agg["queue_delay_ms_p99"] <= agg["queue_delay_ms_max"]
    f = s["per_flow"][0]
    assert f["rtt_source"].startswith("tcp_info srtt")  # not per ACK: said, not hidden
    assert 40.0 <= f["rtt_ms_p50"] <= f["rtt_ms_max"]


def test_with_a_spin_window_the_emulator_releases_packets_on_time(monkeypatch):
    # CCLAB_LINK_SPIN_NS (docs/kernel.md): the emulator wakes that long before each deadline
    # and busy-polls the rest, so its release lateness is no longer the machine's timer
    # wake-up latency (tens of µs in a VM). At 20 Mbit/s packets are 600 µs apart: sleeping
    # until each deadline, as the emulator did before the spin window woke it early, came
    # 40–47 µs late at p50 on a 2-vCPU VM; with the window, 1–2 µs.
    monkeypatch.setattr(backend, "EMULATOR_SPIN_NS", 50_000)
    ir = scenario_ir(duration="3s", measure={"from": "1s"}, link={"rate": "20Mbps", "buffer": "1bdp"},
                     flows=[{"cca": "cubic", "rtt": "20ms"}])  # fmt: skip
    # a run the self-check rejects because the VM's host stalled the emulator for milliseconds (one
    # CI run: lateness mean 1.2 ms, max 17 ms) measures the host, not the emulator; so does a run
    # the self-check accepts whose p50 is late while the host took the CPUs (another CI run: p50
    # 17 µs, max 7.3 ms), or while the machine's timer woke the emulator later than the window
    # itself at p50 (a third CI run failed here with p50 15 µs at under 1 % steal, its wake-ups
    # not printed; the assertion prints them now): all are rerun, and skipped when every
    # attempt was such (late_under_steal). A late p50 with the wake-ups inside the window and
    # without steal is the emulator's and fails below.
    raw = valid_raw_run(ir, late_under_steal(10_000))
    assert raw["valid"], raw["invalid_reasons"]
    emu = raw["meta"]["emulator"]
    assert emu["settings"]["spin_ns"] == 50_000
    assert emu["lateness_ns_data"]["count"] > 1000
    figures = {"release": emu["lateness_ns_data"], "wakeups": emu["wakeup_lateness_ns"],
               "steal": raw["meta"]["kernel"].get("steal")}
    assert emu["lateness_ns_data"]["p50"] <= 10_000, figures
