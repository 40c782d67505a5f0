"""A sweep on a real Dask cluster of separate processes, one of which is killed mid-sweep.

`dask scheduler` and two `dask worker` processes (no nanny: a killed worker stays dead) on
localhost, `cclab sweep FILE --scheduler ADDRESS` as its own process, the engine for real. While
the sweep runs, one worker is SIGKILLed while it holds a run; the scheduler hands that run to the
other worker. The sweep must end complete, with exactly the records a local run writes (byte
for byte: flows.parquet, link.parquet, summary.json, resolved.json, scenario.toml) and no
debris of the killed worker's half-written record.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from helpers import needs_engine

distributed = pytest.importorskip("distributed")

SWEEP = textwrap.dedent(
    """
    trials = 2
    [base]
    name = "cluster"
    duration = "8s"
    sample_interval = "50ms"
    [base.link]
    rate = "40Mbps"
    buffer = "1bdp"
    [[base.flows]]
    cca = "cubic"
    rtt = "30ms"
    [[base.flows]]
    cca = "bbr"
    rtt = "30ms"
    [axes]
    "link.buffer" = ["0.5bdp", "1bdp", "2bdp", "4bdp"]
    "flows[0].cca" = ["cubic", "reno"]
    """
)
#: Record files whose bytes depend on nothing but the scenario and seed (meta.json holds host and times).
DETERMINISTIC = ("flows.parquet", "link.parquet", "summary.json", "resolved.json", "scenario.toml")


def dask_cli() -> str:
    exe = Path(sys.executable).with_name("dask")
    found = str(exe) if exe.exists() else shutil.which("dask")
    if not found:
        pytest.skip("the `dask` command is not installed (pip install 'cclab[dask]')")
    return found


def records(out: Path) -> dict[str, dict[str, bytes]]:
    return {d.name: {f: (d / f).read_bytes() for f in DETERMINISTIC} for d in sorted((out / "runs").iterdir())}


class Cluster:
    """A scheduler and named workers as child processes (killed and reaped on exit)."""

    def __init__(self, tmp: Path, workers: int):
        self.dask = dask_cli()
        self.tmp = tmp
        self.file = tmp / "scheduler.json"
        self.procs: dict[str, subprocess.Popen] = {}
        env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
        log = open(tmp / "cluster.log", "ab")  # noqa: SIM115 — closed in __exit__
        self.log = log
        self.procs["scheduler"] = subprocess.Popen(
            [self.dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", str(self.file)], stdout=log, stderr=log, env=env)  # fmt: skip
        deadline = time.monotonic() + 60
        while not self.file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert self.file.exists(), (tmp / "cluster.log").read_text()[-2000:]
        time.sleep(0.2)  # written: let the writer finish
        self.address = json.loads(self.file.read_text())["address"]
        for i in range(workers):
            name = f"w{i}"
            self.procs[name] = subprocess.Popen(
                [self.dask, "worker", self.address, "--name", name, "--nthreads", "1", "--no-nanny",
                 "--no-dashboard", "--local-directory", str(tmp / name)], stdout=log, stderr=log, env=env)  # fmt: skip
        self.client = distributed.Client(self.address, timeout=60)
        self.client.wait_for_workers(workers, timeout=60)

    def worker_address(self, name: str) -> str:
        return next(a for a, w in self.client.scheduler_info()["workers"].items() if w["name"] == name)

    def kill(self, name: str) -> None:
        self.procs[name].send_signal(signal.SIGKILL)
        self.procs[name].wait(10)

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc) -> None:
        self.client.close()
        for p in self.procs.values():
            if p.poll() is None:
                p.terminate()
        for p in self.procs.values():
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        self.log.close()


@needs_engine
@pytest.mark.timeout(300)
def test_sweep_on_two_worker_processes_survives_a_killed_worker(tmp_path):
    f = tmp_path / "sweep.toml"
    f.write_text(SWEEP)
    local = tmp_path / "local"
    cmd = [sys.executable, "-m", "cclab", "sweep", str(f), "--no-progress"]
    subprocess.run([*cmd, "--out", str(local), "--jobs", "1"], check=True, capture_output=True, timeout=240)
    expected = records(local)
    assert len(expected) == 16

    out = tmp_path / "cluster"
    with Cluster(tmp_path, workers=2) as cluster:
        victim = cluster.worker_address("w1")
        sweep = subprocess.Popen([*cmd, "--out", str(out), "--scheduler", cluster.address], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)  # fmt: skip
        # kill w1 while it holds a run, once the sweep is under way (at least one record complete)
        deadline = time.monotonic() + 180
        killed_holding: list[str] = []
        while time.monotonic() < deadline and sweep.poll() is None:
            done = len([d for d in (out / "runs").iterdir() if ".tmp-" not in d.name]) if (out / "runs").is_dir() else 0
            holding = cluster.client.processing(workers=[victim]).get(victim, ())
            if done >= 1 and holding:
                killed_holding = [str(k) for k in holding]
                cluster.kill("w1")
                break
            time.sleep(0.02)
        assert killed_holding, "the sweep ended before a worker could be killed mid-run"
        stdout, stderr = sweep.communicate(timeout=240)
        assert sweep.returncode == 0, stdout + stderr
        assert cluster.procs["w1"].poll() is not None and cluster.procs["w0"].poll() is None

    assert "16 runs" in stdout and "0 failed" in stdout, stdout
    assert all(k.startswith("cclab-run-") for k in killed_holding)
    got = records(out)
    assert sorted(got) == sorted(expected)  # no half-written record of the killed worker left in runs/
    assert got == expected  # byte for byte: the killed run was redone on w0 from the same IR
    a = pd.read_parquet(local / "results.parquet").drop(columns=["backend"], errors="ignore")
    b = pd.read_parquet(out / "results.parquet").drop(columns=["backend"], errors="ignore")
    pd.testing.assert_frame_equal(a, b)
    assert json.loads((out / "failures.json").read_text()) == []


@needs_engine
def test_a_run_finished_by_a_lost_worker_counts_as_done(tmp_path):
    """The scheduler may hand a run to a second worker after the first wrote its record and died before
    reporting: the second finds the intact record of the same IR and is done (before: RecordExistsError)."""
    from cclab.resolve import resolve
    from cclab.runner import execute_run
    from cclab.scenario import scenario_from_dict

    sc = scenario_from_dict({"name": "once", "duration": "300ms", "link": {"rate": "5Mbps"},
                             "flows": [{"cca": "reno", "rtt": "20ms"}]})  # fmt: skip
    ir, text, run_dir = resolve(sc), sc.to_toml(), tmp_path / "run"
    assert execute_run(ir, text, str(run_dir), "sim")["ok"]
    before = {p.name: p.stat().st_mtime_ns for p in run_dir.iterdir()}
    again = execute_run(ir, text, str(run_dir), "sim")
    assert again == {**again, "ok": True, "error": None}
    assert {p.name: p.stat().st_mtime_ns for p in run_dir.iterdir()} == before  # not rewritten
    other = resolve(scenario_from_dict({**sc.to_dict(), "seed": 2}))
    clash = execute_run(other, text, str(run_dir), "sim")  # another IR in that directory is still an error
    assert not clash["ok"] and "already exists" in clash["error"]
