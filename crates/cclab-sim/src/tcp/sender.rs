//! The TCP sender: SACK scoreboard, RACK-TLP loss detection (RFC 8985),
//! RTO (RFC 6298, Linux constants), PRR (RFC 6937, Linux's form), pacing,
//! delivery-rate sampling (draft-cheng-iccrg-delivery-rate-estimation, Linux
//! tcp_rate.c) and the congestion-control hooks — written once, shared by
//! every algorithm.
//!
//! Sequence numbers count segments. Per-ACK work is O(newly delivered +
//! newly lost + log(holes)): SACK blocks go through a [`RangeSet`] that
//! yields only newly covered segments, and RACK walks a transmit-ordered
//! list of un-SACKed segments that stops at the first one sent after the
//! most recently delivered one (as Linux's `tsorted_sent_queue`).
//!
//! The connection is established before the application writes (as the
//! kernel backend connects every flow before the experiment starts): the
//! handshake gives the first RTT sample (srtt, min_rtt, RTO — so BBR's
//! initial pacing rate and its min_rtt clock start from it) and the
//! receiver's initial window; data starts at the flow's start time with
//! IW 10. The advertised receive window (`Ack::wnd_end`) limits new data and
//! retransmissions beyond the window, as `tcp_snd_wnd_test` and
//! `__tcp_retransmit_skb` do; data echoes the receiver's timestamps (TSecr).
//!
//! Without SACK (`set_sack(false)`, Linux `tcp_is_reno`) the sender
//! recovers as Linux does then — NewReno (RFC 6582): duplicate ACKs count as
//! delivered segments (`tcp_add_reno_sack`), the third marks the head lost
//! (`tcp_newreno_mark_lost`, `net.ipv4.tcp_reordering` = 3), each partial ACK
//! in Recovery marks the next head lost, Recovery is held until something
//! above `high_seq` is acknowledged (RFC 6582 §3.2 step 4, Linux
//! `tcp_try_undo_recovery`), no TLP (RFC 8985 §7 needs SACK) and no RACK; an
//! ACK that covers retransmitted data gives no RTT sample (Linux
//! `FLAG_RETRANS_DATA_ACKED`; Linux then falls back to the timestamp echo,
//! which this model does not carry). Linux's reordering detection on more
//! duplicate ACKs than holes (`tcp_check_reno_reordering`) is only the cap on
//! `sacked_out`; nothing here reorders.
//!
//! Deviations from Linux, by design: no TSO/GSO (one segment per packet;
//! pacing counts payload bytes); no undo of spurious reductions (no
//! DSACK/F-RTO); no zero-window probes (the receiver's reader never stalls,
//! so a closed window always reopens with an ACK); RTT samples come from send
//! times (like TCP timestamps) except for retransmitted segments (Karn).

use super::ranges::RangeSet;
use super::receiver::Ack;
use super::rtt::RttEstimator;
use crate::cc::{AckSample, CaState, Cc, Conn, CwndEvent, RateSample, INFINITE_SSTHRESH};
use crate::time::{Dur, Time};
use std::collections::{BTreeSet, VecDeque};

const NONE: u32 = u32::MAX;
/// Linux's initial `tp->app_limited = ~0U`: cleared by the first rate sample.
const APP_LIMITED_UNTIL_FIRST_ACK: u64 = u64::MAX;

const F_SACKED: u8 = 1;
const F_LOST: u8 = 2;
/// Currently retransmitted and not (yet) deemed lost again (`TCPCB_SACKED_RETRANS`).
const F_RETRANS: u8 = 4;
/// Ever retransmitted (`TCPCB_EVER_RETRANS`).
const F_EVER_RETRANS: u8 = 8;
const F_APP_LIMITED: u8 = 16;
/// Already used for a rate sample (Linux zeroes `tx.delivered_mstamp`).
const F_SAMPLED: u8 = 32;
/// The last segment of the skb it was (re)sent in (`Sender::end_skb`).
const F_SKB_END: u8 = 64;
/// `net.ipv4.tcp_reordering` default (`TCP_FASTRETRANS_THRESH`, include/net/tcp.h):
/// duplicate ACKs that mark the head lost when SACK is off.
const REORDERING: u32 = 3;

/// Per-segment state (Linux keeps this in `tcp_skb_cb`).
#[derive(Clone, Debug)]
struct Seg {
    tx_time: Time,
    /// `tx.first_tx_mstamp`: start of the send window when this was sent.
    first_tx: Time,
    /// `tx.delivered_mstamp`.
    delivered_time: Time,
    /// `tx.delivered`.
    delivered: u64,
    /// `tp->lost` at send (BBRv3's `tx.lost`).
    lost: u64,
    /// `tp->delivered_ce` at send (`tx.delivered_ce`).
    delivered_ce: u64,
    /// In flight just after this was sent (BBRv3's `tx.in_flight`).
    in_flight: u32,
    /// Transmit-ordered list links (absolute segment numbers; the head's
    /// `prev` is stale, see `ts_unlink`).
    prev: u32,
    next: u32,
    flags: u8,
}

/// `sk_gso_max_size` as TCP uses it (`sk_setup_caps` subtracts `MAX_TCP_HEADER + 1`
/// from the device's 64 KB `gso_max_size`): the largest GSO skb, in bytes.
const GSO_MAX_BYTES: u64 = 65536 - 1 - 320;

/// A window (segments) as the sender sees it behind the scenario's rwnd limit
/// (the emulator rewrites the advertised window on the wire).
fn clamp_to_rwnd(wnd: u32, rwnd_segs: Option<u32>) -> u32 {
    rwnd_segs.map_or(wnd, |w| wnd.min(w))
}

/// Linux paces from the connection's 10th data segment on
/// (`tcp_update_skb_after_send`, net/ipv4/tcp_output.c: `data_segs_out >= 10`).
const UNPACED_FIRST_SEGS: u64 = 10;

/// The pacing of the skb being sent (`Sender::skb_pace`).
#[derive(Copy, Clone, Debug, Default)]
struct SkbPace {
    credit_ns: u64,
    len_ns: u64,
    applied_ns: u64,
}

/// Which job the single retransmit timer has now (Linux `icsk_pending`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum XmitTimer {
    Rto,
    /// Tail loss probe (RFC 8985 §7).
    Tlp,
    /// RACK reordering timeout (RFC 8985 §6.3).
    Reo,
}

/// RACK state (RFC 8985 §6.1; Linux `tp->rack`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Rack {
    /// Send time of the most recently sent segment that has been delivered.
    pub(crate) xmit_time: Time,
    end_seq: u32,
    /// The RTT of the last segment delivered (not of `xmit_time`'s).
    pub(crate) rtt: Dur,
    advanced: bool,
}

/// A segment the sender wants on the wire.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Transmit {
    pub seq: u32,
    pub payload: u32,
    pub retrans: bool,
    /// TSecr: the timestamp of the latest ACK (ms), echoed to the receiver.
    pub tsecr_ms: u32,
    /// Sent ECN-capable (ECT(0)): `tcp_ecn_send` marks new data of an ECN
    /// connection ECT, retransmissions only when the algorithm needs ECN
    /// (RFC 3168 §6.1.5).
    pub ect: bool,
    /// The CWR flag (RFC 3168 §6.1.2): the first new data segment after a
    /// window reduction (`TCP_ECN_QUEUE_CWR`).
    pub cwr: bool,
    /// The PSH flag: the last segment of an skb of several segments, or of
    /// one that ends a write-queue skb (see `end_piece`).
    pub psh: bool,
}

/// What the three-way handshake left the sender with.
#[derive(Copy, Clone, Debug)]
pub struct Handshake {
    /// The SYN's RTT sample (`None`: none, as when the SYN was retransmitted).
    pub rtt: Option<Dur>,
    /// The window the SYN-ACK offered, as a right edge in segments.
    pub wnd_end: u32,
}

/// Counters for the record.
#[derive(Clone, Debug, Default)]
pub struct SenderStats {
    pub sent_bytes: u64,
    pub sent_packets: u64,
    pub retrans_segs: u64,
    pub lost_segs: u64,
    pub rto_count: u64,
    pub tlp_count: u64,
    /// RTT samples taken since the last record sample.
    pub rtt_sum_ns: u64,
    pub rtt_n: u64,
}

/// The fields are laid out by use (`#[repr(C)]`, see `prefetch`): first
/// what the simulator's timer bookkeeping reads after every received
/// segment (`next_deadline`, `started`), then what every ACK and every sent
/// segment touch, then the algorithm, then the rest — so that with
/// thousands of flows an event costs a few cache lines, prefetched together.
#[repr(C)]
pub struct Sender {
    // ---- read for every segment the receiver gets (`Sim::rearm`) ----
    /// The retransmit timer: deadline and job.
    pub xmit_timer: Option<(Time, XmitTimer)>,
    /// Earliest time the pacer lets the next segment go (`tcp_wstamp_ns`).
    pub pace_next: Time,
    /// The application stops writing at this time.
    stop_at: Option<Time>,
    /// The application starts writing at this time.
    app_start: Time,
    /// No new data after this segment number (set when the app stops).
    app_end: Option<u32>,
    pub snd_nxt: u32,
    /// Whether a send attempt is waiting on the pacer.
    pub pacing_blocked: bool,
    // ---- every ACK, every segment sent ----
    pub conn: Conn,
    pub rtt: RttEstimator,
    pub stats: SenderStats,
    segs: VecDeque<Seg>,
    sacked: RangeSet,
    /// Lost and not yet retransmitted, by sequence (the retransmit queue).
    retx: BTreeSet<u32>,
    pub(crate) rack: Rack,
    /// Linux `tp->first_tx_mstamp` / `delivered_mstamp` live in conn / here.
    first_tx: Time,
    /// (rate, payload, time): the last pacing interval computed.
    pace_cache: (u64, u32, Dur),
    /// The skb being paced (`tcp_update_skb_after_send`): how late it
    /// started against `pace_next` (the OS-jitter credit), its segments'
    /// pacing time so far, and how much of that `pace_next` has taken.
    skb_pace: SkbPace,
    /// SACK blocks of the previous ACK (Linux `recv_sack_cache`): a block
    /// repeated unchanged is already fully tagged and is skipped.
    sack_cache: [(u32, u32); super::receiver::MAX_SACK_BLOCKS],
    /// Total segments the application writes (`None`: unlimited).
    total_segs: Option<u32>,
    rwnd_segs: Option<u32>,
    /// TLP outstanding: the snd_nxt when the probe was sent (`tlp_high_seq`).
    tlp_high_seq: Option<u32>,
    pub snd_una: u32,
    /// Right edge of the peer's advertised window (segments, `snd_una + snd_wnd`).
    wnd_end: u32,
    /// `tp->max_window`: the largest window the peer offered (segments,
    /// clamped by the scenario's rwnd as the emulator clamps it on the wire).
    max_window: u32,
    /// End (segment number, exclusive) of the write-queue skb that holds
    /// `snd_nxt` (`tcp_send_head`): the application's writes fill skbs of
    /// `size_goal` segments, which `try_send` sends in pieces of `tso_segs`.
    wq_end: u32,
    /// Segments `tcp_grow_skb` moved from the next write-queue skb into the
    /// one ending at `wq_end` (that next skb starts at `wq_end` and is this
    /// much shorter than `size_goal`).
    wq_taken: u32,
    /// `tp->rx_opt.ts_recent`: the peer's latest TSval (ms).
    ts_recent: u32,
    ts_head: u32,
    ts_tail: u32,
    mss: u32,
    header: u32,
    /// Payload bytes of the last segment of a finite flow.
    last_payload: u32,
    /// Max packets_out in the current window (Linux `max_packets_out`, for is_cwnd_limited).
    max_packets_out: u32,
    cwnd_limited_seq: u32,
    /// RACK reordering window multiplier (`rack.reo_wnd_steps`).
    pub(crate) high_seq: u32,
    prior_cwnd: u32,
    prr_delivered: u32,
    prr_out: u32,
    /// ECN negotiated (`TCP_ECN_OK`): the flow's `ecn`.
    ecn_ok: bool,
    /// `TCP_ECN_QUEUE_CWR`: the next new data segment carries CWR.
    queue_cwr: bool,
    /// SACK negotiated (`tcp_is_sack`); without it NewReno recovery
    /// (`tcp_is_reno`). Read by every ACK, so here rather than with the rest.
    sack_ok: bool,
    // ---- the algorithm (CUBIC's state is its first ~130 bytes) ----
    pub cc: Cc,
    // ---- the rest ----
    scratch: Vec<(u32, u32)>,
    /// Window reductions entered on ECE (`tcp_enter_cwr`), for tests and the record.
    pub stats_cwr: u64,
    /// The last ACK's rate sample (tests inspect it).
    #[cfg(test)]
    pub last_rs: RateSample,
}

/// Per-ACK scratch results.
#[derive(Default)]
struct AckWork {
    newly_delivered: u32,
    newly_lost: u32,
    una_advanced: bool,
    /// For the rate sample: the most recently sent newly delivered segment.
    rs: RateSample,
    rs_valid: bool,
    rs_tx_time: Time,
    rs_first_tx: Time,
    rs_prior_time: Time,
    rs_prior_delivered_ce: u64,
    /// RTT samples: oldest (for srtt, Linux seq_rtt) and newest (ca_rtt).
    oldest_rtt: Option<Dur>,
    newest_rtt: Option<Dur>,
    newest_tx: Time,
}

impl Sender {
    #[allow(clippy::too_many_arguments)]
    /// A connection established at `now` by `handshake`; the application
    /// writes from `app_start` until `stop_at` or `bytes`.
    pub fn new(
        now: Time,
        cc: Cc,
        mss: u32,
        header: u32,
        bytes: Option<u64>,
        app_start: Time,
        stop_at: Option<Time>,
        rwnd_bytes: Option<u64>,
        handshake: Handshake,
    ) -> Sender {
        let (total_segs, last_payload) = match bytes {
            Some(b) => {
                let n = b.div_ceil(mss as u64) as u32;
                (Some(n), (b - (n as u64 - 1) * mss as u64) as u32)
            }
            None => (None, mss),
        };
        let rwnd_segs = rwnd_bytes.map(|b| (b / mss as u64).max(1) as u32);
        let mut s = Sender {
            conn: Conn::new(now, mss),
            cc,
            rtt: RttEstimator::default(),
            stats: SenderStats::default(),
            mss,
            header,
            total_segs,
            last_payload,
            stop_at,
            app_end: None,
            rwnd_segs,
            wnd_end: handshake.wnd_end,
            max_window: clamp_to_rwnd(handshake.wnd_end, rwnd_segs),
            wq_end: 0,
            wq_taken: 0,
            ts_recent: 0,
            app_start,
            snd_una: 0,
            snd_nxt: 0,
            segs: VecDeque::new(),
            sacked: RangeSet::default(),
            retx: BTreeSet::new(),
            ts_head: NONE,
            ts_tail: NONE,
            rack: Rack::default(),
            high_seq: 0,
            prior_cwnd: 0,
            prr_delivered: 0,
            prr_out: 0,
            first_tx: now,
            tlp_high_seq: None,
            xmit_timer: None,
            pace_next: now,
            pacing_blocked: false,
            pace_cache: (0, 0, Dur::ZERO),
            skb_pace: SkbPace::default(),
            max_packets_out: 0,
            cwnd_limited_seq: 0,
            scratch: Vec::new(),
            sack_cache: [(0, 0); super::receiver::MAX_SACK_BLOCKS],
            ecn_ok: false,
            queue_cwr: false,
            stats_cwr: 0,
            sack_ok: true,
            #[cfg(test)]
            last_rs: RateSample::default(),
        };
        // tcp_ack for the SYN-ACK: the handshake's RTT sample (tcp_ack_update_rtt)
        // and the SYN counted as delivered; tcp_init_sock marks the connection
        // app-limited until its first delivery (`tp->app_limited = ~0U`).
        if let Some(r) = handshake.rtt {
            s.rtt.on_sample(r);
        }
        s.conn.srtt = s.rtt.srtt_or_zero();
        s.conn.min_rtt = s.rtt.min_rtt;
        s.conn.delivered = 1;
        s.conn.app_limited = APP_LIMITED_UNTIL_FIRST_ACK;
        s.cc.init(&mut s.conn);
        s
    }

    /// The connection negotiated ECN (RFC 3168 §6.1.1): data is sent ECT and
    /// ECE on ACKs reduces the window once per window of data.
    pub fn set_ecn(&mut self, on: bool) {
        self.ecn_ok = on;
        self.conn.ecn_ok = on;
    }

    /// Whether the connection negotiated SACK (Linux `net.ipv4.tcp_sack`,
    /// default on). Off: duplicate-ACK counting and NewReno recovery.
    pub fn set_sack(&mut self, on: bool) {
        self.sack_ok = on;
    }

    // ---- bookkeeping helpers -------------------------------------------------

    #[inline]
    fn seg(&self, seq: u32) -> &Seg {
        &self.segs[(seq - self.snd_una) as usize]
    }
    #[inline]
    fn seg_mut(&mut self, seq: u32) -> &mut Seg {
        let i = (seq - self.snd_una) as usize;
        &mut self.segs[i]
    }
    #[inline]
    fn payload_of(&self, seq: u32) -> u32 {
        match self.total_segs {
            Some(n) if seq + 1 == n => self.last_payload,
            _ => self.mss,
        }
    }
    /// `tcp_packets_in_flight`.
    #[inline]
    pub fn in_flight(&self) -> u32 {
        let c = &self.conn;
        c.packets_out - (c.sacked_out + c.lost_out) + c.retrans_out
    }
    /// Take `seq` out of the transmit-ordered list (if it is in it). The
    /// head's `prev` is never read: when the head leaves, its successor
    /// becomes the head without being touched (a cumulative ACK then reads
    /// only the segments it acknowledges — with thousands of flows the next
    /// one is a cache miss of its own).
    fn ts_unlink(&mut self, seq: u32) {
        let (p, n) = {
            let s = self.seg(seq);
            (s.prev, s.next)
        };
        if self.ts_head == seq {
            self.ts_head = n;
            if n == NONE {
                self.ts_tail = NONE;
            }
        } else {
            if p == NONE {
                return; // not linked: every other linked segment has a predecessor
            }
            self.seg_mut(p).next = n;
            if n != NONE {
                self.seg_mut(n).prev = p;
            } else {
                self.ts_tail = p;
            }
        }
        let s = self.seg_mut(seq);
        s.prev = NONE;
        s.next = NONE;
    }
    fn ts_push_tail(&mut self, seq: u32) {
        let tail = self.ts_tail;
        {
            let s = self.seg_mut(seq);
            s.prev = tail;
            s.next = NONE;
        }
        if tail != NONE {
            self.seg_mut(tail).next = seq;
        } else {
            self.ts_head = seq;
        }
        self.ts_tail = seq;
    }

    /// Right edge of what the peer's window (and the scenario's rwnd limit) allows.
    #[inline]
    fn wnd_limit(&self) -> u32 {
        match self.rwnd_segs {
            Some(w) => self.wnd_end.min(self.snd_una + w),
            None => self.wnd_end,
        }
    }

    /// Has the application started writing?
    pub fn started(&self, now: Time) -> bool {
        now >= self.app_start
    }

    /// Segments the application has made available so far.
    fn app_limit(&self) -> u32 {
        let mut lim = self.total_segs.unwrap_or(u32::MAX);
        if let Some(e) = self.app_end {
            lim = lim.min(e);
        }
        lim
    }

    /// Has the application written everything and has it all been acknowledged?
    pub fn is_finished(&self) -> bool {
        let lim = self.app_limit();
        lim != u32::MAX && self.snd_una >= lim
    }

    /// Bytes the receiver needs to have to be complete (finite flows).
    pub fn total_bytes(&self) -> Option<u64> {
        self.total_segs.map(|n| (n as u64 - 1) * self.mss as u64 + self.last_payload as u64)
    }

    // ---- sending ---------------------------------------------------------------

    /// Called when the application's stop time passes.
    pub fn stop_app(&mut self, now: Time) {
        if self.stop_at.is_some_and(|t| now >= t) && self.app_end.is_none() {
            self.app_end = Some(self.snd_nxt);
        }
    }

    pub fn stop_time(&self) -> Option<Time> {
        self.stop_at
    }

    /// Send what cwnd, rwnd, the pacer and the application allow. Segments go
    /// into `out`. (Linux `tcp_write_xmit` + `tcp_xmit_retransmit_queue`.)
    pub fn try_send(&mut self, now: Time, out: &mut Vec<Transmit>) {
        if now < self.app_start {
            return;
        }
        self.conn.now = now;
        self.stop_app(now);
        self.pacing_blocked = false;
        // Linux sends skb by skb, and paces whole skbs: one pacing slot lets
        // one skb leave (tcp_write_xmit and tcp_xmit_retransmit_queue both
        // stop at `tcp_pacing_check` after each). An skb is either new data
        // (a GSO skb of up to `tso_segs()` segments) or a retransmission of
        // lost segments of one earlier skb — never both.
        // Segments the open skb may still take (0: none open).
        let mut skb_left = 0u32;
        // The open skb retransmits (else: new data).
        let mut skb_retrans = false;
        // The last segment sent in the open skb.
        let mut skb_last = NONE;
        // The first segment of the open skb, and where the write-queue skb it
        // is cut from (new data) ends.
        let mut skb_first = NONE;
        let mut psh_end = NONE;
        loop {
            if self.in_flight() >= self.conn.cwnd {
                self.note_cwnd_limited();
                break;
            }
            let wnd = self.wnd_limit();
            if skb_left > 0 {
                // The open skb goes on: a retransmission with the next lost
                // segment of the same skb, new data with the next segment.
                let next = skb_last + 1;
                let goes_on = if skb_retrans {
                    self.retx.iter().next() == Some(&next) && next < wnd
                } else {
                    self.retx.is_empty() && next == self.snd_nxt && next < self.app_limit() && next < wnd
                };
                if !goes_on {
                    self.end_piece(out, skb_first, skb_last, skb_retrans, psh_end);
                    skb_left = 0;
                }
            }
            if skb_left == 0 {
                // A new skb, in its own pacing slot (tcp_pacing_check).
                let paced = self.conn.pacing_rate.is_some();
                if paced && now < self.pace_next {
                    self.pacing_blocked = self.has_something_to_send();
                    break;
                }
                // A retransmission first (tcp_xmit_retransmit_queue runs
                // before tcp_write_xmit), else new data.
                if let Some(&seq) = self.retx.iter().next() {
                    // __tcp_retransmit_skb: not beyond the window, except the head.
                    if seq >= wnd && seq != self.snd_una {
                        break;
                    }
                    // tcp_xmit_retransmit_queue: at most `segs` = min(cwnd −
                    // in flight, tcp_tso_segs) of the skb (tcp_fragment cuts
                    // the rest off into an skb of its own).
                    skb_retrans = true;
                    skb_left = self.tso_segs().min(self.conn.cwnd - self.in_flight());
                } else if self.snd_nxt < self.app_limit() && self.snd_nxt < wnd {
                    // tcp_write_xmit, one skb: the head of the write queue
                    // (an skb of `size_goal` segments, or what is left of
                    // one) may be held back (tcp_tso_should_defer, when it
                    // has more than one segment), else it leaves cut to
                    // what cwnd and the TSO size allow (tcp_cwnd_test,
                    // tcp_mss_split_point, tso_fragment: the rest stays
                    // at the head, an skb of its own).
                    let (mut skb_len, mut is_tail) = self.write_queue_head();
                    psh_end = self.snd_nxt + skb_len;
                    let max_segs = self.tso_segs();
                    // tcp_write_xmit (Linux ≥ 6.10, "tcp: try to send bigger
                    // TSO packets"): a head skb shorter than the cwnd quota
                    // (tcp_cwnd_test, at most max_segs) takes the missing
                    // segments from the next write-queue skb (tcp_grow_skb)
                    // before the TSO and Nagle tests — so the rest of a
                    // write-queue skb does not leave as a short skb of its own.
                    let cwnd_room = self.conn.cwnd - self.in_flight();
                    let quota = cwnd_room.min((self.conn.cwnd / 2).max(1)).min(max_segs);
                    if !is_tail && skb_len < quota {
                        skb_len += self.grow_head_skb(quota - skb_len);
                        // it may now end where the application's data does
                        is_tail = self.wq_end >= self.app_limit();
                    }
                    if skb_len > 1 && self.tso_should_defer(now, max_segs, skb_len, is_tail, wnd) {
                        break;
                    }
                    skb_retrans = false;
                    skb_left = skb_len.min(max_segs).min(cwnd_room).min((self.conn.cwnd / 2).max(1)).max(1);
                } else {
                    if self.snd_nxt >= self.app_limit() {
                        // Nothing to send: the application limits us.
                        self.check_app_limited();
                    }
                    break;
                }
                if paced {
                    self.begin_paced_skb(now);
                }
                skb_first = NONE; // set by its first segment below
            }
            let seq = if skb_retrans { *self.retx.iter().next().unwrap() } else { self.snd_nxt };
            if skb_first == NONE {
                skb_first = seq;
            }
            out.push(self.transmit(now, seq, skb_retrans));
            skb_last = seq;
            skb_left -= 1;
            if skb_retrans && self.seg(seq).flags & F_SKB_END != 0 {
                skb_left = 0; // the end of the skb it retransmits
            }
            if skb_left == 0 {
                self.end_piece(out, skb_first, seq, skb_retrans, psh_end);
            }
        }
        if skb_left > 0 {
            // cwnd ended the loop with the skb open: it is cut there (tcp_mss_split_point)
            self.end_piece(out, skb_first, skb_last, skb_retrans, psh_end);
        }
    }

    /// The skb being sent, `first` to `seq` (the last in `out`), ends. Its
    /// last segment carries PSH when the skb has more than one segment
    /// (`__tcp_transmit_skb`: "Force a PSH flag on all (GSO) packets to
    /// expedite GRO flush at receiver", since 2016) or, new data, when it
    /// reaches the end of its write-queue skb (`psh_end`): the sending
    /// application pushes every skb it fills (`tcp_push` → `tcp_mark_push`
    /// on the write queue's tail when a write returns or blocks for space —
    /// the kernel backend's writer writes 64 KiB at a time and blocks on
    /// TCP_NOTSENT_LOWAT, so nearly every skb is the tail at one of those
    /// moments). A piece cut off the front of a write-queue skb does not
    /// take that mark (`tso_fragment`: "PSH and FIN should only be set in
    /// the second packet"); one grown into the next skb keeps it
    /// (`tcp_grow_skb`).
    fn end_piece(&mut self, out: &mut [Transmit], first: u32, seq: u32, retrans: bool, psh_end: u32) {
        self.end_skb(seq);
        let gso = seq != first;
        if gso || (!retrans && seq.wrapping_add(1) >= psh_end) {
            if let Some(t) = out.last_mut() {
                debug_assert_eq!(t.seq, seq);
                t.psh = true;
            }
        }
    }

    /// Segment `seq` ends the skb it was (re)sent in: a later retransmission
    /// of what follows it is a separate skb (Linux's skbs in the retransmit
    /// queue are the skbs sent, split where a part was retransmitted alone).
    fn end_skb(&mut self, seq: u32) {
        self.seg_mut(seq).flags |= F_SKB_END;
    }

    /// A paced skb starts (`__tcp_transmit_skb`): `tcp_wstamp_ns` moves up
    /// to now, and how late the skb is against it becomes its credit.
    fn begin_paced_skb(&mut self, now: Time) {
        let prior = self.pace_next;
        self.pace_next = prior.max(now);
        self.skb_pace = SkbPace { credit_ns: (self.pace_next - prior).0, len_ns: 0, applied_ns: 0 };
    }

    /// Linux `tcp_tso_autosize` with `sk_pacing_shift` 10: about 1 ms of data
    /// at `sk_pacing_rate` per skb, at least `min_tso_segs` (2; BBR's
    /// `bbr_min_tso_segs` uses 1 below 1.2 Mbit/s), at most a 64 KB GSO skb.
    /// (The `tcp_tso_rtt_log` allowance only matters below ~0.5 ms min RTT.)
    pub fn tso_segs(&self) -> u32 {
        let rate = self.sk_pacing_rate_bps();
        let bytes = (rate / 8) >> 10;
        let min_segs = if self.conn.pacing_rate.is_some() && rate < 1_200_000 { 1 } else { 2 };
        ((bytes.min(GSO_MAX_BYTES) / self.mss as u64) as u32).max(min_segs)
    }

    /// Linux `tcp_xmit_size_goal`: the size of the skbs the application's
    /// writes fill (`tcp_sendmsg_locked`) — a whole GSO skb (64 KB, 45
    /// segments of 1448 B), bounded to half the largest window the peer has
    /// offered (`tcp_bound_to_half_wnd`: 22 segments behind the SYN-ACK's
    /// 65 160 B, until receive-buffer autotuning opens the window), in whole
    /// segments, at least one. `tcp_tso_autosize` cuts these skbs into the
    /// pieces that leave (`tso_segs`). The window here counts whole
    /// segments, so half of it is rounded down to a segment.
    pub fn size_goal(&self) -> u32 {
        let max_window = self.max_window as u64 * self.mss as u64;
        let cutoff = if max_window > 536 { max_window >> 1 } else { max_window };
        let bytes = if cutoff > 0 && GSO_MAX_BYTES > cutoff { cutoff.max(68 - self.header as u64) } else { GSO_MAX_BYTES };
        ((bytes / self.mss as u64) as u32).max(1)
    }

    /// The write-queue skb at the send head (`tcp_send_head`): how many of
    /// its segments are unsent, and whether it is the queue's tail — the
    /// skb the application still writes into (only when it has written
    /// nothing beyond it: a bulk application keeps unsent data queued ahead
    /// of the sender; the kernel backend's keeps 256 KiB or more,
    /// TCP_NOTSENT_LOWAT). A new skb of `size_goal` segments starts where
    /// the last one ended. (Linux sizes an skb when the application writes
    /// it, that much ahead of the sender; here when the sender reaches it —
    /// the two differ only while the peer's window still grows.)
    fn write_queue_head(&mut self) -> (u32, bool) {
        let app_limit = self.app_limit();
        if self.snd_nxt >= self.wq_end {
            self.wq_end = self.snd_nxt.saturating_add(self.next_skb_segs());
            self.wq_taken = 0;
        }
        let end = self.wq_end.min(app_limit);
        (end - self.snd_nxt, end >= app_limit)
    }

    /// Segments of the write-queue skb after the one ending at `wq_end`:
    /// `size_goal`, less what `grow_head_skb` took from it (at least one).
    fn next_skb_segs(&self) -> u32 {
        let goal = self.size_goal();
        goal - self.wq_taken.min(goal - 1)
    }

    /// Linux `tcp_grow_skb`: move up to `amount` segments from the front of
    /// the next write-queue skb (`wq_end` up to its end or the application's
    /// limit) into the head skb; a next skb left empty is freed and the head
    /// ends where it ended. Returns the segments moved.
    fn grow_head_skb(&mut self, amount: u32) -> u32 {
        let next_end = self.wq_end.saturating_add(self.next_skb_segs()).min(self.app_limit());
        let next_len = next_end.saturating_sub(self.wq_end);
        let n = amount.min(next_len);
        if n == next_len {
            self.wq_end = next_end;
            self.wq_taken = 0;
        } else {
            self.wq_end += n;
            self.wq_taken += n;
        }
        n
    }

    /// `sk_pacing_rate` (bit/s): the algorithm's own (BBR) or, for one that
    /// does not pace, what `tcp_update_pacing_rate` sets anyway — 200 % of
    /// cwnd·mss/srtt in slow start (below half of ssthresh), 120 % after
    /// (`tcp_pacing_ss_ratio`, `tcp_pacing_ca_ratio`). Linux sizes TSO/GSO
    /// skbs from it for every flow, paced or not.
    pub(crate) fn sk_pacing_rate_bps(&self) -> u64 {
        if let Some(r) = self.conn.pacing_rate {
            return r.0;
        }
        let c = &self.conn;
        let srtt = self.rtt.srtt_or_zero().0;
        if srtt == 0 {
            return u64::MAX;
        }
        let ratio = if c.cwnd < c.ssthresh / 2 { 200 } else { 120 };
        let packets = c.cwnd.max(c.packets_out) as u64;
        // mss·8·ratio·packets·1e9 / (100·srtt): in u64 when the product
        // fits (every window below ~8 000 packets), else in u128 — the same
        // quotient either way, without the u128 division on every skb.
        let per_packet = self.mss as u64 * 8 * ratio * 1_000_000_000;
        match per_packet.checked_mul(packets) {
            Some(num) => num / (100 * srtt),
            None => (per_packet as u128 * packets as u128 / (100 * srtt as u128)).min(u64::MAX as u128) as u64,
        }
    }

    /// Linux `tcp_tso_should_defer`: hold back the head skb (`skb_len`
    /// unsent segments) when cwnd or the receive window would cut it short,
    /// and more room is expected within ~1 ms (the oldest outstanding
    /// segment's ACK is due) — so TSO bursts stay whole and `in_flight` runs
    /// up to `tso_segs − 1` below cwnd. What the TSO size left of a
    /// write-queue skb is sent as soon as it fits ("Middle in queue won't
    /// get any more data, full sendable already?").
    fn tso_should_defer(&mut self, now: Time, max_segs: u32, skb_len: u32, is_tail: bool, wnd: u32) -> bool {
        let c = &self.conn;
        if matches!(c.ca_state, CaState::Recovery | CaState::Loss) {
            return false;
        }
        // "Avoid bursty behavior by allowing defer only if the last write was recent (1 ms)."
        let wstamp = if c.pacing_rate.is_some() { self.pace_next } else { c.lsndtime };
        if now > wstamp + Dur::from_ms(1) {
            return false;
        }
        let in_flight = self.in_flight();
        let cong_win = c.cwnd - in_flight;
        let send_win = wnd - self.snd_nxt;
        let limit = cong_win.min(send_win);
        if limit >= max_segs {
            return false;
        }
        if !is_tail && limit >= skb_len {
            return false;
        }
        // tcp_tso_win_divisor = 3: a third of the window is worth sending now.
        let chunk = (wnd - self.snd_una).min(c.cwnd) as u64 * self.mss as u64 / 3;
        if limit as u64 * self.mss as u64 >= chunk {
            return false;
        }
        if c.packets_out == 0 {
            return false;
        }
        let srtt = self.rtt.srtt_or_zero();
        let expected_ack = self.seg(self.snd_una).tx_time + srtt;
        let threshold = Dur(srtt.0 / 2).min(Dur::from_ms(1));
        if expected_ack > now + threshold {
            return false;
        }
        // Deferred: limited by cwnd if cwnd is the smaller window and does
        // not hold the skb. (Linux sends an skb with the FIN at once; the
        // application here, as the kernel backend's sender, never closes.)
        if cong_win < send_win && cong_win <= skb_len {
            self.note_cwnd_limited();
        }
        true
    }

    fn has_something_to_send(&self) -> bool {
        !self.retx.is_empty() || self.snd_nxt < self.app_limit()
    }

    /// Linux `tcp_rate_check_app_limited`: nothing more to send and the
    /// window is not full → samples until now+inflight are app-limited.
    fn check_app_limited(&mut self) {
        if self.in_flight() < self.conn.cwnd && self.retx.is_empty() {
            let mark = self.conn.delivered + self.in_flight() as u64;
            self.conn.app_limited = mark.max(1);
        }
    }

    fn note_cwnd_limited(&mut self) {
        self.conn.is_cwnd_limited = true;
        self.cwnd_limited_seq = self.snd_nxt;
    }

    /// Put one segment on the wire (new or retransmission).
    fn transmit(&mut self, now: Time, seq: u32, retrans: bool) -> Transmit {
        if self.conn.packets_out == 0 {
            // Linux tcp_rate_skb_sent: a new send window starts when nothing is in flight.
            self.first_tx = now;
            self.conn.delivered_time = now;
            self.cc.cwnd_event(&mut self.conn, CwndEvent::TxStart);
        }
        let payload = self.payload_of(seq);
        let in_recovery = matches!(self.conn.ca_state, CaState::Recovery | CaState::Cwr);
        let app_limited = self.conn.app_limited != 0;
        let template = Seg {
            tx_time: now,
            first_tx: self.first_tx,
            delivered_time: self.conn.delivered_time,
            delivered: self.conn.delivered,
            lost: self.conn.lost,
            delivered_ce: self.conn.delivered_ce,
            in_flight: 0,
            prev: NONE,
            next: NONE,
            flags: if app_limited { F_APP_LIMITED } else { 0 },
        };
        if retrans {
            self.retx.remove(&seq);
            self.ts_unlink(seq);
            let s = self.seg_mut(seq);
            let was_retrans = s.flags & F_RETRANS != 0;
            let keep = s.flags & (F_LOST | F_EVER_RETRANS | F_SKB_END);
            *s = Seg { flags: template.flags | keep | F_RETRANS | F_EVER_RETRANS, ..template };
            if !was_retrans {
                self.conn.retrans_out += 1;
            }
            self.stats.retrans_segs += 1;
        } else {
            debug_assert_eq!(seq, self.snd_nxt);
            self.segs.push_back(template);
            self.snd_nxt += 1;
            self.conn.packets_out += 1;
        }
        self.ts_push_tail(seq);
        let inflight = self.in_flight();
        self.seg_mut(seq).in_flight = inflight;
        if in_recovery {
            self.prr_out += 1;
        }
        self.max_packets_out = self.max_packets_out.max(self.conn.packets_out);
        if let Some(rate) = self.conn.pacing_rate {
            if rate.0 > 0 {
                // Linux EDT pacing (tcp_update_skb_after_send): the next skb
                // leaves len/rate after this one, less up to half of that as
                // credit for this skb's lateness ("OS jitter"); and the first
                // 10 data segments of the connection are not paced ("Original
                // sch_fq does not pace first 10 MSS": the skb that brings
                // `data_segs_out`, retransmissions included, to 10 is the
                // first one paced, its whole length).
                if self.pace_cache.0 != rate.0 || self.pace_cache.1 != payload {
                    self.pace_cache = (rate.0, payload, rate.tx_time(payload as u64));
                }
                let p = &mut self.skb_pace;
                p.len_ns += self.pace_cache.2 .0;
                if self.stats.sent_packets + 1 >= UNPACED_FIRST_SEGS {
                    let target = p.len_ns - (p.len_ns / 2).min(p.credit_ns);
                    self.pace_next = self.pace_next + Dur(target - p.applied_ns);
                    p.applied_ns = target;
                }
            }
        }
        self.conn.lsndtime = now;
        self.stats.sent_bytes += (payload + self.header) as u64;
        self.stats.sent_packets += 1;
        // tcp_ecn_send (net/ipv4/tcp_output.c): new data is ECT and takes the
        // queued CWR; a retransmission is not ECT unless the algorithm needs
        // ECN (INET_ECN_dontxmit), and never carries CWR.
        let ect = self.ecn_ok && (!retrans || self.cc.needs_ecn());
        let cwr = self.ecn_ok && !retrans && std::mem::take(&mut self.queue_cwr);
        Transmit { seq, payload, retrans, tsecr_ms: self.ts_recent, ect, cwr, psh: false }
    }

    /// Wire bytes of segment `seq`.
    pub fn wire_bytes(&self, t: &Transmit) -> u32 {
        t.payload + self.header
    }

    // ---- ACK processing ---------------------------------------------------------

    /// Process one ACK (Linux `tcp_ack`). New transmissions go to `out`.
    pub fn on_ack(&mut self, now: Time, ack: &Ack, out: &mut Vec<Transmit>) {
        self.conn.now = now;
        let prior_in_flight = self.in_flight();
        let mut w = AckWork::default();
        // tcp_ecn_rcv_ecn_echo: ECE counts only on an ECN connection (FLAG_ECE).
        let ece = self.ecn_ok && ack.ece;
        // tcp_ack_update_window / tcp_store_ts_recent (ACKs arrive in order here).
        let prior_wnd_end = self.wnd_end;
        self.wnd_end = ack.wnd_end;
        // tcp_ack_update_window: `if (nwin > tp->max_window) tp->max_window = nwin`.
        let nwin = ack.wnd_end.saturating_sub(ack.cum);
        self.max_window = self.max_window.max(clamp_to_rwnd(nwin, self.rwnd_segs));
        self.ts_recent = ack.tsval_ms;

        // 1. SACK blocks (tcp_sacktag_write_queue), in sequence order as
        // Linux sorts them before walking the retransmit queue.
        let mut blocks = ack.sacks;
        let blocks = &mut blocks[..ack.sacks().len()];
        if blocks.len() > 1 {
            blocks.sort_unstable_by_key(|b| b.0);
        }
        for &(s, e) in blocks.iter() {
            if self.sack_cache.contains(&(s, e)) {
                continue; // ranges only grow until cumulatively ACKed: nothing new here
            }
            let s = s.max(self.snd_una);
            let e = e.min(self.snd_nxt);
            if s >= e {
                continue;
            }
            let mut new = std::mem::take(&mut self.scratch);
            new.clear();
            self.sacked.insert(s, e, &mut new);
            for &(a, b) in &new {
                for seq in a..b {
                    self.deliver(now, seq, true, &mut w);
                }
            }
            self.scratch = new;
        }
        self.sack_cache = ack.sacks;
        // 2. Cumulative ACK (tcp_clean_rtx_queue).
        let mut acked = 0;
        let mut retrans_acked = false;
        if ack.cum > self.snd_una {
            let cum = ack.cum.min(self.snd_nxt);
            acked = cum - self.snd_una;
            for seq in self.snd_una..cum {
                let f = self.seg(seq).flags;
                retrans_acked |= f & F_EVER_RETRANS != 0;
                if f & F_SACKED == 0 {
                    self.deliver(now, seq, false, &mut w);
                } else {
                    self.conn.sacked_out -= 1;
                }
                self.ts_unlink(seq);
            }
            let n = cum - self.snd_una;
            self.segs.drain(..n as usize);
            self.conn.packets_out -= n;
            self.snd_una = cum;
            self.sacked.trim_below(cum);
            // Segments acked while queued for retransmission leave the queue.
            while let Some(&s) = self.retx.iter().next() {
                if s < cum {
                    self.retx.remove(&s);
                } else {
                    break;
                }
            }
            w.una_advanced = true;
            self.rtt.backoff = 0;
            if self.tlp_high_seq.is_some_and(|h| cum >= h) {
                self.tlp_high_seq = None;
            }
        }
        if !self.sack_ok {
            // Linux tcp_ack: an ACK of snd_una (an older one is ignored) that
            // neither advances it nor opens the window (FLAG_NOT_DUP clear) is
            // a duplicate.
            let dup = ack.cum == self.snd_una && acked == 0 && self.conn.packets_out > 0 && ack.wnd_end <= prior_wnd_end;
            self.reno_on_ack(acked, dup, retrans_acked, &mut w);
        }
        // tcp_count_delivered: packets this ACK delivered count as CE-echoed
        // when it carries ECE; then the algorithm's .in_ack_event (DCTCP's
        // α update). Linux calls the hook after SACK processing and before
        // the cumulative part is counted; here it sees both (one ACK's
        // difference in DCTCP's window boundary).
        if ece {
            self.conn.delivered_ce += w.newly_delivered as u64;
        }
        self.conn.snd_una = self.snd_una;
        self.conn.snd_nxt = self.snd_nxt;
        self.cc.in_ack_event(&mut self.conn, ece);
        // 3. RTT samples (tcp_ack_update_rtt): srtt from the oldest newly
        // delivered segment, min_rtt and the rate sample from the newest.
        if let Some(r) = w.oldest_rtt {
            self.rtt.on_sample(r);
            // min_rtt takes the newest-segment sample as Linux's ca_rtt does.
            if let Some(n) = w.newest_rtt {
                self.rtt.min_rtt = Some(self.rtt.min_rtt.map_or(n, |m| m.min(n)));
            }
            self.conn.srtt = self.rtt.srtt_or_zero();
            self.conn.min_rtt = self.rtt.min_rtt;
        }
        if let Some(n) = w.newest_rtt {
            self.stats.rtt_sum_ns += n.0;
            self.stats.rtt_n += 1;
        }
        // 4. tcp_fastretrans_alert, step D first: a Recovery, Loss or CWR
        // whose high_seq this ACK reached ends before losses are looked
        // for, so RACK then runs in the Open state, with its reordering
        // window of min_rtt/4 unless 3 segments are SACKed (tcp_rack_reo_wnd).
        self.end_reduction_if_acked();
        // 5. RACK loss detection (tcp_identify_packet_loss →
        // tcp_rack_mark_lost); without SACK, reno_on_ack has done NewReno's
        // (tcp_newreno_mark_lost).
        let reo_timeout = if self.sack_ok { self.rack_detect_loss(now, &mut w) } else { None };
        // The rest of the state machine (tcp_fastretrans_alert step E).
        self.update_ca_state(now, ece);
        // 6. Rate sample (tcp_rate_gen) and congestion control (tcp_cong_control).
        self.conn.in_flight = self.in_flight();
        let mut rs = self.rate_gen(now, &mut w, prior_in_flight);
        rs.is_ece = ece;
        if w.newly_delivered > 0 {
            let sample = AckSample { pkts_acked: w.newly_delivered, rtt: w.newest_rtt, in_flight: prior_in_flight };
            self.cc.pkts_acked(&mut self.conn, &sample);
        }
        self.cong_control(&rs, &w);
        #[cfg(test)]
        {
            self.last_rs = rs.clone();
        }
        // is_cwnd_limited holds until the window that was limited is acked.
        if self.snd_una > self.cwnd_limited_seq {
            self.conn.is_cwnd_limited = false;
            self.max_packets_out = self.conn.packets_out;
        }
        // 7. Send, then re-arm the retransmit timer (tcp_set_xmit_timer).
        self.try_send(now, out);
        self.set_xmit_timer(now, reo_timeout, w.una_advanced || w.newly_delivered > 0);
    }

    /// Segment `seq` was newly SACKed or cumulatively ACKed.
    fn deliver(&mut self, now: Time, seq: u32, by_sack: bool, w: &mut AckWork) {
        let (flags, tx_time) = {
            let s = self.seg(seq);
            (s.flags, s.tx_time)
        };
        if flags & F_SACKED != 0 {
            return;
        }
        if flags & F_RETRANS != 0 {
            self.conn.retrans_out -= 1;
        }
        if flags & F_LOST != 0 {
            self.conn.lost_out -= 1;
            self.retx.remove(&seq);
        }
        if by_sack {
            self.conn.sacked_out += 1;
            self.ts_unlink(seq);
        }
        self.seg_mut(seq).flags = (flags | F_SACKED) & !(F_LOST | F_RETRANS);
        self.conn.delivered += 1;
        self.conn.delivered_time = now;
        w.newly_delivered += 1;
        // RTT: Karn — never from a retransmitted segment.
        if flags & F_EVER_RETRANS == 0 {
            let r = now - tx_time;
            if w.oldest_rtt.is_none_or(|o| r > o) {
                w.oldest_rtt = Some(r);
            }
            if w.newest_rtt.is_none() || tx_time >= w.newest_tx {
                w.newest_rtt = Some(r);
                w.newest_tx = tx_time;
            }
        }
        // RACK (tcp_rack_advance; not without SACK: tcp_clean_rtx_queue
        // advances RACK only when tcp_is_sack). Every delivered segment that
        // is not an ambiguous retransmission sets RACK.rtt — so the last one
        // this ACK delivers, in Linux's order (SACK blocks by sequence, then
        // the cumulative part), leaves its RTT — while RACK.xmit_time tracks
        // the most recently sent one.
        let rtt = now - tx_time;
        let ambiguous = flags & F_EVER_RETRANS != 0 && self.rtt.min_rtt.is_some_and(|m| rtt < m);
        if self.sack_ok && !ambiguous {
            self.rack.rtt = rtt;
            self.rack.advanced = true;
            if tx_time > self.rack.xmit_time || (tx_time == self.rack.xmit_time && seq + 1 > self.rack.end_seq) {
                self.rack.xmit_time = tx_time;
                self.rack.end_seq = seq + 1;
            }
        }
        // Rate sampling (tcp_rate_skb_delivered).
        let s = self.seg(seq).clone();
        if s.flags & F_SAMPLED == 0 {
            if !w.rs_valid || s.delivered > w.rs.prior_delivered || (s.delivered == w.rs.prior_delivered && s.tx_time > w.rs_tx_time) {
                w.rs_valid = true;
                w.rs.prior_delivered = s.delivered;
                w.rs_prior_time = s.delivered_time;
                w.rs_prior_delivered_ce = s.delivered_ce;
                w.rs.is_app_limited = s.flags & F_APP_LIMITED != 0;
                w.rs.is_retrans = s.flags & F_EVER_RETRANS != 0;
                w.rs.tx_in_flight = s.in_flight;
                w.rs.lost = self.conn.lost - s.lost;
                w.rs_tx_time = s.tx_time;
                w.rs_first_tx = s.first_tx;
                // The send window for later samples starts at this segment's send.
                self.first_tx = s.tx_time;
            }
            self.seg_mut(seq).flags |= F_SAMPLED;
        }
    }

    /// Without SACK (Linux `tcp_is_reno`): what `tcp_clean_rtx_queue` and
    /// `tcp_fastretrans_alert` do with duplicate ACKs — `acked` segments were
    /// cumulatively acknowledged by this ACK (each already counted delivered
    /// by [`Self::deliver`]), `dup`: it is a duplicate ACK.
    fn reno_on_ack(&mut self, acked: u32, dup: bool, retrans_acked: bool, w: &mut AckWork) {
        if acked > 0 {
            // tcp_remove_reno_sacks: "One ACK acked hole. The rest eat
            // duplicate ACKs" — the duplicates already counted them delivered.
            let sacked = self.conn.sacked_out;
            let counted = acked.saturating_sub(sacked).max(1);
            self.conn.delivered -= (acked - counted) as u64;
            w.newly_delivered -= acked - counted;
            self.conn.sacked_out = if acked - 1 >= sacked { 0 } else { sacked - (acked - 1) };
            self.reno_limit_sacked();
            // tcp_clean_rtx_queue: no seq_rtt/ca_rtt when retransmitted data
            // is acknowledged (FLAG_RETRANS_DATA_ACKED): without SACK the ACK
            // may be for the retransmission.
            if retrans_acked {
                w.oldest_rtt = None;
                w.newest_rtt = None;
            }
        }
        let una_advanced = acked > 0;
        let state = self.conn.ca_state;
        // tcp_fastretrans_alert step D: Recovery over (tcp_reset_reno_sack),
        // held by update_ca_state until snd_una passes high_seq.
        let over = matches!(state, CaState::Recovery | CaState::Loss) && self.snd_una >= self.high_seq;
        match state {
            // (tcp_process_loss returns once high_seq is acknowledged.)
            CaState::Recovery if over => self.conn.sacked_out = 0,
            CaState::Loss if over => {}
            // Step E, Recovery: a duplicate counts; a partial ACK (RFC 6582
            // §3.2 step 5) makes the next hole the head, which is lost.
            CaState::Recovery => {
                if una_advanced {
                    self.newreno_mark_head_lost();
                } else if dup {
                    self.reno_add_sack(w);
                }
            }
            // tcp_process_loss: duplicates count once new data went out after the RTO.
            CaState::Loss => {
                if self.snd_nxt > self.high_seq && dup {
                    self.reno_add_sack(w);
                } else if una_advanced {
                    self.conn.sacked_out = 0;
                }
            }
            // Open, Disorder, CWR: the third duplicate marks the head lost
            // (RFC 5681 §3.2 fast retransmit; tcp_newreno_mark_lost).
            _ => {
                if una_advanced {
                    self.conn.sacked_out = 0;
                }
                if dup {
                    self.reno_add_sack(w);
                }
                if self.conn.sacked_out >= REORDERING {
                    self.newreno_mark_head_lost();
                }
            }
        }
    }

    /// Linux `tcp_add_reno_sack`: one duplicate ACK, one segment delivered.
    fn reno_add_sack(&mut self, w: &mut AckWork) {
        let prior = self.conn.sacked_out;
        self.conn.sacked_out += 1;
        self.reno_limit_sacked();
        let d = self.conn.sacked_out.saturating_sub(prior);
        self.conn.delivered += d as u64;
        w.newly_delivered += d;
    }

    /// Linux `tcp_limit_reno_sacked`: no more duplicates than segments above the holes.
    fn reno_limit_sacked(&mut self) {
        let holes = self.conn.lost_out.max(1).min(self.conn.packets_out);
        if self.conn.sacked_out + holes > self.conn.packets_out {
            self.conn.sacked_out = self.conn.packets_out - holes;
        }
    }

    /// Linux `tcp_newreno_mark_lost`: the first unacknowledged segment is lost
    /// unless it already is.
    fn newreno_mark_head_lost(&mut self) {
        if self.snd_una < self.snd_nxt && self.seg(self.snd_una).flags & F_LOST == 0 {
            let seq = self.snd_una;
            self.mark_lost(seq);
        }
    }

    /// RFC 8985 §6.2 step 5 (Linux `tcp_rack_detect_loss`). Returns the reorder
    /// timeout if some segment is not yet past its reordering window.
    fn rack_detect_loss(&mut self, now: Time, w: &mut AckWork) -> Option<Dur> {
        if !self.rack.advanced {
            return None;
        }
        self.rack.advanced = false;
        let reo_wnd = self.rack_reo_wnd();
        let mut timeout: Option<Dur> = None;
        let mut seq = self.ts_head;
        while seq != NONE {
            let s = self.seg(seq);
            let next = s.next;
            // Only segments sent before the most recently delivered one.
            let sent_before = s.tx_time < self.rack.xmit_time || (s.tx_time == self.rack.xmit_time && seq + 1 < self.rack.end_seq);
            if !sent_before {
                break;
            }
            let deadline = s.tx_time + self.rack.rtt + reo_wnd;
            if deadline <= now {
                self.mark_lost(seq);
                w.newly_lost += 1;
            } else {
                let rem = deadline - now;
                timeout = Some(timeout.map_or(rem, |t: Dur| t.max(rem)));
            }
            seq = next;
        }
        timeout
    }

    /// RACK reordering window (Linux `tcp_rack_reo_wnd`): zero once in
    /// recovery or with ≥ 3 SACKed segments (the DupThresh fallback), else
    /// min_rtt/4. This simulator never reorders, so `reord_seen` stays false.
    fn rack_reo_wnd(&self) -> Dur {
        if matches!(self.conn.ca_state, CaState::Recovery | CaState::Loss) || self.conn.sacked_out >= 3 {
            return Dur::ZERO;
        }
        let m = self.rtt.min_rtt_or(Dur::ZERO);
        Dur(m.0 / 4).min(self.rtt.srtt_or_zero())
    }

    fn mark_lost(&mut self, seq: u32) {
        let f = self.seg(seq).flags;
        if f & F_SACKED != 0 || (f & F_LOST != 0 && f & F_RETRANS == 0) {
            return;
        }
        if f & F_RETRANS != 0 {
            self.conn.retrans_out -= 1;
        }
        if f & F_LOST == 0 {
            self.conn.lost_out += 1;
        }
        self.seg_mut(seq).flags = (f | F_LOST) & !F_RETRANS;
        self.ts_unlink(seq);
        self.retx.insert(seq);
        self.conn.lost += 1;
        self.stats.lost_segs += 1;
    }

    /// Linux `tcp_fastretrans_alert`, reduced to what SACK + RACK need, with
    /// the ECN reaction of `tcp_try_to_open` (`ece`: this ACK carried ECE on
    /// an ECN connection).
    /// Step D (`end_reduction_if_acked`) has run already: `on_ack` calls it
    /// before RACK, and the reordering timer (`tcp_rack_reo_timeout`) comes
    /// with no ACK that could end a reduction.
    fn update_ca_state(&mut self, _now: Time, ece: bool) {
        match self.conn.ca_state {
            // tcp_enter_recovery from CWR keeps the reduction already under way.
            CaState::Open | CaState::Disorder | CaState::Cwr if self.conn.lost_out > 0 => self.enter_recovery(),
            // tcp_try_to_open → tcp_enter_cwr: at most once per window, as
            // CWR lasts until the window sent before it is acknowledged
            // (RFC 3168 §6.1.2).
            CaState::Open | CaState::Disorder if ece => self.enter_cwr(),
            CaState::Open if self.conn.sacked_out > 0 => self.set_ca_state(CaState::Disorder),
            CaState::Disorder if self.conn.sacked_out == 0 => self.set_ca_state(CaState::Open),
            _ => {}
        }
    }

    /// `tcp_fastretrans_alert` step D: Recovery and Loss end once snd_una
    /// reaches high_seq (with SACK; without, something above it must be
    /// acknowledged), CWR once it passes it.
    fn end_reduction_if_acked(&mut self) {
        match self.conn.ca_state {
            // Without SACK it is held until something *above* high_seq is
            // acknowledged (RFC 6582 §3.2 step 4; Linux tcp_try_undo_recovery:
            // "For Reno it is MUST to prevent false fast retransmits").
            CaState::Recovery | CaState::Loss if self.snd_una > self.high_seq || (self.sack_ok && self.snd_una == self.high_seq) => {
                // Recovery / Loss is over (tcp_end_cwnd_reduction).
                if !self.cc.has_cong_control() && self.conn.ssthresh < INFINITE_SSTHRESH && self.conn.ca_state == CaState::Recovery {
                    self.conn.cwnd = self.conn.ssthresh;
                }
                self.set_ca_state(CaState::Open);
            }
            // tcp_fastretrans_alert step D: "CWR is to be held something
            // *above* high_seq is ACKed for CWR bit to reach receiver" — the
            // segment that carried CWR is high_seq itself.
            CaState::Cwr if self.snd_una > self.high_seq => {
                if !self.cc.has_cong_control() && self.conn.ssthresh < INFINITE_SSTHRESH {
                    self.conn.cwnd = self.conn.ssthresh;
                }
                self.set_ca_state(CaState::Open);
            }
            _ => {}
        }
    }

    fn set_ca_state(&mut self, s: CaState) {
        if self.conn.ca_state != s {
            self.cc.set_state(&mut self.conn, s);
            self.conn.ca_state = s;
        }
    }

    /// Linux `tcp_enter_recovery`: a reduction starts unless one is under
    /// way already (`tcp_in_cwnd_reduction`: from CWR, the window keeps
    /// coming down to the ssthresh the ECE set).
    fn enter_recovery(&mut self) {
        if self.conn.ca_state != CaState::Cwr {
            self.init_cwnd_reduction();
        }
        self.set_ca_state(CaState::Recovery);
    }

    /// Linux `tcp_enter_cwr` (net/ipv4/tcp_input.c): on ECE outside a
    /// reduction, reduce the window by PRR to the algorithm's ssthresh in
    /// state CWR, and send CWR on the next new data.
    fn enter_cwr(&mut self) {
        self.init_cwnd_reduction();
        self.stats_cwr += 1;
        self.set_ca_state(CaState::Cwr);
    }

    /// Linux `tcp_init_cwnd_reduction`, which ends with `tcp_ecn_queue_cwr`.
    fn init_cwnd_reduction(&mut self) {
        self.high_seq = self.snd_nxt;
        self.tlp_high_seq = None;
        self.prior_cwnd = self.conn.cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.conn.ssthresh = self.cc.ssthresh(&self.conn);
        self.queue_cwr = self.ecn_ok;
    }

    /// Linux `tcp_rate_gen`.
    fn rate_gen(&mut self, now: Time, w: &mut AckWork, prior_in_flight: u32) -> RateSample {
        let c = &mut self.conn;
        if c.app_limited != 0 && (c.app_limited == APP_LIMITED_UNTIL_FIRST_ACK || c.delivered > c.app_limited) {
            c.app_limited = 0;
        }
        let mut rs = std::mem::take(&mut w.rs);
        rs.acked_sacked = w.newly_delivered;
        rs.losses = w.newly_lost;
        rs.prior_in_flight = prior_in_flight;
        rs.rtt = w.newest_rtt;
        // Linux FLAG_ACK_MAYBE_DELAYED (tcp_clean_rtx_queue): one packet, cum-
        // ACKed, nothing SACKed, and it was alone in flight — likely held by the
        // receiver's delayed-ACK timer, so its RTT says nothing about the path.
        rs.is_ack_delayed = w.newly_delivered == 1 && w.una_advanced && c.sacked_out == 0 && rs.tx_in_flight <= 1;
        if !w.rs_valid || w.newly_delivered == 0 {
            rs.delivered = 0;
            rs.interval = Dur::ZERO;
            return rs;
        }
        rs.delivered = c.delivered - rs.prior_delivered;
        rs.delivered_ce = c.delivered_ce - w.rs_prior_delivered_ce;
        let snd = w.rs_tx_time.saturating_sub(w.rs_first_tx);
        let ack = now.saturating_sub(w.rs_prior_time);
        let interval = snd.max(ack);
        // Linux discards samples shorter than min_rtt (ACK compression artefacts).
        if interval.0 == 0 || c.min_rtt.is_some_and(|m| interval < m) {
            rs.interval = Dur::ZERO;
            return rs;
        }
        rs.interval = interval;
        rs.delivery_rate = Some(crate::time::Bandwidth::from_bytes_per(rs.delivered * c.mss as u64, interval));
        rs
    }

    /// Linux `tcp_cong_control`.
    fn cong_control(&mut self, rs: &RateSample, w: &AckWork) {
        self.conn.wstamp = self.pace_next;
        if self.cc.has_cong_control() {
            self.cc.cong_control(&mut self.conn, rs);
            return;
        }
        if matches!(self.conn.ca_state, CaState::Recovery | CaState::Cwr) {
            self.prr_reduction(w);
        } else if w.una_advanced && w.newly_delivered > 0 {
            // tcp_may_raise_cwnd: without reordering seen, only an ACK that
            // advances snd_una (FLAG_DATA_ACKED) raises cwnd (RFC 5681 §3.1:
            // duplicate ACKs carrying SACK do not) — by all it delivered.
            self.cc.cong_avoid(&mut self.conn, w.newly_delivered);
        }
    }

    /// PRR, RFC 6937 §3 as Linux `tcp_cwnd_reduction` implements it.
    fn prr_reduction(&mut self, w: &AckWork) {
        let newly = w.newly_delivered;
        if newly == 0 || self.prior_cwnd == 0 {
            return;
        }
        self.prr_delivered += newly;
        let in_flight = self.in_flight() as i64;
        let delta = self.conn.ssthresh as i64 - in_flight;
        let mut sndcnt: i64 = if delta < 0 {
            // Proportional part: send ssthresh/prior_cwnd of what was delivered.
            let dividend = self.conn.ssthresh as u64 * self.prr_delivered as u64 + self.prior_cwnd as u64 - 1;
            (dividend / self.prior_cwnd as u64) as i64 - self.prr_out as i64
        } else {
            // Slow-start reduction bound (PRR-SSRB).
            let mut s = (self.prr_delivered as i64 - self.prr_out as i64).max(newly as i64);
            if w.una_advanced && w.newly_lost == 0 {
                s += 1;
            }
            s.min(delta)
        };
        // Force a fast retransmit on entering recovery.
        sndcnt = sndcnt.max(if self.prr_out > 0 { 0 } else { 1 });
        self.conn.cwnd = (in_flight + sndcnt).max(1) as u32;
    }

    // ---- timers -------------------------------------------------------------------

    /// Linux `tcp_set_xmit_timer` / `tcp_schedule_loss_probe` / `tcp_rearm_rto`.
    fn set_xmit_timer(&mut self, now: Time, reo: Option<Dur>, progress: bool) {
        if self.conn.packets_out == 0 {
            self.xmit_timer = None;
            return;
        }
        if let Some(r) = reo {
            self.xmit_timer = Some((now + r, XmitTimer::Reo));
            return;
        }
        let rto_at = match self.xmit_timer {
            Some((t, XmitTimer::Rto)) if !progress => t,
            _ => now + self.rtt.rto(),
        };
        // TLP (RFC 8985 §7.2) only in Open (or ECN CWR, tcp_schedule_loss_probe)
        // state, one probe at a time.
        // TLP needs SACK (tcp_schedule_loss_probe: `!tcp_is_sack(tp)`).
        if self.sack_ok && matches!(self.conn.ca_state, CaState::Open | CaState::Cwr) && self.tlp_high_seq.is_none() && self.rtt.srtt.is_some() {
            let srtt = self.rtt.srtt_or_zero();
            let mut pto = Dur(2 * srtt.0);
            // One packet out: allow for the peer's delayed ACK (Linux adds TCP_RTO_MIN).
            pto = if self.conn.packets_out == 1 { pto + super::rtt::RTO_MIN } else { pto + Dur::from_ms(2) };
            let at = (now + pto).min(rto_at);
            self.xmit_timer = Some((at, XmitTimer::Tlp));
            return;
        }
        self.xmit_timer = Some((rto_at, XmitTimer::Rto));
    }

    /// After sending new data with nothing previously outstanding, arm the timer.
    pub fn ensure_timer(&mut self, now: Time) {
        if self.xmit_timer.is_none() && self.conn.packets_out > 0 {
            self.set_xmit_timer(now, None, true);
        }
    }

    /// The retransmit timer fired (RTO, TLP or RACK reorder timeout).
    pub fn on_xmit_timer(&mut self, now: Time, out: &mut Vec<Transmit>) {
        let Some((at, kind)) = self.xmit_timer else { return };
        if at > now {
            return;
        }
        self.xmit_timer = None;
        self.conn.now = now;
        match kind {
            XmitTimer::Reo => {
                // tcp_rack_reo_timeout: re-run detection, then recover.
                let mut w = AckWork::default();
                self.rack.advanced = true;
                let reo = self.rack_detect_loss(now, &mut w);
                self.update_ca_state(now, false);
                if w.newly_lost > 0 && !self.cc.has_cong_control() && self.conn.ca_state == CaState::Recovery {
                    // Let PRR send at least the first retransmission.
                    self.conn.cwnd = self.conn.cwnd.max(self.in_flight() + 1);
                }
                self.try_send(now, out);
                self.set_xmit_timer(now, reo, false);
            }
            XmitTimer::Tlp => {
                // RFC 8985 §7.3: send one new segment if possible, else the last one again.
                self.stats.tlp_count += 1;
                let before = out.len();
                if self.conn.pacing_rate.is_some() {
                    self.begin_paced_skb(now);
                }
                if self.snd_nxt < self.app_limit() && self.snd_nxt < self.wnd_limit() {
                    self.write_queue_head(); // the probe is the first segment of the head skb
                    let seq = self.snd_nxt;
                    out.push(self.transmit(now, seq, false));
                    self.end_skb(seq); // one segment (tcp_write_xmit's push_one)
                } else if self.snd_nxt > self.snd_una {
                    let seq = self.snd_nxt - 1;
                    if self.seg(seq).flags & F_SACKED == 0 {
                        // tcp_send_loss_probe retransmits the last segment
                        // alone, fragmenting its skb.
                        if seq > self.snd_una {
                            self.end_skb(seq - 1);
                        }
                        out.push(self.transmit(now, seq, true));
                    }
                }
                if out.len() > before {
                    self.tlp_high_seq = Some(self.snd_nxt);
                }
                self.xmit_timer = Some((now + self.rtt.rto(), XmitTimer::Rto));
            }
            XmitTimer::Rto => self.on_rto(now, out),
        }
    }

    /// Linux `tcp_retransmit_timer` → `tcp_enter_loss`.
    fn on_rto(&mut self, now: Time, out: &mut Vec<Transmit>) {
        self.stats.rto_count += 1;
        let st = self.conn.ca_state;
        if matches!(st, CaState::Open | CaState::Disorder) || self.high_seq <= self.snd_una || st == CaState::Loss && self.rtt.backoff == 0 {
            self.prior_cwnd = self.conn.cwnd;
            self.conn.ssthresh = self.cc.ssthresh(&self.conn);
            self.cc.cwnd_event(&mut self.conn, CwndEvent::Loss);
        }
        // tcp_enter_loss: tcp_ecn_queue_cwr.
        self.queue_cwr = self.ecn_ok;
        // tcp_timeout_mark_lost: everything not SACKed is lost, except (RACK)
        // segments other than the head sent less than rack.rtt ago; without
        // SACK the duplicate count is reset (tcp_reset_reno_sack) and RACK has
        // no RTT (never advanced), so everything is.
        if !self.sack_ok {
            self.conn.sacked_out = 0;
        }
        let mut seq = self.ts_head;
        while seq != NONE {
            let (next, tx) = {
                let s = self.seg(seq);
                (s.next, s.tx_time)
            };
            if seq == self.snd_una || tx + self.rack.rtt <= now {
                self.mark_lost(seq);
            }
            seq = next;
        }
        // Segments already marked lost but retransmitted-and-lost again stay queued.
        self.conn.cwnd = self.in_flight() + 1;
        self.set_ca_state(CaState::Loss);
        self.high_seq = self.snd_nxt;
        self.tlp_high_seq = None;
        self.rtt.backoff += 1;
        // BBR sees the RTO through set_state(Loss) and its next cong_control.
        self.conn.in_flight = self.in_flight();
        // Retransmit the head now; the timer backs off (RFC 6298 §5.5–5.6).
        // The pacer does not hold back an RTO retransmission.
        self.pace_next = self.pace_next.min(now);
        self.try_send(now, out);
        self.xmit_timer = Some((now + self.rtt.rto(), XmitTimer::Rto));
    }

    /// Prefetch hint: what `next_deadline` and `started` read.
    #[inline(always)]
    pub fn prefetch_deadline(&self) {
        crate::prefetch::fields(&self.xmit_timer, &self.pacing_blocked);
    }

    /// Prefetch hint: what an ACK or a timer touches (the segments aside);
    /// `cc_span` is `self.cc.state_span()`, kept by the caller.
    #[inline(always)]
    pub fn prefetch_ack(&self, cc_span: (u16, u16)) {
        crate::prefetch::fields(&self.xmit_timer, &self.sack_ok);
        let cc = (&self.cc as *const Cc as *const u8).wrapping_add(cc_span.0 as usize);
        crate::prefetch::range(cc, cc.wrapping_add(cc_span.1 as usize));
    }

    /// Prefetch hint: the oldest segments in flight (what an ACK delivers).
    #[inline(always)]
    pub fn prefetch_segs(&self) {
        if let Some(s) = self.segs.front() {
            let p = s as *const Seg as *const u8;
            crate::prefetch::range(p, p.wrapping_add(2 * std::mem::size_of::<Seg>()));
        }
    }

    /// The earliest time this sender needs a wake-up.
    pub fn next_deadline(&self) -> Option<Time> {
        let mut t = self.xmit_timer.map(|(t, _)| t);
        if self.pacing_blocked {
            t = Some(t.map_or(self.pace_next, |x| x.min(self.pace_next)));
        }
        if let Some(stop) = self.stop_at {
            if self.app_end.is_none() {
                t = Some(t.map_or(stop, |x| x.min(stop)));
            }
        }
        t
    }

    // ---- record ---------------------------------------------------------------------

    pub fn cwnd_bytes(&self) -> u64 {
        self.conn.cwnd as u64 * self.mss as u64
    }
    pub fn inflight_bytes(&self) -> u64 {
        self.in_flight() as u64 * self.mss as u64
    }
    pub fn mss(&self) -> u32 {
        self.mss
    }
    /// Conservation check helper: segments the sender believes are in the network.
    pub fn outstanding(&self) -> u32 {
        self.conn.packets_out
    }
}
