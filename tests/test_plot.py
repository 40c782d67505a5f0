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
    files = run.save_plot(tmp_path / "ts", formats=("png", "svg"))
    assert [f.name for f in files] == ["ts.png", "ts.svg"]
    png, svg = (f.read_bytes() for f in files)
    assert png.startswith(PNG_MAGIC) and len(png) > 10_000
    assert b"<svg" in svg[:1000] and svg.rstrip().endswith(b"</svg>")
    # the state strip is drawn for the BBR flow
    assert b"PROBE_RTT" in svg  # matplotlib keeps text as comments in SVG


def test_default_path_is_inside_the_record(run, tmp_path):
    copy = dataclasses.replace(run, path=tmp_path)
    assert copy.save_plot() == [tmp_path / "timeseries.png"]


def test_run_plot_returns_a_figure_and_saves_nothing(run, tmp_path):
    from matplotlib.figure import Figure

    copy = dataclasses.replace(run, path=tmp_path)
    fig = copy.plot()
    assert isinstance(fig, Figure) and fig.axes[0].get_ylabel().startswith("goodput")
    assert list(tmp_path.iterdir()) == []  # saving is a separate step (save_plot, fig.savefig)
    jain = copy.plot("jain")  # any run figure of the registry, from the run in memory
    assert isinstance(jain, Figure) and jain.axes[0].get_ylabel() == "Jain's fairness index"


def test_figure_panels_and_state_strip(run):
    fig = plot.figure_timeseries(run.flows, run.link, run.ir)
    labels = [ax.get_ylabel() for ax in fig.axes]
    assert labels[0] == "goodput (Mbit/s)\n100 ms bins"  # the resolution is on the axis
    assert labels[1:5] == ["RTT (ms)", "cwnd (KB)", "queue (KB)", "drops\n(packets/s)"]
    assert "state" in labels and "queueing delay (ms)" in labels
    assert fig.axes[0].get_xlim() == (0.0, 10.0) and fig.cclab_bin_s == 0.1
    # no states in the shade set -> no strip; a chosen resolution
    fig2 = plot.figure_timeseries(run.flows, run.link, run.ir, shade_states=(), bin_s=1.0)
    assert "state" not in [ax.get_ylabel() for ax in fig2.axes]
    assert fig2.axes[0].get_ylabel() == "goodput (Mbit/s)\n1 s bins"
    x, _ = fig2.axes[0].get_lines()[1].get_data()  # one point per 1 s bin, at the bin's centre
    assert [v for v in x if v == v] == [0.5 + k for k in range(10)]


def test_many_flows_fall_back_to_per_algorithm_lines(run, tmp_path):
    # 20 copies of the fixture flows -> per-algorithm totals, still renders
    frames, flows = [], []
    for k in range(10):
        for f in run.ir["flows"]:
            flows.append({**f, "id": f["id"] + 2 * k})
        frames.append(run.flows.assign(flow_id=run.flows.flow_id + 2 * k))
    ir = {**run.ir, "flows": flows}
    fig = plot.figure_timeseries(pd.concat(frames, ignore_index=True), run.link, ir)
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "bbr" in texts and "total of 10 flows" in texts
    assert len(fig.axes[0].get_lines()) == 3  # capacity + one line per algorithm
    assert plot.save_figure(fig, tmp_path / "many", ("png",))[0].stat().st_size > 0


def test_palette_is_stable_and_colour_blind_safe():
    assert plot.color_for("cubic") == plot.PALETTE["cubic"]
    assert plot.color_for("bbr_shallow") == plot.color_for("bbr_shallow")
    assert len({plot.color_for(c) for c in ("cubic", "reno", "bbr", "bbr3", "vegas")}) == 5
    assert set(plot.PALETTE.values()) <= set(plot.OKABE_ITO)


def test_state_spans():
    t = np.array([1.0, 2.0, 3.0, 4.0])
    s = pd.Series(["A", "A", None, "B"], dtype="str")
    assert plot._state_spans(t, s, 1.0) == [("A", 0.0, 2.0), ("B", 3.0, 4.0)]


def test_bad_format(run, tmp_path):
    with pytest.raises(ValueError, match="formats: 'gif' is not a figure format"):
        run.save_plot(tmp_path / "x", formats=("gif",))


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


# --------------------------------------------------------------------------------------------------
# a real run with staggered starts and a finite flow: the figure is read through its objects

import colorsys  # noqa: E402

from matplotlib.colors import to_rgb  # noqa: E402

STAGGERED = {
    "name": "staggered", "duration": "6s", "sample_interval": "10ms",
    "link": {"rate": "20Mbps", "buffer": "1bdp"},
    "flows": [{"cca": "bbr", "rtt": "20ms", "count": 2, "stagger": "2s"},
              {"cca": "cubic", "rtt": "40ms", "count": 2, "start": "1s", "stagger": "1s"},
              {"cca": "reno", "rtt": "20ms", "start": "0.5s", "bytes": "200KB"}],
}  # fmt: skip


@pytest.fixture(scope="module")
def staggered():
    import cclab
    from helpers import has_simulate

    if not has_simulate():
        pytest.skip("cclab._native has no simulate() yet")
    return cclab.run(STAGGERED, plot=False)


def _finite_x(line) -> np.ndarray:
    x = np.asarray(line.get_xdata(), dtype=float)
    return x[np.isfinite(x)]


def test_one_colour_per_flow_grouped_by_algorithm(staggered):
    fig = staggered.plot()
    ax = fig.axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines() if ln.get_label().startswith("flow")}
    assert sorted(lines) == [f"flow {i} ({r} ms)" for i, r in enumerate((20, 20, 40, 40, 20))]
    colors = {k: ln.get_color() for k, ln in lines.items()}
    assert len(set(colors.values())) == 5  # one colour per flow
    hue = {k: colorsys.rgb_to_hls(*to_rgb(c))[0] for k, c in colors.items()}
    assert abs(hue["flow 0 (20 ms)"] - hue["flow 1 (20 ms)"]) < 0.01  # flows of one algorithm: shades of one hue
    assert abs(hue["flow 0 (20 ms)"] - hue["flow 2 (40 ms)"]) > 0.1  # algorithms: different hues
    # the legend groups flows under their algorithm (a bold header per column)
    leg = ax.get_legend()
    texts = [t.get_text() for t in leg.get_texts()]
    assert [t for t in texts if t] == ["link", "capacity", "bbr", "flow 0 (20 ms)", "flow 1 (20 ms)", "cubic",
                                       "flow 2 (40 ms)", "flow 3 (40 ms)", "reno", "flow 4 (20 ms)"]
    bold = [t.get_text() for t in leg.get_texts() if t.get_fontweight() == "bold"]
    assert bold == ["link", "bbr", "cubic", "reno"]
    # every panel has a line per flow, a min–max band per flow (goodput: + capacity)
    assert len(ax.get_lines()) == 6 and len(ax.collections) == 5
    assert len(fig.axes[1].get_lines()) == 5 and len(fig.axes[2].get_lines()) == 5


def test_nothing_is_drawn_for_a_flow_that_is_not_running(staggered):
    fig = staggered.plot(bin_s=0.1)
    flows = staggered.flows
    reno = flows.loc[flows.flow_id == 4]
    done = reno.loc[reno.active.astype(bool), "time_s"].max()  # the finite reno flow's last active sample
    assert not reno.active.astype(bool).iloc[-1] and done < 5.5, "the finite flow should finish well within the run"
    for ax in fig.axes[:3]:  # goodput, RTT, cwnd
        lines = {ln.get_label(): ln for ln in ax.get_lines()}
        x1 = _finite_x(lines["flow 1 (20 ms)"] if "flow 1 (20 ms)" in lines else ax.get_lines()[1])
        assert x1.min() > 2.0 - 0.1  # flow 1 starts at 2 s: nothing before (its first bin is (1.9, 2])
        x3 = _finite_x(ax.get_lines()[[ln.get_label() for ln in ax.get_lines()].index("flow 3 (40 ms)")]
                       if "flow 3 (40 ms)" in lines else ax.get_lines()[3])
        assert x3.min() > 2.0 - 0.1
        x4 = _finite_x(ax.get_lines()[[ln.get_label() for ln in ax.get_lines()].index("flow 4 (20 ms)")]
                       if "flow 4 (20 ms)" in lines else ax.get_lines()[4])
        assert 0.5 - 0.1 < x4.min() and x4.max() < done + 0.1  # from its start to its last byte, no cwnd after
    # the state strip: BBR flow 1's states only while it runs (from 2 s)
    strip = next(ax for ax in fig.axes if ax.get_ylabel() == "state")
    rows = {}
    for bars in strip.collections:
        for path in bars.get_paths():
            x0, y0 = path.vertices.min(axis=0)
            rows.setdefault(round(y0 + 0.4), []).append(x0)
    assert min(rows[0]) == pytest.approx(0.0, abs=0.011) and min(rows[1]) >= 2.0 - 0.011


def test_binning_draws_means_with_min_max_bands(staggered):
    fig = staggered.plot(bin_s=0.5)
    ax = fig.axes[0]
    line = next(ln for ln in ax.get_lines() if ln.get_label() == "flow 0 (20 ms)")
    x, y = (np.asarray(v, dtype=float) for v in line.get_data())
    keep = np.isfinite(x)
    assert list(x[keep]) == [0.25 + 0.5 * k for k in range(12)]
    f0 = staggered.flows[(staggered.flows.flow_id == 0) & (staggered.flows.time_s > 1.0) & (staggered.flows.time_s <= 1.5)]
    assert y[keep][2] == pytest.approx(f0.goodput_bps.mean() / 1e6)  # the bin (1, 1.5]: the samples' mean
    band = ax.collections[0]  # flow 0's band: min and max of the 125 ms goodputs in the bin (a quarter of it)
    verts = np.concatenate([p.vertices for p in band.get_paths()])
    in_bin = verts[np.isclose(verts[:, 0], 1.25)]
    sub = f0.groupby(np.ceil(f0.time_s.to_numpy() / 0.125 - 1e-9)).goodput_bps.mean()
    assert len(sub) == 4
    assert in_bin[:, 1].min() == pytest.approx(sub.min() / 1e6)
    assert in_bin[:, 1].max() == pytest.approx(sub.max() / 1e6)
    assert sub.min() > f0.goodput_bps.min() or sub.max() < f0.goodput_bps.max()  # narrower than the samples'
    assert "band: min–max of the 125 ms goodputs in it" in " ".join(t.get_text() for t in ax.texts)
    # the RTT panel's band is still the samples' min–max
    rtt_band = fig.axes[1].collections[0]
    rv = np.concatenate([p.vertices for p in rtt_band.get_paths()])
    r0 = f0.rtt_ms if f0.rtt_ms.notna().any() else f0.srtt_ms
    assert rv[np.isclose(rv[:, 0], 1.25)][:, 1].max() == pytest.approx(r0.max())


def test_goodput_band_sub_bins():
    assert plot.goodput_band_s(0.2, 0.01) == pytest.approx(0.05)
    assert plot.goodput_band_s(0.1, 0.01) == pytest.approx(0.05)  # a quarter would be under five samples
    assert plot.goodput_band_s(0.05, 0.01) is None  # the samples themselves


def test_paper_sizes_and_vector_pdf(staggered, tmp_path):
    import re

    from cclab.plot import PAPER_WIDTHS, fit_width, paper_style, save_figure

    for size, width_pt in (("column", 252), ("page", 515.52)):
        with paper_style(size):
            fig = fit_width(staggered.plot(), size)
        (pdf,) = save_figure(fig, tmp_path / size, ("pdf",))
        data = pdf.read_bytes()
        box = [float(v) for v in re.search(rb"/MediaBox \[ *([\d.]+) ([\d.]+) ([\d.]+) ([\d.]+)", data).groups()]
        assert box[2] == pytest.approx(width_pt, abs=0.5) and box[2] == pytest.approx(PAPER_WIDTHS[size] * 72, abs=0.5)
        assert b"/FontFile2" in data and b"/Type3" not in data  # TrueType embedded, no Type 3 fonts
        assert b"/Subtype /Image" not in data  # vector: lines and text, no raster image
    a = save_figure(staggered.plot(), tmp_path / "a", ("pdf",))[0].read_bytes()
    b = save_figure(staggered.plot(), tmp_path / "b", ("pdf",))[0].read_bytes()
    assert a == b  # no timestamp: the same figure gives the same bytes


def test_save_plot_writes_into_a_record_only_where_the_record_allows(tmp_path):
    # a cdf saved by default used to land at <record>/cdf.png, after which the record could no
    # longer be overwritten (a file cclab did not write); explicit paths such as <record>/summary
    # were taken too
    import cclab
    from cclab.record import RecordError

    out = tmp_path / "r"
    run = cclab.run({"name": "p", "duration": "1s", "link": {"rate": "10Mbps", "buffer": "1bdp"},
                     "flows": [{"cca": "cubic", "rtt": "20ms"}]}, out=out, plot=False)
    assert run.save_plot(kind="cdf", metric="rtt") == [out / "figures" / "cdf.png"]
    assert run.save_plot() == [out / "timeseries.png"]
    for bad in (out / "summary", out / "sub" / "x"):
        with pytest.raises(RecordError, match=r"lies in the run record .*expected .*figures"):
            run.save_plot(bad)
    assert not (out / "summary.png").exists() and not (out / "sub").exists()
    cclab.run({"name": "p", "duration": "1s", "link": {"rate": "10Mbps", "buffer": "1bdp"},
               "flows": [{"cca": "reno", "rtt": "20ms"}]}, out=out, plot=False, overwrite=True)  # still replaceable
