"""``[host] read_delay``: the receiving application reads late, and the receiver
holds its ACKs while data waits unread (Linux ``__tcp_ack_snd_check``), then
ACKs everything the read took (``tcp_cleanup_rbuf``) — docs/validation.md §4,
"What the stalls are"; the engine's ``tcp/receiver.rs``."""

from __future__ import annotations

import pytest

import cclab._native as native
from cclab.errors import ScenarioError
from cclab.jitter import READ_DELAY_POINTS
from cclab.resolve import ir_hash, resolve
from cclab.scenario import scenario_from_dict
from helpers import sim_frames

pytestmark = pytest.mark.skipif(not hasattr(native, "simulate"), reason="the native engine is not built")

#: About what the kernel backend's receiving application showed on the project's VM.
LATE = {"median": "34us", "p99": "250us"}


def _scenario(read_delay=None, seed=1, duration="8s", cca="reno", rate="500Mbps", buffer="0.1bdp", links=None):
    d = {"name": "late-reader", "duration": duration, "seed": seed, "measure": {"from": "2s"},
         "flows": [{"cca": cca, "rtt": "10ms"}]}  # fmt: skip
    if links is None:
        d["link"] = {"rate": rate, "buffer": buffer}
    else:
        d["links"] = links
        d["flows"][0]["path"] = list(links)
    if read_delay is not None:
        d["host"] = {"read_delay": read_delay}
    return scenario_from_dict(d)


def _run(sc):
    return sim_frames(sc)[1:]


def test_no_read_delay_leaves_the_ir_and_its_hash_as_before():
    plain = resolve(_scenario())
    assert "read_delay_ns" not in plain["host"]
    late = resolve(_scenario(LATE))
    t = late["host"]["read_delay_ns"]
    assert len(t) == READ_DELAY_POINTS + 1 and t == sorted(t) and t[0] == 0
    assert t[READ_DELAY_POINTS // 2] == 34_000
    assert ir_hash(late) != ir_hash(plain)
    assert _scenario(LATE).to_dict()["host"] == {"read_delay": LATE}
    q = resolve(_scenario({"quantiles": ["10us", "30us", "2ms"]}))["host"]["read_delay_ns"]
    assert q[0] == 10_000 and q[READ_DELAY_POINTS // 2] == 30_000 and q[-1] == 2_000_000


@pytest.mark.parametrize(("spec", "field", "words"), [
    ("20us", "host.read_delay", "not a distribution of durations"),
    ({"median": "0us", "p99": "1us"}, "host.read_delay.median", "must be positive"),
    ({"median": "50us", "p99": "10us"}, "host.read_delay.p99", "below the median"),
    ({"quantiles": ["2ms", "1ms"]}, "host.read_delay.quantiles[1]", "below the quantile before it"),
    ({"median": "50us", "p95": "1ms"}, "host.read_delay", "unknown key(s) p95"),
    ({"median": "5s", "p99": "6s"}, "host.read_delay.median", "longer than 1 s"),
    ({"histogram": {"bin": "10us"}}, "host.read_delay.histogram", "are not bin and counts"),
    ({"histogram": [1, 2]}, "host.read_delay.histogram", "is not a histogram"),
    ({"histogram": {"bin": "0us", "counts": [1]}}, "host.read_delay.histogram.bin", "wider than 0"),
    ({"histogram": {"bin": "10xs", "counts": [1]}}, "host.read_delay.histogram.bin", "unknown unit"),
    ({"histogram": {"bin": "10us", "counts": []}}, "host.read_delay.histogram.counts", "not a list of counts"),
    ({"histogram": {"bin": "10us", "counts": [3, -1]}}, "host.read_delay.histogram.counts[1]", "not a whole number ≥ 0"),
    ({"histogram": {"bin": "10us", "counts": [3, 1.5]}}, "host.read_delay.histogram.counts[1]", "not a whole number ≥ 0"),
    ({"histogram": {"bin": "10us", "counts": [0, 0]}}, "host.read_delay.histogram.counts", "every count is 0"),
    ({"histogram": {"bin": "600ms", "counts": [1, 0, 1]}}, "host.read_delay.histogram.bin", "ends beyond 1 s"),
    ({"histogram": {"bin": "10us", "counts": [1]}, "median": "1us"}, "host.read_delay", "do not form a distribution"),
])  # fmt: skip
def test_bad_read_delay_is_one_line_naming_the_field(spec, field, words):
    with pytest.raises(ScenarioError) as e:
        _scenario(spec)
    msg = str(e.value)
    assert msg.startswith(field + ":") and words in msg and "\n" not in msg, msg


def test_a_histogram_goes_to_the_engine_as_edges_and_cumulative_probabilities():
    # counts of [0, 10), [10, 20), [20, 30), [30, 40) µs, the last two bins' trailing zero left out
    h = {"histogram": {"bin": "10us", "counts": [1, 0, 3, 0]}}
    host = resolve(_scenario(h))["host"]
    assert host["read_delay_ns"] == [0, 10_000, 20_000, 30_000]
    assert host["read_delay_p"] == [0, 2**30, 2**30, 2**32]  # the empty bin: no probability
    assert _scenario(h).to_dict()["host"] == {"read_delay": h}
    # evenly spaced spellings have no probabilities, and no read delay has neither
    assert "read_delay_p" not in resolve(_scenario(LATE))["host"]
    assert "read_delay_p" not in resolve(_scenario())["host"]
    # the same histogram as jitter (jitter_ns / jitter_p)
    j = resolve(scenario_from_dict({"name": "j", "duration": "1s", "link": {"rate": "10Mbps"},
                                    "flows": [{"cca": "cubic", "rtt": "10ms"}], "host": {"jitter": h}}))["host"]  # fmt: skip
    assert j["jitter_ns"] == host["read_delay_ns"] and j["jitter_p"] == host["read_delay_p"]


def test_a_rare_tail_keeps_its_measured_weight():
    # a million reads of 0-10 µs and one of 2-2.01 ms: drawn with the histogram's probabilities the
    # reader is all but punctual — as with reads uniform over 0-10 µs — where the same 202 edges
    # evenly spaced in probability would make the median read 1 ms late
    counts = [999_999] + [0] * 199 + [1]
    hist, _ = _run(_scenario({"histogram": {"bin": "10us", "counts": counts}}, duration="4s"))
    same, _ = _run(_scenario({"histogram": {"bin": "10us", "counts": counts}}, duration="4s"))
    assert hist.equals(same)
    fast, _ = _run(_scenario({"quantiles": ["0us", "10us"]}, duration="4s"))
    edges = [f"{i * 10}us" for i in range(202)]
    smeared, _ = _run(_scenario({"quantiles": edges}, duration="4s"))
    win = lambda f: f[f.time_s >= 2].goodput_bps.mean()  # noqa: E731
    print(f"goodput: histogram {win(hist) / 1e6:.1f}, 0-10 µs {win(fast) / 1e6:.1f}, edges evenly spaced {win(smeared) / 1e6:.1f} Mbit/s")
    assert abs(win(hist) / win(fast) - 1) < 0.03
    assert win(smeared) < 0.8 * win(fast)


def test_the_kernel_backend_refuses_it_and_topologies_take_it():
    from cclab.kernel.backend import check

    with pytest.raises(ScenarioError, match="host.read_delay: the receiving application's read latency is a simulator option"):
        check(resolve(_scenario(LATE)))
    links = {"a": {"from": "h1", "to": "r", "rate": "100Mbps"}, "b": {"from": "r", "to": "h2", "rate": "50Mbps", "buffer": "0.5bdp"}}
    f, _ = _run(_scenario(LATE, links=links, duration="4s"))
    assert f[f.time_s >= 2].goodput_bps.mean() > 40e6  # the 50 Mbit/s link, nearly full


def test_read_delay_is_deterministic_per_seed():
    a, la = _run(_scenario(LATE, seed=3, duration="4s"))
    b, lb = _run(_scenario(LATE, seed=3, duration="4s"))
    c, _ = _run(_scenario(LATE, seed=4, duration="4s"))
    assert a.equals(b) and la.equals(lb)
    assert not a.cwnd_bytes.equals(c.cwnd_bytes)


def test_a_late_reader_turns_the_ack_clock_into_bursts_that_overflow_a_shallow_buffer():
    # Reno at 500 Mbit/s / 10 ms on a 0.1-BDP (43-packet) buffer: a read
    # 250 µs late is ten packets acknowledged by one ACK and sent back to
    # back; the tail overflows the buffer at windows the punctual reader's
    # ACK clock would carry (the kernel testbed's mechanism B).
    plain_f, plain_l = _run(_scenario())
    late_f, late_l = _run(_scenario(LATE))
    win = lambda f: f[f.time_s >= 2]  # noqa: E731
    assert win(late_l).drops_overflow.sum() > 2 * max(win(plain_l).drops_overflow.sum(), 1)  # after Startup
    assert win(late_f).goodput_bps.mean() < 0.85 * win(plain_f).goodput_bps.mean()
    # BBR paces: the same late reader costs it (almost) nothing
    bbr_plain, _ = _run(_scenario(cca="bbr", buffer="100KB"))
    bbr_late, _ = _run(_scenario(LATE, cca="bbr", buffer="100KB"))
    assert win(bbr_late).goodput_bps.mean() > 0.97 * win(bbr_plain).goodput_bps.mean()
