"""Figures over time: Jain's index, throughput-cycle period, the stacked run figure."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure

from cclab.errors import printable
from cclab.figures import FigureError, Target, register
from cclab.figures.sweep_figs import param_label
from cclab import metrics
from cclab.metrics import in_window, jain_series, share_series
from cclab.plot import color_for


@register("jain", "both", "Jain's fairness index over time (of each point's run for a sweep)")
def jain(target: Target, smooth_s: float | None = 1.0, trial: int = 0, title: str | None = None) -> Figure:
    """Jain's index of the goodputs of the flows active for a whole bin of ``smooth_s`` seconds
    (:func:`cclab.metrics.jain_over_time`: at 1 s, the series whose mean and minimum over the
    measure window are the summary's ``jain_1s_mean``/``_min``), over the whole run; ``smooth_s=None``
    (Python) draws the index of every recorded per-flow sample instead (noisy: a flow's goodput in
    one 10 ms sample is a few packets)."""
    runs = target.runs(trial)
    if len(runs) > 12:
        raise FigureError(f"{len(runs)} runs are too many to overlay (at most 12)")
    import matplotlib

    fig = Figure(figsize=(7.5, 3.6), layout="constrained")
    ax = fig.subplots()
    cmap = matplotlib.colormaps["viridis"]
    for i, (params, run) in enumerate(target.run_records(trial)):
        s = metrics.jain_over_time(run.flows, run.ir, smooth_s, window=False) if smooth_s else jain_series(run.flows)
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
    sm = f" in {smooth_s:g} s bins" if smooth_s else " per sample"
    fig.suptitle(title or f"Jain's fairness index over the active flows' goodput{sm}", fontsize="medium")
    return fig


@register("period", "run", "per-algorithm share over time, its autocorrelation and the dominant cycle period")
def period(target: Target, point: int | None = None, algorithm: str | None = None, min_period_s: float | None = None,
           title: str | None = None) -> Figure:
    """The share cycle as the summary measures it (``share_period_s``/``_p`` of summary.json): the
    algorithm's share of the goodput in bins of the summary's ``share_bin_s`` (1 s), tested by
    :func:`cclab.metrics.detect_period` with its minimum period (two bins) unless ``min_period_s``
    says otherwise; the top panel also shows the shares at every recorded per-flow sample."""
    run = target.run(point)
    flows = run.flows.loc[in_window(run.flows["time_s"], run.ir)]
    shares = share_series(flows)
    if shares.shape[1] < 2:
        raise FigureError(f"{run.name}: the period of shares needs two algorithms in the run")
    alg = algorithm or str(shares.columns[0])
    if alg not in shares:
        raise FigureError(f"{run.name}: no algorithm {alg!r} in this run ({', '.join(map(str, shares.columns))})")
    bin_s = float((run.summary.get("window") or {}).get("share_bin_s") or metrics.SHARE_BIN_S)
    bins = share_series(flows, bin_s=bin_s)
    binned = bins[alg].to_numpy()
    min_period = 2 * bin_s if min_period_s is None else min_period_s
    found = metrics.detect_period(binned, bin_s, min_period=min_period)
    acf = metrics.autocorrelation(binned)
    fig = Figure(figsize=(7.5, 5.2), layout="constrained")
    top, bottom = fig.subplots(2, 1)
    for cca in shares.columns:
        top.plot(shares.index, 100 * shares[cca].to_numpy(), color=color_for(str(cca)), linewidth=0.6, alpha=0.5)
        top.plot(bins.index, 100 * bins[cca].to_numpy(), color=color_for(str(cca)), linewidth=1.4,
                 label=f"{cca} ({bin_s:g} s bins)")  # fmt: skip
    top.set_xlabel("time (s)")
    top.set_ylabel("share of goodput (%)")
    top.set_ylim(0, 100)
    top.grid(True, alpha=0.3)
    top.legend(fontsize="small", loc="upper right")
    lags = np.arange(acf.size) * bin_s
    bottom.plot(lags, acf, color=color_for(alg), linewidth=1.1)
    bottom.axhline(0, color="0.5", linewidth=0.8)
    p = found.period_s if found.significant else math.nan
    text = found.describe()  # "no significant period (strongest peak … s, p = …)"
    if math.isfinite(p):
        lag = int(round(p / bin_s))
        strength = float(acf[lag]) if lag < acf.size else math.nan
        bottom.axvline(p, color="k", linestyle="--", linewidth=1)
        bottom.annotate(f"{p:.1f} s", (p, strength if math.isfinite(strength) else 0.0), textcoords="offset points",
                        xytext=(5, 5))  # fmt: skip
        text = f"dominant period {p:.1f} s (p = {found.p_value:.2g}, autocorrelation {strength:.2f})"
    bottom.set_xlabel("lag (s)")
    bottom.set_ylabel(f"autocorrelation of {alg} share\n({bin_s:g} s bins)")
    bottom.grid(True, alpha=0.3)
    fig.suptitle(title or f"{printable(run.name)}: {alg} share — {text}", fontsize="medium", parse_math=False)
    fig.cclab_period_s = p  # for callers (report, tests)
    fig.cclab_period = found
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
