"""Shared test helpers (plain module): a small synthetic engine output with hand-known metrics.

Import them with ``from helpers import …`` (tests/ is on sys.path under
pytest's default import mode). They live here, not in conftest.py, because
tests/kernel/ has a conftest.py of its own and both would be the module
"conftest". conftest.py turns them into fixtures.

``synthetic()`` returns ``(raw, ir)`` for two flows (CUBIC id 0, Reno id 1) on
a 4 Mbps link, 1 s samples, 6 s, measure window [2 s, 6 s). Per-interval
values are chosen so every summary metric has a value computed by hand in
tests/test_metrics.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cclab.resolve import IR_VERSION, host_ir, resolve

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[1]

MBIT = 1_000_000 / 8  # bytes per second at 1 Mbps
SEC = 1_000_000_000
WIRE = 1500


def synthetic_ir(n_samples: int = 6, ccas: tuple[str, ...] = ("cubic", "reno")) -> dict:
    return {
        "ir_version": IR_VERSION,
        "name": "synthetic",
        "duration_ns": n_samples * SEC,
        "seed": 1,
        "sample_interval_ns": SEC,
        "measure": {"from_ns": 2 * SEC, "to_ns": n_samples * SEC},
        "mss": 1448,
        "header_bytes": 52,
        "links": [{
            "name": "link", "from": "left", "to": "right",
            "capacity": {"kind": "constant", "rate_bps": 4_000_000},
            "delay_ns": 0,
            "buffer": {"bytes": 15000, "packets": None},
            "loss": {"kind": "bernoulli", "p": 0.0},
            "schedule": [],
            "qdisc": {"kind": "droptail"},
        }],
        "flows": [
            {"id": i, "group": i, "cca": c, "cca_params": {}, "rtt_ns": 20_000_000 * (i + 1),
             "start_ns": 0, "stop_ns": None, "bytes": None, "rwnd_bytes": None, "ecn": False,
             "path": ["link"], "ack_path": [], "ack_every": 2, "sack": True}
            for i, c in enumerate(ccas)
        ],
        "host": host_ir(4_000_000, 20_000_000 * len(ccas), 15000),
    }  # fmt: skip


def synthetic_raw() -> dict:
    """Raw output for :func:`synthetic_ir` (rows by time, then flow id)."""
    t = np.arange(1, 7) * SEC
    goodput_mbps = {0: [1, 1, 2, 2, 3, 1], 1: [1, 1, 2, 1, 1, 1]}
    retrans = {0: [0, 0, 1, 0, 2, 0], 1: [0, 0, 0, 0, 0, 0]}
    rtt_ms = {0: [30, 30, 40, 50, 60, np.nan], 1: [45, 45, 45, 45, 45, 45]}
    cols: dict[str, list] = {k: [] for k in (
        "time_ns", "flow_id", "active", "delivered_bytes", "egress_bytes", "sent_bytes",
        "cwnd_bytes", "inflight_bytes", "ssthresh_bytes", "srtt_ns", "rtt_ns", "min_rtt_ns",
        "pacing_rate_bps", "retrans_segs", "lost_segs", "rto_count", "cc_state",
        "cc_w_max_bytes", "cc_bw_bps", "cc_min_rtt_ns", "cc_pacing_gain", "cc_cwnd_gain",
        "cc_inflight_hi_bytes", "cc_inflight_lo_bytes", "cc_bw_hi_bps", "cc_bw_lo_bps")}  # fmt: skip
    cum = {0: np.cumsum(goodput_mbps[0]) * MBIT, 1: np.cumsum(goodput_mbps[1]) * MBIT}
    cum_rt = {f: np.cumsum(retrans[f]) for f in (0, 1)}
    for k in range(6):
        for f in (0, 1):
            cols["time_ns"].append(int(t[k]))
            cols["flow_id"].append(f)
            cols["active"].append(True)
            cols["delivered_bytes"].append(cum[f][k])
            cols["egress_bytes"].append(cum[f][k] * WIRE / 1448)
            cols["sent_bytes"].append((k + 1) * 100 * WIRE)  # 100 segments per second
            cols["cwnd_bytes"].append(10_000 * (f + 1) + 1000 * k)
            cols["inflight_bytes"].append(8_000 * (f + 1))
            cols["ssthresh_bytes"].append(np.nan)
            cols["srtt_ns"].append(rtt_ms[1][k] * 1e6)
            cols["rtt_ns"].append(rtt_ms[f][k] * 1e6)
            cols["min_rtt_ns"].append(20e6 * (f + 1))
            cols["pacing_rate_bps"].append(np.nan)
            cols["retrans_segs"].append(cum_rt[f][k])
            cols["lost_segs"].append(cum_rt[f][k])
            cols["rto_count"].append(0)
            cols["cc_state"].append(k % 2)
            for c in ("cc_w_max_bytes", "cc_bw_bps", "cc_min_rtt_ns", "cc_pacing_gain", "cc_cwnd_gain",
                      "cc_inflight_hi_bytes", "cc_inflight_lo_bytes", "cc_bw_hi_bps", "cc_bw_lo_bps"):  # fmt: skip
                cols[c].append(np.nan)
    flows = {k: np.asarray(v) for k, v in cols.items()}
    departed = np.array([10, 10, 10, 10, 0, 20])
    sojourn_ms = np.array([1, 1, 5, 15, 0, 10])
    overflow = np.array([0, 0, 1, 0, 2, 0])
    random = np.array([0, 1, 0, 0, 0, 1])
    egress_per_s = (np.array(goodput_mbps[0]) + np.array(goodput_mbps[1])) * MBIT * WIRE / 1448
    link = {
        "time_ns": t,
        "queue_bytes": np.array([0, 1500, 3000, 4500, 3000, 0], dtype=float),
        "queue_packets": np.array([0, 1, 2, 3, 2, 0], dtype=float),
        "sojourn_sum_ns": np.cumsum(departed * sojourn_ms * 1e6),
        "departed_packets": np.cumsum(departed),
        "egress_bytes": np.cumsum(egress_per_s),
        "arrival_bytes": np.cumsum(egress_per_s),
        "drops_overflow": np.cumsum(overflow),
        "drops_random": np.cumsum(random),
        "drops_aqm": np.zeros(6),
        "capacity_bps": np.full(6, 4e6),
        "delay_ns": np.zeros(6),
    }
    return {
        "flows": flows,
        "link": link,
        "state_names": {"cubic": [], "reno": []},
        "counters": {"sent_packets": 0, "delivered_packets": 0, "dropped_packets": 0,
                     "queued_packets": 0, "in_flight_packets": 0},  # fmt: skip
        "engine_version": "synthetic",
    }



def has_simulate() -> bool:
    try:
        from cclab import _native
    except ImportError:
        return False
    return hasattr(_native, "simulate")


#: Skip a test until the engine has simulate() (then it runs for real).
needs_engine = pytest.mark.skipif(not has_simulate(), reason="cclab._native has no simulate() yet (engine not landed)")


def sim_frames(sc) -> tuple:
    """Run a :class:`cclab.scenario.Scenario` on the simulator, in memory: (IR, flows frame, link frame)."""
    from cclab import metrics
    from cclab.backends.sim import SimBackend

    ir = resolve(sc)
    raw = SimBackend().run(ir)
    return ir, metrics.flows_frame(raw, ir), metrics.link_frame(raw, ir)


def one_line_error(result, *needles: str) -> str:
    """A CLI result (typer's ``CliRunner``) that refused its input the project's way: exit 2, no
    exception escaping, one ``error: …`` line holding every needle, no traceback. Returns the line."""
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "Traceback" not in result.output
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]
