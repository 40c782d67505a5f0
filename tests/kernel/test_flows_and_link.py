"""Flow semantics (bytes, stop, rwnd), a rate schedule, and cleanup on SIGTERM / Ctrl-C — in namespaces (root)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest
from kernel_helpers import REPO, cclab_link_processes_of, cclab_namespaces, scenario_ir, valid_raw_run

from cclab import metrics
from cclab.kernel import backend, netns

pytestmark = pytest.mark.usefixtures("no_leftovers")


def test_finite_stopped_and_window_limited_flows():
    ir = scenario_ir(
        duration="5s",
        flows=[
            {"cca": "cubic", "rtt": "50ms", "bytes": "2MB"},
            {"cca": "reno", "rtt": "50ms", "start": "1s", "stop": "3s"},
            {"cca": "cubic", "rtt": "50ms", "rwnd": "64KiB"},
        ],
    )
    raw = backend.run(ir)
    flows = metrics.flows_frame(raw, ir)
    delivered = np.asarray(raw["flows"]["delivered_bytes"]).reshape(-1, 3)
    # bytes: exactly 2 MB delivered, then the flow is inactive
    assert delivered[-1, 0] == 2_000_000
    f0 = flows[flows.flow_id == 0]
    assert f0["active"].iloc[-1] == False  # noqa: E712
    # start/stop: nothing before 1 s, nothing written after 3 s (in flight still arrives)
    f1 = flows[flows.flow_id == 1]
    assert f1.loc[f1.time_s <= 1.0, "goodput_bps"].sum() == 0
    assert f1.loc[f1.time_s > 3.6, "goodput_bps"].sum() == 0
    assert f1.loc[(f1.time_s > 1.5) & (f1.time_s <= 3.0), "goodput_bps"].mean() > 1e6
    # rwnd 64 KiB over a 50 ms base RTT (plus queueing) caps goodput near 64 KiB / RTT ≈ 10.5 Mbit/s
    f2 = flows[(flows.flow_id == 2) & (flows.time_s > 1.0)]
    assert f2["goodput_bps"].mean() < 65536 * 8 / 0.050 * 1.1, f2["goodput_bps"].mean()
    # tcp_info says so too (meta kernel.limited): the window-limited sender was rwnd-limited most
    # of the measure window, the unlimited one that was still sending was not
    limited = raw["meta"]["kernel"]["limited"]
    assert 0.5 < limited["2"]["rwnd_limited"] <= 1.01, limited
    assert limited["1"]["rwnd_limited"] < 0.2, limited
    # meta kernel.netstat: the endpoints' namespaces' TCP counters over the run — the sender's
    # segments of original data cover what the receiver read, the receiver got them
    net = raw["meta"]["kernel"]["netstat"]
    assert set(net) == {"send", "recv"}, net
    mss = int(ir["mss"])
    read = int(delivered[-1].sum())
    assert read / mss <= net["send"]["TcpExt.TCPOrigDataSent"] < 1.2 * read / mss + 100, (read, net["send"])
    assert net["recv"]["Tcp.InSegs"] >= read / mss, (read, net["recv"])
    assert "Tcp.CurrEstab" not in net["send"]  # a gauge, not a counter
    # sent_segs (tcpi_data_segs_out): every data segment, retransmissions included — at least the
    # original data the namespace's counter saw, at most that plus its retransmissions; and no
    # interval retransmits more segments than it sends, so no retransmission rate exceeds 1
    segs = np.asarray(raw["flows"]["sent_segs"]).reshape(-1, 3)[-1]
    orig, resent = net["send"]["TcpExt.TCPOrigDataSent"], net["send"].get("Tcp.RetransSegs", 0)
    assert read / mss <= segs.sum() <= orig + resent, (segs, net["send"])
    assert (flows["retrans_segs"] <= flows["sent_segs"]).all()
    # flow_info: the finite flow's completion, when its receiver read the last byte — exact, not the
    # first 10 ms sample after it; only finite flows have one
    info = raw["flow_info"]
    assert [("completion_ns" in fi) for fi in info] == [True, False, False], info
    done = info[0]["completion_ns"] / 1e9
    first_full = (int(np.argmax(delivered[:, 0] >= 2_000_000)) + 1) * int(ir["sample_interval_ns"]) / 1e9
    assert first_full - 0.010 < done <= first_full, (done, first_full)


def test_rate_schedule_changes_the_link_rate():
    ir = scenario_ir(duration="4s", link={"rate": "10Mbps", "buffer": "100KB", "schedule": [{"at": "2s", "rate": "30Mbps"}]},
                     flows=[{"cca": "bbr", "rtt": "20ms"}])  # fmt: skip
    # the rate the flow reaches says nothing when the host stalled the emulator: the validity policy
    # (rerun, skip when every attempt had the host's steal) applies, as to the other kernel tests
    raw = valid_raw_run(ir)
    assert raw["meta"]["valid"], raw["meta"]["invalid_reasons"]
    link = metrics.link_frame(raw, ir)
    # capacity_bps is the mean capacity over the sample's interval, which ends at time_s (docs/record.md):
    # the sample ending at 2 s still covers 10 Mbit/s only, the ones after it 30 Mbit/s
    assert set(link.loc[link.time_s < 2.005, "capacity_bps"]) == {10e6}
    assert set(link.loc[link.time_s > 2.005, "capacity_bps"]) == {30e6}
    before = link.loc[(link.time_s > 1.0) & (link.time_s <= 2.0), "throughput_bps"].mean()
    after = link.loc[link.time_s > 3.0, "throughput_bps"].mean()
    assert 9e6 < before <= 10.1e6 and 27e6 < after <= 30.1e6, (before, after)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_run_stopped_by_a_signal_cleans_up_by_itself(sig):
    code = "from kernel_helpers import scenario_ir\nfrom cclab.kernel import backend\nbackend.run(scenario_ir(duration='30s'))\n"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "tests" / "kernel"), os.environ.get("PYTHONPATH", "")]))
    # SIG_DFL before exec: a test runner started as a background job of a non-interactive shell inherits
    # SIGINT ignored, and Python then never raises KeyboardInterrupt (Ctrl-C in a terminal never meets that).
    child = subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.DEVNULL,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    mine = f"{netns.PREFIX}{child.pid}-"
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not cclab_link_processes_of(mine):
            time.sleep(0.05)
        time.sleep(1.5)
        child.send_signal(sig)
        child.wait(timeout=20)
    finally:
        killed = child.poll() is None
        if killed:
            child.kill()
            child.wait()
            netns.clean()  # a SIGKILLed run cannot clean up after itself: remove its leftovers, then fail below
    assert not killed, f"the run was still going 20 s after {sig.name}"
    assert child.returncode != 0
    assert not [n for n in cclab_namespaces() if n.startswith(mine)]
    assert cclab_link_processes_of(mine) == []
    assert not [d for d in os.listdir(tempfile.gettempdir()) if d.startswith(mine)]
