"""Bad input to the Python API and the command line: one clear error, nothing run, nothing left behind.

Cases a fuzz campaign found: a Scenario changed after it was built, dict keys that are not
strings, a figure format checked only after the run, an empty temporary directory left by a
refused run, a check across fields reported without its file, `--dry-run` with an unknown
backend, a long path pushing the reason out of the error line, and a traceback when the
reader of `validate-scenario` goes away.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import cclab
import cclab.api
import cclab.limits
import cclab.scenario
from cclab.errors import ScenarioError
from cclab.scenario import load_scenario

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "cubic-vs-reno.toml"
SMALL = {"name": "small", "duration": "1s", "link": {"rate": "10Mbps"}, "flows": [{"cca": "cubic", "rtt": "10ms"}]}


def _cclab(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cclab", *args], capture_output=True, text=True, timeout=300, **kwargs)


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """``tempfile`` makes its directories under ``tmp_path/t`` (to count what a run leaves there)."""
    where = tmp_path / "t"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    return where


def test_a_scenario_changed_after_it_was_built_is_checked_again():
    sc = load_scenario(EXAMPLE)
    sc.flows.append({"cca": "cubix", "rtt": "1ms"})  # a dict where a flow group belongs: never validated
    with pytest.raises(ScenarioError, match=r"flows\[2\]\.cca: 'cubix' is not a known congestion control"):
        cclab.run(sc, plot=False)
    sc = cclab.scenario.scenario_from_dict({**SMALL, "flows": [{"cca": {"name": "cubic", "beta": 0.75}, "rtt": "10ms"}]})
    sc.flows[0].cca.params["beta"] = 5.0  # a change inside a table's dict: no model sees it
    with pytest.raises(ScenarioError, match=r"flows\[0\]\.cca.*beta.*5"):
        cclab.api.prepare(sc)


def test_a_dict_with_a_key_that_is_not_a_string_is_refused_by_name():
    bad = {**SMALL, "flows": [{"cca": "cubic", "rtt": "10ms", 3: 4}]}
    with pytest.raises(ScenarioError, match=r"flows\[0\]: has the key 3 \(int\); expected string keys"):
        cclab.api.prepare(bad)


def test_figure_formats_are_checked_before_the_run_and_leave_nothing(private_tmp, tmp_path):
    with pytest.raises(ValueError, match=r"formats: 'svgx' is not a figure format; expected some of: png, svg, pdf"):
        cclab.run(SMALL, formats=("svgx",))
    with pytest.raises(ValueError, match="not a figure format"):
        cclab.run(SMALL, out=tmp_path / "r", formats=["png", "jpeg"])
    assert not (tmp_path / "r").exists()  # refused before the run: no record
    assert list(private_tmp.iterdir()) == []  # and no empty cclab-XXXX directory
    r = cclab.run(SMALL, out=tmp_path / "one", formats="svg")  # one name is a one-element list, not 's', 'v', 'g'
    assert [p.name for p in r.figures] == ["timeseries.svg"]


def test_a_refused_api_run_leaves_no_temporary_directory(private_tmp):
    huge = {**SMALL, "link": {"rate": "10Gbps"}, "flows": [{"cca": "cubic", "rtt": "10ms", "count": 10_000}],
            "duration": "20000s"}  # fmt: skip
    assert cclab.limits.estimate(cclab.api.prepare(huge)[2]).over("sim")  # refused by the limits, never run
    with pytest.raises(cclab.ScenarioError, match="limit"):
        cclab.run(huge, plot=False)
    assert list(private_tmp.iterdir()) == []
    r = cclab.run(SMALL, plot=False)  # a run that succeeds keeps its record there
    assert r.path.parent.parent == private_tmp and (r.path / "meta.json").is_file()


def test_a_check_across_fields_names_the_file(tmp_path):
    f = tmp_path / "window.toml"
    f.write_text('name = "w"\nduration = "2s"\nsample_interval = "3s"\n[link]\nrate = "10Mbps"\n'
                 '[[flows]]\ncca = "cubic"\nrtt = "10ms"\n')  # fmt: skip
    want = f"error: {f}: sample_interval: '3s' is longer than the run"
    for args in (("validate-scenario", str(f)), ("run", str(f), "--dry-run")):
        p = _cclab(*args)
        assert p.returncode == 2 and want in " ".join(p.stderr.split()), (args, p.stderr)
    with pytest.raises(ScenarioError) as exc:
        cclab.api.prepare(f)
    assert exc.value.source == str(f)


def test_dry_run_refuses_an_unknown_backend_like_a_real_run():
    for extra in ((), ("--dry-run",)):
        p = _cclab("run", str(EXAMPLE), "--backend", "foo", *extra, "--no-plot")
        assert p.returncode == 2, (extra, p.stdout, p.stderr)
        assert "unknown backend 'foo'; expected one of: sim, kernel" in p.stderr
        assert "nothing was run" not in p.stdout


def test_a_long_path_keeps_the_reason_in_the_error_line(tmp_path):
    p = _cclab("run", str(EXAMPLE), "--out", str(tmp_path / ("a" * 3000) / "r"), "--no-plot")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    line = " ".join(p.stderr.split())
    assert line.endswith("File name too long") and len(line) < 400, line


def test_validate_scenario_whose_reader_went_away_prints_no_traceback():
    r, w = os.pipe()
    os.close(r)  # the reader is gone before cclab writes: the write fails, every time
    try:
        p = subprocess.run([sys.executable, "-m", "cclab", "validate-scenario", str(EXAMPLE)], stdout=w,
                           stderr=subprocess.PIPE, text=True, timeout=120)  # fmt: skip
    finally:
        os.close(w)
    assert "Traceback" not in p.stderr and "BrokenPipe" not in p.stderr, p.stderr
    assert p.returncode == 1  # as the full CLI (click) ends on a closed pipe


def test_a_file_is_not_a_run_record_directory(tmp_path):
    from cclab import record

    f = tmp_path / "notes.txt"
    f.write_text("x")
    with pytest.raises(record.RecordError, match=r"notes\.txt: not a run record directory \(it is a file\)"):
        record.read_run(f)
    with pytest.raises(record.RecordError, match="no such run directory"):
        record.read_run(tmp_path / "missing")


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc (a directory nothing can be created in)")
def test_an_out_where_nothing_can_be_created_names_the_out_not_a_temporary_directory():
    p = _cclab("run", str(EXAMPLE), "--out", "/proc/cclab-no-such-record", "--no-plot")
    line = " ".join(p.stderr.split())
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert line.startswith("error: /proc/cclab-no-such-record: cannot write a record there (") and ".tmp-" not in line


def test_save_plot_checks_every_format_before_writing_and_bin_s_is_a_width(tmp_path):
    r = cclab.run(SMALL, out=tmp_path / "r", plot=False)
    with pytest.raises(ValueError, match="formats: 'jpg' is not a figure format"):
        r.save_plot(tmp_path / "fig", formats=("png", "jpg"))
    assert not list(tmp_path.glob("fig.*"))  # the PNG was not written before the refusal
    with pytest.raises(ValueError, match="formats: empty"):
        r.save_plot(tmp_path / "fig", formats=())
    assert [p.name for p in r.save_plot(tmp_path / "fig", formats="pdf")] == ["fig.pdf"]
    for bad in (0, -1.0, float("nan"), "1s"):
        with pytest.raises(ValueError, match=r"bin_s: .* is not a bin width; expected a number of seconds > 0"):
            r.plot(bin_s=bad)


def test_api_arguments_of_the_wrong_kind_are_named(tmp_path):
    # seed=True ran as seed 1 (a file's seed = true is refused); out=5 and a NUL byte raised pathlib's
    # errors without naming `out`; an unknown time-series option was a raw TypeError
    from cclab.errors import ScenarioError
    from cclab.figures import FigureError

    with pytest.raises(ScenarioError, match=r"^seed: True is not an integer"):
        cclab.run(SMALL, plot=False, seed=True)
    with pytest.raises(TypeError, match=r"^out: 5 is not a path"):
        cclab.run(SMALL, out=5, plot=False)
    with pytest.raises(ValueError, match=r"^out: .* contains a NUL byte"):
        cclab.run(SMALL, out=str(tmp_path / "a\0b"), plot=False)
    r = cclab.run(SMALL, out=tmp_path / "r", plot=False)
    with pytest.raises(FigureError, match=r"unknown parameter 'colour'; allowed: .*bin_s"):
        r.plot("timeseries", colour=1)
