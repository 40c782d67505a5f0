"""The ``kernel`` backend: ``check(ir)`` and ``run(ir) -> raw engine output``.

A run (docs/kernel.md):

1. :func:`check` — everything that can be refused is refused here, before
   any namespace exists (algorithm missing from the kernel, rate beyond
   the emulator, trace file missing, too many flows, features the kernel
   backend lacks).
2. Two namespaces ``cclab-<pid>-<hex>-snd`` / ``-rcv`` with sysctls set
   inside (socket buffer max ≥ 4 BDP and ≥ 64 MB, tcp_no_metrics_save).
3. ``cclab-link emulate`` creates a TUN device in each and forwards between
   them (rate/trace, queue, loss, per-flow delays); the devices get their
   addresses; ``cclab-link recv`` listens in the receiver namespace;
   ``cclab-link send`` connects every flow (``TCP_CONGESTION`` per socket)
   and starts each at t0 + start.
4. A sampler thread reads every sender socket through sock_diag at
   t0 + k·interval; the receiver samples goodput; the emulator samples the
   queue. At t0 + duration everything is stopped and the namespaces are
   removed — in a ``finally``, so also on errors and Ctrl-C; after a
   ``kill -9`` the children die with their parent (PR_SET_PDEATHSIG) and
   ``cclab doctor --clean`` (or the next kernel run) removes the namespaces.
5. The raw output (docs/record.md) plus ``meta`` (provenance and the
   self-check: ``valid`` / ``invalid_reasons``).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from cclab.backends import BackendError
from cclab.errors import ScenarioError
from cclab.kernel import machine
from cclab.kernel.diag import DiagSocket, TcpSample
from cclab.kernel.netns import RunNamespaces, TopologyNamespaces, clean, host_addr, in_netns, sender_addr
from cclab.states import BBR, kernel_names, loss_based_code

__all__ = ["KernelBackend", "KernelRunError", "check", "get_backend", "run", "STATE_NAMES"]

NAME = "kernel"

#: BBR v1's modes (tcp_bbr.c enum bbr_mode), named as in every record
#: (cclab.states). The kernel does not export the mode; it is inferred from
#: tcp_bbr_info (see _bbr_mode). Other algorithms: cclab.states.LOSS_BASED
#: from tcpi_ca_state.
BBR_MODES = list(BBR)
STATE_NAMES = {"bbr": BBR_MODES}

#: Self-check thresholds (docs/kernel.md "Self-check").
LATENESS_P99_LIMIT_NS = 1_000_000
CAPACITY_TOLERANCE = 0.02
#: The emulator counts as CPU-starved when its timed wake-ups (ppoll deadlines)
#: were later than this at p99 — its own scheduling delay, not machine-wide CPU use.
WAKEUP_P99_LIMIT_NS = 1_000_000
#: Time between the end of setup and t0 is at least this.
SETUP_MARGIN_NS = 300_000_000
MIN_SAMPLE_INTERVAL_NS = 1_000_000
#: The emulator runs SCHED_FIFO at this priority (0 = normal class); see docs/kernel.md.
EMULATOR_RT_PRIO = int(os.environ.get("CCLAB_LINK_RT_PRIO", "10"))
#: The emulator wakes this long before each deadline and busy-polls the rest (0: sleeps until it; docs/kernel.md).
EMULATOR_SPIN_NS = int(os.environ.get("CCLAB_LINK_SPIN_NS", "0"))


class KernelRunError(BackendError):
    """A kernel run failed after its checks passed (a cclab-link process did not
    start or died, set-up overran its margin, the sampler failed, …).

    ``str()`` is one line (``kernel run failed: …``); the CLI prints it as an
    ``error:`` line, never as a traceback. The cause, if any, is chained.
    """

    def __init__(self, detail: str):
        super().__init__("kernel run failed: " + " ".join(str(detail).split()) + _KEEP_HINT)


_KEEP_HINT = " (CCLAB_KEEP_KERNEL_WORKDIR=1 keeps the emulator's logs)"


# ---------------------------------------------------------------------------
# check


def _group(flow: Mapping[str, Any]) -> int:
    return int(flow.get("group", flow.get("id", 0)))


def check(ir: Mapping[str, Any], *, enforce_rate_limit: bool = True) -> None:
    """Refuse, with one clear line, what the kernel backend cannot run — before anything is created.

    ``enforce_rate_limit=False`` is for the benchmark, which probes beyond
    the rates the emulator is known to sustain.
    """
    available = machine.available_ccas()
    for f in ir["flows"]:
        cca = str(f["cca"])
        if cca not in available:
            raise ScenarioError(
                f"flows[{_group(f)}].cca", cca, f"'{cca}' is not available in this kernel",
                f"tcp_available_congestion_control lists: {', '.join(available) or '(nothing)'}"
                " (load a module or register a BPF struct_ops algorithm, or use --backend sim)",
            )  # fmt: skip
        if f.get("cca_params"):
            given = ", ".join(f"{k} = {v:g}" for k, v in f["cca_params"].items())
            raise ScenarioError(f"flows[{_group(f)}].cca_params", f["cca_params"], f"{given}: algorithm parameters cannot be set on the kernel backend", "remove them or use --backend sim")
    if ir.get("host", {}).get("jitter_ns"):
        raise ScenarioError("host.jitter", "(set)", "host jitter is a simulator option: the kernel backend's hosts are real and have their own timing",
                            "remove [host] jitter or use --backend sim")  # fmt: skip
    if ir.get("host", {}).get("pauses"):
        raise ScenarioError("host.pauses", "(set)", "host pauses are a simulator option: the kernel backend's hosts are real and pause on their own",
                            "remove [host] pauses or use --backend sim")  # fmt: skip
    if ir.get("host", {}).get("read_delay_ns"):
        raise ScenarioError("host.read_delay", "(set)", "the receiving application's read latency is a simulator option: the kernel backend's applications are real and read when they are scheduled",
                            "remove [host] read_delay or use --backend sim")  # fmt: skip
    n = len(ir["flows"])
    if n > machine.MAX_FLOWS:
        raise ScenarioError("flows", n, f"{n} flows need more than the kernel backend allows", f"at most {machine.MAX_FLOWS} flows per kernel run")
    _check_topology(ir)
    packet = int(ir["mss"]) + int(ir["header_bytes"])
    if packet > 65535 or packet < 576:
        header = int(ir["header_bytes"])
        raise ScenarioError("mss", ir["mss"], f"mss = {ir['mss']} makes packets of {packet} bytes, which the kernel backend cannot emulate",
                            f"mss from {576 - header} to {65535 - header} bytes (packets of 576 to 65535 bytes), or use --backend sim")
    limit = machine.max_rate_bps(packet)
    one = len(ir["links"]) == 1 and not is_topology(ir)
    peaks = []  # each link's highest rate: base, schedule steps, a trace's mean
    for link in ir["links"]:
        where = "link" if one else f"links.{link['name']}"
        cap = link["capacity"]
        rates = []
        if cap["kind"] == "constant":
            rates.append((f"{where}.rate", int(cap["rate_bps"])))
        else:
            path = cap.get("path")
            if path and not os.path.exists(path):
                raise ScenarioError(f"{where}.trace", path, "trace file does not exist", "give the path of a Mahimahi trace file")
            period = int(cap["period_ns"])
            mean = len(cap["opportunities_ns"]) * int(cap["bytes_per_opportunity"]) * 8 * 1e9 / period if period else 0
            rates.append((f"{where}.trace", int(mean)))
        for i, ch in enumerate(link.get("schedule") or []):
            if ch.get("rate_bps") is not None:
                rates.append((f"{where}.schedule[{i}].rate", int(ch["rate_bps"])))
        peaks.append(max(rate for _, rate in rates))
        for field, rate in rates:
            if rate > limit and enforce_rate_limit:
                raise ScenarioError(
                    field, f"{rate / 1e6:g}Mbps", f"{rate / 1e6:g} Mbit/s is beyond what the kernel backend's emulator sustains",
                    f"at most {limit / 1e6:g} Mbit/s with {packet}-byte packets on this machine (a larger mss raises it), or use --backend sim",
                )  # fmt: skip
    if not one and enforce_rate_limit:
        total = sum(peaks)
        if total > limit:
            raise ScenarioError(f"links.{ir['links'][0]['name']}.rate", f"{total / 1e6:g}Mbps",
                                f"the links of this topology carry up to {total / 1e6:g} Mbit/s together, beyond what "
                                "the kernel backend's emulator (one thread for every link) sustains",
                                f"at most {limit / 1e6:g} Mbit/s in total with {packet}-byte packets on this machine, "
                                "or use --backend sim")  # fmt: skip
    # The emulator runs every queue discipline (cclab-netmodel, the simulator's
    # code) and marks CE in the real IPv4 header. ECN is negotiated per
    # namespace (net.ipv4.tcp_ecn, set to 1 in both when the flows ask for
    # it): Linux has no per-socket switch, so the flows of one run are all
    # ECN-capable or none.
    ecn = {bool(f.get("ecn")) for f in ir["flows"]}
    if len(ecn) > 1:
        f = next(f for f in ir["flows"] if not f.get("ecn"))
        raise ScenarioError(f"flows[{_group(f)}].ecn", False, "the kernel backend runs ECN for all flows of a run or none (net.ipv4.tcp_ecn is per namespace)",
                            "give every flow group the same ecn, or use --backend sim")  # fmt: skip
    if int(ir["sample_interval_ns"]) < MIN_SAMPLE_INTERVAL_NS:
        raise ScenarioError("sample_interval", f"{int(ir['sample_interval_ns']) / 1e6:g}ms", "too short for the kernel backend's samplers", "at least 1ms")
    if not machine.is_root():
        raise ScenarioError("backend", "kernel", "the kernel backend needs root (network namespaces and TUN devices)", "run as root, or use --backend sim")
    if not machine.tun_available():
        raise ScenarioError("backend", "kernel", "/dev/net/tun is not available", "load the tun module, or use --backend sim")
    if machine.link_command() is None:
        raise ScenarioError("backend", "kernel", "the cclab-link emulator binary was not found", machine.build_hint())


def is_topology(ir: Mapping[str, Any]) -> bool:
    """Several links, or ACKs over links: run with one namespace per host (docs/kernel.md "Topologies")."""
    return len(ir["links"]) > 1 or any(f.get("ack_path") for f in ir["flows"])


def _check_topology(ir: Mapping[str, Any]) -> None:
    """What of a topology the kernel backend runs, and Linux's receiver options: refused here,
    before any namespace exists, naming the element."""
    from cclab.kernel.netns import MAX_HOSTS, flow_nodes, hosts

    if is_topology(ir):
        n_hosts = len(hosts(ir))
        if n_hosts > MAX_HOSTS:
            raise ScenarioError("links", n_hosts, f"{n_hosts} end nodes need more namespaces than the kernel backend "
                                "makes", f"at most {MAX_HOSTS} nodes where flows start or end")  # fmt: skip
        for f in ir["flows"]:
            a, b = flow_nodes(ir, f)
            if a == b:
                raise ScenarioError(f"flows[{_group(f)}].path", f["path"], f"starts and ends at node {a!r}: the kernel "
                                    "backend puts a flow's sender and receiver in different namespaces",
                                    "a path between two different nodes, or use --backend sim")  # fmt: skip
    for f in ir["flows"]:
        if int(f.get("ack_every", 2)) > 2:
            raise ScenarioError(f"flows[{_group(f)}].ack_every", f["ack_every"], f"ack_every = {f['ack_every']}: Linux "
                                "ACKs at least every second full segment; it cannot be made to wait for more",
                                "ack_every 1 (delayed_ack = false: the route's quickack attribute) or 2 "
                                "(Linux's default), or use --backend sim")  # fmt: skip
    sack = {bool(f.get("sack", True)) for f in ir["flows"]}
    if len(sack) > 1:
        f = next(f for f in ir["flows"] if not f.get("sack", True))
        raise ScenarioError(f"flows[{_group(f)}].sack", False, "the kernel backend runs SACK for all flows of a run or "
                            "none (net.ipv4.tcp_sack is per namespace)", "give every flow group the same sack, or use "
                            "--backend sim")  # fmt: skip


# ---------------------------------------------------------------------------
# sampling


class _Sampler(threading.Thread):
    """Reads every sender socket via sock_diag at t0 + k·interval."""

    def __init__(self, ns: str, t0: int, interval: int, n_samples: int, n_flows: int):
        super().__init__(name="cclab-diag", daemon=True)
        self.diag = in_netns(ns, DiagSocket)  # the socket belongs to the sender namespace
        self.t0, self.interval, self.n_samples, self.n_flows = t0, interval, n_samples, n_flows
        self.rows: list[tuple[int, int, float, dict[int, TcpSample]]] = []  # (k, actual_ns, cost_ns, by flow)
        self.stop_flag = threading.Event()
        self.error: BaseException | None = None
        self.addr_to_flow = {sender_addr(i): i for i in range(n_flows)}

    def run(self) -> None:
        try:
            for k in range(1, self.n_samples + 1):
                target = self.t0 + k * self.interval
                while True:
                    now = time.monotonic_ns()
                    if now >= target or self.stop_flag.is_set():
                        break
                    time.sleep(min((target - now) / 1e9, 0.05))
                if self.stop_flag.is_set():
                    return
                start = time.monotonic_ns() - self.t0
                by_flow = {}
                for s in self.diag.tcp_sockets():
                    fid = self.addr_to_flow.get(s.src)
                    if fid is not None and s.dport == 5201:
                        by_flow[fid] = s
                self.rows.append((k, start, time.monotonic_ns() - self.t0 - start, by_flow))
        except BaseException as exc:  # reported by the run
            self.error = exc
        finally:
            self.diag.close()


class _Samplers:
    """The samplers of a topology run, one per host with senders, used as one: their rows merged
    by sample (each socket is in exactly one of them)."""

    def __init__(self, samplers: list[_Sampler]):
        self.samplers = samplers
        self.stop_flag = threading.Event()
        self.diag = self  # only closed when never started (see _run)
        self.ident: int | None = None

    def start(self) -> None:
        for s in self.samplers:
            s.start()
        self.ident = 1

    def close(self) -> None:
        for s in self.samplers:
            s.diag.close()

    def join(self, timeout: float | None = None) -> None:
        for s in self.samplers:
            s.join(timeout=timeout)

    @property
    def error(self) -> BaseException | None:
        return next((s.error for s in self.samplers if s.error is not None), None)

    @property
    def rows(self) -> list[tuple[int, int, float, dict[int, TcpSample]]]:
        merged: dict[int, tuple[int, int, float, dict[int, TcpSample]]] = {}
        for s in self.samplers:
            for k, actual, cost, by_flow in s.rows:
                if k in merged:
                    _, a0, c0, b0 = merged[k]
                    merged[k] = (k, max(a0, actual), max(c0, cost), {**b0, **by_flow})
                else:
                    merged[k] = (k, actual, cost, dict(by_flow))
        return [merged[k] for k in sorted(merged)]


def _bbr_mode(bbr: Mapping[str, float]) -> int:
    """BBR v1's mode (index into cclab.states.BBR) from its tcp_bbr_info.

    Until the first ACK of data has run BBR's model the socket reports
    bandwidth 0 and gains 1/1 (measured: the first 30–40 ms of a run); the
    mode then is still the STARTUP set by bbr_init (bbr_reset_startup_mode),
    so a zero bandwidth estimate is STARTUP. Afterwards the gains tell the
    mode (tcp_bbr.c bbr_update_gains): STARTUP paces at bbr_high_gain
    (2/ln2 ≈ 2.89), DRAIN at its inverse (≈ 0.35), PROBE_RTT uses gains 1/1,
    PROBE_BW cycles 1.25/0.75/1 with cwnd_gain 2."""
    if bbr.get("bw_bytes_per_s", 1.0) <= 0:
        return 0
    pg, cg = bbr["pacing_gain"], bbr["cwnd_gain"]
    if pg > 2.0:
        return 0
    if pg < 0.5:
        return 1
    if abs(cg - 1.0) < 1e-6 and abs(pg - 1.0) < 1e-6:
        return 3
    return 2


def _sched_ns(pid: int) -> tuple[int, int]:
    """(on CPU, waiting on a run queue) in ns, summed over the threads of ``pid`` (/proc/PID/task/*/schedstat;
    (0, 0) once it is gone)."""
    run = wait = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0, 0
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as fh:
                parts = fh.read().split()
            run += int(parts[0])
            wait += int(parts[1])
        except (OSError, ValueError, IndexError):
            continue
    return run, wait


def _softirq_pids() -> list[int]:
    """The ksoftirqd threads: where network receive work goes when it is deferred from interrupts and syscalls."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/comm") as fh:
                    if fh.read().startswith("ksoftirqd/"):
                        out.append(int(entry))
            except OSError:
                continue
    return out


def _limited(ir: Mapping[str, Any], limits: Mapping[int, list[tuple[int, int, int, int]]]) -> dict[str, dict[str, float]]:
    """Per flow, the fraction of the measure window its sender was busy (had data in flight),
    limited by the peer's receive window and by its own send buffer — tcp_info's
    ``tcpi_busy_time``, ``tcpi_rwnd_limited``, ``tcpi_sndbuf_limited`` (µs, cumulative), between
    the first and the last sample inside the window. Information in meta.json
    (``kernel.limited``), not compared with the simulator."""
    lo, hi = int(ir["measure"]["from_ns"]), int(ir["measure"]["to_ns"])
    out = {}
    for fid, rows in sorted(limits.items()):
        inside = [r for r in rows if lo <= r[0] <= hi]
        if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
            continue
        (t0, *a), (t1, *b) = inside[0], inside[-1]
        span_us = (t1 - t0) / 1e3
        out[str(fid)] = {name: round(max(0.0, (y - x) / span_us), 4) for name, x, y in zip(("busy", "rwnd_limited", "sndbuf_limited"), a, b)}
    return out


def _sched_snapshot(procs: Mapping[str, int]) -> dict[str, Any]:
    """Scheduler counters of the traffic endpoints and the softirq threads, at one moment."""
    return {"t_ns": time.monotonic_ns(), "procs": {name: _sched_ns(pid) for name, pid in procs.items()},
            "softirq": {pid: _sched_ns(pid) for pid in _softirq_pids()}}  # fmt: skip


# Tcp fields of /proc/net/snmp that are settings or gauges, not event counters
_SNMP_NOT_COUNTERS = frozenset({"RtoAlgorithm", "RtoMin", "RtoMax", "MaxConn", "CurrEstab"})


def _netstat(pid: int) -> dict[str, int]:
    """The TCP counters of the network namespace ``pid`` runs in: ``/proc/PID/net/netstat``
    (``TcpExt``) and ``/proc/PID/net/snmp`` (``Tcp``), as ``"TcpExt.TCPSACKReorder"`` → value
    ({} once the process is gone)."""
    out: dict[str, int] = {}
    for name in ("netstat", "snmp"):
        try:
            with open(f"/proc/{pid}/net/{name}") as fh:
                lines = fh.read().splitlines()
        except OSError:
            return {}
        for head, values in zip(lines[::2], lines[1::2]):  # a header line, then its values
            keys, vals = head.split(), values.split()
            if not keys or keys[0] not in ("TcpExt:", "Tcp:") or keys[0] != vals[0]:
                continue
            group = keys[0][:-1]
            for k, v in zip(keys[1:], vals[1:]):
                if group == "Tcp" and k in _SNMP_NOT_COUNTERS:
                    continue
                try:
                    out[f"{group}.{k}"] = int(v)
                except ValueError:
                    continue
    return out


def _netstat_delta(a: Mapping[str, Mapping[str, int]], b: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    """Per endpoint process, the counters that changed between two :func:`_netstat` snapshots."""
    out = {}
    for name, before in a.items():
        after = b.get(name) or {}
        out[name] = {k: after[k] - v for k, v in sorted(before.items()) if k in after and after[k] != v}
    return out


def _endpoint_wait(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, float]:
    """Fraction of the run each endpoint process (and the busiest ksoftirqd thread) spent runnable but
    waiting for a CPU — the endpoints' own CPU starvation, which the emulator's lateness does not show."""
    wall = max(1, b["t_ns"] - a["t_ns"])
    out = {name: (b["procs"][name][1] - a["procs"][name][1]) / wall for name in a["procs"] if name in b["procs"]}
    soft = [(b["softirq"][pid][1] - a["softirq"][pid][1]) / wall for pid in a["softirq"] if pid in b["softirq"]]
    out["ksoftirqd"] = max(soft, default=0.0)
    return {k: round(max(0.0, v), 4) for k, v in out.items()}


def _read_csv(path: Path) -> dict[str, np.ndarray]:
    with open(path) as fh:
        header = fh.readline().strip().split(",")
        data = np.loadtxt(fh, delimiter=",", dtype=np.int64, ndmin=2)
    if data.size == 0:
        return {h: np.zeros(0, dtype=np.int64) for h in header}
    return {h: data[:, i] for i, h in enumerate(header)}


def _wait_line(proc: subprocess.Popen, expect: str, timeout: float, what: str, errfile: Path) -> None:
    assert proc.stdout is not None
    box: dict[str, str] = {}

    def reader() -> None:
        box["line"] = proc.stdout.readline().decode(errors="replace").strip()  # type: ignore[union-attr]

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    t.join(timeout)
    if box.get("line") != expect:
        proc.poll()
        err = errfile.read_text(errors="replace").strip() if errfile.exists() else ""
        detail = err.splitlines()[-1] if err else f"no '{expect}' within {timeout:g}s"
        raise KernelRunError(f"{what} failed to start: {detail}")


def _spawn(args: list[str], workdir: Path, name: str, stdin: bool = False) -> subprocess.Popen:
    errf = open(workdir / f"{name}.stderr", "wb")
    try:
        return subprocess.Popen(
            args, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errf, close_fds=True
        )
    finally:
        errf.close()


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            try:
                p.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + 3.0
    for p in procs:
        try:
            p.wait(timeout=max(0.01, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        if p.stdout:
            p.stdout.close()
        if p.stdin:
            try:
                p.stdin.close()
            except OSError:
                pass


class _Interrupted(KeyboardInterrupt):
    pass


class EmulatedPath:
    """A live run environment: two namespaces joined by a running cclab-link emulator.

    Made by :func:`emulated_path`; :meth:`start` sets time zero. Tests use
    it directly (e.g. to ping across the emulated path).
    """

    def __init__(self, ir: Mapping[str, Any], command: list[str], ns: RunNamespaces, workdir: Path):
        # command: how the emulator starts (machine.link_command), its subcommand follows
        self.ir, self.command, self.ns, self.workdir = ir, command, ns, workdir
        self.names: dict[int, str] = {}
        self.ir_path = workdir / "resolved.json"
        self.procs: list[subprocess.Popen] = []
        self.emulator: subprocess.Popen | None = None
        self.t0: int | None = None

    def spawn(self, args: list[str], name: str, expect: str, stdin: bool = False, wait: bool = True) -> subprocess.Popen:
        p = _spawn(args, self.workdir, name, stdin=stdin)
        self.procs.append(p)
        self.names[p.pid] = name
        if wait:
            self.wait_ready(p, expect)
        return p

    def wait_ready(self, p: subprocess.Popen, expect: str) -> None:
        name = self.names[p.pid]
        _wait_line(p, expect, 10.0, f"cclab-link {name}", self.workdir / f"{name}.stderr")

    def start(self, t0: int) -> None:
        """Tell the emulator the run's time zero (CLOCK_MONOTONIC ns); it starts forwarding."""
        assert self.emulator is not None and self.emulator.stdin is not None
        self.t0 = t0
        self.emulator.stdin.write(f"start {t0}\n".encode())
        self.emulator.stdin.flush()

    def check_alive(self) -> None:
        for p in self.procs:
            if p.poll() is not None:
                name = self.names.get(p.pid, "?")
                err = (self.workdir / f"{name}.stderr").read_text(errors="replace").strip()
                raise KernelRunError(f"cclab-link {name} exited early ({p.returncode}): {err[-300:]}")

    def stop(self) -> None:
        _stop(list(reversed(self.procs)))

    def named_procs(self) -> dict[str, subprocess.Popen]:
        """The traffic endpoints started with :meth:`spawn`, by name (``send``, ``recv``)."""
        return {self.names[p.pid]: p for p in self.procs if p.pid in self.names}


@contextmanager
def emulated_path(ir: Mapping[str, Any], *, enforce_rate_limit: bool = True) -> Iterator[EmulatedPath]:
    """Namespaces + emulator for ``ir``; everything is removed on exit, whatever happens."""
    check(ir, enforce_rate_limit=enforce_rate_limit)
    command = machine.link_command()
    assert command is not None
    cleaned = clean()  # leftovers of runs that were killed (their owner process is gone)
    n_flows = len(ir["flows"])
    mtu = int(ir["mss"]) + int(ir["header_bytes"])
    topology = is_topology(ir)
    ns: Any = TopologyNamespaces(ir) if topology else RunNamespaces()
    workdir = Path(tempfile.mkdtemp(prefix=f"cclab-{ns.run_id}-"))
    path = EmulatedPath(ir, command, ns, workdir)
    path.cleaned = cleaned  # type: ignore[attr-defined]
    old_term = None
    if threading.current_thread() is threading.main_thread():
        owner = os.getpid()

        def _on_term(signum: int, frame: Any) -> None:
            if os.getpid() != owner:  # a forked helper must never run our cleanup
                os._exit(1)
            raise _Interrupted()

        old_term = signal.signal(signal.SIGTERM, _on_term)
    try:
        path.ir_path.write_text(json.dumps(ir))
        ns.create(ir["host"]["tcp_rmem"], ir["host"]["tcp_wmem"], ecn=any(f.get("ecn") for f in ir["flows"]),
                  sack=all(f.get("sack", True) for f in ir["flows"]))  # fmt: skip
        if topology:
            hosts_arg = ",".join(f"{node}={ns.path(name)}" for node, name in zip(ns.hosts, ns.names))
            path.emulator = path.spawn(
                [*command, "emulate-topo", "--ir", str(path.ir_path), "--hosts", hosts_arg, "--dev", "cltun",
                 "--out", str(workdir), "--rt-prio", str(EMULATOR_RT_PRIO), "--spin-ns", str(EMULATOR_SPIN_NS)],
                "emulator", "ready", stdin=True,
            )  # fmt: skip
            ns.configure_devices(mtu)
            yield path
            return
        path.emulator = path.spawn(
            [*command, "emulate", "--ir", str(path.ir_path), "--snd-netns", ns.path(ns.snd), "--rcv-netns", ns.path(ns.rcv),
             "--dev", "cltun", "--out", str(workdir), "--rt-prio", str(EMULATOR_RT_PRIO), "--spin-ns", str(EMULATOR_SPIN_NS)],
            "emulator", "ready", stdin=True,
        )  # fmt: skip
        ns.configure_devices(n_flows, mtu, quickack=[int(f["id"]) for f in ir["flows"] if int(f.get("ack_every", 2)) == 1])
        yield path
    finally:
        path.stop()
        ns.remove()
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)
        if os.environ.get("CCLAB_KEEP_KERNEL_WORKDIR"):
            print(f"cclab: kernel run files kept in {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def run(ir: Mapping[str, Any], *, enforce_rate_limit: bool = True, read_latency: bool = False) -> dict[str, Any]:
    """Run ``ir`` on the kernel; returns the raw engine output of docs/record.md (+ ``meta``).

    ``read_latency``: the receiver also measures its own read latency (``cclab-link recv
    --read-latency``: the oldest readable segment's arrival to the read's return, 10 µs bins;
    one extra system call per read), returned as ``meta["receiver_read_latency"]`` —
    what ``cclab doctor --read-latency`` prints. Dumbbell scenarios only (a topology has a receiver per host).

    Raises :class:`ScenarioError` for what :func:`check` refuses and
    :class:`KernelRunError` (one line, the cause chained) for every failure
    of the run itself; namespaces and processes are removed either way.
    """
    if read_latency and is_topology(ir):
        raise ScenarioError("topology", "(a topology)", "the read latency is measured at the dumbbell's one receiver",
                            "measure it on a scenario with one [link]")  # fmt: skip
    try:
        return _run(ir, enforce_rate_limit=enforce_rate_limit, read_latency=read_latency)
    except (ScenarioError, KernelRunError):
        raise
    except Exception as exc:  # noqa: BLE001 — an environment failure mid-run, reported on one line
        raise KernelRunError(f"{type(exc).__name__}: {exc}") from exc


def _run(ir: Mapping[str, Any], *, enforce_rate_limit: bool, read_latency: bool = False) -> dict[str, Any]:
    interval = int(ir["sample_interval_ns"])
    n_samples = int(ir["duration_ns"]) // interval
    n_flows = len(ir["flows"])
    max_rtt = max(int(f["rtt_ns"]) for f in ir["flows"])
    sampler: Any = None
    with emulated_path(ir, enforce_rate_limit=enforce_rate_limit) as path:
        ns, workdir, command, ir_path = path.ns, path.workdir, path.command, path.ir_path
        try:
            setup_start = time.monotonic_ns()
            t0 = setup_start + SETUP_MARGIN_NS + 4 * max_rtt + 100_000_000
            if isinstance(ns, TopologyNamespaces):  # a receiver and a sender process per host start
                t0 += 100_000_000 * len(ns.names)
            path.start(t0)
            if isinstance(ns, TopologyNamespaces):
                # every receiver, then every sender, started at once (each waits for its own time)
                ends = ns.flow_hosts()
                receivers = [path.spawn([*command, "recv", "--ir", str(ir_path), "--netns", ns.path(name), "--t0", str(t0),
                                         "--out", str(workdir / f"goodput-h{h}.csv"), "--listen", host_addr(h)],
                                        f"recv-h{h}", "listening", wait=False)
                             for h, name in enumerate(ns.names) if any(b == h for _, b in ends)]  # fmt: skip
                for p in receivers:
                    path.wait_ready(p, "listening")
                senders, samplers = [], []
                for h, name in enumerate(ns.names):
                    mine = [i for i, (a, _) in enumerate(ends) if a == h]
                    if mine:
                        senders.append(path.spawn([*command, "send", "--ir", str(ir_path), "--netns", ns.path(name),
                                                   "--t0", str(t0), "--flows", ",".join(map(str, mine))],
                                                  f"send-h{h}", "connected", wait=False))  # fmt: skip
                        samplers.append(_Sampler(name, t0, interval, n_samples, n_flows))
                for p in senders:
                    path.wait_ready(p, "connected")
                sampler = _Samplers(samplers)
            else:
                lat_args = ["--read-latency", str(workdir / "read_latency.json")] if read_latency else []
                path.spawn([*command, "recv", "--ir", str(ir_path), "--netns", ns.path(ns.rcv), "--t0", str(t0),
                            "--out", str(workdir / "goodput.csv"), *lat_args], "recv", "listening")  # fmt: skip
                path.spawn([*command, "send", "--ir", str(ir_path), "--netns", ns.path(ns.snd), "--t0", str(t0)], "send", "connected")
                sampler = _Sampler(ns.snd, t0, interval, n_samples, n_flows)
            if time.monotonic_ns() >= t0:
                raise KernelRunError(
                    f"set-up (namespaces, emulator, connecting {n_flows} flow(s)) took longer than its margin of "
                    f"{(t0 - setup_start) / 1e6:.0f} ms; nothing was measured"
                )
            sampler.start()
            cpu0 = machine.cpu_times()
            endpoints = {name: p.pid for name, p in path.named_procs().items()}
            sched0 = _sched_snapshot(endpoints)
            # the TCP endpoints' namespaces (the emulator's is the host's own, shared with everything else)
            tcp_ends = {name: pid for name, pid in endpoints.items() if name != "emulator"}
            net0 = {name: _netstat(pid) for name, pid in tcp_ends.items()}
            end = t0 + n_samples * interval + 20_000_000
            while time.monotonic_ns() < end:
                path.check_alive()
                time.sleep(min(0.05, max(0.0, (end - time.monotonic_ns()) / 1e9)))
            cpu1 = machine.cpu_times()
            endpoint_wait = _endpoint_wait(sched0, _sched_snapshot(endpoints))
            netstat = _netstat_delta(net0, {name: _netstat(pid) for name, pid in tcp_ends.items()})
            sampler.join(timeout=5)
            dev_stats = ns.device_stats()
            sysctls = ns.sysctls()
            path.stop()
            if sampler.error is not None:
                raise KernelRunError(f"sock_diag sampler failed: {sampler.error}")
            raw = _assemble(ir, workdir, sampler, dev_stats, sysctls, cpu0, cpu1, ns, path.cleaned, command,  # type: ignore[attr-defined]
                            endpoint_wait)
            raw["meta"]["kernel"]["netstat"] = netstat
            if read_latency:
                lat_file = workdir / "read_latency.json"
                if not lat_file.exists():
                    raise KernelRunError("the receiver wrote no read-latency histogram (cclab-link recv --read-latency)")
                raw["meta"]["receiver_read_latency"] = json.loads(lat_file.read_text())
            return raw
        finally:
            if sampler is not None:
                for one in getattr(sampler, "samplers", [sampler]):
                    one.stop_flag.set()
                    if one.ident is None:  # never started: its socket is ours to close
                        one.diag.close()


# ---------------------------------------------------------------------------
# raw output


_FLOW_FLOAT_COLS = (
    "cwnd_bytes", "inflight_bytes", "ssthresh_bytes", "srtt_ns", "rtt_ns", "min_rtt_ns", "pacing_rate_bps",
    "retrans_segs", "lost_segs", "rto_count", "cc_state", "cc_w_max_bytes", "cc_bw_bps", "cc_min_rtt_ns",
    "cc_pacing_gain", "cc_cwnd_gain", "cc_inflight_hi_bytes", "cc_inflight_lo_bytes", "cc_bw_hi_bps", "cc_bw_lo_bps",
    "sent_bytes", "sent_segs",
)  # fmt: skip

_INFINITE_SSTHRESH = 0x7FFFFFFF  # TCP_INFINITE_SSTHRESH (include/net/tcp.h)
_UNPACED = 2**64 - 1  # ~0ULL: sk_pacing_rate unlimited


def _flow_state(s: TcpSample, header: int) -> dict[str, float]:
    i = s.info
    mss = float(i.get("snd_mss") or 0)
    g = lambda k: float(i[k]) if i.get(k) is not None else math.nan  # noqa: E731
    ssthresh = i.get("snd_ssthresh")
    pacing = i.get("pacing_rate")
    # Linux's tcp_packets_in_flight(): unacked − (sacked + lost) + retrans
    inflight = g("unacked") - g("sacked") - g("lost") + g("retrans")
    out = {
        "cwnd_bytes": g("snd_cwnd") * mss,
        "inflight_bytes": inflight * mss,
        "ssthresh_bytes": math.nan if ssthresh is None or ssthresh >= _INFINITE_SSTHRESH else ssthresh * mss,
        "srtt_ns": g("rtt") * 1000.0,
        # The kernel exports no per-interval mean RTT: srtt stands in for it (docs/kernel.md).
        "rtt_ns": g("rtt") * 1000.0,
        "min_rtt_ns": g("min_rtt") * 1000.0,
        "pacing_rate_bps": math.nan if pacing is None or pacing == _UNPACED else pacing * 8.0,
        "retrans_segs": g("total_retrans"),
        # No cumulative "marked lost" counter in tcp_info: retransmitted segments stand in (docs/kernel.md).
        "lost_segs": g("total_retrans"),
        "rto_count": g("total_rto"),
        # wire bytes sent incl. retransmissions: payload + headers of every data segment
        "sent_bytes": g("bytes_sent") + g("data_segs_out") * header,
        # data segments sent, retransmissions included (both counted in segments, as total_retrans is)
        "sent_segs": g("data_segs_out"),
        "cc_state": math.nan,
    }
    if s.cca != "bbr" and i.get("ca_state") is not None and i.get("snd_cwnd") is not None:
        ssthresh_segs = _INFINITE_SSTHRESH if ssthresh is None else int(ssthresh)
        out["cc_state"] = float(loss_based_code(int(i["ca_state"]), int(i["snd_cwnd"]), ssthresh_segs))
    for k in ("cc_w_max_bytes", "cc_bw_bps", "cc_min_rtt_ns", "cc_pacing_gain", "cc_cwnd_gain",
              "cc_inflight_hi_bytes", "cc_inflight_lo_bytes", "cc_bw_hi_bps", "cc_bw_lo_bps"):  # fmt: skip
        out[k] = math.nan
    if s.bbr is not None:
        out["cc_bw_bps"] = s.bbr["bw_bytes_per_s"] * 8.0
        out["cc_min_rtt_ns"] = s.bbr["min_rtt_us"] * 1000.0
        out["cc_pacing_gain"] = s.bbr["pacing_gain"]
        out["cc_cwnd_gain"] = s.bbr["cwnd_gain"]
        out["cc_state"] = float(_bbr_mode(s.bbr))
    return out


def _assemble(ir: Mapping[str, Any], workdir: Path, sampler: _Sampler, dev_stats: dict[str, Any], sysctls: dict[str, Any],
              cpu0: tuple[int, ...], cpu1: tuple[int, ...], ns: RunNamespaces, cleaned: dict[str, Any],
              command: list[str], endpoint_wait: Mapping[str, float] | None = None) -> dict[str, Any]:  # fmt: skip
    interval = int(ir["sample_interval_ns"])
    n_samples = int(ir["duration_ns"]) // interval
    flows_ir = list(ir["flows"])
    n_flows = len(flows_ir)
    header = int(ir["header_bytes"])
    times = np.arange(1, n_samples + 1, dtype=np.int64) * interval

    link_csv = _read_csv(workdir / "link.csv")
    lflows = _read_csv(workdir / "link_flows.csv")
    topology = "link_id" in link_csv
    if topology:  # one receiver per host: each counts only its flows (zeros for the others)
        parts = [_read_csv(p) for p in sorted(workdir.glob("goodput-h*.csv"))]
        goodput = {c: parts[0][c] for c in ("time_ns", "flow_id")}
        goodput["delivered_bytes"] = np.sum([p["delivered_bytes"] for p in parts], axis=0)
    else:
        goodput = _read_csv(workdir / "goodput.csv")
    # finite flows: when the receiving application read their last byte (cclab-link recv), exact
    # where the samples would round it up to the sample interval (named so that the glob of a
    # topology's goodput-h*.csv above does not take it)
    completion: dict[int, int] = {}
    for p in workdir.glob("goodput*.csv.completion"):
        if p.read_text().count("\n") > 1:  # a header and at least one flow
            done = _read_csv(p)
            completion.update(zip(done["flow_id"].tolist(), done["completion_ns"].tolist()))
    emu = json.loads((workdir / "emulator.json").read_text())

    def grid(table: dict[str, np.ndarray], col: str) -> np.ndarray:
        """(n_samples, n_flows) cumulative counter; missing samples carry the last value."""
        out = np.full((n_samples, n_flows), np.nan)
        if table["time_ns"].size:
            k = table["time_ns"] // interval - 1
            ok = (k >= 0) & (k < n_samples) & (table["flow_id"] < n_flows)
            out[k[ok], table["flow_id"][ok]] = table[col][ok]
        return _ffill(out)

    delivered = grid(goodput, "delivered_bytes")
    egress = grid(lflows, "egress_bytes")
    state = {c: np.full((n_samples, n_flows), np.nan) for c in _FLOW_FLOAT_COLS}
    ccas_seen: dict[int, str | None] = {}
    sample_lag = []
    limits: dict[int, list[tuple[int, int, int, int]]] = {}  # (t_ns, busy, rwnd-limited, sndbuf-limited µs)
    for k, actual, _cost, by_flow in sampler.rows:
        sample_lag.append(actual - (k * interval))
        for fid, s in by_flow.items():
            ccas_seen.setdefault(fid, s.cca)
            if s.info.get("busy_time") is not None:
                limits.setdefault(fid, []).append((k * interval, int(s.info["busy_time"] or 0),
                                                   int(s.info.get("rwnd_limited") or 0), int(s.info.get("sndbuf_limited") or 0)))
            for c, v in _flow_state(s, header).items():
                state[c][k - 1, fid] = v
    for c in ("sent_bytes", "sent_segs", "retrans_segs", "lost_segs", "rto_count"):
        state[c] = np.nan_to_num(_ffill(state[c]), nan=0.0)

    active = np.zeros((n_samples, n_flows), dtype=bool)
    for j, f in enumerate(flows_ir):
        start, stop, size = int(f["start_ns"]), f.get("stop_ns"), f.get("bytes")
        a = times > start
        if stop is not None:
            a &= times <= int(stop)
        if size is not None:
            done = np.nan_to_num(delivered[:, j]) >= int(size)
            first_done = np.argmax(done) if done.any() else n_samples
            a[first_done + 1 :] = False
        active[:, j] = a

    flat = lambda m: m.reshape(-1)  # noqa: E731  (rows ordered by time, then flow id)
    flows_raw: dict[str, np.ndarray] = {
        "time_ns": np.repeat(times, n_flows),
        "flow_id": np.tile(np.arange(n_flows, dtype=np.int64), n_samples),
        "active": flat(active),
        "delivered_bytes": flat(np.nan_to_num(delivered)),
        "egress_bytes": flat(np.nan_to_num(egress)),
    }
    for c in _FLOW_FLOAT_COLS:
        flows_raw[c] = flat(state[c])

    counters = emu["counters"]
    if topology:
        link_raw, cap_stats = _topology_link_raw(ir, link_csv, times)
        dropped = int(counters["data_dropped"])
    else:
        link_raw = _link_raw(link_csv, times)
        dropped = (int(counters["drops_overflow"]) + int(counters["drops_random"]) + int(counters.get("drops_aqm", 0))
                   + int(counters.get("drops_policer", 0)))
    raw_counters = {
        "sent_packets": int(counters["data_in"]),
        "delivered_packets": int(counters["data_out"]),
        "dropped_packets": dropped,
        "queued_packets": int(counters["queued_packets"]),
        "in_flight_packets": max(0, int(counters["data_in"]) - int(counters["data_out"]) - dropped - int(counters["queued_packets"])),
    }

    state_names = {str(f["cca"]): list(kernel_names(str(f["cca"]))) for f in flows_ir}
    if not topology:
        busy_ns = _link_raw(link_csv, times, cols=("busy_ns",))["busy_ns"]
        # constant-rate links only: on a trace, opportunities a short queue cannot
        # fill are lost by definition (docs/ir.md)
        cap_stats = capacity_stats(ir, link_raw, busy_ns) if ir["links"][0]["capacity"]["kind"] == "constant" else None
    steal = machine.steal_between(cpu0, cpu1)
    reasons = _self_check(emu, dev_stats, cap_stats, endpoint_wait, steal)
    used = {str(fid): cca for fid, cca in sorted(ccas_seen.items())}
    busy = (cpu1[0] - cpu0[0]) - (cpu1[1] - cpu0[1])
    cpu_frac = busy / max(1, cpu1[0] - cpu0[0])
    lag = np.asarray(sample_lag, dtype=float)
    meta = {
        "valid": not reasons,
        "invalid_reasons": reasons,
        "kernel": {
            "release": os.uname().release,
            "tcp_available_congestion_control": machine.available_ccas(),
            "tcp_allowed_congestion_control": machine.allowed_ccas(),
            "ccas_used": sorted(set(c for c in used.values() if c)),
            "flow_ccas": used,
            "sysctls": sysctls,
            "namespaces": list(ns.names) if topology else [ns.snd, ns.rcv],
            "mtu": int(ir["mss"]) + header,
            "offloads": "TUN without IFF_VNET_HDR: no TSO/GSO/GRO reaches the emulator; every packet is at most the MTU",
            "tun": dev_stats,
            "cpu_busy_fraction": cpu_frac,
            "steal": steal,
            "endpoint_wait": dict(endpoint_wait or {}),
            "limited": _limited(ir, limits),
            "traffic": "cclab-link send/recv (TCP_CONGESTION per socket; goodput = bytes read by the receiving application)",
            "sampler": {
                "method": "INET_DIAG sock_diag netlink (tcp_info + BBR info)",
                "samples": len(sampler.rows),
                "lag_ms_p50": float(np.percentile(lag, 50)) / 1e6 if lag.size else None,
                "lag_ms_p99": float(np.percentile(lag, 99)) / 1e6 if lag.size else None,
            },
            "leftovers_cleaned": cleaned,
        },
        "emulator": {**{k: emu[k] for k in ("emulator", "version", "settings", "lateness_ns", "lateness_ns_data", "lateness_ns_ack", "wakeup_lateness_ns",
                                            "lateness_hist_ns_data", "lateness_hist_ns_ack", "lateness_hist_ns", "counters", "cpu_ns",
                                            "cpu_ns_data_thread", "cpu_ns_ack_thread", "wall_ns") if k in emu},
                     "binary": " ".join(command),
                     "capacity_check": cap_stats},
    }
    return {
        "engine_version": f"kernel {os.uname().release} + cclab-link {emu['version']}",
        "histograms": _histograms(ir, times, active, state["rtt_ns"], emu),
        "flows": flows_raw,
        "link": link_raw,
        "state_names": state_names,
        "counters": raw_counters,
        "flow_info": [{"completion_ns": int(completion[i])} if i in completion and f.get("bytes") is not None else {}
                      for i, f in enumerate(flows_ir)],
        "meta": meta,
        "valid": meta["valid"],
        "invalid_reasons": reasons,
    }


def _histograms(ir: Mapping[str, Any], times: np.ndarray, active: np.ndarray, rtt_ns: np.ndarray,
                emu: Mapping[str, Any]) -> dict[str, Any]:
    """The per-packet distributions of docs/record.md as the kernel backend has them.

    * ``sojourn``: the emulator runs the simulator's bottleneck model
      (cclab-netmodel) and counts the sojourn of every packet leaving it in
      the measure window into the same log-linear histogram — per packet, as
      on the simulator.
    * ``rtt``: Linux exports no per-ACK RTT samples through tcp_info, only
      the smoothed RTT (``tcpi_rtt``): the histogram holds one srtt value per
      flow per sample interval in the window while the flow is active —
      coarser than the simulator's every-ACK samples and smoothed (EWMA 1/8),
      so its tails are narrower; ``rtt_source_kind`` says so and the summary
      reports it as ``rtt_source``.
    """
    from cclab.metrics import histogram_of

    lo, hi = int(ir["measure"]["from_ns"]), int(ir["measure"]["to_ns"])
    in_window = (times > lo) & (times <= hi)
    mask = active & in_window[:, None] & np.isfinite(rtt_ns)
    ids = np.array([int(f["id"]) for f in ir["flows"]], dtype=np.int64)  # 0 … n−1 (the emulator's address plan)
    rtt = histogram_of(rtt_ns[mask], np.broadcast_to(ids, rtt_ns.shape)[mask])
    every = {"n": np.zeros(ids.size), "sum_ns": np.zeros(ids.size), "min_ns": np.full(ids.size, np.nan),
             "max_ns": np.full(ids.size, np.nan)}  # fmt: skip
    for k, col in every.items():  # statistics for every flow, also those without a sample
        col[rtt["stats_flow_id"]] = rtt[k]
    rtt.update(every, stats_flow_id=ids)
    out: dict[str, Any] = {"sub_bits": 7, "rtt": rtt,
                           "rtt_source_kind": "tcp_info srtt samples (one per sample interval, smoothed)"}  # fmt: skip
    h = emu.get("sojourn_hist")
    if isinstance(h, dict):
        out["sub_bits"] = int(h.get("sub_bits", 7))
        out["sojourn"] = {"bin": np.asarray(h.get("bin", []), dtype=np.int64),
                          "count": np.asarray(h.get("count", []), dtype=np.int64),
                          "n": np.array([float(h.get("n", 0))]), "sum_ns": np.array([float(h.get("sum_ns", 0))]),
                          "min_ns": np.array([np.nan if h.get("min_ns") is None else float(h["min_ns"])]),
                          "max_ns": np.array([np.nan if h.get("max_ns") is None else float(h["max_ns"])])}  # fmt: skip
    return out


def _ffill(m: np.ndarray) -> np.ndarray:
    out = m.copy()
    for i in range(1, out.shape[0]):
        row = np.isnan(out[i])
        out[i, row] = out[i - 1, row]
    return out


_LINK_COLS = ("queue_bytes", "queue_packets", "sojourn_sum_ns", "departed_packets", "egress_bytes", "arrival_bytes",
              "drops_overflow", "drops_random", "drops_aqm", "marks_ce", "capacity_bps", "delay_ns", "lateness_max_ns",
              "drops_policer")  # fmt: skip


def _link_raw(t: dict[str, np.ndarray], times: np.ndarray, cols: tuple[str, ...] = _LINK_COLS) -> dict[str, np.ndarray]:
    n = times.size
    out: dict[str, np.ndarray] = {"time_ns": times.copy()}
    k = t["time_ns"] // max(1, int(times[0]) if n else 1) - 1 if t["time_ns"].size else np.zeros(0, dtype=np.int64)
    for c in cols:
        col = np.full(n, np.nan)
        if c not in t:  # an older emulator's link.csv (no marks_ce, no drops_policer)
            out[c] = np.zeros(n)
            continue
        if t["time_ns"].size:
            ok = (k >= 0) & (k < n)
            col[k[ok]] = t[c][ok]
        out[c] = _ffill(col[:, None])[:, 0]
    return out


def _topology_link_raw(ir: Mapping[str, Any], t: dict[str, np.ndarray], times: np.ndarray
                       ) -> tuple[dict[str, np.ndarray], dict[str, Any] | None]:  # fmt: skip
    """A topology's link.csv (one row per link per sample, ``link_id``) as the raw ``link`` table
    (rows by time, then link), and the capacity self-check of each constant-rate link."""
    n_links, n = len(ir["links"]), times.size
    per_link, stats = [], {}
    for j, link in enumerate(ir["links"]):
        rows = {c: v[t["link_id"] == j] for c, v in t.items()}
        raw = _link_raw(rows, times)
        per_link.append(raw)
        if link["capacity"]["kind"] == "constant":
            busy = _link_raw(rows, times, cols=("busy_ns",))["busy_ns"]
            stats[str(link["name"])] = capacity_stats({**ir, "links": [link]}, raw, busy)
    out = {c: np.stack([p[c] for p in per_link], axis=1).reshape(n * n_links) for c in per_link[0]}
    out["link_id"] = np.tile(np.arange(n_links, dtype=np.int64), n)
    return out, ({"per_link": stats} if stats else None)


def _self_check(emu: Mapping[str, Any], dev: Mapping[str, Any], cap_stats: Mapping[str, Any] | None,
                endpoint_wait: Mapping[str, float] | None = None,
                steal: Mapping[str, float] | None = None) -> list[str]:  # fmt: skip
    reasons = []
    # the host's steal time, named beside a timing failure: it tells a VM's host taking the
    # vCPUs away from an emulator that is too slow by itself (docs/kernel.md)
    stolen = ""
    if steal and float(steal.get("steal_s") or 0.0) > 0.0:
        stolen = f"; the VM's host took {float(steal['steal_fraction']) * 100:.2g} % of its CPU time during the run (steal)"
    p99 = int(emu["lateness_ns"]["p99"])
    if p99 > LATENESS_P99_LIMIT_NS:
        reasons.append(f"emulator lateness p99 {p99 / 1e6:.2f} ms > {LATENESS_P99_LIMIT_NS / 1e6:g} ms (it fell behind{stolen})")
    for side, s in dev.items():
        d = int(s.get("tx_dropped", 0))
        if d:
            reasons.append(f"TUN device on the {side} side dropped {d} packets (the emulator did not read them in time)")
    if int(emu["counters"].get("write_errors", 0)):
        reasons.append(f"emulator failed to write {emu['counters']['write_errors']} packets into a TUN device")
    # achieved vs configured capacity over the intervals in which the link never idled
    if cap_stats is not None and "per_link" in cap_stats:
        for name, stats in cap_stats["per_link"].items():
            reasons += [f"link {name}: {r}" for r in _capacity_check(stats)]
    elif cap_stats is not None:
        reasons += _capacity_check(cap_stats)
    # CPU saturation, judged by what it does to the emulator: its timed wake-ups
    # come late when it does not get a CPU (machine-wide CPU use is only
    # information, meta.json kernel.cpu_busy_fraction: unrelated load at lower
    # priority does not delay the SCHED_FIFO emulator)
    wake = emu.get("wakeup_lateness_ns") or {}
    if int(wake.get("count") or 0) and int(wake["p99"]) > WAKEUP_P99_LIMIT_NS:
        reasons.append(f"emulator CPU-starved: its timed wake-ups were {int(wake['p99']) / 1e6:.2f} ms late at p99 "
                       f"(> {WAKEUP_P99_LIMIT_NS / 1e6:g} ms{stolen})")  # fmt: skip
    return reasons


def backlogged_intervals(link: Mapping[str, np.ndarray], busy_ns: np.ndarray) -> np.ndarray:
    """Mask over the sample intervals (t_{k-1}, t_k], k ≥ 1, in which the link serialized
    without a break (its busy time grew by the interval's length) at one constant rate.

    The first interval is never one: the emulator's counters include the
    set-up traffic before t0.
    """
    t = np.asarray(link["time_ns"], dtype=np.int64)
    busy = np.asarray(busy_ns, dtype=float)
    cap = np.nan_to_num(np.asarray(link["capacity_bps"], dtype=float))
    mask = np.zeros(t.size, dtype=bool)
    if t.size > 1:
        mask[1:] = (np.diff(busy) == np.diff(t)) & (cap[1:] == cap[:-1]) & (cap[1:] > 0)
    return mask


def capacity_stats(ir: Mapping[str, Any], link: Mapping[str, np.ndarray], busy_ns: np.ndarray) -> dict[str, Any]:
    """What the capacity self-check judges (stored in meta.json ``emulator.capacity_check``).

    Over the intervals in which the emulator's link never idled
    (:func:`backlogged_intervals`): the bits that left the bottleneck, with
    the record's definition of utilization (cclab.metrics.link_frame: wire
    bytes leaving the bottleneck per interval / capacity), against the
    configured bits. Bytes are counted when a packet's serialization ends,
    so each run of consecutive such intervals may be off by up to one packet
    (the one in service at either end): the tolerance is CAPACITY_TOLERANCE
    of the configured bits plus one packet per run. Intervals in which the
    link idled — random loss before the queue, a window-limited sender, a
    short buffer that drained — are not judged: idling there is what the
    link should do.
    """
    from cclab.metrics import link_frame

    lf = link_frame({"link": link}, ir)
    mask = backlogged_intervals(link, busy_ns)
    dt = np.diff(np.asarray(link["time_ns"], dtype=float), prepend=0.0) / 1e9
    cap = lf["capacity_bps"].to_numpy()
    cap_bits = float(np.sum((cap * dt)[mask]))
    sent_bits = float(np.sum((lf["utilization"].to_numpy() * cap * dt)[mask]))
    runs = int(np.sum(mask[1:] & ~mask[:-1]) + (mask[0] if mask.size else 0))
    allowed = CAPACITY_TOLERANCE * cap_bits + runs * (int(ir["mss"]) + int(ir["header_bytes"])) * 8
    return {
        "intervals_judged": int(mask.sum()),
        "intervals": int(mask.size),
        "runs": runs,
        "achieved": sent_bits / cap_bits if cap_bits > 0 else None,
        "tolerance": allowed / cap_bits if cap_bits > 0 else None,
    }


def _capacity_check(stats: Mapping[str, Any]) -> list[str]:
    if stats["intervals_judged"] < 10 or stats["achieved"] is None:
        return []
    if abs(stats["achieved"] - 1) > stats["tolerance"]:
        return [f"achieved capacity {stats['achieved'] * 100:.1f} % of configured over the {stats['intervals_judged']} "
                f"intervals in which the link never idled (tolerance ±{CAPACITY_TOLERANCE * 100:g} % + one packet per run "
                f"of such intervals, ±{stats['tolerance'] * 100:.1f} % here)"]  # fmt: skip
    return []


class KernelBackend:
    """The backend object :func:`cclab.backends.get_backend` returns."""

    name = NAME

    def check(self, ir: Mapping[str, Any]) -> None:
        check(ir)

    def run(self, ir: Mapping[str, Any]) -> dict[str, Any]:
        return run(ir)


def get_backend() -> KernelBackend:
    return KernelBackend()
