"""cclab.metrics on a synthetic engine output with hand-computed values (the conftest's synthetic_raw)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from cclab import metrics


def test_jain_known_vectors():
    # Jain et al. 1984: equal shares -> 1, one of n takes all -> 1/n.
    assert metrics.jain_index([1, 1]) == 1.0
    assert metrics.jain_index([1, 0]) == 0.5
    assert metrics.jain_index([5, 0, 0, 0]) == 0.25
    assert metrics.jain_index([2, 1]) == pytest.approx(9 / 10)
    assert math.isnan(metrics.jain_index([]))
    assert math.isnan(metrics.jain_index([0, 0]))


def test_goodput_gain_and_bdp():
    # Cao et al. IMC'19: (g_A - g_B) / g_B * 100
    assert metrics.goodput_gain(150.0, 100.0) == 50.0
    assert metrics.goodput_gain(50.0, 100.0) == -50.0
    assert math.isnan(metrics.goodput_gain(1.0, 0.0))
    # 100 Mbps x 25 ms = 312,500 bytes
    assert metrics.bdp_bytes(100e6, 25_000_000) == pytest.approx(312_500)


def test_goodput_from_cumulative_bytes(raw_ir):
    raw, ir = raw_ir
    f = metrics.flows_frame(raw, ir)
    assert list(f.columns) == list(metrics.FLOW_COLUMNS)
    f0 = f[f.flow_id == 0]
    np.testing.assert_allclose(f0.goodput_bps / 1e6, [1, 1, 2, 2, 3, 1])
    np.testing.assert_allclose(f0.time_s, [1, 2, 3, 4, 5, 6])
    # 100 segments of 1500 wire bytes per second = 1.2 Mbps sent
    np.testing.assert_allclose(f0.send_rate_bps, 1.2e6)
    np.testing.assert_allclose(f0.throughput_bps / 1e6, np.array([1, 1, 2, 2, 3, 1]) * 1500 / 1448)
    np.testing.assert_allclose(f0.retrans_segs, [0, 0, 1, 0, 2, 0])
    np.testing.assert_allclose(f0.rtt_ms.to_numpy()[:5], [30, 30, 40, 50, 60])
    assert np.isnan(f0.rtt_ms.iloc[5])
    assert (f.cca.tolist()[:2]) == ["cubic", "reno"]
    assert f.ssthresh_bytes.isna().all()
    assert f.state.isna().all()  # cubic/reno export no state names here


def test_state_names_mapped(make_raw, make_ir):
    ir = make_ir(ccas=("bbr", "reno"))
    raw = make_raw()
    raw["state_names"] = {"bbr": ["STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT"], "reno": []}
    f = metrics.flows_frame(raw, ir)
    assert f[f.flow_id == 0].state.tolist() == ["STARTUP", "DRAIN"] * 3
    assert f[f.flow_id == 1].state.isna().all()


def test_link_frame_queue_delay_and_utilization(raw_ir):
    raw, ir = raw_ir
    link = metrics.link_frame(raw, ir)
    assert list(link.columns) == list(metrics.LINK_COLUMNS)
    np.testing.assert_allclose(link.queue_delay_ms.to_numpy()[[0, 2, 3, 5]], [1, 5, 15, 10])
    assert np.isnan(link.queue_delay_ms.iloc[4])  # nothing departed
    np.testing.assert_allclose(link.drops_overflow, [0, 0, 1, 0, 2, 0])
    np.testing.assert_allclose(link.utilization, np.array([2, 2, 4, 3, 4, 2]) * 1500 / 1448 / 4)
    # arrivals = departed + dropped + delta queued
    np.testing.assert_allclose(link.arrival_packets, [10, 12, 12, 11, 1, 19])


def test_summary_over_measure_window(raw_ir):
    raw, ir = raw_ir
    s = metrics.summary(metrics.flows_frame(raw, ir), metrics.link_frame(raw, ir), ir)
    json.dumps(s, allow_nan=False)  # JSON-safe
    assert s["window"] == {"from_s": 2.0, "to_s": 6.0, "duration_s": 4.0, "samples": 4, "share_bin_s": 1.0,
                           "flows_interval_s": 1.0}
    f0, f1 = s["per_flow"]
    # window (2, 6]: flow 0 [2, 2, 3, 1] Mbps, flow 1 [2, 1, 1, 1]
    assert f0["goodput_bps"] == pytest.approx(2e6)
    assert f1["goodput_bps"] == pytest.approx(1.25e6)
    assert f0["share"] == pytest.approx(2 / 3.25)
    assert f0["retrans_segs"] == 3
    assert f0["retrans_rate"] == pytest.approx(3 / 400)  # 400 segments sent in 4 s
    assert f0["rtt_ms_mean"] == pytest.approx(50)
    assert f0["rtt_ms_p50"] == pytest.approx(50)
    assert f0["cwnd_bytes_mean"] == pytest.approx(10_000 + 1000 * (2 + 3 + 4 + 5) / 4)

    cubic = s["per_algorithm"]["cubic"]
    # per-sample CUBIC shares: 2/4, 2/3, 3/4, 1/2 -> p25 0.5, p75 2/3 + 0.25*(3/4-2/3)
    assert cubic["share_p25"] == pytest.approx(0.5)
    assert cubic["share_p75"] == pytest.approx(0.6875)
    assert cubic["share_iqr"] == pytest.approx(0.1875)
    assert cubic["share"] + s["per_algorithm"]["reno"]["share"] == pytest.approx(1)

    agg = s["aggregate"]
    assert agg["goodput_bps"] == pytest.approx(3.25e6)
    assert agg["utilization"] == pytest.approx(13 / 16)  # 13 Mbit delivered of 16 Mbit capacity
    assert agg["drops"] == {"overflow": 3.0, "random": 1.0, "aqm": 0.0, "policer": 0.0}
    assert agg["loss_rate"] == pytest.approx(4 / 43)  # 40 departed + 4 dropped - 1 left the queue
    assert agg["queue_delay_ms_mean"] == pytest.approx(10)  # (10*5 + 10*15 + 20*10) / 40
    assert agg["queue_delay_ms_p50"] == pytest.approx(10)
    assert agg["jain"] == pytest.approx(3.25**2 / (2 * (4 + 1.5625)))


def test_jain_only_over_flows_active_in_window(raw_ir):
    raw, ir = raw_ir
    # flow 1 active only before the window and delivering nothing afterwards
    f1 = raw["flows"]["flow_id"] == 1
    raw["flows"]["active"] = np.where(f1 & (raw["flows"]["time_ns"] > 2e9), False, True)
    d = raw["flows"]["delivered_bytes"]
    raw["flows"]["delivered_bytes"] = np.where(f1 & (raw["flows"]["time_ns"] > 2e9), 250_000, d)
    s = metrics.summary(metrics.flows_frame(raw, ir), metrics.link_frame(raw, ir), ir)
    assert s["aggregate"]["flows_active"] == 1
    assert s["aggregate"]["jain"] == 1.0
    # not active in the window: no goodput over an active interval; nothing over the whole window
    assert s["per_flow"][1]["goodput_bps"] is None
    assert s["per_flow"][1]["active_s"] == 0.0
    assert s["per_flow"][1]["goodput_window_bps"] == 0.0
    assert s["per_flow"][1]["cwnd_bytes_mean"] is None  # null, not NaN


def test_jain_series(raw_ir):
    raw, ir = raw_ir
    j = metrics.jain_series(metrics.flows_frame(raw, ir))
    assert j.loc[1.0] == 1.0
    assert j.loc[5.0] == pytest.approx(16 / (2 * 10))


def test_missing_raw_columns_are_nan(raw_ir):
    raw, ir = raw_ir
    del raw["flows"]["pacing_rate_bps"], raw["flows"]["egress_bytes"]
    f = metrics.flows_frame(raw, ir)
    assert f.pacing_rate_bps.isna().all() and f.throughput_bps.isna().all()


def test_share_and_jain_in_bins(raw_ir):
    raw, ir = raw_ir
    f = metrics.flows_frame(raw, ir)
    w = f[metrics.in_window(f.time_s, ir)]
    # 2 s bins: (2,4] cubic 2+2 of 7 Mbit·s, (4,6] cubic 3+1 of 6
    sh = metrics.share_series(w, bin_s=2.0)
    assert list(sh.index) == [4.0, 6.0]
    np.testing.assert_allclose(sh["cubic"], [4 / 7, 4 / 6])
    s = metrics.summary(f, metrics.link_frame(raw, ir), ir, share_bin_s=2.0)
    assert s["per_algorithm"]["cubic"]["share_iqr"] == pytest.approx(0.5 * (4 / 6 - 4 / 7))
    j = metrics.jain_series(w, bin_s=2.0)
    assert j.loc[4.0] == pytest.approx(metrics.jain_index([2, 1.5]))
