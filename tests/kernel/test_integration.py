"""The kernel backend end to end, in namespaces (root; each test ≤ ~10 s of traffic).

Expectations and their sources:

* a single CUBIC flow fills a constant-rate drop-tail link with a 1-BDP
  buffer (the buffer-sizing rule of thumb, Villamizar & Song 1994): goodput
  ≥ 93 % of the rate (payload is 1448/1500 = 96.5 % of the wire bytes);
* a BBR flow overfills a 100 KB buffer on a 50 Mbit/s × 50 ms path (a
  third of the BDP — Cao et al., IMC 2019 report BBR's losses with shallow
  buffers), and every bottleneck drop shows up as a kernel retransmission.
"""

from __future__ import annotations

import math
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest
from kernel_helpers import REPO, cclab_link_processes_of, cclab_namespaces, scenario_ir

from cclab import metrics
from cclab.kernel import backend, netns

pytestmark = pytest.mark.usefixtures("no_leftovers")


def _summary(raw, ir):
    flows = metrics.flows_frame(raw, ir)
    link = metrics.link_frame(raw, ir)
    return flows, link, metrics.summary(flows, link, ir)


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def _ping(src: str, dst: str, count: int, gap_s: float) -> list[float]:
    """ICMP echo RTTs in ms from ``src`` to ``dst`` (raw socket in the caller's namespace)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    sock.bind((src, 0))
    sock.settimeout(1.0)
    rtts = []
    try:
        for seq in range(count):
            body = struct.pack("!d", 0.0) * 8
            hdr = struct.pack("!BBHHH", 8, 0, 0, 0x4343, seq)
            pkt = struct.pack("!BBHHH", 8, 0, _checksum(hdr + body), 0x4343, seq) + body
            t = time.monotonic_ns()
            sock.sendto(pkt, (dst, 0))
            while True:
                data = sock.recv(2048)
                ihl = (data[0] & 0xF) * 4
                kind, _code, _ck, ident, rseq = struct.unpack("!BBHHH", data[ihl : ihl + 8])
                if kind == 0 and ident == 0x4343 and rseq == seq:
                    rtts.append((time.monotonic_ns() - t) / 1e6)
                    break
            time.sleep(gap_s)
    finally:
        sock.close()
    return rtts


def test_configured_rtt_is_measured_within_1ms():
    ir = scenario_ir(link={"rate": "50Mbps", "delay": "10ms", "buffer": "1bdp"},
                     flows=[{"cca": "cubic", "rtt": "50ms"}, {"cca": "cubic", "rtt": "80ms"}])  # fmt: skip
    with backend.emulated_path(ir) as path:
        path.start(time.monotonic_ns())
        for flow, rtt_ms in ((0, 50.0), (1, 80.0)):
            rtts = netns.in_netns(path.ns.snd, lambda f=flow: _ping(netns.sender_addr(f), netns.RECEIVER_ADDR, 30, 0.01))
            low, med = float(np.min(rtts)), float(np.median(rtts))
            print(f"flow {flow}: configured {rtt_ms} ms, ping min {low:.2f} / median {med:.2f} / max {max(rtts):.2f} ms")
            # The emulated path delays by exactly the configured RTT (+ serialization
            # of two 92-byte packets at 50 Mbit/s, ~15 µs, and wake-up latency): the
            # least-disturbed ping is within 1 ms and none is early.
            # Known open problem (session of 2026-11-22): on this idle VM single
            # pings are sometimes 2–9 ms late, so in 1–3 of 8 runs the *median* of
            # 30 pings was > 1 ms off, with the emulator build before and after the
            # queue-convention change alike; the cause (VM scheduling, the
            # emulator's wake-ups or this Python pinger) is not yet found. Emulator
            # lateness is checked separately (self-check, `python -m cclab.kernel.bench`).
            assert rtt_ms - 0.05 <= low < rtt_ms + 1.0, f"flow {flow}: configured {rtt_ms} ms, measured {rtts}"


def test_cubic_fills_a_50mbps_link():
    ir = scenario_ir(duration="10s", measure={"from": "3s"}, flows=[{"cca": "cubic", "rtt": "50ms"}])
    raw = backend.run(ir)
    flows, link, s = _summary(raw, ir)
    goodput = s["per_flow"][0]["goodput_bps"]
    assert goodput >= 0.93 * 50e6, f"goodput {goodput / 1e6:.1f} Mbit/s, {s['aggregate']}, {raw['meta']['invalid_reasons']}"
    assert raw["meta"]["kernel"]["flow_ccas"] == {"0": "cubic"}
    # the kernel's own view agrees: the socket's min RTT is the configured 50 ms
    min_rtt = float(np.nanmin(flows["min_rtt_ms"]))
    assert 49.5 < min_rtt < 52.0, min_rtt


def test_bbr_overfills_a_100kb_buffer_and_drops_match_retransmits():
    ir = scenario_ir(duration="8s", link={"rate": "50Mbps", "delay": "0ms", "buffer": "100KB"},
                     flows=[{"cca": "bbr", "rtt": "50ms"}])  # fmt: skip
    raw = backend.run(ir)
    counters = raw["meta"]["emulator"]["counters"]
    drops = counters["drops_overflow"]
    retrans = float(np.asarray(raw["flows"]["retrans_segs"])[-1])
    assert drops > 0, "BBR must overfill a third of a BDP"
    # Every drop must be repaired by a retransmission; spurious retransmits
    # (RACK reordering windows, RTOs) may add some, never remove any.
    assert retrans >= 0.9 * drops, (drops, retrans)
    assert retrans <= 1.5 * drops + 20, (drops, retrans)
    flows, _link, _s = _summary(raw, ir)
    assert flows["bw_bps"].notna().any() and flows["pacing_gain"].notna().any()
    assert set(flows["state"].dropna()) <= set(backend.BBR_MODES)
    assert "PROBE_BW" in set(flows["state"])


def test_two_flows_with_different_algorithms_each_report_theirs():
    ir = scenario_ir(duration="4s", flows=[{"cca": "cubic", "rtt": "40ms"}, {"cca": "bbr", "rtt": "40ms"}])
    raw = backend.run(ir)
    assert raw["meta"]["kernel"]["flow_ccas"] == {"0": "cubic", "1": "bbr"}
    flows, _link, s = _summary(raw, ir)
    cubic, bbr = flows[flows.flow_id == 0], flows[flows.flow_id == 1]
    assert cubic["bw_bps"].isna().all() and bbr["bw_bps"].notna().any()
    assert all(r["goodput_bps"] > 1e6 for r in s["per_flow"])
    assert set(raw["meta"]["kernel"]["ccas_used"]) == {"cubic", "bbr"}


def test_cleanup_after_kill_9_leaves_nothing():
    code = (
        "from kernel_helpers import scenario_ir\n"
        "from cclab.kernel import backend\n"
        "backend.run(scenario_ir(duration='30s'))\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "tests" / "kernel"), os.environ.get("PYTHONPATH", "")]))
    child = subprocess.Popen([sys.executable, "-c", code], env=env)
    mine = f"{netns.PREFIX}{child.pid}-"
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not any(n.startswith(mine) for n in cclab_namespaces()):
            time.sleep(0.05)
        assert any(n.startswith(mine) for n in cclab_namespaces()), "the run never created its namespaces"
        time.sleep(2.0)  # traffic is flowing
        child.kill()
        child.wait()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert any(n.startswith(mine) for n in cclab_namespaces()), "kill -9 leaves the namespaces (that is what --clean is for)"
    r = subprocess.run([sys.executable, "-m", "cclab", "doctor", "--clean"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not [n for n in cclab_namespaces() if n.startswith(mine)]
    time.sleep(0.2)
    assert cclab_link_processes_of(mine) == []
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert "cclab" not in links and "cltun" not in links
    assert not [d for d in os.listdir(tempfile.gettempdir()) if d.startswith(mine)], "the killed run's temporary directory remains"
