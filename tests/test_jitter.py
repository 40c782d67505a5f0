"""Host timing jitter (``[host] jitter``, cclab.jitter; the engine's jitter.rs):
the schema and its errors, the IR (absent when off, so old scenarios keep
their hash), determinism, the kernel backend's refusal, and the mechanism it
exists for — jittered ACK timing biases BBR's delivery-rate samples upward
(docs/validation.md §4, mechanism A)."""

from __future__ import annotations

import numpy as np
import pytest

import cclab._native as native
from cclab.errors import ScenarioError
from cclab.jitter import JITTER_POINTS, lognormal_table, quantile_table
from cclab.resolve import ir_hash, resolve
from cclab.scenario import scenario_from_dict
from helpers import sim_frames

pytestmark = pytest.mark.skipif(not hasattr(native, "simulate"), reason="the native engine is not built")


def _scenario(jitter=None, seed=1, duration="12s", cca="bbr"):
    d = {
        "name": "jitter",
        "duration": duration,
        "seed": seed,
        "measure": {"from": "4s"},
        "link": {"rate": "100Mbps", "buffer": "2bdp"},
        "flows": [{"cca": cca, "rtt": "10ms"}],
    }
    if jitter is not None:
        d["host"] = {"jitter": jitter}
    return scenario_from_dict(d)


_run = sim_frames


def test_lognormal_table_has_the_requested_quantiles():
    t = lognormal_table(20_000, 200_000)
    assert len(t) == JITTER_POINTS + 1 and t[0] == 0 and t == sorted(t)
    assert t[JITTER_POINTS // 2] == 20_000
    # p99 lies between the table points around 0.99·256 = 253.44
    lo, hi = t[253], t[254]
    assert lo <= 200_000 <= hi
    assert lognormal_table(5_000, 5_000) == [5_000] * (JITTER_POINTS + 1)  # a constant delay


def test_quantile_table_resamples_linearly_in_probability():
    t = quantile_table([0, 100, 1000], points=4)
    assert t == [0, 50, 100, 550, 1000]


def test_no_jitter_leaves_the_ir_and_its_hash_as_before():
    plain = resolve(_scenario())
    assert "jitter_ns" not in plain["host"]
    assert ir_hash(resolve(_scenario(jitter=None))) == ir_hash(plain)
    jittered = resolve(_scenario(jitter={"median": "20us", "p99": "100us"}))
    assert len(jittered["host"]["jitter_ns"]) == JITTER_POINTS + 1
    assert ir_hash(jittered) != ir_hash(plain)
    # the TOML round trip keeps it (and leaves out an unset [host])
    assert "host" not in _scenario().to_dict()
    assert _scenario(jitter={"quantiles": ["0us", "5us", "1ms"]}).to_dict()["host"] == {"jitter": {"quantiles": ["0us", "5us", "1ms"]}}


@pytest.mark.parametrize(("jitter", "field", "words"), [
    ({"median": "20us"}, "host.jitter", "do not form a distribution"),
    ({"median": "20us", "p99": "10us"}, "host.jitter.p99", "below the median"),
    ({"median": "0us", "p99": "10us"}, "host.jitter.median", "must be positive"),
    ({"quantiles": ["5us", "1us"]}, "host.jitter.quantiles[1]", "below the quantile before it"),
    ({"quantiles": ["5us"]}, "host.jitter.quantiles", "at least two"),
    ({"median": "2s", "p99": "3s"}, "host.jitter.median", "longer than 1 s"),
    ({"median": "20us", "p99": "1ms", "mean": "1us"}, "host.jitter", "unknown key(s) mean"),
    ("20us", "host.jitter", "not a distribution of durations"),
    ({"median": "20uss", "p99": "1ms"}, "host.jitter.median", "unknown unit"),
])  # fmt: skip
def test_bad_jitter_is_one_line_naming_the_field(jitter, field, words):
    with pytest.raises(ScenarioError) as e:
        _scenario(jitter=jitter)
    msg = str(e.value)
    assert msg.startswith(field + ":") and words in msg and "\n" not in msg, msg


def test_the_kernel_backend_refuses_host_jitter():
    from cclab.kernel.backend import check

    ir = resolve(_scenario(jitter={"median": "20us", "p99": "100us"}))
    with pytest.raises(ScenarioError, match="host.jitter: host jitter is a simulator option"):
        check(ir)


def test_jitter_is_deterministic_per_seed_and_keeps_paths_in_order():
    j = {"median": "20us", "p99": "200us"}
    _, a, la = _run(_scenario(j, seed=3, duration="6s", cca="cubic"))
    _, b, lb = _run(_scenario(j, seed=3, duration="6s", cca="cubic"))
    _, c, _ = _run(_scenario(j, seed=4, duration="6s", cca="cubic"))
    assert a.equals(b) and la.equals(lb)
    assert not a.rtt_ms.equals(c.rtt_ms)
    # FIFO per path: no segment overtakes another, so every retransmission
    # repairs a real drop (reordering would look like loss to RACK / dupthresh)
    assert a.retrans_segs.sum() == la.drops_overflow.sum() + la.drops_random.sum()


def test_ack_timing_jitter_biases_bbr_bandwidth_estimate_upward():
    # Linux tcp_rate.c: a delivery-rate sample spans from the delivery that
    # preceded a packet's send to its own ACK; when the first ACK was late and
    # the second punctual, the interval is short and the sample high, and BBR's
    # max filter keeps the high samples (tcp_bbr.c bbr_update_bw). Punctual
    # hosts give exactly the link's payload rate.
    ir, plain, _ = _run(_scenario())
    payload = 100e6 * 1448 / 1500
    w = plain.time_s >= 4
    assert plain.loc[w, "bw_bps"].median() == pytest.approx(payload, rel=1e-4)
    _, jit, _ = _run(_scenario({"median": "20us", "p99": "100us"}))
    ratio = jit.loc[jit.time_s >= 4, "bw_bps"].median() / payload
    assert 1.002 < ratio < 1.03, ratio
    # and once the handshake's sample has expired (10 s, ProbeRTT), BBR's
    # min_rtt carries host delay
    assert jit.bw_min_rtt_ms.iloc[-1] > plain.bw_min_rtt_ms.iloc[-1] + 0.02
