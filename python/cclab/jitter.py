"""Host timing jitter: the scenario's ``[host] jitter`` → the IR's ``host.jitter_ns``.

A real end host takes a packet in (or puts it on the wire) a little late:
interrupt coalescing, softirq and timer scheduling, a virtual machine's
vCPU being descheduled. The simulator's hosts are punctual unless a
scenario says otherwise::

    [host]
    jitter = { median = "20us", p99 = "200us" }      # log-normal through these two quantiles
    # jitter = { quantiles = ["0us", "8us", "15us", "40us", "2ms"] }   # a measured distribution:
    #          quantiles evenly spaced in probability from p0 to p100
    # jitter = { histogram = { bin = "10us", counts = [120, 410, 95, 0, 3] } }   # a measured histogram:
    #          counts of [0, 10us), [10us, 20us), …; uniform inside a bin

Each of the four times a packet crosses a host — data leaving the sender,
data reaching the receiver, the ACK leaving the receiver, the ACK reaching
the sender — it is held an extra time drawn independently from the
distribution, and packets on one path never overtake each other (a packet
behind a late one is at least as late). Delivery-rate samples (Linux
``tcp_rate.c``) are intervals between such events, so jitter biases BBR's
bandwidth and min-RTT estimates the way a real host's timing does
(docs/validation.md §4 shows it on this project's kernel testbed).

``[host] pauses = { every = "300ms", durations = ["0.2ms", "0.9ms", "8ms"] }``
makes the hosts stall now and then, as a test bed's CPUs do (busy with the
guest kernel's own work, or a VM's vCPU taken away by its host): pauses start at random (exponential gaps with
mean ``every``), last a time drawn from ``durations`` (quantiles evenly
spaced in probability), and a data packet reaching the bottleneck or an ACK
reaching its sender during one waits for its end (:func:`pauses_ir`; the
engine's ``pauses.rs``). Unlike jitter, a pause is the same interval for
every packet that falls into it, and pauses come at a rate in time.

``[host] read_delay``, in the same two forms as ``jitter``, makes the
receiving applications read late: in-order data waits in the socket for a
time drawn from the distribution (one draw per read; the read takes all
that waits), as a real receiver's application is woken and scheduled. It
matters through Linux's ACK rule (``__tcp_ack_snd_check``): while data
waits unread the receive window cannot grow, so the every-other-segment ACK
is held, and the read's ``tcp_cleanup_rbuf`` ACKs everything at once — a
stretch ACK, which an unpaced sender answers with a burst
(docs/validation.md §4, "The receiving application's read latency"). It
works on every topology; the kernel backend refuses it.

The engine draws from a quantile table (``host.jitter_ns``: ``JITTER_POINTS``
+ 1 values at probabilities i / ``JITTER_POINTS``) with integer arithmetic,
so draws are identical on every machine. A histogram is given to the engine
as it is — its bin edges, and beside them (``host.jitter_p``) the cumulative
probability at each edge in units of 2⁻³² — so its rare long values keep
their measured frequency: resampled onto an evenly spaced table, a tail
rarer than one table interval would be smeared over that whole interval
(for ``read_delay``, a 4 096-interval table drew reads over 1 ms twice as
often as the measurement that made it). The log-normal's table is cut at
p = 1 − 0.1 / ``JITTER_POINTS`` (≈ p99.96). The kernel backend's hosts are
real and have their own timing: the option is refused there.
"""

from __future__ import annotations

import math
from typing import Any

from . import units
from .errors import ScenarioError, show_value

__all__ = ["JITTER_POINTS", "MAX_HISTOGRAM_BINS", "PROB_ONE", "READ_DELAY_POINTS", "exponential_table", "histogram_summary",
           "histogram_table", "jitter_table", "lognormal_table", "pauses_ir", "quantile_table"]

#: Intervals of the quantile table the engine interpolates in (the IR holds one more value).
JITTER_POINTS = 256
#: The same for ``read_delay``, whose rare long reads matter (reads of 1–4 ms, 100 to
#: 200 in a million in two measurements on the kernel testbed, are what release a
#: long-RTT window as one burst): its table's last interval is p99.976–p100, not p99.6–p100.
READ_DELAY_POINTS = 4096
#: Probability one in the units of the IR's ``host.jitter_p`` / ``host.read_delay_p`` (2³²).
PROB_ONE = 1 << 32
#: Most bins a histogram may have (a 5 ms range in 10 µs bins is 500).
MAX_HISTOGRAM_BINS = 100_000
#: Longest jitter accepted (a host that is a second late is an outage, not jitter).
MAX_JITTER_NS = 1_000_000_000
#: Shortest mean time between host pauses accepted.
MIN_PAUSE_EVERY_NS = 1_000

_ALLOWED = ('expected { median = "20us", p99 = "200us" } (a log-normal through the two quantiles), '
            '{ quantiles = ["0us", "10us", "1ms"] } (evenly spaced in probability, p0 to p100, non-decreasing) '
            'or { histogram = { bin = "10us", counts = [120, 410, 3] } } (counts of [0, bin), [bin, 2 bin), …)')
_HIST_ALLOWED = ('expected { bin = "10us", counts = [120, 410, 3] }: a positive bin width and the number of '
                 'values in [0, bin), [bin, 2 bin), … as whole numbers ≥ 0, not all 0, the last bin with a '
                 'count ending within 1 s')


def _sub(field: str, name: str) -> str:
    return f"{field}.{name}" if field else name


def _duration(value: Any, field: str) -> int:
    ns = units.parse_duration(value, field)
    if ns > MAX_JITTER_NS:
        raise ScenarioError(field, value, f"{show_value(value)} is longer than 1 s", _ALLOWED)
    return int(ns)


def lognormal_table(median_ns: int, p99_ns: int, points: int = JITTER_POINTS) -> list[int]:
    """Quantiles at i / points of the log-normal with this median and 99th percentile."""
    if p99_ns == median_ns:
        return [median_ns] * (points + 1)
    from statistics import NormalDist  # here, not at import: statistics costs every scenario's validation ~5 ms

    sigma = math.log(p99_ns / median_ns) / NormalDist().inv_cdf(0.99)
    table = [0]
    for i in range(1, points + 1):
        p = i / points if i < points else 1 - 0.1 / points
        table.append(int(round(median_ns * math.exp(sigma * NormalDist().inv_cdf(p)))))
    return table


def quantile_table(quantiles_ns: list[int], points: int = JITTER_POINTS) -> list[int]:
    """Resample quantiles evenly spaced in probability onto the engine's grid (linear in p)."""
    n = len(quantiles_ns) - 1
    table = []
    for i in range(points + 1):
        x = i * n / points
        k = min(int(x), n - 1)
        frac = x - k
        table.append(int(round(quantiles_ns[k] + (quantiles_ns[k + 1] - quantiles_ns[k]) * frac)))
    return table


def _quantiles(qs: Any, field: str, allowed: str) -> list[int]:
    """A list of at least two non-decreasing durations (quantiles p0 … p100), in ns."""
    if not isinstance(qs, (list, tuple)) or len(qs) < 2:
        raise ScenarioError(field, qs, f"{show_value(qs)} is not a list of at least two durations", allowed)
    values = [_duration(q, f"{field}[{i}]") for i, q in enumerate(qs)]
    for i in range(1, len(values)):
        if values[i] < values[i - 1]:
            raise ScenarioError(f"{field}[{i}]", qs[i], f"{show_value(qs[i])} is below the quantile before it",
                                "expected non-decreasing quantiles (p0 first, p100 last)")  # fmt: skip
    return values


def histogram_table(spec: Any, field: str) -> tuple[list[int], list[int]]:
    """A histogram ``{ bin, counts }`` as the engine takes it: the bin edges up to the last bin
    with a count (ns), and the cumulative probability at each edge in units of 2⁻³² (0 first,
    :data:`PROB_ONE` last; equal edges' probabilities mark empty bins, which the engine never
    draws from). Values are uniform inside a bin."""
    if not isinstance(spec, dict) or set(spec) != {"bin", "counts"}:
        keys = sorted(str(k) for k in spec) if isinstance(spec, dict) else None
        what = f"keys {keys} are not bin and counts" if keys is not None else f"{show_value(spec)} is not a histogram"
        raise ScenarioError(field, spec, what, _HIST_ALLOWED)
    width = units.parse_duration(spec["bin"], _sub(field, "bin"))
    if width <= 0:
        raise ScenarioError(_sub(field, "bin"), spec["bin"], "a bin must be wider than 0", _HIST_ALLOWED)
    counts = spec["counts"]
    cfield = _sub(field, "counts")
    if not isinstance(counts, (list, tuple)) or not counts:
        raise ScenarioError(cfield, counts, f"{show_value(counts)} is not a list of counts", _HIST_ALLOWED)
    if len(counts) > MAX_HISTOGRAM_BINS:
        raise ScenarioError(cfield, f"{len(counts)} bins", f"more than {MAX_HISTOGRAM_BINS} bins", _HIST_ALLOWED)
    for i, c in enumerate(counts):
        if isinstance(c, bool) or not isinstance(c, int) or c < 0:
            raise ScenarioError(f"{cfield}[{i}]", c, f"{show_value(c)} is not a whole number ≥ 0", _HIST_ALLOWED)
    total = sum(counts)
    if total == 0:
        raise ScenarioError(cfield, counts, "every count is 0: there is nothing to draw from", _HIST_ALLOWED)
    last = max(i for i, c in enumerate(counts) if c)  # the trailing empty bins add nothing
    if (last + 1) * width > MAX_JITTER_NS:
        raise ScenarioError(_sub(field, "bin"), spec["bin"], f"its bin {last} ends beyond 1 s", _HIST_ALLOWED)
    edges = [i * width for i in range(last + 2)]
    probs, cum = [0], 0
    for c in counts[: last + 1]:
        cum += c
        probs.append(cum * PROB_ONE // total)  # integers: the same table on every machine
    return edges, probs


def histogram_summary(counts: list[int], bin_ns: int, quantiles: tuple[float, ...] = (0.5, 0.99), over: int = 0) -> dict[str, Any]:
    """What a histogram of durations says in a line: ``total`` (``over`` included: values past the
    last bin), for each quantile the bin it falls in (``bins[q]``: its index, ``None`` when it falls
    among the ``over`` values) and ``per_million_over_1ms`` (``None`` for an empty histogram). Used by
    ``cclab parity``'s description of its hosts and ``cclab doctor --read-latency``."""
    total = sum(counts) + over
    bins: dict[float, int | None] = {q: None for q in quantiles}
    if total == 0:
        return {"total": 0, "bins": bins, "per_million_over_1ms": None}
    cum, pending = 0, sorted(quantiles)
    for i, c in enumerate(counts):
        cum += c
        while pending and cum >= pending[0] * total:
            bins[pending.pop(0)] = i
    first_ms = -(-1_000_000 // bin_ns)  # the first bin starting at or after 1 ms
    long = sum(counts[first_ms:]) + over
    return {"total": total, "bins": bins, "per_million_over_1ms": 1e6 * long / total}


def jitter_table(spec: Any, field: str = "host.jitter", points: int = JITTER_POINTS) -> tuple[list[int], list[int]]:
    """The IR for a scenario's ``jitter`` or ``read_delay``: the table of values (``[]`` for none) —
    ``points`` + 1 quantiles evenly spaced in probability — and, for a histogram, its edges with
    their cumulative probabilities in units of 2⁻³² as the second list (else ``[]``)."""
    if spec is None:
        return [], []
    if not isinstance(spec, dict):
        raise ScenarioError(field, spec, f"{show_value(spec)} is not a distribution of durations", _ALLOWED)
    keys = set(spec)
    if keys == {"median", "p99"}:
        median = _duration(spec["median"], _sub(field, "median"))
        p99 = _duration(spec["p99"], _sub(field, "p99"))
        if median <= 0:
            raise ScenarioError(_sub(field, "median"), spec["median"], "a log-normal's median must be positive", _ALLOWED)
        if p99 < median:
            raise ScenarioError(_sub(field, "p99"), spec["p99"], f"{show_value(spec['p99'])} is below the median {show_value(spec['median'])}",
                                "expected p99 ≥ median")  # fmt: skip
        return lognormal_table(median, p99, points), []
    if keys == {"quantiles"}:
        return quantile_table(_quantiles(spec["quantiles"], _sub(field, "quantiles"), _ALLOWED), points), []
    if keys == {"histogram"}:
        return histogram_table(spec["histogram"], _sub(field, "histogram"))
    unknown = sorted(str(k) for k in keys - {"median", "p99", "quantiles", "histogram"})
    what = f"unknown key(s) {', '.join(unknown)}" if unknown else f"keys {sorted(str(k) for k in keys)} do not form a distribution"
    raise ScenarioError(field, spec, what, _ALLOWED)


_PAUSES_ALLOWED = ('expected { every = "300ms", durations = ["0.2ms", "0.85ms", "8ms"] }: the mean time between '
                   'pauses (exponential) and the pauses\' durations as quantiles evenly spaced in probability, '
                   'p0 to p100, non-decreasing')


def exponential_table(mean_ns: int, points: int = JITTER_POINTS) -> list[int]:
    """Quantiles at i / points of the exponential with this mean (cut, like the log-normal's, at
    p = 1 − 0.1 / points)."""
    table = []
    for i in range(points + 1):
        p = i / points if i < points else 1 - 0.1 / points
        table.append(int(round(-mean_ns * math.log1p(-p))))
    return table


def pauses_ir(spec: Any, field: str = "host.pauses") -> dict[str, list[int]] | None:
    """The IR's ``host.pauses`` for a scenario's ``pauses`` (None for none).

    ``every``: the mean time from the end of one pause to the start of the
    next (exponential gaps: pauses come at random, at a rate); ``durations``:
    the pauses' lengths as quantiles evenly spaced in probability (p0 … p100),
    e.g. a measured list. The engine (``crates/cclab-sim/src/pauses.rs``)
    holds a data packet reaching the bottleneck, or an ACK reaching its
    sender, that falls into a pause until the pause ends."""
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise ScenarioError(field, spec, f"{show_value(spec)} is not a description of host pauses", _PAUSES_ALLOWED)
    keys = set(spec)
    if keys != {"every", "durations"}:
        missing = sorted({"every", "durations"} - keys)
        unknown = sorted(str(k) for k in keys - {"every", "durations"})
        what = f"unknown key(s) {', '.join(unknown)}" if unknown else f"missing {', '.join(missing)}"
        raise ScenarioError(field, spec, what, _PAUSES_ALLOWED)
    every = units.parse_duration(spec["every"], _sub(field, "every"))
    if every <= 0:
        raise ScenarioError(_sub(field, "every"), spec["every"], "the mean time between pauses must be positive", _PAUSES_ALLOWED)
    if every < MIN_PAUSE_EVERY_NS:
        raise ScenarioError(_sub(field, "every"), spec["every"], f"{show_value(spec['every'])} is shorter than 1 µs "
                            "(the engine draws every pause of the run)", 'expected at least "1us" (stalls are rarer than that)')  # fmt: skip
    if every > 3600 * 10**9:
        raise ScenarioError(_sub(field, "every"), spec["every"], f"{show_value(spec['every'])} is longer than an hour",
                            "expected at most 1h (or no [host] pauses)")  # fmt: skip
    values = _quantiles(spec["durations"], _sub(field, "durations"), _PAUSES_ALLOWED)
    return {"gaps_ns": exponential_table(int(every)), "durations_ns": quantile_table(values)}
