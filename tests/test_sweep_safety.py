"""A sweep directory loses nothing: only cclab's own debris is removed, a second sweep in the
same directory is refused, and Ctrl-C stops a parallel sweep at once, leaving only complete
records that a rerun completes exactly as a clean run would (docs/sweeps.md).

Before these were fixed, a sweep deleted everything under runs/ that was not a complete record
(a ``.git`` included), two sweeps in one directory ran side by side (each deleting the other's
temporary directories), and Ctrl-C on ``--jobs 2`` left the workers going through the whole
queue while the sweep process waited for them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import needs_engine
from typer.testing import CliRunner

from cclab.record import is_complete

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "sweep"))
import fake_engine  # noqa: E402

BASE = {"name": "s", "duration": "2s", "link": {"rate": "10Mbps"}, "flows": [{"cca": "cubic", "rtt": "20ms"}]}

# 12 runs of 90 s at 1 Gbps: ~1 s each on one core, so a --jobs 2 sweep takes several seconds.
SWEEP = textwrap.dedent(
    """
    trials = 2
    [base]
    name = "interrupt"
    duration = "90s"
    sample_interval = "100ms"
    [base.link]
    rate = "1Gbps"
    buffer = "1bdp"
    [[base.flows]]
    cca = "cubic"
    rtt = "30ms"
    [[base.flows]]
    cca = "reno"
    rtt = "30ms"
    [axes]
    "link.buffer" = ["0.5bdp", "1bdp", "1.5bdp", "2bdp", "3bdp", "4bdp"]
    """
)
N_RUNS = 12


def sweep_cmd(sweep_file: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "cclab", "sweep", str(sweep_file), "--out", str(out), "--jobs", "2", "--no-progress"]


def complete(out: Path) -> int:
    runs = out / "runs"
    return sum(1 for d in runs.iterdir() if is_complete(d)) if runs.is_dir() else 0


def flows_bytes(out: Path) -> dict[str, bytes]:
    return {d.name: (d / "flows.parquet").read_bytes() for d in (out / "runs").iterdir()}


def test_sweep_leaves_foreign_entries_under_runs_alone(tmp_path, monkeypatch):
    from cclab.runner import run_sweep
    from cclab.sweep import sweep_from_dict

    fake_engine.install(monkeypatch)
    out = tmp_path / "sw"
    runs = out / "runs"
    (runs / ".git" / "objects").mkdir(parents=True)
    (runs / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (runs / "notes").mkdir()
    (runs / "notes" / "todo.txt").write_text("ask about 4bdp")
    (runs / "README").write_text("my runs")
    (runs / "0123456789abcdef0123.tmp-zzzzzzzz").mkdir()  # looks like cclab's, but holds a user's file
    (runs / "0123456789abcdef0123.tmp-zzzzzzzz" / "draft.md").write_text("draft")
    (runs / "abcdefabcdefabcdefab.tmp-a1b2c3d4").mkdir()  # cclab's: a crash mid-write
    (runs / "abcdefabcdefabcdefab.tmp-a1b2c3d4" / "scenario.toml").write_text("# half")
    outcome = run_sweep(sweep_from_dict({"base": BASE, "axes": {"link.buffer": ["1bdp", "2bdp"]}}, "."), out, jobs=1,
                        progress=False)  # fmt: skip
    assert (runs / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n" and (runs / ".git" / "objects").is_dir()
    assert (runs / "notes" / "todo.txt").read_text() == "ask about 4bdp"
    assert (runs / "README").read_text() == "my runs"
    assert (runs / "0123456789abcdef0123.tmp-zzzzzzzz" / "draft.md").read_text() == "draft"
    assert not (runs / "abcdefabcdefabcdefab.tmp-a1b2c3d4").exists()
    assert outcome.done == 2 and outcome.removed == ["abcdefabcdefabcdefab.tmp-a1b2c3d4"]


@pytest.mark.parametrize("kind", ["file", "symlink"])
def test_a_file_where_a_run_record_goes_is_left_alone_and_the_failure_says_what_to_do(tmp_path, monkeypatch, kind):
    from cclab.runner import plan, run_sweep
    from cclab.sweep import sweep_from_dict

    fake_engine.install(monkeypatch)
    sw = sweep_from_dict({"base": BASE, "axes": {"link.buffer": ["1bdp", "2bdp"]}}, ".")
    out = tmp_path / "sw"
    (out / "runs").mkdir(parents=True)
    rid = plan(sw)[0].run_id
    if kind == "file":
        (out / "runs" / rid).write_text("my note")
    else:
        (tmp_path / "elsewhere").mkdir()
        (out / "runs" / rid).symlink_to(tmp_path / "elsewhere")
    outcome = run_sweep(sw, out, jobs=1, progress=False)
    assert outcome.done == 1 and [f["run_id"] for f in outcome.failures] == [rid]
    msg = outcome.failures[0]["error"]
    assert "is in the way (left alone); move it away and rerun the sweep" in msg and "choose another" not in msg
    assert (out / "runs" / rid).is_symlink() if kind == "symlink" else (out / "runs" / rid).read_text() == "my note"


def test_a_second_sweep_in_the_same_directory_is_refused(tmp_path, monkeypatch):
    """The first sweep is a real process; the second (in this process) must refuse, not run beside it."""
    from cclab.cli import app

    fake_engine.install(monkeypatch)  # the second sweep must not get as far as running anything
    f = tmp_path / "sweep.toml"
    f.write_text(SWEEP)
    out = tmp_path / "sw"
    first = subprocess.Popen(sweep_cmd(f, out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (out / "runs").is_dir() and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.02)
        assert first.poll() is None, "the first sweep ended before the test could start the second"
        result = CliRunner().invoke(app, ["sweep", str(f), "--out", str(out), "--no-progress"])
        assert first.poll() is None, "the first sweep ended while the second was refused: inconclusive"
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "another cclab sweep is running in this directory" in lines[0] and f"pid {first.pid}" in lines[0]


@needs_engine
@pytest.mark.timeout(300)
def test_ctrl_c_stops_a_parallel_sweep_and_resume_equals_a_clean_run(tmp_path):
    f = tmp_path / "sweep.toml"
    f.write_text(SWEEP)
    clean, stopped = tmp_path / "clean", tmp_path / "stopped"
    subprocess.run(sweep_cmd(f, clean), check=True, capture_output=True, timeout=240)
    expected = flows_bytes(clean)
    assert len(expected) == N_RUNS

    # Ctrl-C in a terminal sends SIGINT to the whole foreground process group: sweep and workers.
    # SIG_DFL before exec, as in a terminal: a runner started as a background job of a non-interactive shell
    # inherits SIGINT ignored, and Python would then never raise KeyboardInterrupt.
    proc = subprocess.Popen(sweep_cmd(f, stopped), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    deadline = time.monotonic() + 120
    while complete(stopped) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    at_sigint = complete(stopped)
    assert proc.poll() is None and at_sigint < N_RUNS - 4, f"too late to interrupt ({at_sigint} complete)"
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    try:
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    stop_s = time.monotonic() - t0
    after = complete(stopped)
    assert stop_s < 5, f"the sweep took {stop_s:.1f} s to stop after Ctrl-C"
    assert after <= at_sigint + 2, f"{after - at_sigint} runs completed after Ctrl-C (at most the 2 in flight may)"
    assert proc.returncode == 130, (proc.returncode, err)
    assert "interrupted" in err and "rerun the same command to resume" in err and "Traceback" not in err, err
    assert all(is_complete(d) for d in (stopped / "runs").iterdir()), sorted(p.name for p in (stopped / "runs").iterdir())
    time.sleep(0.5)
    assert complete(stopped) == after, "a worker outlived the interrupted sweep"
    assert not (stopped / "corrupt").exists()  # nothing half-written was left to be taken for a record

    r = subprocess.run(sweep_cmd(f, stopped), check=True, capture_output=True, text=True, timeout=240)
    assert f"{after} already complete" in r.stdout
    assert flows_bytes(stopped) == expected
