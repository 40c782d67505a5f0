"""The CLI: error paths (one red line, exit 2) and, once the engine has simulate(), real runs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from pathlib import Path

from typer.testing import CliRunner

from cclab import _native
from cclab.cli import app

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"
needs_engine = pytest.mark.skipif(not hasattr(_native, "simulate"), reason="cclab._native has no simulate() yet")

runner = CliRunner()

SCENARIO = """\
name = "cli-test"
duration = "{duration}"
measure = {{ from = "1s" }}
[link]
rate = "{rate}"
buffer = "1bdp"
[[flows]]
cca = "cubic"
rtt = "20ms"
[[flows]]
cca = "reno"
rtt = "40ms"
"""


def _scenario(tmp_path, rate="20Mbps", duration="3s"):
    p = tmp_path / "s.toml"
    p.write_text(SCENARIO.format(rate=rate, duration=duration))
    return p


def _assert_one_line_error(result, *needles):
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: "), lines[0]
    assert "Traceback" not in result.output
    for n in needles:
        assert n in lines[0], lines[0]


def test_missing_file(tmp_path):
    _assert_one_line_error(runner.invoke(app, ["run", str(tmp_path / "nope.toml")]), "nope.toml", "no such")
    _assert_one_line_error(runner.invoke(app, ["validate-scenario", str(tmp_path / "nope.toml")]), "nope.toml")


def test_bad_unit(tmp_path):
    p = _scenario(tmp_path, rate="80Mpbs")
    _assert_one_line_error(runner.invoke(app, ["run", str(p)]), "link.rate", "80Mpbs")
    _assert_one_line_error(runner.invoke(app, ["validate-scenario", str(p)]), "link.rate")


def test_usage_errors_are_one_line(tmp_path):
    _assert_one_line_error(runner.invoke(app, ["run"]), "Missing argument")
    _assert_one_line_error(runner.invoke(app, ["run", "x.toml", "--bogus"]), "--bogus")
    _assert_one_line_error(runner.invoke(app, ["run", "x.toml", "--seed", "abc"]), "--seed")


def test_unknown_backend(tmp_path):
    p = _scenario(tmp_path)
    _assert_one_line_error(runner.invoke(app, ["run", str(p), "--backend", "ns3", "--out", str(tmp_path / "r")]),
                           "unknown backend")  # fmt: skip
    assert not (tmp_path / "r").exists()


def test_an_out_under_a_file_is_one_clear_line(tmp_path):
    (tmp_path / "afile").write_text("precious")
    out = tmp_path / "afile" / "sub"
    _assert_one_line_error(runner.invoke(app, ["run", str(_scenario(tmp_path)), "--out", str(out)]),
                           str(out), "afile is not a directory")
    assert (tmp_path / "afile").read_text() == "precious"


def test_an_out_that_cannot_be_written_is_refused_before_the_run(tmp_path):
    # /proc takes no directories: said in one line before anything runs, not after the run
    result = runner.invoke(app, ["run", str(_scenario(tmp_path, duration="30s")), "--out", "/proc/cclab-test-out"])
    _assert_one_line_error(result, "/proc/cclab-test-out: cannot write a record there")
    assert not Path("/proc/cclab-test-out").exists()


def test_existing_record_is_not_overwritten(tmp_path):
    out = tmp_path / "run"
    shutil.copytree(FIXTURES / "run-bbr-cubic", out)
    before = (out / "summary.json").read_bytes()
    _assert_one_line_error(runner.invoke(app, ["run", str(_scenario(tmp_path)), "--out", str(out)]), "already exists")
    assert (out / "summary.json").read_bytes() == before


def test_validate_scenario_ok(tmp_path):
    result = runner.invoke(app, ["validate-scenario", str(_scenario(tmp_path))])
    assert result.exit_code == 0, result.output
    assert "cli-test" in result.output and "cubic" in result.output and "reno" in result.output
    assert "20 Mbit/s" in result.output and "BDP" in result.output


def test_version():
    result = runner.invoke(app, ["version"])
    assert result.exit_code == 0 and "cclab" in result.output and "engine" in result.output


def test_bench_unknown_case():
    _assert_one_line_error(runner.invoke(app, ["bench", "--only", "nope"]), "unknown bench case")


def test_bench_cases_resolve():
    from cclab import _native, bench

    have = set(_native.algorithms())
    assert {"cubic-100M-25ms", "reno2-cubic2-100M", "cubic-1G-100ms", "cubic100-1G", "cubic100-1G-fq_codel"} <= set(bench.CASES)
    fq = bench.build_ir(bench.CASES["cubic100-1G-fq_codel"], quick=True)
    assert fq["links"][0]["qdisc"]["kind"] == "fq_codel" and len(fq["flows"]) == 100
    assert bench.build_ir(bench.CASES["cubic100-1G"], quick=True)["links"][0]["qdisc"] == {"kind": "droptail"}
    for case in bench.CASES.values():
        if case.algorithms <= have:
            ir = bench.build_ir(case, quick=True)
            assert ir["duration_ns"] == 5_000_000_000
    ir = bench.build_ir(bench.CASES["cubic-100M-25ms"])
    assert ir["duration_ns"] == 60_000_000_000 and ir["links"][0]["buffer"]["bytes"] == 312_500  # 1 BDP


def test_bench_has_the_scale_cases():
    from cclab import bench

    for name, flows, rate in (("cubic100-10G", 100, 10**10), ("cubic1000-1G", 1000, 10**9), ("cubic10k-10G", 10_000, 10**10)):
        ir = bench.build_ir(bench.CASES[name])
        assert len(ir["flows"]) == flows and ir["links"][0]["capacity"]["rate_bps"] == rate
        assert ir["duration_ns"] == 60_000_000_000
        assert max(f["start_ns"] for f in ir["flows"]) < 1_100_000_000  # every flow has started by ~1 s


def test_bench_vs_ns3_without_ns3_says_how_to_get_it(monkeypatch):
    from cclab import ns3bench

    monkeypatch.setattr(ns3bench, "ns3_prefix", lambda: None)
    _assert_one_line_error(runner.invoke(app, ["bench", "--vs-ns3"]), "pip install 'cclab[bench]'", "ns-3.44")


@needs_engine
def test_bench_vs_ns3_runs_both_on_the_same_dumbbell(tmp_path):
    """With the ns3 wheel installed (the bench extra): the dumbbell builds, and both simulators carry the same load."""
    from cclab import ns3bench

    if ns3bench.ns3_prefix() is None or ns3bench._compiler() is None:
        pytest.skip("ns-3 (pip install 'cclab[bench]') or a C++ compiler is missing")
    out = tmp_path / "vs.json"
    result = runner.invoke(app, ["bench", "--vs-ns3", "--quick", "--json", str(out)])
    assert result.exit_code == 0, result.output
    rows = json.loads(out.read_text())["vs_ns3"]
    assert [r["case"] for r in rows] == ["cubic-100M-25ms", "bbr2-cubic2-100M"]
    for r in rows:
        # 5 s at 100 Mbit/s is 41 667 packets of 1500 bytes; both keep the link nearly full
        assert 0.9 * 41_667 <= r["cclab_packets"] <= 41_667 and 0.9 * 41_667 <= r["ns3_packets"] <= 41_667
        assert r["cclab_s"] > 0 and r["ns3_s"] > 0


def test_python_dash_m():
    proc = subprocess.run([sys.executable, "-m", "cclab", "version"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "cclab" in proc.stdout


# --------------------------------------------------------------------------
# with the engine


@needs_engine
def test_run_writes_record_and_figure(tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["run", str(_scenario(tmp_path)), "--out", str(out), "--svg"])
    assert result.exit_code == 0, result.output
    for name in ("scenario.toml", "resolved.json", "meta.json", "flows.parquet", "link.parquet", "summary.json",
                 "timeseries.png", "timeseries.svg"):  # fmt: skip
        assert (out / name).stat().st_size > 0, name
    assert "goodput" in result.output and "Jain" in result.output and str(out) in result.output
    # a second run into the same directory is refused, --overwrite replaces
    _assert_one_line_error(runner.invoke(app, ["run", str(_scenario(tmp_path)), "--out", str(out)]), "already exists")
    result = runner.invoke(app, ["run", str(_scenario(tmp_path)), "--out", str(out), "--overwrite", "--no-plot"])
    assert result.exit_code == 0, result.output


@needs_engine
def test_a_second_run_into_the_default_directory_keeps_the_first(tmp_path, monkeypatch):
    # `cclab run FILE` twice (no --out): the second says why and what to do, the first record stays whole
    monkeypatch.chdir(tmp_path)
    p = _scenario(tmp_path)
    first = runner.invoke(app, ["run", str(p), "--no-plot", "--json"])
    assert first.exit_code == 0, first.output
    (record,) = (tmp_path / "runs").iterdir()
    before = (record / "summary.json").read_bytes()
    again = runner.invoke(app, ["run", str(p), "--no-plot", "--json"])
    _assert_one_line_error(again, str(Path("runs") / record.name), "already run", "--out DIR", "--overwrite")
    assert (record / "summary.json").read_bytes() == before and len(list((tmp_path / "runs").iterdir())) == 1
    replaced = runner.invoke(app, ["run", str(p), "--no-plot", "--overwrite"])
    assert replaced.exit_code == 0, replaced.output
    assert (record / "summary.json").read_bytes() == before  # deterministic: the same record again


@needs_engine
def test_example_cubic_vs_reno(tmp_path):
    example = REPO / "examples" / "cubic-vs-reno.toml"
    if not example.exists():
        pytest.skip("examples/cubic-vs-reno.toml not written yet")
    result = runner.invoke(app, ["run", str(example), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert len(list((tmp_path / "r").iterdir())) == 9  # 7 record files + manifest.json + timeseries.png


@needs_engine
def test_api_run_load_and_determinism(tmp_path):
    import cclab.api as api

    a = api.run(_scenario(tmp_path), out=tmp_path / "a", plot=False)
    b = api.load(api.run_to_dir(_scenario(tmp_path), tmp_path / "b"))
    assert a.summary == b.summary  # same IR + seed -> same results
    agg = a.summary["aggregate"]
    assert 0 < agg["utilization"] <= 1
    assert a.meta["backend"] == "sim" and a.meta["status"] == "complete"
    assert len(a.flows) == 2 * 300 and len(a.link) == 300  # 3 s at 10 ms, 2 flows
    c = api.run(_scenario(tmp_path), out=tmp_path / "c", plot=False, seed=2)
    assert c.meta["seed"] == 2


@needs_engine
def test_bench_quick_json(tmp_path):
    out = tmp_path / "bench.json"
    result = runner.invoke(app, ["bench", "--quick", "--only", "cubic-100M-25ms", "--json", str(out)])
    assert result.exit_code == 0, result.output
    r = json.loads(out.read_text())["results"][0]
    assert r["case"] == "cubic-100M-25ms" and r["packets"] > 0 and r["peak_rss_mb"] > 0


# --------------------------------------------------------------------------
# the run pipeline with a stand-in backend (synthetic raw output; tests only)

SYNTH_SCENARIO = """\
name = "synthetic"
duration = "6s"
sample_interval = "1s"
measure = { from = "2s" }
[link]
rate = "4Mbps"
buffer = "15000B"
[[flows]]
cca = "cubic"
rtt = "20ms"
[[flows]]
cca = "reno"
rtt = "40ms"
"""


class _Replay:
    """Hands back the conftest's synthetic raw output — it matches SYNTH_SCENARIO's IR (2 flows, 6 x 1 s)."""

    name = "replay"

    def __init__(self, make_raw):
        self.make_raw = make_raw

    def run(self, ir):
        assert [f["id"] for f in ir["flows"]] == [0, 1] and ir["sample_interval_ns"] == 1_000_000_000
        return {**self.make_raw(), "meta": {"valid": False, "invalid_reasons": ["stand-in backend"]}}


@pytest.fixture
def replay(monkeypatch, tmp_path, make_raw):
    import cclab.api

    monkeypatch.setattr(cclab.api, "get_backend", lambda name: _Replay(make_raw))
    p = tmp_path / "synthetic.toml"
    p.write_text(SYNTH_SCENARIO)
    return p


def test_cli_run_pipeline_with_stand_in_backend(replay, tmp_path):
    out = tmp_path / "rec"
    result = runner.invoke(app, ["run", str(replay), "--out", str(out), "--svg"])
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(["scenario.toml", "resolved.json", "meta.json", "flows.parquet", "link.parquet",
                            "histograms.parquet", "summary.json", "manifest.json", "timeseries.png",
                            "timeseries.svg"])  # fmt: skip
    assert (out / "scenario.toml").read_text() == SYNTH_SCENARIO  # as written
    meta = json.loads((out / "meta.json").read_text())
    assert meta["valid"] is False and meta["invalid_reasons"] == ["stand-in backend"]
    for key in ("backend", "cclab_version", "engine_version", "seed", "host", "started_at", "wall_time_s", "ir_hash"):
        assert key in meta
    text = " ".join(result.output.split())
    assert "marked invalid" in text and "Jain's index" in text and "0.949" in text  # 3.25²/(2·5.5625)
    assert "61.5 % (IQR 18.8 pp)" in text  # cubic share 2/3.25, IQR 0.1875


def test_api_run_default_dir_and_repr(replay, tmp_path, monkeypatch):
    """cclab.run() without `out` writes into a new temporary directory, never into the working directory."""
    import tempfile

    import cclab.api as api

    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    run = api.run(str(replay), plot=False, seed=5)
    assert run.path.parent.name.startswith("cclab-") and run.path.name.startswith("synthetic-")
    assert run.path.is_relative_to(tempfile.gettempdir()) and list(work.iterdir()) == []
    assert run.meta["seed"] == 5 and "seed = 5" in run.scenario_toml
    assert run.figures == []
    assert "share" in repr(run) and "synthetic" in repr(run)
    again = api.load(run.path)
    assert again.summary == run.summary
    assert api.run(str(replay), plot=False, seed=5).path != run.path  # each call its own directory
    with pytest.raises(FileExistsError):
        api.run(str(replay), plot=False, seed=5, out=run.path)
    assert api.run_to_dir(str(replay), tmp_path / "x") == tmp_path / "x"


def test_cli_run_default_dir_is_runs(replay, tmp_path, monkeypatch):
    """The command (unlike the API) keeps its documented default, runs/<name>-<IR hash>."""
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["run", str(replay), "--no-plot"])
    assert result.exit_code == 0, result.output
    (record_dir,) = (tmp_path / "runs").iterdir()
    assert record_dir.name.startswith("synthetic-") and (record_dir / "summary.json").exists()


def test_cli_run_json_prints_only_the_summary(replay, tmp_path):
    out = tmp_path / "rec"
    result = CliRunner().invoke(app, ["run", str(replay), "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)  # stdout holds the JSON and nothing else
    assert summary == json.loads((out / "summary.json").read_text())
    assert "record:" in result.stderr and str(out) in result.stderr
    assert (out / "timeseries.png").exists()  # the figure is still drawn, its path on stderr only


def test_cli_dry_run_runs_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = _scenario(tmp_path)
    result = CliRunner().invoke(app, ["run", str(p), "--dry-run"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "cli-test" in text and "estimate:" in text and "events" in text and "nothing was run" in text
    assert "cubic" in text and "reno" in text and "20 Mbit/s" in text  # the resolved scenario
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]  # nothing written
    result = CliRunner().invoke(app, ["run", str(p), "--dry-run", "--json"])
    doc = json.loads(result.stdout)
    assert doc["ir"]["name"] == "cli-test" and doc["ir"]["flows"][1]["cca"] == "reno"
    assert doc["estimate"]["events"] > 0 and doc["estimate"]["wall_s"] > 0 and doc["over_limits"] == []


def test_compare_writes_into_its_own_directory(tmp_path, monkeypatch):
    """`cclab compare A B` writes compare/<A>-vs-<B>/ in the working directory, never into run A."""
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(FIXTURES / "run-bbr-cubic", a)
    shutil.copytree(FIXTURES / "run-bbr-cubic", b)
    before = sorted(p.name for p in a.iterdir())
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    result = runner.invoke(app, ["compare", str(a), str(b)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in a.iterdir()) == before
    out = work / "compare" / "a-vs-b"
    assert (out / "compare.json").exists() and (out / "compare.png").exists()
    explicit = runner.invoke(app, ["compare", str(a), str(b), "--out", str(tmp_path / "c")])
    assert explicit.exit_code == 0 and (tmp_path / "c" / "compare.json").exists()


def test_validate_scenario_shows_what_the_file_resolves_to(tmp_path):
    # the step marker's k in the spelling used, a policer, a loss model's parameters and the host models
    f = tmp_path / "h.toml"
    f.write_text('name = "h"\nduration = "5s"\n[host]\njitter = { median = "2.3us", p99 = "14us" }\n'
                 'read_delay = { histogram = { bin = "10us", counts = [0, 5, 50, 20, 5, 1] } }\n'
                 '[link]\nrate = "10Mbps"\nbuffer = "100KB"\n'
                 'loss = { model = "gilbert_elliott", p = 0.01, r = 0.3 }\n'
                 'policer = { rate = "5Mbps", burst = "30KB" }\nqdisc = { name = "step", k = "20pkts" }\n'
                 '[[flows]]\ncca = "dctcp"\nrtt = "20ms"\necn = true\n')  # fmt: skip
    result = runner.invoke(app, ["validate-scenario", str(f)])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "qdisc step (k 20 pkts, ecn)" in out and "None" not in out
    assert "policer 5 Mbit/s burst 30000 B" in out
    assert "loss gilbert_elliott (p 0.01, r 0.3, h 0, k 1)" in out
    # the read-delay histogram's median: 5 reads in [10, 20) µs, 50 in [20, 30) → 20 + 35.5/50·10 = 27.1 µs
    assert "hosts: jitter p50 2.3 µs, p99 14.1 µs; read delay p50 27.1 µs, p99 51.9 µs" in out
