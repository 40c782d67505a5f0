"""Distributions: CDFs of RTT, queueing delay and flow completion time; throughput vs delay.

* ``cdf`` — the empirical CDF of every ACK's RTT sample (``metric = "rtt"``),
  of every packet's queueing delay at the bottleneck (``"queue_delay"``), or of
  the finite flows' completion times (``"fct"``; ``slowdown`` for FCT over the
  ideal transfer time). RTT and queueing delay come from the record's
  per-packet histograms (``cclab.metrics.distribution``: exact to a bin of
  < 0.8 %, not percentiles of sample means), summed over the measure window;
  one curve per algorithm (RTT, FCT) or per run (queueing delay). For a sweep,
  one curve per point (its trials pooled), at most :data:`MAX_CURVES`.
* ``scatter`` — Pantheon's throughput-vs-delay plot (Yan et al., USENIX ATC
  2018): per algorithm and run one point (x: the 95th percentile of its RTT
  samples, log scale, better to the right; y: its goodput), and per algorithm
  the 1-σ ellipse of its trials (covariance of log delay and goodput), one
  panel per combination of the sweep's other axes.

Both read only what ``cclab.metrics`` defines (the summary's per-algorithm
``rtt_ms_p95`` and ``goodput_bps``, per-flow ``fct_s`` and ``slowdown``, the
histograms); records made before the per-packet histograms (record version
< 3) have no distributions, which the figure says rather than drawing
percentiles of sample means.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from cclab.figures import FigureError, Target, register
from cclab.figures.sweep_figs import param_label
from cclab.plot import color_for

#: Most curves in one CDF panel.
MAX_CURVES = 12
_LABELS = {"rtt": "RTT (ms)", "queue_delay": "queueing delay (ms)", "fct": "flow completion time (s)",
           "slowdown": "FCT slowdown (FCT / ideal)"}  # fmt: skip


def _distribution(histograms: Any, metric: str, flow_ids: list[int] | None = None) -> pd.DataFrame:
    from cclab import metrics

    distribution = getattr(metrics, "distribution", None)
    if distribution is None:  # pragma: no cover - an engine without per-packet histograms
        raise FigureError("this cclab has no per-packet distributions (cclab.metrics.distribution)")
    return distribution(histograms, metric, flow_ids)


def _histograms(target: Target, run_dir) -> Any:
    if target._run is not None:
        return getattr(target._run, "histograms", None)
    from cclab import record

    read = getattr(record, "read_histograms", None)
    path = run_dir / "histograms.parquet"
    return read(run_dir) if read is not None and path.is_file() else None


def _pool(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Histogram tables of several runs (same bins) as one: counts summed, the CDF recomputed."""
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame({"lower_ms": [], "upper_ms": [], "count": [], "cdf": []})
    d = pd.concat(frames).groupby(["lower_ms", "upper_ms"], as_index=False)["count"].sum().sort_values("lower_ms")
    d["cdf"] = d["count"].cumsum() / d["count"].sum()
    return d


def _step(ax, d: pd.DataFrame, label: str, color: str, linestyle: str = "-") -> None:
    """A histogram's CDF as a step curve: 0 below the first bin, cdf reached at each bin's upper edge."""
    x = np.concatenate([[d["lower_ms"].iloc[0]], d["upper_ms"].to_numpy()])
    y = np.concatenate([[0.0], d["cdf"].to_numpy()])
    ax.step(x, y, where="post", color=color, linestyle=linestyle, lw=1.2, label=label)


def _ecdf(ax, values: np.ndarray, label: str, color: str, linestyle: str = "-") -> None:
    v = np.sort(values[np.isfinite(values)])
    if v.size:
        ax.step(np.concatenate([[v[0]], v]), np.arange(v.size + 1) / v.size, where="post", color=color,
                linestyle=linestyle, lw=1.2, label=label)  # fmt: skip


def _summaries(target: Target) -> list[tuple[dict[str, Any], dict[str, Any], Any]]:
    """(axis values, summary, run dir) of every complete run (all trials), in point order."""
    if target._run is not None:
        return [({}, target._run.summary, target.path)]
    if target.kind == "run":
        return [({}, json.loads((target.path / "summary.json").read_text()), target.path)]
    df = target.results
    out = []
    for _, row in df.iterrows():
        d = target.path / "runs" / row["run_id"]
        out.append(({a: row[a] for a in target.axes}, json.loads((d / "summary.json").read_text()), d))
    return out


def _point_groups(target: Target) -> list[tuple[str, list[tuple[dict[str, Any], Any]]]]:
    """(label, [(summary, run dir) of its trials]) per point, in point order."""
    groups: dict[str, list[tuple[dict[str, Any], Any]]] = {}
    for params, summary, run_dir in _summaries(target):
        label = ", ".join(param_label(k, v) for k, v in params.items()).replace("$", r"\$")
        groups.setdefault(label, []).append((summary, run_dir))
    return list(groups.items())


@register("cdf", "both", "CDF of per-packet RTT or queueing delay, or of flow completion times (per algorithm / point)")
def cdf(target: Target, metric: str = "rtt", logx: bool | None = None, title: str | None = None) -> Figure:
    if metric not in _LABELS:
        raise FigureError(f"cdf metric {metric!r}: expected one of {', '.join(_LABELS)}")
    groups = _point_groups(target)
    sweep = target.kind == "sweep" and len(groups) > 1
    if sweep and len(groups) > MAX_CURVES:
        raise FigureError(f"{len(groups)} points are too many curves for one CDF (at most {MAX_CURVES}); "
                          "draw a sub-sweep")  # fmt: skip
    fig = Figure(figsize=(6.4, 4.0), layout="constrained")
    ax = fig.subplots()
    import matplotlib

    cmap = matplotlib.colormaps["viridis"]
    drawn = 0
    styles = ("-", "--", ":", "-.")
    for i, (plabel, runs) in enumerate(groups):
        point_color = cmap(0.9 * i / max(1, len(groups) - 1)) if sweep else None
        if metric in ("fct", "slowdown"):
            key = "fct_s" if metric == "fct" else "slowdown"
            by_cca: dict[str, list[float]] = {}
            for summary, _d in runs:
                for f in summary.get("per_flow", []):
                    v = f.get(key)
                    if v is not None and math.isfinite(v):
                        by_cca.setdefault(str(f["cca"]), []).append(float(v))
            for j, (cca, vals) in enumerate(by_cca.items()):
                label = ", ".join(s for s in (plabel, cca) if s) + f" (n={len(vals)})"
                _ecdf(ax, np.asarray(vals), label, point_color or color_for(cca), styles[j % 4] if sweep else "-")
                drawn += 1
            continue
        hists = [(_histograms(target, d), s) for s, d in runs]
        if not any(h for h, _ in hists):
            continue
        if metric == "queue_delay":
            d = _pool([_distribution(h, "queue_delay") for h, _ in hists if h])
            if len(d):
                _step(ax, d, plabel or "bottleneck", point_color or "0.2")
                drawn += 1
            continue
        by_cca_ids: dict[str, list[tuple[Any, list[int]]]] = {}
        for h, s in hists:
            if not h:
                continue
            ids: dict[str, list[int]] = {}
            for f in s.get("per_flow", []):
                ids.setdefault(str(f["cca"]), []).append(int(f["flow_id"]))
            for cca, fids in ids.items():
                by_cca_ids.setdefault(cca, []).append((h, fids))
        for j, (cca, parts) in enumerate(by_cca_ids.items()):
            d = _pool([_distribution(h, "rtt", fids) for h, fids in parts])
            if len(d):
                _step(ax, d, ", ".join(s for s in (plabel, cca) if s), point_color or color_for(cca),
                      styles[j % 4] if sweep else "-")  # fmt: skip
                drawn += 1
    if not drawn:
        what = "finite flows (bytes = …) that completed" if metric in ("fct", "slowdown") else \
            "per-packet distributions (records of version 3 and later)"
        raise FigureError(f"{target.path}: no {what} to draw a CDF of")
    ax.set_xlabel(_LABELS[metric])
    ax.set_ylabel("fraction of " + ("flows" if metric in ("fct", "slowdown") else "packets" if metric == "queue_delay"
                                    else "RTT samples (ACKs)"))  # fmt: skip
    ax.set_ylim(0, 1.0)
    if logx if logx is not None else metric in ("fct", "slowdown"):
        ax.set_xscale("log")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    source = {"fct": "finite flows' completion times", "slowdown": "finite flows' completion times",
              "rtt": "every ACK's RTT sample in the measure window",
              "queue_delay": "every packet that left the bottleneck in the measure window"}[metric]
    fig.suptitle(title or f"CDF of {_LABELS[metric].split(' (')[0]} ({source}"
                 + (", trials pooled)" if target.kind == "sweep" else ")"), fontsize="medium")  # fmt: skip
    return fig


# ------------------------------------------------------------------------------------------ scatter


def _ellipse(ax, xs: np.ndarray, ys: np.ndarray, color: str, logx: bool) -> bool:
    """The 1-σ ellipse of (x, y) over trials — of (log10 x, y) on a log x axis — drawn back in data
    coordinates; False with fewer than 2 trials."""
    if xs.size < 2:
        return False
    pts = np.column_stack([np.log10(xs) if logx else xs, ys])
    mean = pts.mean(axis=0)
    cov = np.cov(pts, rowvar=False)
    vals, vecs = np.linalg.eigh(cov)
    vals = np.clip(vals, 0.0, None)
    t = np.linspace(0, 2 * np.pi, 100)
    circle = np.column_stack([np.cos(t), np.sin(t)]) * np.sqrt(vals)
    e = circle @ vecs.T + mean
    ex = 10 ** e[:, 0] if logx else e[:, 0]
    ax.fill(ex, e[:, 1], color=color, alpha=0.15, lw=0)
    ax.plot(ex, e[:, 1], color=color, lw=0.8, label="_ellipse")
    return True


@register("scatter", "both", "throughput vs delay per algorithm with 1-σ trial ellipses (Pantheon-style)")
def scatter(target: Target, delay: str = "rtt_ms_p95", facet: str | list[str] | None = None,
            title: str | None = None) -> Figure:  # fmt: skip
    axes = target.axes if target.kind == "sweep" else []
    for a in [] if facet is None else [facet] if isinstance(facet, str) else facet:
        if a not in axes:
            raise FigureError(f"figure 'scatter': facet {a!r} is not an axis of {target.path}; expected one of "
                              f"{', '.join(axes) or '(none: a single run has no axes)'}")  # fmt: skip
    rows = []
    for params, summary, _d in _summaries(target):
        for cca, a in (summary.get("per_algorithm") or {}).items():
            x, y = a.get(delay), a.get("goodput_bps")
            if x is None or y is None or not (math.isfinite(x) and math.isfinite(y)) or x <= 0:
                continue
            rows.append({**params, "cca": cca, "x": float(x), "y": float(y) / 1e6})
    if not rows:
        raise FigureError(f"{target.path}: no per-algorithm {delay} in the summaries (per-packet RTT percentiles "
                          "come with records of version 3 and later)")  # fmt: skip
    df = pd.DataFrame(rows)
    cca_axes = [a for a in target.axes if a.endswith(".cca")] if target.kind == "sweep" else []
    if facet is None:
        facet_axes = [a for a in (target.axes if target.kind == "sweep" else []) if a not in cca_axes
                      and df[a].astype(str).nunique() > 1]  # fmt: skip
    else:
        facet_axes = [facet] if isinstance(facet, str) else list(facet)
    keys = df[facet_axes].astype(str).agg(", ".join, axis=1) if facet_axes else pd.Series([""] * len(df))
    panels = list(dict.fromkeys(keys))
    if len(panels) > 9:
        raise FigureError(f"{len(panels)} panels (the combinations of {', '.join(facet_axes)}) are too many; "
                          "give facet = [...] or draw a sub-sweep")  # fmt: skip
    ncols = min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig = Figure(figsize=(4.6 * ncols, 3.8 * nrows), layout="constrained")
    axs = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
    for ax in axs[len(panels):]:
        ax.set_visible(False)
    ellipses = False
    from matplotlib.ticker import FuncFormatter, NullFormatter

    for ax, key in zip(axs, panels):
        sub = df[keys == key]
        logx = sub["x"].max() / sub["x"].min() > 3  # Pantheon's log delay axis, where delays span a range
        for cca, g in sub.groupby("cca", sort=False):
            color = color_for(str(cca))
            ax.scatter(g["x"], g["y"], color=color, s=14, label=f"{cca} (n={len(g)})", zorder=3)
            ellipses |= _ellipse(ax, g["x"].to_numpy(), g["y"].to_numpy(), color, logx)
        if logx:
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.margins(x=0.08, y=0.1)
        ax.invert_xaxis()  # Pantheon: lower delay to the right, so "better" is up and to the right
        what = f"{'95th' if delay.endswith('p95') else delay.rsplit('_', 1)[-1]} percentile RTT (ms"
        ax.set_xlabel((what + (", log)" if logx else ")")) if delay.startswith("rtt_ms_p") else delay)
        ax.set_ylabel("goodput (Mbit/s)")
        ax.grid(True, alpha=0.3, which="both")
        if facet_axes:
            first = sub.iloc[0]
            ax.set_title(", ".join(param_label(a, first[a]) for a in facet_axes), fontsize="medium")
        ax.legend(fontsize="small")
    note = "; ellipses: 1 σ over trials" if ellipses else ""
    fig.suptitle(title or f"goodput vs delay per algorithm (better: up and right){note}", fontsize="medium")
    return fig
