"""The kernel backend's reading of a namespace's TCP counters (``meta kernel.netstat``) — no root needed:
this process's own namespace is read."""

from __future__ import annotations

import os

from cclab.kernel.backend import _netstat, _netstat_delta


def test_netstat_reads_this_namespaces_tcp_counters():
    got = _netstat(os.getpid())
    assert got, "no TCP counters read from /proc/self/net/netstat and snmp"
    assert all(isinstance(v, int) for v in got.values())
    assert {"Tcp.OutSegs", "Tcp.RetransSegs", "TcpExt.TCPSackRecovery", "TcpExt.TCPLossUndo"} <= set(got)
    # settings and gauges are not counters: a difference of them means nothing
    assert not {"Tcp.RtoMin", "Tcp.MaxConn", "Tcp.CurrEstab"} & set(got)
    assert {k.split(".")[0] for k in got} == {"Tcp", "TcpExt"}


def test_netstat_of_a_process_that_is_gone_is_empty():
    assert _netstat(2**22 + 12345) == {}


def test_netstat_delta_keeps_what_changed():
    a = {"send": {"Tcp.OutSegs": 10, "TcpExt.TCPSackRecovery": 2, "TcpExt.TCPLossUndo": 0}}
    b = {"send": {"Tcp.OutSegs": 25, "TcpExt.TCPSackRecovery": 2, "TcpExt.TCPLossUndo": 1}}
    assert _netstat_delta(a, b) == {"send": {"Tcp.OutSegs": 15, "TcpExt.TCPLossUndo": 1}}
    assert _netstat_delta(a, {}) == {"send": {}}  # the process was gone at the end
