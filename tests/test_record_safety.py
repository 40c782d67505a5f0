"""Nothing is lost: --overwrite deletes only what cclab wrote, temporary files are never a
planted symlink, and a record whose files no longer match its manifest is reported, not read.

Each test here failed on cclab before the manifest (record version 2): --overwrite replaced any
directory, results.parquet and report.html were written through fixed temporary names
(``.results.parquet.tmp``, ``.report.html.tmp``) that followed a symlink, and a truncated
Parquet file or an edited summary.json was read as data (or raised a pyarrow traceback).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from cclab import record
from cclab.cli import app

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "sweep"))
import fake_engine  # noqa: E402
from helpers import one_line_error  # noqa: E402

runner = CliRunner()

SCENARIO = """\
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
    """A stand-in backend: the synthetic raw output of tests/helpers.py (it matches SCENARIO's IR)."""

    name = "replay"

    def __init__(self, make_raw):
        self.make_raw = make_raw

    def run(self, ir):
        return self.make_raw()


@pytest.fixture
def scenario(monkeypatch, tmp_path, make_raw):
    import cclab.api

    monkeypatch.setattr(cclab.api, "get_backend", lambda name: _Replay(make_raw))
    p = tmp_path / "synthetic.toml"
    p.write_text(SCENARIO)
    return p


@pytest.fixture
def parts(record_parts):
    return record_parts


# ---------------------------------------------------------------- --overwrite


def test_overwrite_refuses_a_directory_cclab_did_not_write(scenario, tmp_path):
    precious = tmp_path / "thesis"
    precious.mkdir()
    (precious / "chapter1.tex").write_text("years of work")
    (precious / "data").mkdir()
    line = one_line_error(runner.invoke(app, ["run", str(scenario), "--out", str(precious), "--overwrite"]),
                           "not overwritten", "not a run record cclab wrote")  # fmt: skip
    assert "choose another output directory" in line
    assert (precious / "chapter1.tex").read_text() == "years of work" and (precious / "data").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["synthetic.toml", "thesis"]  # no temporary left


def test_overwrite_refuses_a_record_holding_user_files(scenario, tmp_path):
    out = tmp_path / "run"
    assert runner.invoke(app, ["run", str(scenario), "--out", str(out)]).exit_code == 0
    (out / "my-notes.txt").write_text("keep me")
    one_line_error(runner.invoke(app, ["run", str(scenario), "--out", str(out), "--overwrite"]),
                    "not overwritten", "'my-notes.txt'")  # fmt: skip
    assert (out / "my-notes.txt").read_text() == "keep me" and record.is_complete(out)


def test_overwrite_refuses_a_file_and_a_fake_manifest_with_foreign_files(scenario, tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    one_line_error(runner.invoke(app, ["run", str(scenario), "--out", str(f), "--overwrite"]), "not a directory")
    assert f.read_text() == "x"
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "manifest.json").write_text(json.dumps({"format": "something else", "files": {}}))
    (fake / "meta.json").write_text(json.dumps({"status": "complete", "record_version": 2}))
    one_line_error(runner.invoke(app, ["run", str(scenario), "--out", str(fake), "--overwrite"]), "not overwritten")
    assert (fake / "manifest.json").exists()


def test_overwrite_replaces_a_cclab_record_with_its_figures(scenario, tmp_path):
    out = tmp_path / "run"
    assert runner.invoke(app, ["run", str(scenario), "--out", str(out), "--svg"]).exit_code == 0
    assert (out / "timeseries.svg").exists() and (out / record.MANIFEST).exists()
    result = runner.invoke(app, ["run", str(scenario), "--out", str(out), "--overwrite", "--no-plot"])
    assert result.exit_code == 0, result.output
    assert not (out / "timeseries.svg").exists() and record.verify(out) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "synthetic.toml"]


def test_overwrite_replaces_a_version_1_record(tmp_path, parts, fixtures_dir):
    import shutil

    out = tmp_path / "old"
    shutil.copytree(fixtures_dir / "run-bbr-cubic", out)  # written before manifests
    assert record.verify(out) is None and record.written_by_cclab(out) is None
    record.write_run(out, **parts, overwrite=True)
    assert record.read_run(out).meta["record_version"] == record.RECORD_VERSION


# ---------------------------------------------------------------- planted symlinks


def test_results_table_is_not_written_through_a_planted_symlink(tmp_path, monkeypatch):
    from cclab.runner import run_sweep
    from cclab.store import SweepStore
    from cclab.sweep import sweep_from_dict

    fake_engine.install(monkeypatch)
    base = {"name": "s", "duration": "2s", "link": {"rate": "10Mbps"}, "flows": [{"cca": "cubic", "rtt": "20ms"}]}
    out = tmp_path / "sw"
    run_sweep(sweep_from_dict({"base": base, "axes": {"link.buffer": ["1bdp", "2bdp"]}}, "."), out, jobs=1,
              progress=False)  # fmt: skip
    victim = tmp_path / "victim.txt"
    victim.write_text("do not touch")
    for name in (".results.parquet.tmp", ".report.html.tmp"):  # the fixed names cclab once used
        (out / name).symlink_to(victim)
    SweepStore(out).build_results()
    from cclab.report import write_report

    write_report(out)
    assert victim.read_text() == "do not touch"
    assert len(pd.read_parquet(out / "results.parquet")) == 2 and (out / "report.html").stat().st_size > 1000


def test_record_files_are_created_exclusively(tmp_path, parts, monkeypatch):
    """Every file of a record is created with O_EXCL|O_NOFOLLOW in a fresh mkdtemp directory."""
    import os

    flags = []
    real_open = os.open

    def spy(path, flag, *a, **k):
        if str(path).startswith(str(tmp_path)) and flag & os.O_CREAT:
            flags.append((Path(path).name, flag))
        return real_open(path, flag, *a, **k)

    monkeypatch.setattr(os, "open", spy)
    record.write_run(tmp_path / "run", **parts)
    names = {n for n, _ in flags}
    assert names >= {*record.FILES, record.MANIFEST}
    assert all(f & os.O_EXCL and f & os.O_NOFOLLOW for _, f in flags)


# ---------------------------------------------------------------- manifest: corrupt records


def _truncate(path: Path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


@pytest.mark.parametrize(
    ("damage", "expect"),
    [
        (lambda d: _truncate(d / "flows.parquet"), "flows.parquet has"),
        (lambda d: _truncate(d / "summary.json", 0.9), "summary.json has"),
        (lambda d: (d / "summary.json").write_text((d / "summary.json").read_text().replace("0.", "9.", 1)),
         "summary.json does not match its checksum"),
        (lambda d: (d / "manifest.json").unlink(), "manifest.json is missing"),
        (lambda d: (d / "manifest.json").write_text("{not json"), "manifest.json is missing or unreadable"),
    ],
    ids=["truncated-parquet", "truncated-summary", "edited-summary", "no-manifest", "bad-manifest"],
)
def test_load_reports_a_corrupt_record_in_one_line(tmp_path, parts, damage, expect):
    import cclab

    out = record.write_run(tmp_path / "run", **parts)
    cclab.load(out)
    damage(out)
    with pytest.raises(record.RecordError) as info:
        cclab.load(out)
    message = str(info.value)
    assert "corrupt record" in message and expect in message and "\n" not in message
    assert record.verify(out) is not None


def test_cli_commands_report_a_corrupt_record_without_traceback(tmp_path, parts):
    out = record.write_run(tmp_path / "run", **parts)
    _truncate(out / "link.parquet")
    for args in (["plot", str(out)], ["report", str(out)], ["compare", str(out), str(out)]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert "corrupt record" in result.output and "Traceback" not in result.output, (args, result.output)


def test_sweep_reports_reruns_and_never_counts_a_corrupt_record(tmp_path, monkeypatch):
    from cclab.cli_sweep import run_sweep_command
    from cclab.store import read_results
    from cclab.sweep import sweep_from_dict

    fake_engine.install(monkeypatch)
    base = {"name": "s", "duration": "2s", "link": {"rate": "10Mbps"}, "flows": [{"cca": "cubic", "rtt": "20ms"}]}
    sw = sweep_from_dict({"base": base, "axes": {"link.buffer": ["1bdp", "2bdp", "3bdp"]}}, ".")
    out = tmp_path / "sw"
    assert run_sweep_command(sw, out, 1, None, "sim", progress=False) == 0
    clean = {d.name: (d / "summary.json").read_bytes() for d in (out / "runs").iterdir()}
    a, b, c = sorted(clean)
    _truncate(out / "runs" / a / "flows.parquet")
    summary = json.loads((out / "runs" / b / "summary.json").read_text())
    summary["aggregate"]["goodput_bps"] *= 10  # a "better" result typed in by hand
    (out / "runs" / b / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    _truncate(out / "runs" / c / "summary.json", 0.95)

    df = read_results(out)  # what `cclab table` shows before the rerun: none of the three
    assert df.empty and sorted(df.attrs["corrupt"]) == [a, b, c]
    result = runner.invoke(app, ["table", str(out)])
    assert result.exit_code == 1 and result.output.count("left out") == 3, result.output

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()) as so:
        code = run_sweep_command(sw, out, 1, None, "sim", progress=False)
    assert code == 0
    assert "3 runs: 0 already complete, 3 done now" in so.getvalue()
    assert err.getvalue().count("corrupt record") == 3, err.getvalue()
    assert {d.name: (d / "summary.json").read_bytes() for d in (out / "runs").iterdir()} == clean
    assert sorted(p.name.split("-")[0] for p in (out / "corrupt").iterdir()) == [a, b, c]  # kept, not deleted
    assert len(read_results(out)) == 3
