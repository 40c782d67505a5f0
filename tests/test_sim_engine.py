"""The simulator through the whole Python pipeline: determinism of the
written records (docs/validation.md check 7) and a real Mahimahi trace."""

import hashlib

import pytest

import cclab
import cclab._native as native
from cclab.scenario import scenario_from_dict

pytestmark = pytest.mark.skipif(not hasattr(native, "simulate"), reason="the native engine is not built")


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _two_flows(seed=1):
    return scenario_from_dict(
        {
            "name": "determinism",
            "duration": "5s",
            "seed": seed,
            "link": {"rate": "40Mbps", "buffer": "0.5bdp", "loss": 0.002},
            "flows": [
                {"cca": "cubic", "rtt": "30ms"},
                {"cca": "bbr", "rtt": "60ms", "start": "1s"},
            ],
        }
    )


def test_same_seed_gives_byte_identical_parquet(tmp_path):
    a = cclab.run_to_dir(_two_flows(), tmp_path / "a")
    b = cclab.run_to_dir(_two_flows(), tmp_path / "b")
    for name in ("flows.parquet", "link.parquet", "summary.json", "resolved.json"):
        assert _digest(a / name) == _digest(b / name), name
    c = cclab.run_to_dir(_two_flows(seed=2), tmp_path / "c")
    assert _digest(a / "link.parquet") != _digest(c / "link.parquet"), "the seed must matter with random loss"


def test_verizon_trace_link_delivers_what_the_trace_allows(tmp_path):
    # The bundled 140 s Verizon LTE downlink trace (Mahimahi format). With a
    # deep buffer one CUBIC flow keeps the queue non-empty, so the bottleneck
    # uses nearly every delivery opportunity; it can never use more.
    sc = scenario_from_dict(
        {
            "name": "verizon",
            "duration": "60s",
            "measure": {"from": "10s"},
            "link": {"trace": "traces/Verizon-LTE-short.down", "buffer": "4bdp"},
            "flows": [{"cca": "cubic", "rtt": "50ms"}],
        }
    )
    run = cclab.load(cclab.run_to_dir(sc, tmp_path / "v"))
    link = run.link[(run.link.time_s > 10)]
    interval = 0.01
    sent_bits = link.throughput_bps.sum() * interval
    capacity_bits = link.capacity_bps.sum() * interval
    assert sent_bits <= capacity_bits * 1.0001
    assert sent_bits >= 0.95 * capacity_bits, sent_bits / capacity_bits
    # Per 10 ms sample the link never beats the trace (one 1500-byte packet per opportunity).
    assert (link.throughput_bps <= link.capacity_bps + 1500 * 8 / interval).all()
    # Goodput is the payload share of that.
    goodput = run.summary["aggregate"]["goodput_bps"]
    assert goodput <= capacity_bits / 50 * 1448 / 1500 * 1.01


@pytest.mark.parametrize("mss", [1613, 8948])
def test_jumbo_segments_run(tmp_path, mss):
    # an MSS above 1 612 bytes gets the receive truesize of its skb (cclab.resolve.rcv_truesize):
    # the run goes through (it used to stop with "rcv_truesize 2304 is below mss") and fills the link
    run = cclab.run({"name": "jumbo", "duration": "5s", "mss": mss, "link": {"rate": "50Mbps", "buffer": "1bdp"},
                     "flows": [{"cca": "cubic", "rtt": "40ms"}]}, out=tmp_path / "r", plot=False)
    assert run.ir["host"]["rcv_truesize"] > mss
    assert run.summary["aggregate"]["utilization"] > 0.9


def test_retransmission_rate_of_tiny_flows_counts_segments():
    # 1-byte and 3 000-byte flows through 50 % random loss: their segments are short, so counting
    # wire bytes in full-size segments (records before sent_segs) made rates of 14–21 out of them.
    sc = scenario_from_dict({"name": "tiny", "duration": "10s", "seed": 3, "measure": {"from": "0s"},
                             "link": {"rate": "10Mbps", "delay": "10ms", "buffer": "100KB", "loss": 0.5},
                             "flows": [{"cca": "cubic", "rtt": "20ms", "bytes": "1B", "count": 3},
                                       {"cca": "cubic", "rtt": "20ms", "bytes": "3000B"}]})  # fmt: skip
    run = cclab.run(sc)
    per_flow = run.summary["per_flow"]
    assert all(float(f["sent_segs"]).is_integer() for f in per_flow), per_flow
    # each 1-byte flow: one segment plus its retransmissions; the 3 000-byte one: three segments (1448 + 1448 + 104)
    assert [f["sent_segs"] - f["retrans_segs"] for f in per_flow] == [1, 1, 1, 3], per_flow
    assert sum(f["retrans_segs"] for f in per_flow) > 0, "the seed must lose something"
    assert all(0 <= f["retrans_rate"] <= 1 for f in per_flow), per_flow
    assert (run.flows["retrans_segs"] <= run.flows["sent_segs"]).all()
