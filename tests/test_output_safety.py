"""Output safety: no command writes into a run record, a sweep directory holds one sweep, and bad
output options (--out, --jobs, --scheduler) are one ``error:`` line naming the option and the value.

Each test here failed before these checks: ``compare --out A`` wrote into record A, ``run --out
REC/sub`` nested a record in a record (which then could not be overwritten), ``sweep --out REC``
added a sweep into a record, a second sweep replaced the first one's index, ``--jobs 0``/``-3`` were
silently changed, ``--out FILE`` and ``--scheduler notaurl`` ended in tracebacks, and ``compare`` did
not notice different links (it read the IR key ``link``, which version 4 calls ``links``).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "sweep"))
import fake_engine  # noqa: E402
import helpers  # noqa: E402
from helpers import FIXTURES, needs_engine  # noqa: E402

from cclab import record  # noqa: E402
from cclab.cli import app  # noqa: E402

runner = CliRunner()

BASE = {
    "name": "output-safety",
    "duration": "2s",
    "seed": 3,
    "link": {"rate": "10Mbps", "buffer": "1bdp"},
    "flows": [{"cca": "cubic", "rtt": "20ms"}],
}

SCENARIO = """\
name = "out"
duration = "1s"
start_offset = 0
sample_interval = "100ms"
[link]
rate = "10Mbps"
buffer = "1bdp"
[[flows]]
cca = "cubic"
rtt = "20ms"
"""


def one_line_error(result, *needles: str) -> str:
    """:func:`helpers.one_line_error`, and no raw ``[Errno …]`` text in the line."""
    line = helpers.one_line_error(result, *needles)
    assert "Errno" not in line, line
    return line


def tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() if p.is_file() else b"<dir>" for p in sorted(path.rglob("*"))}


@pytest.fixture
def rec(run_record) -> Path:
    return run_record


@pytest.fixture
def fake(monkeypatch):
    fake_engine.install(monkeypatch)


def write_sweep(tmp_path: Path, name: str, axis_values: list[str]) -> Path:
    f = tmp_path / name
    lines = ["trials = 1", "[base]", 'name = "output-safety"', 'duration = "2s"', "seed = 3",
             "[base.link]", 'rate = "10Mbps"', 'buffer = "1bdp"', "[[base.flows]]", 'cca = "cubic"', 'rtt = "20ms"',
             "[axes]", '"link.buffer" = [' + ", ".join(f'"{v}"' for v in axis_values) + "]"]  # fmt: skip
    f.write_text("\n".join(lines) + "\n")
    return f


# ---------------------------------------------------------------- compare


def test_compare_refuses_to_write_into_a_run_record(rec, tmp_path):
    before = tree(rec)
    one_line_error(runner.invoke(app, ["compare", str(rec), str(rec), "--out", str(rec)]),
                   "--out", str(rec), "is a run record", "never writes into a run record")  # fmt: skip
    one_line_error(runner.invoke(app, ["compare", str(rec), str(rec), "--out", str(rec / "cmp")]),
                   "--out", "lies inside the run record")  # fmt: skip
    assert tree(rec) == before and record.written_by_cclab(rec) is None
    ok = runner.invoke(app, ["compare", str(rec), str(rec), "--out", str(tmp_path / "cmp")])
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "cmp" / "compare.json").is_file()


def test_compare_refuses_a_sweep_directory_s_records(rec, tmp_path):
    sweep = tmp_path / "sw"
    (sweep / "runs").mkdir(parents=True)
    (sweep / "points.json").write_text("[]")
    one_line_error(runner.invoke(app, ["compare", str(rec), str(rec), "--out", str(sweep / "runs")]),
                   "--out", "lies under runs/ of the sweep directory")  # fmt: skip
    assert list((sweep / "runs").iterdir()) == []


def test_compare_out_an_existing_file_names_out(rec, tmp_path):
    f = tmp_path / "base.toml"
    f.write_text("keep")
    one_line_error(runner.invoke(app, ["compare", str(rec), str(rec), "--out", str(f)]),
                   "--out", "exists and is not a directory", "expected a new directory")  # fmt: skip
    assert f.read_text() == "keep"


def test_compare_replaces_only_its_own_files(rec, tmp_path):
    # a user's compare.json / compare.png in --out used to be replaced without a word; an empty --out
    # wrote into the working directory
    mine = tmp_path / "userdir"
    mine.mkdir()
    (mine / "compare.json").write_text('{"my": "notes"}')
    (mine / "compare.png").write_text("x")
    one_line_error(runner.invoke(app, ["compare", str(rec), str(rec), "--out", str(mine)]),
                   "--out", "holds compare.json, which is not from cclab compare; not overwritten")  # fmt: skip
    assert (mine / "compare.json").read_text() == '{"my": "notes"}' and (mine / "compare.png").read_text() == "x"
    one_line_error(runner.invoke(app, ["compare", str(rec), str(rec), "--out", ""]), "--out ''", "empty")
    out = tmp_path / "cmp"
    for _ in range(2):  # a comparison replaces the one it wrote before
        ok = runner.invoke(app, ["compare", str(rec), str(rec), "--out", str(out)])
        assert ok.exit_code == 0, ok.output


def test_compare_a_file_is_not_a_run_record_directory(rec, tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("x")
    line = one_line_error(runner.invoke(app, ["compare", str(rec), str(f), "--no-plot"]),
                          str(f), "not a run record directory")  # fmt: skip
    assert "no such" not in line


def _v4(run):
    """The fixture's (version-1) IR in the version-4 form: ``links`` and flows with path, ack_path …"""
    ir = copy.deepcopy(dict(run.ir))
    ir["links"] = [{"name": "link", "from": "left", "to": "right", **ir.pop("link")}]
    ir["ir_version"] = 4
    for f in ir["flows"]:
        f.update(path=["link"], ack_path=[], ack_every=2, sack=True)
    return ir


def test_compare_notes_every_link_difference_and_flow_path_ecn_bytes():
    from cclab.compare import compare_runs

    a, b = record.read_run(FIXTURES / "run-bbr-cubic"), record.read_run(FIXTURES / "run-bbr-cubic")
    a.ir = _v4(a)
    b.ir = _v4(b)
    assert compare_runs(a, b).notes == []
    link = b.ir["links"][0]
    link["capacity"]["rate_bps"] = 50_000_000
    link["delay_ns"] = 5_000_000
    link["qdisc"] = {"kind": "fq_codel", "target_ns": 5_000_000, "interval_ns": 100_000_000}
    b.ir["flows"][1].update(ecn=True, bytes=1_000_000)
    notes = compare_runs(a, b).notes
    assert "link.capacity.rate_bps differs between the two runs (20000000 vs 50000000)" in notes, notes
    assert "link.delay_ns differs between the two runs (0 vs 5000000)" in notes, notes
    assert any(n.startswith("link.qdisc differs between the two runs ({'kind': 'droptail'} vs") for n in notes), notes
    assert "flows differ in ECN (flow 1: False vs True)" in notes, notes
    assert "flows differ in bytes (flow 1: None vs 1000000)" in notes, notes
    # the simulator's host models: jitter, pauses and the read latency, tables and probabilities
    d = record.read_run(FIXTURES / "run-bbr-cubic")
    d.ir = _v4(d)
    d.ir.setdefault("host", {})["read_delay_ns"] = [0, 10_000]
    assert compare_runs(a, d).notes == ["host.read_delay differs between the two runs"]
    e = record.read_run(FIXTURES / "run-bbr-cubic")
    e.ir = copy.deepcopy(d.ir)
    e.ir["host"]["read_delay_p"] = [0, 2**32]
    e.ir["host"]["jitter_ns"] = [0, 5]
    assert compare_runs(d, e).notes == ["host.jitter differs between the two runs", "host.read_delay differs between the two runs"]
    # topologies: the links by name, and each flow's path
    c = record.read_run(FIXTURES / "run-bbr-cubic")
    c.ir = _v4(c)
    c.ir["links"][0]["name"] = "core"
    for f in c.ir["flows"]:
        f["path"] = ["core"]
    notes = compare_runs(a, c).notes
    assert "links differ (['link'] vs ['core'])" in notes, notes
    assert "flows differ in path (flow 0: ['link'] vs ['core']; flow 1: ['link'] vs ['core'])" in notes, notes


def test_compare_gives_differences_of_percentages_in_points():
    # Before: a loss rate of 2.86 % vs 3.21 % showed "+0.354" labelled "%" beside a relative +12.4 %.
    from cclab.compare import compare_runs

    a, b = record.read_run(FIXTURES / "run-bbr-cubic"), record.read_run(FIXTURES / "run-bbr-cubic")
    b.summary = copy.deepcopy(b.summary)
    b.summary["aggregate"]["loss_rate"] = a.summary["aggregate"]["loss_rate"] * 1.5 + 0.01
    agg = compare_runs(a, b).aggregate.set_index("metric")
    loss = agg.loc["loss rate"]
    assert loss["unit"] == "%" and loss["diff_unit"] == "pp"
    assert loss["diff"] == pytest.approx(loss["b"] - loss["a"]) and loss["rel_diff"] == pytest.approx(loss["b"] / loss["a"] - 1)
    assert agg.loc["utilization", "diff_unit"] == "pp" and agg.loc["goodput", "diff_unit"] == "Mbit/s"
    shares = agg[agg.index.str.startswith("share ")]
    assert len(shares) and (shares["diff_unit"] == "pp").all() and shares["rel_diff"].isna().all()


# ---------------------------------------------------------------- run


def test_run_refuses_a_record_inside_a_record(tmp_path, parts):
    nest = tmp_path / "nest"
    record.write_run(nest, **parts)
    with pytest.raises(record.RecordError, match="lies inside the run record"):
        record.write_run(nest / "sub", **parts)
    with pytest.raises(record.RecordError, match="lies inside the run record"):
        record.write_run(nest / "sub" / "deeper", **parts)
    assert not (nest / "sub").exists() and record.written_by_cclab(nest) is None
    record.write_run(nest, overwrite=True, **parts)  # the record can still be replaced


@pytest.fixture
def parts(record_parts):
    return record_parts


@needs_engine
def test_cli_run_refuses_an_out_inside_a_record(tmp_path):
    s = tmp_path / "s.toml"
    s.write_text(SCENARIO)
    nest = tmp_path / "nest"
    assert runner.invoke(app, ["run", str(s), "--out", str(nest), "--no-plot"]).exit_code == 0
    one_line_error(runner.invoke(app, ["run", str(s), "--out", str(nest / "sub"), "--no-plot"]),
                   "lies inside the run record", str(nest))  # fmt: skip
    assert not (nest / "sub").exists()
    again = runner.invoke(app, ["run", str(s), "--out", str(nest), "--no-plot", "--overwrite"])
    assert again.exit_code == 0, again.output


# ---------------------------------------------------------------- sweep --out


def test_sweep_refuses_a_run_record_and_a_directory_of_other_data(fake, rec, tmp_path):
    f = write_sweep(tmp_path, "s.toml", ["1bdp", "2bdp"])
    before = tree(rec)
    one_line_error(runner.invoke(app, ["sweep", str(f), "--out", str(rec), "--no-progress", "--jobs", "1"]),
                   "--out", "is a run record")  # fmt: skip
    one_line_error(runner.invoke(app, ["sweep", str(f), "--out", str(rec / "sw"), "--no-progress", "--jobs", "1"]),
                   "--out", "lies inside the run record")  # fmt: skip
    assert tree(rec) == before
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    one_line_error(runner.invoke(app, ["sweep", str(f), "--out", str(mine), "--no-progress", "--jobs", "1"]),
                   "--out", "is not empty and is not a sweep directory")  # fmt: skip
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.tex"]


def test_sweep_out_an_existing_file_is_one_line(fake, tmp_path):
    f = write_sweep(tmp_path, "s.toml", ["1bdp"])
    target = tmp_path / "base.toml"
    target.write_text("keep")
    for out in (target, target / "sub"):
        one_line_error(runner.invoke(app, ["sweep", str(f), "--out", str(out), "--no-progress", "--jobs", "1"]),
                       "--out", "is not a directory")  # fmt: skip
    assert target.read_text() == "keep"


def test_check_root_accepts_a_new_empty_or_crashed_sweep_directory(tmp_path):
    from cclab.store import SweepDirError, SweepStore

    SweepStore(tmp_path / "new").check_root()
    (tmp_path / "empty").mkdir()
    SweepStore(tmp_path / "empty").check_root()
    crashed = tmp_path / "crashed"  # killed right after taking the lock, before sweep.toml
    (crashed / "runs").mkdir(parents=True)
    (crashed / "sweep.lock").write_text("pid 1")
    SweepStore(crashed).check_root()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x").write_text("x")
    with pytest.raises(SweepDirError, match="not a sweep directory"):
        SweepStore(tmp_path / "other").check_root()


def test_a_different_sweep_into_the_same_directory_is_refused_and_the_same_one_resumes(fake, tmp_path, monkeypatch):
    first = write_sweep(tmp_path, "first.toml", ["1bdp", "2bdp"])
    second = write_sweep(tmp_path, "second.toml", ["4bdp"])
    out = tmp_path / "D"
    r = runner.invoke(app, ["sweep", str(first), "--out", str(out), "--no-progress", "--jobs", "1"])
    assert r.exit_code == 0, r.output
    index = {n: (out / n).read_bytes() for n in ("sweep.toml", "points.json")}
    line = one_line_error(runner.invoke(app, ["sweep", str(second), "--out", str(out), "--no-progress", "--jobs", "1"]),
                          "--out", str(out), "holds a different sweep", "new --out")  # fmt: skip
    assert "second.toml" in line
    assert {n: (out / n).read_bytes() for n in index} == index
    t = runner.invoke(app, ["table", str(out), "--csv", "-m", "agg.goodput_bps"])
    assert t.exit_code == 0 and len(t.output.strip().splitlines()) == 3, t.output
    # the same sweep resumes, also with only its [[figures]] or description changed …
    first.write_text('description = "edited"\n' + first.read_text())
    r = runner.invoke(app, ["sweep", str(first), "--out", str(out), "--no-progress", "--jobs", "1"])
    assert r.exit_code == 0 and "2 already complete, 0 done now" in r.output, r.output
    assert (out / "sweep.toml").read_text() == first.read_text()
    # … and after an engine upgrade (new run ids, same scenarios): rerun in place
    import cclab.store

    monkeypatch.setattr(cclab.store, "engine_version", lambda: "next")
    r = runner.invoke(app, ["sweep", str(first), "--out", str(out), "--no-progress", "--jobs", "1"])
    assert r.exit_code == 0 and "0 already complete, 2 done now" in r.output, r.output


def test_the_python_api_refuses_a_different_sweep(fake, tmp_path):
    from cclab.runner import run_sweep
    from cclab.store import SweepDirError
    from cclab.sweep import sweep_from_dict

    out = tmp_path / "sw"
    assert run_sweep(sweep_from_dict({"base": BASE, "axes": {"link.buffer": ["1bdp"]}}, "."), out, jobs=1,
                     progress=False).ok  # fmt: skip
    first = json.loads((out / "points.json").read_text())
    with pytest.raises(SweepDirError, match="holds a different sweep"):  # 1bdp would drop out of the index
        run_sweep(sweep_from_dict({"base": BASE, "trials": 2, "axes": {"link.buffer": ["2bdp"]}}, "."), out,
                  jobs=1, progress=False)  # fmt: skip
    assert json.loads((out / "points.json").read_text()) == first
    # the same sweep extended (another trial, another axis value first in line): every point run before
    # stays indexed, its record reused
    assert run_sweep(sweep_from_dict({"base": BASE, "trials": 2, "axes": {"link.buffer": ["2bdp", "1bdp"]}}, "."),
                     out, jobs=1, progress=False).ok  # fmt: skip
    now = json.loads((out / "points.json").read_text())
    assert len(now) == 4 and first[0]["run_id"] in {p["run_id"] for p in now}


@needs_engine
def test_a_changed_base_scenario_is_a_different_sweep(tmp_path):
    base = tmp_path / "base.toml"
    base.write_text(SCENARIO)
    f = tmp_path / "s.toml"
    f.write_text('base = "base.toml"\ntrials = 1\n[axes]\n"link.buffer" = ["1bdp", "2bdp"]\n')
    out = tmp_path / "D"
    assert runner.invoke(app, ["sweep", str(f), "--out", str(out), "--no-progress", "--jobs", "1"]).exit_code == 0
    points = (out / "points.json").read_bytes()
    base.write_text(SCENARIO.replace('duration = "1s"', 'duration = "2s"'))
    one_line_error(runner.invoke(app, ["sweep", str(f), "--out", str(out), "--no-progress", "--jobs", "1"]),
                   "holds a different sweep", "base scenario")  # fmt: skip
    assert (out / "points.json").read_bytes() == points


# ---------------------------------------------------------------- --jobs, --scheduler


@pytest.mark.parametrize("jobs", ["0", "-3"])
def test_jobs_below_one_are_refused(fake, tmp_path, jobs):
    f = write_sweep(tmp_path, "s.toml", ["1bdp"])
    one_line_error(runner.invoke(app, ["sweep", str(f), "--out", str(tmp_path / "o"), "--jobs", jobs]),
                   f"--jobs {jobs}", "at least 1")  # fmt: skip
    one_line_error(runner.invoke(app, ["sweep", str(f), "--dry-run", "--jobs", jobs]), f"--jobs {jobs}")
    one_line_error(runner.invoke(app, ["reproduce", "buffer-sweep-bbr-vs-cubic", "--quick", "--jobs", jobs,
                                       "--out", str(tmp_path / "r")]), f"--jobs {jobs}")  # fmt: skip
    assert not (tmp_path / "o").exists() and not (tmp_path / "r").exists()


def test_run_sweep_refuses_jobs_below_one(fake, tmp_path):
    from cclab.runner import run_sweep
    from cclab.sweep import SweepError, sweep_from_dict

    sw = sweep_from_dict({"base": BASE, "axes": {"link.buffer": ["1bdp"]}}, ".")
    for jobs in (0, -3, 1.5, True):
        with pytest.raises(SweepError, match="jobs"):
            run_sweep(sw, tmp_path / "o", jobs=jobs, progress=False)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("address", ["notaurl", "tcp://host", "http://h:8786", "tcp://h:0", "tcp://h:99999"])
def test_a_bad_scheduler_address_is_one_line_before_anything_runs(fake, tmp_path, address):
    f = write_sweep(tmp_path, "s.toml", ["1bdp"])
    one_line_error(runner.invoke(app, ["sweep", str(f), "--out", str(tmp_path / "o"), "--scheduler", address]),
                   "--scheduler", address, "tcp://HOST:PORT")  # fmt: skip
    assert not (tmp_path / "o").exists()


def test_run_sweep_refuses_a_bad_scheduler_address(fake, tmp_path):
    from cclab.runner import check_scheduler, run_sweep
    from cclab.sweep import SweepError, sweep_from_dict

    for ok in ("tcp://127.0.0.1:8786", "tls://10.1.2.3:8786", "tcp://[::1]:8786", "sched.example.org:8786",
               "inproc://192.0.2.2/3973/1"):
        check_scheduler(ok)
    sw = sweep_from_dict({"base": BASE, "axes": {"link.buffer": ["1bdp"]}}, ".")
    with pytest.raises(SweepError, match="--scheduler 'notaurl'"):
        run_sweep(sw, tmp_path / "o", scheduler="notaurl", progress=False)
    assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------- damaged or read-only sweep directories


@pytest.mark.parametrize("content, needle", [
    ("not json{", "points.json: not JSON"),
    ("", "points.json: not JSON"),
    ("null", "not a list of tables with run_id, point, params, trial, seed"),
    ("[1, 2, 3]", "not a list of tables"),
    ('[{"run_id": "x"}]', "not a list of tables"),
])  # fmt: skip
def test_table_on_a_damaged_points_json_is_one_line(fake, tmp_path, content, needle):
    out = tmp_path / "D"
    assert runner.invoke(app, ["sweep", str(write_sweep(tmp_path, "s.toml", ["1bdp"])), "--out", str(out),
                               "--no-progress", "--jobs", "1"]).exit_code == 0  # fmt: skip
    (out / "points.json").write_text(content)
    one_line_error(runner.invoke(app, ["table", str(out)]), needle, "rerun the sweep")


def test_a_damaged_results_table_without_records_is_one_line(tmp_path):
    out = tmp_path / "D"  # a results table shipped without its records (no runs/)
    out.mkdir()
    (out / "points.json").write_text("[]")
    (out / "results.parquet").write_bytes(b"PAR1 not really")
    one_line_error(runner.invoke(app, ["table", str(out)]), "results.parquet: not a readable results table")


def test_table_of_a_sweep_directory_it_cannot_write_still_answers(fake, tmp_path, monkeypatch):
    out = tmp_path / "D"
    assert runner.invoke(app, ["sweep", str(write_sweep(tmp_path, "s.toml", ["1bdp", "2bdp"])), "--out", str(out),
                               "--no-progress", "--jobs", "1"]).exit_code == 0  # fmt: skip
    import cclab.fsutil

    def refuse(path):  # as on a read-only (or immutable) directory: the cache cannot be rewritten
        raise PermissionError(1, "Operation not permitted", str(path))

    monkeypatch.setattr(cclab.fsutil, "atomic_file", refuse)
    r = runner.invoke(app, ["table", str(out), "--csv", "-m", "agg.goodput_bps"])
    assert r.exit_code == 0, r.output
    from cclab.store import read_results

    assert "results.parquet: not updated (Operation not permitted)" in read_results(out).attrs["not_written"]
    assert len([ln for ln in r.output.splitlines() if ln.count(",") >= 2]) == 3  # header + two points


def test_table_refuses_each_metric_pattern_that_matches_nothing(fake, tmp_path):
    out = tmp_path / "D"
    assert runner.invoke(app, ["sweep", str(write_sweep(tmp_path, "s.toml", ["1bdp"])), "--out", str(out),
                               "--no-progress", "--jobs", "1"]).exit_code == 0  # fmt: skip
    line = one_line_error(runner.invoke(app, ["table", str(out), "-m", "agg.goodput_bps", "-m", "nosuch"]),
                          "-m nosuch: no metric matches")  # fmt: skip
    assert "agg.goodput_bps" in line  # among the available ones
    assert runner.invoke(app, ["table", str(out), "-m", "agg.goodput_bps"]).exit_code == 0


def test_the_compare_figure_draws_each_flow_only_while_active_and_in_bins(tmp_path, monkeypatch):
    # Before: a flow stopped at 4 s kept a flat RTT line to the end, one starting late had a cwnd of 0
    # before it, and goodput was raw 10 ms samples (240 Mbit/s on a 30 Mbit/s link).
    import cclab
    from cclab import compare as cmp

    sc = {"name": "cmp-fig", "duration": "6s", "start_offset": "0s", "link": {"rate": "30Mbps", "buffer": "1bdp"},
          "flows": [{"cca": "cubic", "rtt": "20ms", "stop": "2s"}, {"cca": "reno", "rtt": "20ms", "start": "3s"}]}  # fmt: skip
    a = cclab.run(sc, out=tmp_path / "a", plot=False)
    b = cclab.run({**sc, "seed": 2}, out=tmp_path / "b", plot=False)
    drawn = {}
    import matplotlib.axes

    original = matplotlib.axes.Axes.plot

    def spy(self, x, y, *args, **kw):
        drawn.setdefault((self.get_ylabel() or "?", kw.get("label")), []).append((list(x), list(y)))
        return original(self, x, y, *args, **kw)

    monkeypatch.setattr(matplotlib.axes.Axes, "plot", spy)
    cmp.plot_comparison(cmp.compare_runs(record.read_run(a.path), record.read_run(b.path)), tmp_path / "fig")
    assert (tmp_path / "fig.png").stat().st_size > 0
    flow0 = [xy for (_, lab), xys in drawn.items() if lab and lab.startswith("flow 0") for xy in xys]
    flow1 = [xy for (_, lab), xys in drawn.items() if lab and lab.startswith("flow 1") for xy in xys]
    assert flow0 and flow1
    assert all(max(x) <= 2.0 + 0.1 for x, _ in flow0)  # stopped at 2 s: nothing drawn after its last bin
    assert all(min(x) >= 3.0 - 0.1 for x, _ in flow1)  # started at 3 s: nothing before
    _, goodput = flow0[0]  # the first panel: goodput in Mbit/s; bin means stay near the 30 Mbit/s link
    assert max(goodput) <= 40


def test_the_compare_figure_keeps_a_topology_s_links_apart(tmp_path, monkeypatch):
    # Before the binning: a topology's link rows were drawn as one line zigzagging between the links.
    import matplotlib.axes

    import cclab
    from cclab import compare as cmp

    sc = {"name": "two-links", "duration": "3s", "links": {
        "l1": {"from": "a", "to": "b", "rate": "10Mbps", "delay": "5ms", "buffer": "50pkts"},
        "l2": {"from": "b", "to": "c", "rate": "8Mbps", "delay": "5ms", "buffer": "50pkts"}},
        "flows": [{"cca": "cubic", "path": ["l1", "l2"], "rtt": "40ms"}]}  # fmt: skip
    a = cclab.run(sc, out=tmp_path / "a", plot=False)
    b = cclab.run({**sc, "seed": 2}, out=tmp_path / "b", plot=False)
    labels = []
    original = matplotlib.axes.Axes.plot

    def spy(self, *args, **kw):
        labels.append(kw.get("label"))
        return original(self, *args, **kw)

    monkeypatch.setattr(matplotlib.axes.Axes, "plot", spy)
    cmp.plot_comparison(cmp.compare_runs(record.read_run(a.path), record.read_run(b.path)), tmp_path / "fig")
    for link in ("l1", "l2"):
        assert any(lab and lab.startswith(f"{link} ") for lab in labels), labels
