"""The stacked time-series figure of one run, the colours and sizes every figure shares.

Panels, sharing one x axis in seconds:

1. goodput per flow (Mbit/s) with the bottleneck capacity,
2. RTT per flow (ms),
3. cwnd per flow (KB),
4. bottleneck queue (KB) and queueing delay (ms, twin axis),
5. drops per second by cause (overflow, random loss, AQM),
6. (when a flow reports states in ``shade_states``) one strip per flow with its
   algorithm's state — BBR's STARTUP / DRAIN / PROBE_BW / PROBE_RTT — drawn
   only while the flow runs (the kernel backend writes the same state names).

**Binned, with min–max bands.** Samples come every ``sample_interval``
(10 ms by default); drawn as lines they alias (in-order delivery is bursty,
a 60 s run has 6 000 points per flow). Each panel is therefore drawn in bins
of ``bin_s`` seconds (default :func:`auto_bin_s`: the smallest of 0.1 s, 0.2 s,
0.5 s, 1 s, 2 s, 5 s, 10 s, 20 s, 60 s giving at most :data:`MAX_BINS` = 300 bins
and never finer than the samples — 0.1 s up to a 30 s run, 0.2 s up to 60 s):
the line is the
bin's mean of the samples (for goodput: the goodput over the bin), the band
spans the minimum and maximum sample in the bin — for goodput, the minimum
and maximum goodput over a quarter of the bin (at least five samples,
:func:`goodput_band_s`): a single 10 ms sample of in-order delivery is not a
rate (it holds what the receiver released when a hole was filled). The
resolution is written in the goodput panel ("line: mean over 200 ms bins;
band: min–max of the 50 ms goodputs in it").

**Only while a flow runs.** A flow's samples before it starts and after it
finishes (the record's ``active`` column) are not drawn — no STARTUP before
the start, no cwnd after the last byte.

**Colours.** :data:`PALETTE` is Okabe and Ito's colour-blind-safe set (one
hue per algorithm, the same in every figure); each flow gets its own colour,
a shade of its algorithm's hue (:func:`flow_colors`), and the legend groups
the flows under their algorithm. With more than :data:`MAX_FLOW_LINES` flows
the per-flow panels show one line per algorithm (goodput: the algorithm's
total; RTT, cwnd: the mean over its flows).

**Paper sizes.** :data:`PAPER_WIDTHS` (one column 3.5 in, two columns
7.16 in: IEEE/ACM templates); :func:`paper_style` is the rc context figures
are drawn in for a paper (8 pt text); :func:`save_figure` writes PDF with
embedded TrueType fonts (no Type 3), and SVG/PDF without a timestamp.

Figures are ``matplotlib.figure.Figure`` objects built without pyplot (no
global state, no GUI backend: renders headless, and does not switch a
notebook's backend). Everything is read from the record's columns
(``cclab.metrics``); nothing is computed here that is not drawn.
"""

from __future__ import annotations

import colorsys
import contextlib
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.colors import to_hex, to_rgb
from matplotlib.figure import Figure

from cclab.describe import _fmt_rate
from cclab.errors import printable
from cclab.fsutil import FIGURE_FORMATS, atomic_file, figure_formats
from cclab.metrics import in_window, measure_window_ns, with_link_column

__all__ = [
    "MAX_BINS", "PALETTE", "PAPER_WIDTHS", "STATE_COLORS", "auto_bin_s", "bin_series", "color_for", "flow_colors",
    "figure_timeseries", "grouped_legend", "paper_style", "plot_run", "save_figure",
    "bottleneck_link", "figure_links", "figure_topology",
]  # fmt: skip

#: Okabe & Ito (2008), "Color Universal Design": distinguishable with every common colour-vision deficiency.
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442")
#: One colour per algorithm, the same in every figure (Okabe–Ito; yellow, hard to see on white, last).
PALETTE: dict[str, str] = {
    "cubic": "#0072B2",  # blue
    "bbr": "#E69F00",  # orange
    "reno": "#009E73",  # bluish green
    "bbr3": "#D55E00",  # vermillion
    "bbr2": "#CC79A7",  # reddish purple
    "vegas": "#56B4E9",  # sky blue
    "dctcp": "#000000",  # black
}
_OTHER_COLORS = ("#882255", "#44AA99", "#999933", "#332288", "#AA4499", "#117733", "#88CCEE", "#DDCC77")  # Tol's muted
_LINESTYLES = ("-", "--", ":", "-.", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)))

#: States shaded by default, with their colours (others in the set get a cycle colour).
STATE_COLORS: dict[str, str] = {
    "STARTUP": "#fdae61",
    "DRAIN": "#fee08b",
    "PROBE_BW": "#d9ef8b",
    "PROBE_RTT": "#91bfdb",
    # BBRv3's (and BBRv2's) PROBE_BW sub-phases, as the engine names them (cc/bbr3 STATE_NAMES)
    "PROBE_BW_DOWN": "#fee08b",
    "PROBE_BW_CRUISE": "#d9ef8b",
    "PROBE_BW_REFILL": "#a6d96a",
    "PROBE_BW_UP": "#66bd63",
}
DEFAULT_SHADE_STATES = frozenset(STATE_COLORS)
MAX_FLOW_LINES = 12
MAX_STATE_ROWS = 6
#: Most bins across a run (per panel and line) for the default resolution.
MAX_BINS = 300
#: Finest default bin: in-order delivery is bursty at the RTT scale (a repaired hole releases a
#: window at once), so goodput in bins much below 0.1 s shows the bursts, not the rate.
MIN_BIN_S = 0.1
_BIN_LADDER = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 60.0)
_DROP_STYLE = {"overflow": ("#D55E00", "overflow"), "random": ("#999999", "random loss"), "aqm": ("#0072B2", "AQM"),
               "policer": ("#CC79A7", "policer")}

#: Figure widths (inches) of one and two columns of a paper (IEEE/ACM two-column templates).
PAPER_WIDTHS: dict[str, float] = {"column": 3.5, "page": 7.16}


def color_for(cca: str) -> str:
    """The colour of an algorithm: :data:`PALETTE`, else a stable pick from a fixed colour-blind-safe set."""
    if cca in PALETTE:
        return PALETTE[cca]
    return _OTHER_COLORS[zlib.crc32(cca.encode()) % len(_OTHER_COLORS)]


def _shade(color: str, k: int, n: int) -> str:
    """The k-th of n shades of ``color``: the same hue, lightness spread over ±0.16 around it."""
    if n <= 1:
        return to_hex(color)
    h, l, s = colorsys.rgb_to_hls(*to_rgb(color))
    lo, hi = max(0.2, l - 0.16), min(0.78, l + 0.16)
    return to_hex(colorsys.hls_to_rgb(h, lo + (hi - lo) * k / (n - 1), s))


def flow_colors(ir: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
    """Per flow id: ``color`` (a shade of its algorithm's hue, distinct for every flow of it),
    ``linestyle`` (by position within the algorithm, for a second cue), ``label`` and ``cca``."""
    by_cca: dict[str, list[Mapping[str, Any]]] = {}
    for f in ir["flows"]:
        by_cca.setdefault(str(f["cca"]), []).append(f)
    out: dict[int, dict[str, Any]] = {}
    for cca, flows in by_cca.items():
        for k, f in enumerate(flows):
            rtt = f.get("rtt_ns")
            label = f"flow {f['id']}" + (f" ({rtt / 1e6:g} ms)" if rtt else "")
            out[int(f["id"])] = {"color": _shade(color_for(cca), k, len(flows)),
                                 "linestyle": _LINESTYLES[k % len(_LINESTYLES)], "label": label, "cca": cca}  # fmt: skip
    return out


def grouped_legend(owner: Any, entries: list[tuple[str, Any, str]], **options: Any) -> Any:
    """A legend with one column per group (algorithm): the group's name in bold on top, its
    entries below. ``entries``: ``(group, handle, label)`` in order; ``owner`` an Axes or Figure."""
    from matplotlib.lines import Line2D

    groups: dict[str, list[tuple[Any, str]]] = {}
    for group, handle, label in entries:
        groups.setdefault(group, []).append((handle, label))
    rows = max((len(v) for v in groups.values()), default=0) + 1
    handles, labels, bold = [], [], []
    blank = Line2D([], [], linestyle="none")
    for group, items in groups.items():  # legends fill column-major: pad each column to `rows`
        column = [(blank, group)] + items + [(blank, "")] * (rows - 1 - len(items))
        for i, (h, lab) in enumerate(column):
            handles.append(h)
            labels.append(lab)
            bold.append(i == 0)
    leg = owner.legend(handles, labels, ncols=max(1, len(groups)), **options)
    for text, b in zip(leg.get_texts(), bold):
        if b:
            text.set_fontweight("bold")
    return leg


# --------------------------------------------------------------------------------------- binning


def auto_bin_s(duration_s: float, sample_s: float) -> float:
    """The default bin width: the smallest step of the ladder of at least :data:`MIN_BIN_S` (and
    one sample) with at most :data:`MAX_BINS` bins over the run."""
    for step in _BIN_LADDER:
        if step >= max(sample_s, MIN_BIN_S) - 1e-12 and duration_s / step <= MAX_BINS:
            return step
    return _BIN_LADDER[-1]


def bin_series(time_s: np.ndarray, values: np.ndarray, bin_s: float, keys: np.ndarray | None = None,
               sub_s: float | None = None) -> pd.DataFrame:  # fmt: skip
    """Mean, min and max of ``values`` per bin of ``bin_s`` (and per key): columns ``key``, ``t``
    (the bin's centre), ``mean``, ``min``, ``max``, ``n``. A sample at time t stands for the
    interval before it, so it belongs to the bin (k·bin_s, (k+1)·bin_s] that holds t. NaN samples
    (inactive, or no data) are left out; a bin without any is absent. With ``sub_s`` (a divisor
    of ``bin_s``), min and max are those of the sub-bins' means instead of the single samples'."""
    t = np.asarray(time_s, dtype=float)
    v = np.asarray(values, dtype=float)
    keep = np.isfinite(v)
    key = (np.zeros(t.size, np.int64) if keys is None else np.asarray(keys))[keep]
    b = np.ceil(t[keep] / bin_s - 1e-9).astype(np.int64) - 1
    df = pd.DataFrame({"key": key, "b": b, "v": v[keep]})
    if df.empty:
        return pd.DataFrame({"key": [], "t": [], "mean": [], "min": [], "max": [], "n": []})
    g = df.groupby(["key", "b"], sort=True)["v"].agg(["mean", "min", "max", "count"]).reset_index()
    if sub_s is not None and sub_s < bin_s:
        df["s"] = np.ceil(t[keep] / sub_s - 1e-9).astype(np.int64) - 1
        sub = df.groupby(["key", "b", "s"], sort=True)["v"].mean().groupby(level=["key", "b"]).agg(["min", "max"])
        g = g.drop(columns=["min", "max"]).merge(sub.reset_index(), on=["key", "b"])
    g["t"] = (g["b"] + 0.5) * bin_s
    return g.rename(columns={"count": "n"})[["key", "t", "mean", "min", "max", "n"]]


def goodput_band_s(bin_s: float, sample_s: float) -> float | None:
    """The sub-bin the goodput band is drawn from: a quarter of the bin, at least five samples
    (None: the bin itself is that short). A single 10 ms sample of in-order delivery is not a
    rate — it holds whatever a receiver released after a hole was filled, often several times
    the link's rate — so its min–max would only show those releases."""
    sub = max(bin_s / 4, 5 * sample_s)
    for div in (4, 2):
        if bin_s / div >= sub - 1e-12:
            return bin_s / div
    return None


def _draw_binned(ax, binned: pd.DataFrame, bin_s: float, style: Mapping[str, Any], band: bool = True,
                 scale: float = 1.0, lw: float = 1.1) -> Any:  # fmt: skip
    """One line (bin means) with its min–max band; gaps (bins without samples) stay gaps."""
    if binned.empty:
        return None
    t = binned["t"].to_numpy()
    gap = np.diff(t) > 1.5 * bin_s  # break the line where bins are missing (flow not running)
    idx = np.insert(np.arange(1, t.size)[gap], 0, 0)
    xs, ys, lo, hi = [], [], [], []
    for part in np.split(np.arange(t.size), idx[1:]):
        xs += [*t[part], np.nan]
        ys += [*(binned["mean"].to_numpy()[part] * scale), np.nan]
        lo += [*(binned["min"].to_numpy()[part] * scale), np.nan]
        hi += [*(binned["max"].to_numpy()[part] * scale), np.nan]
    (line,) = ax.plot(xs, ys, lw=lw, color=style["color"], linestyle=style.get("linestyle", "-"),
                      label=style.get("label"))  # fmt: skip
    if band:
        ax.fill_between(xs, lo, hi, color=style["color"], alpha=0.18, lw=0, zorder=line.get_zorder() - 0.5)
    return line


# --------------------------------------------------------------------------------------- the figure


def _active_values(flows: pd.DataFrame, column: str) -> np.ndarray:
    """``column`` as floats, NaN where the flow is not running (before its start, after it finished)."""
    v = pd.to_numeric(flows[column], errors="coerce").to_numpy(dtype=float)
    if "active" in flows:
        v = np.where(flows["active"].to_numpy(dtype=bool), v, np.nan)
    return v


def _per_flow_or_algorithm(flows: pd.DataFrame, column: str, per_flow: bool, how: str, bin_s: float,
                           styles: Mapping[int, Mapping[str, Any]], sub_s: float | None = None
                           ) -> Iterator[tuple[dict[str, Any], pd.DataFrame]]:  # fmt: skip
    """(style, binned frame) per flow, or per algorithm (``how``: the algorithm's ``sum`` or ``mean``
    over its running flows at each sample, then binned)."""
    if flows.empty or column not in flows:
        return
    values = _active_values(flows, column)
    if per_flow:
        b = bin_series(flows["time_s"].to_numpy(), values, bin_s, flows["flow_id"].to_numpy(dtype=np.int64), sub_s)
        for fid, d in b.groupby("key", sort=True):
            yield dict(styles[int(fid)]), d
        return
    counts: dict[str, int] = {}
    for s in styles.values():
        counts[s["cca"]] = counts.get(s["cca"], 0) + 1
    df = pd.DataFrame({"time_s": flows["time_s"].to_numpy(), "cca": flows["cca"].astype(str).to_numpy(), "v": values})
    agg = df.dropna(subset=["v"]).groupby(["cca", "time_s"], sort=False)["v"].agg(how).reset_index()
    word = "total" if how == "sum" else "mean"
    for cca, d in agg.groupby("cca", sort=False):
        style = {"color": color_for(str(cca)), "linestyle": "-", "cca": str(cca),
                 "label": f"{word} of {counts.get(str(cca), 0)} flows"}  # fmt: skip
        yield style, bin_series(d["time_s"].to_numpy(), d["v"].to_numpy(), bin_s, sub_s=sub_s)


def _state_spans(times: np.ndarray, states: pd.Series, dt: float) -> list[tuple[str, float, float]]:
    """Runs of equal state as (name, start, end) with the interval (t − dt, t] of each sample."""
    vals = states.to_numpy(dtype=object)
    spans = []
    start = 0
    for i in range(1, len(vals) + 1):
        if i == len(vals) or vals[i] != vals[start]:
            if isinstance(vals[start], str):
                spans.append((vals[start], float(times[start]) - dt, float(times[i - 1])))
            start = i
    return spans


def _flows_interval_s(flows: pd.DataFrame, ir: Mapping[str, Any]) -> float:
    """The per-flow sample interval (a record may keep flows coarser than the link)."""
    rec = (ir.get("record") or {}).get("flows_interval_ns")
    if rec:
        return float(rec) / 1e9
    t = np.unique(flows["time_s"].to_numpy()[: 10_000]) if len(flows) else np.array([])
    if t.size > 1:
        return float(np.median(np.diff(t)))
    return ir.get("sample_interval_ns", 0) / 1e9


def figure_timeseries(
    flows: pd.DataFrame,
    link: pd.DataFrame,
    ir: Mapping[str, Any],
    *,
    shade_states: Iterable[str] = DEFAULT_SHADE_STATES,
    title: str | None = None,
    bin_s: float | None = None,
    bands: bool = True,
    width: float | None = None,
) -> Figure:
    """Build the stacked time-series figure (a matplotlib ``Figure``, Agg canvas).

    ``bin_s``: the bin width in seconds (default :func:`auto_bin_s`); ``bands``:
    draw the min–max band of each bin; ``width``: the figure width in inches
    (e.g. ``PAPER_WIDTHS["page"]``; default 11).
    """
    shade = set(shade_states)
    duration_s = ir["duration_ns"] / 1e9
    sample_s = ir.get("sample_interval_ns", 0) / 1e9
    flows_s = _flows_interval_s(flows, ir)
    if bin_s is not None and (isinstance(bin_s, bool) or not isinstance(bin_s, (int, float))
                              or not np.isfinite(bin_s) or bin_s <= 0):
        raise ValueError(f"bin_s: {bin_s!r} is not a bin width; expected a number of seconds > 0, "
                         "or none for the automatic width")  # fmt: skip
    bin_s = float(bin_s) if bin_s is not None else auto_bin_s(duration_s, max(sample_s, flows_s))
    styles = flow_colors(ir)
    per_flow = len(ir["flows"]) <= MAX_FLOW_LINES
    # A topology: the capacity line and the queueing delay are the bottleneck link's, the queue
    # panel has a line per link, the drops are summed over links (figure_links: a panel per link).
    all_links = with_link_column(link)
    names = list(dict.fromkeys(all_links["link"].astype(str)))
    multi = len(names) > 1
    main_name = bottleneck_link(all_links, ir) if multi else (names[0] if names else "link")
    link = all_links.loc[all_links["link"].astype(str) == main_name] if multi else all_links
    state_flows: list[int] = []
    if "state" in flows and shade and len(flows):
        running = flows.loc[flows["active"].astype(bool)] if "active" in flows else flows
        shaded = running.loc[running["state"].isin(shade), "flow_id"].unique()
        state_flows = sorted(int(f) for f in shaded)
    n_state_flows = len(state_flows)
    state_flows = state_flows[:MAX_STATE_ROWS]
    n_panels = 5 + (1 if state_flows else 0)
    ratios = [3, 2, 2, 2, 1.3] + ([0.3 * len(state_flows) + 0.4] if state_flows else [])
    w = width or 11.0
    fig = Figure(figsize=(w, (2.2 * sum(ratios) / 1.9 + 1) * (w / 11.0) ** 0.5), layout="constrained")
    axes = fig.subplots(n_panels, 1, sharex=True, gridspec_kw={"height_ratios": ratios})
    ax_gp, ax_rtt, ax_cwnd, ax_q, ax_drop = axes[:5]
    fig.suptitle(title if title is not None else f"{printable(str(ir.get('name', 'run')))} (seed {ir.get('seed')})",
                 parse_math=False)

    legend_entries: list[tuple[str, Any, str]] = []
    cap_top = 0.0
    if len(link) and "capacity_bps" in link and link["capacity_bps"].notna().any():
        cap = bin_series(link["time_s"].to_numpy(), link["capacity_bps"].to_numpy(dtype=float), bin_s)
        (cl,) = ax_gp.plot(cap["t"], cap["mean"] / 1e6, color="0.35", lw=0.9, drawstyle="steps-mid", zorder=1)
        legend_entries.append(("link", cl, "capacity"))
        cap_top = float(cap["mean"].max()) / 1e6
    line_top = 0.0
    gp_sub_s = goodput_band_s(bin_s, flows_s)
    for style, b in _per_flow_or_algorithm(flows, "goodput_bps", per_flow, "sum", bin_s, styles, gp_sub_s):
        line = _draw_binned(ax_gp, b, bin_s, style, bands, scale=1e-6)
        if line is not None:
            legend_entries.append((style["cca"], line, style["label"]))
            line_top = max(line_top, float(np.nanmax(b["mean"])) / 1e6)
    # The band of bursty in-order delivery reaches far above the capacity: keep the axis about the
    # capacity and the lines (the band is cut there, and the figure says so).
    top = max(1.3 * cap_top, 1.1 * line_top)
    if top > 0 and ax_gp.get_ylim()[1] > top:
        ax_gp.set_ylim(0, top)
        ax_gp.text(0.005, 0.86, "band cut at the axis top", transform=ax_gp.transAxes, fontsize="x-small",
                   va="top", color="0.3")  # fmt: skip
    samples = f"{gp_sub_s * 1e3:g} ms goodputs in it" if gp_sub_s else f"{flows_s * 1e3:g} ms samples"
    ax_gp.set_ylabel(f"goodput (Mbit/s)\n{bin_s * 1e3:g} ms bins" if bin_s < 1 else f"goodput (Mbit/s)\n{bin_s:g} s bins")
    ax_gp.set_ylim(bottom=0)
    band_note = f"line: mean over {bin_s * 1e3:g} ms bins" if bin_s < 1 else f"line: mean over {bin_s:g} s bins"
    banded = bands and bin_s > flows_s * 1.5
    ax_gp.text(0.005, 0.97, band_note + (f"; band: min–max of the {samples}" if banded else ""),
               transform=ax_gp.transAxes, fontsize="x-small", va="top", color="0.3")  # fmt: skip
    for style, b in _per_flow_or_algorithm(flows, "rtt_ms" if "rtt_ms" in flows and flows["rtt_ms"].notna().any()
                                           else "srtt_ms", per_flow, "mean", bin_s, styles):  # fmt: skip
        _draw_binned(ax_rtt, b, bin_s, style, bands)
    ax_rtt.set_ylabel("RTT (ms)")
    for style, b in _per_flow_or_algorithm(flows, "cwnd_bytes", per_flow, "mean", bin_s, styles):
        _draw_binned(ax_cwnd, b, bin_s, style, bands, scale=1e-3)
    ax_cwnd.set_ylabel("cwnd (KB)")
    ax_cwnd.set_ylim(bottom=0)
    if flows.empty:
        for ax in (ax_gp, ax_rtt, ax_cwnd):
            ax.text(0.5, 0.5, "no per-flow series in this record", transform=ax.transAxes, ha="center", va="center",
                    color="0.4")  # fmt: skip

    if len(link):
        t = link["time_s"].to_numpy()
    if len(link) and multi:
        handles = []
        for i, name in enumerate(names):
            d = all_links.loc[all_links["link"].astype(str) == name]
            qb = bin_series(d["time_s"].to_numpy(), d["queue_bytes"].to_numpy(dtype=float), bin_s)
            style = {"color": _LINK_GREYS[i % len(_LINK_GREYS)], "linestyle": _LINK_STYLES[i // len(_LINK_GREYS) % 4],
                     "label": printable(name) + (" (bottleneck)" if name == main_name else "")}  # fmt: skip
            ql = _draw_binned(ax_q, qb, bin_s, style, False, scale=1e-3, lw=0.9)
            if ql is not None:
                handles.append(ql)
        ax_q.legend(handles=handles, loc="upper right", fontsize="x-small", ncols=min(4, len(names)), framealpha=0.85,
                    title="queue per link", title_fontsize="x-small")  # fmt: skip
        drops = all_links.groupby("time_s", sort=True)[[f"drops_{c}" for c in _DROP_STYLE if f"drops_{c}" in all_links]]
        link = drops.sum().reset_index()
        t = link["time_s"].to_numpy()
    if len(link) and not multi:
        qb = bin_series(t, link["queue_bytes"].to_numpy(dtype=float), bin_s)
        ql = _draw_binned(ax_q, qb, bin_s, {"color": "0.25", "label": "queue"}, bands, scale=1e-3, lw=1.0)
        handles = [ql] if ql is not None else []
        buf = (ir.get("links") or [{}])[0].get("buffer") or {}
        if buf.get("bytes"):
            handles.append(ax_q.axhline(buf["bytes"] / 1e3, color="0.25", lw=0.6, ls="--", label="buffer"))
        ax_qd = ax_q.twinx()
        qd = bin_series(t, link["queue_delay_ms"].to_numpy(dtype=float), bin_s)
        dl = _draw_binned(ax_qd, qd, bin_s, {"color": "#56B4E9", "label": "queueing delay (ms)"}, False, lw=0.8)
        if dl is not None:
            handles.append(dl)
        ax_qd.set_ylabel("queueing delay (ms)", color="#0072B2")
        ax_qd.set_ylim(bottom=0)
        ax_q.legend(handles=handles, loc="upper right", fontsize="x-small", ncols=3, framealpha=0.85)
    if len(link):
        any_drops = False
        for cause, (color, label) in _DROP_STYLE.items():
            col = f"drops_{cause}"
            if col in link and link[col].fillna(0).any():
                any_drops = True
                counts = link[col].fillna(0).to_numpy(dtype=float)
                b = np.ceil(t / bin_s - 1e-9).astype(np.int64) - 1
                per_bin = pd.Series(counts).groupby(b).sum()
                ax_drop.step((per_bin.index.to_numpy() + 0.5) * bin_s, per_bin.to_numpy() / bin_s, where="mid",
                             color=color, lw=0.9, label=label)  # fmt: skip
        if any_drops:
            ax_drop.legend(loc="upper right", fontsize="x-small", ncols=3)
        else:
            ax_drop.text(0.5, 0.5, "no drops", transform=ax_drop.transAxes, ha="center", va="center", color="0.4")
    ax_q.set_ylabel("queue (KB)")
    ax_q.set_ylim(bottom=0)
    ax_drop.set_ylabel("drops\n(packets/s" + (", all links)" if multi else ")"))
    ax_drop.set_ylim(bottom=0)

    if state_flows:
        _draw_states(axes[5], flows, ir, state_flows, shade, flows_s, styles)
        if n_state_flows > len(state_flows):
            axes[5].set_ylabel(f"state\n(first {len(state_flows)}\nof {n_state_flows})")

    lo, hi = measure_window_ns(ir)
    for ax in axes[:5]:
        ax.axvspan(lo / 1e9, hi / 1e9, color="0.5", alpha=0.07, lw=0, zorder=0)
        ax.grid(True, lw=0.3, alpha=0.5)
    axes[-1].set_xlabel("time (s)")
    axes[-1].set_xlim(0, duration_s)
    if legend_entries:
        grouped_legend(ax_gp, legend_entries, loc="upper right", fontsize="x-small", framealpha=0.85)
    fig.cclab_bin_s = bin_s  # the resolution drawn (tests, report)
    return fig


#: Queue lines of several links: greys and line styles (algorithm colours stay for flows).
_LINK_GREYS = ("0.1", "#8c564b", "0.45", "#7f7f7f", "0.65")
_LINK_STYLES = ("-", "--", ":", "-.")


def bottleneck_link(link: pd.DataFrame, ir: Mapping[str, Any]) -> str:
    """The name of the most utilized link over the measure window (the first link on a tie)."""
    link = with_link_column(link)
    w = link.loc[in_window(link["time_s"], ir)]
    if not len(w):
        return str(link["link"].iloc[0]) if len(link) else "link"
    util = w.groupby("link", observed=True, sort=False)["utilization"].mean()
    return str(util.fillna(-1.0).idxmax())


def figure_links(link: pd.DataFrame, ir: Mapping[str, Any], *, title: str | None = None) -> Figure:
    """One panel per link: its queue (KB, with the buffer), its mean queueing delay (ms, right axis)
    and its drops (markers at the intervals with drops), over the run."""
    link = with_link_column(link)
    links = ir.get("links") or [{"name": "link", "from": "left", "to": "right"}]
    n = len(links)
    fig = Figure(figsize=(11, 1.9 * n + 1.2), layout="constrained")
    axes = np.atleast_1d(fig.subplots(n, 1, sharex=True))
    fig.suptitle(title if title is not None else f"{printable(str(ir.get('name', 'run')))}: queues per link",
                 parse_math=False)  # fmt: skip
    lo, hi = measure_window_ns(ir)
    for ax, spec in zip(axes, links):
        name = str(spec["name"])
        d = link.loc[link["link"].astype(str) == name]
        t = d["time_s"].to_numpy()
        ax.plot(t, d["queue_bytes"].to_numpy() / 1e3, color="0.25", lw=0.9, label="queue (KB)")
        buf = spec.get("buffer") or {}
        if buf.get("bytes"):
            ax.axhline(buf["bytes"] / 1e3, color="0.25", lw=0.6, ls="--", label="buffer")
        drops = sum(d[f"drops_{c}"].fillna(0).to_numpy() for c in _DROP_STYLE) if len(d) else np.array([])
        hit = drops > 0
        if hit.any():
            ax.plot(t[hit], np.zeros(hit.sum()), "|", color="#d62728", ms=8, mew=1.2, label="drops", clip_on=False)
        ax_d = ax.twinx()
        ax_d.plot(t, d["queue_delay_ms"].to_numpy(), color="#17becf", lw=0.7, alpha=0.9, label="queueing delay (ms)")
        ax_d.set_ylim(bottom=0)
        ax_d.set_ylabel("delay (ms)", color="#17becf", fontsize="small")
        ax.set_ylim(bottom=0)
        ax.set_ylabel(f"{printable(name)}\n{printable(str(spec.get('from', '')))} → "
                      f"{printable(str(spec.get('to', '')))}\nqueue (KB)", fontsize="small")  # fmt: skip
        ax.axvspan(lo / 1e9, hi / 1e9, color="0.5", alpha=0.07, lw=0, zorder=0)
        ax.grid(True, lw=0.3, alpha=0.5)
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax_d.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, loc="upper right", fontsize="x-small", ncol=4, framealpha=0.85)
    axes[-1].set_xlabel("time (s)")
    axes[-1].set_xlim(0, ir["duration_ns"] / 1e9)
    return fig


def _topology_layout(
    links: list[Mapping[str, Any]], paths: Sequence[Sequence[str]] = ()
) -> dict[str, tuple[float, float]]:
    """Node positions: in each connected part, a spine left to right on one row — the longest
    flow path in it (the first of equal ones), else its longest shortest path; every other node beside the node it hangs from (found breadth-first from the spine),
    half a column outwards, on rows alternating above and below. Parts are stacked top to bottom."""
    nodes: list[str] = []
    for link in links:
        for x in (str(link["from"]), str(link["to"])):
            if x not in nodes:
                nodes.append(x)
    by_name = {str(link["name"]): link for link in links}
    adj: dict[str, list[str]] = {x: [] for x in nodes}
    for link in links:
        a, b = str(link["from"]), str(link["to"])
        if b not in adj[a]:
            adj[a].append(b)
        if a not in adj[b]:
            adj[b].append(a)

    def bfs(root: str) -> dict[str, str | None]:
        parent: dict[str, str | None] = {root: None}
        frontier = [root]
        while frontier:
            nxt = []
            for x in frontier:
                for y in adj[x]:
                    if y not in parent:
                        parent[y] = x
                        nxt.append(y)
            frontier = nxt
        return parent  # in breadth-first order

    pos: dict[str, tuple[float, float]] = {}
    top = 0.0
    for root in nodes:
        if root in pos:
            continue
        part = list(bfs(root))
        spine = []
        for path in paths:
            chain = [str(by_name[n]["from"]) for n in path if n in by_name]
            if chain and chain[0] in part and len(chain) == len(path):
                chain.append(str(by_name[path[-1]]["to"]))
                if len(chain) > len(spine) and len(set(chain)) == len(chain):
                    spine = chain
        if not spine:
            # from the node farthest from the part's first node to the node farthest from it
            parent = bfs(part[-1])
            spine = [list(parent)[-1]]
            while parent[spine[-1]] is not None:
                spine.append(parent[spine[-1]])  # type: ignore[arg-type]
            if nodes.index(spine[0]) > nodes.index(spine[-1]):
                spine.reverse()  # the first-named end on the left
        mid = (len(spine) - 1) / 2.0
        local: dict[str, tuple[float, float]] = {x: (float(i), 0.0) for i, x in enumerate(spine)}
        side: dict[str, float] = {x: (-1.0 if i < mid else 1.0 if i > mid else 0.0) for i, x in enumerate(spine)}
        used: dict[str, int] = {}
        order = bfs(spine[0])
        pending = [x for x in order if x not in local]
        while pending:  # breadth-first from the spine: each node beside a placed neighbour
            rest = []
            for x in pending:
                anchor = next((y for y in adj[x] if y in local), None)
                if anchor is None:
                    rest.append(x)
                    continue
                k = used.get(anchor, 0)
                used[anchor] = k + 1
                ax_, ay = local[anchor]
                d = side[anchor]
                if ay == 0.0:
                    dy = (k // 2 + 1) * (1.0 if k % 2 == 0 else -1.0)
                else:
                    dy = (1.0 if ay > 0 else -1.0) * (k // 2) * 0.6 * (1 if k % 2 == 0 else -1)
                dx = 0.5 * d if ay == 0.0 else 0.8 * (d if d else 1.0)
                local[x] = (ax_ + dx, ay + dy)
                side[x] = d if d else 1.0
            if len(rest) == len(pending):
                break
            pending = rest
        ys = [y for _, y in local.values()]
        shift = top - max(ys)
        for x, (px, py) in local.items():
            pos[x] = (px, py + shift)
        top = min(ys) + shift - 1.5
    return pos


def figure_topology(ir: Mapping[str, Any], *, title: str | None = None) -> Figure:
    """The topology: nodes, each link as an arrow labelled with its name, rate and delay (the two
    directions of a duplex wire bent apart, one label for both when their rate and delay agree),
    and each flow group with its path and ACK path in the legend, in its algorithm's colour. The
    longest chain of links runs left to right; other nodes hang beside the node they attach to."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyArrowPatch

    links = ir.get("links") or []
    pos = _topology_layout(links, [f.get("path") or [] for f in ir.get("flows", [])])
    xs = [p[0] for p in pos.values()] or [0.0]
    ys = [p[1] for p in pos.values()] or [0.0]
    width = max(4.0, 2.2 * (max(xs) - min(xs) + 1))
    height = max(2.6, 1.3 * (max(ys) - min(ys)) + 2.4)
    fig = Figure(figsize=(width, height), layout="constrained")
    ax = fig.subplots()
    ax.set_axis_off()
    fig.suptitle(title if title is not None else f"{printable(str(ir.get('name', 'run')))}: topology", parse_math=False)

    def shape(link: Mapping[str, Any]) -> tuple[str, float]:
        cap = link["capacity"]
        rate = _fmt_rate(float(cap["rate_bps"])) if cap.get("kind") == "constant" else "trace"
        return rate, float(link["delay_ns"])

    by_pair = {(str(link["from"]), str(link["to"])): link for link in links}
    for link in links:
        a, b = str(link["from"]), str(link["to"])
        back = by_pair.get((b, a))
        bend = 0.18 if back is not None else 0.0  # a duplex wire: the two directions apart
        ax.add_patch(FancyArrowPatch(pos[a], pos[b], arrowstyle="-|>", mutation_scale=14, lw=1.4, color="0.3",
                                     connectionstyle=f"arc3,rad={bend}", shrinkA=16, shrinkB=16))  # fmt: skip
        rate, delay_ns = shape(link)
        (x0, y0), (x1, y1) = pos[a], pos[b]
        mx, my = (x0 + x1) / 2, (y0 + y1) / 2
        name = printable(str(link["name"]))
        if back is not None and shape(back) == (rate, delay_ns):
            if links.index(back) < links.index(link):
                continue  # labelled with its reverse
            name = f"{name}, {printable(str(back['name']))}"
            off = 0.0
        else:
            off = 0.16 if bend == 0 else (0.22 if (x1 - x0) + (y1 - y0) > 0 else -0.22)
        ax.text(mx, my + off, f"{name}\n{rate}, {delay_ns / 1e6:g} ms",
                ha="center", va="center", fontsize="x-small", color="0.2",
                bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.85})  # fmt: skip
    for x, (px, py) in pos.items():
        ax.plot([px], [py], "o", ms=18, color="white", mec="0.2", mew=1.2, zorder=3)
        ax.text(px, py, printable(x), ha="center", va="center", fontsize="x-small", zorder=4)
    # flow groups: a legend line per group with its path
    seen: dict[int, dict[str, Any]] = {}
    for f in ir.get("flows", []):
        seen.setdefault(int(f.get("group", 0)), f)
    handles = []
    for g, f in seen.items():
        n = sum(1 for x in ir["flows"] if int(x.get("group", 0)) == g)
        ack = f" ; ACKs {' → '.join(f['ack_path'])}" if f.get("ack_path") else ""
        label = printable(f"group {g}: {n} × {f['cca']}, {' → '.join(f.get('path', []))}{ack}")
        handles.append(Line2D([], [], color=color_for(str(f["cca"])), lw=2, label=label))
    if handles:
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.02), fontsize="x-small",
                  ncol=1, frameon=False)  # fmt: skip
    ax.set_xlim(min(xs) - 0.5, max(xs) + 0.5)
    ax.set_ylim(min(ys) - 0.6, max(ys) + 0.6)
    ax.set_aspect("auto")
    return fig


def _draw_states(ax, flows: pd.DataFrame, ir: Mapping[str, Any], state_flows: list[int], shade: set[str],
                 dt: float, styles: Mapping[int, Mapping[str, Any]]) -> None:  # fmt: skip
    """One row per flow: its state over the samples where it runs (``active``), nothing elsewhere."""
    from matplotlib.patches import Patch

    colors: dict[str, str] = {}
    extra = iter(_OTHER_COLORS * 4)
    labels = []
    for row, fid in enumerate(state_flows):
        d = flows.loc[flows["flow_id"] == fid].sort_values("time_s")
        states = d["state"].where(d["active"].astype(bool), None) if "active" in d else d["state"]
        for name, start, end in _state_spans(d["time_s"].to_numpy(), states, dt):
            if name not in shade:
                continue
            if name not in colors:
                colors[name] = STATE_COLORS.get(name) or next(extra)
            ax.broken_barh([(start, end - start)], (row - 0.4, 0.8), facecolors=colors[name], lw=0)
        style = styles.get(fid, {})
        labels.append(f"{style.get('cca', '')} {style.get('label', f'flow {fid}')}".strip())
    ax.set_yticks(range(len(state_flows)), labels, fontsize="x-small")
    ax.set_ylim(len(state_flows) - 0.5, -0.5)
    ax.set_ylabel("state")
    if colors:
        ax.legend(handles=[Patch(color=c, label=n) for n, c in colors.items()], loc="upper right",
                  fontsize="x-small", ncols=len(colors))  # fmt: skip


# --------------------------------------------------------------------------------------- saving


@contextlib.contextmanager
def paper_style(size: str | None = None) -> Iterator[None]:
    """The rc settings figures are drawn with: ``size`` ``"column"`` or ``"page"`` (a paper: 8 pt
    text, thin lines, TrueType fonts in PDF) or ``None`` (the screen defaults)."""
    if size is None:
        rc: dict[str, Any] = {}
    elif size in PAPER_WIDTHS:
        rc = {"font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "xtick.labelsize": 7, "ytick.labelsize": 7,
              "legend.fontsize": 7, "figure.titlesize": 9, "lines.linewidth": 1.0, "axes.linewidth": 0.6,
              "grid.linewidth": 0.4, "xtick.major.width": 0.6, "ytick.major.width": 0.6}  # fmt: skip
    else:
        raise ValueError(f"figure size {size!r}: expected one of {', '.join(PAPER_WIDTHS)}")
    with matplotlib.rc_context({"pdf.fonttype": 42, "ps.fonttype": 42, "svg.hashsalt": "cclab", **rc}):
        yield


def fit_width(fig: Figure, size: str | None) -> Figure:
    """Scale ``fig`` to a paper width (``column``/``page``), keeping its aspect ratio."""
    if size is None:
        return fig
    w, h = fig.get_size_inches()
    target = PAPER_WIDTHS[size]
    fig.set_size_inches(target, h * target / w)
    return fig


def save_figure(fig: Figure, path: str | Path, formats: Iterable[str] | str = ("png",)) -> list[Path]:
    """Save ``fig`` as ``path.<fmt>`` for each format (png, svg, pdf); returns the paths.

    PDF and SVG are vector output without a timestamp (the same figure gives
    the same bytes); PDF embeds its fonts as TrueType (Type 42), which paper
    submission systems accept (Type 3 fonts are refused by IEEE PDF eXpress).
    """
    base = Path(path)
    if base.suffix.lower().lstrip(".") in FIGURE_FORMATS:
        base = base.with_suffix("")
    fmts = figure_formats(formats)  # every one checked before anything is written
    base.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in fmts:
        out = base.with_name(f"{base.name}.{fmt}")
        meta = {"Date": None} if fmt == "svg" else {"CreationDate": None} if fmt == "pdf" else {}
        with matplotlib.rc_context({"svg.hashsalt": "cclab", "pdf.fonttype": 42}), atomic_file(out) as fh:
            fig.savefig(fh, format=fmt, dpi=110 if fmt == "png" else 300, metadata=meta)
        written.append(out)
    return written


def plot_run(run: Any, path: str | Path, formats: Iterable[str] = ("png",), **kwargs: Any) -> list[Path]:
    """Draw the time-series figure of a :class:`cclab.record.Run` to ``path.<fmt>``."""
    fig = figure_timeseries(run.flows, run.link, run.ir, **kwargs)
    return save_figure(fig, path, formats)
