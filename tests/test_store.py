"""The run store, the local runner and the results table, on a fake engine.

The fake (tests/fixtures/sweep/fake_engine.py) writes real records with
cclab.record, so everything here but the simulator itself is the real code.
The same flow on the real engine is in test_sweep_resume.py.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "sweep"))
import fake_engine  # noqa: E402

from cclab.store import (  # noqa: E402
    POINTS,
    RESULTS,
    SweepStore,
    flatten_summary,
    group_over_trials,
    read_results,
    t_critical_975,
)
from cclab.sweep import sweep_from_dict  # noqa: E402

BASE = {
    "name": "store-test",
    "duration": "2s",
    "seed": 3,
    "link": {"rate": "10Mbps", "buffer": "1bdp"},
    "flows": [{"cca": "cubic", "rtt": "20ms"}],
}


@pytest.fixture
def fake(monkeypatch):
    fake_engine.install(monkeypatch)


def make_sweep(**kw):
    return sweep_from_dict({"base": BASE, "trials": 2, "axes": {"link.buffer": ["1bdp", "2bdp"]}, **kw}, ".")


def test_run_ids_are_content_hashes(fake):
    from cclab.runner import plan

    a = plan(make_sweep())
    b = plan(make_sweep())
    assert [t.run_id for t in a] == [t.run_id for t in b]
    assert len({t.run_id for t in a}) == 4 and all(len(t.run_id) == 20 for t in a)
    assert {t.run_id for t in plan(make_sweep(), backend="kernel")}.isdisjoint({t.run_id for t in a})


def test_sweep_writes_records_results_and_resumes(fake, tmp_path):
    from cclab.runner import run_sweep

    out = tmp_path / "sw"
    first = run_sweep(make_sweep(), out, jobs=1, progress=False)
    assert (first.total_runs, first.skipped, first.done, first.failures) == (4, 0, 4, [])
    runs = sorted(p.name for p in (out / "runs").iterdir())
    assert len(runs) == 4
    df = pd.read_parquet(out / RESULTS)
    assert len(df) == 4
    assert list(df.columns[:6]) == ["run_id", "point", "link.buffer", "trial", "seed", "backend"]
    assert {"agg.goodput_bps", "agg.utilization", "cubic.share", "reno.share_p25", "flow0.goodput_bps"} <= set(df.columns)
    assert sorted(df["seed"]) == [3, 3, 4, 4]
    # rerun: nothing to do
    again = run_sweep(make_sweep(), out, jobs=1, progress=False)
    assert (again.skipped, again.done) == (4, 0)
    # a partial write (left-over temporary dir) and an incomplete record are redone, never counted
    victim = out / "runs" / runs[0]
    (victim / "meta.json").unlink()
    (out / "runs" / f"{runs[1]}.tmp-abcd").mkdir()
    df2 = read_results(out)
    assert len(df2) == 3 and runs[0] not in set(df2["run_id"])
    third = run_sweep(make_sweep(), out, jobs=1, progress=False)
    assert (third.skipped, third.done) == (3, 1)
    assert sorted(p.name for p in (out / "runs").iterdir()) == runs
    assert len(pd.read_parquet(out / RESULTS)) == 4


def test_failed_run_is_recorded_and_sweep_goes_on(fake, tmp_path):
    from cclab.runner import run_sweep

    sw = sweep_from_dict({"base": BASE, "axes": {"link.buffer": ["1bdp", "13pkts", "2bdp"]}}, ".")
    out = run_sweep(sw, tmp_path, jobs=1, progress=False)
    assert out.done == 2 and len(out.failures) == 1
    (f,) = json.loads((tmp_path / "failures.json").read_text())
    assert "fake engine: asked to fail" in f["error"] and f["points"][0]["params"] == {"link.buffer": "13pkts"}
    assert len(pd.read_parquet(tmp_path / RESULTS)) == 2


def test_points_index_maps_duplicate_points_to_one_run(fake, tmp_path):
    from cclab.runner import run_sweep

    # two axis values that give the same scenario: one run, two rows
    sw = sweep_from_dict({"base": BASE, "axes": {"link.buffer": ["1bdp", "1bdp"]}}, ".")
    out = run_sweep(sw, tmp_path, jobs=1, progress=False)
    assert out.total_points == 2 and out.total_runs == 1
    assert len(json.loads((tmp_path / POINTS).read_text())) == 2
    assert len(read_results(tmp_path)) == 2


def test_flatten_summary():
    s = {
        "window": {"from_s": 1.0},
        "aggregate": {"goodput_bps": 5.0, "drops": {"overflow": 1.0}},
        "per_algorithm": {"bbr": {"share": 0.5}},
        "per_flow": [{"flow_id": 3, "goodput_bps": 2.0, "cca": "bbr"}],
    }
    assert flatten_summary(s) == {
        "window.from_s": 1.0,
        "agg.goodput_bps": 5.0,
        "agg.drops.overflow": 1.0,
        "bbr.share": 0.5,
        "flow3.goodput_bps": 2.0,
        "flow3.cca": "bbr",
    }


def test_t_critical_values():
    # published t_{0.975} values
    for df, t in [(1, 12.706), (2, 4.303), (4, 2.776), (10, 2.228), (30, 2.042), (40, 2.021), (60, 2.000), (120, 1.980)]:
        assert t_critical_975(df) == pytest.approx(t, abs=1e-3)
    assert t_critical_975(10**6) == pytest.approx(1.95996, abs=1e-4)


def test_group_over_trials_mean_and_ci():
    df = pd.DataFrame(
        {"run_id": list("abcde"), "point": range(5), "x": ["1", "1", "1", "2", "2"], "trial": [0, 1, 2, 0, 1],
         "seed": [1, 2, 3, 1, 2], "backend": ["sim"] * 5, "m": [1.0, 2.0, 3.0, 10.0, float("nan")]}
    )
    g = group_over_trials(df, ["m"])
    assert list(g["x"]) == ["1", "2"] and list(g["trials"]) == [3, 2]
    assert g["m"].tolist() == [2.0, 10.0]
    # s = 1, n = 3: half-width = t(2) / sqrt(3)
    assert g["m.ci95"][0] == pytest.approx(4.3027 / math.sqrt(3), rel=1e-4)
    assert math.isnan(g["m.ci95"][1])  # one valid sample: no interval
    assert list(g["m.n"]) == [3, 1] and list(g["n_effective"]) == [3, 2] and not g["deterministic"].any()
    single = group_over_trials(df[df.trial == 0], ["m"])
    assert single["m.ci95"].isna().all() and list(single["m.n"]) == [1, 1]


def test_cli_table(fake, tmp_path):
    import typer
    from typer.testing import CliRunner

    from cclab.cli_sweep import register
    from cclab.runner import run_sweep

    run_sweep(make_sweep(), tmp_path, jobs=1, progress=False)
    app = typer.Typer()
    register(app)
    r = CliRunner().invoke(app, ["table", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "link.buffer" in r.output and "agg.goodput_bps" in r.output and "±" in r.output
    r = CliRunner().invoke(app, ["table", str(tmp_path), "--csv", "-m", "cubic.share"])
    assert r.exit_code == 0, r.output
    lines = r.output.strip().splitlines()
    assert lines[0] == ("link.buffer,trials,n_effective,deterministic,cubic.share,cubic.share.lo,cubic.share.hi,"
                        "cubic.share.ci95,cubic.share.n,cubic.share.stat") and len(lines) == 3
    r = CliRunner().invoke(app, ["table", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "not a sweep directory" in r.output


def test_sweep_store_clean_partials(tmp_path):
    st = SweepStore(tmp_path)
    st.init("base = {}\n")
    (st.runs / "abc.tmp-1").mkdir()
    (st.runs / "half").mkdir()
    assert sorted(st.clean_partials()) == ["abc.tmp-1", "half"]
    assert list(st.runs.iterdir()) == []
    assert (tmp_path / "sweep.toml").read_text() == "base = {}\n"


def test_an_axis_over_seed_is_its_own_column_and_groups_its_trials(fake, tmp_path):
    import typer
    from typer.testing import CliRunner

    from cclab.cli_sweep import register
    from cclab.runner import run_sweep

    # seed = [1, 100] × 3 trials: the trials run with seeds 1, 2, 3 and 100, 101, 102 — the axis column
    # keeps the point's seed (it was overwritten by each run's seed: six one-trial "points" in cclab table)
    run_sweep(sweep_from_dict({"base": BASE, "trials": 3, "axes": {"seed": [1, 100]}}, "."), tmp_path, jobs=1,
              progress=False)  # fmt: skip
    df = read_results(tmp_path)
    assert df.attrs["axes"] == ["base_seed"]
    assert list(df["base_seed"]) == [1, 1, 1, 100, 100, 100] and list(df["seed"]) == [1, 2, 3, 100, 101, 102]
    # so does the table Parquet alone (no runs/ beside it: axes are the columns before "trial")
    alone = tmp_path / "alone"
    alone.mkdir()
    (tmp_path / RESULTS).rename(alone / RESULTS)
    assert read_results(alone).attrs["axes"] == ["base_seed"]
    app = typer.Typer()
    register(app)
    r = CliRunner().invoke(app, ["table", str(tmp_path), "--csv", "-m", "agg.goodput_bps"])
    assert r.exit_code == 0, r.output
    lines = r.output.strip().splitlines()
    assert lines[0].startswith("base_seed,trials,") and [x.split(",")[:2] for x in lines[1:]] == [["1", "3"], ["100", "3"]]
