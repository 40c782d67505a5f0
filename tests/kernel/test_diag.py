"""sock_diag parsing: tcp_info layout and BBR info, against a real socket."""

from __future__ import annotations

import socket
import struct
import threading

from cclab.kernel.diag import DiagSocket, parse_bbr_info, parse_tcp_info


def test_tcp_info_offsets_follow_the_uapi_header():
    buf = bytearray(248)
    struct.pack_into("=I", buf, 80, 10)  # tcpi_snd_cwnd
    struct.pack_into("=Q", buf, 160, 12345)  # tcpi_delivery_rate
    struct.pack_into("=H", buf, 240, 3)  # tcpi_total_rto
    info = parse_tcp_info(bytes(buf))
    assert info["snd_cwnd"] == 10 and info["delivery_rate"] == 12345 and info["total_rto"] == 3
    short = parse_tcp_info(bytes(buf[:104]))  # an old kernel's shorter struct
    assert short["total_retrans"] == 0 and short["pacing_rate"] is None


def test_bbr_info_gains_are_fixed_point():
    b = parse_bbr_info(struct.pack("=IIIII", 5, 1, 40000, 320, 512))
    assert b["bw_bytes_per_s"] == float((1 << 32) | 5)
    assert b["pacing_gain"] == 1.25 and b["cwnd_gain"] == 2.0 and b["min_rtt_us"] == 40000


def test_dump_sees_a_loopback_connection_and_its_algorithm():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    cli = socket.socket()
    cli.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"reno")
    cli.connect(("127.0.0.1", port))
    conn, _ = srv.accept()
    t = threading.Thread(target=lambda: conn.recv(1 << 16))
    t.start()
    cli.sendall(b"x" * 1000)
    t.join()
    try:
        with DiagSocket() as d:
            mine = [s for s in d.tcp_sockets() if s.dport == port and s.sport == cli.getsockname()[1]]
        assert len(mine) == 1
        assert mine[0].cca == "reno"
        assert mine[0].info["bytes_acked"] >= 1000
        assert mine[0].info["snd_cwnd"] > 0
    finally:
        for s in (cli, conn, srv):
            s.close()
