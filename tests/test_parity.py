"""`cclab parity`: the tolerance logic, metric extraction on synthetic records, the matrix, --list, the runner
(with a stand-in kernel backend: rerun of invalid runs, INVALID cases, resume, the lock), and the outputs.

The real end-to-end run on the kernel is tests/kernel/test_parity_kernel.py.
"""

from __future__ import annotations

import copy
import fcntl
import io
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import needs_engine, synthetic_ir, synthetic_raw
from typer.testing import CliRunner

from cclab import api, metrics
from cclab.cli import app
from cclab.parity import checks, matrix
from cclab.parity.checks import evaluate, judge
from cclab.parity.matrix import CASES, Case
from cclab.record import Run

runner = CliRunner()


# ---------------------------------------------------------------- judge: each tolerance, both sides of it


@pytest.mark.parametrize(
    "kind, kernel, inside, outside",
    [
        ("goodput", 100.0, 104.9, 105.1),  # 5 % of 100 Mbit/s
        ("goodput", 100.0, 95.1, 94.9),
        ("goodput", 10.0, 11.9, 12.1),  # below 40 Mbit/s the 2 Mbit/s floor is larger than 5 %
        ("share", 50.0, 54.9, 55.1),  # 5 points
        ("share", 90.0, 85.1, 84.9),
        ("queue_delay_p50", 10.0, 11.9, 12.1),  # 20 %
        ("queue_delay_p50", 1.0, 1.49, 1.51),  # 0.5 ms floor
        ("retrans_rate", 1.0, 1.29, 1.31),  # 30 % of 1 %
        ("retrans_rate", 0.1, 0.19, 0.21),  # 0.1 point floor
        ("startup_exit", 8.5, 9.5, 9.6),  # one round
        ("startup_exit", 8.5, 7.5, 7.4),
        ("time_to_90", 1.0, 1.29, 1.31),  # 30 %
        ("time_to_90", 0.1, 0.129, 0.131),  # no absolute floor
    ],
)
def test_judge_each_tolerance(kind, kernel, inside, outside):
    status, diff, rel, allowed, note = judge(kind, inside, kernel)
    assert status == "pass", (kind, inside, kernel, allowed)
    assert diff == pytest.approx(inside - kernel)
    assert rel == pytest.approx((inside - kernel) / kernel)
    assert judge(kind, outside, kernel)[0] == "fail", (kind, outside, kernel)


def test_judge_reference_is_the_kernel_and_tolerances_are_the_specified_ones():
    # relative tolerances are of the kernel value: 5 % of 100 passes 104.9, but 5 % of 95 does not pass 100
    assert judge("goodput", 104.9, 100.0)[0] == "pass"
    assert judge("goodput", 100.0, 95.0)[0] == "fail"
    t = checks.TOLERANCES
    assert (t["goodput"].rel, t["goodput"].abs) == (0.05, 2.0)
    assert (t["share"].rel, t["share"].abs) == (0.0, 5.0)
    assert (t["queue_delay_p50"].rel, t["queue_delay_p50"].abs) == (0.20, 0.5)
    assert (t["retrans_rate"].rel, t["retrans_rate"].abs) == (0.30, 0.1)
    assert (t["startup_exit"].rel, t["startup_exit"].abs) == (0.0, 1.0)
    assert (t["time_to_90"].rel, t["time_to_90"].abs) == (0.30, 0.0)
    assert all(t[k].reason for k in t)


def test_judge_missing_infinite_and_info():
    assert judge("goodput", math.nan, 10.0)[0] == "fail"
    assert "no value from sim" in judge("goodput", math.nan, 10.0)[4]
    assert "kernel" in judge("goodput", 10.0, math.nan)[4]
    # never reaching 90 %: agreeing is a pass, one side only a failure
    assert judge("time_to_90", math.inf, math.inf)[:2] == ("pass", 0.0)
    status, *_rest, note = judge("time_to_90", math.inf, 2.0)
    assert status == "fail" and note == "sim never reached it"
    # a metric without a tolerance is information, whatever the values
    assert judge("", 1.0, 100.0)[0] == "info"
    assert checks.METRICS["queue_delay_p95"].tolerance is None
    assert checks.METRICS["state_time"].tolerance is None
    assert checks.METRICS["peak_queue"].tolerance is None


# ---------------------------------------------------------------- evaluate on synthetic records


def _run(raw, ir, backend="sim"):
    flows, link = metrics.flows_frame(raw, ir), metrics.link_frame(raw, ir)
    return Run(flows=flows, link=link, summary=metrics.summary(flows, link, ir), meta={"backend": backend, "valid": True}, ir=ir)


def _by_metric(cs):
    return {c.metric: c for c in cs}


SPECS = ("goodput", "share[cubic]", "share[flow1]", "queue_delay_p50", "queue_delay_p95", "retrans_rate",
         "retrans_rate[cubic]")  # fmt: skip


def test_evaluate_identical_records_pass():
    ir = synthetic_ir()
    run = _run(synthetic_raw(), ir)
    cs = _by_metric(evaluate("t", SPECS, [run], [_run(synthetic_raw(), ir, "kernel")]))
    assert set(cs) == {"goodput", "share cubic", "share flow1", "queue delay p50", "queue delay p95", "retrans rate",
                       "retrans rate cubic"}  # fmt: skip
    # hand-computed (tests/test_metrics.py): total goodput 3.25 Mbit/s, CUBIC share 2/3.25, queue p50 10 ms
    assert cs["goodput"].sim == pytest.approx(3.25)
    assert cs["share cubic"].sim == pytest.approx(200 / 3.25)
    assert cs["share flow1"].sim == pytest.approx(125 / 3.25)
    assert cs["queue delay p50"].sim == pytest.approx(10.0)
    assert cs["retrans rate cubic"].sim == pytest.approx(100 * 3 / 400)  # 3 retransmissions of 400 segments
    assert cs["retrans rate"].sim == pytest.approx(100 * 3 / 800)
    assert cs["queue delay p95"].status == "info"
    assert all(c.status in ("pass", "info") and c.diff == 0 for c in cs.values())


def test_evaluate_fails_the_metric_that_differs():
    ir = synthetic_ir()
    sim = _run(synthetic_raw(), ir)
    raw = synthetic_raw()
    f0 = raw["flows"]["flow_id"] == 0
    raw["flows"]["delivered_bytes"] = np.where(f0, raw["flows"]["delivered_bytes"] * 1.5, raw["flows"]["delivered_bytes"])
    cs = _by_metric(evaluate("t", ("goodput", "share[cubic]"), [sim], [_run(raw, ir, "kernel")]))
    # kernel: CUBIC 3 + Reno 1.25 = 4.25 Mbit/s; the 1 Mbit/s difference is inside the 2 Mbit/s floor
    assert cs["goodput"].kernel == pytest.approx(4.25) and cs["goodput"].status == "pass"
    assert cs["goodput"].allowed == pytest.approx(2.0)
    # share: 61.5 % (sim) vs 70.6 % (kernel) -> 9.1 points > 5
    assert cs["share cubic"].kernel == pytest.approx(300 / 4.25)
    assert cs["share cubic"].diff == pytest.approx(200 / 3.25 - 300 / 4.25)
    assert cs["share cubic"].status == "fail"


def test_evaluate_queue_delay_and_retransmissions_fail_outside_tolerance():
    ir = synthetic_ir()
    sim = _run(synthetic_raw(), ir)
    raw = synthetic_raw()
    raw["link"]["sojourn_sum_ns"] = raw["link"]["sojourn_sum_ns"] * 1.3  # every queue delay 30 % longer
    raw["flows"]["retrans_segs"] = raw["flows"]["retrans_segs"] * 2
    cs = _by_metric(evaluate("t", ("queue_delay_p50", "retrans_rate[cubic]"), [sim], [_run(raw, ir, "kernel")]))
    assert cs["queue delay p50"].kernel == pytest.approx(13.0)
    assert cs["queue delay p50"].status == "fail"  # |10 - 13| > 20 % of 13
    assert cs["retrans rate cubic"].kernel == pytest.approx(1.5)
    assert cs["retrans rate cubic"].status == "fail"  # 0.75 vs 1.5 %: > 30 % and > 0.1 point


def test_evaluate_means_over_seeds_and_state_rows_missing_on_one_side_count_zero():
    ir = synthetic_ir(ccas=("bbr", "reno"))

    def raw_with(states):
        r = synthetic_raw()
        r["state_names"] = {"bbr": states, "reno": []}
        return r

    sim = _run(raw_with(["STARTUP", "PROBE_BW"]), ir)  # cc_state alternates 0, 1 -> window samples 3,4,5,6: 0,1,0,1
    kern = _run(raw_with(["probe_bw", "probe_rtt"]), ir, "kernel")
    cs = _by_metric(evaluate("t", ("state_time[bbr]",), [sim], [kern]))
    assert set(cs) == {"time in probe_bw bbr", "time in probe_rtt bbr", "time in startup bbr"}
    assert cs["time in startup bbr"].sim == pytest.approx(50) and cs["time in startup bbr"].kernel == 0
    assert cs["time in probe_rtt bbr"].sim == 0 and cs["time in probe_rtt bbr"].kernel == pytest.approx(50)
    assert all(c.status == "info" for c in cs.values())
    # two seeds: the compared value is the mean of the seeds' values
    raw2 = synthetic_raw()
    raw2["flows"]["delivered_bytes"] = raw2["flows"]["delivered_bytes"] * 2
    cs = _by_metric(evaluate("t", ("goodput",), [sim, sim], [kern, _run(raw2, ir, "kernel")]))
    assert cs["goodput"].kernel == pytest.approx((3.25 + 6.5) / 2)
    assert cs["goodput"].sim == pytest.approx(3.25)
    # each seed's value is kept, in seed order
    assert cs["goodput"].kernel_values == pytest.approx((3.25, 6.5))
    assert cs["goodput"].sim_values == pytest.approx((3.25, 3.25))
    # the simulator may run more seeds than the kernel (Case.sim_seeds): each side is its own mean
    cs = _by_metric(evaluate("t", ("goodput",), [sim, sim, _run(raw2, ir)], [kern]))
    assert cs["goodput"].sim == pytest.approx((3.25 + 3.25 + 6.5) / 3)
    assert cs["goodput"].kernel == pytest.approx(3.25)
    assert cs["goodput"].sim_values == pytest.approx((3.25, 3.25, 6.5)) and cs["goodput"].kernel_values == pytest.approx((3.25,))
    with pytest.raises(ValueError, match="at least one sim and one kernel run"):
        evaluate("t", ("goodput",), [sim], [])


def test_per_seed_spread_in_the_reports(tmp_path):
    """A failing check shows each side's values per seed (the kernel's few seeds one by one, the
    simulator's many as a range) in parity.md, under the terminal table, on the page and in the
    parquet's min/max columns; one seed a side shows none."""
    from cclab.parity import output
    from cclab.parity.checks import Check
    from cclab.parity.run import CaseResult, ParityOutcome

    sim_values = tuple(20.0 + 2 * i for i in range(20))  # 20 … 58, mean 39
    fail = Check(case="t/b", metric="goodput", kind="goodput", unit="Mbit/s", sim=39.0, kernel=24.0, status="fail",
                 diff=15.0, sim_values=sim_values, kernel_values=(31.3, 20.8, 19.9))  # fmt: skip
    ok = Check(case="t/b", metric="queue delay p50", kind="queue_delay_p50", unit="ms", sim=1.0, kernel=1.0,
               status="pass", diff=0.0, sim_values=(1.0,) * 20, kernel_values=(1.0, 1.0, 1.0))  # fmt: skip
    one = Check(case="t/a", metric="goodput", kind="goodput", unit="Mbit/s", sim=5.0, kernel=9.0, status="fail",
                diff=-4.0, sim_values=(5.0,), kernel_values=(9.0,))  # fmt: skip
    assert output.spread(fail) == "per seed: sim 20–58 (20), kernel 31.3, 20.8, 19.9"
    assert output.spread(one) == ""
    never = Check(case="t/c", metric="time to 90 %", kind="time_to_90", unit="s", sim=math.inf, kernel=0.3, status="fail",
                  sim_values=(math.inf, math.inf), kernel_values=(0.3, 0.3))  # fmt: skip
    assert output.spread(never) == "per seed: sim never, never, kernel 0.3, 0.3"
    assert never.as_dict()["sim_values"] == ["inf", "inf"]

    case_a, case_b = _tiny("a"), _tiny("b")
    outcome = ParityOutcome(out_dir=tmp_path, results=[CaseResult(case=case_a, status="fail", checks=[one]),
                                                       CaseResult(case=case_b, status="fail", checks=[fail, ok])])  # fmt: skip
    md = output.markdown(outcome)
    row = next(line for line in md.splitlines() if line.startswith("| `t/b`"))
    assert "**goodput 39 vs 24 Mbit/s** (per seed: sim 20–58 (20), kernel 31.3, 20.8, 19.9)" in row
    assert row.count("per seed") == 1 and "queue delay p50 1 vs 1 ms |" in row  # a passing check: no spread
    assert "per seed" not in next(line for line in md.splitlines() if line.startswith("| `t/a`"))
    assert output.problem_lines(outcome) == ["FAIL t/b, goodput: per seed: sim 20–58 (20), kernel 31.3, 20.8, 19.9"]
    df = output.results_frame(outcome)
    g = df[(df.case == "t/b") & (df.metric == "goodput")].iloc[0]
    assert (g.sim_min, g.sim_max, g.kernel_min, g.kernel_max) == (20.0, 58.0, 19.9, 31.3)
    assert "<td class=l>sim 20–58 (20), kernel 31.3, 20.8, 19.9</td>" in output._checks_html([fail])


def test_unknown_metric_spec():
    with pytest.raises(ValueError, match="unknown parity metric 'goodputt'"):
        checks.parse_spec("goodputt")
    assert checks.parse_spec("share[flow1]") == ("share", "flow1")


# ---------------------------------------------------------------- the matrix


def test_matrix_contents():
    ids = {c.id for c in CASES}
    single = [c for c in CASES if c.family == "single"]
    assert len(single) == 3 * 3 * 3 * 4
    for cca in ("cubic", "bbr", "reno"):
        for rate in (20, 100, 500):
            for rtt in (10, 50, 200):
                for buf in ("0.5bdp", "2bdp", "8bdp"):
                    assert f"single/{cca}-{rate}M-{rtt}ms-{buf}" in ids
                shallow = "100KB" if 0.1 * rate * 1e6 * rtt / 1e3 / 8 > 100e3 else "0.1bdp"
                assert f"single/{cca}-{rate}M-{rtt}ms-{shallow}" in ids
    assert "single/bbr-500M-200ms-100KB" in ids and "single/bbr-20M-10ms-0.1bdp" in ids
    loss = {c.id: c for c in CASES if c.family == "loss"}
    assert len(loss) == 16
    assert loss["loss/bbr-15pct"].seeds == (1, 2, 3) and loss["loss/bbr-20pct"].seeds == (1, 2, 3)
    assert loss["loss/cubic-15pct"].seeds == (1,) and loss["loss/bbr-0.1pct"].scenario["link"]["loss"] == 0.001
    # a case that depends on its seed: the simulator's cheap runs average 20 seeds, the kernel's own among them;
    # a single-seed case runs the same seed on both
    assert loss["loss/bbr-15pct"].sim_seeds == tuple(range(1, matrix.SIM_SEEDS + 1)) == tuple(range(1, 21))
    assert loss["loss/cubic-15pct"].sim_seeds == (1,)
    assert all(set(c.seeds) <= set(c.sim_seeds) for c in CASES)
    assert {"step/bbr-up-10to20M", "step/bbr-down-20to10M", "step/cubic-up-10to20M", "step/cubic-down-20to10M"} <= ids
    assert "startup_exit[flow0]" in next(c for c in CASES if c.id == "startup/bbr-100M-100ms-2bdp").metrics
    assert {"mix/bbr-vs-cubic-0.5bdp", "mix/bbr-vs-cubic-2bdp", "mix/bbr-vs-cubic-8bdp", "rtt/2bbr-10ms-vs-50ms",
            "mix/2bbr-2cubic-1bdp"} <= ids  # fmt: skip
    qdisc = {c.id: c for c in CASES if c.family == "qdisc"}
    assert len(qdisc) == 8 and not any(c.quick for c in qdisc.values())
    for qd in ("codel", "fq_codel"):
        for name in ("1cubic-100M-50ms-8bdp", "bbr-cubic-100M-40ms-4bdp", "4cubic-20M-20ms-8bdp"):
            c = qdisc[f"qdisc/{qd}-{name}"]
            assert c.scenario["link"]["qdisc"] == qd
            assert {"goodput", "queue_delay_p50"} <= set(c.metrics)
        ecn = qdisc[f"qdisc/{qd}-ecn-4cubic-20M-20ms-8bdp"].scenario
        assert ecn["link"]["qdisc"] == {"name": qd, "ecn": True} and ecn["flows"][0]["ecn"] is True
    for c in CASES:
        assert c.why and c.metrics
        for spec in c.metrics:
            checks.parse_spec(spec)
        for seed in c.seeds:
            _sc, _text, ir = api.prepare(c.scenario_for(seed))
            assert ir["seed"] == seed
            assert ir["measure"]["from_ns"] > 0


def test_quick_subset_is_unchanged_full_cases_of_about_ten_minutes():
    quick = matrix.quick_cases()
    assert 8 <= len(quick) <= 20
    assert all(c in CASES for c in quick)
    assert {c.family for c in quick} == {"single", "loss", "step", "startup", "mix", "rtt"}
    assert 5 * 60 <= matrix.estimated_wall_s(quick) <= 12 * 60


def test_list_prints_every_case_and_the_leftouts():
    r = runner.invoke(app, ["parity", "--list"])
    assert r.exit_code == 0, r.output
    for c in CASES:
        assert f"\n{c.id}" in r.output
    assert f"{len(CASES)} case(s)" in r.output
    assert "left out of the matrix" in r.output
    assert "goodput 5 % or 2 Mbit/s" in r.output
    q = runner.invoke(app, ["parity", "--list", "--quick"])
    assert q.exit_code == 0
    assert f"{len(matrix.quick_cases())} case(s)" in q.output
    assert "single/cubic-20M-10ms-0.1bdp\n" not in q.output
    one = runner.invoke(app, ["parity", "--list", "--case", "startup/*"])
    assert "3 case(s)" in one.output and "startup/bbr-100M-100ms-2bdp" in one.output


def _one_line_error(result, *needles):
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for n in needles:
        assert n in lines[0]


def test_case_pattern_that_matches_nothing():
    _one_line_error(runner.invoke(app, ["parity", "--case", "nope*"]), "--case nope*", "no case matches")


def test_kernel_seeds_option():
    """--kernel-seeds N: seeds 1…N on the kernel for every selected case (the simulator then its 20),
    shown by --list; outside 1…MAX_KERNEL_SEEDS a one-line error."""
    from cclab.cli_parity import with_kernel_seeds

    for bad in ("0", "-3", str(matrix.MAX_KERNEL_SEEDS + 1)):
        _one_line_error(runner.invoke(app, ["parity", "--kernel-seeds", bad, "--list"]), f"--kernel-seeds {bad}",
                        f"from 1 to {matrix.MAX_KERNEL_SEEDS}")  # fmt: skip
    single = next(c for c in CASES if c.id == "single/cubic-20M-10ms-0.5bdp")
    assert single.seeds == (1,) and single.sim_seeds == (1,)
    (more,) = with_kernel_seeds([single], 4)
    assert more.seeds == (1, 2, 3, 4) and more.sim_seeds == tuple(range(1, matrix.SIM_SEEDS + 1))
    assert more.id == single.id and more.scenario == single.scenario
    assert with_kernel_seeds([single], None) == [single]
    r = runner.invoke(app, ["parity", "--list", "--case", single.id, "--kernel-seeds", "4"])
    assert r.exit_code == 0, r.output
    assert "kernel seeds 1, 2, 3, 4, simulator seeds 1–20" in r.output and "4 kernel run(s)" in r.output


@needs_engine
def test_kernel_seeds_reach_the_runs_and_the_per_seed_values(stand_in, tmp_path):
    from cclab.cli_parity import with_kernel_seeds
    from cclab.parity.run import run_parity

    _fake, lock = stand_in
    (res,) = run_parity(with_kernel_seeds([_tiny("pass")], 2), tmp_path / "out", lock_path=lock, sim_host=None).results
    assert len(res.kernel_records) == 2 and len(res.sim_records) == matrix.SIM_SEEDS
    g = next(c for c in res.checks if c.kind == "goodput")
    assert len(g.kernel_values) == 2 and len(g.sim_values) == matrix.SIM_SEEDS
    assert g.kernel == pytest.approx(sum(g.kernel_values) / 2)


def test_refuses_without_root(monkeypatch, tmp_path):
    from cclab.kernel import machine

    monkeypatch.setattr(machine, "is_root", lambda: False)
    r = runner.invoke(app, ["parity", "--quick", "--out", str(tmp_path / "p")])
    _one_line_error(r, "needs root")
    assert not (tmp_path / "p").exists()


def test_a_vm_whose_host_takes_its_cpus_is_named_before_the_runs(monkeypatch):
    from cclab.cli_parity import steal_warning
    from cclab.kernel import machine

    monkeypatch.setattr(machine, "cpu_times", lambda: (100_000, 60_000, 1_500))  # 1.5 % stolen since boot
    note = steal_warning()
    assert note is not None and "1.5 % of its CPU time since boot (steal)" in note
    assert "rerun once (--steal-retries N: more runs" in note
    assert "rerun once, then up to 2 more time(s) while the host's steal explains" in steal_warning(2)
    monkeypatch.setattr(machine, "cpu_times", lambda: (100_000, 60_000, 900))  # 0.9 %: nothing said
    assert steal_warning() is None
    monkeypatch.setattr(machine, "cpu_times", lambda: (100_000, 60_000, 0))  # bare metal
    assert steal_warning() is None


# ---------------------------------------------------------------- the runner, with a stand-in kernel


def _tiny(name: str, **link) -> Case:
    sc = {"name": f"parity-t-{name}", "duration": "3s", "seed": 1, "sample_interval": "10ms", "measure": {"from": "1s"},
          "link": {"rate": "10Mbps", "delay": "0ms", "buffer": "1bdp", **link}, "flows": [{"cca": "cubic", "rtt": "20ms"}]}  # fmt: skip
    return Case(id=f"t/{name}", family="t", scenario=sc, metrics=("goodput", "queue_delay_p50", "retrans_rate"), why="test")


class StandInKernel:
    """The simulator posing as the kernel: per scenario name, halve the rate ("fail"), flag every run
    invalid ("invalid"), only the first ("flaky") or the first three ("stolen"). Asserts the kernel
    lock is held during every run."""

    name = "kernel"

    def __init__(self, lock_path):
        self.lock_path = lock_path
        self.calls: dict[str, int] = {}
        self.steal = None  # (scenario name, call number) -> steal fraction, or None: no steal kept

    def run(self, ir):
        from cclab.backends.sim import SimBackend

        fd = os.open(self.lock_path, os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):  # someone (the runner) holds the lock
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        name = ir["name"].removeprefix("parity-t-")
        self.calls[name] = self.calls.get(name, 0) + 1
        ir2 = copy.deepcopy(ir)
        if name == "fail":
            ir2["links"][0]["capacity"]["rate_bps"] //= 2
        raw = SimBackend().run(ir2)
        invalid = name == "invalid" or (name == "flaky" and self.calls[name] == 1) or (name == "stolen" and self.calls[name] <= 3)
        raw["meta"] = {"valid": not invalid, "invalid_reasons": ["machine CPU-saturated during the run (99 % busy)"] if invalid else []}
        if self.steal is not None:  # the VM host's steal time, as the kernel backend keeps it
            fraction = self.steal(name, self.calls[name])
            raw["meta"]["kernel"] = {"steal": {"steal_s": fraction * 60, "steal_fraction": fraction}}
        return raw


@pytest.fixture
def stand_in(monkeypatch, tmp_path):
    from cclab.backends import get_backend as real

    lock = str(tmp_path / "kernel.lock")
    fake = StandInKernel(lock)
    monkeypatch.setattr(api, "get_backend", lambda name: fake if name == "kernel" else real(name))
    return fake, lock


@needs_engine
def test_runner_reruns_invalid_once_reports_invalid_uncompared_and_resumes(stand_in, tmp_path):
    from cclab.cli_parity import finish
    from cclab.parity.output import summary_line
    from cclab.parity.run import run_parity
    from rich.console import Console

    fake, lock = stand_in
    cases = [_tiny("pass"), _tiny("fail"), _tiny("invalid"), _tiny("flaky")]
    out = tmp_path / "out"
    logs: list[str] = []
    outcome = run_parity(cases, out, log=logs.append, lock_path=lock, sim_host=None)  # the stand-in kernel is punctual
    res = {r.case.id: r for r in outcome.results}
    assert res["t/pass"].status == "pass" and all(c.diff == 0 for c in res["t/pass"].checks)
    assert res["t/fail"].status == "fail"
    g = next(c for c in res["t/fail"].checks if c.kind == "goodput")
    assert g.status == "fail" and g.kernel == pytest.approx(g.sim / 2, rel=0.05)
    # invalid twice -> INVALID with the reason, never compared
    assert res["t/invalid"].status == "invalid" and res["t/invalid"].checks == []
    assert "CPU-saturated" in res["t/invalid"].invalid_reasons[0]
    assert [a["valid"] for a in res["t/invalid"].kernel_attempts] == [False, False]
    assert fake.calls["invalid"] == 2
    # invalid once -> rerun once, the valid rerun is compared
    assert [a["valid"] for a in res["t/flaky"].kernel_attempts] == [False, True]
    assert res["t/flaky"].kernel_records[0].endswith("-retry") and res["t/flaky"].status == "pass"
    assert any("rerunning once" in m for m in logs)
    assert outcome.exit_code == 1  # t/fail
    assert outcome.ran == 4 + 6  # 4 sim runs, 6 kernel runs (2 of them reruns)

    # the outputs
    console = Console(record=True, width=200, file=io.StringIO())
    code = finish(outcome, {"case": ["t"]}, time.monotonic(), console)
    assert code == 1
    text = console.export_text()
    for word in ("case", "metric", "sim", "kernel", "difference", "tolerance", "result", "t/fail", "INVALID", "wall time"):
        assert word in text
    # the reason in full on a line of its own under the table (in a table cell it squeezed every column)
    (line,) = [ln for ln in text.splitlines() if ln.startswith("INVALID t/invalid: ")]
    assert line[len("INVALID t/invalid: "):] == res["t/invalid"].invalid_reasons[0]
    doc = json.loads((out / "parity.json").read_text())
    assert doc["counts"] == {"pass": 2, "fail": 1, "invalid": 1, "error": 0}
    assert doc["tolerances"]["goodput"]["text"] == "5 % or 2 Mbit/s"
    inv = next(c for c in doc["cases"] if c["id"] == "t/invalid")
    assert inv["checks"] == [] and inv["invalid_reasons"]
    df = pd.read_parquet(out / "parity.parquet")
    assert set(df["case"]) == {"t/pass", "t/fail", "t/invalid", "t/flaky"}
    assert (df.loc[df.case == "t/fail", "status"] == "fail").any()
    page = (out / "parity.html").read_text()
    assert page.count("data:image/png;base64,") == 1  # the one failing case's overlaid time series
    assert "t/invalid" in page and "CPU-saturated" in page
    md = (out / "parity.md").read_text().splitlines()
    assert md[0] == summary_line(outcome)
    rows = {line.split("|")[1].strip(" `"): line for line in md if line.startswith("| `")}
    assert set(rows) == {"t/pass", "t/fail", "t/invalid", "t/flaky"}
    assert "**FAIL**" in rows["t/fail"] and "**goodput " in rows["t/fail"]  # the failing check in bold
    assert "| pass |" in rows["t/pass"] and "**" not in rows["t/pass"].split("| pass |")[1]
    assert "**INVALID**" in rows["t/invalid"] and "CPU-saturated" in rows["t/invalid"]

    # resume: every record is reused, nothing runs again, same verdicts
    before = dict(fake.calls)
    again = run_parity(cases, out, lock_path=lock, sim_host=None)
    assert again.ran == 0 and fake.calls == before
    assert [r.status for r in again.results] == [r.status for r in outcome.results]
    # only the passing cases: exit code 0
    assert run_parity([_tiny("pass"), _tiny("flaky")], out, lock_path=lock, sim_host=None).exit_code == 0
    # nothing but invalid cases is not a pass
    assert run_parity([_tiny("invalid")], out, lock_path=lock, sim_host=None).exit_code == 1


@needs_engine
def test_the_results_name_the_hosts_steal_time_over_the_kernel_runs(stand_in, tmp_path):
    from cclab.cli_parity import finish
    from cclab.parity.output import steal_text
    from cclab.parity.run import run_parity
    from rich.console import Console

    fake, lock = stand_in
    out = tmp_path / "out"
    # records without kernel.steal (made before it was kept): no steal line
    o = run_parity([_tiny("pass")], out, lock_path=lock, sim_host=None)
    assert o.kernel_steal() is None and steal_text(o) is None
    fake.steal = lambda name, call: {"invalid": 0.05, "flaky": 0.03 if call == 1 else 0.004}.get(name, 0.002)
    o = run_parity([_tiny("quiet"), _tiny("invalid"), _tiny("flaky")], out, lock_path=lock, sim_host=None)
    st = o.kernel_steal()
    # five kernel runs: quiet 0.2 %, invalid 5 % twice, flaky 3 % then 0.4 %
    assert st["runs"] == 5 and st["runs_over"] == 3
    assert st["max_fraction"] == pytest.approx(0.05) and st["mean_fraction"] == pytest.approx((0.002 + 0.1 + 0.034) / 5)
    assert [a["steal_fraction"] for a in o.results[2].kernel_attempts] == [0.03, 0.004]
    text = steal_text(o)
    assert text.startswith("host steal time over 5 kernel run(s): mean 2.72 %, largest 5.0 % of the CPU time; 3 run(s) above 1 %")
    console = Console(record=True, width=200, file=io.StringIO())
    finish(o, {"case": ["t"]}, time.monotonic(), console)
    assert text in console.export_text()
    assert json.loads((out / "parity.json").read_text())["kernel_steal"]["runs_over"] == 3
    assert text in (out / "parity.md").read_text() and "3 run(s) above 1 %" in (out / "parity.html").read_text()


@needs_engine
def test_steal_retries_run_again_only_after_a_rejection_the_host_explains(stand_in, tmp_path):
    """--steal-retries N: after the one rerun, up to N more kernel runs, each only when the run
    before it was rejected with host steal above 1 %; without it parity's policy is unchanged."""
    from cclab.parity.run import run_parity

    fake, lock = stand_in
    fake.steal = lambda name, call: {"stolen": 0.05, "invalid": 0.002}.get(name, 0.0)
    o = run_parity([_tiny("stolen")], tmp_path / "a", lock_path=lock, sim_host=None)  # default: rerun once
    assert o.results[0].status == "invalid" and fake.calls["stolen"] == 2
    fake.calls.clear()
    logs: list[str] = []
    out = tmp_path / "b"
    o = run_parity([_tiny("stolen"), _tiny("invalid")], out, log=logs.append, lock_path=lock, sim_host=None,
                   steal_retries=2)  # fmt: skip
    stolen, invalid = o.results
    # rejected with 5 % steal three times, valid the fourth time: compared, from the last record
    assert [a["valid"] for a in stolen.kernel_attempts] == [False, False, False, True]
    assert stolen.status == "pass" and stolen.kernel_records[0].endswith("-retry3")
    assert any("invalid again with 5.0 % host steal; run 3 of at most 4 (--steal-retries)" in m for m in logs)
    # rejected with 0.2 % steal: the rerun is the last, whatever --steal-retries says
    assert invalid.status == "invalid" and fake.calls["invalid"] == 2
    # resumed: every record reused, the same verdicts
    calls = dict(fake.calls)
    o = run_parity([_tiny("stolen"), _tiny("invalid")], out, lock_path=lock, sim_host=None, steal_retries=2)
    assert fake.calls == calls and [r.status for r in o.results] == ["pass", "invalid"] and o.ran == 0


def test_steal_retries_must_be_a_count():
    r = CliRunner().invoke(app, ["parity", "--quick", "--steal-retries", "-1"])
    assert r.exit_code == 2 and "--steal-retries -1: expected a whole number of extra runs, 0 or more" in r.output


@needs_engine
def test_runner_new_sim_engine_reruns_only_the_sim(stand_in, tmp_path, monkeypatch):
    from cclab.parity import run as prun

    fake, lock = stand_in
    out = tmp_path / "out"
    prun.run_parity([_tiny("pass")], out, lock_path=lock)
    monkeypatch.setattr(prun, "sim_engine_key", lambda: "0.1.0+rebuilt")
    o = prun.run_parity([_tiny("pass")], out, lock_path=lock)
    assert o.ran == 1 and fake.calls["pass"] == 1  # the sim ran again, the kernel record was reused


@needs_engine
def test_runner_gives_the_host_model_to_the_simulator_only(stand_in, tmp_path):
    """By default the simulator's hosts get SIM_HOST — the kernel hosts' jitter and read latency — and
    the kernel's scenario never does; the punctual simulator is a different record (its own hash) in
    the same store, the kernel record is shared."""
    from cclab.parity.matrix import SIM_HOST, SIM_HOST_JITTER, SIM_HOST_READ_DELAY
    from cclab.parity.run import run_parity
    from cclab.record import read_run

    assert SIM_HOST == {"jitter": SIM_HOST_JITTER, "read_delay": SIM_HOST_READ_DELAY}
    fake, lock = stand_in
    seen: list[dict] = []
    real_run = fake.run
    fake.run = lambda ir: (seen.append(ir), real_run(ir))[1]
    out = tmp_path / "out"
    o = run_parity([_tiny("pass")], out, lock_path=lock)
    assert o.sim_host == SIM_HOST
    assert len(seen) == 1 and not set(seen[0].get("host", {})) & {"jitter_ns", "read_delay_ns"}  # the kernel: neither
    sim_ir = json.loads((Path(o.results[0].sim_records[0]) / "resolved.json").read_text())
    table = sim_ir["host"]["jitter_ns"]
    assert 2000 <= table[len(table) // 2] <= 2600  # the median, 2.3 µs
    # the read latency as the measured histogram: 10 µs edges and their cumulative probabilities
    edges, probs = sim_ir["host"]["read_delay_ns"], sim_ir["host"]["read_delay_p"]
    assert edges[:3] == [0, 10_000, 20_000] and len(edges) == len(probs) and probs[-1] == 2**32
    median_bin = next(i for i, p in enumerate(probs) if p >= 2**31)
    assert 20_000 <= edges[median_bin] <= 40_000  # p50 in 20-30 µs (the edge that ends its bin)
    kernel_ir = json.loads((Path(o.results[0].kernel_records[0]) / "resolved.json").read_text())
    assert not set(kernel_ir["host"]) & {"jitter_ns", "read_delay_ns"}
    p = run_parity([_tiny("pass")], out, lock_path=lock, sim_host=None)
    assert p.sim_host is None and len(seen) == 1  # the kernel record was reused
    assert p.results[0].kernel_records == o.results[0].kernel_records
    assert p.results[0].sim_records != o.results[0].sim_records
    assert all(c.diff == 0 for c in p.results[0].checks)  # punctual sim vs the punctual stand-in: identical
    assert any(c.diff != 0 for c in o.results[0].checks)  # the simulator with host timing is another run


def test_the_read_latency_data_describes_itself_and_adds_up():
    """cclab/data/read_latency.json: the counts are the runs' reads, and the text shown with a parity
    run gives its quantiles from them."""
    import json as _json
    from importlib.resources import files

    from cclab.parity.output import describe_host

    doc = _json.loads(files("cclab").joinpath("data", "read_latency.json").read_text(encoding="utf-8"))
    assert sum(doc["counts"]) == sum(r["reads"] for r in doc["runs"]) and doc["bin"] == "10us"
    assert doc["counts"][-1] > 0  # no trailing empty bins
    text = describe_host({"read_delay": {"histogram": {"bin": "10us", "counts": [0, 5, 4, 0, 1]}}})
    assert text == "read_delay histogram of 10 values in 10us bins (p50 10–20us, p99 40–50us, 0 per million ≥ 1 ms)"
    assert describe_host({"jitter": {"median": "2.3us", "p99": "14us"}}) == "jitter median 2.3us, p99 14us"


def test_kernel_key_follows_the_emulators_source_hash_not_the_extension_file():
    """An emulator that reports its source hash is keyed by it alone (a simulator-only rebuild changes the
    extension module's bytes, not the emulator: the kernel records stay valid); one that does not is keyed by
    the hash of the file it runs from."""
    from cclab.parity.run import _kernel_key

    def never() -> str:
        raise AssertionError("the file is not hashed when the emulator reports its sources")

    assert _kernel_key("6.18", "cclab-link 0.1.0 source 97c5f08842570b12", never) == "kernel 6.18 + cclab-link 0.1.0 source 97c5f08842570b12"
    assert _kernel_key("6.18", "cclab-link 0.1.0", lambda: "f" * 16) == "kernel 6.18 + cclab-link 0.1.0 " + "f" * 16
    assert _kernel_key("6.18", "", lambda: "a" * 16) == "kernel 6.18 + cclab-link ? " + "a" * 16


def test_installed_emulator_reports_its_source_hash():
    from cclab.kernel import machine
    from cclab.parity.run import kernel_engine_key

    command = machine.link_command()
    if command is None:
        pytest.skip("no cclab-link emulator in this install")
    out = subprocess.run([*command, "version"], capture_output=True, text=True, timeout=30).stdout.strip()
    assert out.startswith("cclab-link ") and " source " in out, out
    kernel_engine_key.cache_clear()
    assert kernel_engine_key().endswith(out)


# ---------------------------------------------------------------- the lock


def test_lock_inherited_from_flock_does_not_deadlock(tmp_path):
    lock = tmp_path / "k.lock"
    code = ("from cclab.parity.lock import kernel_lock\n"
            f"with kernel_lock({str(lock)!r}):\n    print('inside', flush=True)\n")  # fmt: skip
    r = subprocess.run(["flock", str(lock), sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "inside" in r.stdout, r.stderr


def test_lock_waits_for_another_holder(tmp_path):
    from cclab.parity.lock import kernel_lock

    lock = str(tmp_path / "k.lock")
    code = ("from cclab.parity.lock import kernel_lock\n"
            f"with kernel_lock({lock!r}, on_wait=lambda: print('waiting', flush=True)):\n    print('inside', flush=True)\n")  # fmt: skip
    with kernel_lock(lock):
        p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "waiting"
        time.sleep(0.2)
        assert p.poll() is None  # still waiting while we hold it
    out, _ = p.communicate(timeout=60)
    assert out.strip() == "inside" and p.returncode == 0


def test_the_lazy_console_takes_its_settings():
    """`finish` widens the console to 180 columns when it writes to a file or a pipe; the CLI's
    console is made on first use (`_LazyConsole`), and setting its width used to land on the
    wrapper, leaving the table folded into 80 columns in every log."""
    from rich.table import Table

    from cclab.cli import _LazyConsole

    out = io.StringIO()
    c = _LazyConsole(file=out, highlight=False)
    assert not c.is_terminal and c.width == 80
    c.width = max(c.width, 180)
    t = Table()
    t.add_column("case")
    t.add_column("reason")
    t.add_row("mix/2bbr-2cubic-1bdp", "x" * 120)
    c.print(t)
    assert "mix/2bbr-2cubic-1bdp" in out.getvalue() and "x" * 120 in out.getvalue()
