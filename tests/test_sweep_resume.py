"""Kill a running `cclab sweep` with SIGKILL, rerun it, and check that the
resumed sweep holds exactly the records a clean run produces (nothing is
lost; determinism makes the bytes identical; docs/sweeps.md)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from helpers import needs_engine

from cclab.record import is_complete

CLI = "import typer; from cclab.cli_sweep import register; app = typer.Typer(); register(app); app()"

SWEEP = textwrap.dedent(
    """
    trials = 2
    [base]
    name = "resume"
    duration = "6s"
    sample_interval = "100ms"
    [base.link]
    rate = "20Mbps"
    buffer = "1bdp"
    [[base.flows]]
    cca = "cubic"
    rtt = "30ms"
    [[base.flows]]
    cca = "reno"
    rtt = "30ms"
    [axes]
    "link.buffer" = ["0.5bdp", "1bdp", "2bdp", "4bdp"]
    "flows[1].cca" = ["reno", "cubic"]
    """
)


def sweep_cmd(sweep_file: Path, out: Path) -> list[str]:
    return [sys.executable, "-c", CLI, "sweep", str(sweep_file), "--out", str(out), "--jobs", "2", "--no-progress"]


def records(out: Path) -> dict[str, bytes]:
    runs = out / "runs"
    assert all(is_complete(d) for d in runs.iterdir()), sorted(p.name for p in runs.iterdir())
    return {d.name: (d / "flows.parquet").read_bytes() for d in runs.iterdir()}


def complete_count(out: Path) -> int:
    # not the temporary directory of a record being written: it is complete just before its rename,
    # and a kill in between leaves it to be cleaned up, not resumed
    runs = out / "runs"
    return sum(1 for d in runs.iterdir() if ".tmp-" not in d.name and is_complete(d)) if runs.is_dir() else 0


@needs_engine
@pytest.mark.timeout(600)
def test_sigkill_then_resume_equals_clean_run(tmp_path):
    f = tmp_path / "sweep.toml"
    f.write_text(SWEEP)
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    subprocess.run(sweep_cmd(f, clean), check=True, capture_output=True, timeout=300)
    expected = records(clean)
    assert len(expected) == 16

    proc = subprocess.Popen(sweep_cmd(f, killed), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while complete_count(killed) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)  # the sweep process only: its workers must die with it
    proc.wait()
    done_at_kill = complete_count(killed)
    assert 0 < done_at_kill < 16, f"sweep was not killed mid-way ({done_at_kill} of 16 complete)"
    time.sleep(0.5)  # a surviving worker would still be writing now
    assert complete_count(killed) == done_at_kill, "a worker outlived the killed sweep"

    r = subprocess.run(sweep_cmd(f, killed), check=True, capture_output=True, text=True, timeout=300)
    assert f"{done_at_kill} already complete" in r.stdout
    assert records(killed) == expected
    assert not [p for p in (killed / "runs").iterdir() if ".tmp" in p.name]
    a = pd.read_parquet(clean / "results.parquet")
    b = pd.read_parquet(killed / "results.parquet")
    pd.testing.assert_frame_equal(a, b)
    assert json.loads((killed / "failures.json").read_text()) == []


@needs_engine
def test_a_record_filed_under_another_runs_id_is_caught_by_table_and_redone_by_resume(tmp_path):
    # copying trial 0's record over trial 1's (or any record into the wrong directory) used to be
    # taken as trial 1: `cclab table` reported n=1 "deterministic", and a resume skipped it
    import shutil

    from cclab.runner import run_sweep
    from cclab.store import read_results
    from cclab.sweep import sweep_from_dict

    base = {"name": "swap", "duration": "2s", "link": {"rate": "10Mbps", "buffer": "1bdp", "loss": 0.01},
            "flows": [{"cca": "cubic", "rtt": "20ms"}]}
    sw = sweep_from_dict({"base": base, "trials": 2, "axes": {"link.buffer": ["1bdp"]}}, ".")
    out = tmp_path / "sw"
    run_sweep(sw, out, jobs=1, progress=False)
    pts = json.loads((out / "points.json").read_text())
    (r0, r1) = (pts[0]["run_id"], pts[1]["run_id"])
    shutil.rmtree(out / "runs" / r1)
    shutil.copytree(out / "runs" / r0, out / "runs" / r1)
    df = read_results(out, rebuild=True)
    assert df.attrs["corrupt"] == [r1] and list(df["trial"]) == [0]
    again = run_sweep(sw, out, jobs=1, progress=False)
    assert (again.skipped, again.done) == (1, 1) and [c[0] for c in again.corrupt] == [r1]
    assert json.loads((out / "runs" / r1 / "meta.json").read_text())["seed"] == pts[1]["seed"]
    # a run whose record was removed is counted as missing, not silently dropped
    shutil.rmtree(out / "runs" / r1)
    assert read_results(out, rebuild=True).attrs["missing"] == [r1]
