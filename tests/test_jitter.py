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


def _few_packets(buffer="2pkts", cca="cubic", host=None, qdisc="droptail", rate="20Mbps", rtt="40ms"):
    d = {
        "name": "few-packets",
        "duration": "30s",
        "seed": 1,
        "measure": {"from": "10s"},
        "link": {"rate": rate, "buffer": buffer, "qdisc": qdisc},
        "flows": [{"cca": cca, "rtt": rtt}],
    }
    if host is not None:
        d["host"] = host
    return scenario_from_dict(d)


def _few_packet_warnings(sc) -> list[str]:
    import warnings

    from cclab.backends.sim import few_packet_warnings
    from cclab.errors import ScenarioWarning

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        few_packet_warnings(resolve(sc))
    assert all(issubclass(w.category, ScenarioWarning) for w in seen)
    return [str(w.message) for w in seen]


@pytest.mark.parametrize(
    ("kw", "held"),
    [({}, 2), ({"buffer": "3000B"}, 2), ({"buffer": "3pkts", "cca": "reno"}, 3), ({"buffer": "5999B"}, 3)],
)
def test_a_few_packet_drop_tail_buffer_on_punctual_hosts_is_warned_about(kw, held):
    (msg,) = _few_packet_warnings(_few_packets(**kw))
    assert msg.startswith(f"link.buffer: holds {held} full-size packets of 1500 B")
    assert "[host] jitter" in msg and "unpaced flows" in msg


@pytest.mark.parametrize(
    "kw",
    [
        {"buffer": "4pkts"},
        {"buffer": "6000B"},
        {"buffer": "1pkts"},  # both stacks lose nearly every window; jitter changes nothing for CUBIC
        {"buffer": "2999B"},
        {"cca": "bbr"},  # paced: no burst of an ACK's worth
        {"qdisc": "codel"},
        {"host": {"jitter": {"median": "2.3us", "p99": "14us"}}},
    ],
)
def test_no_few_packet_warning_where_it_does_not_apply(kw):
    assert _few_packet_warnings(_few_packets(**kw)) == []


def test_the_few_packet_warning_reaches_the_command_line(tmp_path):
    from typer.testing import CliRunner

    from cclab.cli import app

    f = tmp_path / "few.toml"
    f.write_text('name = "few"\nduration = "2s"\n[link]\nrate = "20Mbps"\nbuffer = "2pkts"\n'
                 '[[flows]]\ncca = "cubic"\nrtt = "40ms"\n')  # fmt: skip
    r = CliRunner().invoke(app, ["run", str(f), "--out", str(tmp_path / "rec"), "--no-plot"])
    assert r.exit_code == 0, r.output
    assert "warning: link.buffer: holds 2 full-size packets" in r.output
    r = CliRunner().invoke(app, ["run", str(f), "--backend", "kernel", "--dry-run"])
    assert "holds 2 full-size packets" not in r.output  # a simulator matter only
    # validate-scenario says it too, through the CLI and through the fast path of the `cclab` command
    r = CliRunner().invoke(app, ["validate-scenario", str(f)])
    assert r.exit_code == 0 and "warning: link.buffer: holds 2 full-size packets" in r.output, r.output
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "cclab", "validate-scenario", str(f)], capture_output=True, text=True)
    assert p.returncode == 0 and "holds 2 full-size packets" in p.stderr and p.stdout.startswith("ok "), p


@pytest.mark.parametrize(
    ("cca", "rate", "rtt"), [("cubic", "20Mbps", "40ms"), ("reno", "20Mbps", "40ms"), ("cubic", "100Mbps", "20ms")]
)
def test_what_the_few_packet_warning_says_a_punctual_host_fits_bursts_a_real_one_loses(cca, rate, rtt):
    # The mechanism behind the warning (docs/validation.md §4, "Buffers of a few packets"): on a
    # 2-packet drop-tail buffer the punctual simulator's flow grows where, with the kernel hosts'
    # measured 2.3 µs of jitter, it collapses as Linux's does (simulator 15.6, 14.6, 14.4 Mbit/s
    # punctual, 1.9, 1.3, 2.4 jittered; kernel 1.0, 0.9, 1.7 on this project's machine).
    import warnings

    from cclab.errors import ScenarioWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScenarioWarning)
        _, punctual, _ = _run(_few_packets(cca=cca, rate=rate, rtt=rtt))
    _, jittered, _ = _run(_few_packets(cca=cca, rate=rate, rtt=rtt, host={"jitter": {"median": "2.3us", "p99": "14us"}}))

    def goodput(f):
        return f[f.time_s >= 10].goodput_bps.mean()

    assert goodput(punctual) > 4 * goodput(jittered), (goodput(punctual), goodput(jittered))
    assert goodput(jittered) < 0.2 * float(rate.removesuffix("Mbps")) * 1e6


def test_a_sweep_warns_once_per_message_from_its_plan_not_from_each_run(tmp_path):
    from typer.testing import CliRunner

    from cclab.cli import app

    (tmp_path / "base.toml").write_text('name = "few"\nduration = "2s"\n[link]\nrate = "20Mbps"\nbuffer = "2pkts"\n'
                                        '[[flows]]\ncca = "cubic"\nrtt = "40ms"\n')  # fmt: skip
    (tmp_path / "s.toml").write_text('base = "base.toml"\ntrials = 2\n[axes]\n"link.buffer" = ["2pkts", "3pkts", "8pkts"]\n')
    for args in (["--dry-run"], ["--out", str(tmp_path / "out"), "--no-progress", "-j", "1"]):
        r = CliRunner().invoke(app, ["sweep", str(tmp_path / "s.toml"), *args])
        assert r.exit_code == 0, r.output
        lines = [ln for ln in r.output.splitlines() if "full-size packets" in ln]
        assert len(lines) == 2 and all(ln.startswith("warning: link.buffer: holds ") for ln in lines), r.output
        assert "ScenarioWarning" not in r.output
