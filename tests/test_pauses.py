"""Host pauses (``[host] pauses``, cclab.jitter.pauses_ir; the engine's pauses.rs):
the schema and its errors, the IR (absent when off, so old scenarios keep
their hash), determinism, the refusals, and the mechanism it exists for — a
pause turns an ACK-clocked CUBIC train into a burst that overflows a shallow
buffer (docs/validation.md §4, "Host pauses", mechanism B)."""

from __future__ import annotations

import pytest

import cclab._native as native
from cclab.errors import ScenarioError
from cclab.jitter import JITTER_POINTS, exponential_table
from cclab.resolve import ir_hash, resolve
from cclab.scenario import scenario_from_dict
from helpers import sim_frames

pytestmark = pytest.mark.skipif(not hasattr(native, "simulate"), reason="the native engine is not built")

#: Pauses like the ones a busy loop sees on the project's 2-vCPU VM (docs/validation.md §4).
MEASURED = {"every": "290ms", "durations": ["0.2ms", "0.66ms", "0.84ms", "0.85ms", "0.86ms", "0.87ms",
                                            "0.89ms", "1.4ms", "1.5ms", "1.6ms", "8.3ms"]}  # fmt: skip


def _scenario(pauses=None, seed=1, duration="12s", rate="500Mbps", buffer="100KB", links=None):
    d = {
        "name": "pauses",
        "duration": duration,
        "seed": seed,
        "measure": {"from": "2s"},
        "flows": [{"cca": "cubic", "rtt": "10ms"}],
    }
    if links is None:
        d["link"] = {"rate": rate, "buffer": buffer}
    else:
        d["links"] = links
        d["flows"][0]["path"] = list(links)
    if pauses is not None:
        d["host"] = {"pauses": pauses}
    return scenario_from_dict(d)


def _run(sc):
    return sim_frames(sc)[1:]


def test_exponential_table_has_the_requested_mean_and_median():
    t = exponential_table(1_000_000)
    assert len(t) == JITTER_POINTS + 1 and t[0] == 0 and t == sorted(t)
    assert t[JITTER_POINTS // 2] == round(1_000_000 * 0.6931471805599453)  # median = mean × ln 2
    # the engine interpolates linearly between the points (over the convex
    # quantile function: a little high) and the table is cut at p99.96 (a
    # little low): the mean it draws is within 1 % of the one asked for
    mean = sum((a + b) / 2 for a, b in zip(t, t[1:])) / JITTER_POINTS
    assert abs(mean / 1_000_000 - 1) < 0.01, mean


def test_no_pauses_leave_the_ir_and_its_hash_as_before():
    plain = resolve(_scenario())
    assert "pauses" not in plain["host"]
    paused = resolve(_scenario(MEASURED))
    p = paused["host"]["pauses"]
    assert len(p["gaps_ns"]) == len(p["durations_ns"]) == JITTER_POINTS + 1
    assert p["durations_ns"][0] == 200_000 and p["durations_ns"][-1] == 8_300_000
    assert ir_hash(paused) != ir_hash(plain)
    assert _scenario(MEASURED).to_dict()["host"] == {"pauses": MEASURED}


@pytest.mark.parametrize(("pauses", "field", "words"), [
    ({"every": "300ms"}, "host.pauses", "missing durations"),
    ({"every": "300ms", "durations": ["1ms"], "rate": 3}, "host.pauses", "unknown key(s) rate"),
    ({"every": "0ms", "durations": ["1ms", "2ms"]}, "host.pauses.every", "must be positive"),
    ({"every": "500ns", "durations": ["0ms", "0ms"]}, "host.pauses.every", "shorter than 1 µs"),
    ({"every": "2h", "durations": ["1ms", "2ms"]}, "host.pauses.every", "longer than an hour"),
    ({"every": "300ms", "durations": ["2ms", "1ms"]}, "host.pauses.durations[1]", "below the quantile before it"),
    ({"every": "300ms", "durations": ["1ms"]}, "host.pauses.durations", "at least two"),
    ({"every": "300ms", "durations": ["1ms", "2s"]}, "host.pauses.durations[1]", "longer than 1 s"),
    ({"every": "300mss", "durations": ["1ms", "2ms"]}, "host.pauses.every", "unknown unit"),
    ("300ms", "host.pauses", "not a description of host pauses"),
])  # fmt: skip
def test_bad_pauses_are_one_line_naming_the_field(pauses, field, words):
    with pytest.raises(ScenarioError) as e:
        _scenario(pauses)
    msg = str(e.value)
    assert msg.startswith(field + ":") and words in msg and "\n" not in msg, msg


def test_the_kernel_backend_and_topologies_refuse_host_pauses():
    from cclab.kernel.backend import check

    with pytest.raises(ScenarioError, match="host.pauses: host pauses are a simulator option"):
        check(resolve(_scenario(MEASURED)))
    links = {"a": {"from": "h1", "to": "r", "rate": "100Mbps"}, "b": {"from": "r", "to": "h2", "rate": "50Mbps"}}
    with pytest.raises(ScenarioError, match="host.pauses: host pauses are modelled on one-link topologies"):
        resolve(_scenario(MEASURED, links=links))


def test_pauses_are_deterministic_per_seed_and_keep_paths_in_order():
    a, la = _run(_scenario(MEASURED, seed=3, duration="6s"))
    b, lb = _run(_scenario(MEASURED, seed=3, duration="6s"))
    c, _ = _run(_scenario(MEASURED, seed=4, duration="6s"))
    assert a.equals(b) and la.equals(lb)
    assert not a.cwnd_bytes.equals(c.cwnd_bytes)
    # in order: every retransmission repairs a real drop
    assert a.retrans_segs.sum() == la.drops_overflow.sum() + la.drops_random.sum()


def test_pauses_turn_an_ack_clocked_train_into_a_burst_that_overflows_a_shallow_buffer():
    # CUBIC at 500 Mbit/s on a 100 KB (69-packet) buffer: with punctual hosts
    # the ACK clock spaces the window by the link and it grows past the BDP
    # with a loss every few seconds; a 0.85 ms pause holds 35 packets' worth
    # of ACKs (or data), released back to back, and a few-ms pause overflows
    # the buffer at a window far below the BDP (the kernel testbed's B cases).
    plain_f, plain_l = _run(_scenario(duration="12s"))
    paused_f, paused_l = _run(_scenario(MEASURED, duration="12s"))
    win = lambda f: f[f.time_s >= 2]  # noqa: E731
    assert paused_l.drops_overflow.sum() > 3 * max(plain_l.drops_overflow.sum(), 1)
    assert win(paused_f).goodput_bps.mean() < 0.8 * win(plain_f).goodput_bps.mean()
    # punctual hosts, the same run: unchanged by the option's existence
    again_f, _ = _run(_scenario(duration="12s"))
    assert again_f.equals(plain_f)
