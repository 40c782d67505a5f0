"""The metrics `cclab parity` compares (cclab.metrics), on small frames with hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cclab import metrics


def _ir(n_flows: int = 1, rtt_ms: float = 100.0, start_s: float = 0.0, from_s: float = 2.0, to_s: float = 6.0) -> dict:
    return {
        "mss": 1448,
        "header_bytes": 52,
        "duration_ns": int(to_s * 1e9),
        "measure": {"from_ns": int(from_s * 1e9), "to_ns": int(to_s * 1e9)},
        "flows": [{"id": i, "group": i, "cca": "bbr", "rtt_ns": int(rtt_ms * 1e6), "start_ns": int(start_s * 1e9)}
                  for i in range(n_flows)],
    }  # fmt: skip


def _flows(rows: list[dict]) -> pd.DataFrame:
    base = {"active": True, "state": None, "goodput_bps": 0.0, "throughput_bps": 0.0, "send_rate_bps": 0.0,
            "retrans_segs": 0.0}  # fmt: skip
    return pd.DataFrame([{**base, **r} for r in rows])


def test_retrans_rate_over_window_and_flow_set():
    # 1 s samples; flow 0 sends 1.2 Mbit/s = 100 segments of 1500 B per second, flow 1 2.4 Mbit/s = 200/s.
    rows = []
    for t in range(1, 7):
        rows.append({"time_s": float(t), "flow_id": 0, "send_rate_bps": 1.2e6, "retrans_segs": [9, 9, 1, 2, 3, 4][t - 1]})
        rows.append({"time_s": float(t), "flow_id": 1, "send_rate_bps": 2.4e6, "retrans_segs": [9, 9, 0, 0, 0, 2][t - 1]})
    f = _flows(rows)
    ir = _ir(n_flows=2)  # window (2, 6]: samples t = 3, 4, 5, 6
    # flow 0: (1+2+3+4) / 400 segments = 2.5 %
    assert metrics.retrans_rate(f, ir, [0]) == pytest.approx(10 / 400)
    # flow 1: 2 / 800
    assert metrics.retrans_rate(f, ir, [1]) == pytest.approx(2 / 800)
    # both: 12 / 1200 = 1 %; samples before the window (9 retransmissions each) do not count
    assert metrics.retrans_rate(f, ir) == pytest.approx(12 / 1200)
    assert math.isnan(metrics.retrans_rate(f.assign(send_rate_bps=0.0), ir))


def test_state_fractions_weight_by_interval_and_skip_inactive():
    states = ["STARTUP", "DRAIN", "PROBE_BW", "PROBE_BW", "PROBE_RTT", "PROBE_BW", "PROBE_BW", "probe_bw"]
    times = [0.5, 1.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0]  # unequal intervals: 0.5 s, then 1 s at the end
    rows = [{"time_s": t, "flow_id": 0, "state": s} for t, s in zip(times, states)]
    rows[5]["active"] = False  # an inactive sample does not count
    fr = metrics.state_fractions(_flows(rows), _ir())
    # window (2, 6]: each sample weighs its interval since the previous sample: 2.5 probe_bw 1.5 s,
    # 3.0 probe_bw .5, 3.5 probe_rtt .5, [4.0 inactive], 5.0 probe_bw 1, 6.0 probe_bw 1 -> 4 s and 0.5 s of 4.5 s
    assert fr == pytest.approx({"probe_bw": 4.0 / 4.5, "probe_rtt": 0.5 / 4.5})
    assert sum(fr.values()) == pytest.approx(1.0)
    assert metrics.state_fractions(_flows([{"time_s": 3.0, "flow_id": 0}]), _ir()) == {}


def test_startup_exit_rounds():
    # 100 ms base RTT, flow starts at 1 s; 10 ms samples. A bogus first sample (state before init),
    # Startup from 1.01 s, first non-Startup sample at 1.85 s -> (1.85 - 1) / 0.1 = 8.5 rounds.
    t = np.round(np.arange(1, 301) * 0.01, 2)
    states = np.where(t < 1.85, "STARTUP", "DRAIN").astype(object)
    states[t >= 2.0] = "PROBE_BW"
    states[0] = "PROBE_RTT"
    states[t <= 1.0] = None
    states[0] = "PROBE_RTT"
    f = _flows([{"time_s": float(a), "flow_id": 0, "state": s} for a, s in zip(t, states)])
    ir = _ir(rtt_ms=100, start_s=1.0)
    assert metrics.startup_exit_rounds(f, ir, 0) == pytest.approx(8.5)
    # lower-case names (the kernel's) give the same
    low = f.assign(state=f.state.map(lambda s: s.lower() if isinstance(s, str) else s))
    assert metrics.startup_exit_rounds(low, ir, 0) == pytest.approx(8.5)
    # never leaves Startup -> inf; never in Startup -> NaN
    assert metrics.startup_exit_rounds(f.assign(state="STARTUP"), ir, 0) == math.inf
    assert math.isnan(metrics.startup_exit_rounds(f.assign(state="PROBE_BW"), ir, 0))
    with pytest.raises(ValueError, match="flow_id 3"):
        metrics.startup_exit_rounds(f, ir, 3)


def test_time_to_rate_after_a_step():
    # 10 ms samples; step at 10 s to 20 Mbit/s. Bottleneck throughput 9.6 Mbit/s until 10.50 s, then 19 Mbit/s.
    t = np.round(np.arange(1, 2001) * 0.01, 2)
    g = np.where(t <= 10.5, 9.6e6, 19e6)
    f = _flows([{"time_s": float(a), "flow_id": 0, "throughput_bps": float(b)} for a, b in zip(t, g)])
    # 100 ms trailing mean >= 18 Mbit/s: the window ending at 10.59 holds one 9.6 sample: (9*19 + 9.6)/10 = 18.06
    # -> 0.59 s; the one ending at 10.58 holds two: 17.12
    assert metrics.time_to_rate(f, 10.0, 20e6) == pytest.approx(0.59)
    # 95 % (19 Mbit/s) needs the full window -> 0.60 s
    assert metrics.time_to_rate(f, 10.0, 20e6, fraction=0.95) == pytest.approx(0.60)
    # two flows are summed
    two = pd.concat([f.assign(throughput_bps=f.throughput_bps / 2), f.assign(flow_id=1, throughput_bps=f.throughput_bps / 2)])
    assert metrics.time_to_rate(two, 10.0, 20e6) == pytest.approx(0.59)
    # never reaching it -> inf; a step down to 10 Mbit/s is met by the first full window after it
    assert metrics.time_to_rate(f, 10.0, 40e6) == math.inf
    down = f.assign(throughput_bps=np.where(t <= 10.0, 19e6, 9.6e6))
    assert metrics.time_to_rate(down, 10.0, 10e6) == pytest.approx(0.10)
    # a bursty series: a burst every other sample (2x the rate), the trailing mean smooths it
    burst = f.assign(throughput_bps=np.where((np.round(t * 100) % 2 == 0) & (t > 11), 38e6, 0.0))
    assert metrics.time_to_rate(burst, 10.0, 20e6) == pytest.approx(1.10, abs=0.011)
    # goodput instead of throughput, by column: only the goodput has a stall after the step
    stalled = down.assign(goodput_bps=np.where((t > 10.05) & (t <= 10.2), 0.0, 9.3e6))
    assert metrics.time_to_rate(stalled, 10.0, 10e6) == pytest.approx(0.10)
    assert metrics.time_to_rate(stalled, 10.0, 10e6, column="goodput_bps", fraction=0.9) == pytest.approx(0.30)


def test_time_to_rate_down_follows_the_sending_rate():
    # step down at 15 s to 10 Mbit/s; the sender keeps sending at 19.8 Mbit/s until 15.80 s (a BBR whose max
    # filter still holds the old rate), then 9.9 Mbit/s; the bottleneck's throughput is 10 Mbit/s throughout.
    t = np.round(np.arange(1, 3001) * 0.01, 2)
    f = _flows([{"time_s": float(a), "flow_id": 0, "throughput_bps": 10e6 if a > 15 else 20e6,
                 "send_rate_bps": 19.8e6 if a <= 15.8 else 9.9e6} for a in t])  # fmt: skip
    # 100 ms mean ≤ 11 Mbit/s: the window ending at 15.89 holds one 19.8 sample: (9·9.9 + 19.8)/10 = 10.89
    assert metrics.time_to_rate(f, 15.0, 10e6, fraction=1.1, column="send_rate_bps", direction="down") == pytest.approx(0.89)
    # the bottleneck's throughput would say 0.1 s: it meets the lower rate at once
    assert metrics.time_to_rate(f, 15.0, 10e6, fraction=1.1, direction="down") == pytest.approx(0.10)
    assert metrics.time_to_rate(f, 15.0, 5e6, fraction=1.1, column="send_rate_bps", direction="down") == math.inf
    with pytest.raises(ValueError, match="direction"):
        metrics.time_to_rate(f, 15.0, 10e6, direction="sideways")


def test_peak_queue_bytes():
    link = pd.DataFrame({"time_s": [1.0, 2.0, 3.0, 4.0], "queue_bytes": [100.0, 5000.0, 3000.0, np.nan]})
    assert metrics.peak_queue_bytes(link) == 5000.0
    assert metrics.peak_queue_bytes(link, from_s=2.5) == 3000.0
    assert metrics.peak_queue_bytes(link, to_s=1.0) == 100.0
    assert math.isnan(metrics.peak_queue_bytes(link, from_s=3.5))


def test_startup_exit_round_counts_packet_timed_rounds():
    # 100 ms base RTT, 10 ms samples. The sender sends a burst of 10 segments at each round start; the
    # receiver gets a burst 50 ms (the return path) before the round ends. The first five rounds last
    # 100 ms, then the queue stretches them to 300 ms: starts 0, .1, .2, .3, .4, .5, .8, 1.1, 1.4.
    starts = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.8, 1.1, 1.4]
    wire_burst, payload_burst = 10 * 1500 * 8 / 0.01, 10 * 1448 * 8 / 0.01
    t = np.round(np.arange(1, 181) * 0.01, 2)
    send = {round(b + 0.01, 2) for b in starts[:-1]}
    deliver = {round(b - 0.05, 2) for b in starts[1:]}
    f = _flows([{"time_s": float(x), "flow_id": 0, "state": "STARTUP" if x < 1.1 else "DRAIN",
                 "send_rate_bps": wire_burst if x in send else 0.0,
                 "goodput_bps": payload_burst if x in deliver else 0.0} for x in t])  # fmt: skip
    ir = _ir(rtt_ms=100.0)
    assert metrics.packet_rounds(f, ir, 0) == pytest.approx(starts)
    # it left STARTUP in the interval ending at 1.1 s: round 7 begins there; in base RTTs that reads 11
    assert metrics.startup_exit_round(f, ir, 0) == pytest.approx(7.0)
    assert metrics.startup_exit_rounds(f, ir, 0) == pytest.approx(11.0)
    # half-way through a round
    f2 = f.assign(state=np.where(t < 0.95, "STARTUP", "DRAIN"))
    assert metrics.startup_exit_round(f2, ir, 0) == pytest.approx(6.5)
    assert metrics.startup_exit_round(f.assign(state="STARTUP"), ir, 0) == math.inf


def test_retrans_rate_counts_segments_where_the_record_has_them():
    # A flow of three 1-byte writes: 3 segments of 53 wire bytes, then one of them again, in 1 s.
    # Counted in full-size equivalents (records without sent_segs) that is 4·53 / 1500 = 0.14
    # "segments" and a rate of 7; counted in segments it is 1 of 4.
    tiny = 4 * 53 * 8.0
    rows = [{"time_s": float(t), "flow_id": 0, "send_rate_bps": tiny if t == 3 else 0.0,
             "sent_segs": 4.0 if t == 3 else 0.0, "retrans_segs": 1.0 if t == 3 else 0.0} for t in range(1, 7)]
    f = _flows(rows)
    assert metrics.retrans_rate(f, _ir()) == pytest.approx(1 / 4)
    assert metrics.retrans_rate(f.drop(columns=["sent_segs"]), _ir()) == pytest.approx(1 / (4 * 53 / 1500))
    # a column the backend left empty (NaN) is not taken for "nothing sent"
    assert metrics.retrans_rate(f.assign(sent_segs=math.nan), _ir()) == pytest.approx(1 / (4 * 53 / 1500))
