"""Topologies in the record: link.parquet per link, the per-link summary, paths per flow,
the per-link and topology figures, the report and the CLI (docs/topologies.md, docs/record.md)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import FIXTURES, needs_engine

import cclab
from cclab import metrics
from cclab.record import read_run

PARKING = {
    "name": "parking",
    "duration": "6s",
    "sample_interval": "100ms",
    "measure": {"from": "2s"},
    "links": {
        "l1": {"from": "a", "to": "b", "rate": "10Mbps", "delay": "5ms", "buffer": "1bdp"},
        "l2": {"from": "b", "to": "c", "rate": "10Mbps", "delay": "5ms", "buffer": "1bdp"},
    },
    "flows": [
        {"cca": "reno", "path": ["l1", "l2"], "rtt": "40ms"},
        {"cca": "cubic", "path": ["l1"], "rtt": "40ms"},
        {"cca": "reno", "path": ["l2"], "rtt": "40ms"},
    ],
}


def _synthetic_two_links() -> tuple[dict, dict]:
    """Raw output of two links over 3 one-second samples with hand-known counters."""
    sec = 1_000_000_000
    ir = {"duration_ns": 3 * sec, "sample_interval_ns": sec, "measure": {"from_ns": 0, "to_ns": 3 * sec},
          "mss": 1448, "header_bytes": 52,
          "links": [{"name": "x", "from": "a", "to": "b"}, {"name": "y", "from": "b", "to": "c"}],
          "flows": [{"id": 0, "cca": "cubic", "rtt_ns": 10, "path": ["x", "y"], "ack_path": []}]}  # fmt: skip
    # rows by time, then link: x then y; cumulative counters
    link = {
        "time_ns": np.repeat(np.array([1, 2, 3]) * sec, 2),
        "link_id": np.tile([0, 1], 3),
        "egress_bytes": np.array([1000, 500, 3000, 1500, 6000, 2500]),
        "arrival_bytes": np.array([1000, 500, 3000, 1500, 6000, 2500]),
        "departed_packets": np.array([10, 5, 30, 15, 60, 25]),
        "sojourn_sum_ns": np.array([10, 0, 30, 10, 60, 10]) * 1_000_000,
        "queue_bytes": np.zeros(6), "queue_packets": np.zeros(6),
        "drops_overflow": np.array([0, 0, 1, 0, 1, 4]), "drops_random": np.zeros(6), "drops_aqm": np.zeros(6),
        "marks_ce": np.zeros(6), "capacity_bps": np.full(6, 8000.0), "delay_ns": np.zeros(6),
    }  # fmt: skip
    return {"link": link}, ir


def test_link_frame_diffs_each_link_on_its_own() -> None:
    raw, ir = _synthetic_two_links()
    lf = metrics.link_frame(raw, ir)
    assert list(lf["link"].astype(str)) == ["x", "y"] * 3
    x, y = lf[lf["link"] == "x"], lf[lf["link"] == "y"]
    assert list(x["throughput_bps"]) == [8000.0, 16000.0, 24000.0]
    assert list(y["throughput_bps"]) == [4000.0, 8000.0, 8000.0]
    assert list(x["drops_overflow"]) == [0, 1, 0] and list(y["drops_overflow"]) == [0, 0, 4]
    assert list(y["queue_delay_ms"]) == [0.0, 1.0, 0.0]  # 10 ms over 10 packets in (1, 2]
    assert list(lf.columns[:2]) == ["time_s", "link"]


def test_a_one_link_frame_is_the_link_named_link_and_old_records_get_the_column() -> None:
    run = read_run(FIXTURES / "run-bbr-cubic")
    assert list(run.link.columns[:2]) == ["time_s", "link"] and set(run.link["link"].astype(str)) == {"link"}
    again = metrics.summary(run.flows, run.link, run.ir)
    assert again["per_link"]["link"]["flows"] == [int(f["id"]) for f in run.ir["flows"]]
    agg, one = again["aggregate"], again["per_link"]["link"]
    assert agg["link_utilization"] == one["utilization"] and agg["drops"] == one["drops"]
    assert agg["queue_delay_ms_p95"] == one["queue_delay_ms_p95"] and "bottleneck" not in agg


@needs_engine
def test_a_topology_run_records_every_link_and_names_paths(tmp_path: Path) -> None:
    run = cclab.run(PARKING, out=tmp_path / "run", plot=False)
    rec = read_run(tmp_path / "run")
    link = rec.link
    assert len(link) == 2 * 60 and list(link["link"].astype(str)[:4]) == ["l1", "l2", "l1", "l2"]
    s = rec.summary
    assert [f["path"] for f in s["per_flow"]] == [["l1", "l2"], ["l1"], ["l2"]]
    assert s["per_link"]["l1"]["flows"] == [0, 1] and s["per_link"]["l2"]["flows"] == [0, 2]
    assert s["per_link"]["l1"]["from"] == "a" and s["per_link"]["l2"]["to"] == "c"
    for name in ("l1", "l2"):
        x = s["per_link"][name]
        assert 0.9 < x["utilization"] <= 1.0 + 1500 * 8 / (10e6 * 4), (name, x)  # + the packet in service at the edge
        rows = link[(link["link"] == name) & (link["time_s"] > 2.0)]
        assert x["drops_total"] == rows[["drops_overflow", "drops_random", "drops_aqm"]].to_numpy().sum()
        # payload of the flows crossing it, over its capacity
        crossing = sum(f["goodput_bps"] for f in s["per_flow"] if name in f["path"])
        assert x["goodput_utilization"] == pytest.approx(crossing / 10e6, rel=1e-9)
    agg = s["aggregate"]
    assert agg["bottleneck"] in ("l1", "l2")
    assert agg["drops_total"] == s["per_link"]["l1"]["drops_total"] + s["per_link"]["l2"]["drops_total"]
    assert agg["flows_active"] == 3 and s["window"]["samples"] == 40
    assert run.summary == s
    # the raw per-link totals: every drop of the run is in one link's rows
    raw_rows = link[["drops_overflow", "drops_random", "drops_aqm"]].to_numpy().sum()
    assert raw_rows == sum(json.loads(json.dumps(v))["drops_total"] for v in s["per_link"].values()) + \
        link.loc[link["time_s"] <= 2.0, ["drops_overflow", "drops_random", "drops_aqm"]].to_numpy().sum()


@needs_engine
def test_topology_figures_and_report(tmp_path: Path) -> None:
    from cclab.figures import FigureError, Target, default_specs, draw

    cclab.run(PARKING, out=tmp_path / "run", plot=False)
    target = Target(tmp_path / "run")
    kinds = [s["kind"] for s in default_specs(target)]
    assert kinds[0] == "topology" and "links" in kinds and "timeseries" in kinds
    fig = draw(target, "links")
    assert len([ax for ax in fig.axes if ax.get_ylabel().endswith("queue (KB)")]) == 2
    fig = draw(target, "topology")
    texts = {t.get_text() for ax in fig.axes for t in ax.texts}
    assert {"a", "b", "c"} <= texts and any(t.startswith("l1\n10 Mbit/s, 5 ms") for t in texts)
    one = dict(PARKING, links=None, link={"rate": "10Mbps"}, flows=[{"cca": "reno", "rtt": "40ms"}])
    del one["links"]
    cclab.run(one, out=tmp_path / "one", plot=False)
    with pytest.raises(FigureError, match="no topology"):
        draw(Target(tmp_path / "one"), "topology")
    from cclab.report import write_report

    html = Path(write_report(tmp_path / "run")).read_text()
    assert "<h3>per link</h3>" in html and "drops_overflow" in html


@needs_engine
def test_cli_run_prints_the_links_table(tmp_path: Path) -> None:
    import tomli_w
    from typer.testing import CliRunner

    from cclab.cli import app

    f = tmp_path / "parking.toml"
    f.write_text(tomli_w.dumps(PARKING))
    out = CliRunner().invoke(app, ["run", str(f), "--out", str(tmp_path / "r"), "--no-plot"])
    assert out.exit_code == 0, out.output
    assert "links (measure window)" in out.output and "a → b" in out.output
    assert "utilization (goodput / capacity of l" in out.output


def test_link_summary_of_an_unused_link_is_empty_not_an_error() -> None:
    raw, ir = _synthetic_two_links()
    ir["links"].append({"name": "z", "from": "c", "to": "d"})
    lf = metrics.link_frame(raw, ir)
    out = metrics.link_summary(lf, ir, {0: 1.0})
    assert list(out) == ["x", "y", "z"] and out["z"]["flows"] == [] and out["z"]["drops_total"] == 0
    assert isinstance(lf["link"].dtype, pd.CategoricalDtype)
