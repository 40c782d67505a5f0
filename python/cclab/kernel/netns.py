"""Network namespaces for one kernel run, and the cleanup of leftovers.

Names carry a run-unique prefix ``cclab-<pid>-<hex>-`` (pid of the
orchestrating process): a later cclab invocation recognises leftovers of a
run whose process is gone (``kill -9``) and removes them — see
:func:`leftovers` and :func:`clean`. Everything goes through pyroute2's
IPRoute or direct syscalls, always inside a thread that has entered the
namespace with ``setns`` (:func:`in_netns`) — never pyroute2's ``NetNS``,
which forks a copy of the calling Python process; no shell command is
ever built from scenario values.

Address plan (shared with crates/cclab-link/src/config.rs — keep in sync):
flow *i* sends from 10.77.1.(10+i); the receiver listens on 10.77.2.1:5201.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import secrets
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pyroute2 import IPRoute, netns

__all__ = [
    "NETNS_DIR",
    "PREFIX",
    "RECEIVER_ADDR",
    "RunNamespaces",
    "TopologyNamespaces",
    "host_addr",
    "hosts",
    "clean",
    "in_netns",
    "leftovers",
    "sender_addr",
]

NETNS_DIR = "/run/netns"
PREFIX = "cclab-"
DEV = "cltun"
RECEIVER_ADDR = "10.77.2.1"
PORT = 5201
_NAME_RE = re.compile(r"^cclab-(\d+)-([0-9a-f]+)-(snd|rcv|h\d+)$")
_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)

T = TypeVar("T")


def sender_addr(flow_id: int) -> str:
    return f"10.77.1.{10 + flow_id}"


#: At most this many host namespaces (end nodes) in a topology run (crates/cclab-link/src/config.rs).
MAX_HOSTS = 200


def host_addr(h: int) -> str:
    """The receiver address of host ``h`` of a topology (crates/cclab-link/src/config.rs ``host_addr``)."""
    return f"10.77.2.{1 + h}"


def flow_nodes(ir: Mapping[str, Any], flow: Mapping[str, Any]) -> tuple[str, str]:
    """A flow's sender node and receiver node: where its path starts and ends."""
    by_name = {str(link["name"]): link for link in ir["links"]}
    return str(by_name[flow["path"][0]]["from"]), str(by_name[flow["path"][-1]]["to"])


def hosts(ir: Mapping[str, Any]) -> list[str]:
    """The host nodes of a topology — every node where a flow starts or ends — in the order the
    links name them (from, then to); one namespace each (crates/cclab-link/src/config.rs ``hosts``)."""
    ends = {n for f in ir["flows"] for n in flow_nodes(ir, f)}
    out: list[str] = []
    for link in ir["links"]:
        for n in (str(link["from"]), str(link["to"])):
            if n in ends and n not in out:
                out.append(n)
    return out


def _setns(fd: int) -> None:
    if _libc.setns(fd, _CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"setns: {os.strerror(e)}")


def in_netns(name: str, fn: Callable[[], T]) -> T:
    """Call ``fn`` in a short-lived thread that has entered namespace ``name``.

    ``setns`` moves only the calling thread, so the process (and the caller's
    thread) stay where they are. Sockets created by ``fn`` (netlink, raw
    ICMP) stay bound to ``name``'s stack after the thread ends, and
    ``/proc/sys/net`` opened by ``fn`` shows ``name``'s sysctls.
    """
    box: dict[str, Any] = {}

    def body() -> None:
        try:
            fd = os.open(os.path.join(NETNS_DIR, name), os.O_RDONLY | os.O_CLOEXEC)
            try:
                _setns(fd)
            finally:
                os.close(fd)
            box["value"] = fn()
        except BaseException as exc:  # re-raised in the caller
            box["error"] = exc

    t = threading.Thread(target=body, name=f"netns-{name}", daemon=True)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _sysctl_path(key: str) -> str:
    return "/proc/sys/" + key.replace(".", "/")


def read_sysctl(key: str) -> str | None:
    try:
        with open(_sysctl_path(key)) as fh:
            return " ".join(fh.read().split())
    except OSError:
        return None


def write_sysctl(key: str, value: str) -> None:
    with open(_sysctl_path(key), "w") as fh:
        fh.write(value)


#: sysctls recorded in provenance (values inside the sender namespace).
RECORDED_SYSCTLS = (
    "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_no_metrics_save",
    "net.ipv4.tcp_congestion_control", "net.ipv4.tcp_allowed_congestion_control",
    "net.ipv4.tcp_available_congestion_control", "net.ipv4.tcp_sack", "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_ecn", "net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_recovery",
    "net.ipv4.tcp_limit_output_bytes", "net.ipv4.tcp_autocorking", "net.ipv4.tcp_mtu_probing",
    "net.ipv4.tcp_pacing_ss_ratio", "net.ipv4.tcp_pacing_ca_ratio", "net.core.default_qdisc",
)  # fmt: skip


@dataclass
class RunNamespaces:
    """The sender-side and receiver-side namespaces of one run.

    Create with :meth:`create`; always :meth:`remove` (in a ``finally``).
    """

    run_id: str = field(default_factory=lambda: f"{os.getpid()}-{secrets.token_hex(3)}")
    created: list[str] = field(default_factory=list)

    @property
    def snd(self) -> str:
        return f"{PREFIX}{self.run_id}-snd"

    @property
    def rcv(self) -> str:
        return f"{PREFIX}{self.run_id}-rcv"

    def path(self, name: str) -> str:
        return os.path.join(NETNS_DIR, name)

    def create(self, tcp_rmem: list[int], tcp_wmem: list[int], ecn: bool = False, sack: bool = True) -> None:
        """Create both namespaces with the IR's host TCP buffers (``host.tcp_rmem``/``tcp_wmem``);
        ``ecn``: ``net.ipv4.tcp_ecn = 1`` in both (request and accept ECN, RFC 3168); ``sack``
        false: ``net.ipv4.tcp_sack = 0`` in both (neither end offers SACK)."""
        for name in (self.snd, self.rcv):
            netns.create(name)
            self.created.append(name)
            in_netns(name, lambda: _configure_sysctls(tcp_rmem, tcp_wmem, ecn, sack))

    def sysctls(self) -> dict[str, str | None]:
        return in_netns(self.snd, lambda: {k: read_sysctl(k) for k in RECORDED_SYSCTLS})

    def configure_devices(self, n_flows: int, mtu: int, txqueuelen: int = 10000,
                          quickack: Iterable[int] = ()) -> None:  # fmt: skip
        """Addresses, MTU, txqueuelen and routes on the emulator's TUN devices (made by cclab-link).
        ``quickack``: flows whose receiver ACKs every segment at once (the IR's ``ack_every`` 1): a
        route to the flow's sender with the ``quickack`` attribute (``RTAX_QUICKACK``: Linux's
        ``tcp_in_quickack_mode`` is then always true for that socket)."""

        def snd() -> None:
            with IPRoute() as ipr:
                _up(ipr, "lo")
                idx = _up(ipr, DEV, mtu=mtu, txqlen=txqueuelen)
                for i in range(n_flows):
                    ipr.addr("add", index=idx, address=sender_addr(i), prefixlen=32)
                ipr.route("add", dst="10.77.2.0/24", oif=idx)

        def rcv() -> None:
            with IPRoute() as ipr:
                _up(ipr, "lo")
                idx = _up(ipr, DEV, mtu=mtu, txqlen=txqueuelen)
                ipr.addr("add", index=idx, address=RECEIVER_ADDR, prefixlen=32)
                ipr.route("add", dst="10.77.1.0/24", oif=idx)
                for i in quickack:
                    ipr.route("add", dst=f"{sender_addr(i)}/32", oif=idx, metrics={"quickack": 1})

        in_netns(self.snd, snd)
        in_netns(self.rcv, rcv)

    def device_stats(self) -> dict[str, dict[str, int]]:
        """Kernel counters of both TUN devices (TX drops = packets the emulator did not read in time)."""

        def stats(name: str) -> dict[str, int]:
            with IPRoute() as ipr:
                found = ipr.link_lookup(ifname=DEV)
                if not found:
                    raise RuntimeError(f"{DEV} vanished from {name} (did the emulator exit?)")
                link = ipr.link("get", index=found[0])[0]
                out = {k: int(v) for k, v in dict(link.get_attr("IFLA_STATS64") or {}).items() if isinstance(v, int)}
                out["mtu"] = int(link.get_attr("IFLA_MTU"))
                out["txqueuelen"] = int(link.get_attr("IFLA_TXQLEN"))
                return out

        return {side: in_netns(name, lambda name=name: stats(name)) for side, name in (("snd", self.snd), ("rcv", self.rcv))}

    def remove(self) -> list[str]:
        """Remove the namespaces (killing any cclab-link process still inside). Idempotent."""
        removed = []
        for name in list(self.created):
            _remove_namespace(name)
            self.created.remove(name)
            removed.append(name)
        return removed


@dataclass
class TopologyNamespaces:
    """One namespace per host node of a topology (docs/kernel.md "Topologies"): host h holds the
    senders of the flows that start at its node and listens at :func:`host_addr` ``(h)`` for the flows
    that end there. Create with :meth:`create`; always :meth:`remove` (in a ``finally``)."""

    ir: Mapping[str, Any]
    run_id: str = field(default_factory=lambda: f"{os.getpid()}-{secrets.token_hex(3)}")
    created: list[str] = field(default_factory=list)

    @property
    def hosts(self) -> list[str]:
        return hosts(self.ir)

    @property
    def names(self) -> list[str]:
        return [f"{PREFIX}{self.run_id}-h{h}" for h in range(len(self.hosts))]

    def path(self, name: str) -> str:
        return os.path.join(NETNS_DIR, name)

    def flow_hosts(self) -> list[tuple[int, int]]:
        """(sender host, receiver host) of every flow, by flow id."""
        index = {n: h for h, n in enumerate(self.hosts)}
        return [(index[a], index[b]) for a, b in (flow_nodes(self.ir, f) for f in self.ir["flows"])]

    def create(self, tcp_rmem: list[int], tcp_wmem: list[int], ecn: bool = False, sack: bool = True) -> None:
        for name in self.names:
            netns.create(name)
            self.created.append(name)
            in_netns(name, lambda: _configure_sysctls(tcp_rmem, tcp_wmem, ecn, sack))

    def sysctls(self) -> dict[str, str | None]:
        return in_netns(self.names[0], lambda: {k: read_sysctl(k) for k in RECORDED_SYSCTLS})

    def configure_devices(self, mtu: int, txqueuelen: int = 10000) -> None:
        """Addresses (the senders of the flows starting at the host, the host's receiver address),
        MTU, txqueuelen, one route for the whole plan (10.77.0.0/16) into the emulator's device, and
        a ``quickack`` route to the sender of every flow ending at the host with ``ack_every`` 1."""
        ends = self.flow_hosts()
        for h, name in enumerate(self.names):
            senders = [i for i, (a, _) in enumerate(ends) if a == h]
            quick = [i for i, (_, b) in enumerate(ends) if b == h and int(self.ir["flows"][i].get("ack_every", 2)) == 1]

            def body(h: int = h, senders: list[int] = senders, quick: list[int] = quick) -> None:
                with IPRoute() as ipr:
                    _up(ipr, "lo")
                    idx = _up(ipr, DEV, mtu=mtu, txqlen=txqueuelen)
                    for i in senders:
                        ipr.addr("add", index=idx, address=sender_addr(i), prefixlen=32)
                    ipr.addr("add", index=idx, address=host_addr(h), prefixlen=32)
                    ipr.route("add", dst="10.77.0.0/16", oif=idx)
                    for i in quick:
                        ipr.route("add", dst=f"{sender_addr(i)}/32", oif=idx, metrics={"quickack": 1})

            in_netns(name, body)

    def device_stats(self) -> dict[str, dict[str, int]]:
        def stats(name: str) -> dict[str, int]:
            with IPRoute() as ipr:
                found = ipr.link_lookup(ifname=DEV)
                if not found:
                    raise RuntimeError(f"{DEV} vanished from {name} (did the emulator exit?)")
                link = ipr.link("get", index=found[0])[0]
                out = {k: int(v) for k, v in dict(link.get_attr("IFLA_STATS64") or {}).items() if isinstance(v, int)}
                out["mtu"] = int(link.get_attr("IFLA_MTU"))
                out["txqueuelen"] = int(link.get_attr("IFLA_TXQLEN"))
                return out

        return {f"host {node}": in_netns(name, lambda name=name: stats(name)) for node, name in zip(self.hosts, self.names)}

    def remove(self) -> list[str]:
        removed = []
        for name in list(self.created):
            _remove_namespace(name)
            self.created.remove(name)
            removed.append(name)
        return removed


def _configure_sysctls(tcp_rmem: list[int], tcp_wmem: list[int], ecn: bool = False, sack: bool = True) -> None:
    # The IR's host buffers (docs/ir.md `host`): Linux's initial sizes and a
    # maximum large enough for the BDP (the default tcp_wmem max, 4 MB, caps
    # 1 Gbit/s × 50 ms at ~500 Mbit/s, measured on Linux 6.18; docs/kernel.md).
    write_sysctl("net.ipv4.tcp_rmem", " ".join(str(int(v)) for v in tcp_rmem))
    write_sysctl("net.ipv4.tcp_wmem", " ".join(str(int(v)) for v in tcp_wmem))
    # ECN (Documentation/networking/ip-sysctl.rst, tcp_ecn): 1 requests ECN on
    # outgoing connections and accepts it on incoming ones. A new namespace
    # starts at 2 (accept only), so without it no connection is ECN-capable.
    if ecn:
        write_sysctl("net.ipv4.tcp_ecn", "1")
    # SACK (tcp_sack, default 1): 0 and neither end offers it in its SYN.
    if not sack:
        write_sysctl("net.ipv4.tcp_sack", "0")
    # No cached metrics from earlier connections to the same address.
    write_sysctl("net.ipv4.tcp_no_metrics_save", "1")
    # IPv6 neighbour discovery would only add noise on the TUN devices.
    for key in ("net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.default.disable_ipv6"):
        try:
            write_sysctl(key, "1")
        except OSError:
            pass


def _up(ipr: Any, ifname: str, **kw: Any) -> int:
    found = ipr.link_lookup(ifname=ifname)
    if not found:
        raise RuntimeError(f"network device {ifname} missing in namespace")
    idx = found[0]
    ipr.link("set", index=idx, state="up", **kw)
    return idx


def _ns_inode(name: str) -> int | None:
    try:
        return os.stat(os.path.join(NETNS_DIR, name)).st_ino
    except OSError:
        return None


def _pids_in_netns(inode: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}/ns/net").st_ino == inode:
                pids.append(int(entry))
        except OSError:
            continue
    return pids


def _exe_name(pid: int) -> str:
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return ""


def _cmdline(pid: int) -> list[bytes]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().split(b"\0")
    except OSError:
        return []


def is_cclab_link(pid: int) -> bool:
    """Whether ``pid`` is a cclab-link process: the standalone binary (its
    executable is named ``cclab-link``) or the emulator built into the
    extension module, ``<python> … -m cclab._link …`` (machine.link_command)."""
    if _exe_name(pid) == "cclab-link":
        return True
    args = _cmdline(pid)
    return any(a == b"-m" and b == b"cclab._link" for a, b in zip(args, args[1:]))


def _kill_cclab_link(pids: list[int]) -> list[int]:
    """SIGKILL those of ``pids`` that are cclab-link processes (and only those)."""
    killed = []
    for pid in pids:
        if is_cclab_link(pid):
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + 2.0
    while killed and time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") for p in killed):
        time.sleep(0.01)
    return killed


def _remove_namespace(name: str) -> None:
    inode = _ns_inode(name)
    if inode is not None:
        _kill_cclab_link(_pids_in_netns(inode))
    try:
        netns.remove(name)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            raise


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs a Python/cclab process (a reused pid of something else does not count)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmd = fh.read()
    except OSError:
        return False
    return b"python" in cmd or b"cclab" in cmd


def cclab_link_processes() -> list[int]:
    """Pids of running cclab-link processes (any run), binary or ``python -m cclab._link``."""
    me = os.getpid()
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != me and is_cclab_link(int(p))]


def leftovers(include_live: bool = False) -> dict[str, list[Any]]:
    """cclab namespaces whose run's process is gone (or all, with ``include_live``)."""
    names = []
    try:
        entries = sorted(os.listdir(NETNS_DIR))
    except FileNotFoundError:
        entries = []
    for name in entries:
        if not name.startswith(PREFIX):
            continue
        m = _NAME_RE.match(name)
        owner = int(m.group(1)) if m else None
        if include_live or owner is None or not _alive(owner):
            names.append(name)
    dead_inodes = {_ns_inode(n) for n in names} - {None}
    orphans = []
    for pid in cclab_link_processes():
        try:
            ino = os.stat(f"/proc/{pid}/ns/net").st_ino
        except OSError:
            continue
        # inside a leftover namespace, or orphaned (parent gone) while serving a cclab namespace
        if ino in dead_inodes or (_parent_gone(pid) and _serves_cclab_namespace(pid)):
            orphans.append(pid)
    return {"namespaces": names, "processes": orphans}


def _serves_cclab_namespace(pid: int) -> bool:
    args = _cmdline(pid)
    return any(a.startswith(f"{NETNS_DIR}/{PREFIX}".encode()) for a in args)


def _parent_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return False
    return ppid == 1


_WORKDIR_RE = re.compile(r"^cclab-(\d+)-[0-9a-f]+-")


def leftover_workdirs() -> list[str]:
    """Temporary run directories (``$TMPDIR/cclab-<pid>-<hex>-*``) of runs whose process is gone."""
    tmp = tempfile.gettempdir()
    out = []
    for entry in sorted(os.listdir(tmp)):
        m = _WORKDIR_RE.match(entry)
        path = os.path.join(tmp, entry)
        if m and os.path.isdir(path) and not _alive(int(m.group(1))):
            out.append(path)
    return out


def clean(include_live: bool = False) -> dict[str, list[Any]]:
    """Remove leftovers of dead runs: their cclab-link processes, namespaces and temporary directories."""
    found = leftovers(include_live)
    killed = _kill_cclab_link(found["processes"])
    removed = []
    for name in found["namespaces"]:
        _remove_namespace(name)
        removed.append(name)
    dirs = leftover_workdirs()
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
    return {"namespaces": removed, "processes": killed, "workdirs": dirs}
