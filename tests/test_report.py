"""`cclab report`: one self-contained HTML page, checked in headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import matplotlib.image as mpimg
import pytest

from cclab.report import write_report

FIX = Path(__file__).parent / "fixtures" / "sweep"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian package `chromium`)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> Path:
    return Path(shutil.copytree(FIX / "records", tmp_path_factory.mktemp("rep") / "records"))


@pytest.fixture(scope="module")
def sweep_page(records) -> Path:
    return write_report(records)


def self_contained(page: str) -> None:
    # nothing is fetched: every src is a data: URI, no stylesheet/script/link points anywhere
    srcs = re.findall(r'\bsrc="([^"]*)"', page)
    assert srcs and all(s.startswith("data:image/") for s in srcs)
    assert not re.search(r'<link\b|<script\b[^>]*\bsrc=|@import|url\(', page)
    assert not re.search(r'\bhref="(?!#)', page)


def test_sweep_report(records, sweep_page):
    path = sweep_page
    assert path == records / "report.html"
    page = path.read_text()
    self_contained(page)
    assert "<h1>Sweep: fixture-records</h1>" in page
    assert "BBR vs CUBIC on 10 Mbps / 40 ms" in page  # description
    assert '&quot;link.buffer&quot; = [&quot;1bdp&quot;, &quot;2bdp&quot;]' in page  # the sweep file, escaped
    assert "agg.goodput_bps" in page and "bbr.share" in page  # the results table
    assert page.count("<figure") >= 4  # lines vs buffer, share, jain, time series
    assert page.count("data:image/svg+xml;base64,") >= 3


def test_run_report(records, tmp_path):
    run = records / "runs" / "fixture0000000000000"
    out = write_report(run, tmp_path / "r" / "run.html")
    page = out.read_text()
    self_contained(page)
    assert "<h1>Run: fixture-bbr-vs-cubic</h1>" in page
    for text in ("per algorithm", "per flow", "aggregate", "engine_version", "# fixture"):
        assert text in page
    assert 'id="00-timeseries"' in page and 'id="02-period"' in page and 'id="01-jain"' in page


def test_results_only_sweep_report(tmp_path):
    d = Path(shutil.copytree(FIX / "grid", tmp_path / "grid"))
    page = write_report(d).read_text()
    self_contained(page)
    assert 'id="goodput-gain"' in page and 'id="retransmissions"' in page  # the sweep file's [[figures]]
    assert "±" in page  # 2 trials: confidence intervals


def test_report_cli(tmp_path):
    import typer
    from typer.testing import CliRunner

    from cclab.cli_sweep import register

    app = typer.Typer()
    register(app)
    loss = shutil.copytree(FIX / "loss", tmp_path / "loss")
    r = CliRunner().invoke(app, ["report", str(loss), "--out", str(tmp_path / "x.html")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "x.html").stat().st_size > 10_000
    r = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert r.exit_code == 2 and "neither a sweep directory" in r.output


def chromium(*args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=120)


@needs_chromium
@pytest.mark.timeout(300)
def test_report_renders_in_headless_chromium(sweep_page, tmp_path):
    url = sweep_page.resolve().as_uri()
    # every figure decodes (the page's load handler counts them)
    dom = chromium("--dump-dom", url).stdout
    m = re.search(r'data-figures-loaded="(\d+)/(\d+)"', dom)
    assert m, dom[:500]
    assert m.group(1) == m.group(2) and int(m.group(2)) >= 4
    # and the page paints: a screenshot that is not blank
    shot = tmp_path / "shot.png"
    chromium("--window-size=1280,2400", f"--screenshot={shot}", url)
    img = mpimg.imread(shot)
    assert img.shape[:2] == (2400, 1280)
    assert img[..., :3].std() > 0.05
    assert (img[..., :3].mean(axis=2) < 0.5).mean() > 0.005  # some dark pixels: text and lines


def test_the_sweep_table_cells_are_table_s_own_a_median_for_a_percentile():
    # Before: a percentile's cell read "138.9 ± 1.049" under a caption saying "mean ± Student's t",
    # where it was the median with a bootstrap interval (`cclab table`: "138.9 [138.9, 141] (median, n=3)").
    import pandas as pd

    from cclab.report import _grouped_table
    from cclab.store import describe_interval, group_over_trials

    df = pd.DataFrame({"link.buffer": ["4bdp"] * 3, "trial": [0, 1, 2],
                       "agg.goodput_bps": [9.0e6, 9.5e6, 9.9e6], "agg.queue_delay_ms_p50": [138.936, 138.9, 141.07]})  # fmt: skip
    df.attrs["axes"] = ["link.buffer"]
    g = group_over_trials(df, ["agg.goodput_bps", "agg.queue_delay_ms_p50"])
    html = _grouped_table(g, ["link.buffer"], ["agg.goodput_bps", "agg.queue_delay_ms_p50"])
    row = g.iloc[0]
    assert "(median, n=3)" in describe_interval(row, "agg.queue_delay_ms_p50")
    assert "138.9 [" in html and "(median, n=3)" in html
    assert "± " in html and "(n=3)" in html  # the goodput: a mean with its interval
