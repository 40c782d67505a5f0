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
    assert "20 Mbps" in result.output and "BDP" in result.output


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
def test_example_cubic_vs_reno(tmp_path):
    example = REPO / "examples" / "cubic-vs-reno.toml"
    if not example.exists():
        pytest.skip("examples/cubic-vs-reno.toml not written yet")
    result = runner.invoke(app, ["run", str(example), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert len(list((tmp_path / "r").iterdir())) == 8  # 6 record files + manifest.json + timeseries.png


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
                            "summary.json", "manifest.json", "timeseries.png", "timeseries.svg"])  # fmt: skip
    assert (out / "scenario.toml").read_text() == SYNTH_SCENARIO  # as written
    meta = json.loads((out / "meta.json").read_text())
    assert meta["valid"] is False and meta["invalid_reasons"] == ["stand-in backend"]
    for key in ("backend", "cclab_version", "engine_version", "seed", "host", "started_at", "wall_time_s", "ir_hash"):
        assert key in meta
    text = " ".join(result.output.split())
    assert "marked invalid" in text and "Jain's index" in text and "0.949" in text  # 3.25²/(2·5.5625)
    assert "61.5 % (IQR 18.8 pp)" in text  # cubic share 2/3.25, IQR 0.1875


def test_api_run_default_dir_and_repr(replay, tmp_path, monkeypatch):
    import cclab.api as api

    monkeypatch.chdir(tmp_path)
    run = api.run(str(replay), plot=False, seed=5)
    assert run.path.parent.name == "runs" and run.path.name.startswith("synthetic-")
    assert run.meta["seed"] == 5 and "seed = 5" in run.scenario_toml
    assert run.figures == []
    assert "share" in repr(run) and "synthetic" in repr(run)
    again = api.load(run.path)
    assert again.summary == run.summary
    with pytest.raises(FileExistsError):
        api.run(str(replay), plot=False, seed=5)
    assert api.run_to_dir(str(replay), tmp_path / "x") == tmp_path / "x"
