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
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "FLOW_COLUMNS",
    "LINK_COLUMNS",
    "bdp_bytes",
    "flows_frame",
    "flows_at_record_interval",
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
    "cwnd_gain", "inflight_hi_bytes", "inflight_lo_bytes", "bw_hi_bps", "bw_lo_bps", "sent_segs",
)  # fmt: skip

#: Columns of ``link.parquet`` in order (docs/record.md), plus
#: ``arrival_packets`` (packets that arrived at the bottleneck in the interval
#: = departed + dropped + Δqueued), needed for the bottleneck loss rate.
#: ``link`` is the link's name (``"link"`` for the one-link form; one row per
#: link per sample in a topology, docs/topologies.md).
LINK_COLUMNS = (
    "time_s", "link", "queue_bytes", "queue_packets", "queue_delay_ms", "throughput_bps",
    "arrival_bps", "drops_overflow", "drops_random", "drops_aqm", "drops_policer", "marks_ce", "capacity_bps",
    "delay_ms", "utilization", "departed_packets", "arrival_packets",
)  # fmt: skip

DROP_CAUSES = ("overflow", "random", "aqm", "policer")

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
_FLOW_COUNTS = {"sent_segs": "sent_segs", "retrans_segs": "retrans_segs", "lost_segs": "lost_segs",
                "rto_count": "rto_count"}


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


#: ``flows.parquet`` columns stored as float32 (record version 3): rates,
#: sizes, delays and per-interval counts, whose 24-bit mantissa keeps them to
#: 6·10⁻⁸ of their value (counts exactly up to 16 777 216). ``time_s`` stays
#: float64, ids are int32.
FLOW_FLOAT32 = (
    "goodput_bps", "throughput_bps", "send_rate_bps", "cwnd_bytes", "inflight_bytes", "ssthresh_bytes", "srtt_ms",
    "rtt_ms", "min_rtt_ms", "pacing_rate_bps", "retrans_segs", "lost_segs", "rto_count", "w_max_bytes", "bw_bps",
    "bw_min_rtt_ms", "pacing_gain", "cwnd_gain", "inflight_hi_bytes", "inflight_lo_bytes", "bw_hi_bps", "bw_lo_bps",
    "sent_segs",
)  # fmt: skip

# raw cumulative flow counters: differenced per flow
_FLOW_CUMULATIVE = ("delivered_bytes", "egress_bytes", "sent_bytes", "sent_segs", "retrans_segs", "lost_segs",
                    "rto_count")  # fmt: skip
# raw cumulative link counters
_LINK_CUMULATIVE = ("departed_packets", "sojourn_sum_ns", "egress_bytes", "arrival_bytes", "drops_overflow",
                    "drops_random", "drops_aqm", "drops_policer", "marks_ce")  # fmt: skip


class FrameBuilder:
    """Raw engine output → record frames, one chunk at a time (docs/record.md).

    A backend may hand its samples over in chunks (the simulator does, so a
    record is written while the run goes on); the builder carries each
    flow's last cumulative counters from one chunk to the next, so the frames
    of the chunks concatenated are exactly :func:`flows_frame` /
    :func:`link_frame` of the whole output. Rows of a chunk are ordered by
    time (then flow id), and chunks follow each other in time.
    """

    def __init__(self, ir: Mapping[str, Any], state_names: Mapping[str, Sequence[str]] | None = None):
        self.ir = ir
        ids = np.array([int(f["id"]) for f in ir["flows"]], dtype=np.int64)
        self._order = np.argsort(ids)
        self._ids_sorted = ids[self._order]
        self._cca = np.array([str(f["cca"]) for f in ir["flows"]], dtype=object)
        self._group = np.array([int(f.get("group", 0)) for f in ir["flows"]], dtype=np.int32)
        self.state_names = dict(state_names or {})
        n = ids.size
        self._last = {c: np.zeros(n) for c in _FLOW_CUMULATIVE}
        self._last_t = np.zeros(n)
        self._link_names = link_names(ir)
        self._link_state: dict[int, dict[str, float]] = {}

    def _index(self, flow_id: np.ndarray) -> np.ndarray:
        """Position of each row's flow in ``ir["flows"]``."""
        return self._order[np.searchsorted(self._ids_sorted, flow_id)]

    def flows(self, rf: Mapping[str, Any]) -> pd.DataFrame:
        """Per-flow per-interval record columns (``flows.parquet``) of one chunk of raw rows.

        Definitions (docs/record.md):

        * ``goodput_bps`` = Δdelivered_bytes·8 / Δt (in-order payload handed to the
          receiving application; RFC 6349 §4.3 calls this "goodput").
        * ``throughput_bps`` = Δegress_bytes·8 / Δt (this flow's wire bytes leaving
          the bottleneck); ``send_rate_bps`` = Δsent_bytes·8 / Δt (incl. retransmissions).
        * ``retrans_segs``, ``lost_segs``, ``rto_count``: events in the interval.
        * ``srtt_ms``, ``rtt_ms`` (mean RTT sample in the interval), ``min_rtt_ms``,
          ``bw_min_rtt_ms``: the raw nanoseconds / 1e6.
        * ``state``: the algorithm's state name (``state_names[cca][code]``),
          missing when the algorithm exports no states.
        * gauges (cwnd, inflight, ssthresh, pacing rate, cc_* state) as sampled.

        Δt is the time since the flow's previous sample (its per-flow record
        interval, docs/ir.md ``record``).
        """
        time_ns = np.asarray(rf["time_ns"], dtype=np.int64)
        n = time_ns.size
        pos = self._index(np.asarray(rf["flow_id"], dtype=np.int64))
        order = np.argsort(pos, kind="stable")
        k = pos[order]
        starts = np.ones(n, dtype=bool)
        starts[1:] = k[1:] != k[:-1]
        ends = np.ones(n, dtype=bool)
        ends[:-1] = k[1:] != k[:-1]

        def diff(values: np.ndarray, last: np.ndarray) -> np.ndarray:
            v = values[order]
            d = np.empty_like(v)
            d[1:] = v[1:] - v[:-1]
            d[starts] = v[starts] - last[k[starts]]
            last[k[ends]] = v[ends]
            out = np.empty_like(d)
            out[order] = d
            return out

        t = time_ns.astype(float)
        dt_s = diff(t, self._last_t) / _NS_PER_S
        with np.errstate(divide="ignore", invalid="ignore"):
            inv_dt = np.where(dt_s > 0, 1.0 / dt_s, np.nan)
        cca = self._cca[pos]
        cols: dict[str, Any] = {
            "time_s": t / _NS_PER_S,
            "flow_id": np.asarray(rf["flow_id"], dtype=np.int32),
            "group": self._group[pos],
            "cca": cca,
            "active": np.asarray(rf["active"], dtype=bool) if "active" in rf else np.ones(n, bool),
        }
        for src, dst in _FLOW_RATES.items():
            cols[dst] = diff(_col(rf, src, n), self._last[src]) * 8.0 * inv_dt
        for src, dst in _FLOW_GAUGES.items():
            cols[dst] = _col(rf, src, n)
        for src, dst in _FLOW_NS_TO_MS.items():
            cols[dst] = _col(rf, src, n) / _NS_PER_MS
        for src, dst in _FLOW_COUNTS.items():
            cols[dst] = diff(_col(rf, src, n), self._last[src])
        cols["state"] = _state_names(rf, cca, self.state_names, n)
        for c in FLOW_FLOAT32:
            cols[c] = np.asarray(cols[c], dtype=np.float32)
        return pd.DataFrame({c: cols[c] for c in FLOW_COLUMNS})

    def link(self, rl: Mapping[str, Any]) -> pd.DataFrame:
        """Per-interval bottleneck columns (``link.parquet``) of one chunk of raw rows.

        * ``queue_delay_ms`` = Δsojourn_sum_ns / Δdeparted_packets / 1e6: the mean
          queueing delay of the packets that left the queue in the interval (NaN if
          none left; its distribution over packets: :func:`hist_quantiles`).
        * ``throughput_bps`` = Δegress_bytes·8 / Δt (wire bytes leaving the
          bottleneck); ``arrival_bps`` = Δarrival_bytes·8 / Δt.
        * ``drops_*``: packets dropped in the interval, by cause (overflow = the
          buffer was full, random = configured loss, aqm = the queue discipline's
          decision: RED, CoDel, FQ-CoDel, PIE, policer = the token-bucket policer
          in front of the queue; 0 in records made before policers existed);
          ``marks_ce``: packets the queue discipline marked Congestion
          Experienced instead (0 in records made before marks existed).
        * ``utilization`` = throughput_bps / capacity_bps (NaN when the capacity is 0).
        * ``departed_packets``, ``arrival_packets`` (= departed + dropped + Δqueued):
          packets in the interval, for the bottleneck loss rate.

        In a topology (docs/topologies.md) the raw rows carry ``link_id``: one
        row per link per sample, each link's counters differenced on their
        own, ``link`` = the link's name. On a link an ``ack_path`` crosses,
        ACKs are packets like any other: they count in every column.
        """
        time_ns = np.asarray(rl["time_ns"], dtype=np.int64)
        n = time_ns.size
        link_id = np.asarray(rl["link_id"], dtype=np.int64) if "link_id" in rl else np.zeros(n, dtype=np.int64)
        ids = np.unique(link_id)
        if ids.size <= 1:  # one link: the rows as they are
            frame = self._one_link(rl, int(ids[0]) if ids.size else 0, slice(None), n)
        else:  # a topology: one row per link per sample; each link's counters differenced on their own
            parts, order = [], []
            for j in ids:
                rows = np.flatnonzero(link_id == j)
                parts.append(self._one_link(rl, int(j), rows, rows.size))
                order.append(rows)
            frame = pd.concat(parts, ignore_index=True)
            frame.index = np.concatenate(order)
            frame = frame.sort_index()
        names = self._link_names
        frame.insert(1, "link", pd.Categorical(np.asarray(names, dtype=object)[np.minimum(link_id, len(names) - 1)],
                                               categories=names))  # fmt: skip
        return frame.reset_index(drop=True)

    def _one_link(self, rl: Mapping[str, Any], j: int, rows: Any, n: int) -> pd.DataFrame:
        """The link columns (without ``link``) of link ``j``'s rows ``rows`` of a chunk."""
        last = self._link_state.setdefault(j, {**{c: 0.0 for c in _LINK_CUMULATIVE}, "queue_packets": 0.0, "t": 0.0})

        def col(name: str) -> np.ndarray:
            return _col(rl, name, len(rl["time_ns"]))[rows]

        def diff(name: str, values: np.ndarray | None = None) -> np.ndarray:
            v = col(name) if values is None else values
            d = np.diff(v, prepend=last[name])
            if n:
                last[name] = float(v[-1])
            return d

        t = np.asarray(rl["time_ns"], dtype=np.int64)[rows].astype(float)
        dt_s = np.diff(t, prepend=last["t"]) / _NS_PER_S
        if n:
            last["t"] = float(t[-1])
        with np.errstate(divide="ignore", invalid="ignore"):
            inv_dt = np.where(dt_s > 0, 1.0 / dt_s, np.nan)
            departed = diff("departed_packets")
            sojourn = diff("sojourn_sum_ns")
            queue_delay_ms = np.where(departed > 0, sojourn / departed, np.nan) / _NS_PER_MS
            throughput = diff("egress_bytes") * 8.0 * inv_dt
            arrival = diff("arrival_bytes") * 8.0 * inv_dt
            capacity = col("capacity_bps")
            utilization = np.where(capacity > 0, throughput / capacity, np.nan)
        # a cause a backend or an older engine does not report (policer, CE marks) counts 0
        drops = {c: diff(f"drops_{c}") if f"drops_{c}" in rl else np.zeros(n) for c in DROP_CAUSES}
        marks = diff("marks_ce") if "marks_ce" in rl else np.zeros(n)
        queue_packets = col("queue_packets")
        arrivals = departed + sum(drops.values()) + diff("queue_packets", queue_packets)
        return pd.DataFrame(
            {
                "time_s": t / _NS_PER_S,
                "queue_bytes": col("queue_bytes"),
                "queue_packets": queue_packets,
                "queue_delay_ms": queue_delay_ms,
                "throughput_bps": throughput,
                "arrival_bps": arrival,
                "drops_overflow": drops["overflow"],
                "drops_random": drops["random"],
                "drops_aqm": drops["aqm"],
                "drops_policer": drops["policer"],
                "marks_ce": marks,
                "capacity_bps": capacity,
                "delay_ms": col("delay_ns") / _NS_PER_MS,
                "utilization": utilization,
                "departed_packets": departed,
                "arrival_packets": arrivals,
            }
        )


def flows_at_record_interval(rf: Mapping[str, Any], ir: Mapping[str, Any]) -> Mapping[str, Any]:
    """Raw per-flow rows at the IR's per-flow interval (``record.flows_interval_ns``, docs/ir.md).

    The simulator samples flows at that interval itself; a backend that
    samples every flow at every sample (the kernel's tcp_info sampler) has its
    rows thinned to the multiples of it here. Cumulative counters make this
    exact for every rate and count; gauges are the values at those instants.
    """
    interval = int((ir.get("record") or {}).get("flows_interval_ns") or ir["sample_interval_ns"])
    t = np.asarray(rf["time_ns"], dtype=np.int64)
    if interval == int(ir["sample_interval_ns"]) or t.size == 0 or not np.any(t % interval):
        return rf
    keep = t % interval == 0
    return {k: (np.asarray(v)[keep] if np.ndim(v) == 1 and len(v) == t.size else v) for k, v in rf.items()}


def flows_frame(raw: Mapping[str, Any], ir: Mapping[str, Any]) -> pd.DataFrame:
    """Per-flow per-interval record columns (``flows.parquet``) from a whole raw output
    (definitions: :meth:`FrameBuilder.flows`)."""
    return FrameBuilder(ir, raw.get("state_names")).flows(raw["flows"])


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
        unknown = idx[~known]
        if unknown.size:
            out[unknown] = np.char.add("state", c[~known].astype(str)).astype(object)
    return pd.Series(out, dtype="str")


def link_frame(raw: Mapping[str, Any], ir: Mapping[str, Any]) -> pd.DataFrame:
    """Per-interval bottleneck columns (``link.parquet``) from a whole raw output
    (definitions: :meth:`FrameBuilder.link`)."""
    return FrameBuilder(ir).link(raw["link"])


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


def _link_window_metrics(lw: pd.DataFrame, ldt: np.ndarray, delivered_bits: float) -> dict[str, Any]:
    """Link metrics over the window rows ``lw`` (interval lengths ``ldt``) of one link, or of several
    links together (then ``ldt`` is each row's own link's interval)."""
    cap_bits = float(np.nansum(lw["capacity_bps"].to_numpy(dtype=float) * ldt))
    wire_bits = float(np.nansum(lw["throughput_bps"].to_numpy(dtype=float) * ldt))
    drops = {c: float(lw[f"drops_{c}"].sum()) if f"drops_{c}" in lw else 0.0 for c in DROP_CAUSES}
    marks = float(lw["marks_ce"].sum()) if "marks_ce" in lw else 0.0
    arrivals = float(lw["arrival_packets"].sum()) if "arrival_packets" in lw else math.nan
    departed = lw["departed_packets"] if "departed_packets" in lw else pd.Series(dtype=float)
    qd = lw["queue_delay_ms"]
    queue = {**_pcts(qd, "queue_delay_ms"), "queue_delay_ms_min": float(qd.min()) if qd.notna().any() else math.nan,
             "queue_delay_ms_max": float(qd.max()) if qd.notna().any() else math.nan}  # fmt: skip
    weight = float(departed.where(qd.notna(), 0.0).sum())
    if weight > 0:  # the exact mean: Σ sojourn / packets, from the cumulative counters
        queue["queue_delay_ms_mean"] = float((qd.fillna(0.0) * departed).sum()) / weight
    covered = float(np.sum(ldt))
    return {
        "capacity_bits": cap_bits,
        "utilization": wire_bits / cap_bits if cap_bits > 0 else math.nan,
        "goodput_utilization": delivered_bits / cap_bits if cap_bits > 0 else math.nan,
        "throughput_bps": wire_bits / covered if covered > 0 else math.nan,
        "loss_rate": sum(drops.values()) / arrivals if arrivals > 0 else math.nan,
        "drops": drops,
        "drops_total": sum(drops.values()),
        "marks_ce": marks,
        "mark_rate": marks / float(departed.sum()) if len(departed) and float(departed.sum()) > 0 else math.nan,
        "arrival_packets": arrivals,
        **{f"queue_delay_ms_{k}": queue[f"queue_delay_ms_{k}"] for k in ("mean", "min", "p50", "p95", "p99", "max")},
        "queue_bytes_mean": float(lw["queue_bytes"].mean()) if len(lw) else math.nan,
    }


def link_summary(link: pd.DataFrame, ir: Mapping[str, Any], delivered_bits: Mapping[int, float]
                 ) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Per link (by name, in the IR's order), over the measure window of ``link.parquet``:
    ``utilization`` = wire bits that left the link / capacity bits (data and ACKs);
    ``goodput_utilization`` = payload bits delivered to the receivers of the flows whose data
    crosses the link (``delivered_bits`` by flow id) / its capacity bits; ``throughput_bps``;
    ``drops`` by cause, ``drops_total``, ``loss_rate`` = dropped / arrived packets; ``marks_ce``,
    ``mark_rate``; the queueing delay over the per-interval means (``queue_delay_ms_mean`` weighted
    by departed packets, ``min/p50/p95/p99/max``) and ``queue_bytes_mean``; ``from``/``to`` its
    nodes; ``flows`` the ids whose data crosses it, ``ack_flows`` those whose ACKs do."""
    link = with_link_column(link)
    specs = ir.get("links") or [{"name": "link", "from": "left", "to": "right"}]
    names = link["link"].astype(str).to_numpy()
    out: dict[str, dict[str, Any]] = {}
    for spec in specs:
        name = str(spec["name"])
        rows = link.loc[names == name]
        t = rows["time_s"].to_numpy(dtype=float)
        w = in_window(t, ir)
        data_ids = [int(f["id"]) for f in ir["flows"] if name in f.get("path", ["link"])]
        ack_ids = [int(f["id"]) for f in ir["flows"] if name in f.get("ack_path", [])]
        m = _link_window_metrics(rows.loc[w], np.diff(t, prepend=0.0)[w], sum(delivered_bits.get(i, 0.0) for i in data_ids))
        del m["capacity_bits"]
        out[name] = {"from": str(spec.get("from", "left")), "to": str(spec.get("to", "right")), **m,
                     "flows": data_ids, "ack_flows": ack_ids}  # fmt: skip
    return out


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


# ---- per-flow timing: activity, completion, ideal transfer ---------------------


class _Rows:
    """The per-flow frame's columns the summary reads, as numpy arrays, computed once per frame.

    ``idx``: each row's position in ``ir["flows"]``; ``dt``: each row's
    interval (since the same flow's previous row); ``grid``: the rows are
    every flow at every sample time, in time-then-flow order (the engines'
    layout), so per-flow sequences are the columns of a (samples × flows)
    reshape and need no sort.
    """

    def __init__(self, flows: pd.DataFrame, ir: Mapping[str, Any]):
        n = len(ir["flows"])
        self.n = n
        self.t = flows["time_s"].to_numpy(dtype=float)
        ids = np.array([int(f["id"]) for f in ir["flows"]], dtype=np.int64)
        fid = flows["flow_id"].to_numpy(dtype=np.int64)
        m = fid.size
        self.grid = bool(n and m % n == 0 and np.array_equal(ids, np.arange(n))
                         and np.array_equal(fid.reshape(-1, n), np.broadcast_to(np.arange(n), (m // n, n))))  # fmt: skip
        if self.grid:
            self.idx = fid
            tt = self.t.reshape(-1, n)
            self.dt = np.diff(tt, axis=0, prepend=np.zeros((1, n))).reshape(-1)
        else:
            order = np.argsort(ids)
            self.idx = order[np.searchsorted(ids[order], fid)] if m else np.zeros(0, dtype=np.int64)
            self.dt = _row_dt(self.t, self.idx)
        self.gp = flows["goodput_bps"].to_numpy(dtype=float)
        self.active = flows["active"].to_numpy(dtype=bool)


def _rows(flows: pd.DataFrame, ir: Mapping[str, Any], rows: _Rows | None = None) -> _Rows:
    """:class:`_Rows` of a frame (``rows`` when the caller computed it already)."""
    return rows if rows is not None else _Rows(flows, ir)


def _row_dt(time_s: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Each row's interval length: the time since the same flow's previous row (its first: since 0)."""
    order = np.argsort(idx, kind="stable")
    k, t = idx[order], time_s[order]
    d = np.empty_like(t)
    if t.size:
        d[0] = t[0]
        d[1:] = t[1:] - t[:-1]
        first = np.ones(k.size, dtype=bool)
        first[1:] = k[1:] != k[:-1]
        d[first] = t[first]
    out = np.empty_like(d)
    out[order] = d
    return out


def _by_flow(idx: np.ndarray, weights: np.ndarray | None, n: int) -> np.ndarray:
    """Σ weights per flow (rows per flow without weights), NaN weights left out."""
    if weights is None:
        return np.bincount(idx, minlength=n).astype(float)
    w = np.asarray(weights, dtype=float)
    ok = ~np.isnan(w)
    return np.bincount(idx[ok], weights=w[ok], minlength=n)


def flow_times(flows: pd.DataFrame, ir: Mapping[str, Any], flow_info: Sequence[Mapping[str, Any]] | None = None,
               _r: _Rows | None = None) -> pd.DataFrame:
    """When each flow started, ended and completed (one row per flow of the IR, in IR order).

    Columns: ``flow_id``; ``start_s`` (the IR's start: configured start +
    random start offset); ``end_s`` — a flow that ended (a finite flow, or one
    whose application stopped and whose data drained) ends when its receiver
    got the last new data: exact from the engine (``flow_info[i]["end_ns"]``),
    otherwise the end of the last sample in which the record marks it active;
    a finite flow that completed ends at its completion at the latest; NaN for
    a flow still running at the end of the run; ``completion_s`` —
    for a finite flow (``bytes``), when the receiver had every byte (engine:
    exact; otherwise the first sample at which its cumulative goodput reached
    ``bytes``, to the sample interval); NaN when unfinished or not finite.
    """
    n = len(ir["flows"])
    start = np.array([int(f["start_ns"]) for f in ir["flows"]], dtype=float) / _NS_PER_S
    end = np.full(n, np.nan)
    completion = np.full(n, np.nan)
    if flow_info is not None and len(flow_info) == n:
        end = np.array([math.nan if fi.get("end_ns") is None else fi["end_ns"] / _NS_PER_S for fi in flow_info])
        completion = np.array([math.nan if fi.get("completion_ns") is None else fi["completion_ns"] / _NS_PER_S
                               for fi in flow_info])  # fmt: skip
        have_end = np.array(["end_ns" in fi for fi in flow_info])
    else:
        have_end = np.zeros(n, dtype=bool)
    if len(flows) and not have_end.all():
        r = _rows(flows, ir, _r)
        idx, t, act = r.idx, r.t, r.active
        last_active = np.full(n, -np.inf)
        np.maximum.at(last_active, idx[act], t[act])
        t_end = float(t.max())
        derived = np.where(np.isfinite(last_active) & (last_active < t_end - 1e-9), last_active, np.nan)
        end = np.where(have_end, end, derived)
    nbytes = np.array([math.nan if f.get("bytes") is None else float(f["bytes"]) for f in ir["flows"]])
    need = ~np.isnan(nbytes) & np.isnan(completion)
    if len(flows) and need.any() and not (flow_info is not None and len(flow_info) == n):
        r = _rows(flows, ir, _r)
        idx, t, dt = r.idx, r.t, r.dt
        order = np.lexsort((t, idx))
        delivered = flows["goodput_bps"].to_numpy(dtype=float)[order] * dt[order] / 8.0
        k = idx[order]
        cum = np.cumsum(np.nan_to_num(delivered))
        first = np.ones(k.size, dtype=bool)
        first[1:] = k[1:] != k[:-1]
        base = np.maximum.accumulate(np.where(first, np.r_[0.0, cum[:-1]], 0.0))
        per_flow_cum = cum - base
        done = per_flow_cum >= nbytes[k] * (1 - 1e-6)
        hit = np.full(n, np.nan)
        rows = np.flatnonzero(done)
        if rows.size:
            first_hit = pd.Series(t[order][rows]).groupby(k[rows]).min()
            hit[first_hit.index.to_numpy()] = first_hit.to_numpy()
        completion = np.where(need, hit, completion)
    # A finite flow that completed has ended then, also when the run stopped before its sender
    # heard the last ACK (within the last one-way delay of the run: the engine's end is the
    # sender's, and was missing there, making active_s and goodput wrong).
    end = np.where(np.isnan(end) & ~np.isnan(completion), completion, end)
    return pd.DataFrame({"flow_id": [int(f["id"]) for f in ir["flows"]], "start_s": start, "end_s": end,
                         "completion_s": completion})


def ideal_fct_s(nbytes: float, rate_bps: float, rtt_s: float, mss: int = 1448, header_bytes: int = 52, *,
                one_way_s: float | None = None) -> float:
    """The shortest possible completion time of a transfer of ``nbytes``: every
    segment sent back to back at the bottleneck rate from the flow's start, the
    last one arriving one one-way propagation delay after it left: the transfer's wire bytes,
    the payload and a header per segment (the last segment is as short as the
    payload left), ``(nbytes + ⌈nbytes/mss⌉ · header) · 8 / rate + one-way delay`` (the connection is
    established before the flow starts, docs/ir.md). The one-way delay is ``one_way_s`` when
    given (a topology's data path: :func:`forward_delay_ns`), else half the RTT (one link). The
    denominator of the slowdown (pFabric's "normalized FCT", Alizadeh et al., SIGCOMM 2013)."""
    if not (rate_bps > 0) or math.isnan(nbytes):
        return math.nan
    segments = math.ceil(nbytes / mss)
    wire = nbytes + segments * header_bytes
    return wire * 8.0 / rate_bps + (rtt_s / 2.0 if one_way_s is None else one_way_s)


def forward_delay_ns(ir: Mapping[str, Any], flow: Mapping[str, Any]) -> int:
    """The one-way propagation delay of a flow's data, sender to receiver: the delays of its data
    path's links plus the part of its extra delay placed before the first of them — the IR's rule
    (``split_extra_delay``, crates/cclab-netmodel/src/ir.rs): the forward direction as close to half
    the RTT, rounded down, as the forward links allow, the rest of the extra delay on the return.
    One link with an uncongested return: RTT/2. A topology whose data path is shorter than its ACK
    path: less (a path of 0 ms forward and 20 ms back has 0 ms)."""
    links = {str(x["name"]): x for x in ir.get("links") or []}
    if not links and ir.get("link"):
        links = {"link": ir["link"]}
    path = list(flow.get("path") or list(links)[:1])
    fwd = sum(int(links[p].get("delay_ns") or 0) for p in path if p in links)
    back = sum(int(links[p].get("delay_ns") or 0) for p in flow.get("ack_path") or [] if p in links)
    rtt = int(flow["rtt_ns"])
    extra = rtt - fwd - back
    if extra < 0:
        return fwd
    return fwd + min(max(rtt // 2 - fwd, 0), extra)


def _initial_rate_bps(ir: Mapping[str, Any], link: Mapping[str, Any] | None = None) -> float:
    """A link's rate at 0 s (a trace's mean rate); the first link's by default (a stored v3 IR's ``link``)."""
    cap = (link if link is not None else (ir.get("links") or [ir.get("link")])[0])["capacity"]
    if cap.get("kind") == "constant":
        return float(cap["rate_bps"])
    opps = cap.get("opportunities_ns") or []
    period = float(cap.get("period_ns") or 0)
    return len(opps) * float(cap.get("bytes_per_opportunity", 1500)) * 8.0 / (period / _NS_PER_S) if period else math.nan


# ---- time-resolved fairness and convergence ----------------------------------------


def binned_goodput(flows: pd.DataFrame, ir: Mapping[str, Any], bin_s: float, *, window: bool = True,
                   _r: _Rows | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Goodput of every flow in bins of ``bin_s`` seconds.

    Returns ``(bin_end_s, goodput, full)``: the bins' end times (a sample at
    ``t`` falls in the bin ending at ⌈t/bin_s⌉·bin_s), a (bins × flows) matrix
    of goodput in bit/s (payload bits delivered in the bin / the time the
    bin's samples cover) and a boolean matrix: the flow was active at every
    sample of the bin. Only samples in the measure window unless ``window`` is
    false. Flows are in IR order.
    """
    n = len(ir["flows"])
    rows = _rows(flows, ir, _r)
    mask = in_window(rows.t, ir) if window else np.ones(rows.t.size, dtype=bool)
    if rows.grid and rows.t.size:
        return _binned_grid(rows, mask, bin_s)
    t, idx, dt, gp, act = rows.t[mask], rows.idx[mask], rows.dt[mask], rows.gp[mask], rows.active[mask]
    if t.size == 0:
        return np.array([]), np.zeros((0, n)), np.zeros((0, n), dtype=bool)
    b = np.ceil(t / bin_s - 1e-9).astype(np.int64)
    b0 = int(b.min())
    nb = int(b.max()) - b0 + 1
    cell = (b - b0) * n + idx
    bits = np.bincount(cell, weights=np.nan_to_num(gp * dt), minlength=nb * n).reshape(nb, n)
    cover = np.bincount(cell, weights=dt, minlength=nb * n).reshape(nb, n)
    rows = np.bincount(cell, minlength=nb * n).reshape(nb, n)
    active = np.bincount(cell, weights=act.astype(float), minlength=nb * n).reshape(nb, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        goodput = np.where(cover > 0, bits / cover, np.nan)
    full = (rows > 0) & (active == rows)
    keep = rows.sum(axis=1) > 0
    return ((np.arange(nb) + b0) * bin_s)[keep], goodput[keep], full[keep]


def _binned_grid(rows: _Rows, mask: np.ndarray, bin_s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`binned_goodput` for the engines' layout (every flow at every sample time): the rows
    of a sample time are one row of a (samples × flows) matrix, and a bin is a run of such rows."""
    n = rows.n
    keep = mask.reshape(-1, n)[:, 0]
    if not keep.any():
        return np.array([]), np.zeros((0, n)), np.zeros((0, n), dtype=bool)
    t = rows.t.reshape(-1, n)[keep, 0]
    dt = rows.dt.reshape(-1, n)[keep]
    bits = np.nan_to_num(rows.gp.reshape(-1, n)[keep] * dt)
    act = rows.active.reshape(-1, n)[keep]
    b = np.ceil(t / bin_s - 1e-9).astype(np.int64)
    starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])  # samples are in time order: bins are runs
    cover = np.add.reduceat(dt, starts, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        goodput = np.where(cover > 0, np.add.reduceat(bits, starts, axis=0) / cover, np.nan)
    full = np.logical_and.reduceat(act, starts, axis=0)
    return b[starts] * bin_s, goodput, full


def jain_over_time(flows: pd.DataFrame, ir: Mapping[str, Any], bin_s: float = 1.0, *, window: bool = True,
                   _r: _Rows | None = None) -> pd.Series:
    """Jain's index in bins of ``bin_s`` seconds over the flows active for the whole bin.

    The time-resolved fairness of the record (:func:`summary`'s
    ``jain_1s_*`` and ``jain_rtt_*``): per bin, Jain's index of the goodputs
    (:func:`binned_goodput`) of the flows active at every sample of the bin
    — a flow starting or ending inside a bin is left out of that bin, so its
    partial bin neither counts as unfairness nor hides it. Index: bin end
    time (s); bins without an active flow are left out.
    """
    ends, g, full = binned_goodput(flows, ir, bin_s, window=window, _r=_r)
    x = np.where(full, g, np.nan)
    k = np.sum(full, axis=1)
    s1 = np.nansum(x, axis=1)
    s2 = np.nansum(x * x, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        j = np.where((k > 0) & (s2 > 0), s1 * s1 / (k * s2), np.nan)
    ok = ~np.isnan(j)
    return pd.Series(j[ok], index=pd.Index(ends[ok], name="time_s"), name="jain")


#: Convergence: within ± this fraction of the fair share …
CONVERGENCE_BAND = 0.10
#: … held for this many seconds …
CONVERGENCE_HOLD_S = 5.0
#: … judged in bins of this many seconds.
CONVERGENCE_BIN_S = 1.0


def convergence_times(flows: pd.DataFrame, ir: Mapping[str, Any], *, band: float = CONVERGENCE_BAND,
                      hold_s: float = CONVERGENCE_HOLD_S, bin_s: float = CONVERGENCE_BIN_S,
                      _r: _Rows | None = None) -> np.ndarray:
    """Seconds from each joining flow's start until it holds its fair share (IR order; NaN: not a
    joining flow, or it never converged).

    A *joining* flow starts while another flow is already active (its start is
    after the earliest start). In bins of ``bin_s`` over the whole run, the
    fair share of a bin is the total goodput of the flows active for the
    whole bin divided by their number; the flow has converged at the first
    bin from which, for ``hold_s`` seconds of consecutive bins, it is active
    and its goodput is within ± ``band`` of the fair share. The time is that
    bin's start minus the flow's start (0 when it converges in its first
    bin), so resolution is ``bin_s``. (Convergence as in the congestion-control
    literature, e.g. PCC Vivace, NSDI 2018, §5: "within ±x % of the fair share
    for y s"; cclab's x and y are stated in the summary.)
    """
    n = len(ir["flows"])
    starts = np.array([int(f["start_ns"]) for f in ir["flows"]], dtype=float) / _NS_PER_S
    out = np.full(n, np.nan)
    joining = starts > starts.min() + 1e-12
    if not joining.any() or len(flows) == 0:
        return out
    ends, g, full = binned_goodput(flows, ir, bin_s, window=False, _r=_r)
    k = full.sum(axis=1)
    fair = np.where(k > 0, np.nansum(np.where(full, g, 0.0), axis=1) / np.maximum(k, 1), np.nan)
    ok = full & (np.abs(g - fair[:, None]) <= band * fair[:, None]) & (fair[:, None] > 0)
    hold = max(1, int(round(hold_s / bin_s)))
    if ok.shape[0] < hold:
        return out
    cs = np.vstack([np.zeros((1, n)), np.cumsum(ok, axis=0)])
    held = (cs[hold:] - cs[:-hold]) == hold  # held[b]: bins b … b+hold−1 all ok
    bin_start = ends[: held.shape[0]] - bin_s
    eligible = held & (bin_start[:, None] >= starts[None, :] - bin_s + 1e-9)
    first = np.argmax(eligible, axis=0)
    found = eligible[first, np.arange(n)]
    t = np.maximum(bin_start[first] - starts, 0.0)
    return np.where(joining & found, t, np.nan)


# ---- distributions from per-packet histograms ---------------------------------------

#: log2 of the histograms' sub-buckets per octave (crates/cclab-netmodel/src/hist.rs).
HIST_SUB_BITS = 7


def hist_bin_edges(bins: np.ndarray, sub_bits: int = HIST_SUB_BITS) -> tuple[np.ndarray, np.ndarray]:
    """``(lower, width)`` in ns of log-linear histogram bins (crates/cclab-netmodel/src/hist.rs):
    bins below 2·2^sub_bits hold one value each; above, every octave is split into 2^sub_bits bins."""
    b = np.asarray(bins, dtype=np.int64)
    sub = 1 << sub_bits
    shift = np.where(b < 2 * sub, 0, b // sub - 1)
    mant = np.where(b < 2 * sub, b, b - shift * sub)
    return (mant << shift).astype(np.float64), (np.int64(1) << shift).astype(np.float64)


def hist_bins(values_ns: np.ndarray, sub_bits: int = HIST_SUB_BITS) -> np.ndarray:
    """The log-linear bin of each value (ns ≥ 0), as ``bin_of`` in crates/cclab-netmodel/src/hist.rs."""
    v = np.asarray(values_ns, dtype=np.int64)
    sub = 1 << sub_bits
    e = np.frexp(np.maximum(v, 1).astype(np.float64))[1].astype(np.int64) - 1  # highest set bit (exact below 2^53)
    shift = np.maximum(e - sub_bits, 0)
    return np.where(v < 2 * sub, v, shift * sub + (v >> shift)).astype(np.int64)


def histogram_of(values_ns: np.ndarray, groups: np.ndarray | None = None, sub_bits: int = HIST_SUB_BITS
                 ) -> dict[str, np.ndarray]:
    """Samples (ns) as log-linear histograms in the engine's form: ``{"bin", "count"}`` (+ ``"flow_id"``
    when ``groups`` gives each sample's flow), with exact ``n``/``sum_ns``/``min_ns``/``max_ns``
    (+ ``stats_flow_id``). For a backend whose samples come as a series (the kernel's tcp_info)."""
    v = np.asarray(values_ns, dtype=float)
    g = np.zeros(v.size, dtype=np.int64) if groups is None else np.asarray(groups, dtype=np.int64)
    ok = np.isfinite(v) & (v >= 0)
    v, g = np.round(v[ok]).astype(np.int64), g[ok]
    b = hist_bins(v, sub_bits)
    cells = pd.DataFrame({"g": g, "b": b}).value_counts().sort_index()
    stats = pd.DataFrame({"g": g, "v": v}).groupby("g")["v"].agg(["size", "sum", "min", "max"])
    out = {"bin": cells.index.get_level_values("b").to_numpy(dtype=np.int64),
           "count": cells.to_numpy(dtype=np.int64),
           "n": stats["size"].to_numpy(dtype=np.int64), "sum_ns": stats["sum"].to_numpy(dtype=float),
           "min_ns": stats["min"].to_numpy(dtype=float), "max_ns": stats["max"].to_numpy(dtype=float)}  # fmt: skip
    if groups is not None:
        out["flow_id"] = cells.index.get_level_values("g").to_numpy(dtype=np.int64)
        out["stats_flow_id"] = stats.index.to_numpy(dtype=np.int64)
    return out


def hist_quantiles(bins: np.ndarray, counts: np.ndarray, qs: Sequence[float], groups: np.ndarray | None = None,
                   n_groups: int = 1, sub_bits: int = HIST_SUB_BITS) -> np.ndarray:
    """Nearest-rank quantiles (value of rank ⌈q·n⌉) of log-linear histograms, in ns, exact to a bin
    (the middle of the bin holding that rank; exact for one-value bins).

    ``bins``/``counts``: the non-empty bins, ``groups`` the histogram (0 …
    ``n_groups`` − 1) each belongs to (one histogram when None). Returns a
    (``n_groups`` × len(``qs``)) array, NaN for empty histograms. Vectorised
    over all groups at once.
    """
    bins = np.asarray(bins, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.float64)
    g = np.zeros(bins.size, dtype=np.int64) if groups is None else np.asarray(groups, dtype=np.int64)
    out = np.full((n_groups, len(qs)), np.nan)
    if bins.size == 0:
        return out
    order = np.lexsort((bins, g))
    bins, counts, g = bins[order], counts[order], g[order]
    cum = np.cumsum(counts)
    total = np.bincount(g, weights=counts, minlength=n_groups)
    before = np.r_[0.0, np.cumsum(total)[:-1]]
    lower, width = hist_bin_edges(bins, sub_bits)
    mid = lower + (width - 1) / 2.0
    has = total > 0
    for j, q in enumerate(qs):
        rank = np.clip(np.ceil(q * total), 1, np.maximum(total, 1))
        pos = np.searchsorted(cum, before + rank - 0.5, side="left")
        pos = np.minimum(pos, bins.size - 1)
        out[:, j] = np.where(has, mid[pos], np.nan)
    return out


def distribution(histograms: Mapping[str, Any] | None, metric: str = "rtt",
                 flow_ids: Iterable[int] | None = None) -> pd.DataFrame:
    """One distribution of a record as a table: ``lower_ms``, ``upper_ms``, ``count`` and ``cdf``
    (fraction of samples at or below the bin's upper edge), ascending.

    ``metric``: ``"rtt"`` (every ACK's RTT sample; summed over ``flow_ids``,
    all flows by default) or ``"queue_delay"`` (the bottleneck sojourn of
    every packet that left it), both over the measure window. For CDF figures
    (draw ``upper_ms`` against ``cdf`` as a step). Empty when the record has
    no histograms (records before version 3).
    """
    empty = pd.DataFrame({"lower_ms": [], "upper_ms": [], "count": [], "cdf": []})
    if not histograms:
        return empty
    key = {"rtt": "rtt", "queue_delay": "sojourn", "sojourn": "sojourn"}.get(metric)
    if key is None:
        raise ValueError(f"metric {metric!r}: expected 'rtt' or 'queue_delay'")
    h = histograms.get(key) or {}
    bins = np.asarray(h.get("bin", []), dtype=np.int64)
    counts = np.asarray(h.get("count", []), dtype=np.float64)
    if key == "rtt" and flow_ids is not None:
        keep = np.isin(np.asarray(h.get("flow_id", []), dtype=np.int64), list(flow_ids))
        bins, counts = bins[keep], counts[keep]
    if bins.size == 0:
        return empty
    merged = pd.Series(counts).groupby(bins).sum().sort_index()
    b = merged.index.to_numpy(dtype=np.int64)
    lower, width = hist_bin_edges(b, int(histograms.get("sub_bits", HIST_SUB_BITS)))
    c = merged.to_numpy(dtype=float)
    return pd.DataFrame({"lower_ms": lower / _NS_PER_MS, "upper_ms": (lower + width) / _NS_PER_MS, "count": c,
                         "cdf": np.cumsum(c) / c.sum()})


_QS = (0.5, 0.95, 0.99)


def _hist_stats(h: Mapping[str, Any], n_groups: int, group_of: np.ndarray | None, stats_group: np.ndarray | None,
                sub_bits: int) -> dict[str, np.ndarray]:
    """Per group: mean, min, p50, p95, p99, max (ms) and n of a histogram set."""
    bins = np.asarray(h.get("bin", []), dtype=np.int64)
    counts = np.asarray(h.get("count", []), dtype=np.float64)
    q = hist_quantiles(bins, counts, _QS, group_of, n_groups, sub_bits) / _NS_PER_MS
    out = {"p50": q[:, 0], "p95": q[:, 1], "p99": q[:, 2]}
    n = np.zeros(n_groups)
    sums, mins, maxs = np.zeros(n_groups), np.full(n_groups, np.nan), np.full(n_groups, np.nan)
    g = np.zeros(1, dtype=np.int64) if stats_group is None else stats_group
    if "n" in h and len(h["n"]) == g.size:
        ok = g >= 0
        np.add.at(n, g[ok], np.asarray(h["n"], dtype=float)[ok])
        np.add.at(sums, g[ok], np.asarray(h["sum_ns"], dtype=float)[ok])
        mn, mx = np.asarray(h["min_ns"], dtype=float)[ok], np.asarray(h["max_ns"], dtype=float)[ok]
        for arr, vals, fn in ((mins, mn, np.fmin), (maxs, mx, np.fmax)):
            fn.at(arr, g[ok], vals)
    else:  # no exact statistics: from the bins (mean to a bin)
        lower, width = hist_bin_edges(bins, sub_bits)
        gg = np.zeros(bins.size, dtype=np.int64) if group_of is None else np.asarray(group_of, dtype=np.int64)
        n = np.bincount(gg, weights=counts, minlength=n_groups)
        sums = np.bincount(gg, weights=counts * (lower + (width - 1) / 2), minlength=n_groups)
        np.fmin.at(mins, gg, lower)
        np.fmax.at(maxs, gg, lower + width - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["mean"] = np.where(n > 0, sums / n, np.nan) / _NS_PER_MS
    out["min"], out["max"], out["n"] = mins / _NS_PER_MS, maxs / _NS_PER_MS, n
    for k in ("p50", "p95", "p99"):  # a bin's middle never beyond the exact extremes
        out[k] = np.fmin(np.fmax(out[k], out["min"]), out["max"])
    return out


# ---- the summary ---------------------------------------------------------------------


def _alg_shares(rows: _Rows, w: np.ndarray, alg: np.ndarray, n_alg: int, bin_s: float) -> np.ndarray:
    """Each algorithm's share of the goodput in bins of ``bin_s`` (bins × algorithms), over the
    window's samples — :func:`share_series` with ``key="cca"``, vectorised (bins with no goodput left out)."""
    t, gp = rows.t[w], rows.gp[w]
    if t.size == 0:
        return np.zeros((0, n_alg))
    b = np.ceil(t / bin_s - 1e-9).astype(np.int64) if bin_s else np.unique(t, return_inverse=True)[1]
    b = b - b.min()
    nb = int(b.max()) + 1
    m = np.bincount(b * n_alg + alg, weights=np.nan_to_num(gp), minlength=nb * n_alg).reshape(nb, n_alg)
    present = np.bincount(b, minlength=nb) > 0
    total = m.sum(axis=1)
    keep = present & (total > 0)
    return m[keep] / total[keep, None]


def _state_time(flows: pd.DataFrame, rows: _Rows, w: np.ndarray, alg_of_flow: np.ndarray, n_alg: int
                ) -> list[dict[str, float]]:
    """Per group of flows (``alg_of_flow``: each flow's group, −1 for none), the fraction of the
    rows ``w``'s active time with a state spent in each state — the definition of
    :func:`state_fractions` and the summary's ``state_time``: ``{state name in lower case: fraction}``."""
    out: list[dict[str, float]] = [{} for _ in range(n_alg)]
    sel = w & rows.active
    if not sel.any():
        return out
    codes_all, names = pd.factorize(flows["state"])
    codes = np.asarray(codes_all)[sel]
    ok = codes >= 0
    if not ok.any():
        return out
    lower, merged = np.unique(np.array([str(x).lower() for x in names], dtype=object), return_inverse=True)
    code = merged[codes[ok]]
    a = alg_of_flow[rows.idx[sel][ok]]
    mine = a >= 0  # flows of no group (-1) left out
    a, code = a[mine], code[mine]
    k = lower.size
    time_in = np.bincount(a * k + code, weights=rows.dt[sel][ok][mine], minlength=n_alg * k).reshape(n_alg, k)
    for i in range(n_alg):
        total = time_in[i].sum()
        if total > 0:
            out[i] = {str(lower[j]): float(time_in[i, j] / total) for j in range(k) if time_in[i, j] > 0}
    return out



def summary(
    flows: pd.DataFrame,
    link: pd.DataFrame,
    ir: Mapping[str, Any],
    *,
    histograms: Mapping[str, Any] | None = None,
    flow_info: Sequence[Mapping[str, Any]] | None = None,
    share_bin_s: float = SHARE_BIN_S,
) -> dict[str, Any]:
    """Per-flow, per-algorithm and aggregate metrics over the measure window (``summary.json``).

    ``histograms`` (the engine's per-packet distributions, :func:`distribution`)
    and ``flow_info`` (the engine's per-flow facts: ``completion_ns``,
    ``end_ns``) make the delay percentiles per packet and the flow times
    exact; without them (older records, a backend that has none) the summary
    falls back to the per-interval series and says so (``rtt_source``,
    ``queue_delay_source``). Vectorised over all flows and samples.

    Per flow:
      ``start_s`` (configured start + random offset), ``start_offset_s``,
      ``end_s`` (:func:`flow_times`), ``active_s`` = the part of the window in
      which the flow was active (from max(window start, flow start) to
      min(window end, flow end)); ``goodput_bps`` = payload bits delivered in
      the window / ``active_s`` — a flow that runs 10 s of a 60 s window has
      the goodput of those 10 s; ``goodput_window_bps`` = the same bits / the
      whole window; ``share`` its fraction of all flows' delivered bits;
      ``delivered_bytes``; ``retrans_segs``, ``sent_segs`` (data segments
      sent, retransmissions included; in records without the column, wire
      bytes sent / (mss + header_bytes)) and ``retrans_rate`` = retransmitted
      / sent (a fraction, at most 1 where the column exists); ``rto_count``; ``rtt_ms_mean/min/p50/p95/p99/max`` — with
      histograms over every ACK's RTT sample in the window (exact to a bin,
      ``rtt_source = "packets"``), else over the per-interval mean RTTs
      (``"interval means"``); ``cwnd_bytes_mean`` over the samples where the
      flow is active; for finite flows ``fct_s`` = completion − start,
      ``ideal_fct_s`` (:func:`ideal_fct_s`) and ``slowdown`` = fct / ideal;
      for joining flows ``convergence_s`` (:func:`convergence_times`).
    Per algorithm:
      ``goodput_bps`` = its flows' delivered bits / the window, ``share`` of
      the total, and the share over time (bins of ``share_bin_s`` = 1 s,
      :data:`SHARE_BIN_S`) summarised by its 25th/50th/75th percentiles and
      ``share_iqr``; ``retrans_rate``; ``rtt_ms_p50/p95/p99`` over all its
      flows' RTT samples; ``state_time`` (fraction of the active time in each
      state, e.g. BBR's modes, :func:`state_fractions`); with two or more
      algorithms the period of its share (:func:`detect_period`):
      ``share_period_s`` (null when there is no significant period),
      ``share_period_p`` and ``share_period_lo_s``/``hi_s``.
    Aggregate:
      ``goodput_bps`` total; ``utilization`` = delivered payload bits /
      capacity bits (Σ capacity·Δt) over the window; ``link_utilization`` the
      same with wire bits leaving the bottleneck; ``loss_rate`` = packets
      dropped at the bottleneck / packets arriving there; ``drops`` by cause;
      ``marks_ce``, ``mark_rate`` = marks / packets that left;
      ``retrans_segs``, ``retrans_rate``; ``queue_delay_ms_mean`` (the true
      mean sojourn) and ``min/p50/p95/p99/max`` — with histograms over every
      packet that left the bottleneck in the window, else over the
      per-interval means; ``jain`` = Jain's index over the per-flow
      ``goodput_bps`` of the flows active in the window; time-resolved
      ``jain_1s_mean``/``jain_1s_min`` and ``jain_rtt_mean``/``jain_rtt_min``
      (:func:`jain_over_time` over bins of 1 s and of one RTT —
      ``jain_rtt_bin_s``: the longest base RTT, rounded up to the per-flow
      record interval); finite flows' ``fct_s_mean/p50/p99`` and
      ``slowdown_mean/p50/p99``; joining flows' ``convergence_s_mean/max``
      with ``convergence`` stating band, hold and bin.

    Units (docs/record.md): bit/s, bytes, seconds, milliseconds for delays,
    fractions (not percent) for rates and shares. The result is JSON-safe
    (NaN → ``None``).
    """
    lo, hi = measure_window_ns(ir)
    lo_s, hi_s = lo / _NS_PER_S, hi / _NS_PER_S
    n = len(ir["flows"])
    mss, header = int(ir.get("mss", 1448)), int(ir.get("header_bytes", 52))
    ids = np.array([int(f["id"]) for f in ir["flows"]], dtype=np.int64)
    cca = np.array([str(f["cca"]) for f in ir["flows"]], dtype=object)

    # -- per-flow sums over the window (one pass over the columns)
    rows = _Rows(flows, ir)
    t, idx, dt = rows.t, rows.idx, rows.dt
    w = in_window(t, ir)
    iw, dtw = idx[w], dt[w]
    col = lambda c: flows[c].to_numpy(dtype=float)[w]  # noqa: E731
    bits = _by_flow(iw, col("goodput_bps") * dtw, n)
    sent_segs, retrans = _sent_and_retrans(flows, ir, rows, w)
    rto = _by_flow(iw, col("rto_count"), n)
    act = flows["active"].to_numpy(dtype=bool)[w]
    cwnd = col("cwnd_bytes")
    ok_cwnd = act & ~np.isnan(cwnd)
    n_act = np.bincount(iw[act], minlength=n)
    with np.errstate(divide="ignore", invalid="ignore"):
        cwnd_mean = np.bincount(iw[ok_cwnd], weights=cwnd[ok_cwnd], minlength=n) / np.bincount(iw[ok_cwnd], minlength=n)
    link = with_link_column(link)
    covered_s = float(np.sum(np.diff(link["time_s"].to_numpy(dtype=float), prepend=0.0)[in_window(link["time_s"], ir)]))
    covered_s = covered_s if covered_s > 0 else (hi - lo) / _NS_PER_S

    # -- timing: activity, completion, convergence
    times = flow_times(flows, ir, flow_info, _r=rows)
    start_s, end_s, done_s = (times[c].to_numpy(dtype=float) for c in ("start_s", "end_s", "completion_s"))
    active_s = np.clip(np.minimum(hi_s, np.where(np.isnan(end_s), hi_s, end_s)) - np.maximum(lo_s, start_s), 0.0, None)
    active_in_window = (n_act > 0) | (active_s > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        goodput = np.where(active_s > 0, bits / active_s, np.nan)
        retrans_rate_f = np.where(sent_segs > 0, retrans / sent_segs, np.nan)
    offsets = np.array([int(f.get("start_offset_ns") or 0) for f in ir["flows"]], dtype=float) / _NS_PER_S
    nbytes = np.array([math.nan if f.get("bytes") is None else float(f["bytes"]) for f in ir["flows"]])
    rtt_s = np.array([int(f["rtt_ns"]) for f in ir["flows"]], dtype=float) / _NS_PER_S
    one_way_s = np.array([forward_delay_ns(ir, f) for f in ir["flows"]], dtype=float) / _NS_PER_S
    # each flow's slowest link at 0 s (one link: its rate)
    by_name = {str(x["name"]): x for x in ir.get("links") or []}
    rate0 = np.array([min((_initial_rate_bps(ir, by_name[p]) for p in f.get("path", []) if p in by_name),
                          default=_initial_rate_bps(ir)) for f in ir["flows"]], dtype=float)  # fmt: skip
    fct = done_s - start_s
    with np.errstate(divide="ignore", invalid="ignore"):  # ideal_fct_s over all flows at once
        ideal = np.where(rate0 > 0, (nbytes + np.ceil(nbytes / mss) * header) * 8.0 / rate0 + one_way_s, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        slowdown = fct / ideal
    conv = convergence_times(flows, ir, _r=rows)
    starts_ns = np.array([int(f["start_ns"]) for f in ir["flows"]])
    joining = starts_ns > starts_ns.min()

    # -- RTT distributions
    sub_bits = int((histograms or {}).get("sub_bits", HIST_SUB_BITS))
    rtt_h = (histograms or {}).get("rtt") if histograms else None
    if rtt_h is not None and len(rtt_h.get("bin", [])) + len(rtt_h.get("n", [])) > 0:
        pos = np.argsort(ids)
        flow_of = lambda a: pos[np.searchsorted(ids[pos], np.asarray(a, dtype=np.int64))]  # noqa: E731
        rtt = _hist_stats(rtt_h, n, flow_of(rtt_h.get("flow_id", [])),
                          flow_of(rtt_h["stats_flow_id"]) if "stats_flow_id" in rtt_h else None, sub_bits)
        rtt_source = str((histograms or {}).get("rtt_source_kind", "packets"))
    else:
        rtt_ms = col("rtt_ms")
        frame = pd.DataFrame({"i": iw, "v": rtt_ms}).dropna()
        grp = frame.groupby("i")["v"]
        rtt = {k: np.full(n, np.nan) for k in ("mean", "min", "p50", "p95", "p99", "max")}
        if len(frame):
            for k, s in (("mean", grp.mean()), ("min", grp.min()), ("max", grp.max()), ("p50", grp.quantile(0.5)),
                         ("p95", grp.quantile(0.95)), ("p99", grp.quantile(0.99))):  # fmt: skip
                rtt[k][s.index.to_numpy()] = s.to_numpy()
        rtt_source = "interval means"

    total_bits = float(bits.sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        share = bits / total_bits if total_bits > 0 else np.full(n, np.nan)
    per_flow_cols: dict[str, Any] = {
        "flow_id": ids,
        "group": [int(f.get("group", 0)) for f in ir["flows"]],
        "cca": cca,
        "rtt_ms": rtt_s * 1e3,
        "path": [[str(x) for x in f.get("path", ["link"])] for f in ir["flows"]],
        "ack_path": [[str(x) for x in f.get("ack_path", [])] for f in ir["flows"]],
        "start_s": start_s,
        "start_offset_s": offsets,
        "end_s": end_s,
        "active_in_window": active_in_window,
        "active_s": active_s,
        "delivered_bytes": bits / 8.0,
        "goodput_bps": goodput,
        "goodput_window_bps": bits / covered_s,
        "share": share,
        "sent_segs": sent_segs,
        "retrans_segs": retrans,
        "retrans_rate": retrans_rate_f,
        "rto_count": rto,
        "rtt_ms_mean": rtt["mean"],
        "rtt_ms_min": rtt["min"],
        "rtt_ms_p50": rtt["p50"],
        "rtt_ms_p95": rtt["p95"],
        "rtt_ms_p99": rtt["p99"],
        "rtt_ms_max": rtt["max"],
        "rtt_source": np.full(n, rtt_source, dtype=object),
        "cwnd_bytes_mean": cwnd_mean,
        "bytes": nbytes,
        "fct_s": fct,
        "ideal_fct_s": ideal,
        "slowdown": slowdown,
        "convergence_s": np.where(joining, conv, np.nan),
    }
    per_flow_df = pd.DataFrame(per_flow_cols)
    finite = ~np.isnan(nbytes)
    per_flow_df.loc[~finite, ["bytes", "fct_s", "forward_delay_ns", "ideal_fct_s", "slowdown"]] = np.nan
    per_flow = _records(per_flow_df)

    # -- per algorithm
    per_alg: dict[str, dict[str, Any]] = {}
    algs = list(dict.fromkeys(cca.tolist()))
    alg_of_flow = np.array([algs.index(a) for a in cca], dtype=np.int64)
    shares = _alg_shares(rows, w, alg_of_flow[iw] if iw.size else iw, len(algs), share_bin_s)
    state_time = _state_time(flows, rows, w, alg_of_flow, len(algs))
    alg_rtt = None
    if rtt_source != "interval means" and rtt_h is not None:
        fid = np.asarray(rtt_h.get("flow_id", []), dtype=np.int64)
        pos = np.argsort(ids)
        alg_rtt = hist_quantiles(rtt_h.get("bin", []), rtt_h.get("count", []), _QS,
                                 alg_of_flow[pos[np.searchsorted(ids[pos], fid)]] if fid.size else None,
                                 len(algs), sub_bits) / _NS_PER_MS  # fmt: skip
    for a, alg in enumerate(algs):
        mine = alg_of_flow == a
        abits = float(bits[mine].sum())
        s = shares[:, a] if shares.size else np.array([])
        q25, q50, q75 = np.percentile(s, [25, 50, 75]) if s.size else (math.nan,) * 3
        sent = float(sent_segs[mine].sum())
        entry: dict[str, Any] = {
            "flows": int(mine.sum()),
            "goodput_bps": abits / covered_s,
            "share": abits / total_bits if total_bits > 0 else math.nan,
            "share_p25": float(q25),
            "share_p50": float(q50),
            "share_p75": float(q75),
            "share_iqr": float(q75 - q25),
            "retrans_rate": float(retrans[mine].sum()) / sent if sent > 0 else math.nan,
        }
        if alg_rtt is not None:
            entry.update(rtt_ms_p50=alg_rtt[a, 0], rtt_ms_p95=alg_rtt[a, 1], rtt_ms_p99=alg_rtt[a, 2])
        entry["state_time"] = state_time[a]
        if len(algs) > 1 and s.size:
            per = detect_period(s, share_bin_s, min_period=2 * share_bin_s)
            entry.update(share_period_s=per.period_s, share_period_p=per.p_value, share_period_lo_s=per.lo_s,
                         share_period_hi_s=per.hi_s)  # fmt: skip
        per_alg[alg] = entry

    # -- per link, and the aggregate's link metrics: the one link's; in a topology the bottleneck's
    # (the most utilized link) utilization, drops, marks and queueing over all links together
    per_link = link_summary(link, ir, {int(i): float(b) for i, b in zip(ids, bits)})
    lmask = in_window(link["time_s"], ir)
    lw = link.loc[lmask]
    names = link["link"].astype(str).to_numpy()
    ldt = np.zeros(len(link))
    for name in np.unique(names):
        of_link = np.flatnonzero(names == name)
        ldt[of_link] = np.diff(link["time_s"].to_numpy(dtype=float)[of_link], prepend=0.0)
    together = _link_window_metrics(lw, ldt[lmask], float(bits.sum()))
    bottleneck = None
    if len(per_link) > 1:
        bottleneck = max(per_link, key=lambda k: -1.0 if per_link[k]["utilization"] is None or
                         math.isnan(per_link[k]["utilization"]) else per_link[k]["utilization"])  # fmt: skip
    qd = lw["queue_delay_ms"]
    departed = lw["departed_packets"] if "departed_packets" in lw else pd.Series(dtype=float)
    soj_h = (histograms or {}).get("sojourn") if histograms else None
    if soj_h is not None and len(soj_h.get("bin", [])) + int(np.sum(soj_h.get("n", [0]))) > 0:
        qs = _hist_stats(soj_h, 1, None, None, sub_bits)
        queue = {f"queue_delay_ms_{k}": float(qs[k][0]) for k in ("mean", "min", "p50", "p95", "p99", "max")}
        queue["queue_delay_source"] = "packets"
    else:
        queue = {**_pcts(qd, "queue_delay_ms"), "queue_delay_ms_min": float(qd.min()) if qd.notna().any() else math.nan,
                 "queue_delay_ms_max": float(qd.max()) if qd.notna().any() else math.nan,
                 "queue_delay_source": "interval means"}  # fmt: skip
    weight = float(departed.where(qd.notna(), 0.0).sum())
    if weight > 0:  # the exact mean: Σ sojourn / packets, from the cumulative counters
        queue["queue_delay_ms_mean"] = float((qd.fillna(0.0) * departed).sum()) / weight
    if bottleneck is None:
        utilization, link_utilization = together["goodput_utilization"], together["utilization"]
    else:
        utilization = per_link[bottleneck]["goodput_utilization"]
        link_utilization = per_link[bottleneck]["utilization"]
    gp_active = goodput[active_in_window]
    j1 = jain_over_time(flows, ir, 1.0, _r=rows) if len(flows) else pd.Series(dtype=float)
    fl_interval = ir.get("record", {}).get("flows_interval_ns") if isinstance(ir.get("record"), dict) else None
    fl_interval_s = (fl_interval or ir["sample_interval_ns"]) / _NS_PER_S
    rtt_bin = math.ceil(float(rtt_s.max()) / fl_interval_s - 1e-9) * fl_interval_s if n else math.nan
    jr = jain_over_time(flows, ir, rtt_bin, _r=rows) if len(flows) else pd.Series(dtype=float)
    sent_all = float(sent_segs.sum())

    def stats(x: np.ndarray, name: str, qs: tuple[int, ...] = (50, 99)) -> dict[str, float]:
        x = x[~np.isnan(x)]
        out = {f"{name}_mean": float(x.mean()) if x.size else math.nan}
        for q in qs:
            out[f"{name}_p{q}"] = float(np.percentile(x, q)) if x.size else math.nan
        return out

    aggregate = {
        "goodput_bps": total_bits / covered_s,
        "utilization": utilization,
        "link_utilization": link_utilization,
        **({"bottleneck": bottleneck} if bottleneck is not None else {}),
        "loss_rate": together["loss_rate"],
        "drops": together["drops"],
        "drops_total": together["drops_total"],
        "marks_ce": together["marks_ce"],
        "mark_rate": together["mark_rate"],
        "arrival_packets": together["arrival_packets"],
        "retrans_segs": float(retrans.sum()),
        "retrans_rate": float(retrans.sum()) / sent_all if sent_all > 0 else math.nan,
        **queue,
        "queue_bytes_mean": float(lw["queue_bytes"].mean()) if len(lw) else math.nan,
        "jain": jain_index(gp_active),
        "jain_1s_mean": float(j1.mean()) if len(j1) else math.nan,
        "jain_1s_min": float(j1.min()) if len(j1) else math.nan,
        "jain_rtt_mean": float(jr.mean()) if len(jr) else math.nan,
        "jain_rtt_min": float(jr.min()) if len(jr) else math.nan,
        "jain_rtt_bin_s": rtt_bin,
        "flows_active": int(active_in_window.sum()),
        "flows_completed": int(np.sum(finite & ~np.isnan(fct))),
        **stats(np.where(finite, fct, np.nan), "fct_s"),
        **stats(np.where(finite, slowdown, np.nan), "slowdown"),
        **stats(np.where(joining, conv, np.nan), "convergence_s", ()),
        "convergence_s_max": float(np.nanmax(conv)) if np.any(joining & ~np.isnan(conv)) else math.nan,
        "flows_joining": int(joining.sum()),
        "flows_converged": int(np.sum(joining & ~np.isnan(conv))),
        "convergence": {"band": CONVERGENCE_BAND, "hold_s": CONVERGENCE_HOLD_S, "bin_s": CONVERGENCE_BIN_S},
    }
    out = {
        "summary_version": SUMMARY_VERSION,
        "window": {"from_s": lo_s, "to_s": hi_s, "duration_s": (hi - lo) / _NS_PER_S,
                   "samples": int(lw["time_s"].nunique()),
                   "share_bin_s": share_bin_s, "flows_interval_s": fl_interval_s},  # fmt: skip
        "per_flow": per_flow,
        "per_algorithm": per_alg,
        "per_link": per_link,
        "aggregate": aggregate,
    }
    out["per_flow"] = []
    safe = json_safe(out)
    safe["per_flow"] = per_flow  # already JSON-safe (:func:`_records`), in key order after aggregate's
    return {k: safe[k] for k in ("summary_version", "window", "per_flow", "per_algorithm", "per_link", "aggregate")}


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """A frame as JSON-safe records (Python scalars, NaN/±inf → None), column by column (no per-value walk)."""
    cols = []
    for c in df.columns:
        v = df[c].tolist()
        if pd.api.types.is_float_dtype(df[c]):
            v = [x if math.isfinite(x) else None for x in v]
        elif df[c].dtype == object:
            v = [None if isinstance(x, float) and not math.isfinite(x) else
                 (x.item() if isinstance(x, np.generic) else x) for x in v]  # fmt: skip
        cols.append(v)
    names = [str(c) for c in df.columns]
    return [dict(zip(names, row)) for row in zip(*cols)]


#: Version of summary.json's definitions: 2 = goodput over each flow's active interval,
#: per-packet delay distributions, time-resolved Jain, FCT, convergence, share periods
#: (1: whole-window goodput, percentiles of per-interval means).
SUMMARY_VERSION = 2


def json_safe(obj: Any) -> Any:
    """Recursively convert numpy scalars to Python and NaN/±inf to ``None``."""
    # exact built-in types first: a summary of many flows is tens of thousands of them, and
    # isinstance against the Mapping ABC costs several times a type comparison
    t = type(obj)
    if t is float:
        return obj if math.isfinite(obj) else None
    if t is str or t is int or t is bool or obj is None:
        return obj
    if t is dict:
        return {str(k): json_safe(v) for k, v in obj.items()}
    if t is list:
        return [json_safe(v) for v in obj]
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


@dataclass(frozen=True)
class Period:
    """What :func:`detect_period` found.

    ``period_s``: the period (NaN when there is no significant one);
    ``p_value``: the probability that noise without a cycle (the series' own
    red-noise background) shows a peak at least this strong anywhere in the
    tested range (multiple comparisons corrected); ``significant``:
    ``p_value < alpha``; ``lo_s``/``hi_s``: the periods at half a frequency
    bin either side of the peak (the Rayleigh resolution 1/T: a period is
    known no better than this from a series of length T); ``candidate_s``:
    the strongest peak's period even when it is not significant; ``strength``:
    the peak's power over the background; ``n_cycles``: how many periods the
    series holds.
    """

    period_s: float
    p_value: float
    significant: bool
    lo_s: float
    hi_s: float
    candidate_s: float
    strength: float
    n_cycles: float
    alpha: float
    method: str = "periodogram vs AR(1) red noise"

    def describe(self) -> str:
        """One line for tables and figure titles."""
        if not self.significant:
            if math.isnan(self.candidate_s):
                return "no significant period (series too short)"
            return f"no significant period (strongest peak {self.candidate_s:.1f} s, p = {self.p_value:.2g})"
        return f"period {self.period_s:.1f} s ({self.lo_s:.1f}–{self.hi_s:.1f} s), p = {self.p_value:.2g}"


#: Half-width (independent frequencies) of the running median that estimates the local continuum.
CONTINUUM_BINS = 5
#: A period must fit this many times into the series to be tested (default ``max_period`` = span / this).
MIN_CYCLES = 3


def detect_period(x: np.ndarray, dt: float, *, min_period: float | None = None, max_period: float | None = None,
                  alpha: float = 0.01) -> Period:
    """The dominant period of a regularly sampled series, with a significance test.

    The series (NaNs dropped, linear trend removed) is tested against the
    null hypothesis that it is noise without a cycle. The candidate is the
    strongest peak of the periodogram (Hann window, 8× zero-padded:
    :func:`periodogram`, equal to scipy.signal's) relative to a red-noise
    spectrum, among periods in [``min_period`` (default 2·dt),
    ``max_period`` (default a :data:`MIN_CYCLES`-th of the series: the
    period must fit three times)]. The background at the candidate is the
    larger of
    (a) the spectrum of a first-order autoregressive process
    ``S(f) ∝ (1 − ρ²) / (1 − 2ρ·cos(2πf·dt) + ρ²)`` — red noise (Gilman,
    Fuglister & Mitchell, J. Atmos. Sci. 20, 1963; the test of Schulz &
    Mudelsee's REDFIT, Computers & Geosciences 28, 2002) — with ρ the lag-1
    autocorrelation of the series once the best sinusoid at the candidate
    is removed (else a strong cycle's own autocorrelation would pass for red
    noise and hide it), scaled to the periodogram's mean power; and
    (b) the local continuum: the running median of the periodogram over
    ±:data:`CONTINUUM_BINS` independent frequencies / ln 2 (Mann & Lees,
    Climatic Change 33, 1996), so that a broadband excess that is not
    AR(1)-shaped (a slow wander under fast noise) is not taken for a line.
    Under the null the periodogram over the background is χ²₂/2, so a peak
    of ratio r has p = e^(−r), corrected for having looked at the M
    independent frequencies of the range (Šidák: 1 − (1 − p)^M). The period
    is significant when that is below ``alpha`` (default 1 %; measured
    false-positive rates on AR(1) noise with ρ from 0 to 0.99: ≤ 1.3 %); it is
    then located to the sample interval by the autocorrelation's peak within
    the periodogram peak's resolution interval ``lo_s``–``hi_s``.

    Noise gives "no significant period" (e.g. one CUBIC flow under random
    loss); the 2 BBR + 2 CUBIC share cycle of the ``bbr-cubic-cycles``
    preset gives 20 ± 2 s (tests/test_trials_metrics.py).
    """
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    n = x.size
    none = Period(math.nan, math.nan, False, math.nan, math.nan, math.nan, math.nan, math.nan, alpha)
    if n < 16 or not np.any(x != x[0]):
        return none
    tt = np.arange(n, dtype=float)
    x = x - np.polyval(np.polyfit(tt, x, 1), tt)  # linear trend removed
    if not np.any(np.abs(x) > 1e-12 * max(1.0, float(np.max(np.abs(x))))):
        return none
    span = n * dt
    lo_p = max(min_period or 0.0, 2 * dt)
    hi_p = min(max_period or math.inf, span / MIN_CYCLES)
    if lo_p >= hi_p:
        return none
    f, p = periodogram(x, dt, pad=8)
    fi, _ = periodogram(x, dt, pad=1)
    with np.errstate(divide="ignore"):
        period, period_i = 1.0 / f, 1.0 / fi
    band = (period >= lo_p) & (period <= hi_p)
    m = int(np.sum((period_i >= lo_p) & (period_i <= hi_p)))
    if not band.any() or m == 0:
        return none
    # the candidate: the strongest peak; the background: the AR(1) spectrum of what is left
    # once the best sinusoid at the candidate is removed (else a strong cycle's own
    # autocorrelation would pass for red noise and hide it)
    def ar1(series: np.ndarray) -> float:
        return float(np.clip(np.corrcoef(series[:-1], series[1:])[0, 1], 0.0, 0.99)) if np.std(series) > 0 else 0.0

    def red(freq: np.ndarray | float, rho: float) -> np.ndarray:
        return (1 - rho**2) / (1 - 2 * rho * np.cos(2 * np.pi * np.asarray(freq) * dt) + rho**2)

    rho0 = ar1(x)
    k = int(np.flatnonzero(band)[np.argmax((p / red(f, rho0))[band])])
    fk = float(f[k])
    design = np.column_stack([np.cos(2 * np.pi * fk * tt * dt), np.sin(2 * np.pi * fk * tt * dt)])
    resid = x - design @ np.linalg.lstsq(design, x, rcond=None)[0]
    rho = ar1(resid)
    fr, pr = periodogram(x, dt, pad=1)  # the level from the whole series: exact under the null
    scale = float(np.mean(pr[1:]) / np.mean(red(fr[1:], rho)))
    # … and no lower than the local continuum: the running median of the periodogram over
    # ±CONTINUUM_BINS independent frequencies / ln 2 (the median of χ²₂/2), so that a broadband
    # excess that is not AR(1)-shaped (a slow wander under fast noise) is not taken for a line
    # (Mann & Lees, Climatic Change 33, 1996: robust background estimation)
    j = int(np.argmin(np.abs(fr - fk)))
    h = CONTINUUM_BINS
    lo_j = int(np.clip(j - h, 1, max(1, pr.size - 2 * h - 1)))
    continuum = float(np.median(pr[lo_j : lo_j + 2 * h + 1])) / math.log(2)
    background = max(scale * float(red(fk, rho)), continuum)
    r = float(p[k] / background) if background > 0 else math.inf
    p_single = math.exp(-r)  # χ²₂/2 survival at r
    p_value = float(-np.expm1(m * np.log1p(-p_single))) if p_single < 1 else 1.0
    half = 0.5 / span
    lo_s, hi_s = 1.0 / (fk + half), (1.0 / (fk - half) if fk > half else math.inf)
    sig = p_value < alpha
    best = 1.0 / fk
    if sig:  # refine: the autocorrelation's peak within the periodogram peak's resolution interval
        acf = autocorrelation(x)
        lags = np.arange(acf.size) * dt
        near = np.flatnonzero((lags >= lo_s) & (lags <= hi_s))
        if near.size:
            j = int(near[np.argmax(acf[near])])
            if 0 < j < acf.size - 1 and acf[j] >= acf[j - 1] and acf[j] >= acf[j + 1]:
                best = float(lags[j])
    return Period(best if sig else math.nan, p_value, sig, lo_s, hi_s, best, r, span / best, alpha)


def periodogram(x: np.ndarray, dt: float, pad: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """One-sided power spectral density of ``x`` with a Hann window (frequencies in Hz, PSD):
    the same numbers as ``scipy.signal.periodogram(x, fs=1/dt, window="hann", nfft=pad·n,
    detrend=False)`` (a test checks it), without importing scipy.signal into every summary."""
    x = np.asarray(x, dtype=float)
    n = x.size
    win = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n)  # periodic Hann, as scipy's get_window
    nfft = pad * n
    spec = np.abs(np.fft.rfft(x * win, nfft)) ** 2 / ((1.0 / dt) * np.sum(win**2))
    if nfft % 2:
        spec[1:] *= 2
    else:
        spec[1:-1] *= 2
    return np.fft.rfftfreq(nfft, dt), spec


def autocorrelation(x: np.ndarray) -> np.ndarray:
    """The unbiased autocorrelation of a series (mean removed; lag k averaged over its n − k pairs;
    r(0) = 1), up to half its length — for figures."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    n = x.size
    if n < 2:
        return np.array([])
    x = x - x.mean()
    if not np.any(x):
        return np.zeros(n // 2)
    f = np.fft.rfft(x, 2 * n)
    acf = np.fft.irfft(f * np.conj(f))[: n // 2]
    acf = acf / (n - np.arange(acf.size))
    return acf / acf[0]


def dominant_period(x: np.ndarray, dt: float, min_period: float | None = None) -> tuple[float, float, np.ndarray]:
    """``(period s, autocorrelation at that lag, autocorrelation)`` of a regularly sampled series.

    The period is :func:`detect_period`'s — NaN when there is no
    significant one (the autocorrelation of noise has lobes too: this used
    to report a "period" on noise). Kept for callers that draw the
    autocorrelation; new code should use :func:`detect_period`.
    """
    acf = autocorrelation(x)
    if acf.size < 8:
        return math.nan, math.nan, acf
    per = detect_period(x, dt, min_period=min_period)
    if not per.significant:
        return math.nan, math.nan, acf
    lag = int(round(per.period_s / dt))
    return per.period_s, float(acf[lag]) if lag < acf.size else math.nan, acf


# ---- metrics of the sim-vs-kernel parity matrix (cclab parity) ------------------


def retrans_rate(flows: pd.DataFrame, ir: Mapping[str, Any], flow_ids: Iterable[int] | None = None) -> float:
    """Retransmitted segments / segments sent, over the measure window, for ``flow_ids`` (all flows by default).

    Segments sent = data segments sent, retransmissions included (the record's
    ``sent_segs``; in records made before that column, wire bytes sent /
    (mss + header_bytes)), as the per-flow ``retrans_rate`` of :func:`summary`; here summed over a set
    of flows (an algorithm's, or all). A fraction (×100 for per cent); NaN when
    nothing was sent.
    """
    rows = _Rows(flows, ir)
    sent, retrans = _sent_and_retrans(flows, ir, rows, in_window(rows.t, ir))
    mine = _flow_selection(ir, flow_ids)
    total = float(sent[mine].sum())
    return float(retrans[mine].sum()) / total if total > 0 else math.nan


def _flow_selection(ir: Mapping[str, Any], flow_ids: Iterable[int] | None) -> np.ndarray:
    """Mask over ``ir["flows"]`` of the flows with ids in ``flow_ids`` (all when None)."""
    ids = np.array([int(f["id"]) for f in ir["flows"]], dtype=np.int64)
    return np.ones(ids.size, dtype=bool) if flow_ids is None else np.isin(ids, list(flow_ids))


def _sent_and_retrans(flows: pd.DataFrame, ir: Mapping[str, Any], rows: _Rows, w: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Per flow over the rows ``w``: segments sent and segments retransmitted — the two terms of
    every retransmission rate of this module.

    Segments sent are the record's ``sent_segs`` (data segments, retransmissions included, counted
    as both backends count ``retrans_segs``), so a rate is at most 1. Records made before that
    column (2026-11-29) have only wire bytes: there a segment is wire bytes sent / (mss +
    header_bytes), full-size equivalents, and a flow of a few short segments could show a rate
    above 1."""
    segs = flows["sent_segs"].to_numpy(dtype=float)[w] if "sent_segs" in flows.columns else None
    if segs is not None and not np.isnan(segs).all():
        sent = _by_flow(rows.idx[w], segs, rows.n)
    else:
        wire_seg = float(ir.get("mss", 1448)) + float(ir.get("header_bytes", 52))
        send_rate = flows["send_rate_bps"].to_numpy(dtype=float)[w]
        sent = _by_flow(rows.idx[w], send_rate * rows.dt[w], rows.n) / 8.0 / wire_seg
    return sent, _by_flow(rows.idx[w], flows["retrans_segs"].to_numpy(dtype=float)[w], rows.n)


def state_fractions(flows: pd.DataFrame, ir: Mapping[str, Any], flow_ids: Iterable[int] | None = None) -> dict[str, float]:
    """Fraction of the measure window spent in each algorithm state (e.g. BBR's modes).

    Over the samples of ``flow_ids`` (all flows by default) in the window
    where the flow is active and exports a state; each sample counts for its
    interval's length (the state sampled at its end). Keys are the state names
    in lower case (``startup``, ``drain``, ``probe_bw``, ``probe_rtt``), so the
    two backends' spellings compare; the fractions sum to 1 (empty when no
    sample has a state).
    """
    rows = _Rows(flows, ir)
    group = np.where(_flow_selection(ir, flow_ids), 0, -1)
    return _state_time(flows, rows, in_window(rows.t, ir), group, 1)[0]


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


def packet_rounds(flows: pd.DataFrame, ir: Mapping[str, Any], flow_id: int = 0) -> np.ndarray:
    """Start times (s) of flow ``flow_id``'s packet-timed round trips, estimated from its record.

    A round trip, as BBR counts them (tcp_bbr.c ``bbr_update_bw``: a round
    ends when a packet sent after the round began is acknowledged), lasts an
    RTT *including* the queue it meets. From the record: S(t), segments sent
    (wire bytes sent / (mss + headers), cumulative), and A(t), segments
    acknowledged at the sender — the receiver's in-order delivery D (payload
    bytes / mss, cumulative) one return-path delay later (A(t) = D(t − (rtt −
    ⌊rtt/2⌋)), the uncongested return of docs/ir.md). Round r + 1 starts at the
    first sample t > t_r with A(t) > S(t_r) + ½. Resolution: the sample
    interval. Both backends record S and D the same way, so their rounds are
    counted alike.
    """
    f = next((x for x in ir["flows"] if int(x["id"]) == int(flow_id)), None)
    if f is None:
        raise ValueError(f"flow_id {flow_id}: no such flow in the scenario")
    d = flows.loc[flows["flow_id"] == flow_id].sort_values("time_s")
    t = d["time_s"].to_numpy(dtype=float)
    dt = np.diff(t, prepend=0.0)
    wire = float(ir["mss"]) + float(ir["header_bytes"])
    sent = np.cumsum(np.nan_to_num(d["send_rate_bps"].to_numpy(dtype=float)) * dt / 8.0) / wire
    delivered = np.cumsum(np.nan_to_num(d["goodput_bps"].to_numpy(dtype=float)) * dt / 8.0) / float(ir["mss"])
    rtt_ns = int(f["rtt_ns"])
    acked = np.interp(t - (rtt_ns - rtt_ns // 2) / _NS_PER_S, t, delivered, left=0.0)
    starts = [int(f["start_ns"]) / _NS_PER_S]
    i = 0
    while True:
        s_at = float(np.interp(starts[-1], t, sent, left=0.0))
        nxt = np.flatnonzero((acked[i:] > s_at + 0.5) & (t[i:] > starts[-1]))
        if nxt.size == 0:
            return np.array(starts)
        i += int(nxt[0])
        starts.append(float(t[i]))


def startup_exit_round(flows: pd.DataFrame, ir: Mapping[str, Any], flow_id: int = 0, startup: str = "startup") -> float:
    """When flow ``flow_id`` left Startup, in its packet-timed round trips (:func:`packet_rounds`).

    BBR leaves Startup on a round-counted rule (three rounds without 25 %
    bandwidth growth, ``bbr_check_full_bw_reached``), and Startup fills the
    queue, so its last rounds are longer than a base RTT (on 2 BDP, three
    times): counted in base RTTs (:func:`startup_exit_rounds`) one round
    more or less reads as three. The value is the index of the round in which
    the exit sample falls plus the fraction of that round elapsed. NaN when
    the flow is never seen in Startup; +inf when it never leaves it.
    """
    base = startup_exit_rounds(flows, ir, flow_id, startup)
    if not math.isfinite(base):
        return base
    f = next(x for x in ir["flows"] if int(x["id"]) == int(flow_id))
    exit_s = int(f["start_ns"]) / _NS_PER_S + base * int(f["rtt_ns"]) / _NS_PER_S
    starts = packet_rounds(flows, ir, flow_id)
    r = int(np.searchsorted(starts, exit_s + 1e-9, side="right")) - 1
    if r + 1 < starts.size:
        return r + (exit_s - starts[r]) / (starts[r + 1] - starts[r])
    return float(r)


def time_to_rate(
    flows: pd.DataFrame,
    at_s: float,
    rate_bps: float,
    *,
    fraction: float = 0.9,
    window_s: float = 0.1,
    column: str = "throughput_bps",
    direction: str = "up",
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
    ≥ ``fraction × rate_bps`` (``direction="down"``: ≤, for a sender that
    must slow down to a lower capacity — e.g. ``column="send_rate_bps"``,
    ``fraction=1.1``), minus ``at_s`` — so it is at least ``window_s``. +inf
    when the rate never gets there.
    """
    if direction not in ("up", "down"):
        raise ValueError(f"direction {direction!r}: expected 'up' or 'down'")
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
    if direction == "up":
        hit = np.flatnonzero(mean >= fraction * rate_bps * (1 - 1e-12))
    else:
        hit = np.flatnonzero(mean <= fraction * rate_bps * (1 + 1e-12))
    return float(t[n - 1 + int(hit[0])] - at_s) if hit.size else math.inf


def peak_queue_bytes(link: pd.DataFrame, from_s: float = 0.0, to_s: float | None = None) -> float:
    """The largest sampled bottleneck queue (bytes) with ``from_s < time ≤ to_s`` (the whole run by default)."""
    t = link["time_s"]
    mask = t > from_s - 1e-12
    if to_s is not None:
        mask &= t <= to_s + 1e-12
    q = link.loc[mask, "queue_bytes"]
    return float(q.max()) if q.notna().any() else math.nan
