"""Sweep and time figures, each rendered from the committed fixtures
(tests/fixtures/sweep/, made by make_fixtures.py)."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pandas as pd
import pytest

from cclab import figures
from cclab.figures import FigureError, Target, draw, render, render_all
from cclab.figures.axes import axis_values
from cclab.metrics import dominant_period
from cclab.metrics import goodput_gain
from cclab.plot import color_for

FIX = Path(__file__).parent / "fixtures" / "sweep"


@pytest.fixture
def fx(tmp_path):
    """Copies of the fixture sweep directories (figures write into them)."""

    def get(name: str) -> Path:
        dst = tmp_path / name
        if not dst.exists():
            shutil.copytree(FIX / name, dst)
        return dst

    return get


def check_files(paths: list[Path]) -> None:
    assert sorted(p.suffix for p in paths) == [".png", ".svg"]
    png = next(p for p in paths if p.suffix == ".png")
    img = mpimg.imread(png)
    assert img.shape[0] > 200 and img.shape[1] > 300
    assert img[..., :3].std() > 0.05  # not blank
    svg = next(p for p in paths if p.suffix == ".svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg


def texts(fig) -> str:
    out = [fig.get_suptitle()]
    for ax in fig.axes:
        out += [ax.get_xlabel(), ax.get_ylabel(), ax.get_title()]
        leg = ax.get_legend()
        if leg:
            out += [t.get_text() for t in leg.get_texts()]
    return "\n".join(out)


def test_registry_lists_every_kind():
    assert {"line", "box", "heatmap", "loss", "series", "jain", "period", "timeseries"} <= set(figures.REGISTRY)


def test_box_plots_over_trials(fx, tmp_path):
    t = Target(fx("buffer"))
    fig = draw(t, "box", x="link.buffer", y="agg.loss_rate")
    ax = fig.axes[0]
    assert ax.get_ylabel() == "loss rate (%)" and ax.get_xlabel() == "buffer"
    assert [tk.get_text() for tk in ax.get_xticklabels()][:2] == ["0.25bdp", "0.5bdp"]
    assert [tx.get_text() for tx in ax.get_legend().get_texts()] == ["bbr", "bbr_shallow"]
    ((_, _, paths),) = list(render(t, [{"kind": "box", "x": "link.buffer", "y": "agg.loss_rate"}], tmp_path))
    check_files(paths)


def test_gain_heatmap(fx):
    t = Target(fx("grid"))
    fig = draw(t, "heatmap", x="link.rate", y="flows[0].rtt", facet="link.buffer",
               gain={"over": "flows[0].cca", "a": "bbr", "b": "cubic"})
    panels = [ax for ax in fig.axes if ax.images]
    assert [ax.get_title() for ax in panels] == ["buffer=100 KB", "buffer=10000 KB"]  # one display unit per axis
    # the cells' ticks too, the unit beside each value (the axis label names the field)
    ticks = [t.get_text() for t in panels[0].get_xticklabels()]
    assert ticks and all(t.endswith(" Mbit/s") for t in ticks), ticks
    assert panels[0].get_xlabel() == "bottleneck rate" and panels[0].get_ylabel() == "flows[0] RTT"
    assert all(t.get_text().endswith(" ms") for t in panels[0].get_yticklabels())
    # the cell (rtt=200ms, rate=1000Mbps, 100KB) is the gain of the trial means, via cclab.metrics
    df = t.results
    cell = df[(df["flows[0].rtt"] == "200ms") & (df["link.rate"] == "1000Mbps") & (df["link.buffer"] == "100KB")]
    g = {c: cell[cell["flows[0].cca"] == c]["agg.goodput_bps"].mean() for c in ("bbr", "cubic")}
    grid = panels[0].images[0].get_array()
    gain = goodput_gain(g["bbr"], g["cubic"])
    assert grid[3, 3] == pytest.approx(math.log2(1 + gain / 100))  # the ratio bbr/cubic on a log2 scale
    assert f"{gain:+.0f}" in [t.get_text() for t in panels[0].texts]  # the cell says the gain in %
    norm = panels[0].images[0].norm
    assert norm.vcenter == 0 and norm.vmin == -norm.vmax  # diverging, symmetric: ×2 as far as ×1/2
    assert norm.vmax == math.ceil(max(abs(v) for v in np.ravel(grid) if np.isfinite(v)))
    cbar = next(ax for ax in fig.axes if ax.get_label() == "<colorbar>")
    ticks = [t.get_text() for t in cbar.get_yticklabels()]
    assert "×1 (0 %)" in ticks and "×2 (+100 %)" in ticks and "×1/2 (−50 %)" in ticks
    assert "goodput gain of bbr over cubic" in texts(fig)
    assert panels[0].get_xlabel() == "bottleneck rate" and panels[0].get_ylabel() == "flows[0] RTT"
    with pytest.raises(FigureError, match="gain needs"):
        draw(t, "heatmap", x="link.rate", y="flows[0].rtt", gain={"over": "flows[0].cca"})


def test_retransmission_heatmaps_facet_grid(fx, tmp_path):
    t = Target(fx("grid"))
    spec = {"kind": "heatmap", "x": "link.rate", "y": "flows[0].rtt", "metric": "agg.retrans_segs",
            "facet": ["link.buffer", "flows[0].cca"], "name": "retrans"}
    ((_, name, paths),) = list(render(t, [spec], tmp_path / "out"))
    assert name == "retrans"
    check_files(paths)
    fig = draw(t, **spec)  # kind is the positional argument
    titles = [ax.get_title() for ax in fig.axes if ax.images]
    assert titles == ["buffer=100 KB, bbr", "buffer=100 KB, cubic", "buffer=10000 KB, bbr", "buffer=10000 KB, cubic"]


def test_share_vs_buffer_with_sample_iqr_band(fx):
    t = Target(fx("buffer"))
    fig = draw(t, "line", x="link.buffer", y="*.share", facet="flows[0].cca")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "buffer (BDP)" and ax.get_ylabel() == "share of goodput (%)"
    assert "25th–75th percentile over samples" in fig.get_suptitle()
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert set(lines) == {"bbr", "cubic"}
    assert ax.get_xscale() == "log" and ax.xaxis.get_transform().base == 2  # buffers double: log2
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.25", "0.5", "1", "1.5", "2", "3", "5", "8"]
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == ["bbr", "cubic"]
    assert lines["bbr"].get_color() == color_for("bbr") and lines["cubic"].get_color() == color_for("cubic")
    # x in BDP multiples, y = mean share in percent
    df = t.results
    sel = df[(df["flows[0].cca"] == "bbr") & (df["link.buffer"] == "2bdp")]
    x, y = lines["bbr"].get_data()
    i = list(x).index(2.0)
    assert y[i] == pytest.approx(100 * sel["bbr.share"].mean())
    assert len(ax.collections) == 2  # one band per line


def test_metric_vs_buffer_with_trial_iqr_band(fx, tmp_path):
    t = Target(fx("buffer"))
    fig = draw(t, "line", x="link.buffer", y="agg.loss_rate")
    assert "interquartile range over trials" in fig.get_suptitle()
    assert fig.axes[0].get_ylabel() == "loss rate (%)"
    ((_, _, paths),) = list(render(t, [{"kind": "line", "x": "link.buffer", "y": "agg.utilization"}], tmp_path))
    check_files(paths)


def test_throughput_vs_loss_log_x(fx, tmp_path):
    t = Target(fx("loss"))
    fig = draw(t, "loss")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "random loss (%)"
    assert ax.get_ylabel() == "goodput (Mbit/s)"
    labels = [ln.get_label() for ln in ax.get_lines()]
    assert labels == ["bbr", "cubic", "capacity × (1 − p)"]
    x, _ = ax.get_lines()[0].get_data()
    assert min(x) == pytest.approx(0.001) and max(x) == pytest.approx(50)
    ((_, _, paths),) = list(render(t, [{"kind": "loss"}], tmp_path))
    check_files(paths)


def test_time_figures_from_records(fx, tmp_path):
    t = Target(fx("records"))
    out = list(render(t, [{"kind": "jain"}, {"kind": "period"}, {"kind": "timeseries"},
                          {"kind": "series", "column": "queue_bytes"}], tmp_path / "f"))
    for _, name, paths in out:
        assert not isinstance(paths, Exception), (name, paths)
        check_files(paths)
    fig = draw(t, "jain")
    assert fig.axes[0].get_ylabel() == "Jain's fairness index" and fig.axes[0].get_xlabel() == "time (s)"
    assert [ln.get_label() for ln in fig.axes[0].get_lines()] == ["buffer=1 BDP", "buffer=2 BDP"]
    fig = draw(t, "series", column="queue_bytes")
    assert fig.axes[0].get_ylabel() == "queue (KB)"


def test_period_figure_finds_the_fixture_cycles(fx):
    t = Target(fx("records"))
    assert draw(t, "period").cclab_period_s == pytest.approx(20.0, abs=0.5)
    fig = draw(t, "period", point=1)
    assert fig.cclab_period_s == pytest.approx(12.0, abs=0.5)
    assert "dominant period 12.0 s" in fig.get_suptitle()


def test_dominant_period():
    dt = 0.1
    tt = np.arange(0, 120, dt)
    rng = np.random.default_rng(1)
    p, r, _ = dominant_period(0.5 + 0.2 * np.sin(2 * np.pi * tt / 20) + 0.05 * rng.standard_normal(tt.size), dt)
    assert p == pytest.approx(20, abs=0.3) and r > 0.8
    p, _, _ = dominant_period(np.sign(np.sin(2 * np.pi * tt / 7.5)), dt)  # square wave
    assert p == pytest.approx(7.5, abs=0.2)
    p, _, _ = dominant_period(np.linspace(0, 1, 500), dt)  # a trend is no cycle... (one crossing, no return)
    assert math.isnan(p)
    assert math.isnan(dominant_period(np.ones(100), dt)[0])
    assert math.isnan(dominant_period(np.ones(3), dt)[0])


def test_axis_values_use_units():
    av = axis_values("link.rate", ["40Mbps", "1Gbps", "120Mbps"])
    assert av.label == "bottleneck rate (Mbit/s)" and av.numeric == [40, 1000, 120]
    assert av.texts() == ["40 Mbit/s", "1000 Mbit/s", "120 Mbit/s"] and av.text("1Gbps") == "1000 Mbit/s"
    av = axis_values("link.buffer", ["100KB", "10MB"])
    assert av.numeric == [100, 10000] and av.label == "buffer (KB)" and av.log
    assert axis_values("flows[1].start", ["200ms", "1s"]).numeric == [200, 1000]
    assert axis_values("link.loss", [0.001, 0.5]).label == "random loss (%)"
    assert axis_values("flows[0].cca", ["bbr", "cubic"]).numeric is None
    assert axis_values("link.buffer", ["1bdp", "100KB"]).numeric is None  # mixed kinds: categories


def test_errors_and_cli(fx, tmp_path):
    import typer
    from typer.testing import CliRunner

    from cclab.cli_sweep import register

    t = Target(fx("buffer"))
    with pytest.raises(FigureError, match="not an axis"):
        draw(t, "line", x="link.rate")
    with pytest.raises(FigureError, match="unknown figure kind"):
        draw(t, "pie")
    with pytest.raises(FigureError, match="no results column"):
        draw(t, "line", y="agg.nothing")
    with pytest.raises(FigureError, match="neither a sweep"):
        Target(tmp_path)
    app = typer.Typer()
    register(app)
    r = CliRunner().invoke(app, ["plot", str(fx("buffer")), "--out", str(tmp_path / "p")])
    assert r.exit_code == 0, r.output
    assert len(list((tmp_path / "p").glob("*.svg"))) >= 3
    r = CliRunner().invoke(app, ["plot", str(fx("loss")), "--kind", "loss", "--out", str(tmp_path / "q")])
    assert r.exit_code == 0, r.output
    assert sorted(p.suffix for p in (tmp_path / "q").iterdir()) == [".png", ".svg"]
    r = CliRunner().invoke(app, ["plot", str(fx("records")), "--list"])
    assert "heatmap" in r.output and "period" in r.output


@pytest.mark.parametrize("name", ["buffer", "grid", "loss", "records"])
def test_every_default_figure_with_several_lines_has_a_legend(fx, name):
    """Before: the default share figure of a sweep could come without a legend."""
    t = Target(fx(name))
    for spec in figures.default_specs(t):
        fig = draw(t, **spec)
        for ax in fig.axes:
            labelled = [ln.get_label() for ln in ax.get_lines() if not ln.get_label().startswith("_")]
            if len(labelled) < 2:
                continue
            # the panel's own legend, or one the figure shares (the time-series figure's is on its first panel)
            legends = [a.get_legend() for a in fig.axes if a.get_legend()] + list(fig.legends)
            assert legends, (name, spec, labelled)
            shown = {tx.get_text() for leg in legends for tx in leg.get_texts()}
            assert set(labelled) <= shown, (name, spec, labelled, shown)


def test_plot_for_a_paper_column_writes_vector_pdf(fx, tmp_path):
    import re

    import typer
    from typer.testing import CliRunner

    from cclab.cli_sweep import register

    app = typer.Typer()
    register(app)
    r = CliRunner().invoke(app, ["plot", str(fx("buffer")), "--size", "column", "--out", str(tmp_path / "p")])
    assert r.exit_code == 0, r.output
    pdfs = sorted((tmp_path / "p").iterdir())
    assert pdfs and all(p.suffix == ".pdf" for p in pdfs)
    for pdf in pdfs:
        data = pdf.read_bytes()
        width = float(re.search(rb"/MediaBox \[ *[\d.]+ [\d.]+ ([\d.]+)", data).group(1))
        assert width == pytest.approx(3.5 * 72, abs=0.5), pdf.name  # one paper column
        assert b"/Subtype /Image" not in data and b"/FontFile2" in data
    fig = draw(Target(fx("buffer")), "line", x="link.buffer", y="agg.utilization", size="page")
    assert fig.get_size_inches()[0] == pytest.approx(7.16)
    assert fig.axes[0].xaxis.label.get_fontsize() == 8  # paper text size
    bad = CliRunner().invoke(app, ["plot", str(fx("buffer")), "--format", "gif"])
    assert bad.exit_code == 2 and "expected png, svg or pdf" in bad.output


def test_a_trial_that_does_not_exist_an_unknown_facet_and_a_table_are_refused(fx):
    from cclab.figures import FigureError

    t = Target(fx("records"))
    with pytest.raises(FigureError, match=r"trial = 99: .* has no complete run of that trial; expected one of 0"):
        draw(t, "jain", trial=99)  # before: every trial overlaid, as if trial 0 had been asked for
    with pytest.raises(FigureError, match=r"table = '\.\./\.\./x/flows'; expected one of link, flows"):
        draw(t, "series", table="../../x/flows")  # before: a Parquet file read from outside the record
    with pytest.raises(FigureError, match=r"facet 'nope' is not an axis"):
        draw(t, "scatter", facet="nope")


def test_plot_cli_says_what_is_wrong_once(run_record, record_parts, tmp_path):
    """Fuzz findings: a bad --size was reported once per figure (five times); --list needed a
    TARGET; a record without its manifest was "neither a sweep directory nor a complete run
    record" where the record check knows exactly what is missing."""
    import typer
    from typer.testing import CliRunner

    from cclab.cli_sweep import register

    app = typer.Typer()
    register(app)
    r = CliRunner().invoke(app, ["plot", str(run_record), "--size", "huge", "--out", str(tmp_path / "p")])
    assert r.exit_code == 2 and r.output.count("huge") == 1, r.output
    assert "--size 'huge': expected one of column, page" in r.output and not (tmp_path / "p").exists()
    r = CliRunner().invoke(app, ["plot", str(run_record), "-f", "PDF", "-k", "jain", "--out", str(tmp_path / "q")])
    assert r.exit_code == 0 and [p.name for p in (tmp_path / "q").iterdir()] == ["00-jain.pdf"], r.output  # as the API
    r = CliRunner().invoke(app, ["plot", "--list"])
    assert r.exit_code == 0 and "heatmap" in r.output, r.output
    r = CliRunner().invoke(app, ["plot"])
    assert r.exit_code == 2 and "missing TARGET" in r.output, r.output
    from cclab.record import write_run

    current = write_run(tmp_path / "current", **record_parts)  # a record with a manifest (the fixture predates them)
    (current / "manifest.json").unlink()
    for cmd in ("plot", "report"):
        r = CliRunner().invoke(app, [cmd, str(current)])
        assert r.exit_code == 2 and "manifest.json is missing" in r.output, (cmd, r.output)
    with pytest.raises(FigureError, match="nor a run record"):
        Target(tmp_path / "empty-dir-that-is-not-there")


@pytest.mark.parametrize(
    ("column", "label", "scale"),
    [
        # before: these printed as bare fractions or bit/s, and every link's loss as "at the bottleneck"
        ("per_link.link.goodput_utilization", "link:link goodput utilization (%)", 100.0),
        ("per_link.core.loss_rate", "link:core loss rate (%)", 100.0),
        ("cubic.state_time.probe_bw", "cubic time in probe_bw (%)", 100.0),
        ("agg.mark_rate", "CE mark rate (%)", 100.0),
        ("flow1.goodput_window_bps", "flow1 goodput window (Mbit/s)", 1e-6),
        ("per_link.link.throughput_bps", "link:link throughput (Mbit/s)", 1e-6),
        ("agg.drops.overflow", "drops (overflow) (packets)", 1.0),
        ("agg.fct_s_p99", "fct p99 (s)", 1.0),
        ("flow0.delivered_bytes", "flow0 delivered (KB)", 1e-3),
        ("agg.goodput_bps", "goodput (Mbit/s)", 1e-6),
        ("agg.queue_delay_ms_p50", "queueing delay p50 (ms)", 1.0),
    ],
)
def test_every_results_column_gets_its_unit(column, label, scale):
    from cclab.figures.sweep_figs import metric_label

    assert metric_label(column) == (label, scale)


def test_the_period_figure_says_what_the_summary_says(fx):
    # Before: the figure tested the raw 10 ms shares (title "20.5 s, p = 1.7e-27" beside a summary of
    # 21.0 s, p = 1.85e-7), and its lags assumed one sample per sample_interval (these records keep
    # the flows every 100 ms).
    from cclab import metrics

    t = Target(fx("records"))
    for point in (0, 1):
        run = t.run(point)
        fig = draw(t, "period", point=point)
        alg = fig.get_suptitle().split(": ", 1)[1].split(" share", 1)[0]
        entry = metrics.summary(run.flows, run.link, run.ir)["per_algorithm"][alg]
        assert fig.cclab_period_s == entry["share_period_s"]
        assert fig.cclab_period.p_value == pytest.approx(entry["share_period_p"], rel=1e-4)  # float32 sums
        assert fig.get_axes()[1].get_lines()[0].get_xdata()[1] == pytest.approx(1.0)  # lags in 1 s bins


def test_the_jain_figure_draws_the_summary_s_series(fx):
    # Before: a moving mean of the per-sample index, ~0.78 where the summary's jain_1s_mean said 0.90–0.96.
    from cclab import metrics

    t = Target(fx("records"))
    run = t.run(0)
    line = draw(t, "jain").axes[0].get_lines()[0]  # the first point's run
    want = metrics.jain_over_time(run.flows, run.ir, 1.0, window=False)
    assert list(line.get_xdata()) == pytest.approx(list(want.index))
    assert list(line.get_ydata()) == pytest.approx(list(want.to_numpy()))
    window = want[(want.index > run.summary["window"]["from_s"]) & (want.index <= run.summary["window"]["to_s"])]
    assert window.mean() == pytest.approx(metrics.summary(run.flows, run.link, run.ir)["aggregate"]["jain_1s_mean"])


@pytest.mark.parametrize(("values", "log2"), [(["0.5bdp", "4bdp"], True), (["1bdp", "2bdp"], False),
                                              (["0.25bdp", "1bdp", "8bdp"], True)])  # fmt: skip
def test_a_buffer_axis_spanning_x4_is_log2_with_two_values_too(values, log2):
    from cclab.figures.axes import axis_values

    ax = axis_values("link.buffer", values)
    assert bool(ax.log) is log2 and (ax.base == 2 if log2 else True)


def test_legends_and_panel_titles_show_values_in_the_axis_display_unit():
    import pandas as pd

    from cclab.figures.sweep_figs import _groups, param_label

    df = pd.DataFrame({"link.rate": ["40Mbps", "1Gbps"], "flows[0].rtt": ["10ms", "10ms"], "x": [1, 2]})
    labels = [lab for lab, _ in _groups(df, ["link.rate", "flows[0].rtt"])]
    # the rate axis's unit is chosen from all its values (Mbit/s: 40 is its smallest), not per value
    assert labels == ["bottleneck rate=40 Mbit/s, flows[0] RTT=10 ms", "bottleneck rate=1000 Mbit/s, flows[0] RTT=10 ms"]
    assert param_label("link.buffer", "0.25bdp") == "buffer=0.25 BDP"
    assert param_label("link.loss", 0.01) == "random loss=1 %"
    assert param_label("flows[0].cca", "bbr") == "bbr"
    assert param_label("link.qdisc", "fq_codel") == "qdisc=fq_codel"  # a category: as written
