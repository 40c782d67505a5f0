"""Resource estimates and limits, checked before a run starts.

A scenario can be valid field by field and still ask for more than any
machine has: a 1 µs sample interval with 10 000 flows is 10¹⁰ rows per
simulated second, and the engine would abort the process trying to allocate
them. So before anything runs, :func:`estimate` predicts from the IR

* **events** — the simulator's work: ≈ 2.5 per bottleneck packet (a data
  packet, about half an ACK, timers), plus one per sample and per row, where
  the packets are the most the link can carry (its highest rate over the
  whole run);
* **memory** — peak resident memory of ``cclab run``: ≈ 1 kB per
  ``flows.parquet`` row (samples × flows: the engine's columns, the metric
  frames and the Parquet writer), 200 B per sample, 100 B per packet the
  buffer and the paths can hold, 50 B per trace opportunity, 20 kB per
  flow (the engine's TCP state measured 7.5 kB per flow with 10 000 CUBIC
  flows at 10 Gbit/s, plus the flow's IR and per-flow frames), 150 MB base;
* **record size** — ≈ 16 B per row and per sample (zstd Parquet);

and :func:`check` refuses a run above any of :data:`LIMITS` with one line
naming the estimate, the field most to blame (``flows`` when the flows'
own state is), the limit and the override: ``--allow-large`` on the
command line, ``allow_large=True`` in Python. The coefficients were measured
on this project's machine (``cclab run`` peak RSS and record sizes for 10⁵–10⁶
rows); they are estimates, deliberately on the high side. ``cclab run
--dry-run`` and ``cclab sweep --dry-run`` print them without running.

The number of flows has no fixed limit on the simulator: memory (this
estimate) bounds it — at 20 kB per flow the 8 GB limit allows ~390 000
flows whose per-flow series are coarse or off. The kernel backend has a
fixed limit, :data:`cclab.kernel.machine.MAX_FLOWS` (docs/kernel.md says
why), which :func:`check` applies too, so ``--dry-run --backend kernel``
reports it. docs/performance.md lists every limit with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .errors import ScenarioError

__all__ = ["LIMITS", "Estimate", "check", "estimate", "format_bytes", "format_duration"]

#: The limits a run must stay within unless explicitly overridden.
LIMITS = {
    "memory_bytes": 8 * 10**9,  # 8 GB of estimated peak memory
    "events": 10**10,  # ≈ an hour of simulator time at a few million events per second
    "record_bytes": 20 * 10**9,  # 20 GB on disk
}

#: Simulator speed assumed for the wall-time estimate (events per second; measured 3–12 M).
EVENTS_PER_S = 3e6

_BASE_MEMORY = 150e6
_PER_ROW = 1000.0
_PER_SAMPLE = 200.0
_PER_PACKET_HELD = 100.0
_PER_OPPORTUNITY = 50.0
_PER_FLOW = 20e3
# Record bytes (zstd Parquet, measured 2026-11-29 on 60 s runs at 100 Mbit/s: 4.4–18.1 B per flow row,
# 14.8–19.1 per link row; summary.json, resolved.json and histograms.parquet ~1.3–1.5 kB per flow and
# ~20 kB besides)
_RECORD_PER_ROW = 20.0
_RECORD_PER_FLOW = 1500.0
_RECORD_BASE = 20e3
_EVENTS_PER_PACKET = 2.5


@dataclass(frozen=True)
class Estimate:
    """What a run is expected to need (see the module docstring for how)."""

    samples: int
    rows: int
    packets: float
    events: float
    memory_bytes: float
    record_bytes: float
    flows: int = 0

    @property
    def flow_state_bytes(self) -> float:
        """The part of :attr:`memory_bytes` that is the flows' own state."""
        return _PER_FLOW * self.flows

    @property
    def wall_s(self) -> float:
        return self.events / EVENTS_PER_S

    def over(self, backend: str = "sim") -> list[tuple[str, float, float]]:
        """``(what, estimate, limit)`` for every limit this run exceeds."""
        out = []
        for key, limit in LIMITS.items():
            if key == "events" and backend != "sim":
                continue  # the kernel runs in real time: its cost is the duration
            value = getattr(self, key)
            if value > limit:
                out.append((key, value, float(limit)))
        return out

    def summary(self) -> str:
        flow_samples = self.rows // self.flows if self.flows else self.samples
        link = f" ({self.samples:,} link samples)" if flow_samples != self.samples else ""
        return (f"{flow_samples:,} samples × flows = {self.rows:,} rows{link}; ~{self.packets:.3g} bottleneck packets, "
                f"~{self.events:.3g} events (~{format_duration(self.wall_s)} of simulator time); "
                f"memory ~{format_bytes(self.memory_bytes)} (flows' state ~{format_bytes(self.flow_state_bytes)}), "
                f"record ~{format_bytes(self.record_bytes)}")


def format_bytes(n: float) -> str:
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def format_duration(s: float) -> str:
    if s >= 86400:
        return f"{s / 86400:.3g} days"
    if s >= 3600:
        return f"{s / 3600:.3g} h"
    if s >= 60:
        return f"{s / 60:.3g} min"
    return f"{s:.2g} s"


def estimate(ir: Mapping[str, Any]) -> Estimate:
    """The resources a run of the IR ``ir`` is expected to need."""
    duration_ns = int(ir["duration_ns"])
    flows = ir.get("flows") or []
    samples = duration_ns // max(1, int(ir["sample_interval_ns"]))
    rec = ir.get("record") or {}
    flows_interval = int(rec.get("flows_interval_ns") or ir["sample_interval_ns"])  # docs/ir.md `record`
    rows = duration_ns // max(1, flows_interval) * len(flows)
    stored_rows = rows if rec.get("flows_stored", True) else 0
    links = _links(ir)
    link_rows = samples * len(links)
    wire = int(ir.get("mss", 1448)) + int(ir.get("header_bytes", 52))
    # every link at its highest rate for the whole run (a packet is handled once per link it crosses)
    packets = opportunities = buffer_bytes = max_rate = 0.0
    for link in links:
        cap = link["capacity"]
        if cap.get("kind") == "trace":
            period_ns = max(1, int(cap.get("period_ns") or 1))
            n_opp = len(cap.get("opportunities_ns") or ())
            rate = n_opp * int(cap.get("bytes_per_opportunity", 1500)) * 8 * 1e9 / period_ns
            opportunities += n_opp
        else:
            rate = float(cap.get("rate_bps") or 0)
        for change in link.get("schedule") or []:
            if change.get("rate_bps"):
                rate = max(rate, float(change["rate_bps"]))
        packets += rate * duration_ns / 1e9 / (8 * wire)
        max_rate = max(max_rate, rate)
        buffer = link.get("buffer") or {}
        buffer_bytes += float(buffer.get("bytes") or 0) + float(buffer.get("packets") or 0) * wire
    extra_link_rows = link_rows - samples  # a row per link per sample beyond the first link's
    events = _EVENTS_PER_PACKET * packets + samples + extra_link_rows + rows + 10 * len(flows)  # a row ≈ an event
    max_rtt_ns = max((int(f.get("rtt_ns") or 0) for f in flows), default=0)
    held = (buffer_bytes + max_rate * max_rtt_ns / 8e9) / wire  # queue + what the paths hold
    held = min(held, packets + 10 * len(flows))
    memory = (_BASE_MEMORY + _PER_ROW * rows + _PER_SAMPLE * link_rows + _PER_PACKET_HELD * held
              + _PER_OPPORTUNITY * opportunities + _PER_FLOW * len(flows))  # fmt: skip
    record = (_RECORD_BASE + _RECORD_PER_ROW * (stored_rows + link_rows) + _RECORD_PER_FLOW * len(flows)
              + 12 * opportunities)  # fmt: skip
    return Estimate(samples=samples, rows=rows, packets=packets, events=events, memory_bytes=memory,
                    record_bytes=record, flows=len(flows))  # fmt: skip


_NAMES = {"memory_bytes": "memory", "events": "simulator events", "record_bytes": "record size"}


def _field_value(field: str, ir: Mapping[str, Any]) -> str:
    from .units import format_duration as fmt_d, format_size

    if field == "flows":
        return f"{len(ir.get('flows') or []):,} flows"
    if field == "duration":
        return fmt_d(ir["duration_ns"])
    if field == "sample_interval":
        return f"{fmt_d(ir['sample_interval_ns'])} (with {len(ir.get('flows') or [])} flows over {fmt_d(ir['duration_ns'])})"
    if field == "record.flows":
        return (f"{fmt_d(ir['record']['flows_interval_ns'])} (with {len(ir.get('flows') or [])} flows over "
                f"{fmt_d(ir['duration_ns'])})")
    link = _largest(ir)
    if field.endswith(".trace"):
        return str(link["capacity"].get("path", "the trace")).rsplit("/", 1)[-1][:60]
    buf = link.get("buffer") or {}
    return format_size(buf["bytes"]) if buf.get("bytes") else f"{buf.get('packets')}pkts"


def _responsible(key: str, est: Estimate, ir: Mapping[str, Any]) -> str:
    """The field most to blame for exceeding the limit ``key``."""
    if key == "events":
        return "duration"
    if key == "memory_bytes" and est.flow_state_bytes >= 0.5 * est.memory_bytes:
        return "flows"
    by_rows = _PER_ROW * est.rows if key == "memory_bytes" else _RECORD_PER_ROW * est.rows
    by_samples = (_PER_SAMPLE if key == "memory_bytes" else _RECORD_PER_ROW) * est.samples
    if by_rows + by_samples >= 0.5 * getattr(est, key):
        # the per-flow rows have their own interval when the IR says so (docs/ir.md `record`)
        return "record.flows" if ir.get("record") and by_rows > by_samples else "sample_interval"
    from .resolve import link_field

    link = _largest(ir)
    return f"{link_field(ir, link)}.{'trace' if link['capacity'].get('kind') == 'trace' else 'buffer'}"


def _links(ir: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The IR's links (a stored version-3 IR has one, ``link``)."""
    return list(ir.get("links") or [ir["link"]])


def _largest(ir: Mapping[str, Any]) -> Mapping[str, Any]:
    """The link whose trace or buffer is largest: the one a too-large run is blamed on."""
    def size(link: Mapping[str, Any]) -> float:
        cap, buf = link["capacity"], link.get("buffer") or {}
        if cap.get("kind") == "trace":
            return 1e18 + len(cap.get("opportunities_ns") or ())
        return float(buf.get("bytes") or 0) + 1500.0 * float(buf.get("packets") or 0)

    return max(_links(ir), key=size)


def _fmt(key: str, value: float) -> str:
    return format_bytes(value) if key.endswith("bytes") else f"{value:.3g}"


def check(ir: Mapping[str, Any], *, backend: str = "sim", allow_large: bool = False,
          override: str = "--allow-large") -> Estimate:  # fmt: skip
    """:func:`estimate`, and a :class:`ScenarioError` if it exceeds :data:`LIMITS` (unless ``allow_large``)."""
    est = estimate(ir)
    if backend == "kernel":
        from .kernel.machine import MAX_FLOWS

        n = len(ir.get("flows") or [])
        if n > MAX_FLOWS:
            raise ScenarioError("flows", n, f"{n} flows need more than the kernel backend allows",
                                f"at most {MAX_FLOWS} flows per kernel run (CPU: docs/kernel.md), or --backend sim")  # fmt: skip
    over = est.over(backend)
    if over and not allow_large:
        key, value, limit = over[0]
        field = _responsible(key, est, ir)
        shown = _field_value(field, ir)
        others = "; ".join(f"{_NAMES[k]} ~{_fmt(k, v)} > {_fmt(k, lim)}" for k, v, lim in over[1:])
        raise ScenarioError(
            field, None,
            f"{shown}: this run is too large: estimated {_NAMES[key]} ~{_fmt(key, value)} exceeds the limit of "
            f"{_fmt(key, limit)}" + (f" (also {others})" if others else "")
            + f" [{est.rows:,} rows = {est.rows // max(1, len(ir.get('flows') or [])):,} samples × "
            f"{len(ir.get('flows') or [])} flows, "
            f"~{est.packets:.3g} bottleneck packets]",
            f"expected a smaller run (fewer samples, flows, packets or a shorter duration), or pass {override} "
            "to run it anyway",
        )
    return est
