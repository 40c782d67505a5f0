"""Honest trials and the metrics papers report (issue 12.1–12.3, 14.2–14.3), through the simulator.

Each test runs short real scenarios; the published or analytic value it
checks against is named next to it.
"""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import cclab
from cclab import metrics, record
from cclab.api import prepare
from cclab.backends.sim import SimBackend
from cclab.resolve import resolve, start_offset_ns
from cclab.runner import run_sweep
from cclab.scenario import scenario_from_dict
from cclab.store import group_over_trials, read_results, trial_interval
from cclab.sweep import load_sweep, sweep_from_dict

REPO = Path(__file__).resolve().parents[1]


def _cubic(**over):
    base = {"name": "cubic-alone", "duration": "10s", "measure": {"from": "2s"},
            "link": {"rate": "20Mbps", "buffer": "1bdp"}, "flows": [{"cca": "cubic", "rtt": "20ms", "count": 2}]}
    base.update(over)
    return base


# ---------------------------------------------------------------- 12.1 honest trials


def test_start_offsets_are_drawn_from_the_seed_within_one_rtt():
    ir = resolve(scenario_from_dict(_cubic()))
    offsets = [f["start_offset_ns"] for f in ir["flows"]]
    assert all(0 < o < 20_000_000 for o in offsets) and offsets[0] != offsets[1]
    assert [f["start_ns"] for f in ir["flows"]] == offsets  # start 0 + offset: the IR carries the explicit start
    assert offsets == [start_offset_ns(1, i, 20_000_000) for i in range(2)]
    other = resolve(scenario_from_dict(_cubic(seed=2)))
    assert [f["start_ns"] for f in other["flows"]] != [f["start_ns"] for f in ir["flows"]]
    # a window in time, and a multiple of the RTT
    ir5 = resolve(scenario_from_dict(_cubic(start_offset="5ms")))
    assert all(0 <= f["start_offset_ns"] < 5_000_000 for f in ir5["flows"])
    ir2 = resolve(scenario_from_dict(_cubic(start_offset="2rtt")))
    assert all(0 <= f["start_offset_ns"] < 40_000_000 for f in ir2["flows"])


def test_offset_zero_resolves_to_the_ir_of_before():
    # start_offset = 0: no start_offset_ns, no record section — exactly the IR (and hash) of earlier versions
    for zero in (0, "0", "0s"):
        ir = resolve(scenario_from_dict(_cubic(start_offset=zero)))
        assert all("start_offset_ns" not in f and f["start_ns"] == 0 for f in ir["flows"])
        assert "record" not in ir
    stored = json.loads((REPO / "tests/fixtures/sweep/records/runs/fixture0000000000000/resolved.json").read_text())
    assert "start_offset_ns" not in json.dumps(stored)


def test_offset_zero_keeps_the_ir_hash_of_stored_sweeps():
    # the content address of a sweep's runs: this hash was computed by cclab before start offsets
    # existed (the same scenario without start_offset); a sweep stored then resumes
    from cclab.resolve import ir_hash

    sc = {"name": "pinned", "duration": "30s", "seed": 7, "measure": {"from": "10s"}, "start_offset": 0,
          "link": {"rate": "80Mbps", "buffer": "1.75bdp", "loss": 0.001},
          "flows": [{"cca": "bbr", "rtt": "25ms", "count": 2, "stagger": "1s"}, {"cca": "cubic", "rtt": "50ms"}]}
    assert ir_hash(resolve(scenario_from_dict(sc))) == "45f830237ad8c5f0a396abf95dd95f2277e5701ac17f9ab3bb73b7b2e2fb6ddf"
    del sc["start_offset"]  # the default draws offsets: another experiment, another address
    assert ir_hash(resolve(scenario_from_dict(sc))) != "45f830237ad8c5f0a396abf95dd95f2277e5701ac17f9ab3bb73b7b2e2fb6ddf"


def test_start_offset_is_an_axis():
    from cclab.sweep import validate

    sw = sweep_from_dict({"base": _cubic(), "trials": 2, "axes": {"start_offset": [0, "1rtt", "5ms"]}}, ".")
    windows = {}
    for point, _sc, ir in validate(sw):
        windows.setdefault(point.params["start_offset"], []).append([f.get("start_offset_ns", 0) for f in ir["flows"]])
    assert windows[0] == [[0, 0], [0, 0]]
    assert all(0 < o < 20_000_000 for trial in windows["1rtt"] for o in trial)
    assert windows["1rtt"][0] != windows["1rtt"][1]  # each trial (seed) its own draw
    assert all(0 <= o < 5_000_000 for trial in windows["5ms"] for o in trial)


def test_start_offset_errors_name_the_field():
    with pytest.raises(cclab.ScenarioError, match=r"start_offset: '5 apples'.*multiple of each flow's base RTT"):
        scenario_from_dict(_cubic(start_offset="5 apples"))
    late = _cubic(start_offset="5s", duration="3s", measure={"from": "1s"})
    late["flows"][0]["start"] = "2.5s"
    with pytest.raises(cclab.ScenarioError, match=r"start_offset: .*not before the end of the run"):
        resolve(scenario_from_dict(late))


def _trials(tmp_path: Path, name: str, **over) -> pd.DataFrame:
    # two CUBIC flows: how they share the link depends on when each started (a single flow that
    # fills the link delivers the link's rate whatever its offset: trials may tie)
    base = _cubic(name=name, duration="6s", measure={"from": "1s"}, **over)
    out = tmp_path / name
    run_sweep(sweep_from_dict({"base": base, "trials": 5}, "."), out, jobs=1, progress=False)
    return read_results(out)


def test_trials_differ_and_identical_trials_are_marked_deterministic(tmp_path):
    varied = _trials(tmp_path, "offsets")
    assert varied["flow0.goodput_bps"].nunique() == 5  # only the start offsets differ between trials
    g = group_over_trials(varied, ["flow0.goodput_bps"])
    assert not g["deterministic"].iloc[0] and g["n_effective"].iloc[0] == 5
    assert g["flow0.goodput_bps.n"].iloc[0] == 5 and g["flow0.goodput_bps.ci95"].iloc[0] > 0

    same = _trials(tmp_path, "no-offsets", start_offset=0)
    assert same["flow0.goodput_bps"].nunique() == 1 and same["deterministic"].all()
    g = group_over_trials(same, ["flow0.goodput_bps"])
    assert g["deterministic"].iloc[0] and g["n_effective"].iloc[0] == 1
    assert math.isnan(g["flow0.goodput_bps.ci95"].iloc[0])  # no "± 0"
    from typer.testing import CliRunner

    from cclab.cli import app

    out = CliRunner().invoke(app, ["table", str(tmp_path / "no-offsets"), "-m", "flow0.goodput_bps"])
    assert out.exit_code == 0, out.output
    assert "deterministic, n=1 effective" in out.output and "± 0" not in out.output
    out = CliRunner().invoke(app, ["table", str(tmp_path / "offsets"), "-m", "flow0.goodput_bps"])
    assert "(n=5)" in out.output and "deterministic" not in out.output


def test_trial_intervals_come_from_scipy():
    from scipy import stats

    x = [1.0, 2.0, 4.0, 7.0]
    r = trial_interval(x)
    lo, hi = stats.t.interval(0.95, 3, loc=np.mean(x), scale=stats.sem(x))
    assert (r["value"], r["lo"], r["hi"], r["n"]) == (pytest.approx(3.5), pytest.approx(lo), pytest.approx(hi), 4)
    m = trial_interval([1.0, 2.0, 4.0, 7.0, 9.0], "median")
    assert m["value"] == 4.0 and m["lo"] <= 4.0 <= m["hi"] and m["statistic"] == "median"
    assert trial_interval([3.0, 3.0, 3.0])["deterministic"]
    assert math.isnan(trial_interval([3.0])["lo"]) and trial_interval([3.0])["n"] == 1


# ---------------------------------------------------------------- 12.2 metrics


def test_goodput_over_the_active_interval(tmp_path):
    # one flow runs from 20 s to 30 s of a 60 s window, alone on 10 Mbit/s
    sc = {"name": "ten-of-sixty", "duration": "60s", "start_offset": 0, "link": {"rate": "10Mbps", "buffer": "1bdp"},
          "flows": [{"cca": "cubic", "rtt": "20ms", "start": "20s", "stop": "30s"}]}
    r = cclab.run(sc, out=tmp_path / "r", plot=False)
    f = r.summary["per_flow"][0]
    payload = 10e6 * 1448 / 1500
    assert f["active_s"] == pytest.approx(10.0, abs=0.1)  # 20 s … last delivery just after 30 s
    assert f["goodput_bps"] == pytest.approx(payload, rel=0.06)  # the goodput of those 10 s
    assert f["goodput_window_bps"] == pytest.approx(payload / 6, rel=0.06)  # averaged over 60 s instead
    assert f["end_s"] == pytest.approx(30.0, abs=0.1)


def test_time_resolved_jain_below_whole_window_jain(tmp_path):
    # 2 BBR + 2 CUBIC joining 1 s apart at 1.75 BDP: the algorithms take turns (P6's cycles), so
    # over the window the flows' goodputs are closer than in any second (the issue's 0.976 vs 0.49–0.65)
    sc = {"name": "staggered", "duration": "60s", "measure": {"from": "10s"},
          "link": {"rate": "80Mbps", "buffer": "1.75bdp"},
          "flows": [{"cca": "bbr", "rtt": "25ms", "count": 2, "stagger": "2s"},
                    {"cca": "cubic", "rtt": "25ms", "count": 2, "stagger": "2s", "start": "1s"}]}
    agg = cclab.run(sc, out=tmp_path / "r", plot=False).summary["aggregate"]
    assert agg["jain_1s_mean"] < agg["jain"] - 0.05, agg
    assert agg["jain_1s_min"] < agg["jain_1s_mean"]
    assert agg["jain_rtt_bin_s"] == pytest.approx(0.03)  # one RTT (25 ms) rounded up to the 10 ms samples
    assert agg["jain_rtt_min"] <= agg["jain_1s_min"]
    assert agg["flows_joining"] == 3


def test_fct_of_a_finite_flow_against_slow_start_and_transfer(tmp_path):
    # 10 MB on 100 Mbit/s, 20 ms, a buffer of one BDP: initial window 10 segments doubling per RTT
    # (RFC 6928, RFC 5681) until the window reaches the BDP, then the rest at the bottleneck rate.
    sc = {"name": "fct", "duration": "5s", "start_offset": 0, "link": {"rate": "100Mbps", "buffer": "1bdp"},
          "flows": [{"cca": "cubic", "rtt": "20ms", "bytes": "10MB"}]}
    f = cclab.run(sc, out=tmp_path / "r", plot=False).summary["per_flow"][0]
    rtt, rate, mss, wire = 0.02, 100e6, 1448, 1500
    bdp_segs = rate * rtt / 8 / wire
    rounds = math.ceil(math.log2(bdp_segs / 10 + 1))  # rounds until the window covers the path
    sent_in_ss = 10 * (2**rounds - 1)
    segs = math.ceil(10e6 / mss)
    analytic = rounds * rtt + (segs - sent_in_ss) * wire * 8 / rate + rtt / 2
    assert f["fct_s"] == pytest.approx(analytic, abs=3 * rtt), (f["fct_s"], analytic)
    assert f["ideal_fct_s"] == pytest.approx((10e6 + segs * (wire - mss)) * 8 / rate + rtt / 2)
    assert f["slowdown"] == pytest.approx(f["fct_s"] / f["ideal_fct_s"]) and f["slowdown"] > 1
    assert f["end_s"] == pytest.approx(f["fct_s"] + f["start_s"])
    # docs/record.md's example: the last segment is as short as the payload left
    assert cclab.metrics.ideal_fct_s(1, 1e6, 0.02) == pytest.approx(0.010424)


def test_delay_distributions_are_per_packet(tmp_path):
    sc = {"name": "dist", "duration": "10s", "measure": {"from": "2s"}, "link": {"rate": "20Mbps", "buffer": "2bdp"},
          "flows": [{"cca": "cubic", "rtt": "40ms"}, {"cca": "bbr", "rtt": "40ms"}]}
    r = cclab.run(sc, out=tmp_path / "r", plot=False)
    agg = r.summary["aggregate"]
    assert agg["queue_delay_source"] == "packets"
    link = r.link[metrics.in_window(r.link["time_s"], r.ir)]
    soj = r.histograms["sojourn"]
    assert int(np.sum(soj["count"])) == int(link["departed_packets"].sum())  # every packet that left, once
    q = metrics.distribution(r.histograms, "queue_delay")
    p99 = float(q["upper_ms"][np.searchsorted(q["cdf"].to_numpy(), 0.99)])
    assert agg["queue_delay_ms_p99"] == pytest.approx(p99, rel=1 / 64)  # the same to a bin
    assert agg["queue_delay_ms_min"] <= agg["queue_delay_ms_p50"] <= agg["queue_delay_ms_p99"] <= agg["queue_delay_ms_max"]
    for f in r.summary["per_flow"]:
        assert f["rtt_source"] == "packets" and 40.0 <= f["rtt_ms_min"] <= f["rtt_ms_p50"] <= f["rtt_ms_max"]
    # the record keeps them: read back, same summary
    again = record.read_run(r.path)
    assert metrics.summary(again.flows, again.link, again.ir, histograms=again.histograms)["aggregate"][
        "queue_delay_ms_p95"] == agg["queue_delay_ms_p95"]


def test_streamed_record_equals_the_whole_output():
    _, _, ir = prepare(REPO / "examples" / "bbr-vs-cubic.toml")
    raw = SimBackend().run(ir)
    whole = metrics.flows_frame(raw, ir)
    stream = SimBackend().stream(ir, chunk_rows=333)  # 166 samples a chunk: ~36 chunk boundaries
    b = metrics.FrameBuilder(ir, stream.state_names)
    parts = [(b.flows(c["flows"]), b.link(c["link"])) for c in stream]
    tail = stream.finish()
    pd.testing.assert_frame_equal(pd.concat([p[0] for p in parts], ignore_index=True), whole)
    pd.testing.assert_frame_equal(pd.concat([p[1] for p in parts], ignore_index=True), metrics.link_frame(raw, ir))
    assert np.array_equal(tail["histograms"]["rtt"]["count"], raw["histograms"]["rtt"]["count"])


class _FakeEngine:
    """Stands in for ``cclab._native.Simulation`` to watch how SimStream drives it."""

    def __init__(self, fail_at: int | None = None):
        self.started: list[threading.Event] = [threading.Event() for _ in range(64)]
        self.threads: list[int] = []
        self.calls = 0
        self.fail_at = fail_at

    def advance(self, until_ns: int) -> dict:
        k = self.calls
        self.calls += 1
        self.threads.append(threading.get_ident())
        self.started[k].set()
        if k == self.fail_at:
            raise ValueError(f"engine failed in chunk {k}")
        return {"k": k, "until_ns": until_ns}


def _fake_stream(engine: _FakeEngine, n_chunks: int) -> Any:
    _, _, ir = prepare(REPO / "examples" / "bbr-vs-cubic.toml")
    stream = SimBackend().stream(ir)
    stream._sim = engine  # the real engine is never advanced
    stream._step = -(-int(ir["duration_ns"]) // n_chunks)
    return stream


def test_the_engine_computes_the_next_chunk_while_the_caller_works_on_this_one():
    engine = _FakeEngine()
    got = []
    for chunk in _fake_stream(engine, 4):
        k = chunk["k"]
        if k < 3:  # a sequential loop would start chunk k + 1 only after this body: the wait would time out
            assert engine.started[k + 1].wait(timeout=30), f"chunk {k + 1} did not start while chunk {k} was handled"
        got.append(k)
    assert got == [0, 1, 2, 3] and engine.calls == 4
    assert threading.get_ident() not in engine.threads  # the engine ran off the caller's thread


def test_an_engine_error_reaches_the_caller_and_leaving_early_stops_the_engine_thread():
    before = threading.active_count()
    with pytest.raises(ValueError, match="engine failed in chunk 2"):
        for _ in _fake_stream(_FakeEngine(fail_at=2), 5):
            pass
    assert threading.active_count() == before
    engine = _FakeEngine()
    stream = iter(_fake_stream(engine, 5))
    next(stream)
    stream.close()  # the caller stops (an error, Ctrl-C): the chunk under way finishes, no more start
    assert engine.calls == 2 and threading.active_count() == before


def test_a_started_stream_computes_its_first_chunk_before_it_is_iterated():
    """``start()`` sets the engine to work at once (cclab run imports pandas meanwhile); iterating
    then hands over the same chunks; a stream closed without being iterated stops its thread."""
    before = threading.active_count()
    engine = _FakeEngine()
    stream = _fake_stream(engine, 3).start()
    assert engine.started[0].wait(timeout=30), "start() did not set the engine to work"
    assert [c["k"] for c in stream] == [0, 1, 2] and engine.calls == 3
    assert threading.active_count() == before
    with pytest.raises(RuntimeError, match="streams once"):
        stream.start()
    engine = _FakeEngine()
    stream = _fake_stream(engine, 3).start()
    stream.close()  # e.g. an import failed after start(): the first chunk finishes, no other starts
    assert engine.calls == 1 and threading.active_count() == before


def test_coarser_flow_series_and_summary_only(tmp_path):
    sc = _cubic(record={"flows": "100ms"})
    r = cclab.run(sc, out=tmp_path / "a", plot=False)
    assert r.ir["record"] == {"flows_interval_ns": 100_000_000, "flows_stored": True}
    assert len(r.flows) == 2 * 100 and len(r.link) == 1000
    full = cclab.run(_cubic(), out=tmp_path / "b", plot=False)
    assert r.summary["aggregate"]["goodput_bps"] == pytest.approx(full.summary["aggregate"]["goodput_bps"], rel=1e-9)
    off = cclab.run(_cubic(record={"flows": "off"}), out=tmp_path / "c", plot=False)
    assert len(record.read_run(off.path).flows) == 0 and off.summary["per_flow"][0]["goodput_bps"] > 0
    with pytest.raises(cclab.ScenarioError, match=r"record.flows: '15ms' is not a multiple of sample_interval"):
        resolve(scenario_from_dict(_cubic(record={"flows": "15ms"})))


def test_a_per_flow_interval_that_misses_the_window_ends_is_refused_not_summed_wrong(tmp_path):
    # Before: record.flows = "1s" with the window 1.5–2.5 s summed the samples at 1 and 2 s — the
    # goodput of a flow starting at 1.8 s came out 2.09 Mbit/s where it is 6.57 (helper-found).
    sc = _cubic(duration="4s", measure={"from": "1.5s", "to": "2.5s"}, start_offset="0s",
                flows=[{"cca": "cubic", "rtt": "20ms", "start": "1.8s"}])  # fmt: skip
    with pytest.raises(cclab.ScenarioError, match=r"record.flows: '1s' does not divide both ends of the measure "
                       r"window \(1.5s, 2.5s\).*e.g. \"500ms\""):  # fmt: skip
        resolve(scenario_from_dict({**sc, "record": {"flows": "1s"}}))
    coarse = cclab.run({**sc, "record": {"flows": "500ms"}}, out=tmp_path / "coarse", plot=False)
    fine = cclab.run(sc, out=tmp_path / "fine", plot=False)
    assert coarse.ir["record"]["flows_interval_ns"] == 500_000_000
    assert coarse.summary["per_flow"][0]["goodput_bps"] == pytest.approx(fine.summary["per_flow"][0]["goodput_bps"],
                                                                         rel=1e-6)  # fmt: skip
    assert fine.summary["per_flow"][0]["goodput_bps"] > 5e6
    # "auto" never picks such an interval: with no exact one inside its row budget it says so
    many = _cubic(duration="60s", measure={"from": "10ms"}, flows=[{"cca": "cubic", "rtt": "20ms", "count": 1000}])
    with pytest.raises(cclab.ScenarioError, match=r"record.flows: no per-flow interval of at most 2,000,000 rows "
                       r"\(1000 flows\) divides both ends of the measure window \(10ms, 60s\)"):  # fmt: skip
        resolve(scenario_from_dict(many))


def _as_version_2(v1: Path, out: Path) -> Path:
    """A record of version 2 as cclab wrote them: version 1's files + a manifest of the six."""
    import hashlib
    import shutil

    shutil.copytree(v1, out)
    meta = json.loads((out / "meta.json").read_text())
    (out / "meta.json").write_text(json.dumps({**meta, "record_version": 2}))
    files = {n: {"bytes": (out / n).stat().st_size, "sha256": hashlib.sha256((out / n).read_bytes()).hexdigest()}
             for n in record.FILES_V2}
    (out / "manifest.json").write_text(json.dumps({"format": record.MANIFEST_FORMAT, "record_version": 2,
                                                   "files": files}))
    return out


def test_old_records_are_migrated_on_read(tmp_path):
    v1 = REPO / "tests/fixtures/record-v1/run"  # a record of version 1: no manifest, no histograms
    assert json.loads((v1 / "meta.json").read_text())["record_version"] == 1
    v2 = _as_version_2(v1, tmp_path / "store" / "runs" / "rid2")
    for d in (v1, v2):
        assert record.is_complete(d) and record.verify(d) is None
        run = record.read_run(d)
        assert run.histograms is None and run.meta["summary_migrated_from"] == 1
        assert run.summary["summary_version"] == metrics.SUMMARY_VERSION  # today's definitions, in memory
        assert run.summary["aggregate"]["queue_delay_source"] == "interval means"
        assert run.summary["per_flow"][0]["goodput_bps"] > 0 and len(run.flows) == 1200  # 2 flows × 600 samples
    # a sweep store holding such a record still builds its table, in today's definitions
    from cclab.store import SweepStore

    store = SweepStore(tmp_path / "store")
    store.write_points([{"point": 0, "run_id": "rid2", "params": {}, "trial": 0, "seed": 1, "backend": "sim"}])
    assert store.complete_ids(verify=True) == {"rid2"}
    df = store.build_results(write=False)
    assert df["agg.jain_1s_mean"].iloc[0] > 0 and df["n_effective"].iloc[0] == 1


# ---------------------------------------------------------------- 12.3 periods


def test_no_period_in_one_cubic_flow_under_random_loss(tmp_path):
    sc = {"name": "cubic-loss", "duration": "120s", "measure": {"from": "10s"},
          "link": {"rate": "20Mbps", "buffer": "1bdp", "loss": 0.002}, "flows": [{"cca": "cubic", "rtt": "40ms"}]}
    r = cclab.run(sc, out=tmp_path / "r", plot=False)
    w = r.flows[metrics.in_window(r.flows["time_s"], r.ir)]
    # (below 1 s the 10 ms goodput has the ACK clock's real period of one RTT: not the question here)
    for series, dt in ((w["goodput_bps"].to_numpy(), 0.01), (w["cwnd_bytes"].to_numpy(), 0.01),
                       (w.groupby(np.ceil(w["time_s"] - 1e-9))["goodput_bps"].mean().to_numpy(), 1.0)):
        p = metrics.detect_period(series, dt, min_period=max(1.0, 2 * dt))
        assert not p.significant, p.describe()
        assert math.isnan(p.period_s) and "no significant period" in p.describe()


def test_period_of_the_bbr_cubic_cycles_preset(tmp_path):
    sweep = load_sweep(REPO / "python/cclab/presets/bbr-cubic-cycles.toml")
    r = cclab.run(sweep.base, out=tmp_path / "r", plot=False)
    bbr = r.summary["per_algorithm"]["bbr"]
    assert bbr["share_period_s"] == pytest.approx(20, abs=2), bbr
    assert bbr["share_period_p"] < 0.01 and bbr["share_period_lo_s"] < bbr["share_period_s"] < bbr["share_period_hi_s"]
    w = r.flows[metrics.in_window(r.flows["time_s"], r.ir)]
    share = metrics.share_series(w, bin_s=1.0)["bbr"].to_numpy()
    p = metrics.detect_period(share, 1.0, min_period=2.0)
    assert p.significant and p.period_s == pytest.approx(20, abs=2) and "period" in p.describe()


def test_period_test_holds_its_false_positive_rate_and_finds_a_cycle():
    rng = np.random.default_rng(11)
    hits = 0
    for _ in range(200):  # red noise (AR(1), ρ = 0.7): significant at 1 % in about 1 % of series
        e = rng.standard_normal(240)
        x = np.zeros(240)
        for i in range(1, 240):
            x[i] = 0.7 * x[i - 1] + e[i]
        hits += metrics.detect_period(x, 1.0).significant
    assert hits <= 6  # P(≥ 7 of 200 | p = 1 %) < 0.5 %
    t = np.arange(240.0)
    p = metrics.detect_period(0.5 * np.sin(2 * np.pi * t / 17) + 0.5 * rng.standard_normal(240), 1.0)
    assert p.significant and p.period_s == pytest.approx(17, abs=1) and p.lo_s < p.period_s < p.hi_s
    from scipy import signal  # the periodogram is scipy.signal's

    x = rng.standard_normal(101)
    f, psd = metrics.periodogram(x, 0.5, pad=2)
    f2, psd2 = signal.periodogram(x, fs=2.0, window="hann", nfft=202, detrend=False)
    assert np.allclose(f, f2) and np.allclose(psd, psd2)


def test_a_backend_sampling_every_flow_at_every_sample_is_thinned_to_the_record_interval():
    ir = resolve(scenario_from_dict(_cubic(record={"flows": "100ms"})))
    every = {**ir}
    del every["record"]
    raw = SimBackend().run(every)  # every flow at every 10 ms sample, as the kernel's sampler
    thin = metrics.flows_frame({**raw, "flows": metrics.flows_at_record_interval(raw["flows"], ir)}, ir)
    own = metrics.flows_frame(SimBackend().run(ir), ir)  # the simulator sampling at 100 ms itself
    assert len(thin) == len(own) == 2 * 100
    cols = ["time_s", "flow_id", "goodput_bps", "throughput_bps", "send_rate_bps", "retrans_segs", "cwnd_bytes"]
    pd.testing.assert_frame_equal(thin[cols], own[cols])


def test_a_rate_step_at_a_sample_does_not_give_that_sample_the_new_capacity(tmp_path):
    # Before: the sample (0.9, 1.0] of a 100 → 10 Mbit/s step at 1.0 s was costed at 10 Mbit/s:
    # utilization 9.996 in that row, 1.18 over the window (helper-found).
    sc = {"name": "step", "duration": "2s", "sample_interval": "100ms", "measure": {"from": "0.5s", "to": "1s"},
          "start_offset": 0, "link": {"rate": "100Mbps", "buffer": "100pkts", "schedule": [{"at": "1s", "rate": "10Mbps"}]},
          "flows": [{"cca": "cubic", "rtt": "20ms"}]}  # fmt: skip
    r = cclab.run(sc, out=tmp_path / "r", plot=False)
    link = r.link.set_index("time_s")
    assert link.loc[1.0, "capacity_bps"] == 100e6 and link.loc[1.1, "capacity_bps"] == 10e6
    # a row holds whole packets (one 1500-byte packet is 1.2 % of 100 ms at 10 Mbit/s): at most that over
    assert (r.link["utilization"].dropna() <= 1.0 + 1500 * 8 / (10e6 * 0.1)).all()
    assert 0.9 < r.summary["aggregate"]["utilization"] <= 1.0
    mid = cclab.run({**sc, "link": {**sc["link"], "schedule": [{"at": "1.05s", "rate": "10Mbps"}]}},
                    out=tmp_path / "m", plot=False).link.set_index("time_s")  # fmt: skip
    assert mid.loc[1.1, "capacity_bps"] == pytest.approx(55e6)  # half the interval at each rate


def test_ideal_fct_uses_the_data_path_s_one_way_delay(tmp_path):
    # Before: "+ RTT/2" on a topology whose data path has 0 ms and the ACK path 20 ms gave an
    # ideal of 0.022 s against an FCT of 0.012 s: slowdown 0.545 (helper-found).
    sc = {"name": "fct-asym", "duration": "2s", "start_offset": 0,
          "links": {"fwd": {"from": "l", "to": "r", "rate": "10Mbps", "delay": "0ms", "buffer": "50pkts"},
                    "back": {"from": "r", "to": "l", "rate": "10Mbps", "delay": "20ms", "buffer": "50pkts"}},
          "flows": [{"cca": "cubic", "path": ["fwd"], "ack_path": ["back"], "bytes": "14480B"}]}  # fmt: skip
    r = cclab.run(sc, out=tmp_path / "r", plot=False)
    f = r.summary["per_flow"][0]
    assert metrics.forward_delay_ns(r.ir, r.ir["flows"][0]) == 0
    assert f["ideal_fct_s"] == pytest.approx(10 * 1500 * 8 / 10e6) and f["slowdown"] >= 1 - 1e-9
    one = {"name": "one", "duration": "1s", "link": {"rate": "10Mbps", "delay": "3ms"}, "flows": [{"cca": "cubic", "rtt": "40ms"}]}
    ir = resolve(scenario_from_dict(one))
    assert metrics.forward_delay_ns(ir, ir["flows"][0]) == 20_000_000  # one link: half the RTT


def test_a_finite_flow_completing_in_the_run_s_last_moments_has_ended(tmp_path):
    # Before: completed at 1.9012 s in a 2 s run, before its sender heard the last ACK: end_s null,
    # so active_s 0.2 instead of 0.1012 and its goodput halved (helper-found).
    sc = {"name": "late", "duration": "2s", "start_offset": 0, "link": {"rate": "10Mbps", "buffer": "50pkts"},
          "flows": [{"cca": "cubic", "rtt": "200ms", "start": "1.8s", "bytes": "1448B"}]}  # fmt: skip
    f = cclab.run(sc, out=tmp_path / "r", plot=False).summary["per_flow"][0]
    assert f["end_s"] == pytest.approx(1.8 + f["fct_s"]) and f["active_s"] == pytest.approx(f["fct_s"])
    assert f["goodput_bps"] == pytest.approx(1448 * 8 / f["fct_s"])
