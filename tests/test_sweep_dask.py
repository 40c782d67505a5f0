"""The Dask path: the same sweep through a real (in-process) LocalCluster."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "sweep"))
import fake_engine  # noqa: E402

from cclab.runner import KERNEL_RESOURCE, Task, dask_submit_options, run_sweep  # noqa: E402
from cclab.sweep import sweep_from_dict  # noqa: E402

distributed = pytest.importorskip("distributed")

BASE = {"name": "dask", "duration": "2s", "link": {"rate": "10Mbps", "buffer": "1bdp"}, "flows": [{"cca": "cubic", "rtt": "20ms"}]}


def test_kernel_runs_hold_a_host_resource():
    t = Task("abc", {}, [])
    assert dask_submit_options(t, "kernel")["resources"] == {KERNEL_RESOURCE: 1}
    assert "resources" not in dask_submit_options(t, "sim")
    assert dask_submit_options(t, "sim")["key"] == "cclab-run-abc"


def test_dask_local_cluster_matches_local_runner(monkeypatch, tmp_path):
    fake_engine.install(monkeypatch)  # in-process workers (processes=False) see the fake
    sw = sweep_from_dict({"base": BASE, "trials": 2, "axes": {"link.buffer": ["1bdp", "2bdp", "3bdp"]}}, ".")
    local = run_sweep(sw, tmp_path / "local", jobs=1, progress=False)
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None,
        resources={KERNEL_RESOURCE: 1},
    ) as cluster:
        out = run_sweep(sw, tmp_path / "dask", scheduler=cluster.scheduler_address, progress=False)
        assert (out.done, out.failures) == (6, [])
        again = run_sweep(sw, tmp_path / "dask", scheduler=cluster.scheduler_address, progress=False)
        assert (again.skipped, again.done) == (6, 0)
    assert local.done == 6
    a = pd.read_parquet(tmp_path / "local" / "results.parquet")
    b = pd.read_parquet(tmp_path / "dask" / "results.parquet")
    pd.testing.assert_frame_equal(a, b)


REAL = {
    "name": "dask-real",
    "duration": "3s",
    "link": {"rate": "10Mbps", "buffer": "1bdp"},
    "flows": [{"cca": "cubic", "rtt": "20ms"}, {"cca": "reno", "rtt": "40ms"}],
}


@pytest.mark.skipif(not __import__("helpers").has_simulate(), reason="cclab._native has no simulate() yet")
def test_dask_path_on_the_real_engine_gives_the_local_records(tmp_path):
    sw = sweep_from_dict({"base": REAL, "axes": {"link.buffer": ["0.5bdp", "2bdp"]}}, ".")
    run_sweep(sw, tmp_path / "local", jobs=1, progress=False)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cl:
        out = run_sweep(sw, tmp_path / "dask", scheduler=cl.scheduler_address, progress=False)
    assert (out.done, out.failures) == (2, [])

    def flows(d):
        return {p.name: (p / "flows.parquet").read_bytes() for p in (d / "runs").iterdir()}

    assert flows(tmp_path / "local") == flows(tmp_path / "dask")
