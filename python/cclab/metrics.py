"""Metrics — defined once, here, for every backend and every figure.

A backend (the Rust simulator, the Linux kernel runner) hands over *raw*
cumulative counters sampled at the end of each sample interval (the "engine
output" of ``docs/record.md``). This module turns them into the record's
per-interval columns (:func:`flows_frame`, :func:`link_frame`) and summarises
those over the measure window (:func:`summary`). Nothing else in cclab
computes a metric; figures, tables and sweeps read these columns and this
summary.

Conventions
-----------
* A sample at time ``t`` describes the interval ``(t_prev, t]`` where
  ``t_prev`` is the previous sample's time (0 for the first sample).
  Rates are Δcounter·8 / Δt.
* The measure window ``[from, to)`` contains the samples whose interval lies
  inside it: ``from < t ≤ to`` (for the sample grid ``t = k·interval`` this is
  exactly the intervals between ``from`` and ``to``).
* Goodput counts payload bytes delivered in order to the receiving
  application; throughput counts wire bytes (payload + headers) leaving the
  bottleneck. A single flow on an idle link therefore reaches at most
  ``mss / (mss + header_bytes)`` (1448/1500 ≈ 96.5 %) of the capacity in
  goodput.
* Missing quantities are NaN in frames and ``null`` in the JSON summary.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "FLOW_COLUMNS",
    "LINK_COLUMNS",
    "bdp_bytes",
    "flows_frame",
    "goodput_gain",
    "jain_index",
    "jain_series",
    "link_frame",
    "link_names",
    "link_summary",
    "measure_window_ns",
    "peak_queue_bytes",
    "retrans_rate",
    "share_series",
    "startup_exit_rounds",
    "state_fractions",
    "summary",
    "time_to_rate",
]

#: Columns of ``flows.parquet`` in order (docs/record.md).
FLOW_COLUMNS = (
    "time_s", "flow_id", "group", "cca", "active", "goodput_bps", "throughput_bps",
    "send_rate_bps", "cwnd_bytes", "inflight_bytes", "ssthresh_bytes", "srtt_ms",
    "rtt_ms", "min_rtt_ms", "pacing_rate_bps", "retrans_segs", "lost_segs",
    "rto_count", "state", "w_max_bytes", "bw_bps", "bw_min_rtt_ms", "pacing_gain",
    "cwnd_gain", "inflight_hi_bytes", "inflight_lo_bytes", "bw_hi_bps", "bw_lo_bps",
)  # fmt: skip

#: Columns of ``link.parquet`` in order (docs/record.md), plus
#: ``arrival_packets`` (packets that arrived at the bottleneck in the interval
#: = departed + dropped + Δqueued), needed for the bottleneck loss rate.
#: ``link`` is the link's name (``"link"`` for the one-link form; one row per
#: link per sample in a topology).
LINK_COLUMNS = (
    "time_s", "link", "queue_bytes", "queue_packets", "queue_delay_ms", "throughput_bps",
    "arrival_bps", "drops_overflow", "drops_random", "drops_aqm", "marks_ce", "capacity_bps",
    "delay_ms", "utilization", "departed_packets", "arrival_packets",
)  # fmt: skip

DROP_CAUSES = ("overflow", "random", "aqm")

_NS_PER_S = 1e9
_NS_PER_MS = 1e6

# raw flow column -> record column, for values copied as they are
_FLOW_GAUGES = {
    "cwnd_bytes": "cwnd_bytes",
    "inflight_bytes": "inflight_bytes",
    "ssthresh_bytes": "ssthresh_bytes",
    "pacing_rate_bps": "pacing_rate_bps",
    "cc_w_max_bytes": "w_max_bytes",
    "cc_bw_bps": "bw_bps",
    "cc_pacing_gain": "pacing_gain",
    "cc_cwnd_gain": "cwnd_gain",
    "cc_inflight_hi_bytes": "inflight_hi_bytes",
    "cc_inflight_lo_bytes": "inflight_lo_bytes",
    "cc_bw_hi_bps": "bw_hi_bps",
    "cc_bw_lo_bps": "bw_lo_bps",
}
# raw ns gauge -> record ms column
_FLOW_NS_TO_MS = {
    "srtt_ns": "srtt_ms",
    "rtt_ns": "rtt_ms",
    "min_rtt_ns": "min_rtt_ms",
    "cc_min_rtt_ns": "bw_min_rtt_ms",
}
# raw cumulative byte counter -> record rate column (bit/s over the interval)
_FLOW_RATES = {
    "delivered_bytes": "goodput_bps",
    "egress_bytes": "throughput_bps",
    "sent_bytes": "send_rate_bps",
}
# raw cumulative event counter -> record per-interval count
_FLOW_COUNTS = {"retrans_segs": "retrans_segs", "lost_segs": "lost_segs", "rto_count": "rto_count"}


# --------------------------------------------------------------------------
# small pure helpers


def jain_index(xs: Iterable[float]) -> float:
    """Jain's fairness index ``(Σx)² / (n·Σx²)``.

    Jain, Chiu, Hawe, "A Quantitative Measure of Fairness and Discrimination
    for Resource Allocation in Shared Computer Systems", DEC TR-301, 1984.
    1 when all ``n`` shares are equal, ``1/n`` when one takes everything.
    NaN entries are ignored; NaN for an empty vector or when all are zero.
    """
    x = np.asarray(list(xs), dtype=float)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return math.nan
    sq = float(np.sum(x * x))
    if sq == 0.0:
        return math.nan
    return float(np.sum(x)) ** 2 / (x.size * sq)


def goodput_gain(a: float, b: float) -> float:
    """Goodput gain of A over B in percent: ``(g_A − g_B) / g_B × 100``.

    Cao et al., "When to use and when not to use BBR: An empirical analysis
    and evaluation study", IMC 2019 (their heatmaps of BBR over CUBIC).
    NaN when ``b`` is 0 or either value is NaN.
    """
    if b == 0 or math.isnan(a) or math.isnan(b):
        return math.nan
    return (a - b) / b * 100.0


def bdp_bytes(rate_bps: float, rtt_ns: float) -> float:
    """Bandwidth-delay product in bytes: ``rate × RTT / 8``.

    As the scenario's ``"Nbdp"`` buffer (docs/ir.md: rate × min flow RTT).
    """
    return rate_bps * rtt_ns / _NS_PER_S / 8.0


def measure_window_ns(ir: Mapping[str, Any]) -> tuple[int, int]:
    """The IR's measure window ``[from_ns, to_ns)`` (``to`` defaults to the duration)."""
    m = ir.get("measure") or {}
    lo = int(m.get("from_ns") or 0)
    hi = m.get("to_ns")
    return lo, int(hi if hi is not None else ir["duration_ns"])


# --------------------------------------------------------------------------
# raw engine output -> record frames


def _col(raw: Mapping[str, Any], name: str, n: int) -> np.ndarray:
    """A raw column as float64, or all-NaN when the backend does not report it."""
    if name in raw and raw[name] is not None:
        return np.asarray(raw[name], dtype=float)
    return np.full(n, np.nan)


def _grouping(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(stable order by key, mask of each key's first row in that order) for :func:`_diff_from_zero`."""
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    starts = np.ones(k.size, dtype=bool)
    starts[1:] = k[1:] != k[:-1]
    return order, starts


def _diff_from_zero(values: np.ndarray, grouping: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
    """Per-group first difference of a cumulative series whose value at t=0 is 0.

    ``grouping`` (from :func:`_grouping` over the flow ids) groups rows in row
    order; ``None`` means one series.
    """
    if grouping is None:
        return np.diff(values, prepend=0.0)
    order, starts = grouping
    v = values[order]
    d = np.diff(v, prepend=0.0)
    d[starts] = v[starts]
    out = np.empty_like(d)
    out[order] = d
    return out


def flows_frame(raw: Mapping[str, Any], ir: Mapping[str, Any]) -> pd.DataFrame:
    """Per-flow per-interval record columns (``flows.parquet``) from raw output.

    Definitions (docs/record.md):

    * ``goodput_bps`` = Δdelivered_bytes·8 / Δt (in-order payload handed to the
      receiving application; RFC 6349 §4.3 calls this "goodput").
    * ``throughput_bps`` = Δegress_bytes·8 / Δt (this flow's wire bytes leaving
      the bottleneck); ``send_rate_bps`` = Δsent_bytes·8 / Δt (incl. retransmissions).
    * ``retrans_segs``, ``lost_segs``, ``rto_count``: events in the interval.
    * ``srtt_ms``, ``rtt_ms`` (mean RTT sample in the interval), ``min_rtt_ms``,
      ``bw_min_rtt_ms``: the raw nanoseconds / 1e6.
    * ``state``: the algorithm's state name (``raw["state_names"][cca][code]``),
      missing when the algorithm exports no states.
    * gauges (cwnd, inflight, ssthresh, pacing rate, cc_* state) as sampled.
    """
    rf = raw["flows"]
    time_ns = np.asarray(rf["time_ns"], dtype=np.int64)
    flow_id = np.asarray(rf["flow_id"], dtype=np.int64)
    n = time_ns.size
    # Stable order by (flow, time) is not required: diffs are taken per flow
    # in row order, and rows are ordered by time (docs/record.md).
    by_flow = _grouping(flow_id)
    dt_s = _diff_from_zero(time_ns.astype(float), by_flow) / _NS_PER_S
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_dt = np.where(dt_s > 0, 1.0 / dt_s, np.nan)

    ids = np.array([int(f["id"]) for f in ir["flows"]], dtype=np.int64)
    order = np.argsort(ids)
    pos = order[np.searchsorted(ids, flow_id, sorter=order)]
    cca = np.array([str(f["cca"]) for f in ir["flows"]], dtype=object)[pos]
    group = np.array([int(f.get("group", 0)) for f in ir["flows"]], dtype=np.int64)[pos]

    cols: dict[str, Any] = {
        "time_s": time_ns / _NS_PER_S,
        "flow_id": flow_id,
        "group": group,
        "cca": cca,
        "active": np.asarray(rf["active"], dtype=bool) if "active" in rf else np.ones(n, bool),
    }
    for src, dst in _FLOW_RATES.items():
        cols[dst] = _diff_from_zero(_col(rf, src, n), by_flow) * 8.0 * inv_dt
    for src, dst in _FLOW_GAUGES.items():
        cols[dst] = _col(rf, src, n)
    for src, dst in _FLOW_NS_TO_MS.items():
        cols[dst] = _col(rf, src, n) / _NS_PER_MS
    for src, dst in _FLOW_COUNTS.items():
        cols[dst] = _diff_from_zero(_col(rf, src, n), by_flow)
    cols["state"] = _state_names(rf, cca, raw.get("state_names") or {}, n)
    return pd.DataFrame({c: cols[c] for c in FLOW_COLUMNS})


def _state_names(rf: Mapping[str, Any], cca: np.ndarray, names: Mapping[str, Sequence[str]], n: int) -> pd.Series:
    codes = _col(rf, "cc_state", n)
    out = np.full(n, None, dtype=object)
    for alg in dict.fromkeys(names):
        table = list(names.get(alg) or [])
        if not table:
            continue
        idx = np.flatnonzero((cca == alg) & ~np.isnan(codes))
        c = codes[idx].astype(np.int64)
        lookup = np.array(table + [None], dtype=object)
        known = (c >= 0) & (c < len(table))
        out[idx] = lookup[np.where(known, c, len(table))]
        for i, code in zip(idx[~known], c[~known]):
            out[i] = f"state{code}"
    return pd.Series(out, dtype="str")


def link_frame(raw: Mapping[str, Any], ir: Mapping[str, Any]) -> pd.DataFrame:
    """Per-interval link columns (``link.parquet``) from raw output, one row per
    link per sample (``link`` = the link's name; rows by time, then link).

    * ``queue_delay_ms`` = Δsojourn_sum_ns / Δdeparted_packets / 1e6: the mean
      queueing delay of the packets that left the queue in the interval (NaN if
      none left).
    * ``throughput_bps`` = Δegress_bytes·8 / Δt (wire bytes leaving the
      link); ``arrival_bps`` = Δarrival_bytes·8 / Δt.
    * ``drops_*``: packets dropped in the interval, by cause (overflow = the
      buffer was full, random = configured loss, aqm = the queue discipline's
      decision: RED, CoDel, FQ-CoDel, PIE); ``marks_ce``: packets the queue
      discipline marked Congestion Experienced instead (0 in records made
      before marks existed).
    * ``utilization`` = throughput_bps / capacity_bps (NaN when the capacity is 0).
    * ``departed_packets``, ``arrival_packets`` (= departed + dropped + Δqueued):
      packets in the interval, for the loss rate.

    On a link that an ``ack_path`` crosses, ACKs are packets like any other
    (docs/ir.md): they count in every column.
    """
    rl = raw["link"]
    time_ns = np.asarray(rl["time_ns"], dtype=np.int64)
    n = time_ns.size
    names = link_names(ir)
    link_id = np.asarray(rl["link_id"], dtype=np.int64) if "link_id" in rl else np.zeros(n, dtype=np.int64)
    by_link = _grouping(link_id) if len(names) > 1 else None
    dt_s = _diff_from_zero(time_ns.astype(float), by_link) / _NS_PER_S
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_dt = np.where(dt_s > 0, 1.0 / dt_s, np.nan)
        departed = _diff_from_zero(_col(rl, "departed_packets", n), by_link)
        sojourn = _diff_from_zero(_col(rl, "sojourn_sum_ns", n), by_link)
        queue_delay_ms = np.where(departed > 0, sojourn / departed, np.nan) / _NS_PER_MS
        throughput = _diff_from_zero(_col(rl, "egress_bytes", n), by_link) * 8.0 * inv_dt
        capacity = _col(rl, "capacity_bps", n)
        utilization = np.where(capacity > 0, throughput / capacity, np.nan)
    drops = {c: _diff_from_zero(_col(rl, f"drops_{c}", n), by_link) for c in DROP_CAUSES}
    marks = _diff_from_zero(_col(rl, "marks_ce", n), by_link) if "marks_ce" in rl else np.zeros(n)
    queue_packets = _col(rl, "queue_packets", n)
    arrivals = departed + sum(drops.values()) + _diff_from_zero(queue_packets, by_link)
    return pd.DataFrame(
        {
            "time_s": time_ns / _NS_PER_S,
            "link": pd.Categorical(np.asarray(names, dtype=object)[link_id], categories=names),
            "queue_bytes": _col(rl, "queue_bytes", n),
            "queue_packets": queue_packets,
            "queue_delay_ms": queue_delay_ms,
            "throughput_bps": throughput,
            "arrival_bps": _diff_from_zero(_col(rl, "arrival_bytes", n), by_link) * 8.0 * inv_dt,
            "drops_overflow": drops["overflow"],
            "drops_random": drops["random"],
            "drops_aqm": drops["aqm"],
            "marks_ce": marks,
            "capacity_bps": capacity,
            "delay_ms": _col(rl, "delay_ns", n) / _NS_PER_MS,
            "utilization": utilization,
            "departed_packets": departed,
            "arrival_packets": arrivals,
        }
    )


def link_names(ir: Mapping[str, Any]) -> list[str]:
    """The names of the IR's links in order (``["link"]`` for the one-link form and stored v3 IRs)."""
    links = ir.get("links")
    return [str(link["name"]) for link in links] if links else ["link"]


def with_link_column(link: pd.DataFrame) -> pd.DataFrame:
    """A ``link.parquet`` frame with its ``link`` column: records made before topologies have none
    (one link, named ``"link"``)."""
    if "link" in link.columns:
        return link
    out = link.assign(link=pd.Categorical(["link"] * len(link), categories=["link"]))
    return out[["time_s", "link", *(c for c in link.columns if c != "time_s")]]


# --------------------------------------------------------------------------
# summaries over the measure window


def in_window(time_s: pd.Series | np.ndarray, ir: Mapping[str, Any]) -> np.ndarray:
    """Boolean mask of samples whose interval lies in the measure window (``from < t ≤ to``)."""
    lo, hi = measure_window_ns(ir)
    t = np.asarray(time_s, dtype=float)
    return (t > lo / _NS_PER_S + 1e-12) & (t <= hi / _NS_PER_S + 1e-12)


def _pcts(x: pd.Series | np.ndarray, prefix: str) -> dict[str, float]:
    a = np.asarray(x, dtype=float)
    a = a[~np.isnan(a)]
    if a.size == 0:
        return {f"{prefix}_mean": math.nan, **{f"{prefix}_p{q}": math.nan for q in (50, 95, 99)}}
    p50, p95, p99 = np.percentile(a, [50, 95, 99])
    return {f"{prefix}_mean": float(a.mean()), f"{prefix}_p50": float(p50), f"{prefix}_p95": float(p95), f"{prefix}_p99": float(p99)}


#: Share and fairness samples are taken over bins of this many seconds: at
#: 10 ms, in-order delivery is too bursty (one lost segment holds back an RTT
#: of data, then releases it at once), so per-sample shares swing between 0
#: and 1 and their IQR says nothing about the split of the link.
SHARE_BIN_S = 1.0


def _bin_time(time_s: pd.Series, bin_s: float | None) -> pd.Series:
    """Label each sample with the end of its ``bin_s`` bin (unchanged when ``bin_s`` is falsy)."""
    if not bin_s:
        return time_s
    return np.ceil(time_s / bin_s - 1e-9) * bin_s


def share_series(flows: pd.DataFrame, key: str = "cca", bin_s: float | None = None) -> pd.DataFrame:
    """Share of the total goodput by ``key`` over time (rows: sample or bin end time, columns: key).

    With ``bin_s`` the goodput is summed over bins of that length first.
    Samples (bins) where the total goodput is 0 are dropped (the share is undefined).
    """
    binned = flows.assign(time_s=_bin_time(flows["time_s"], bin_s))
    g = binned.pivot_table(index="time_s", columns=key, values="goodput_bps", aggfunc="sum", fill_value=0.0)
    total = g.sum(axis=1)
    g = g.loc[total > 0]
    return g.div(total[total > 0], axis=0)


def jain_series(flows: pd.DataFrame, bin_s: float | None = None) -> pd.Series:
    """Jain's index over time, over the goodputs of the flows active in each sample (or ``bin_s`` bin)."""
    act = flows.loc[flows["active"].astype(bool), ["time_s", "flow_id", "goodput_bps"]]
    if bin_s:
        act = act.assign(time_s=_bin_time(act["time_s"], bin_s)).groupby(["time_s", "flow_id"], as_index=False)[
            "goodput_bps"
        ].mean()
    return act.groupby("time_s")["goodput_bps"].agg(jain_index).rename("jain")


def summary(
    flows: pd.DataFrame, link: pd.DataFrame, ir: Mapping[str, Any], *, share_bin_s: float = SHARE_BIN_S
) -> dict[str, Any]:
    """Per-flow, per-algorithm and aggregate metrics over the measure window.

    Returns ``{"window": {from_s, to_s, duration_s, samples}, "per_flow":
    [{flow_id, …}], "per_algorithm": {cca: {…}}, "aggregate": {…}}``.

    Per flow:
      ``goodput_bps`` mean goodput = payload bits delivered in the window /
      window length; ``share`` its fraction of all flows' goodput;
      ``retrans_segs`` retransmitted segments; ``retrans_rate`` =
      retransmitted segments / segments sent, with segments sent estimated as
      wire bytes sent / (mss + header_bytes) (full-size segments);
      ``rtt_ms_mean/p50/p95/p99`` over the per-interval mean RTT samples (not
      per packet); ``cwnd_bytes_mean`` over the samples where the flow is active.
    Per algorithm:
      ``goodput_bps`` (sum over its flows), ``share`` of the total, and the
      share over time (Σ goodput of its flows / Σ goodput of all flows, in
      bins of ``share_bin_s`` = 1 s, see :data:`SHARE_BIN_S`) summarised by
      its 25th/50th/75th percentiles and ``share_iqr`` = p75 − p25 — the
      interquartile band of the testbed studies (the WPI thesis' share vs
      buffer figures).
    Aggregate:
      ``goodput_bps`` total; ``utilization`` = delivered payload bits /
      capacity bits (Σ capacity·Δt) over the window; ``link_utilization`` the
      same with wire bits leaving the bottleneck; ``loss_rate`` = packets
      dropped at the bottleneck / packets arriving there; ``drops`` by cause;
      ``marks_ce`` packets marked CE and ``mark_rate`` = marks / packets
      that left the bottleneck;
      ``queue_delay_ms_mean`` weighted by departed packets (the true mean
      sojourn) and ``p50/p95/p99`` over the per-interval means; ``jain`` =
      Jain's index over the per-flow mean goodputs of the flows active at some
      sample in the window; ``retrans_segs`` total.

    The result is JSON-safe (NaN → ``None``).
    """
    lo, hi = measure_window_ns(ir)
    fdt = flows.groupby("flow_id", sort=False)["time_s"].diff().fillna(flows["time_s"])
    link = with_link_column(link)
    ldt = link.groupby("link", observed=True, sort=False)["time_s"].diff().fillna(link["time_s"])
    fmask = in_window(flows["time_s"], ir)
    lmask = in_window(link["time_s"], ir)
    fw = flows.loc[fmask].assign(dt_s=fdt[fmask])
    lw = link.loc[lmask].assign(dt_s=ldt[lmask])
    window_s = (hi - lo) / _NS_PER_S
    wire_seg = float(ir.get("mss", 1448)) + float(ir.get("header_bytes", 52))
    covered_s = float(lw.groupby("link", observed=True)["dt_s"].sum().max()) if len(lw) else window_s

    per_flow: list[dict[str, Any]] = []
    delivered_bits: dict[int, float] = {}
    by_flow = {int(k): d for k, d in fw.groupby("flow_id", sort=False)}
    for f in ir["flows"]:
        fid = int(f["id"])
        d = by_flow.get(fid, fw.iloc[:0])
        bits = float((d["goodput_bps"] * d["dt_s"]).sum())
        delivered_bits[fid] = bits
        sent_segs = float((d["send_rate_bps"] * d["dt_s"]).sum()) / 8.0 / wire_seg
        retrans = float(d["retrans_segs"].sum())
        active = d.loc[d["active"].astype(bool)]
        per_flow.append(
            {
                "flow_id": fid,
                "group": int(f.get("group", 0)),
                "cca": str(f["cca"]),
                "rtt_ms": f["rtt_ns"] / _NS_PER_MS,
                "path": [str(x) for x in f.get("path", ["link"])],
                "ack_path": [str(x) for x in f.get("ack_path", [])],
                "active_in_window": bool(len(active) > 0),
                "goodput_bps": bits / covered_s if covered_s > 0 else math.nan,
                "retrans_segs": retrans,
                "retrans_rate": retrans / sent_segs if sent_segs > 0 else math.nan,
                "rto_count": float(d["rto_count"].sum()),
                **_pcts(d["rtt_ms"], "rtt_ms"),
                "cwnd_bytes_mean": float(active["cwnd_bytes"].mean()) if len(active) else math.nan,
            }
        )
    total_bits = sum(delivered_bits.values())
    for row in per_flow:
        row["share"] = delivered_bits[row["flow_id"]] / total_bits if total_bits > 0 else math.nan

    per_alg: dict[str, dict[str, Any]] = {}
    shares = share_series(fw, bin_s=share_bin_s) if len(fw) else pd.DataFrame()
    for alg in dict.fromkeys(str(f["cca"]) for f in ir["flows"]):
        rows = [r for r in per_flow if r["cca"] == alg]
        bits = sum(delivered_bits[r["flow_id"]] for r in rows)
        s = shares[alg].to_numpy() if alg in shares else np.array([])
        q25, q50, q75 = np.percentile(s, [25, 50, 75]) if s.size else (math.nan,) * 3
        per_alg[alg] = {
            "flows": len(rows),
            "goodput_bps": bits / covered_s if covered_s > 0 else math.nan,
            "share": bits / total_bits if total_bits > 0 else math.nan,
            "share_p25": float(q25),
            "share_p50": float(q50),
            "share_p75": float(q75),
            "share_iqr": float(q75 - q25),
        }

    per_link = link_summary(lw, ir, delivered_bits, covered_s)
    names = list(per_link)
    if len(names) == 1:
        main_link = per_link[names[0]]
        together = main_link
    else:
        # several links: the bottleneck is the most utilized; drops, marks and queueing over all links
        main_link = max(per_link.values(), key=lambda x: -1.0 if x["utilization"] is None or
                        math.isnan(x["utilization"]) else x["utilization"])  # fmt: skip
        together = _link_metrics(lw, delivered_bits_crossing=math.nan)
    active_ids = [r["flow_id"] for r in per_flow if r["active_in_window"]]
    aggregate = {
        "goodput_bps": total_bits / covered_s if covered_s > 0 else math.nan,
        "utilization": main_link["goodput_utilization"] if len(names) > 1 else
        (total_bits / main_link["capacity_bits"] if main_link["capacity_bits"] > 0 else math.nan),  # fmt: skip
        "link_utilization": main_link["utilization"],
        **({"bottleneck": next(n for n in names if per_link[n] is main_link)} if len(names) > 1 else {}),
        "loss_rate": together["loss_rate"],
        "drops": together["drops"],
        "drops_total": together["drops_total"],
        "marks_ce": together["marks_ce"],
        "mark_rate": together["mark_rate"],
        "arrival_packets": together["arrival_packets"],
        "retrans_segs": sum(r["retrans_segs"] for r in per_flow),
        **{k: together[k] for k in ("queue_delay_ms_mean", "queue_delay_ms_p50", "queue_delay_ms_p95",
                                    "queue_delay_ms_p99", "queue_bytes_mean")},  # fmt: skip
        "jain": jain_index(r["goodput_bps"] for r in per_flow if r["flow_id"] in active_ids),
        "flows_active": len(active_ids),
    }
    for entry in per_link.values():
        del entry["capacity_bits"]
    out = {
        "window": {"from_s": lo / _NS_PER_S, "to_s": hi / _NS_PER_S, "duration_s": window_s, "samples": int(lw["time_s"].nunique()),
                   "share_bin_s": share_bin_s},  # fmt: skip
        "per_flow": per_flow,
        "per_algorithm": per_alg,
        "per_link": per_link,
        "aggregate": aggregate,
    }
    return json_safe(out)


def _link_metrics(lw: pd.DataFrame, delivered_bits_crossing: float) -> dict[str, Any]:
    """Link metrics over the window rows ``lw`` of one link (or of several together)."""
    cap_bits = float((lw["capacity_bps"] * lw["dt_s"]).sum())
    wire_bits = float((lw["throughput_bps"] * lw["dt_s"]).sum())
    covered_s = float(lw.groupby("link", observed=True)["dt_s"].sum().max()) if "link" in lw and len(lw) else \
        float(lw["dt_s"].sum())  # fmt: skip
    drops = {c: float(lw[f"drops_{c}"].sum()) for c in DROP_CAUSES}
    marks = float(lw["marks_ce"].sum()) if "marks_ce" in lw else 0.0
    arrivals = float(lw["arrival_packets"].sum()) if "arrival_packets" in lw else math.nan
    departed = lw["departed_packets"] if "departed_packets" in lw else pd.Series(dtype=float)
    qd = lw["queue_delay_ms"]
    weight = float(departed.where(qd.notna(), 0.0).sum())
    queue = _pcts(qd, "queue_delay_ms")
    if weight > 0:
        queue["queue_delay_ms_mean"] = float((qd.fillna(0.0) * departed).sum()) / weight
    return {
        "capacity_bits": cap_bits,
        "utilization": wire_bits / cap_bits if cap_bits > 0 else math.nan,
        "goodput_utilization": delivered_bits_crossing / cap_bits if cap_bits > 0 else math.nan,
        "throughput_bps": wire_bits / covered_s if covered_s > 0 else math.nan,
        "loss_rate": sum(drops.values()) / arrivals if arrivals > 0 else math.nan,
        "drops": drops,
        "drops_total": sum(drops.values()),
        "marks_ce": marks,
        "mark_rate": marks / float(departed.sum()) if len(departed) and float(departed.sum()) > 0 else math.nan,
        "arrival_packets": arrivals,
        **queue,
        "queue_bytes_mean": float(lw["queue_bytes"].mean()) if len(lw) else math.nan,
    }


def link_summary(lw: pd.DataFrame, ir: Mapping[str, Any], delivered_bits: Mapping[int, float],
                 covered_s: float) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Per link (by name, in the IR's order), over the window rows ``lw`` of ``link.parquet`` (with
    ``dt_s``): ``utilization`` = wire bits that left the link / capacity bits (data and ACKs);
    ``goodput_utilization`` = payload bits delivered to the receivers of the flows whose data crosses
    the link / its capacity bits; ``throughput_bps``; ``drops`` by cause, ``drops_total``,
    ``loss_rate`` = dropped / arrived packets; ``marks_ce``, ``mark_rate``; queueing delay
    (``queue_delay_ms_mean`` weighted by departed packets, ``p50/p95/p99`` over the per-interval
    means) and ``queue_bytes_mean``; ``from``/``to`` its nodes; ``flows`` the ids whose data
    crosses it, ``ack_flows`` those whose ACKs do."""
    lw = with_link_column(lw)
    links = ir.get("links") or [{"name": "link", "from": "left", "to": "right"}]
    flows = ir["flows"]
    out: dict[str, dict[str, Any]] = {}
    by_link = {str(k): d for k, d in lw.groupby("link", observed=True, sort=False)}
    for link in links:
        name = str(link["name"])
        data_ids = [int(f["id"]) for f in flows if name in f.get("path", ["link"])]
        ack_ids = [int(f["id"]) for f in flows if name in f.get("ack_path", [])]
        rows = by_link.get(name, lw.iloc[:0])
        crossing = sum(delivered_bits.get(i, 0.0) for i in data_ids)
        out[name] = {"from": str(link.get("from", "left")), "to": str(link.get("to", "right")),
                     **_link_metrics(rows, crossing), "flows": data_ids, "ack_flows": ack_ids}  # fmt: skip
    return out


def json_safe(obj: Any) -> Any:
    """Recursively convert numpy scalars to Python and NaN/±inf to ``None``."""
    if isinstance(obj, Mapping):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    return obj


# ---- cycles -------------------------------------------------------------------


def dominant_period(x: np.ndarray, dt: float, min_period: float | None = None) -> tuple[float, float, np.ndarray]:
    """Dominant period of a regularly sampled series, from its autocorrelation.

    The series is detrended (mean removed); its autocorrelation r(k) is
    computed by FFT (zero-padded, so not circular), each lag averaged over
    its n − k pairs (unbiased, so peaks do not drift to shorter lags) and
    normalised to r(0)=1.
    The period is the lag of the peak of the first positive lobe of r after r
    first drops below zero (a cycle passes through anti-correlation before it
    repeats; later lobes are its multiples), among lags up to half the series
    and not shorter than `min_period`. Returns (period in seconds, r at that lag —
    the cycle's strength, 1 for a perfect cycle — and r itself); the period
    is NaN when r has no such lobe (no cycle, or cycles longer than half the series).
    """
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    n = x.size
    if n < 8:
        return math.nan, math.nan, np.array([])
    x = x - x.mean()
    if not np.any(x):
        return math.nan, math.nan, np.zeros(n // 2)
    f = np.fft.rfft(x, 2 * n)
    acf = np.fft.irfft(f * np.conj(f))[: n // 2]
    acf = acf / (n - np.arange(acf.size))  # unbiased: each lag's mean over its n − k pairs
    acf = acf / acf[0]
    # positive lobes of r after its first negative stretch (and after min_period)
    pos = acf > 0
    first_neg = np.flatnonzero(~pos)
    if first_neg.size == 0:
        return math.nan, math.nan, acf
    i = max(int(first_neg[0]), int(math.ceil((min_period or 0) / dt)))
    while i < acf.size:
        ups = np.flatnonzero(pos[i:])
        if ups.size == 0:
            break
        u = i + int(ups[0])
        downs = np.flatnonzero(~pos[u:])
        d = u + int(downs[0]) if downs.size else acf.size
        k = u + int(np.argmax(acf[u:d]))
        if d - u >= 3 and k < acf.size - 1:  # a real lobe (not noise at a crossing) with its peak inside
            return k * dt, float(acf[k]), acf
        i = d
    return math.nan, math.nan, acf


# ---- metrics of the sim-vs-kernel parity matrix (cclab parity) ------------------


def _window(df: pd.DataFrame, ir: Mapping[str, Any]) -> pd.DataFrame:
    """Rows of ``df`` in the measure window, with ``dt_s`` (each sample's interval length)."""
    if "flow_id" in df:
        dt = df.groupby("flow_id", sort=False)["time_s"].diff().fillna(df["time_s"])
    else:
        dt = df["time_s"].diff().fillna(df["time_s"])
    mask = in_window(df["time_s"], ir)
    return df.loc[mask].assign(dt_s=dt[mask])


def retrans_rate(flows: pd.DataFrame, ir: Mapping[str, Any], flow_ids: Iterable[int] | None = None) -> float:
    """Retransmitted segments / segments sent, over the measure window, for ``flow_ids`` (all flows by default).

    Segments sent = wire bytes sent (incl. retransmissions) / (mss + header_bytes),
    as the per-flow ``retrans_rate`` of :func:`summary`; here summed over a set
    of flows (an algorithm's, or all). A fraction (×100 for per cent); NaN when
    nothing was sent.
    """
    w = _window(flows, ir)
    if flow_ids is not None:
        w = w.loc[w["flow_id"].isin(list(flow_ids))]
    wire_seg = float(ir.get("mss", 1448)) + float(ir.get("header_bytes", 52))
    sent = float((w["send_rate_bps"] * w["dt_s"]).sum()) / 8.0 / wire_seg
    return float(w["retrans_segs"].sum()) / sent if sent > 0 else math.nan


def state_fractions(flows: pd.DataFrame, ir: Mapping[str, Any], flow_ids: Iterable[int] | None = None) -> dict[str, float]:
    """Fraction of the measure window spent in each algorithm state (e.g. BBR's modes).

    Over the samples of ``flow_ids`` (all flows by default) in the window
    where the flow is active and exports a state; each sample counts for its
    interval's length (the state sampled at its end). Keys are the state names
    in lower case (``startup``, ``drain``, ``probe_bw``, ``probe_rtt``), so the
    two backends' spellings compare; the fractions sum to 1 (empty when no
    sample has a state).
    """
    w = _window(flows, ir)
    if flow_ids is not None:
        w = w.loc[w["flow_id"].isin(list(flow_ids))]
    w = w.loc[w["active"].astype(bool) & w["state"].notna()]
    total = float(w["dt_s"].sum())
    if total <= 0:
        return {}
    by_state = w.groupby(w["state"].astype(str).str.lower(), sort=True)["dt_s"].sum()
    return {str(k): float(v) / total for k, v in by_state.items()}


def startup_exit_rounds(flows: pd.DataFrame, ir: Mapping[str, Any], flow_id: int = 0, startup: str = "startup") -> float:
    """When flow ``flow_id`` left its Startup state, in base RTTs after the flow's start.

    The exit time is the first sample, after the first sample in ``startup``
    (compared case-insensitively), whose state is another one — the end of the
    interval in which the flow left (resolution: the sample interval). Samples
    before the first Startup sample are ignored (a socket may report a state
    before the algorithm initialised). NaN when the flow is never seen in
    Startup; +inf when it never leaves it.
    """
    f = next((x for x in ir["flows"] if int(x["id"]) == int(flow_id)), None)
    if f is None:
        raise ValueError(f"flow_id {flow_id}: no such flow in the scenario")
    d = flows.loc[flows["flow_id"] == flow_id].sort_values("time_s")
    st = d["state"].astype(object).where(d["state"].notna(), None)
    names = np.array([s.lower() if isinstance(s, str) else None for s in st], dtype=object)
    t = d["time_s"].to_numpy(dtype=float)
    in_startup = names == startup.lower()
    if not in_startup.any():
        return math.nan
    first = int(np.argmax(in_startup))
    left = np.flatnonzero((names[first:] != None) & ~in_startup[first:])  # noqa: E711 - elementwise
    if left.size == 0:
        return math.inf
    exit_s = t[first + int(left[0])]
    return (exit_s - int(f["start_ns"]) / _NS_PER_S) / (int(f["rtt_ns"]) / _NS_PER_S)


def time_to_rate(
    flows: pd.DataFrame,
    at_s: float,
    rate_bps: float,
    *,
    fraction: float = 0.9,
    window_s: float = 0.1,
    column: str = "throughput_bps",
) -> float:
    """Seconds after a capacity change at ``at_s`` until the flows' rate reaches ``fraction`` of ``rate_bps``.

    The rate is ``column`` summed over all flows — by default their
    throughput at the bottleneck (wire bytes leaving it), which can reach the
    full link rate and does not show the receiver's head-of-line stalls during
    loss recovery (goodput does: a hole holds back an RTT of data, then
    releases it at once, so where a 100 ms window first crosses 90 % would
    depend on the 10 ms placement of a stall). The sum is averaged over a
    trailing window of ``window_s`` (100 ms by default), using only samples
    after ``at_s``; the result is the end of the first window whose mean is
    ≥ ``fraction × rate_bps``, minus ``at_s`` — so it is at least
    ``window_s``. +inf when the rate never gets there.
    """
    total = flows.groupby("time_s", sort=True)[column].sum()
    after = total.loc[total.index > at_s + 1e-9]
    if after.empty:
        return math.inf
    t = after.index.to_numpy(dtype=float)
    g = after.to_numpy(dtype=float)
    dt = np.diff(t, prepend=at_s)
    n = max(1, int(round(window_s / float(np.median(dt)))))
    if g.size < n:
        return math.inf
    csum = np.cumsum(np.insert(g * dt, 0, 0.0))
    tsum = np.cumsum(np.insert(dt, 0, 0.0))
    mean = (csum[n:] - csum[:-n]) / (tsum[n:] - tsum[:-n])
    hit = np.flatnonzero(mean >= fraction * rate_bps * (1 - 1e-12))
    return float(t[n - 1 + int(hit[0])] - at_s) if hit.size else math.inf


def peak_queue_bytes(link: pd.DataFrame, from_s: float = 0.0, to_s: float | None = None) -> float:
    """The largest sampled bottleneck queue (bytes) with ``from_s < time ≤ to_s`` (the whole run by default)."""
    t = link["time_s"]
    mask = t > from_s - 1e-12
    if to_s is not None:
        mask &= t <= to_s + 1e-12
    q = link.loc[mask, "queue_bytes"]
    return float(q.max()) if q.notna().any() else math.nan
