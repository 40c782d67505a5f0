"""Figures over time: Jain's index, throughput-cycle period, the stacked run figure."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from cclab.errors import printable
from cclab.figures import FigureError, Target, register
from cclab.figures.sweep_figs import param_label
from cclab import metrics
from cclab.metrics import dominant_period, in_window, jain_series, share_series
from cclab.plot import color_for


def _smooth(s: pd.Series, window_s: float | None) -> pd.Series:
    if not window_s or len(s) < 3:
        return s
    dt = float(np.median(np.diff(s.index.to_numpy())))
    n = max(1, int(round(window_s / dt)))
    return s.rolling(n, min_periods=1, center=True).mean() if n > 1 else s


@register("jain", "both", "Jain's fairness index over time (of each point's run for a sweep)")
def jain(target: Target, smooth_s: float | None = 1.0, trial: int = 0, title: str | None = None) -> Figure:
    runs = target.runs(trial)
    if len(runs) > 12:
        raise FigureError(f"{len(runs)} runs are too many to overlay (at most 12)")
    import matplotlib

    fig = Figure(figsize=(7.5, 3.6), layout="constrained")
    ax = fig.subplots()
    cmap = matplotlib.colormaps["viridis"]
    for i, (params, run) in enumerate(target.run_records(trial)):
        s = _smooth(jain_series(run.flows), smooth_s)
        # a label is text: control characters escaped, "$" never starts mathtext
        lab = (", ".join(param_label(k, v) for k, v in params.items()) or printable(run.name)).replace("$", r"\$")
        color = cmap(0.9 * i / max(1, len(runs) - 1)) if len(runs) > 1 else "k"
        ax.plot(s.index, s.to_numpy(), color=color, linewidth=1.1, label=lab)
        n_active = run.flows.loc[run.flows["active"].astype(bool)].groupby("time_s")["flow_id"].nunique()
        if len(runs) == 1 and len(n_active):
            ax.plot(n_active.index, 1.0 / n_active.to_numpy(), color="0.6", linestyle=":", linewidth=1,
                    label="1/n (one flow takes all)")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("Jain's fairness index")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    sm = f" ({smooth_s:g} s moving mean)" if smooth_s else ""
    fig.suptitle(title or f"Jain's fairness index over the active flows' goodput{sm}", fontsize="medium")
    return fig


@register("period", "run", "per-algorithm share over time, its autocorrelation and the dominant cycle period")
def period(target: Target, point: int | None = None, algorithm: str | None = None, min_period_s: float = 1.0,
           title: str | None = None) -> Figure:
    run = target.run(point)
    flows = run.flows.loc[in_window(run.flows["time_s"], run.ir)]
    shares = share_series(flows)
    if shares.shape[1] < 2:
        raise FigureError(f"{run.name}: the period of shares needs two algorithms in the run")
    alg = algorithm or str(shares.columns[0])
    if alg not in shares:
        raise FigureError(f"{run.name}: no algorithm {alg!r} in this run ({', '.join(map(str, shares.columns))})")
    dt = run.ir["sample_interval_ns"] / 1e9
    p, strength, acf = dominant_period(shares[alg].to_numpy(), dt, min_period_s)
    fig = Figure(figsize=(7.5, 5.2), layout="constrained")
    top, bottom = fig.subplots(2, 1)
    for cca in shares.columns:
        top.plot(shares.index, 100 * shares[cca].to_numpy(), color=color_for(str(cca)), linewidth=1, label=str(cca))
    top.set_xlabel("time (s)")
    top.set_ylabel("share of goodput (%)")
    top.set_ylim(0, 100)
    top.grid(True, alpha=0.3)
    top.legend(fontsize="small", loc="upper right")
    lags = np.arange(acf.size) * dt
    bottom.plot(lags, acf, color=color_for(alg), linewidth=1.1)
    bottom.axhline(0, color="0.5", linewidth=0.8)
    text = "no dominant period"
    detect = getattr(metrics, "detect_period", None)  # with its significance test, where cclab.metrics has it
    found = detect(shares[alg].to_numpy(), dt, min_period=min_period_s) if detect is not None else None
    if found is not None and not found.significant:
        text = found.describe()  # "no significant period (strongest peak … s, p = …)"
    if math.isfinite(p):
        bottom.axvline(p, color="k", linestyle="--", linewidth=1)
        bottom.annotate(f"{p:.1f} s", (p, strength), textcoords="offset points", xytext=(5, 5))
        text = f"dominant period {p:.1f} s (autocorrelation {strength:.2f}" + (
            f", p = {found.p_value:.2g})" if found is not None and found.significant else ")")
    bottom.set_xlabel("lag (s)")
    bottom.set_ylabel(f"autocorrelation of {alg} share")
    bottom.grid(True, alpha=0.3)
    fig.suptitle(title or f"{printable(run.name)}: {alg} share — {text}", fontsize="medium", parse_math=False)
    fig.cclab_period_s = p  # for callers (report, tests)
    return fig


@register("timeseries", "run", "stacked per-run time series (goodput, RTT, cwnd, queue, drops, BBR states)")
def timeseries(target: Target, point: int | None = None, **kwargs) -> Figure:
    from cclab.plot import figure_timeseries

    run = target.run(point)
    return figure_timeseries(run.flows, run.link, run.ir, **kwargs)


@register("links", "run", "one panel per link: its queue, queueing delay and drops (topologies, docs/topologies.md)")
def links(target: Target, point: int | None = None, **kwargs) -> Figure:
    from cclab.plot import figure_links

    run = target.run(point)
    return figure_links(run.link, run.ir, **kwargs)


@register("topology", "run", "the links, their nodes, rates and delays, and each flow group's path")
def topology(target: Target, point: int | None = None, **kwargs) -> Figure:
    from cclab.plot import figure_topology

    run = target.run(point)
    if len(run.ir.get("links") or []) < 2 and not any(f.get("ack_path") for f in run.ir["flows"]):
        raise FigureError("a one-link run has no topology to draw (docs/topologies.md)")
    return figure_topology(run.ir, **kwargs)
