//! Congestion control behind one small interface, modelled on Linux's
//! `struct tcp_congestion_ops` (include/net/tcp.h).
//!
//! The sender owns loss detection, RTT estimation, delivery-rate sampling and
//! (for algorithms that do not take over cwnd) PRR; it hands algorithms a
//! read/write view of the few connection fields Linux lets `tcp_congestion_ops`
//! touch ([`Conn`]), plus per-ACK [`RateSample`]s. Units follow Linux: cwnd and
//! ssthresh in packets (segments), rates in bit/s, times in ns.
//!
//! Dispatch is one closed enum ([`Cc`]) over all algorithms: no trait objects.

use crate::time::{Bandwidth, Dur, Time};
use std::cell::RefCell;
use std::collections::BTreeMap;

pub mod bbr;
pub mod bbr3;
pub mod cubic;
pub mod dctcp;
pub mod reno;
pub mod vegas;

/// `TCP_INFINITE_SSTHRESH` (include/net/tcp.h).
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;
/// Initial window, RFC 6928 / `TCP_INIT_CWND` (include/net/tcp.h).
pub const INIT_CWND: u32 = 10;

/// Linux's `enum tcp_ca_state` (include/uapi/linux/tcp.h).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CaState {
    Open,
    Disorder,
    Cwr,
    Recovery,
    Loss,
}

/// Linux's `enum tcp_ca_event` (the subset the simulator raises).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CwndEvent {
    /// First transmission when no packet is in flight (`CA_EVENT_TX_START`).
    TxStart,
    /// The retransmission timer fired and the window was cut (`CA_EVENT_LOSS`,
    /// raised by `tcp_enter_loss` after `.ssthresh`).
    Loss,
}

/// The connection state a congestion-control module may read and write
/// (the parts of `struct tcp_sock` that `tcp_congestion_ops` uses).
#[derive(Clone, Debug)]
pub struct Conn {
    pub now: Time,
    /// Payload bytes per full segment.
    pub mss: u32,
    /// `snd_cwnd`, packets. Written by the algorithm.
    pub cwnd: u32,
    /// `snd_ssthresh`, packets. Written by the algorithm (via `ssthresh()`).
    pub ssthresh: u32,
    /// `snd_cwnd_clamp`, packets.
    pub cwnd_clamp: u32,
    /// `sk_pacing_rate`; `None` means the sender does not pace (Linux paces
    /// internally only when the algorithm asks, as BBR does).
    pub pacing_rate: Option<Bandwidth>,
    /// `tcp_packets_in_flight()`: packets_out − (sacked_out + lost_out) + retrans_out.
    pub in_flight: u32,
    pub packets_out: u32,
    pub sacked_out: u32,
    pub lost_out: u32,
    pub retrans_out: u32,
    /// `tp->delivered`: packets delivered (acked or sacked) so far.
    pub delivered: u64,
    /// `tp->delivered_ce`: packets delivered by ACKs that carried ECE
    /// (`tcp_count_delivered`, net/ipv4/tcp_input.c).
    pub delivered_ce: u64,
    /// `TCP_ECN_OK`: the connection negotiated ECN.
    pub ecn_ok: bool,
    /// `tp->snd_una`, `tp->snd_nxt` (segments), set by the sender before each hook.
    pub snd_una: u32,
    pub snd_nxt: u32,
    /// `tp->delivered_mstamp`: when `delivered` last changed.
    pub delivered_time: Time,
    /// `tp->lsndtime`: when the last segment was sent (CUBIC's idle shift).
    pub lsndtime: Time,
    /// `tp->tcp_wstamp_ns`: earliest departure time of the next packet under
    /// pacing (the sender's pacer clock; `now` or earlier when not pacing).
    /// BBR's `bbr_packets_in_net_at_edt` subtracts what the path delivers
    /// until then. Filled by the sender before each hook call.
    pub wstamp: Time,
    /// `tp->lost`: packets marked lost so far.
    pub lost: u64,
    /// `tp->app_limited`: 0, or the `delivered` mark until which samples are app-limited.
    pub app_limited: u64,
    /// Smoothed RTT (`srtt_us >> 3`), zero before the first sample.
    pub srtt: Dur,
    /// Windowed minimum RTT (`tcp_min_rtt()`), `None` before the first sample.
    pub min_rtt: Option<Dur>,
    /// `tcp_is_cwnd_limited()`.
    pub is_cwnd_limited: bool,
    pub ca_state: CaState,
    /// Bytes the application still has to send is unbounded / finished.
    pub has_unsent_data: bool,
}

impl Conn {
    pub fn new(now: Time, mss: u32) -> Conn {
        Conn {
            now,
            mss,
            cwnd: INIT_CWND,
            ssthresh: INFINITE_SSTHRESH,
            cwnd_clamp: u32::MAX / 2,
            pacing_rate: None,
            in_flight: 0,
            packets_out: 0,
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            delivered: 0,
            delivered_ce: 0,
            ecn_ok: false,
            snd_una: 0,
            snd_nxt: 0,
            delivered_time: now,
            lsndtime: now,
            wstamp: now,
            lost: 0,
            app_limited: 0,
            srtt: Dur::ZERO,
            min_rtt: None,
            is_cwnd_limited: false,
            ca_state: CaState::Open,
            has_unsent_data: true,
        }
    }
    /// `tcp_in_slow_start()`.
    #[inline]
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
}

/// One ACK's delivery-rate sample (Linux `struct rate_sample`, tcp_rate.c;
/// draft-cheng-iccrg-delivery-rate-estimation §3).
#[derive(Clone, Debug, Default)]
pub struct RateSample {
    /// `tp->delivered` when the most recently delivered packet was sent.
    pub prior_delivered: u64,
    /// Packets delivered over `interval` (−1 in Linux when invalid; 0 here and `interval` zero).
    pub delivered: u64,
    /// max(send interval, ack interval); zero when the sample is invalid.
    pub interval: Dur,
    /// Delivery rate = delivered·mss / interval, `None` when invalid.
    pub delivery_rate: Option<Bandwidth>,
    /// RTT of the most recently sent packet this ACK delivered (`rs->rtt_us`).
    pub rtt: Option<Dur>,
    /// Packets newly marked lost by this ACK (`rs->losses`).
    pub losses: u32,
    /// Packets newly acked or sacked by this ACK (`rs->acked_sacked`).
    pub acked_sacked: u32,
    /// In-flight packets before this ACK (`rs->prior_in_flight`).
    pub prior_in_flight: u32,
    pub is_app_limited: bool,
    /// Was the sampled packet a retransmission (`rs->is_retrans`).
    pub is_retrans: bool,
    /// In-flight packets when the sampled packet was sent (BBRv3's `rs->tx_in_flight`).
    pub tx_in_flight: u32,
    /// Packets lost between the sampled packet's send and this ACK (BBRv3's `rs->lost`).
    pub lost: u64,
    /// `rs->is_ack_delayed` (tcp_rate.c, from `FLAG_ACK_MAYBE_DELAYED` in
    /// tcp_clean_rtx_queue): this ACK cumulatively acked exactly one packet of
    /// less than one MSS with nothing SACKed, so it may be a delayed ACK. BBR's
    /// min_rtt filter will not take a higher RTT from such an ACK.
    pub is_ack_delayed: bool,
    /// Packets delivered with ECE over the sample (`rs->delivered_ce`, tcp_rate.c).
    pub delivered_ce: u64,
    /// This ACK carried ECE on an ECN connection (`rs->is_ece`, FLAG_ECE).
    pub is_ece: bool,
}

/// Per-ACK RTT information (`struct ack_sample`, for `pkts_acked`).
#[derive(Clone, Debug)]
pub struct AckSample {
    pub pkts_acked: u32,
    pub rtt: Option<Dur>,
    pub in_flight: u32,
}

/// An algorithm's internal state for the run record. Fields an algorithm does
/// not have stay `None` (NaN in Parquet).
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// Index into the algorithm's [`Cc::state_names`].
    pub state: u8,
    pub w_max_pkts: Option<f64>,
    pub bw_bps: Option<f64>,
    pub min_rtt_ns: Option<f64>,
    pub pacing_gain: Option<f64>,
    pub cwnd_gain: Option<f64>,
    pub inflight_hi_pkts: Option<f64>,
    pub inflight_lo_pkts: Option<f64>,
    pub bw_hi_bps: Option<f64>,
    pub bw_lo_bps: Option<f64>,
}

/// An error building an algorithm from a scenario (unknown name or parameter).
#[derive(Clone, Debug, PartialEq)]
pub struct CcError(pub String);

impl std::fmt::Display for CcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Take the parameters an algorithm knows out of `params`; anything left over is an error.
pub(crate) struct Params<'a> {
    pub cca: &'a str,
    pub map: BTreeMap<String, f64>,
    /// When set, each parameter's default is noted here as it is taken ([`defaults`]).
    defaults: Option<&'a RefCell<Vec<(String, f64)>>>,
}

impl<'a> Params<'a> {
    pub fn new(cca: &'a str, map: &BTreeMap<String, f64>) -> Self {
        Params { cca, map: map.clone(), defaults: None }
    }
    fn note(&self, name: &str, default: f64) {
        if let Some(d) = self.defaults {
            let mut d = d.borrow_mut();
            if !d.iter().any(|(n, _)| n == name) {
                d.push((name.to_string(), default));
            }
        }
    }
    pub fn take(&mut self, name: &str, default: f64) -> f64 {
        self.note(name, default);
        self.map.remove(name).unwrap_or(default)
    }
    pub fn take_bool(&mut self, name: &str, default: bool) -> bool {
        self.note(name, if default { 1.0 } else { 0.0 });
        self.map.remove(name).map(|v| v != 0.0).unwrap_or(default)
    }
    pub fn finish(self, known: &[&str]) -> Result<(), CcError> {
        if let Some((k, v)) = self.map.iter().next() {
            return Err(CcError(format!(
                "cca parameter '{k}' = {v} is not a parameter of '{}'; allowed: {}",
                self.cca,
                known.join(", ")
            )));
        }
        Ok(())
    }
}

/// All algorithms, one variant each (closed-enum dispatch).
#[derive(Clone, Debug)]
pub enum Cc {
    Reno(reno::Reno),
    Cubic(cubic::Cubic),
    /// `bbr` and its presets `bbr_shallow`, `bbr_cwnd_feedback`, `bbr_sticky_rtprop`.
    Bbr(bbr::Bbr),
    /// `bbr3`, and `bbr2` (BBRv2 alpha: the same machine with
    /// [`bbr3::Bbr3Config::v2alpha`]).
    Bbr3(bbr3::Bbr3),
    Vegas(vegas::Vegas),
    Dctcp(dctcp::Dctcp),
}

/// The names `Cc::new` accepts.
pub const ALGORITHMS: &[&str] = &[
    "reno",
    "cubic",
    "bbr",
    "bbr2",
    "bbr3",
    "vegas",
    "dctcp",
    "bbr_shallow",
    "bbr_cwnd_feedback",
    "bbr_sticky_rtprop",
];

/// The parameters each algorithm accepts in `cca_params` (for front ends'
/// validation and documentation). `None` for an unknown algorithm.
pub fn parameters(name: &str) -> Option<&'static [&'static str]> {
    match name {
        "reno" => Some(reno::PARAMS),
        "cubic" => Some(cubic::PARAMS),
        "bbr" | "bbr_shallow" | "bbr_cwnd_feedback" | "bbr_sticky_rtprop" => Some(bbr::PARAMS),
        "bbr2" => Some(bbr3::v2alpha::PARAMS),
        "bbr3" => Some(bbr3::PARAMS),
        "vegas" => Some(vegas::PARAMS),
        "dctcp" => Some(dctcp::PARAMS),
        _ => None,
    }
}

macro_rules! dispatch {
    ($self:ident, $cc:ident => $e:expr) => {
        match $self {
            Cc::Reno($cc) => $e,
            Cc::Cubic($cc) => $e,
            Cc::Bbr($cc) => $e,
            Cc::Bbr3($cc) => $e,
            Cc::Vegas($cc) => $e,
            Cc::Dctcp($cc) => $e,
        }
    };
}

/// Every parameter of algorithm `name` with the default the engine uses when a
/// scenario leaves it out, in the order the algorithm reads them (switches as
/// 1.0/0.0, gains as real numbers, e.g. BBR's Startup gain 739/256). `None`
/// for an unknown algorithm. The front end's parameter registry is checked
/// against this (tests/test_cca_params.py).
pub fn defaults(name: &str) -> Option<Vec<(String, f64)>> {
    let seen = RefCell::new(Vec::new());
    let p = Params { cca: name, map: BTreeMap::new(), defaults: Some(&seen) };
    Cc::build(name, p, 1).ok()?;
    Some(seen.into_inner())
}

impl Cc {
    /// Build an algorithm by name. `seed` feeds algorithms that randomize (BBR's
    /// ProbeBW start phase); it is derived from the scenario seed and flow id.
    pub fn new(name: &str, params: &BTreeMap<String, f64>, seed: u64) -> Result<Cc, CcError> {
        Cc::build(name, Params::new(name, params), seed)
    }

    fn build(name: &str, p: Params, seed: u64) -> Result<Cc, CcError> {
        match name {
            "reno" => Ok(Cc::Reno(reno::Reno::from_params(p)?)),
            "cubic" => Ok(Cc::Cubic(cubic::Cubic::from_params(p)?)),
            "bbr" | "bbr_shallow" | "bbr_cwnd_feedback" | "bbr_sticky_rtprop" => {
                Ok(Cc::Bbr(bbr::Bbr::from_params(p, seed)?))
            }
            "bbr2" => Ok(Cc::Bbr3(bbr3::Bbr3::from_params(p, seed, bbr3::Bbr3Config::v2alpha())?)),
            "bbr3" => Ok(Cc::Bbr3(bbr3::Bbr3::from_params(p, seed, bbr3::Bbr3Config::default())?)),
            "vegas" => Ok(Cc::Vegas(vegas::Vegas::from_params(p)?)),
            "dctcp" => Ok(Cc::Dctcp(dctcp::Dctcp::from_params(p)?)),
            _ => Err(CcError(format!(
                "unknown congestion control '{name}'; allowed: {}",
                ALGORITHMS.join(", ")
            ))),
        }
    }

    pub fn name(&self) -> &'static str {
        dispatch!(self, c => c.name())
    }
    /// `.init`: called once when the connection starts.
    pub fn init(&mut self, conn: &mut Conn) {
        dispatch!(self, c => c.init(conn))
    }
    /// `.ssthresh`: the new slow-start threshold on loss (entering Recovery or Loss).
    pub fn ssthresh(&mut self, conn: &Conn) -> u32 {
        dispatch!(self, c => c.ssthresh(conn))
    }
    /// `.cong_avoid`: grow cwnd on an ACK outside recovery (loss-based algorithms).
    pub fn cong_avoid(&mut self, conn: &mut Conn, acked: u32) {
        dispatch!(self, c => c.cong_avoid(conn, acked))
    }
    /// `.set_state`: the sender's `ca_state` is about to change to `new`.
    pub fn set_state(&mut self, conn: &mut Conn, new: CaState) {
        dispatch!(self, c => c.set_state(conn, new))
    }
    /// `.cwnd_event`.
    pub fn cwnd_event(&mut self, conn: &mut Conn, ev: CwndEvent) {
        dispatch!(self, c => c.cwnd_event(conn, ev))
    }
    /// `.in_ack_event`: every ACK, with whether it carried ECE (`CA_ACK_ECE`).
    pub fn in_ack_event(&mut self, conn: &mut Conn, ece: bool) {
        dispatch!(self, c => c.in_ack_event(conn, ece))
    }
    /// `TCP_CONG_NEEDS_ECN`: the algorithm requires ECN, and every data
    /// packet — retransmissions too — is sent ECT (`tcp_ecn_send`).
    pub fn needs_ecn(&self) -> bool {
        dispatch!(self, c => c.needs_ecn())
    }
    /// `.pkts_acked`: per-ACK RTT sample (HyStart, Vegas).
    pub fn pkts_acked(&mut self, conn: &mut Conn, sample: &AckSample) {
        dispatch!(self, c => c.pkts_acked(conn, sample))
    }
    /// `.undo_cwnd`: cwnd to restore after a spurious loss signal.
    pub fn undo_cwnd(&mut self, conn: &Conn) -> u32 {
        dispatch!(self, c => c.undo_cwnd(conn))
    }
    /// Does this algorithm implement `.cong_control` (and so take over cwnd
    /// and pacing on every ACK, bypassing PRR and `cong_avoid`)? BBR does.
    pub fn has_cong_control(&self) -> bool {
        dispatch!(self, c => c.has_cong_control())
    }
    /// `.cong_control`: called on every ACK with the rate sample.
    pub fn cong_control(&mut self, conn: &mut Conn, rs: &RateSample) {
        dispatch!(self, c => c.cong_control(conn, rs))
    }
    /// Where the active algorithm's state lies in this value: (offset from
    /// `self`, bytes). Fixed for the value's life (its algorithm never
    /// changes, and the offset survives moves), so the engine computes it once
    /// per flow and hints the lines without reading the variant's tag — a
    /// read that, with thousands of flows, is a cache miss the hint was meant
    /// to hide (`Sim::prefetch`).
    pub fn state_span(&self) -> (u16, u16) {
        let base = self as *const Cc as usize;
        let (at, len) = dispatch!(self, c => (c as *const _ as *const u8 as usize - base, std::mem::size_of_val(c)));
        (at as u16, len as u16)
    }
    /// Internal state for the record.
    pub fn snapshot(&self, conn: &Conn) -> Snapshot {
        dispatch!(self, c => c.snapshot(conn))
    }
    /// Names of the values `Snapshot::state` takes, indexed by code.
    pub fn state_names(&self) -> &'static [&'static str] {
        dispatch!(self, c => c.state_names())
    }
}

/// The hooks each algorithm implements; defaults are Linux's when a module
/// leaves the hook NULL.
pub trait CongestionOps {
    fn name(&self) -> &'static str;
    fn init(&mut self, _conn: &mut Conn) {}
    fn ssthresh(&mut self, conn: &Conn) -> u32;
    fn cong_avoid(&mut self, _conn: &mut Conn, _acked: u32) {}
    fn set_state(&mut self, _conn: &mut Conn, _new: CaState) {}
    fn cwnd_event(&mut self, _conn: &mut Conn, _ev: CwndEvent) {}
    fn pkts_acked(&mut self, _conn: &mut Conn, _sample: &AckSample) {}
    fn in_ack_event(&mut self, _conn: &mut Conn, _ece: bool) {}
    fn needs_ecn(&self) -> bool {
        false
    }
    /// Linux's default `tcp_undo_cwnd`-less behaviour: max(cwnd, prior_cwnd) is
    /// handled by the sender; modules return what they want restored.
    fn undo_cwnd(&mut self, conn: &Conn) -> u32 {
        conn.cwnd
    }
    fn has_cong_control(&self) -> bool {
        false
    }
    fn cong_control(&mut self, _conn: &mut Conn, _rs: &RateSample) {}
    fn snapshot(&self, conn: &Conn) -> Snapshot;
    fn state_names(&self) -> &'static [&'static str];
}

/// Linux `tcp_slow_start()` (net/ipv4/tcp_cong.c): grow by `acked` up to
/// ssthresh; returns the ACKed packets left over for congestion avoidance.
pub fn tcp_slow_start(conn: &mut Conn, acked: u32) -> u32 {
    let cwnd = (conn.cwnd.saturating_add(acked)).min(conn.ssthresh);
    let left = acked - (cwnd - conn.cwnd).min(acked);
    conn.cwnd = cwnd.min(conn.cwnd_clamp);
    left
}

/// Linux `tcp_reno_cong_avoid()` (net/ipv4/tcp_cong.c): slow start below
/// ssthresh, then +1 packet per cwnd ACKed; nothing when not cwnd-limited.
/// Reno uses it as is; Vegas falls back to it.
pub fn tcp_reno_cong_avoid(conn: &mut Conn, cwnd_cnt: &mut u32, acked: u32) {
    if !conn.is_cwnd_limited {
        return;
    }
    let mut acked = acked;
    if conn.in_slow_start() {
        acked = tcp_slow_start(conn, acked);
        if acked == 0 {
            return;
        }
    }
    let w = conn.cwnd;
    tcp_cong_avoid_ai(conn, cwnd_cnt, w, acked);
}

/// Linux `tcp_cong_avoid_ai()` (net/ipv4/tcp_cong.c): +1 packet per `w`
/// packets acked; `cwnd_cnt` is the module's accumulator.
pub fn tcp_cong_avoid_ai(conn: &mut Conn, cwnd_cnt: &mut u32, w: u32, acked: u32) {
    // If credits accumulated at a higher w, apply them gently now.
    if *cwnd_cnt >= w {
        *cwnd_cnt = 0;
        conn.cwnd += 1;
    }
    *cwnd_cnt += acked;
    if *cwnd_cnt >= w {
        let delta = *cwnd_cnt / w;
        *cwnd_cnt -= delta * w;
        conn.cwnd += delta;
    }
    conn.cwnd = conn.cwnd.min(conn.cwnd_clamp);
}

#[cfg(test)]
mod defaults_tests {
    use super::{defaults, parameters, ALGORITHMS};

    #[test]
    fn defaults_name_every_parameter_once_with_the_value_used() {
        for name in ALGORITHMS {
            let d = defaults(name).expect(name);
            let mut got: Vec<&str> = d.iter().map(|(k, _)| k.as_str()).collect();
            let mut want = parameters(name).unwrap().to_vec();
            got.sort_unstable();
            want.sort_unstable();
            assert_eq!(got, want, "{name}");
        }
        let cubic = defaults("cubic").unwrap();
        assert!(cubic.contains(&("beta".to_string(), 717.0 / 1024.0)));
        let shallow = defaults("bbr_shallow").unwrap();
        assert!(shallow.contains(&("cwnd_gain".to_string(), 1.5)));
        assert!(defaults("nope").is_none());
    }
}

#[cfg(test)]
mod span_tests {
    use super::{Cc, ALGORITHMS};
    use std::collections::BTreeMap;

    /// `state_span` names the active algorithm's own bytes: inside the `Cc`
    /// value, as long as that algorithm's type, and the same after a move.
    #[test]
    fn state_span_lies_within_the_value_and_survives_a_move() {
        for name in ALGORITHMS {
            let cc = Cc::new(name, &BTreeMap::new(), 1).expect(name);
            let (at, len) = cc.state_span();
            assert!(at as usize + len as usize <= std::mem::size_of::<Cc>(), "{name}: {at}+{len}");
            let want = match &cc {
                Cc::Reno(c) => std::mem::size_of_val(c),
                Cc::Cubic(c) => std::mem::size_of_val(c),
                Cc::Bbr(c) => std::mem::size_of_val(c),
                Cc::Bbr3(c) => std::mem::size_of_val(c),
                Cc::Vegas(c) => std::mem::size_of_val(c),
                Cc::Dctcp(c) => std::mem::size_of_val(c),
            };
            assert_eq!(len as usize, want, "{name}");
            let moved = vec![cc];
            assert_eq!(moved[0].state_span(), (at, len), "{name}");
        }
    }
}
