"""``cclab compare``: two simulator runs (no root), and kernel vs sim (root)."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
from kernel_helpers import valid_kernel_run

import cclab._native as native
from cclab import api
from cclab.compare import compare

needs_sim = pytest.mark.skipif(not hasattr(native, "simulate"), reason="the simulator (cclab._native.simulate) is not built yet")

CUBIC_20 = {
    "name": "cubic-20mbps-40ms",
    "duration": "10s",
    "seed": 1,
    "sample_interval": "10ms",
    "measure": {"from": "3s"},
    "link": {"rate": "20Mbps", "delay": "0ms", "buffer": "1bdp"},
    "flows": [{"cca": "cubic", "rtt": "40ms"}],
}


@needs_sim
def test_compare_two_sim_runs(tmp_path):
    two = dict(CUBIC_20, duration="6s", flows=[{"cca": "cubic", "rtt": "40ms"}, {"cca": "reno", "rtt": "40ms", "start": "1s"}])
    a = api.run(two, out=tmp_path / "a", plot=False, seed=1).path
    b = api.run(two, out=tmp_path / "b", plot=False, seed=2).path
    c = compare(a, b, out=tmp_path / "cmp")
    assert set(c.per_flow["flow_id"]) == {0, 1}
    g = c.per_flow[(c.per_flow.flow_id == 0) & (c.per_flow.metric == "goodput")].iloc[0]
    assert g["a"] > 0 and g["diff"] == pytest.approx(g["b"] - g["a"])
    assert "seeds differ (1 vs 2)" in c.notes
    assert (tmp_path / "cmp" / "compare.png").stat().st_size > 10_000
    saved = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert saved["a"]["backend"] == "sim" and len(saved["per_flow"]) == len(c.per_flow)
    # the same through the CLI
    r = subprocess.run([sys.executable, "-m", "cclab", "compare", str(a), str(b), "--out", str(tmp_path / "cli")],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "goodput" in r.stdout and "aggregate" in r.stdout
    assert (tmp_path / "cli" / "compare.png").exists()


@needs_sim
def test_share_differences_are_percentage_points(tmp_path):
    base = dict(CUBIC_20, duration="6s", measure={"from": "2s"})
    a = api.run(dict(base, flows=[{"cca": "cubic", "rtt": "40ms"}, {"cca": "reno", "rtt": "40ms"}]), out=tmp_path / "a", plot=False).path
    b = api.run(dict(base, flows=[{"cca": "cubic", "rtt": "40ms"}, {"cca": "reno", "rtt": "40ms", "start": "3s"}]),
                out=tmp_path / "b", plot=False).path  # fmt: skip
    c = compare(a, b)
    shares = pd.concat([c.per_flow[c.per_flow.metric == "share"], c.aggregate[c.aggregate.metric.str.startswith("share ")]])
    assert len(shares) == 4
    assert (shares["diff_unit"] == "pp").all() and shares["rel_diff"].isna().all()
    assert (shares["diff"] == shares["b"] - shares["a"]).all()
    cubic = c.aggregate[c.aggregate.metric == "share cubic"].iloc[0]
    assert cubic["diff"] > 5, cubic  # the later Reno leaves CUBIC a clearly larger share: tens of pp, not a ratio
    goodput = c.per_flow[c.per_flow.metric == "goodput"]
    assert (goodput["diff_unit"] == "Mbit/s").all() and goodput["rel_diff"].notna().all()
    r = subprocess.run([sys.executable, "-m", "cclab", "compare", str(a), str(b), "--no-plot"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    row = next(ln for ln in r.stdout.splitlines() if "share cubic" in ln)
    assert f"{cubic['diff']:+.3f} pp" in row and row.rstrip(" │").endswith("–"), row


@needs_sim
def test_compare_refuses_runs_of_different_scenarios(tmp_path):
    a = api.run(dict(CUBIC_20, duration="2s", measure={"from": "1s"}), out=tmp_path / "a", plot=False).path
    b = api.run(dict(CUBIC_20, duration="2s", measure={"from": "1s"}, flows=[{"cca": "cubic", "rtt": "40ms", "count": 2}]), out=tmp_path / "b", plot=False).path
    r = subprocess.run([sys.executable, "-m", "cclab", "compare", str(a), str(b)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "different flows" in r.stderr


@needs_sim
def test_kernel_vs_sim_one_cubic_flow_20mbps_40ms(tmp_path, kernel_ready, no_leftovers):
    kr = valid_kernel_run(CUBIC_20, tmp_path / "k")  # rerun if the self-check rejects it (the VM's host)
    assert kr.meta["valid"], kr.meta["invalid_reasons"]
    k = kr.path
    s = api.run(CUBIC_20, out=tmp_path / "s", backend="sim", plot=False).path
    c = compare(k, s, out=tmp_path / "cmp")
    g = c.per_flow[c.per_flow.metric == "goodput"].iloc[0]
    assert abs(g["rel_diff"]) < 0.10, c.per_flow
    assert c.a.meta["backend"] == "kernel" and "kernel" in c.a.meta and "emulator" in c.a.meta
