"""CDF and throughput-vs-delay figures, read through the figure objects.

They draw the per-packet distributions of record version 3 (`cclab.metrics.distribution`,
docs/record.md "Distributions"); where that is not there yet they skip with the reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import needs_engine

from cclab import metrics
from cclab.figures import FigureError, Target, draw

needs_distributions = pytest.mark.skipif(not hasattr(metrics, "distribution"),
                                         reason="needs the per-packet distributions (cclab.metrics.distribution)")
pytestmark = [needs_engine, needs_distributions]

SCENARIO = {
    "name": "dist", "duration": "6s", "link": {"rate": "20Mbps", "buffer": "2bdp"},
    "flows": [{"cca": "bbr", "rtt": "20ms", "count": 2}, {"cca": "cubic", "rtt": "40ms", "count": 2},
              {"cca": "reno", "rtt": "20ms", "count": 3, "bytes": "200KB", "start": "1s", "stagger": "0.5s"}],
}  # fmt: skip


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    import cclab

    return cclab.run(SCENARIO, out=tmp_path_factory.mktemp("dist") / "run", plot=False)


def steps(ax) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    return {ln.get_label(): tuple(np.asarray(v, dtype=float) for v in ln.get_data()) for ln in ax.get_lines()}


def median_x(x: np.ndarray, y: np.ndarray) -> float:
    return float(x[np.searchsorted(y, 0.5)])


def test_rtt_cdf_per_algorithm_from_every_ack(run):
    fig = run.plot("cdf", metric="rtt")
    ax = fig.axes[0]
    curves = steps(ax)
    assert sorted(curves) == ["bbr", "cubic", "reno"]
    assert ax.get_xlabel() == "RTT (ms)" and ax.get_ylabel() == "fraction of RTT samples (ACKs)"
    for cca, (x, y) in curves.items():
        assert y[0] == 0 and y[-1] == pytest.approx(1.0) and np.all(np.diff(y) >= 0) and np.all(np.diff(x) >= 0)
        p50 = run.summary["per_algorithm"][cca].get("rtt_ms_p50")
        if p50 is not None:  # the summary's percentile and the curve read the same histogram
            assert median_x(x, y) == pytest.approx(p50, rel=0.02), cca
    base = {f["cca"]: f["rtt_ns"] / 1e6 for f in run.ir["flows"]}
    assert curves["cubic"][0][1] >= 0.99 * base["cubic"]  # no RTT sample below the base RTT
    assert "every ACK's RTT sample" in fig.get_suptitle()


def test_queue_delay_and_fct_cdfs(run):
    qd = steps(run.plot("cdf", metric="queue_delay").axes[0])
    ((label, (x, y)),) = qd.items()
    assert label == "bottleneck" and y[-1] == pytest.approx(1.0)
    assert median_x(x, y) == pytest.approx(run.summary["aggregate"]["queue_delay_ms_p50"], rel=0.02, abs=0.01)
    fig = run.plot("cdf", metric="fct")
    ((label, (x, y)),) = steps(fig.axes[0]).items()
    fcts = sorted(f["fct_s"] for f in run.summary["per_flow"] if f.get("fct_s") is not None)
    assert label == f"reno (n={len(fcts)})" and len(fcts) == 3
    assert sorted(set(x)) == fcts and list(y[-3:]) == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert fig.axes[0].get_xscale() == "log"


def test_records_without_distributions_say_so():
    old = Target(Path(__file__).parent / "fixtures" / "run-bbr-cubic")  # a version-1 record
    if (old.path / "histograms.parquet").exists():
        pytest.skip("the fixture has histograms")
    with pytest.raises(FigureError, match="no per-packet distributions"):
        draw(old, "cdf", metric="rtt")


def test_scatter_points_and_trial_ellipses(tmp_path):
    from cclab.runner import run_sweep
    from cclab.sweep import sweep_from_dict

    base = {"name": "sc", "duration": "5s", "link": {"rate": "20Mbps", "buffer": "1bdp"},
            "flows": [{"cca": "bbr", "rtt": "20ms"}, {"cca": "cubic", "rtt": "20ms"}]}  # fmt: skip
    sw = sweep_from_dict({"base": base, "trials": 3, "axes": {"link.buffer": ["0.5bdp", "4bdp"]}}, ".")
    assert run_sweep(sw, tmp_path / "sw", jobs=1, progress=False).ok
    t = Target(tmp_path / "sw")
    fig = draw(t, "scatter")
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == ["buffer=0.5 BDP", "buffer=4 BDP"]
    for ax, buf in zip(panels, ("0.5bdp", "4bdp")):
        pts = {c.get_label(): c.get_offsets() for c in ax.collections if c.get_label() and not c.get_label().startswith("_")}
        assert sorted(pts) == ["bbr (n=3)", "cubic (n=3)"]
        df = t.results[t.results["link.buffer"] == buf]
        for cca in ("bbr", "cubic"):
            got = sorted(map(tuple, np.asarray(pts[f"{cca} (n=3)"])))
            want = []
            for rid in df["run_id"]:
                a = json.loads((tmp_path / "sw" / "runs" / rid / "summary.json").read_text())["per_algorithm"][cca]
                want.append((a["rtt_ms_p95"], a["goodput_bps"] / 1e6))
            assert np.allclose(got, sorted(want))
        assert len([ln for ln in ax.get_lines() if ln.get_label() == "_ellipse"]) == 2  # one per algorithm
        lo, hi = ax.get_xlim()
        assert lo > hi  # lower delay to the right (Pantheon)
        assert ax.get_ylabel() == "goodput (Mbit/s)" and ax.get_xlabel().startswith("95th percentile RTT")
    assert "1 σ over trials" in fig.get_suptitle()
