"""`cclab bench --json` and `cclab parity --out` / `--case`: checked before anything runs, nothing
written into a run record or over a file cclab did not write (found by a fuzz campaign: bench wrote
over a record's summary.json and exited 0; parity had no check of --out at all)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from helpers import one_line_error

from cclab import bench, record
from cclab.cli import app
from cclab.parity.matrix import CASES
from cclab.parity.run import run_parity
from cclab.store import SweepDirError

runner = CliRunner()


def test_bench_json_target_is_checked_before_any_case_runs(run_record, tmp_path, monkeypatch):
    ran = []
    monkeypatch.setattr(bench, "run_case", lambda *a, **k: ran.append(a) or {})
    before = (run_record / "summary.json").read_bytes()
    into = str(run_record / "summary.json")
    one_line_error(runner.invoke(app, ["bench", "--quick", "--only", "cubic-100M-25ms", "--json", into]), "--json",
                   "lies inside the run record")  # fmt: skip
    other = tmp_path / "notes.json"
    other.write_text('{"mine": 1}')
    one_line_error(runner.invoke(app, ["bench", "--quick", "--json", str(other)]),
                   "exists and is not a cclab bench JSON")  # fmt: skip
    one_line_error(runner.invoke(app, ["bench", "--quick", "--json", str(tmp_path)]), "is a directory")
    one_line_error(runner.invoke(app, ["bench", "--quick", "--json", str(other / "x.json")]), "is not a directory")
    assert ran == [] and (run_record / "summary.json").read_bytes() == before and other.read_text() == '{"mine": 1}'
    assert record.verify(run_record) is None


def test_bench_json_of_an_earlier_bench_is_replaced(tmp_path):
    earlier = tmp_path / "b.json"
    earlier.write_text(json.dumps({"quick": True, "reference": "…", "results": []}))
    bench.check_json_target(earlier)  # no error: it is ours
    bench.check_json_target(tmp_path / "new.json")


def test_bench_only_is_not_silently_ignored_by_vs_ns3():
    one_line_error(runner.invoke(app, ["bench", "--vs-ns3", "--only", "zzz"]), "--only zzz", "not used by --vs-ns3")


def test_parity_out_is_checked_before_the_preflight(run_record, tmp_path):
    before = {p.name for p in run_record.iterdir()}
    one_line_error(runner.invoke(app, ["parity", "--case", CASES[0].id, "--out", str(run_record)]), "--out",
                   "is a run record")  # fmt: skip
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "notes.txt").write_text("mine")
    one_line_error(runner.invoke(app, ["parity", "--case", CASES[0].id, "--out", str(tmp_path / "plain")]),
              "is not empty and is not a sweep directory")  # fmt: skip
    assert {p.name for p in run_record.iterdir()} == before and record.verify(run_record) is None
    with pytest.raises(SweepDirError, match="is a run record"):  # the Python API too, before anything is created
        run_parity([], run_record)
    assert {p.name for p in run_record.iterdir()} == before


def test_parity_case_patterns_that_match_nothing_or_everything_are_refused():
    ok = CASES[0].id
    one_line_error(runner.invoke(app, ["parity", "--list", "--case", ok, "--case", "zzzzzz"]), "--case zzzzzz",
              "no case matches")  # fmt: skip
    one_line_error(runner.invoke(app, ["parity", "--list", "--case", ""]), "empty pattern would match every case")
    r = runner.invoke(app, ["parity", "--list", "--case", ok])
    assert r.exit_code == 0 and ok in r.output
