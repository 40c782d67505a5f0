"""The stacked time-series figure of one run (the testbed papers' per-trial plot).

Panels, sharing one x axis in seconds:

1. goodput per flow (Mbps),
2. RTT per flow (ms),
3. cwnd (thick) and bytes in flight (thin) per flow (KB),
4. bottleneck queue (KB) with the queueing delay (ms) on a twin axis,
5. drops per interval by cause (packets),
6. (when some flow exports states in ``shade_states``) one strip per flow
   with its algorithm state, e.g. BBR's STARTUP / DRAIN / PROBE_BW / PROBE_RTT.

Every algorithm has one colour (:data:`PALETTE`, then a fixed cycle for
others); flows of the same algorithm differ by line style. The measure
window is shaded lightly. With more than :data:`MAX_FLOW_LINES` flows the
per-flow panels show per-algorithm lines instead (goodput: the total of its
flows; RTT, cwnd: the mean), and the state strip shows the first
:data:`MAX_STATE_ROWS` flows that have states.

Figures are built as ``matplotlib.figure.Figure`` objects without pyplot (no
global state, no GUI backend: renders headless, and does not switch a
notebook's backend). Everything is read from the record's columns (``cclab.metrics``); nothing is
computed here that is not drawn.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from cclab.errors import printable
from cclab.fsutil import atomic_file
from cclab.metrics import measure_window_ns

__all__ = ["PALETTE", "STATE_COLORS", "color_for", "figure_timeseries", "plot_run", "save_figure"]

#: One colour per algorithm, the same in every figure.
PALETTE: dict[str, str] = {
    "cubic": "#1f77b4",  # blue
    "reno": "#2ca02c",  # green
    "bbr": "#ff7f0e",  # orange
    "bbr3": "#d62728",  # red
    "bbr2": "#e377c2",  # pink
    "vegas": "#9467bd",  # purple
}
_OTHER_COLORS = ("#8c564b", "#aec7e8", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#843c39")
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
_DROP_STYLE = {"overflow": ("#d62728", "overflow"), "random": ("#7f7f7f", "random loss"), "aqm": ("#9467bd", "AQM")}


def color_for(cca: str) -> str:
    """The colour of an algorithm: :data:`PALETTE`, else a stable pick from a fixed cycle."""
    if cca in PALETTE:
        return PALETTE[cca]
    return _OTHER_COLORS[zlib.crc32(cca.encode()) % len(_OTHER_COLORS)]


def _flow_styles(ir: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
    seen: dict[str, int] = {}
    styles = {}
    for f in ir["flows"]:
        k = seen.get(f["cca"], 0)
        seen[f["cca"]] = k + 1
        rtt = f.get("rtt_ns")
        label = f"flow {f['id']} {f['cca']}" + (f" {rtt / 1e6:g} ms" if rtt else "")
        styles[int(f["id"])] = {"color": color_for(f["cca"]), "linestyle": _LINESTYLES[k % len(_LINESTYLES)], "label": label}
    return styles


def _series(
    flows: pd.DataFrame, ir: Mapping[str, Any], column: str, per_flow: bool, how: str = "mean"
) -> Iterable[tuple[dict, pd.Series]]:
    """(style, series indexed by time_s) per flow, or per algorithm (``how``: mean or sum over its flows)."""
    if per_flow:
        styles = _flow_styles(ir)
        for fid, d in flows.groupby("flow_id", sort=True):
            yield styles[int(fid)], d.set_index("time_s")[column]
    else:
        counts = pd.Series([f["cca"] for f in ir["flows"]]).value_counts()
        word = "total" if how == "sum" else "mean"
        for alg, d in flows.groupby("cca", sort=False):
            label = f"{alg} ({word} of {counts.get(alg, 0)} flows)"
            style = {"color": color_for(str(alg)), "linestyle": "-", "label": label}
            yield style, d.groupby("time_s")[column].agg(how)


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


def figure_timeseries(
    flows: pd.DataFrame,
    link: pd.DataFrame,
    ir: Mapping[str, Any],
    *,
    shade_states: Iterable[str] = DEFAULT_SHADE_STATES,
    title: str | None = None,
    goodput_mean_s: float | None = 0.1,
) -> Figure:
    """Build the stacked time-series figure (a matplotlib ``Figure``, Agg canvas).

    ``goodput_mean_s``: goodput is drawn as a trailing mean over this many
    seconds (in-order delivery is bursty at 10 ms; testbed plots bin 0.1–1 s);
    ``None`` or anything up to the sample interval draws the samples.
    """
    shade = set(shade_states)
    per_flow = len(ir["flows"]) <= MAX_FLOW_LINES
    state_flows = []
    if "state" in flows and shade:
        for fid, d in flows.groupby("flow_id", sort=True):
            if d["state"].isin(shade).any():
                state_flows.append(int(fid))
    n_state_flows = len(state_flows)
    state_flows = state_flows[:MAX_STATE_ROWS]
    n_panels = 5 + (1 if state_flows else 0)
    ratios = [3, 2, 2, 2, 1.3] + ([0.3 * len(state_flows) + 0.4] if state_flows else [])
    fig = Figure(figsize=(11, 2.2 * sum(ratios) / 1.9 + 1), layout="constrained")
    axes = fig.subplots(n_panels, 1, sharex=True, gridspec_kw={"height_ratios": ratios})
    ax_gp, ax_rtt, ax_cwnd, ax_q, ax_drop = axes[:5]
    fig.suptitle(title if title is not None else f"{printable(str(ir.get('name', 'run')))} (seed {ir.get('seed')})",
                 parse_math=False)

    interval_s = ir.get("sample_interval_ns", 0) / 1e9
    k = int(round(goodput_mean_s / interval_s)) if goodput_mean_s and interval_s > 0 else 1
    cap = link.set_index("time_s")["capacity_bps"] / 1e6 if len(link) else pd.Series(dtype=float)
    if cap.notna().any():
        drawn = cap.rolling(k, min_periods=1).mean() if k > 1 else cap  # same averaging as goodput
        ax_gp.plot(drawn.index, drawn.to_numpy(), color="black", lw=0.8, alpha=0.5, drawstyle="steps-pre",
                   label="capacity", zorder=1)  # fmt: skip
    for style, s in _series(flows, ir, "goodput_bps", per_flow, how="sum"):
        if k > 1:
            s = s.rolling(k, min_periods=1).mean()
        ax_gp.plot(s.index, s.to_numpy() / 1e6, lw=1.1, **style)
    ax_gp.set_ylabel(f"goodput (Mbps, {k * interval_s * 1e3:g} ms mean)" if k > 1 else "goodput (Mbps)")
    ax_gp.set_ylim(bottom=0)
    # In-order delivery is bursty at fine sample intervals (a repaired hole
    # releases a window at once); keep the axis about the capacity.
    if cap.notna().any() and len(flows):
        top = 1.25 * float(drawn.max())
        ys = [np.asarray(line.get_ydata(), dtype=float) for line in ax_gp.get_lines()]
        peak = max((float(y[np.isfinite(y)].max()) for y in ys if np.isfinite(y).any()), default=0.0)
        if peak > top:
            ax_gp.set_ylim(0, top)
            ax_gp.text(0.005, 0.97, f"clipped at 1.25 × capacity (peaks to {peak:.0f} Mbps)",
                       transform=ax_gp.transAxes, fontsize="x-small", va="top", color="0.3")  # fmt: skip
    ax_gp.legend(loc="upper right", fontsize="x-small", ncol=min(4, len(ir["flows"]) + 1), framealpha=0.8)

    rtt_col = "rtt_ms" if flows["rtt_ms"].notna().any() else "srtt_ms"
    for style, s in _series(flows, ir, rtt_col, per_flow):
        ax_rtt.plot(s.index, s.to_numpy(), lw=1.0, **{**style, "label": None})
    ax_rtt.set_ylabel("RTT (ms)" if rtt_col == "rtt_ms" else "sRTT (ms)")

    for style, s in _series(flows, ir, "cwnd_bytes", per_flow):
        ax_cwnd.plot(s.index, s.to_numpy() / 1e3, lw=1.2, **{**style, "label": None})
    for style, s in _series(flows, ir, "inflight_bytes", per_flow):
        ax_cwnd.plot(s.index, s.to_numpy() / 1e3, lw=0.6, alpha=0.55, **{**style, "label": None})
    ax_cwnd.set_ylabel("cwnd / inflight (KB)")
    ax_cwnd.set_ylim(bottom=0)
    ax_cwnd.text(0.005, 0.95, "thick: cwnd, thin: bytes in flight", transform=ax_cwnd.transAxes,
                 fontsize="x-small", va="top", color="0.3")  # fmt: skip

    if len(link):
        t = link["time_s"].to_numpy()
        ax_q.plot(t, link["queue_bytes"].to_numpy() / 1e3, color="0.25", lw=1.0, label="queue (KB)")
        buf = (ir.get("links") or [{}])[0].get("buffer") or {}
        if buf.get("bytes"):
            ax_q.axhline(buf["bytes"] / 1e3, color="0.25", lw=0.6, ls="--", label="buffer")
        ax_qd = ax_q.twinx()
        ax_qd.plot(t, link["queue_delay_ms"].to_numpy(), color="#17becf", lw=0.8, alpha=0.9, label="queueing delay (ms)")
        ax_qd.set_ylabel("queueing delay (ms)", color="#17becf")
        ax_qd.set_ylim(bottom=0)
        h1, l1 = ax_q.get_legend_handles_labels()
        h2, l2 = ax_qd.get_legend_handles_labels()
        ax_q.legend(h1 + h2, l1 + l2, loc="lower right", fontsize="x-small", ncol=3, framealpha=0.85)
        for cause, (color, label) in _DROP_STYLE.items():
            col = f"drops_{cause}"
            if col in link and link[col].fillna(0).any():
                ax_drop.plot(t, link[col].to_numpy(), color=color, lw=0.9, drawstyle="steps-pre", label=label)
        if ax_drop.get_legend_handles_labels()[0]:
            ax_drop.legend(loc="upper right", fontsize="x-small", ncol=3)
        else:
            ax_drop.text(0.5, 0.5, "no drops", transform=ax_drop.transAxes, ha="center", va="center", color="0.4")
    ax_q.set_ylabel("queue (KB)")
    ax_q.set_ylim(bottom=0)
    ax_drop.set_ylabel("drops / interval\n(packets)")
    ax_drop.set_ylim(bottom=0)

    if state_flows:
        _draw_states(axes[5], flows, ir, state_flows, shade)
        if n_state_flows > len(state_flows):
            axes[5].set_ylabel(f"state\n(first {len(state_flows)}\nof {n_state_flows})")

    lo, hi = measure_window_ns(ir)
    for ax in axes[:5]:
        ax.axvspan(lo / 1e9, hi / 1e9, color="0.5", alpha=0.07, lw=0, zorder=0)
        ax.grid(True, lw=0.3, alpha=0.5)
    axes[-1].set_xlabel("time (s)")
    axes[-1].set_xlim(0, ir["duration_ns"] / 1e9)
    return fig


def _draw_states(ax, flows: pd.DataFrame, ir: Mapping[str, Any], state_flows: list[int], shade: set[str]) -> None:
    dt = ir.get("sample_interval_ns", 0) / 1e9
    colors: dict[str, str] = {}
    extra = iter(_OTHER_COLORS * 4)
    labels = []
    for row, fid in enumerate(state_flows):
        d = flows.loc[flows["flow_id"] == fid].sort_values("time_s")
        for name, start, end in _state_spans(d["time_s"].to_numpy(), d["state"], dt):
            if name not in shade:
                continue
            if name not in colors:
                colors[name] = STATE_COLORS.get(name) or next(extra)
            ax.broken_barh([(start, end - start)], (row - 0.4, 0.8), facecolors=colors[name], lw=0)
        cca = d["cca"].iloc[0] if len(d) else ""
        labels.append(f"flow {fid} {cca}")
    ax.set_yticks(range(len(state_flows)), labels, fontsize="x-small")
    ax.set_ylim(len(state_flows) - 0.5, -0.5)
    ax.set_ylabel("state")
    from matplotlib.patches import Patch

    if colors:
        ax.legend(handles=[Patch(color=c, label=n) for n, c in colors.items()], loc="upper right",
                  fontsize="x-small", ncol=len(colors))  # fmt: skip


def save_figure(fig: Figure, path: str | Path, formats: Iterable[str] = ("png",)) -> list[Path]:
    """Save ``fig`` as ``path.<fmt>`` for each format (png, svg, pdf); returns the paths."""
    base = Path(path)
    if base.suffix.lower() in (".png", ".svg", ".pdf"):
        base = base.with_suffix("")
    base.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in formats:
        fmt = fmt.lower().lstrip(".")
        if fmt not in ("png", "svg", "pdf"):
            raise ValueError(f"figure format {fmt!r} is not supported; expected png, svg or pdf")
        out = base.with_name(f"{base.name}.{fmt}")
        meta = {"Date": None} if fmt in ("svg", "pdf") else {}
        with matplotlib.rc_context({"svg.hashsalt": "cclab"}), atomic_file(out) as fh:
            fig.savefig(fh, format=fmt, dpi=110, metadata=meta)
        written.append(out)
    return written


def plot_run(run: Any, path: str | Path, formats: Iterable[str] = ("png",), **kwargs: Any) -> list[Path]:
    """Draw the time-series figure of a :class:`cclab.record.Run` to ``path.<fmt>``."""
    fig = figure_timeseries(run.flows, run.link, run.ir, **kwargs)
    return save_figure(fig, path, formats)
