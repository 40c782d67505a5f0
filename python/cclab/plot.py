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
from cclab.metrics import in_window, measure_window_ns, with_link_column

__all__ = ["PALETTE", "STATE_COLORS", "bottleneck_link", "color_for", "figure_links", "figure_timeseries",
           "figure_topology", "plot_run", "save_figure"]

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
    # A topology: the capacity line and the queueing delay are the bottleneck link's, the queue
    # panel has a line per link, the drops are summed over links (figure_links: a panel per link).
    all_links = with_link_column(link)
    names = list(dict.fromkeys(all_links["link"].astype(str)))
    multi = len(names) > 1
    main_name = bottleneck_link(all_links, ir) if multi else (names[0] if names else "link")
    link = all_links.loc[all_links["link"].astype(str) == main_name] if multi else all_links
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

    if len(link) and multi:
        for i, name in enumerate(names):
            d = all_links.loc[all_links["link"].astype(str) == name]
            ax_q.plot(d["time_s"].to_numpy(), d["queue_bytes"].to_numpy() / 1e3, lw=0.9,
                      color=_LINK_GREYS[i % len(_LINK_GREYS)], ls=_LINK_STYLES[i // len(_LINK_GREYS) % 4],
                      label=printable(name) + (" (bottleneck)" if name == main_name else ""))  # fmt: skip
        ax_q.legend(loc="upper right", fontsize="x-small", ncol=min(4, len(names)), framealpha=0.85,
                    title="queue (KB) per link", title_fontsize="x-small")  # fmt: skip
        drops = all_links.groupby("time_s", sort=True)[[f"drops_{c}" for c in _DROP_STYLE]].sum()
        link = drops.reset_index()
    if len(link):
        t = link["time_s"].to_numpy()
    if len(link) and not multi:
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
    if len(link):
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
    ax_drop.set_ylabel("drops / interval\n(packets" + (", all links)" if multi else ")"))
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


def _fmt_rate(bps: float) -> str:
    for div, unit in ((1e9, "Gbps"), (1e6, "Mbps"), (1e3, "kbps")):
        if bps >= div:
            return f"{bps / div:g} {unit}"
    return f"{bps:g} bps"


def figure_topology(ir: Mapping[str, Any], *, title: str | None = None) -> Figure:
    """The topology: nodes, each link as an arrow labelled with its name, rate and delay (the two
    directions of a duplex wire bent apart), and each flow group with its path and ACK path in the
    legend, in its algorithm's colour. Nodes are laid out left to right by their distance (in links)
    from the first link's node."""
    from matplotlib.patches import FancyArrowPatch

    links = ir.get("links") or []
    nodes: list[str] = []
    for link in links:
        for x in (str(link["from"]), str(link["to"])):
            if x not in nodes:
                nodes.append(x)
    # columns: breadth-first distance over the undirected graph from the first node; rows within a column
    adj: dict[str, set[str]] = {x: set() for x in nodes}
    for link in links:
        adj[str(link["from"])].add(str(link["to"]))
        adj[str(link["to"])].add(str(link["from"]))
    col: dict[str, int] = {}
    for root in nodes:
        if root in col:
            continue
        col[root] = 0
        frontier = [root]
        while frontier:
            nxt = []
            for x in frontier:
                for y in sorted(adj[x], key=nodes.index):
                    if y not in col:
                        col[y] = col[x] + 1
                        nxt.append(y)
            frontier = nxt
    rows: dict[int, list[str]] = {}
    for x in nodes:
        rows.setdefault(col[x], []).append(x)
    pos = {}
    for c, members in rows.items():
        for i, x in enumerate(members):
            pos[x] = (float(c), (len(members) - 1) / 2.0 - i)
    width = max(4.0, 2.2 * (max(col.values(), default=0) + 1))
    height = max(2.6, 1.5 * max((len(m) for m in rows.values()), default=1) + 1.6)
    fig = Figure(figsize=(width, height), layout="constrained")
    ax = fig.subplots()
    ax.set_axis_off()
    fig.suptitle(title if title is not None else f"{printable(str(ir.get('name', 'run')))}: topology", parse_math=False)
    pairs = {(str(link["from"]), str(link["to"])) for link in links}
    for link in links:
        a, b = str(link["from"]), str(link["to"])
        bend = 0.18 if (b, a) in pairs else 0.0  # a duplex wire: the two directions apart
        ax.add_patch(FancyArrowPatch(pos[a], pos[b], arrowstyle="-|>", mutation_scale=14, lw=1.4, color="0.3",
                                     connectionstyle=f"arc3,rad={bend}", shrinkA=16, shrinkB=16))  # fmt: skip
        cap = link["capacity"]
        rate = _fmt_rate(float(cap["rate_bps"])) if cap.get("kind") == "constant" else "trace"
        (x0, y0), (x1, y1) = pos[a], pos[b]
        mx, my = (x0 + x1) / 2, (y0 + y1) / 2
        off = 0.16 if bend == 0 else (0.22 if (x1 - x0) + (y1 - y0) > 0 else -0.22)
        ax.text(mx, my + off, f"{printable(str(link['name']))}\n{rate}, {link['delay_ns'] / 1e6:g} ms",
                ha="center", va="center", fontsize="x-small", color="0.2",
                bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.8})  # fmt: skip
    for x, (px, py) in pos.items():
        ax.plot([px], [py], "o", ms=18, color="white", mec="0.2", mew=1.2, zorder=3)
        ax.text(px, py, printable(x), ha="center", va="center", fontsize="x-small", zorder=4)
    # flow groups: a legend line per group with its path
    seen: dict[int, dict[str, Any]] = {}
    for f in ir.get("flows", []):
        seen.setdefault(int(f.get("group", 0)), f)
    handles = []
    from matplotlib.lines import Line2D

    for g, f in seen.items():
        n = sum(1 for x in ir["flows"] if int(x.get("group", 0)) == g)
        ack = f" ; ACKs {' → '.join(f['ack_path'])}" if f.get("ack_path") else ""
        label = printable(f"group {g}: {n} × {f['cca']}, {' → '.join(f.get('path', []))}{ack}")
        handles.append(Line2D([], [], color=color_for(str(f["cca"])), lw=2, label=label))
    if handles:
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.02), fontsize="x-small",
                  ncol=1, frameon=False)  # fmt: skip
    xs = [p[0] for p in pos.values()] or [0.0]
    ys = [p[1] for p in pos.values()] or [0.0]
    ax.set_xlim(min(xs) - 0.5, max(xs) + 0.5)
    ax.set_ylim(min(ys) - 0.6, max(ys) + 0.6)
    ax.set_aspect("auto")
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
