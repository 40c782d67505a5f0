"""``cclab doctor --pauses SECONDS``: how often, and for how long, this machine's CPUs stall.

A busy loop pinned to each CPU (one process per CPU, all at once) reads
``CLOCK_MONOTONIC`` as fast as it can and keeps every gap between two
reads longer than ``THRESHOLD_NS``: the time that CPU spent on something
else — the kernel's own work (interrupts, softirqs, kernel threads), other
processes, or, in a virtual machine, the host taking the vCPU away (only
part of which the steal counter sees). On the kernel backend's test bed
such stalls hold a flow's ACKs or data for a while and release them back
to back, which is what cuts CUBIC's and Reno's goodput on shallow buffers
at 500 Mbit/s there (docs/validation.md §4, "Host pauses"). The result is
printed as a ``[host] pauses`` line the simulator takes, so a simulated
run can have the test bed's stalls.

Measure on an otherwise idle machine: the loops count every other
process's time slices as stalls too.
"""

from __future__ import annotations

import os
import time
from typing import Any

__all__ = ["MAX_SECONDS", "THRESHOLD_NS", "measure", "summarize", "toml_line"]

#: Gaps shorter than this are the loop's own noise (and the host jitter's domain: cclab.jitter).
THRESHOLD_NS = 200_000
#: Longest measurement accepted (a stall census, not a soak test).
MAX_SECONDS = 600.0


def _spin(cpu: int, seconds: float, threshold_ns: int, out: Any) -> None:
    """One CPU's loop (in a child process): its gaps as (start_ns, length_ns), sent through ``out``."""
    try:
        os.sched_setaffinity(0, {cpu})
    except OSError as e:  # pragma: no cover - a CPU that vanished
        out.send(("error", f"cpu {cpu}: {e}"))
        return
    mono = time.monotonic_ns
    gaps = []
    start = prev = mono()
    end = start + int(seconds * 1e9)
    while prev < end:
        now = mono()
        if now - prev > threshold_ns:
            gaps.append((prev, now - prev))
        prev = now
    out.send(("ok", gaps))


def measure(seconds: float, threshold_ns: int = THRESHOLD_NS) -> dict[str, Any]:
    """Run the loops on every CPU this process may use for ``seconds``; :func:`summarize` of what they saw."""
    import multiprocessing as mp

    if not 0 < seconds <= MAX_SECONDS:
        raise ValueError(f"--pauses {seconds:g}: expected a number of seconds in (0, {MAX_SECONDS:g}]")
    if not hasattr(os, "sched_getaffinity"):  # pragma: no cover - not Linux
        raise OSError("--pauses pins a loop to each CPU, which needs Linux (os.sched_getaffinity)")
    cpus = sorted(os.sched_getaffinity(0))
    ctx = mp.get_context("fork")
    pipes, procs = [], []
    try:
        for cpu in cpus:
            recv, send = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_spin, args=(cpu, seconds, threshold_ns, send), daemon=True)
            p.start()
            pipes.append(recv)
            procs.append(p)
        per_cpu: dict[int, list[tuple[int, int]]] = {}
        for cpu, recv in zip(cpus, pipes):
            status, payload = recv.recv()
            if status != "ok":
                raise RuntimeError(payload)
            per_cpu[cpu] = payload
    finally:
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():  # pragma: no cover - only if a child hangs
                p.kill()
    return summarize(per_cpu, seconds, threshold_ns)


def _fmt_ms(ns: float) -> str:
    """A duration for a scenario file: three significant digits below 100 ms, whole ms above."""
    ms = ns / 1e6
    return f"{ms:.0f}ms" if ms >= 100 else f"{ms:.3g}ms"


def summarize(per_cpu: dict[int, list[tuple[int, int]]], seconds: float, threshold_ns: int = THRESHOLD_NS) -> dict[str, Any]:
    """Counts, rates and quantiles per CPU and for all CPUs together, and the ``[host] pauses`` they suggest.

    The suggestion takes all CPUs together — the mean time between stalls of
    any CPU (``every``) and the deciles of their lengths — because on the
    kernel backend's test bed a stall of any CPU can fall on the packet path
    (docs/validation.md §4, "Host pauses", on what this overstates)."""
    import statistics

    def stats(lengths: list[int]) -> dict[str, Any]:
        n = len(lengths)
        out: dict[str, Any] = {"stalls": n, "per_second": n / seconds, "stalled_fraction": sum(lengths) / (seconds * 1e9)}
        if n:
            s = sorted(lengths)
            out["median_ms"] = statistics.median(s) / 1e6
            out["largest_ms"] = s[-1] / 1e6
        return out

    cpus = {str(cpu): stats([g for _, g in gaps]) for cpu, gaps in sorted(per_cpu.items())}
    every = [g for gaps in per_cpu.values() for _, g in gaps]
    total = stats(every)
    suggestion = None
    if len(every) >= 2 and max(every) <= 1_000_000_000:  # [host] pauses takes lengths up to 1 s
        s = sorted(every)
        deciles = [s[min(len(s) - 1, round(i * (len(s) - 1) / 10))] for i in range(11)]
        mean_gap_ns = seconds * 1e9 / len(every)
        suggestion = {"every": _fmt_ms(mean_gap_ns), "durations": [_fmt_ms(d) for d in deciles]}
    return {"seconds": seconds, "threshold_ms": threshold_ns / 1e6, "cpus": cpus, "all": total, "host_pauses": suggestion}


def toml_line(suggestion: dict[str, Any]) -> str:
    """The ``[host] pauses`` line for a scenario file."""
    durations = ", ".join(f'"{d}"' for d in suggestion["durations"])
    return f'pauses = {{ every = "{suggestion["every"]}", durations = [{durations}] }}'
