"""Sweep figures: metric vs one axis with IQR band, heatmaps, throughput vs loss, overlays."""

from __future__ import annotations

import fnmatch
import math
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

from cclab.figures import FigureError, Target, register
from cclab.figures.axes import AxisValues, axis_values, coords, display, field_label
from cclab.metrics import goodput_gain
from cclab.plot import color_for

# ---------------------------------------------------------------- labels

_PERCENT = ("utilization", "link_utilization", "share", "loss_rate", "retrans_rate")


#: Summary metrics that are fractions of a whole (stored 0–1, shown in %).
_FRACTIONS = frozenset({"utilization", "link_utilization", "goodput_utilization", "share", "loss_rate", "retrans_rate",
                        "mark_rate"})  # fmt: skip
_PRETTY = {
    "goodput_bps": ("goodput", "Mbit/s", 1e-6),
    "utilization": ("utilization", "%", 100.0),
    "link_utilization": ("link utilization", "%", 100.0),
    "goodput_utilization": ("goodput utilization", "%", 100.0),
    "share": ("share of goodput", "%", 100.0),
    "loss_rate": ("loss rate", "%", 100.0),
    "retrans_rate": ("retransmission rate", "%", 100.0),
    "mark_rate": ("CE mark rate", "%", 100.0),
    "retrans_segs": ("retransmitted segments", "", 1.0),
    "queue_delay_ms": ("queueing delay", "ms", 1.0),
    "rtt_ms": ("RTT", "ms", 1.0),
    "queue_bytes": ("queue", "KB", 1e-3),
    "cwnd_bytes": ("cwnd", "KB", 1e-3),
    "jain": ("Jain's fairness index", "", 1.0),
    "drops_total": ("drops", "packets", 1.0),
    "slowdown": ("slowdown", "", 1.0),
}
#: Unit suffixes of the summary's keys (docs/record.md): (suffix, unit, factor to the shown value).
_SUFFIX_UNITS = (("_bps", "Mbit/s", 1e-6), ("_bytes", "KB", 1e-3), ("_ms", "ms", 1.0), ("_s", "s", 1.0),
                 ("_segs", "segments", 1.0), ("_packets", "packets", 1.0))  # fmt: skip


def metric_label(column: str) -> tuple[str, float]:
    """Axis or column label (with unit) and the factor from the stored value to the shown one, for
    any column of a results table (``agg.goodput_bps``, ``flow1.goodput_window_bps``,
    ``per_link.core.loss_rate``, ``cubic.state_time.probe_bw``, ``agg.drops.overflow`` …) or key of
    a summary: rates in Mbit/s, fractions in %, bytes in KB, times in ms or s (docs/record.md)."""
    owner, _, m = column.rpartition(".")

    def short(o: str) -> str:  # the owner as one word: "" (aggregate), flow1, cubic, link:core
        if o.startswith("per_link."):
            return "link:" + o[len("per_link.") :]
        return o[len("agg.") :] if o.startswith("agg.") else {"agg": ""}.get(o, o)

    if owner == "drops" or owner.endswith(".drops"):  # drops by cause
        who = short(owner[: -len(".drops")]) if "." in owner else ""
        return " ".join(s for s in (who, f"drops ({m}) (packets)") if s), 1.0
    if owner == "state_time" or owner.endswith(".state_time"):  # a BBR state's fraction of the time
        who = short(owner[: -len(".state_time")]) if "." in owner else ""
        return " ".join(s for s in (who, f"time in {m} (%)") if s), 100.0
    who = short(owner)
    base = m
    for q in ("_p25", "_p50", "_p75", "_iqr", "_mean", "_min", "_max", "_p95", "_p99"):
        if m.endswith(q) and m[: -len(q)]:
            base = m[: -len(q)]
            break
    stat = m[len(base) :].lstrip("_").replace("mean", "mean ").strip()
    if base in _PRETTY:
        name, unit, scale = _PRETTY[base]
    elif base.startswith("jain_") and not base.endswith("_s"):  # jain_1s, jain_rtt: the time-resolved index
        name, unit, scale = "Jain's index per " + base[len("jain_"):].replace("_", " "), "", 1.0
    else:
        name, unit, scale = base.replace("_", " "), "", 1.0
        for suffix, u, f in _SUFFIX_UNITS:
            if base.endswith(suffix) and len(base) > len(suffix):
                name, unit, scale = base[: -len(suffix)].replace("_", " "), u, f
                break
        if base in _FRACTIONS:
            unit, scale = "%", 100.0
    text = " ".join(s for s in (who, name, stat) if s)
    return (f"{text} ({unit})" if unit else text), scale


def _columns(df: pd.DataFrame, pattern: str) -> list[str]:
    if pattern in df.columns:
        return [pattern]
    cols = [c for c in df.columns if fnmatch.fnmatchcase(c, pattern)]
    if not pattern.startswith("flow"):
        cols = [c for c in cols if not c.startswith("flow")]
    if not cols:
        raise FigureError(f"no results column matches {pattern!r}")
    return cols


def _axis(target: Target, name: str | None, role: str) -> AxisValues:
    if name is None:
        raise FigureError(f"say which axis is {role}")
    if name not in target.axes:
        raise FigureError(f"{name!r} is not an axis of this sweep (axes: {', '.join(target.axes) or 'none'})")
    return axis_values(name, target.results[name].tolist())


def _groups(df: pd.DataFrame, axes: list[str]):
    """(label, sub-frame) per combination of `axes`' values, in axis order."""
    if not axes:
        yield "", df
        return
    keys = df[axes].map(display).astype(str).agg(", ".join, axis=1) if len(axes) > 1 else df[axes[0]].map(display)
    avs = {a: axis_values(a, df[a]) for a in axes}  # one display unit per axis, from all its values
    for key in dict.fromkeys(keys):
        sub = df[keys == key]
        label = ", ".join(param_label(a, sub[a].iloc[0], avs[a]) for a in axes)
        yield label, sub


def param_label(axis: str, value: Any, av: AxisValues | None = None) -> str:
    """`bottleneck rate=40 Mbit/s` (in the display unit of ``av``, the axis's values, or of this value
    alone); an algorithm axis is labelled by the algorithm alone."""
    if axis.endswith(".cca") or axis == "cca":
        return display(value)
    return f"{field_label(axis)}={(av or axis_values(axis, [value])).text(value)}"


def _cca_axis(target: Target) -> str | None:
    return next((a for a in target.axes if a.endswith(".cca")), None)


def _style(i: int, cca: str | None, n: int) -> dict[str, Any]:
    """Colour by algorithm (the palette) when there is one, else by position; style by position."""
    import matplotlib

    if cca is not None:
        return {"color": color_for(cca), "linestyle": ["-", "--", ":", "-."][i % 4], "marker": "osD^v<>p"[i % 8]}
    cmap = matplotlib.colormaps["viridis"]
    return {"color": cmap(0.9 * i / max(1, n - 1)), "linestyle": "-", "marker": "o"}


def _new_figure(panels: int = 1, width: float = 6.4, height: float = 4.2, sharey: bool = True):
    ncols = min(panels, 3)
    nrows = math.ceil(panels / ncols)
    fig = Figure(figsize=(width * ncols * 0.8 if panels > 1 else width, height * nrows * (0.9 if nrows > 1 else 1)), layout="constrained")
    axs = fig.subplots(nrows, ncols, sharey=sharey, squeeze=False).ravel()
    for ax in axs[panels:]:
        ax.set_visible(False)
    return fig, axs[:panels]


# ---------------------------------------------------------------- line with IQR band


def _band_columns(df: pd.DataFrame, col: str) -> tuple[str, str, str] | None:
    names = (f"{col}_p25", f"{col}_p50", f"{col}_p75")
    return names if all(n in df.columns for n in names) else None


@register("line", "sweep", "a metric against one axis with the interquartile band over trials or samples")
def line(
    target: Target,
    y: str = "agg.utilization",
    x: str | None = None,
    hue: str | list[str] | None = None,
    facet: str | None = None,
    band: str = "auto",
    logx: bool = False,
    logy: bool = False,
    title: str | None = None,
) -> Figure:
    df = target.results
    xa = _axis(target, x or _first_numeric_axis(target), "x")
    ycols = _columns(df, y)
    facet_axes = [facet] if facet else []
    hue_axes = ([hue] if isinstance(hue, str) else list(hue)) if hue is not None else [
        a for a in target.axes if a not in (xa.name, *facet_axes)
    ]
    for a in (*hue_axes, *facet_axes):
        _axis(target, a, "hue/facet")
    facets = list(_groups(df, facet_axes))
    fig, axs = _new_figure(len(facets))
    ylabel, scale = metric_label(ycols[0])
    if len(ycols) > 1:  # e.g. "*.share": one line per algorithm
        ylabel = metric_label(ycols[0])[0].split(" ", 1)[-1] if "." in ycols[0] else ylabel
    used_band = set()
    for ax, (flabel, fdf) in zip(axs, facets):
        groups = list(_groups(fdf, hue_axes))
        cca_hue = next((a for a in hue_axes if a.endswith(".cca")), None)
        rest = [a for a in hue_axes if a != cca_hue]
        rest_keys = list(dict.fromkeys(fdf[rest].astype(str).agg("|".join, axis=1))) if rest else [""]
        for i, (glabel, gdf) in enumerate(groups):
            if cca_hue:  # colour = algorithm, line style = the other hue axes
                i = rest_keys.index("|".join(gdf[rest].astype(str).iloc[0])) if rest else 0
            for col in ycols:
                owner = col.rpartition(".")[0]
                cca = owner if len(ycols) > 1 and owner not in ("agg", "") else None
                if cca is None and cca_hue:
                    cca = str(gdf[cca_hue].iloc[0])
                label = ", ".join(s for s in (_owner_label(gdf, owner) if len(ycols) > 1 else "", glabel) if s) or None
                kind = _draw_band_line(ax, xa, gdf, col, scale, band, label, _style(i, cca, len(groups)))
                used_band.add(kind)
        ax.set_xlabel(xa.label)
        if flabel:
            ax.set_title(flabel, fontsize="medium")
        _finish_x(ax, xa, logx)
        if logy:
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
    _legends(fig, axs)
    axs[0].set_ylabel(ylabel)
    note = {"samples": "band: 25th–75th percentile over samples", "trials": "band: interquartile range over trials"}
    sub = "; ".join(note[k] for k in sorted(used_band) if k in note)
    fig.suptitle(title or f"{ylabel} vs {xa.label}" + (f"\n{sub}" if sub else ""), fontsize="medium")
    return fig


def _legends(fig, axs) -> None:
    """A legend wherever two or more labelled lines share a panel: in the panel for up to 8
    entries, else one legend beside the panels (the labels of every panel, once each)."""
    entries: dict[str, Any] = {}
    for ax in axs:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    if len(entries) > 8:
        fig.legend(list(entries.values()), list(entries), loc="outside right upper", fontsize="x-small",
                   ncols=1 + len(entries) // 24)  # fmt: skip
        fig.set_size_inches(fig.get_size_inches()[0] + 2.5 * (1 + len(entries) // 24),
                            max(fig.get_size_inches()[1], 0.17 * min(len(entries), 24) + 1))  # fmt: skip
        return
    for ax in axs:
        if len(ax.get_legend_handles_labels()[1]) >= 2:
            ax.legend(fontsize="small")


def _owner_label(df: pd.DataFrame, owner: str) -> str:
    """`bbr`, or for a flow column `flow 1 (bbr, 50 ms)` from the flow's own summary."""
    if not owner.startswith("flow") or f"{owner}.cca" not in df:
        return owner
    cca, rtt = df[f"{owner}.cca"].iloc[0], df.get(f"{owner}.rtt_ms", pd.Series([None])).iloc[0]
    return f"flow {owner[4:]} ({cca}" + (f", {rtt:g} ms)" if isinstance(rtt, (int, float)) else ")")


def _draw_band_line(ax, xa: AxisValues, df: pd.DataFrame, col: str, scale: float, band: str, label, style) -> str:
    bands = _band_columns(df, col)
    mode = band if band != "auto" else ("samples" if bands else "trials")
    rows = []
    for key, g in df.groupby(df[xa.name].map(display), sort=False):
        vals = pd.to_numeric(g[col], errors="coerce").dropna()
        if vals.empty:
            continue
        xv = coords(xa, [g[xa.name].iloc[0]])[0]
        if mode == "samples" and bands:
            lo, mid, hi = (pd.to_numeric(g[b], errors="coerce").mean() for b in bands)
            mid = vals.mean()
        elif mode == "none":
            lo = hi = math.nan
            mid = vals.median()
        else:
            lo, mid, hi = np.percentile(vals, [25, 50, 75]) if len(vals) > 1 else (math.nan, vals.iloc[0], math.nan)
        rows.append((xv, lo * scale, mid * scale, hi * scale))
    if not rows:
        return "none"
    rows.sort()
    xs, lo, mid, hi = map(np.asarray, zip(*rows))
    ax.plot(xs, mid, markersize=3.5, label=label, **style)
    if not np.all(np.isnan(lo)):
        ax.fill_between(xs, lo, hi, color=style["color"], alpha=0.2, linewidth=0)
        return mode
    return "none"


def _finish_x(ax, xa: AxisValues, logx: bool) -> None:
    if xa.numeric is None:
        ax.set_xticks(range(len(xa.labels)), xa.labels, rotation=30 if max(map(len, xa.labels)) > 6 else 0)
    elif xa.log and xa.base == 2:  # ticks at the swept values (0.25, 0.5, 1, 2, …), evenly spaced
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(xa.numeric), [f"{v:g}" for v in sorted(xa.numeric)])
        ax.minorticks_off()
    elif logx or xa.log:
        ax.set_xscale("log")


def _first_numeric_axis(target: Target) -> str:
    for a in target.axes:
        av = axis_values(a, target.results[a].tolist())
        if av.numeric is not None and len(av.labels) > 1:
            return a
    if target.axes:
        return target.axes[0]
    raise FigureError("this sweep has no axes to plot against")


# ---------------------------------------------------------------- box plots over trials


@register("box", "sweep", "box plots of a metric over trials at each value of one axis (Flent's repetition plots)")
def box(target: Target, y: str = "agg.goodput_bps", x: str | None = None, hue: str | None = None,
        title: str | None = None) -> Figure:
    df = target.results
    xa = _axis(target, x or _first_numeric_axis(target), "x")
    (col,) = _columns(df, y)[:1]
    hue = hue if hue is not None else next((a for a in target.axes if a != xa.name and a.endswith(".cca")), None)
    hues = list(_groups(df, [hue] if hue else []))
    label, scale = metric_label(col)
    fig, (ax,) = _new_figure(1, width=max(6.4, 0.5 * len(xa.labels) * len(hues) + 2))
    width = 0.8 / len(hues)
    for j, (hlabel, hdf) in enumerate(hues):
        cca = str(hdf[hue].iloc[0]) if hue and hue.endswith(".cca") else None
        style = _style(j, cca, len(hues))
        data, pos = [], []
        for i, xv in enumerate(xa.labels):
            vals = pd.to_numeric(hdf.loc[hdf[xa.name].map(display) == xv, col], errors="coerce").dropna()
            if len(vals):
                data.append(vals.to_numpy() * scale)
                pos.append(i + (j - (len(hues) - 1) / 2) * width)
        if not data:
            continue
        bp = ax.boxplot(data, positions=pos, widths=width * 0.85, patch_artist=True, manage_ticks=False)
        for patch in bp["boxes"]:
            patch.set(facecolor=style["color"], alpha=0.45, edgecolor=style["color"])
        for part in ("whiskers", "caps", "medians"):
            for artist in bp[part]:
                artist.set(color=style["color"])
        if hlabel:
            ax.plot([], [], color=style["color"], linewidth=6, alpha=0.45, label=hlabel)
    ax.set_xticks(range(len(xa.labels)), xa.labels)
    ax.set_xlabel(xa.label.split(" (")[0])
    ax.set_ylabel(label)
    ax.grid(True, axis="y", alpha=0.3)
    if len(hues) > 1:
        ax.legend(fontsize="small")
    fig.suptitle(title or f"{label} over trials", fontsize="medium")
    return fig


# ---------------------------------------------------------------- heatmap


@register("heatmap", "sweep", "a metric over two axes (goodput gain of A over B on a diverging scale)")
def heatmap(
    target: Target,
    x: str | None = None,
    y: str | None = None,
    metric: str = "agg.goodput_bps",
    gain: dict[str, Any] | None = None,
    facet: str | list[str] | None = None,
    annotate: bool = True,
    title: str | None = None,
) -> Figure:
    df = target.results
    if x is None or y is None:
        cand = [a for a in target.axes if a != (gain or {}).get("over")]
        if len(cand) < 2:
            raise FigureError("a heatmap needs two axes")
        x, y = x or cand[0], y or cand[1]
    xa, ya = _axis(target, x, "x"), _axis(target, y, "y")
    (col,) = _columns(df, metric)[:1]
    over = None
    if gain:
        over = gain.get("over") or _cca_axis(target)
        if over is None or "a" not in gain or "b" not in gain:
            raise FigureError("gain needs {over = AXIS, a = VALUE, b = VALUE}")
        _axis(target, over, "gain.over")
    used = {x, y, over}
    facet_axes = ([facet] if isinstance(facet, str) else list(facet)) if facet is not None else [
        a for a in target.axes if a not in used
    ]
    facets = list(_groups(df, facet_axes))
    fig, axs = _new_figure(len(facets), width=5.6, height=4.6, sharey=False)
    label, scale = metric_label(col)
    grids, gains = [], []
    for _, fdf in facets:
        if gain:
            ga = _cell_means(fdf[fdf[over].map(display) == display(gain["a"])], xa, ya, col)
            gb = _cell_means(fdf[fdf[over].map(display) == display(gain["b"])], xa, ya, col)
            g = np.vectorize(goodput_gain, otypes=[float])(ga, gb)  # per cent, as Cao et al. define it
            gains.append(g)
            with np.errstate(divide="ignore", invalid="ignore"):
                grids.append(np.log2(1.0 + g / 100.0))  # the goodput ratio a/b on a log2 scale
        else:
            grids.append(_cell_means(fdf, xa, ya, col) * scale)
    finite = np.concatenate([g[np.isfinite(g)] for g in grids]) if grids else np.array([])
    if gain:
        # GpGain spans −100 % … +∞ (+1600 % is a 17× ratio): on a linear scale everything below a few
        # hundred per cent is one colour. The ratio a/b on a log2 scale is symmetric — ×2 and ×1/2
        # are equally far from 0 — with limits ±L (L ≥ 1, a whole power of two).
        lim = max(1.0, math.ceil(float(np.max(np.abs(finite))) - 1e-9)) if finite.size else 1.0
        norm, cmap = TwoSlopeNorm(vmin=-lim, vcenter=0.0, vmax=lim), "RdBu_r"
        clabel = f"goodput of {gain['a']} / {gain['b']} (log₂ scale; cells: gain in %)"
    else:
        norm, cmap = None, "viridis"
        clabel = label
    vmin = float(finite.min()) if finite.size and not gain else None
    vmax = float(finite.max()) if finite.size and not gain else None
    for i, (ax, (flabel, _), grid) in enumerate(zip(axs, facets, grids)):
        im = ax.imshow(grid, origin="lower", aspect="auto", cmap=cmap, norm=norm,
                       **({} if gain else {"vmin": vmin, "vmax": vmax}))
        ax.set_xticks(range(len(xa.labels)), xa.texts(), rotation=45 if len(xa.labels) > 4 else 0,
                      fontsize="small")
        ax.set_yticks(range(len(ya.labels)), ya.texts(), fontsize="small")
        ax.set_xlabel(field_label(xa.name))
        ax.set_ylabel(field_label(ya.name))
        if flabel:
            ax.set_title(flabel, fontsize="medium")
        if annotate and grid.size <= 100:
            for (r, c), v in np.ndenumerate(grid):
                if gain:
                    g = gains[i][r, c]
                    if math.isnan(g):
                        continue
                    text = "+∞" if math.isinf(g) else f"{g:+.0f}" if abs(g) >= 10 else f"{g:+.2g}"
                    dark = not np.isfinite(v) or abs(v) > 0.6 * lim
                elif np.isfinite(v):
                    text = f"{v:.0f}" if abs(v) >= 10 else f"{v:.2g}"
                    dark = vmax is not None and v <= (vmin + vmax) / 2
                else:
                    continue
                ax.text(c, r, text, ha="center", va="center", fontsize=6.5, color="white" if dark else "black")
    cbar = fig.colorbar(im, ax=list(axs), label=clabel, shrink=0.9)
    if gain:
        n = int(lim)
        step = 1 + (2 * n) // 9  # at most 9 ticks, 0 always among them
        ticks = [float(k) for k in range(-n, n + 1) if k % step == 0]
        cbar.set_ticks(ticks, labels=[_ratio_label(t) for t in ticks])
    fig.suptitle(title or (f"goodput gain of {gain['a']} over {gain['b']}" if gain else clabel), fontsize="medium")
    return fig


def _ratio_label(log2_ratio: float) -> str:
    """``2`` → "×4 (+300 %)", ``-1`` → "×1/2 (−50 %)", ``0`` → "×1 (0 %)"."""
    k = int(round(log2_ratio))
    ratio = f"×{2 ** k}" if k >= 0 else f"×1/{2 ** -k}"
    pct = (2.0 ** k - 1) * 100
    return f"{ratio} ({'+' if pct > 0 else '−' if pct < 0 else ''}{abs(pct):.0f} %)"


def _cell_means(df: pd.DataFrame, xa: AxisValues, ya: AxisValues, col: str) -> np.ndarray:
    grid = np.full((len(ya.labels), len(xa.labels)), np.nan)
    xi = {lab: i for i, lab in enumerate(xa.labels)}
    yi = {lab: i for i, lab in enumerate(ya.labels)}
    for (yk, xk), g in df.groupby([df[ya.name].map(display), df[xa.name].map(display)], sort=False):
        v = pd.to_numeric(g[col], errors="coerce").mean()
        grid[yi[yk], xi[xk]] = v
    return grid


# ---------------------------------------------------------------- throughput vs loss


@register("loss", "sweep", "throughput against random loss rate on a log x axis (BBR paper)")
def loss(
    target: Target,
    x: str = "link.loss",
    y: str = "agg.goodput_bps",
    hue: str | None = None,
    facet: str | None = None,
    ideal: bool = True,
    title: str | None = None,
) -> Figure:
    df = target.results
    xa = _axis(target, x, "x (the loss axis)")
    hue = hue or _cca_axis(target)
    if xa.numeric is None:
        raise FigureError(f"{x} values are not loss rates")
    fig = line(target, y=y, x=x, hue=[hue] if hue else [], facet=facet, band="trials", logx=True,
               title=title or f"{metric_label(y)[0]} vs random loss")
    if ideal and {"agg.goodput_bps", "agg.utilization"} <= set(df.columns):
        cap = (pd.to_numeric(df["agg.goodput_bps"]) / pd.to_numeric(df["agg.utilization"])).replace([np.inf], np.nan)
        capacity = float(cap.median()) * metric_label(y)[1] if y.endswith("goodput_bps") else math.nan
        if math.isfinite(capacity):
            xs = np.array(sorted(v for v in xa.numeric if v > 0))
            for ax in fig.axes:
                if ax.get_label() == "<colorbar>" or not ax.get_visible():
                    continue
                ax.plot(xs, capacity * (1 - xs / 100), color="0.5", linestyle=":", label="capacity × (1 − p)")
                ax.legend(fontsize="small")
    return fig


# ---------------------------------------------------------------- time-series overlay


@register("series", "sweep", "one time-series column of each point's run (trial 0), overlaid")
def series(target: Target, column: str = "queue_bytes", table: str = "link", trial: int = 0,
           title: str | None = None) -> Figure:
    import pyarrow.parquet as pq

    runs = target.runs(trial)
    if len(runs) > 12:
        raise FigureError(f"{len(runs)} runs are too many to overlay (at most 12); choose a sub-sweep")
    fig, (ax,) = _new_figure(1, width=7.5, height=3.8)
    label, scale = metric_label(column)
    cca_axis = _cca_axis(target)
    for i, (params, run_dir) in enumerate(runs):
        t = pq.read_table(run_dir / f"{table}.parquet").to_pandas()
        if column not in t.columns:
            raise FigureError(f"{table}.parquet has no column {column!r}")
        if table == "flows":
            s = t.groupby("time_s")[column].sum()
            xs, ys = s.index.to_numpy(), s.to_numpy()
        else:
            xs, ys = t["time_s"].to_numpy(), t[column].to_numpy()
        lab = ", ".join(param_label(k, v) for k, v in params.items()) or None
        cca = str(params[cca_axis]) if cca_axis else None
        ax.plot(xs, ys * scale, linewidth=1.0, label=lab, **{**_style(i, cca, len(runs)), "marker": None})
    ax.set_xlabel("time (s)")
    ax.set_ylabel(label)
    ax.grid(True, alpha=0.3)
    if len(runs) > 1:
        ax.legend(fontsize="small")
    fig.suptitle(title or f"{label} over time", fontsize="medium")
    return fig


# ---------------------------------------------------------------- defaults


def auto_specs(target: Target) -> list[dict[str, Any]]:
    """Figures for a sweep that lists none, chosen from its axes."""
    df = target.results
    axes = [a for a in target.axes if df[a].map(display).nunique() > 1]
    specs: list[dict[str, Any]] = []
    algs = sorted({c.rpartition(".")[0] for c in df.columns if c.endswith(".share") and not c.startswith("flow")})
    cca_axis = _cca_axis(target)
    def n_groups(others: list[str]) -> int:
        return len(df[others].astype(str).drop_duplicates()) if others else 1

    for a in axes:
        if a.endswith(".cca") or n_groups([b for b in axes if b != a]) > 12:
            continue  # too many lines for one panel: the heatmap below shows these
        if a.endswith("loss"):
            specs.append({"kind": "loss", "x": a})
            continue
        specs.append({"kind": "line", "x": a, "y": "agg.utilization"})
        specs.append({"kind": "line", "x": a, "y": "agg.loss_rate"})
        if len(algs) > 1:
            specs.append({"kind": "line", "x": a, "y": "*.share"})
    numeric = [a for a in axes if not a.endswith(".cca")]
    if len(numeric) >= 2:
        if cca_axis and df[cca_axis].nunique() == 2:
            a, b = list(dict.fromkeys(df[cca_axis].map(display)))
            specs.append({"kind": "heatmap", "x": numeric[1], "y": numeric[0],
                          "gain": {"over": cca_axis, "a": a, "b": b}})
        else:
            specs.append({"kind": "heatmap", "x": numeric[1], "y": numeric[0], "metric": "agg.goodput_bps"})
    if len(target.runs()) <= 12:
        specs.append({"kind": "jain"})
        from cclab import record
        from cclab.figures import has_distributions

        first = target.path / "runs" / str(df["run_id"].iloc[0])
        read = getattr(record, "read_histograms", None)
        if read is not None and (first / "histograms.parquet").is_file() and has_distributions(read(first)):
            specs.append({"kind": "cdf", "metric": "rtt"} if len(algs) <= 1 else {"kind": "cdf", "metric": "queue_delay"})
    if (any(c.endswith(".rtt_ms_p95") and not c.startswith(("flow", "agg")) for c in df.columns)
            and n_groups([a for a in axes if not a.endswith(".cca")]) <= 9):
        specs.append({"kind": "scatter"})  # per algorithm and trial, one panel per point
    if not specs or len(df) <= 4:
        specs.append({"kind": "timeseries"})
    return specs
