"""What this machine offers the kernel backend (``cclab doctor``), and how
the ``cclab-link`` emulator is started (:func:`link_command`)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_FLOWS",
    "MAX_BPS",
    "MAX_PPS",
    "available_ccas",
    "allowed_ccas",
    "capabilities",
    "is_root",
    "link_command",
    "max_rate_bps",
    "tun_available",
]

#: Flows per run (each has its own sender address and sender/receiver threads).
MAX_FLOWS = 64

#: What the emulator can carry at all on this 2-vCPU machine, measured with
#: ``python -m cclab.kernel.bench`` (crates/cclab-link/README.md): the wire
#: rate levels off near 115 kpps with 1500-byte packets (~1.35 Gbit/s) and
#: near 3.3 Gbit/s with 9000-byte ones. ``check`` refuses rates above
#: ``min(MAX_PPS × packet size, MAX_BPS)``; rates below that but above what
#: is *sustained* with lateness p99 ≤ 1 ms run and are flagged by the
#: self-check.
MAX_PPS = 100_000
MAX_BPS = 3_500_000_000

_REPO = Path(__file__).resolve().parents[3]


def _read(path: str) -> str | None:
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return None


def available_ccas() -> list[str]:
    return (_read("/proc/sys/net/ipv4/tcp_available_congestion_control") or "").split()


def allowed_ccas() -> list[str]:
    return (_read("/proc/sys/net/ipv4/tcp_allowed_congestion_control") or "").split()


def is_root() -> bool:
    return os.geteuid() == 0


def tun_available() -> bool:
    return os.path.exists("/dev/net/tun") and os.access("/dev/net/tun", os.R_OK | os.W_OK)


def max_rate_bps(packet_bytes: int) -> int:
    return min(MAX_PPS * packet_bytes * 8, MAX_BPS)


def _native_has_link() -> bool:
    try:
        from cclab import _native
    except ImportError:
        return False
    return hasattr(_native, "link_main")


def link_command() -> list[str] | None:
    """The command that starts the cclab-link emulator (its subcommand and
    options follow), or None:

    1. ``$CCLAB_LINK`` if set (a ``cclab-link`` executable, e.g. a
       ``cargo build --release -p cclab-link``), else
    2. ``[sys.executable, "-m", "cclab._link"]``: the emulator compiled into
       this install's extension module — what every wheel, ``pip install .``
       and editable install has (it is rebuilt with the simulator), else
    3. for an extension built before the emulator moved into it: the newest
       workspace release build (``$CARGO_TARGET_DIR``, the repository's
       target/), then ``cclab-link`` on ``$PATH``.
    """
    env = os.environ.get("CCLAB_LINK")
    if env:
        return [env] if os.path.isfile(env) and os.access(env, os.X_OK) else None
    if _native_has_link():
        return [sys.executable, "-m", "cclab._link"]
    candidates = []
    target = os.environ.get("CARGO_TARGET_DIR")
    if target:
        candidates.append(os.path.join(target, "release", "cclab-link"))
    candidates.append(str(_REPO / "target" / "release" / "cclab-link"))
    found = [c for c in candidates if os.path.isfile(c) and os.access(c, os.X_OK)]
    if found:
        return [max(found, key=lambda c: os.stat(c).st_mtime)]
    which = shutil.which("cclab-link")
    return [which] if which else None


def link_file(command: list[str]) -> str:
    """The file whose bytes are the emulator of ``command`` (hashed into parity engine keys)."""
    if command[1:] == ["-m", "cclab._link"]:
        from cclab import _native

        return str(_native.__file__)
    return command[0]


def build_hint() -> str:
    if os.environ.get("CCLAB_LINK"):
        return f"CCLAB_LINK={os.environ['CCLAB_LINK']} is not an executable file; unset it to use the emulator built into cclab"
    return ("reinstall cclab (pip install cclab, or pip install -e . in a source checkout: the emulator is built "
            "into its extension module), or set CCLAB_LINK=/path/to/cclab-link (cargo build --release -p cclab-link)")


def _qdisc_available(kind: str) -> bool:
    """Whether the kernel accepts qdisc ``kind`` (tried on lo of a throw-away namespace)."""
    from pyroute2 import IPRoute

    from cclab.kernel.netns import RunNamespaces, in_netns

    def probe() -> bool:
        with IPRoute() as ipr:
            idx = ipr.link_lookup(ifname="lo")[0]
            ipr.link("set", index=idx, state="up")
            kw: dict[str, Any] = {"delay": 1000} if kind == "netem" else {"rate": "10mbit", "burst": 10000, "latency": "10ms"}
            try:
                ipr.tc("add", kind, index=idx, handle=0x10000, **kw)
                return True
            except Exception:
                return False

    ns = RunNamespaces()
    try:
        ns.create([4096, 131072, 4 << 20], [4096, 16384, 4 << 20])
        return bool(in_netns(ns.snd, probe))
    except Exception:
        return False
    finally:
        ns.remove()


def _bpf_struct_ops() -> bool:
    """BTF for the running kernel (what struct_ops programs are built against) and bpftool to load them."""
    return os.path.exists("/sys/kernel/btf/vmlinux") and shutil.which("bpftool") is not None


#: Steal (the VM's host running something else on its vCPUs), as a fraction of the CPU time, above
#: which cclab says the host takes the machine's CPUs: parity's steal line and its note before the
#: runs, ``cclab doctor``'s warning, the kernel tests' third attempt. Measured on a 2-vCPU VM
#: (docs/kernel.md): 21 valid kernel runs had 0.03-0.6 %, twelve runs the self-check rejected for
#: lateness 1.6-22.6 %.
HOST_STEAL_LIMIT = 0.01


def cpu_times() -> tuple[int, int, int]:
    """(all, idle + iowait, steal) CPU time of the machine since boot in USER_HZ ticks (/proc/stat's ``cpu`` line).

    Steal is the time a virtual machine's vCPUs wanted to run while its host ran something
    else (0 on bare metal): a vCPU taken away for milliseconds stops the SCHED_FIFO emulator
    as surely as no load inside the machine can.
    """
    with open("/proc/stat") as fh:
        parts = [int(x) for x in fh.readline().split()[1:]]
    idle = parts[3] + (parts[4] if len(parts) > 4 else 0)
    steal = parts[7] if len(parts) > 7 else 0
    return sum(parts), idle, steal


def steal_between(before: tuple[int, ...], after: tuple[int, ...]) -> dict[str, float]:
    """The host's steal time between two :func:`cpu_times` readings: seconds summed over the
    machine's CPUs (``steal_s``), and as a fraction of all their time (``steal_fraction``)."""
    total = max(1, after[0] - before[0])
    steal = max(0, (after[2] - before[2]) if len(before) > 2 and len(after) > 2 else 0)
    return {"steal_s": steal / os.sysconf("SC_CLK_TCK"), "steal_fraction": steal / total}


def steal_since_boot() -> dict[str, float]:
    """:func:`steal_between` boot and now."""
    return steal_between((0, 0, 0), cpu_times())


def capabilities(probe_qdiscs: bool = True) -> dict[str, Any]:
    """Everything ``cclab doctor`` reports, as data."""
    root = is_root()
    command = link_command()
    binary = " ".join(command) if command else None
    version = None
    if command:
        try:
            version = subprocess.run([*command, "version"], capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            version = None
    caps: dict[str, Any] = {
        "kernel_release": platform.release(),
        "cpus": os.cpu_count(),
        "root": root,
        "netns": root and os.path.isdir("/proc/self/ns") and os.path.exists("/proc/self/ns/net"),
        "tun": tun_available(),
        "cclab_link": binary,
        "cclab_link_version": version,
        "iperf3": shutil.which("iperf3"),
        "tcp_available_congestion_control": available_ccas(),
        "tcp_allowed_congestion_control": allowed_ccas(),
        "default_congestion_control": _read("/proc/sys/net/ipv4/tcp_congestion_control"),
        "bpf_struct_ops": _bpf_struct_ops(),
        "btf": os.path.exists("/sys/kernel/btf/vmlinux"),
        "bpftool": shutil.which("bpftool"),
        "max_rate_bps_mtu1500": max_rate_bps(1500),
        "max_rate_bps_mtu9000": max_rate_bps(9000),
        # since boot: how much of the CPU time a VM's host has taken (kernel runs' lateness, docs/kernel.md)
        "host_steal_since_boot": steal_since_boot(),
    }
    if probe_qdiscs and root:
        caps["netem"] = _qdisc_available("netem")
        caps["tbf"] = _qdisc_available("tbf")
    can_run = root and caps["tun"] and binary is not None
    reasons = []
    if not root:
        reasons.append("not root (namespaces and TUN devices need CAP_NET_ADMIN)")
    if not caps["tun"]:
        reasons.append("/dev/net/tun is missing")
    if binary is None:
        reasons.append("cclab-link emulator not found; " + build_hint())
    caps["kernel_backend"] = bool(can_run)
    caps["why_not"] = reasons
    return caps
