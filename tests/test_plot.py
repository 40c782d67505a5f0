"""The stacked time-series figure renders from the committed fixture record (tests/fixtures/make_fixtures.py)."""

from __future__ import annotations

import dataclasses

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cclab import plot, record

FIXTURE_RUN = Path(__file__).parent / "fixtures" / "run-bbr-cubic"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def run():
    return record.read_run(FIXTURE_RUN)


def test_fixture_record_is_complete():
    assert record.is_complete(FIXTURE_RUN)


def test_png_and_svg(run, tmp_path):
    files = run.plot(tmp_path / "ts", formats=("png", "svg"))
    assert [f.name for f in files] == ["ts.png", "ts.svg"]
    png, svg = (f.read_bytes() for f in files)
    assert png.startswith(PNG_MAGIC) and len(png) > 10_000
    assert b"<svg" in svg[:1000] and svg.rstrip().endswith(b"</svg>")
    # the state strip is drawn for the BBR flow
    assert b"PROBE_RTT" in svg  # matplotlib keeps text as comments in SVG


def test_default_path_is_inside_the_record(run, tmp_path):
    copy = dataclasses.replace(run, path=tmp_path)
    assert copy.plot() == [tmp_path / "timeseries.png"]


def test_figure_panels_and_state_strip(run):
    fig = plot.figure_timeseries(run.flows, run.link, run.ir)
    labels = [ax.get_ylabel() for ax in fig.axes]
    assert labels[0] == "goodput (Mbps, 100 ms mean)"  # 2 samples of 50 ms
    assert labels[1:5] == ["RTT (ms)", "cwnd / inflight (KB)", "queue (KB)", "drops / interval\n(packets)"]
    assert "state" in labels and "queueing delay (ms)" in labels
    assert fig.axes[0].get_xlim() == (0.0, 10.0)
    # no states in the shade set -> no strip; raw samples when asked
    fig2 = plot.figure_timeseries(run.flows, run.link, run.ir, shade_states=(), goodput_mean_s=None)
    assert "state" not in [ax.get_ylabel() for ax in fig2.axes]
    assert fig2.axes[0].get_ylabel() == "goodput (Mbps)"


def test_many_flows_fall_back_to_per_algorithm_lines(run, tmp_path):
    # 20 copies of the fixture flows -> per-algorithm means, still renders
    frames, flows = [], []
    for k in range(10):
        for f in run.ir["flows"]:
            flows.append({**f, "id": f["id"] + 2 * k})
        frames.append(run.flows.assign(flow_id=run.flows.flow_id + 2 * k))
    ir = {**run.ir, "flows": flows}
    fig = plot.figure_timeseries(pd.concat(frames, ignore_index=True), run.link, ir)
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "bbr (total of 10 flows)" in texts
    assert plot.save_figure(fig, tmp_path / "many", ("png",))[0].stat().st_size > 0


def test_palette_is_stable():
    assert plot.color_for("cubic") == plot.PALETTE["cubic"]
    assert plot.color_for("bbr_shallow") == plot.color_for("bbr_shallow")
    assert len({plot.color_for(c) for c in ("cubic", "reno", "bbr", "bbr3", "vegas")}) == 5


def test_state_spans():
    t = np.array([1.0, 2.0, 3.0, 4.0])
    s = pd.Series(["A", "A", None, "B"], dtype="str")
    assert plot._state_spans(t, s, 1.0) == [("A", 0.0, 2.0), ("B", 3.0, 4.0)]


def test_bad_format(run, tmp_path):
    with pytest.raises(ValueError, match="not supported"):
        run.plot(tmp_path / "x", formats=("gif",))


def test_every_bbr_state_the_engine_names_is_shaded():
    # The state strip shades each BBR mode the engines write (bbr, bbr2, bbr3): a
    # name missing from STATE_COLORS would silently lose its shading.
    import json

    import cclab._native as native
    from cclab.plot import STATE_COLORS
    from helpers import synthetic_ir

    for cca in ("bbr", "bbr2", "bbr3"):
        raw = native.simulate(json.dumps(synthetic_ir(n_samples=1, ccas=(cca,))))
        names = raw["state_names"][cca]
        missing = [n for n in names if n not in STATE_COLORS]
        assert names and not missing, (cca, missing)
