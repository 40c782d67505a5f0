"""``cclab doctor --pauses SECONDS``: how often, and for how long, this machine's CPUs stall.

A busy loop pinned to each CPU (one process per CPU, all at once) reads
``CLOCK_MONOTONIC`` as fast as it can and keeps every gap between two
reads longer than ``THRESHOLD_NS``: the time that CPU spent on something
else — the kernel's own work (interrupts, softirqs, kernel threads), other
processes, or, in a virtual machine, the host taking the vCPU away (only
part of which the steal counter sees). What a normal-class loop loses, a
normal-class process such as the kernel backend's ``send`` and ``recv``
loses too; the SCHED_FIFO emulator mostly does not (docs/validation.md §4,
"Host pauses" and "What the stalls are"). The result is printed as a
``[host] pauses`` line the simulator takes, so a simulated run can have
stalls of the same rate and size. It is not the rate of gaps on a test
bed's packet path: it counts preemptions the emulator mostly escapes, and
not the late wake-ups of idle vCPUs, which a busy loop never has.

Measure on an otherwise idle machine: the loops count every other
process's time slices as stalls too.

As root, with tracefs mounted, it also says what ran instead: a private
tracefs instance records the scheduler switching away from the loops
(``sched:sched_switch``), so each stall is attributed to the task the
guest's own scheduler ran — a kernel thread, another process — or to
nothing the guest saw (interrupts, or the host taking the vCPU). On the
2-vCPU VM of docs/validation.md almost every stall was the guest's own
doing: a DAMON monitor thread and the VM's init process.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

__all__ = ["MAX_SECONDS", "THRESHOLD_NS", "TRACEFS", "attribute", "measure", "parse_switches", "summarize", "toml_line"]

#: Gaps shorter than this are the loop's own noise (and the host jitter's domain: cclab.jitter).
THRESHOLD_NS = 200_000
#: Longest measurement accepted (a stall census, not a soak test).
MAX_SECONDS = 600.0
#: Where tracefs is mounted (the kernel's standard place).
TRACEFS = "/sys/kernel/tracing"
#: The loops' process name (what the sched_switch filter matches).
LOOP_COMM = "cclab-stall"


def _spin(cpu: int, seconds: float, threshold_ns: int, out: Any) -> None:
    """One CPU's loop (in a child process): its gaps as (start_ns, length_ns), sent through ``out``."""
    try:
        os.sched_setaffinity(0, {cpu})
        with open("/proc/self/comm", "w") as f:  # the name the tracefs filter matches
            f.write(LOOP_COMM)
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
    trace = _SwitchTrace()
    switches: list[tuple[int, int, str, int]] | None = None
    own = {int(t) for t in os.listdir("/proc/self/task")}  # e.g. a progress display's thread
    try:
        trace.start()
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
        switches = trace.read()
    finally:
        trace.remove()
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():  # pragma: no cover - only if a child hangs
                p.kill()
    out = summarize(per_cpu, seconds, threshold_ns)
    out["ran_instead"] = (attribute(per_cpu, switches, own) if switches is not None
                          else {"available": False, "why": trace.why})  # fmt: skip
    return out


class _SwitchTrace:
    """A private tracefs instance (``instances/cclab-stall-PID``) recording
    ``sched:sched_switch`` away from the loops, on the monotonic clock; it
    leaves the global trace buffer and every other instance alone and is
    removed afterwards. ``why`` says why not when it cannot run."""

    def __init__(self, root: str | None = None):
        self.root = root or TRACEFS
        self.dir: str | None = None
        self.why = ""

    def _write(self, rel: str, text: str) -> None:
        assert self.dir is not None
        with open(os.path.join(self.dir, rel), "w") as f:
            f.write(text)

    def start(self) -> None:
        if os.geteuid() != 0:
            self.why = "needs root (tracefs)"
            return
        if not os.path.isdir(os.path.join(self.root, "instances")):
            self.why = f"tracefs is not mounted at {self.root} (mount -t tracefs nodev {self.root})"
            return
        path = os.path.join(self.root, "instances", f"{LOOP_COMM}-{os.getpid()}")
        try:
            os.mkdir(path)
            self.dir = path
            self._write("trace_clock", "mono")
            self._write("events/sched/sched_switch/filter", f'prev_comm == "{LOOP_COMM}"')
            self._write("events/sched/sched_switch/enable", "1")
        except OSError as e:
            self.why = f"tracefs instance {path}: {e.strerror or e}"
            self.remove()

    def read(self) -> list[tuple[int, int, str, int]] | None:
        """The recorded switches as (cpu, time_ns, next_comm, next_pid), or None."""
        if self.dir is None:
            return None
        try:
            self._write("events/sched/sched_switch/enable", "0")
            with open(os.path.join(self.dir, "trace"), errors="replace") as f:
                return parse_switches(f.read())
        except OSError as e:  # pragma: no cover - tracefs vanished mid-measurement
            self.why = f"reading {self.dir}: {e.strerror or e}"
            return None

    def remove(self) -> None:
        if self.dir is None:
            return
        try:
            self._write("events/sched/sched_switch/enable", "0")
        except OSError:  # pragma: no cover
            pass
        try:
            os.rmdir(self.dir)
        except OSError as e:  # pragma: no cover - left for the user, named
            self.why = self.why or f"could not remove {self.dir}: {e.strerror or e}"
        self.dir = None


_SWITCH = re.compile(r"\[(\d+)\]\s+\S*\s*(\d+)\.(\d+): sched_switch: .*==> next_comm=(.*) next_pid=(\d+)")


def parse_switches(text: str) -> list[tuple[int, int, str, int]]:
    """(cpu, time_ns, next_comm, next_pid) of every ``sched_switch`` line of a tracefs ``trace`` file."""
    out = []
    for line in text.splitlines():
        m = _SWITCH.search(line)
        if m:
            cpu, sec, frac, comm, pid = m.groups()
            ns = int(sec) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])
            out.append((int(cpu), ns, comm, int(pid)))
    return out


def _process_of(tid: int) -> str | None:
    """``"PID: NAME"`` of the process a thread belongs to, if it still exists (best effort)."""
    try:
        with open(f"/proc/{tid}/status") as f:
            tgid = next(int(line.split()[1]) for line in f if line.startswith("Tgid:"))
        with open(f"/proc/{tgid}/comm") as f:
            return f"{tgid}: {f.read().strip()}"
    except (OSError, StopIteration, ValueError):
        return None


#: The process column of the measuring command's own threads.
OWN = "this command"
#: A switch this much before a gap's first late read still belongs to it (tracefs prints microseconds).
_SLOP_NS = 2_000


def attribute(per_cpu: dict[int, list[tuple[int, int]]], switches: list[tuple[int, int, str, int]],
              own: set[int] | frozenset[int] = frozenset()) -> dict[str, Any]:  # fmt: skip
    """What ran instead during each stall: the first task the scheduler switched
    to from that CPU's loop within the stall; stalls without one were not
    the guest scheduler's (interrupts, softirqs, or the host). Threads in
    ``own`` (the measuring process's) are labelled "this command"."""
    import bisect
    import statistics

    by_cpu: dict[int, list[tuple[int, str, int]]] = {}
    for cpu, t, comm, pid in switches:
        by_cpu.setdefault(cpu, []).append((t, comm, pid))
    groups: dict[tuple[str, int] | None, list[int]] = {}
    for cpu, gaps in per_cpu.items():
        evs = sorted(by_cpu.get(cpu, []))
        times = [e[0] for e in evs]
        for start, length in gaps:
            i = bisect.bisect_left(times, start - _SLOP_NS)
            key = (evs[i][1], evs[i][2]) if i < len(evs) and evs[i][0] <= start + length else None
            groups.setdefault(key, []).append(length)

    def row(lengths: list[int]) -> dict[str, Any]:
        return {"stalls": len(lengths), "median_ms": statistics.median(lengths) / 1e6, "stalled_ms": sum(lengths) / 1e6}

    # threads of one name in one process (e.g. a runtime's workers) are one row
    tasks: dict[tuple[str, str | None], dict[str, Any]] = {}
    for key, lengths in groups.items():
        if key is None:
            continue
        comm, pid = key
        proc = OWN if pid in own else _process_of(pid) if pid else None
        t = tasks.setdefault((comm, proc), {"task": comm, "process": proc, "lengths": []})
        t["lengths"] += lengths
    rows = [{"task": t["task"], "process": t["process"], **row(t["lengths"])} for t in tasks.values()]
    rows.sort(key=lambda r: (-r["stalls"], r["task"]))
    unseen = groups.get(None, [])
    return {"available": True, "tasks": rows, "no_switch": row(unseen) if unseen else {"stalls": 0}}


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
