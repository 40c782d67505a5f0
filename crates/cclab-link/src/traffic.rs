//! cclab's multi-flow TCP sender and receiver.
//!
//! Why not iperf3 (docs/kernel.md): one process drives every flow of a run
//! on the run's shared clock, so flows start (first data segment) at their
//! `start_ns`, stop writing at `stop_ns` or after `bytes` exactly; the
//! receiver counts the bytes its application actually read, per flow,
//! sampled at exactly t0 + k·interval — iperf3 reports at ≥ 100 ms
//! intervals and its client counts bytes written, not delivered; and there
//! is no control connection per flow to tell apart from data in sock_diag.
//!
//! Connections are opened just before t0 — each flow's handshake ends
//! about `CONNECT_MARGIN_NS` before t0, over the idle path — because the
//! simulator establishes every connection at time zero (docs/ir.md
//! "Flows"): the handshake's RTT sample starts BBR's min_rtt clock, so a
//! connection made seconds earlier would move the kernel's first ProbeRTT
//! by as much. Each socket gets its algorithm with
//! `setsockopt(TCP_CONGESTION)` before `connect`, never through a namespace
//! default.

use crate::config::{self, Ir};
use crate::sys;
use std::io::{self, Read, Write};
use std::net::{SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn cvt(r: libc::c_int, what: &str) -> io::Result<libc::c_int> {
    if r < 0 {
        let e = io::Error::last_os_error();
        Err(io::Error::new(e.kind(), format!("{what}: {e}")))
    } else {
        Ok(r)
    }
}

fn sockaddr(a: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: a.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(a.ip().octets()),
        },
        sin_zero: [0; 8],
    }
}

/// A connected socket from `src` to `dst` using congestion control `cca`.
pub fn connect_with_cca(src: SocketAddrV4, dst: SocketAddrV4, cca: &str) -> io::Result<TcpStream> {
    unsafe {
        let fd = cvt(
            libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0),
            "socket",
        )?;
        let stream = TcpStream::from_raw_fd(fd);
        cvt(
            libc::setsockopt(
                fd,
                libc::IPPROTO_TCP,
                libc::TCP_CONGESTION,
                cca.as_ptr() as *const _,
                cca.len() as libc::socklen_t,
            ),
            &format!(
                "TCP_CONGESTION {cca:?} (see /proc/sys/net/ipv4/tcp_available_congestion_control)"
            ),
        )?;
        let s = sockaddr(src);
        cvt(
            libc::bind(
                fd,
                &s as *const _ as *const libc::sockaddr,
                std::mem::size_of_val(&s) as u32,
            ),
            &format!("bind {src}"),
        )?;
        let d = sockaddr(dst);
        cvt(
            libc::connect(
                fd,
                &d as *const _ as *const libc::sockaddr,
                std::mem::size_of_val(&d) as u32,
            ),
            &format!("connect {dst}"),
        )?;
        Ok(stream)
    }
}

/// Bytes per write.
const CHUNK: usize = 64 * 1024;

/// How much written-but-unsent data a sender socket may hold.
///
/// The IR's `stop_ns` means "the application stops writing; what is in
/// flight is still delivered" — but a kernel socket also holds data written
/// and not yet sent (with autotuned buffers, megabytes), which would keep
/// flowing long after the stop. TCP_NOTSENT_LOWAT bounds that backlog: a
/// write blocks while more than this is unsent. 4 ms of the link's rate,
/// at least 256 KiB, keeps the sender ahead of the link while bounding
/// what is still sent after a stop to a few ms of capacity.
pub fn notsent_lowat(ir: &Ir) -> u32 {
    let rate = match &ir.link().capacity {
        config::Capacity::Constant { rate_bps } => *rate_bps,
        config::Capacity::Trace {
            opportunities_ns,
            period_ns,
            bytes_per_opportunity,
            ..
        } => {
            (opportunities_ns.len() as u128 * *bytes_per_opportunity as u128 * 8 * 1_000_000_000
                / (*period_ns).max(1) as u128) as u64
        }
    };
    let max_rate = ir
        .link()
        .schedule
        .iter()
        .filter_map(|c| c.rate_bps)
        .fold(rate, u64::max);
    ((max_rate / 8 / 250) as u32).max(256 * 1024)
}

fn set_notsent_lowat(s: &TcpStream, bytes: u32) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let v = bytes as libc::c_int;
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_NOTSENT_LOWAT,
            &v as *const _ as *const _,
            std::mem::size_of_val(&v) as u32,
        )
    };
    cvt(r, "TCP_NOTSENT_LOWAT").map(|_| ())
}

/// How long before t0 each flow's handshake should be over: the orchestrator
/// starts its sampler after `connected` and must still be ahead of t0.
pub const CONNECT_MARGIN_NS: u64 = 100_000_000;

/// `cclab-link send`: connect every flow of the IR (or those of `only`: the
/// flows whose sender is in this namespace, in a topology), each at t0 − its
/// RTT − `CONNECT_MARGIN_NS`, in parallel, print `connected`, then write
/// from t0 + start until stop / bytes / the end of the run; exit on SIGTERM.
pub fn send(ir: &Ir, netns: &str, t0: u64, only: Option<Vec<u32>>) -> Result<(), String> {
    let mask = sys::install_stop_signals();
    sys::die_with_parent();
    sys::enter_netns(netns).map_err(|e| e.to_string())?;
    let lowat = notsent_lowat(ir);
    // a topology: each flow connects to its receiver host's address (docs/kernel.md "Topologies")
    let hosts = if ir.is_topology() {
        Some(ir.hosts()?)
    } else {
        None
    };
    let mut dsts = Vec::with_capacity(ir.flows.len());
    for f in &ir.flows {
        let addr = match &hosts {
            None => config::RECEIVER_ADDR,
            Some(h) => {
                let (_, to) = ir.flow_nodes(f)?;
                config::host_addr(h.iter().position(|n| n == &to).unwrap())
            }
        };
        dsts.push(SocketAddrV4::new(addr, config::PORT));
    }
    let flows: Vec<_> = ir
        .flows
        .iter()
        .filter(|f| only.as_ref().is_none_or(|o| o.contains(&f.id)))
        .cloned()
        .collect();
    let connecting: Vec<_> = flows
        .iter()
        .map(|f| {
            let (id, cca, rtt) = (f.id, f.cca.clone(), f.rtt_ns);
            let dst = dsts[id as usize];
            // a thread starts in the network namespace of the thread that spawns it
            std::thread::spawn(move || -> Result<TcpStream, String> {
                sys::sleep_until(t0.saturating_sub(rtt + CONNECT_MARGIN_NS));
                let src = SocketAddrV4::new(config::sender_addr(id), 0);
                let s = connect_with_cca(src, dst, &cca).map_err(|e| format!("flow {id}: {e}"))?;
                s.set_write_timeout(Some(Duration::from_millis(5))).ok();
                set_notsent_lowat(&s, lowat).map_err(|e| format!("flow {id}: {e}"))?;
                Ok(s)
            })
        })
        .collect();
    let mut streams = Vec::new();
    for h in connecting {
        streams.push(
            h.join()
                .map_err(|_| "a connecting thread panicked".to_string())??,
        );
    }
    println!("connected");
    io::stdout().flush().ok();
    let run_end = t0 + ir.duration_ns;
    for (f, mut s) in flows.into_iter().zip(streams) {
        std::thread::spawn(move || {
            sys::sleep_until(t0 + f.start_ns);
            let end = f.stop_ns.map(|x| t0 + x).unwrap_or(u64::MAX).min(run_end);
            let mut left = f.bytes.unwrap_or(u64::MAX);
            let buf = vec![0x5au8; CHUNK];
            while left > 0 && sys::mono_ns() < end {
                let n = (buf.len() as u64).min(left) as usize;
                match s.write(&buf[..n]) {
                    Ok(w) => left -= w as u64,
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock
                                | io::ErrorKind::TimedOut
                                | io::ErrorKind::Interrupted
                        ) => {}
                    Err(e) => {
                        eprintln!("flow {}: write: {e}", f.id);
                        break;
                    }
                }
            }
            // keep the connection open (sock_diag still sees it) until we are told to stop
            loop {
                std::thread::sleep(Duration::from_secs(3600));
                let _ = &s;
            }
        });
    }
    sys::wait_for_stop(&mask);
    Ok(())
}

/// The receiving application's read latency (`recv --read-latency FILE`):
/// for each read, the time from the oldest readable segment's arrival at
/// the receiving stack to the read's return, in `READ_LAT_BIN_NS` bins.
///
/// Before each read the receiver peeks one byte (`MSG_PEEK`) with
/// `SO_TIMESTAMPNS` on: the peek blocks until in-order data is readable —
/// as the read itself would — and its control message carries the
/// software receive timestamp of the first skb in the receive queue
/// (`tcp_recv_timestamp`; the skbs behind the emulator's TUN device are
/// never coalesced, so that is one segment's arrival, and data made
/// readable by a retransmission counts from the retransmission). The read
/// that follows returns what is queued by then; its return time minus
/// that timestamp is the latency (both CLOCK_REALTIME). One extra system
/// call per read and nothing traced, unlike an in-kernel histogram
/// (bpftrace), whose probes on every segment slowed the runs they measured.
pub const READ_LAT_BIN_NS: u64 = 10_000;
/// Bins: 10 µs each up to 100 ms; longer reads are counted in `over`.
pub const READ_LAT_BINS: usize = 10_000;

struct ReadLatency {
    counts: Vec<AtomicU64>,
    over: AtomicU64,
}

impl ReadLatency {
    fn new() -> Self {
        ReadLatency { counts: (0..READ_LAT_BINS).map(|_| AtomicU64::new(0)).collect(), over: AtomicU64::new(0) }
    }

    fn add(&self, ns: u64) {
        let i = (ns / READ_LAT_BIN_NS) as usize;
        match self.counts.get(i) {
            Some(c) => c.fetch_add(1, Ordering::Relaxed),
            None => self.over.fetch_add(1, Ordering::Relaxed),
        };
    }

    /// `{"bin_ns": …, "counts": [… trailing zeros trimmed], "over": n, "reads": n}`
    fn to_json(&self) -> String {
        let c: Vec<u64> = self.counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        let end = c.iter().rposition(|&x| x > 0).map_or(0, |i| i + 1);
        let over = self.over.load(Ordering::Relaxed);
        let reads = c.iter().sum::<u64>() + over;
        let body: Vec<String> = c[..end].iter().map(|x| x.to_string()).collect();
        format!(
            "{{\"bin_ns\": {READ_LAT_BIN_NS}, \"counts\": [{}], \"over\": {over}, \"reads\": {reads}}}\n",
            body.join(", ")
        )
    }
}

fn realtime_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Block until in-order data is readable; the first queued skb's receive
/// timestamp (CLOCK_REALTIME ns), or None (no data: end of stream or error,
/// or no timestamp).
fn peek_first_arrival(fd: libc::c_int) -> Option<u64> {
    let mut byte = 0u8;
    let mut iov = libc::iovec { iov_base: &mut byte as *mut u8 as *mut _, iov_len: 1 };
    // room for one SCM_TIMESTAMPNS (a struct timespec), aligned
    let mut control = [0u64; 8];
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr() as *mut _;
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    let r = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_PEEK) };
    if r <= 0 {
        return None;
    }
    let mut cm = unsafe { libc::CMSG_FIRSTHDR(&msg) };
    while !cm.is_null() {
        let h = unsafe { &*cm };
        if h.cmsg_level == libc::SOL_SOCKET && h.cmsg_type == libc::SCM_TIMESTAMPNS {
            let ts: libc::timespec = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cm) as *const libc::timespec) };
            return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
        }
        cm = unsafe { libc::CMSG_NXTHDR(&msg, cm) };
    }
    None
}

/// `cclab-link recv`: listen, count bytes read per flow (by sender address),
/// sample the cumulative counts at t0 + k·interval into `out` (CSV:
/// `time_ns,flow_id,delivered_bytes`), note when a finite flow's last byte
/// was read (`OUT.completion`, CSV: `flow_id,completion_ns`, ns after t0),
/// then wait for SIGTERM. With
/// `read_latency`, also the histogram of [`ReadLatency`] into that file
/// (JSON), written with the samples.
pub fn recv(
    ir: &Ir,
    netns: &str,
    t0: u64,
    out: &str,
    listen: Option<&str>,
    read_latency: Option<&str>,
) -> Result<(), String> {
    let mask = sys::install_stop_signals();
    sys::die_with_parent();
    sys::enter_netns(netns).map_err(|e| e.to_string())?;
    let n = ir.flows.len();
    let addr = match listen {
        Some(a) => a
            .parse()
            .map_err(|_| format!("--listen: {a:?} is not an IPv4 address"))?,
        None => config::RECEIVER_ADDR,
    };
    let listener = TcpListener::bind(SocketAddrV4::new(addr, config::PORT))
        .map_err(|e| format!("listen: {e}"))?;
    let counts: Arc<Vec<AtomicU64>> = Arc::new((0..n).map(|_| AtomicU64::new(0)).collect());
    // a finite flow's completion: when the read that brought its total to
    // `bytes` returned (CLOCK_MONOTONIC ns; 0: not yet)
    let done: Arc<Vec<AtomicU64>> = Arc::new((0..n).map(|_| AtomicU64::new(0)).collect());
    let need: Arc<Vec<Option<u64>>> = Arc::new(ir.flows.iter().map(|f| f.bytes).collect());
    let lat: Option<Arc<ReadLatency>> = read_latency.map(|_| Arc::new(ReadLatency::new()));
    {
        let counts = counts.clone();
        let done = done.clone();
        let need = need.clone();
        let lat = lat.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let Ok(std::net::SocketAddr::V4(peer)) = conn.peer_addr() else {
                    continue;
                };
                let Some(flow) = config::flow_of_addr(peer.ip().octets(), n) else {
                    continue;
                };
                let counts = counts.clone();
                let done = done.clone();
                let need = need.clone();
                let lat = lat.clone();
                std::thread::spawn(move || {
                    use std::os::fd::AsRawFd;
                    let fd = conn.as_raw_fd();
                    if lat.is_some() {
                        let one: libc::c_int = 1;
                        let size = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
                        let p = &one as *const libc::c_int as *const libc::c_void;
                        unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, p, size) };
                    }
                    let mut buf = vec![0u8; 1 << 20];
                    loop {
                        let first = lat.as_ref().and_then(|_| peek_first_arrival(fd));
                        let Ok(r) = conn.read(&mut buf) else { break };
                        if r == 0 {
                            break;
                        }
                        if let (Some(l), Some(a)) = (&lat, first) {
                            l.add(realtime_ns().saturating_sub(a));
                        }
                        let f = flow as usize;
                        let total = counts[f].fetch_add(r as u64, Ordering::Relaxed) + r as u64;
                        if need[f].is_some_and(|b| total >= b) && done[f].load(Ordering::Relaxed) == 0 {
                            done[f].store(sys::mono_ns().max(1), Ordering::Relaxed);
                        }
                    }
                });
            }
        });
    }
    println!("listening");
    io::stdout().flush().ok();
    let interval = ir.sample_interval_ns;
    let mut rows = String::from("time_ns,flow_id,delivered_bytes\n");
    for k in 1..=ir.duration_ns / interval {
        let t = t0 + k * interval;
        loop {
            let now = sys::mono_ns();
            if now >= t || sys::stop_requested() {
                break;
            }
            let _ = sys::ppoll(&mut [], Some(t - now), &mask);
        }
        if sys::stop_requested() {
            break;
        }
        for (i, c) in counts.iter().enumerate() {
            rows.push_str(&format!(
                "{},{},{}\n",
                k * interval,
                i,
                c.load(Ordering::Relaxed)
            ));
        }
    }
    std::fs::write(out, rows).map_err(|e| format!("{out}: {e}"))?;
    let mut completed = String::from("flow_id,completion_ns\n");
    for (i, d) in done.iter().enumerate() {
        let at = d.load(Ordering::Relaxed);
        if at != 0 {
            completed.push_str(&format!("{i},{}\n", at.saturating_sub(t0)));
        }
    }
    let path = format!("{out}.completion");
    std::fs::write(&path, completed).map_err(|e| format!("{path}: {e}"))?;
    if let (Some(path), Some(l)) = (read_latency, &lat) {
        std::fs::write(path, l.to_json()).map_err(|e| format!("{path}: {e}"))?;
    }
    sys::wait_for_stop(&mask);
    Ok(())
}
