"""``cclab doctor --read-latency SCENARIO``: the receiving application's read latency on this test bed.

One kernel run of the scenario in which the receiver (``cclab-link recv
--read-latency``) times its own reads: before each read it peeks one byte
with ``SO_TIMESTAMPNS`` on, which blocks until in-order data is readable and
returns the software receive timestamp of the oldest readable segment; the
read's return time minus that timestamp is the read latency. Nothing is
traced: the cost is one extra system call per read.

Why it matters: Linux holds a receiver's ACK while data waits unread, so a
late read releases a window as one burst, and on a buffer far below the
BDP that burst sets the loss rate (docs/validation.md §4, "The receiving
application's read latency"). The result is printed as a ``[host]
read_delay`` line that gives the simulator's receivers the same latency
(docs/ir.md, ``read_delay``; the histogram spelling keeps the rare long
reads at their measured weight).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["measure", "merge", "summarize", "toml_line"]

#: Quantiles :func:`summarize` reports.
QUANTILES = (0.5, 0.9, 0.99, 0.999)


def measure(scenario: str | Path | Mapping[str, Any], seed: int | None = None) -> dict[str, Any]:
    """One kernel run of ``scenario`` with the receiver timing its reads (root; a dumbbell scenario).

    Returns ``{"bin_ns", "counts", "over", "reads", "valid", "invalid_reasons", "goodput_bps"
    (the whole run's), "scenario"}``: ``counts[i]`` reads took ``[i, i + 1) × bin_ns``; ``over`` took 100 ms or more.
    Raises :class:`cclab.errors.ScenarioError` for a scenario the kernel backend refuses and
    :class:`cclab.backends.BackendError` when the run fails.
    """
    from cclab.api import prepare
    from cclab.kernel import backend

    _sc, _toml, ir = prepare(scenario, seed)
    backend.check(ir)
    raw = backend.run(ir, read_latency=True)
    hist = dict(raw["meta"]["receiver_read_latency"])
    n_flows = len(ir["flows"])
    times, delivered = raw["flows"]["time_ns"], raw["flows"]["delivered_bytes"]  # rows by time, then flow
    window = float(times[-1]) / 1e9 if len(times) else 0.0
    total = float(delivered[-n_flows:].sum()) if len(delivered) else 0.0  # cumulative bytes read, the last sample
    hist.update(valid=bool(raw["valid"]), invalid_reasons=list(raw["invalid_reasons"]),
                goodput_bps=8 * total / window if window > 0 else 0.0, scenario=str(ir.get("name", "")))  # fmt: skip
    return hist


def merge(hists: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Several :func:`measure` results pooled into one histogram (the same bin width)."""
    hists = list(hists)
    if not hists:
        raise ValueError("no histograms to merge")
    bins = {int(h["bin_ns"]) for h in hists}
    if len(bins) != 1:
        raise ValueError(f"histograms with different bin widths: {sorted(bins)} ns")
    n = max(len(h["counts"]) for h in hists)
    counts = [0] * n
    for h in hists:
        for i, c in enumerate(h["counts"]):
            counts[i] += int(c)
    over = sum(int(h.get("over", 0)) for h in hists)
    return {"bin_ns": bins.pop(), "counts": counts, "over": over, "reads": sum(counts) + over}


def summarize(hist: Mapping[str, Any]) -> dict[str, Any]:
    """Reads, quantiles (the upper edge of the bin each falls in, µs; ``None`` among the reads of
    100 ms or more) and reads ≥ 1 ms per million (:func:`cclab.jitter.histogram_summary`)."""
    from cclab.jitter import histogram_summary

    bin_ns = int(hist["bin_ns"])
    over = int(hist.get("over", 0))
    s = histogram_summary([int(c) for c in hist["counts"]], bin_ns, QUANTILES, over)
    out: dict[str, Any] = {"reads": s["total"], "over_100ms": over}
    for q, i in s["bins"].items():
        out[f"p{q * 100:g}_us"] = None if i is None else (i + 1) * bin_ns / 1e3
    out["per_million_over_1ms"] = s["per_million_over_1ms"]
    return out


def toml_line(hist: Mapping[str, Any]) -> str:
    """The ``[host] read_delay`` line (the histogram spelling; reads of 100 ms or more are left out)."""
    counts = [int(c) for c in hist["counts"]]
    while counts and counts[-1] == 0:
        counts.pop()
    bin_ns = int(hist["bin_ns"])
    bin_txt = f"{bin_ns // 1000}us" if bin_ns % 1000 == 0 else f"{bin_ns}ns"
    return f'read_delay = {{ histogram = {{ bin = "{bin_txt}", counts = [{", ".join(map(str, counts))}] }} }}'
