//! The TCP receiver: cumulative ACK + SACK blocks, the receive window, and
//! when to ACK — as Linux 6.18 does it (net/ipv4/tcp_input.c).
//!
//! * In-order data (`tcp_data_queue` → `tcp_event_data_recv`): the first data
//!   segment starts quick-ack mode (`tcp_incr_quickack`, up to
//!   `TCP_MAX_QUICKACKS` = 16 immediate ACKs); a segment that grows
//!   `rcv_ssthresh` (`tcp_grow_window`) sets `icsk_ack.quick` so the next ACK
//!   goes out at once; filling the last hole forces an ACK (`ICSK_ACK_NOW`).
//! * Out-of-order data (`tcp_data_queue_ofo`) is charged to receive memory,
//!   may grow the window and the buffer (`tcp_rcvbuf_grow`), and is ACKed
//!   with SACK blocks — the first three duplicate ACKs for one `rcv_nxt` at
//!   once, later ones compressed (`tcp_comp_sack_*`: up to 44 per ACK, or
//!   after min(1 ms, 5 % of the RTT)).
//! * `__tcp_ack_snd_check`: ACK at once when more than one full segment is
//!   unacknowledged and the window would not shrink, in quick-ack mode, or
//!   when forced; otherwise arm the delayed-ACK timer (`TCP_DELACK_MIN` = 40 ms).
//! * The application reads in-order data right after the segment is
//!   processed (`tcp_recvmsg`): receive memory is freed, Dynamic Right-Sizing
//!   may grow the buffer (`tcp_rcv_space_adjust`, measured at the read's
//!   first segment less what waits behind it), and `tcp_cleanup_rbuf`
//!   sends the ACK that was held back, the ACK of a lone segment that
//!   carried PSH or was short (`ICSK_ACK_PUSHED`, set by
//!   `tcp_measure_rcv_mss`; with `ack_every` = 2, Linux's rule) once the
//!   read has emptied the receive queue, or a window update when the window
//!   doubled. The sender sets PSH on the
//!   last segment of every multi-segment skb, so this keeps the ACKs at the
//!   ends of its skbs.
//! * A segment below `rcv_nxt` (a spurious retransmission) is ACKed at once
//!   in quick-ack mode (`tcp_enter_quickack_mode`); Linux adds a D-SACK block,
//!   this simulator does not.
//!
//! ECN (RFC 3168 §6.1.3, Linux `__tcp_ecn_check_ce` / `tcp_ecn_accept_cwr`,
//! net/ipv4/tcp_input.c, include/net/tcp_ecn.h): a CE-marked data segment
//! sets `TCP_ECN_DEMAND_CWR` — entering quick-ack mode for two ACKs when it
//! was not set, "better not delay acks, sender can have a very low cwnd" —
//! and every ACK carries ECE while it is set; a data segment with CWR
//! clears it and is ACKed at once. For DCTCP (RFC 8257 §3.2, Linux
//! `dctcp_ece_ack_update`, net/ipv4/tcp_dctcp.h) ECE instead mirrors the CE
//! bit of the latest data segment: when that bit changes, a pending delayed
//! ACK goes out first with the old ECE value for the data before the
//! segment, and the segment is ACKed at once.
//!
//! Every ACK carries the advertised window's right edge (`wnd_end`, in
//! segments) and a timestamp (TSval in ms, Linux's `tcp_time_stamp_ts`
//! granularity) that the sender echoes in its data (TSecr) — the receiver's
//! own RTT estimate for buffer autotuning comes from those echoes.
//! SACK blocks follow RFC 2018 §4: the first block holds the most recently
//! received segment, then the most recently reported other blocks; at most 3
//! blocks fit beside the timestamp option Linux sends.

use super::rcvwnd::{RcvConfig, RcvWindow};
use crate::time::{Dur, Time};

/// `TCP_MAX_QUICKACKS` (include/net/tcp.h).
pub const MAX_QUICKACKS: u32 = 16;
/// `TCP_DELACK_MIN` (include/net/tcp.h): HZ/25 = 40 ms.
pub const DELACK_MIN: Dur = Dur::from_ms(40);
/// SACK blocks per ACK with the timestamp option (RFC 2018 §3, 40-byte option space).
pub const MAX_SACK_BLOCKS: usize = 3;
/// `net.ipv4.tcp_comp_sack_nr` default: at most this many SACKs compressed into one.
pub const COMP_SACK_NR: u32 = 44;
/// `net.ipv4.tcp_comp_sack_delay_ns` default: 1 ms.
pub const COMP_SACK_DELAY: Dur = Dur::from_ms(1);
/// `net.ipv4.tcp_comp_sack_slack_ns` default in Linux 6.18 (`tcp_sk_init`,
/// net/ipv4/tcp_ipv4.c: 100 µs; the value on this project's test machines;
/// a patch posted to netdev in November 2025 proposes 10 µs). The
/// compressed-SACK timer is a soft hrtimer started with this slack
/// (`hrtimer_start_range_ns(..., HRTIMER_MODE_REL_PINNED_SOFT)` in
/// `__tcp_ack_snd_check`), and a soft hrtimer runs when the CPU's earliest
/// soft timer reaches its *hard* expiry (`hrtimer_interrupt` raises
/// HRTIMER_SOFTIRQ once `now ≥ softirq_expires_next`, which
/// `__hrtimer_get_next_event` takes from the hard expiries,
/// kernel/time/hrtimer.c). On a receiver whose CPU has no other soft timer
/// due first, the SACK therefore leaves at delay + slack.
pub const COMP_SACK_SLACK: Dur = Dur::from_us(100);
/// `TCP_SACK_BLOCKS_EXPECTED` (net/ipv4/tcp_input.c): SACK blocks an ACK is
/// relied on to deliver ("the max is 4, but this becomes 3 if TCP timestamps
/// are there. Given that SACK packets might be lost, be conservative and use 2").
const SACK_BLOCKS_EXPECTED: usize = 2;
/// `TCP_FASTRETRANS_THRESH` (include/net/tcp.h): duplicate ACKs sent before compressing.
const FASTRETRANS_THRESH: u32 = 3;

/// An ACK as the sender sees it (segment-numbered).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Ack {
    /// Next segment expected (cumulative).
    pub cum: u32,
    pub n_sacks: u8,
    pub sacks: [(u32, u32); MAX_SACK_BLOCKS],
    /// Right edge of the advertised receive window: the sender may send
    /// segments numbered below this.
    pub wnd_end: u32,
    /// The receiver's timestamp (TSval, ms), echoed by later data segments.
    pub tsval_ms: u32,
    /// ECN-Echo (RFC 3168 §6.1.3).
    pub ece: bool,
}

impl Ack {
    pub fn sacks(&self) -> &[(u32, u32)] {
        &self.sacks[..self.n_sacks as usize]
    }
}

/// SACK compression state (`tp->compressed_ack*`, `tp->dup_ack_counter`).
#[derive(Clone, Debug, Default)]
struct CompressedAck {
    count: u32,
    rcv_nxt: u32,
    dup_ack_counter: u32,
    timer: Option<Time>,
}

/// How the receiver echoes CE marks.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum EcnMode {
    /// No ECN negotiated (`TCP_ECN_OK` clear): CE is ignored.
    #[default]
    Off,
    /// RFC 3168: ECE from a CE mark until CWR.
    Classic,
    /// DCTCP (RFC 8257 §3.2): ECE = the CE bit of the latest data segment.
    Dctcp,
}

/// The receiver's ECN state (`tp->ecn_flags`, and DCTCP's `ce_state`,
/// `prior_rcv_nxt`).
#[derive(Clone, Debug, Default)]
struct EcnRcv {
    mode: EcnMode,
    /// `TCP_ECN_DEMAND_CWR`: ACKs carry ECE.
    demand_cwr: bool,
    /// `TCP_ECN_SEEN`: an ECT segment arrived.
    seen: bool,
    /// DCTCP: the last data segment was CE.
    ce_state: bool,
    /// DCTCP: `rcv_nxt` after the previous data segment.
    prior_rcv_nxt: u32,
}

#[inline]
pub fn ts_ms(t: Time) -> u32 {
    (t.0 / 1_000_000) as u32
}

/// Laid out by use (`#[repr(C)]`, see `crate::prefetch`): the timers first
/// (`next_deadline`, read after every event of the flow), then what every
/// segment touches, the rare counters last.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct Receiver {
    /// The application's next read, when reads are deferred
    /// (`defer_reads`) and in-order data waits for it.
    read_at: Option<Time>,
    /// Delayed-ACK deadline, if armed.
    pub delack_at: Option<Time>,
    comp: CompressedAck,
    /// Next in-order segment expected (`rcv_nxt`).
    pub rcv_nxt: u32,
    /// `icsk_ack.quick`: immediate ACKs still owed (quick-ack mode).
    quick: u32,
    /// Whether any data arrived yet (`icsk_ack.ato` still zero).
    seen_data: bool,
    /// `ICSK_ACK_NOW` pending.
    ack_now: bool,
    /// `ICSK_ACK_PUSHED` pending: an in-order full-sized segment carried PSH,
    /// or one was shorter than `rcv_mss` (`tcp_measure_rcv_mss`), since the
    /// last ACK — a read that empties the receive queue ACKs at once
    /// (`tcp_cleanup_rbuf`).
    pushed: bool,
    /// Out-of-order ranges held [start, end), sorted, disjoint, all > rcv_nxt.
    ooo: Vec<(u32, u32)>,
    /// SACK blocks in RFC 2018 recency order.
    recent: Vec<(u32, u32)>,
    ecn: EcnRcv,
    /// Receive memory and the advertised window.
    pub win: RcvWindow,
    /// The receiver's smoothed RTT from the handshake (bounds the compression delay).
    srtt: Dur,
    mss: u32,
    /// ACK at once when this many full segments are unacknowledged (Linux:
    /// 2, more than one `rcv_mss`); 1: every segment at once, in order or
    /// not, as Linux's `quickack` route attribute (`RTAX_QUICKACK`) makes
    /// `tcp_in_quickack_mode` true.
    ack_every: u32,
    /// SACK negotiated: out-of-order data is reported in SACK blocks and its
    /// duplicate ACKs may be compressed; without it every out-of-order segment
    /// is ACKed at once with a plain duplicate ACK (`__tcp_ack_snd_check`:
    /// `!tcp_is_sack(tp)` → send now).
    sack: bool,
    /// The application reads when the engine says (`schedule_read`), not the
    /// moment data is in order: in-order segments wait (`unread`).
    defer_reads: bool,
    /// In-order segments the application has not read yet (`defer_reads`).
    unread: u32,
    /// Segments received (incl. duplicates) — for conservation checks.
    pub segments_received: u64,
    /// ACKs sent.
    pub acks_sent: u64,
    /// Data segments that arrived CE-marked.
    pub ce_segments: u64,
    /// ACKs sent with ECE.
    pub ece_acks: u64,
}

impl Receiver {
    /// The receiving end of a connection established at `now` (after the
    /// handshake, whose RTT the passive side measured as `handshake_rtt`).
    pub fn new(now: Time, cfg: RcvConfig, handshake_rtt: Dur) -> Receiver {
        Receiver {
            rcv_nxt: 0,
            read_at: None,
            defer_reads: false,
            unread: 0,
            ooo: Vec::new(),
            recent: Vec::new(),
            quick: 0,
            seen_data: false,
            ack_now: false,
            pushed: false,
            delack_at: None,
            comp: CompressedAck::default(),
            ecn: EcnRcv::default(),
            ce_segments: 0,
            ece_acks: 0,
            win: RcvWindow::new(now, cfg),
            srtt: handshake_rtt,
            mss: cfg.mss,
            ack_every: 2,
            sack: true,
            segments_received: 0,
            acks_sent: 0,
        }
    }

    /// Set the ACK rule (`ack_every` full segments; 1: every segment at once)
    /// and whether SACK was negotiated (docs/ir.md "Receiver").
    pub fn set_ack_options(&mut self, ack_every: u32, sack: bool) {
        assert!(ack_every >= 1, "ack_every must be at least 1");
        self.ack_every = ack_every;
        self.sack = sack;
    }

    /// The window offered in the SYN-ACK, as the sender's first window (segments).
    pub fn initial_wnd_end(&self) -> u32 {
        (self.win.rcv_wnd / self.mss as u64) as u32
    }

    #[inline]
    fn bytes(&self, seg: u32) -> u64 {
        seg as u64 * self.mss as u64
    }

    /// `tcp_incr_quickack`.
    fn incr_quickack(&mut self) {
        self.incr_quickack_max(MAX_QUICKACKS);
    }
    fn incr_quickack_max(&mut self, max: u32) {
        let q = (self.win.rcv_wnd / (2 * self.win.rcv_mss as u64)).max(2) as u32;
        self.quick = self.quick.max(q.min(max));
    }

    /// Echo CE marks (the connection negotiated ECN; `Dctcp`: the DCTCP
    /// receiver's state machine).
    pub fn set_ecn(&mut self, mode: EcnMode) {
        self.ecn.mode = mode;
    }

    /// `tcp_ecn_accept_cwr`: CWR ends the echo; "the sender's cwnd may be
    /// very low (even just 1 packet), so we should ACK immediately".
    fn ecn_accept_cwr(&mut self, cwr: bool, len: u32) {
        if cwr && self.ecn.mode != EcnMode::Off {
            self.ecn.demand_cwr = false;
            if len > 0 {
                self.ack_now = true;
            }
        }
    }

    /// `__tcp_ecn_check_ce`, with DCTCP's `dctcp_ece_ack_update` for the
    /// `CA_EVENT_ECN_IS_CE` / `CA_EVENT_ECN_NO_CE` events. `nxt` is
    /// `rcv_nxt` after this segment (Linux records it as DCTCP's
    /// `prior_rcv_nxt`).
    fn ecn_check_ce(&mut self, now: Time, ect: bool, ce: bool, nxt: u32, out: &mut Vec<Ack>) {
        if self.ecn.mode == EcnMode::Off {
            return;
        }
        if !ect {
            // "If ECT is not set on a segment, and we already seen ECT on a
            // previous segment, it is probably a retransmit."
            if self.ecn.seen {
                self.incr_quickack_max(2);
            }
            return;
        }
        if self.ecn.mode == EcnMode::Dctcp {
            if self.ecn.ce_state != ce {
                // The CE state changed: flush a delayed ACK with the old state
                // for the data before this segment, then ACK this one at once.
                if self.delack_at.is_some() {
                    self.ecn.demand_cwr = self.ecn.ce_state;
                    out.push(self.special_ack(now, self.ecn.prior_rcv_nxt));
                }
                self.ack_now = true;
            }
            self.ecn.prior_rcv_nxt = nxt;
            self.ecn.ce_state = ce;
            self.ecn.demand_cwr = ce;
        }
        if ce && !self.ecn.demand_cwr {
            // tcp_enter_quickack_mode(sk, 2).
            self.incr_quickack_max(2);
            self.ecn.demand_cwr = true;
        }
        self.ecn.seen = true;
    }

    /// Segment `seq` (`len` payload bytes, echoing TSecr `tsecr_ms`) arrives.
    /// Returns the ACK to send now, if any (else it is delayed or compressed);
    /// `on_segment_all` also returns the window update the reader may trigger.
    pub fn on_segment(&mut self, now: Time, seq: u32, len: u32, tsecr_ms: u32) -> Option<Ack> {
        let mut out = Vec::new();
        self.on_segment_all(now, seq, len, tsecr_ms, &mut out);
        out.into_iter().next()
    }

    /// Segment `seq` arrives; the ACKs to send now go to `out` (at most two:
    /// a pending compressed ACK flushed before the SACK blocks change, or the
    /// segment's own and a window update after the application read).
    pub fn on_segment_all(&mut self, now: Time, seq: u32, len: u32, tsecr_ms: u32, out: &mut Vec<Ack>) {
        self.on_segment_flags(now, seq, len, tsecr_ms, false, false, false, false, out);
    }

    /// `on_segment_all` with the segment's ECN bits (`ect`/`ce` its IP ECN
    /// field, `cwr` its TCP CWR flag) and its TCP PSH flag (`psh`).
    #[allow(clippy::too_many_arguments)]
    pub fn on_segment_flags(&mut self, now: Time, seq: u32, len: u32, tsecr_ms: u32, ect: bool, ce: bool, cwr: bool, psh: bool, out: &mut Vec<Ack>) {
        self.segments_received += 1;
        if ce {
            self.ce_segments += 1;
        }
        self.win.rtt_measure_ts(now, tsecr_ms, len);
        // tcp_data_queue: tcp_ecn_accept_cwr before the segment is placed.
        self.ecn_accept_cwr(cwr, len);
        if seq < self.rcv_nxt {
            // tcp_data_queue: old data — quick-ack mode, ACK at once.
            self.incr_quickack();
            out.push(self.send_ack(now));
            return;
        }
        if self.ooo_contains(seq) {
            // tcp_data_queue_ofo: all bits already present; dropped, ACKed like
            // other out-of-order data.
            let nxt = self.rcv_nxt;
            self.ecn_check_ce(now, ect, ce, nxt, out);
            out.extend(self.ack_snd_check(now, true));
            return;
        }
        if seq == self.rcv_nxt {
            self.rcv_nxt += 1;
            let had_holes = !self.ooo.is_empty();
            // tcp_ofo_queue: pull in the out-of-order range now contiguous.
            let mut pulled = 0;
            if let Some(&(s, e)) = self.ooo.first() {
                if s == self.rcv_nxt {
                    pulled = e - s;
                    self.rcv_nxt = e;
                    self.ooo.remove(0);
                }
            }
            self.recent.retain(|&(_, e)| e > self.rcv_nxt);
            // tcp_queue_rcv: the segment waits for the reader.
            self.win.charge();
            // tcp_event_data_recv → tcp_measure_rcv_mss: ICSK_ACK_PUSHED for
            // a full-sized segment with PSH ("likely the end of an
            // application write ... the data sender may be waiting for an
            // ACK", in Linux 6.18) and for a shorter one. (Linux skips it for
            // a short segment as long as the previous short one, `len ==
            // lss`; a simulated flow sends at most one short segment, its
            // last.)
            if psh || len < self.win.rcv_mss {
                self.pushed = true;
            }
            self.win.measure_rcv_mss(len);
            let nxt = self.bytes(self.rcv_nxt);
            self.win.rtt_measure(now, nxt);
            if !self.seen_data {
                self.seen_data = true;
                self.incr_quickack();
            }
            // tcp_event_data_recv → tcp_ecn_check_ce (before tcp_ofo_queue
            // pulls the out-of-order data in).
            self.ecn_check_ce(now, ect, ce, seq + 1, out);
            if len >= 128 && self.win.grow_window(len) {
                self.quick = self.quick.max(1);
            }
            if had_holes && self.ooo.is_empty() {
                self.ack_now = true;
            }
            out.extend(self.ack_snd_check(now, true));
            // The application reads what became in order (tcp_recvmsg): at
            // once, or at its next read (`schedule_read`).
            if self.defer_reads {
                self.unread += 1 + pulled;
            } else {
                out.extend(self.app_read(now, 1 + pulled));
            }
            return;
        }
        // Out of order (tcp_data_queue_ofo): insert, SACK, maybe grow the
        // window (before the segment is charged, as Linux orders it), charge.
        let nxt = self.rcv_nxt;
        self.ecn_check_ce(now, ect, ce, nxt, out);
        // tcp_sack_new_ofo_skb: if this segment extends a block below the
        // first TCP_SACK_BLOCKS_EXPECTED, or starts a new one while that many
        // exist, a pending compressed ACK goes out first (with the blocks as
        // they were), so no range reaches third or fourth place — or drops
        // out — without an ACK having reported it in first or second place.
        if self.sack && self.comp.count > 0 && self.sack_slot(seq) >= SACK_BLOCKS_EXPECTED {
            out.push(self.send_ack(now));
        }
        let block = self.insert_ooo(seq);
        self.recent.retain(|&(s, e)| !(block.0 <= s && e <= block.1));
        self.recent.insert(0, block);
        self.recent.truncate(4);
        if self.win.grow_window(len) {
            self.quick = self.quick.max(1);
        }
        self.win.charge();
        let span = self.bytes(self.ooo.last().map_or(self.rcv_nxt, |r| r.1) - self.rcv_nxt);
        self.win.rcvbuf_grow(self.win.space(), span);
        out.extend(self.ack_snd_check(now, true));
    }

    /// `__tcp_ack_snd_check`.
    fn ack_snd_check(&mut self, now: Time, ofo_possible: bool) -> Option<Ack> {
        let unacked = self.bytes(self.rcv_nxt) - self.win.rcv_wup;
        // Linux: more than one rcv_mss unacknowledged (ack_every = 2); the
        // ack_every option generalizes it to more than ack_every − 1.
        let enough = unacked > (self.ack_every as u64 - 1) * self.win.rcv_mss as u64 && {
            let mut q = self.quick;
            let raw = self.win.raw_window(&mut q);
            self.quick = q;
            raw >= self.win.rcv_wnd
        };
        if enough || self.quick > 0 || self.ack_every == 1 || self.ack_now {
            return Some(self.send_ack(now));
        }
        if !ofo_possible || self.ooo.is_empty() {
            if self.delack_at.is_none() {
                self.delack_at = Some(now + DELACK_MIN);
            }
            return None;
        }
        if !self.sack || self.comp.count >= COMP_SACK_NR {
            return Some(self.send_ack(now));
        }
        if self.comp.rcv_nxt != self.rcv_nxt {
            self.comp.rcv_nxt = self.rcv_nxt;
            self.comp.dup_ack_counter = 0;
        }
        if self.comp.dup_ack_counter < FASTRETRANS_THRESH {
            self.comp.dup_ack_counter += 1;
            return Some(self.send_ack(now));
        }
        self.comp.count += 1;
        if self.comp.timer.is_none() {
            // 5 % of the RTT (the lower of the receiver's and the handshake's), at most 1 ms,
            // and the hrtimer's slack (COMP_SACK_SLACK: it fires at its hard expiry).
            let rtt = self.win.rtt().map_or(self.srtt, |r| if self.srtt.0 > 0 { r.min(self.srtt) } else { r });
            self.comp.timer = Some(now + Dur(rtt.0 / 20).min(COMP_SACK_DELAY) + COMP_SACK_SLACK);
        }
        None
    }

    /// The application reads `n` newly in-order segments: free their memory,
    /// run DRS (`tcp_rcv_space_adjust`) and `tcp_cleanup_rbuf`'s ACK rules.
    fn app_read(&mut self, now: Time, n: u32) -> Option<Ack> {
        self.win.uncharge(n);
        let copied = self.bytes(self.rcv_nxt);
        let span = self.bytes(self.ooo.last().map_or(self.rcv_nxt, |r| r.1) - self.rcv_nxt);
        // tcp_recvmsg_locked copies skb by skb (one segment each: nothing is
        // coalesced here) and calls tcp_rcv_space_adjust after each. Only the
        // first call can measure: if an RTT has passed it measures and
        // restarts the measurement, so the later ones of the same read are
        // less than an RTT into it; if not, neither are they (same time).
        // It sees the rest of the read still queued (inq).
        let first = self.bytes(self.rcv_nxt - (n - 1));
        self.win.space_adjust(now, first, copied - first, span);
        let scheduled = self.delack_at.is_some() || self.comp.timer.is_some();
        // "Once-per-two-segments ACK was not sent by tcp_input.c" (ack_every
        // generalizes the two), or "this read emptied read buffer ... and
        // there was a small segment in queue" — or a full one with PSH
        // (ICSK_ACK_PUSHED; the receiving application never sends, so the
        // connection is not in ping-pong mode). The PSH rule is Linux's
        // receiver (ack_every = 2); another ack_every is the plain "ACK every
        // N segments" of other stacks (ns-3's DelAckCount), which has none.
        let mut time_to_ack = scheduled
            && (copied - self.win.rcv_wup > (self.ack_every as u64 - 1) * self.win.rcv_mss as u64
                || (self.ack_every == 2 && self.pushed && self.win.rmem_alloc == 0));
        if !time_to_ack {
            let now_wnd = self.win.receive_window(copied);
            if 2 * now_wnd <= self.win.window_clamp {
                let mut q = self.quick;
                let new = self.win.raw_window(&mut q);
                self.quick = q;
                time_to_ack = new > 0 && new >= 2 * now_wnd;
            }
        }
        time_to_ack.then(|| self.send_ack(now))
    }

    /// Prefetch hint: the timers (`next_deadline`).
    #[inline(always)]
    pub fn prefetch_deadline(&self) {
        crate::prefetch::fields(&self.read_at, &self.comp);
    }

    /// The earliest receiver timer (the application's read, delayed ACK or
    /// compressed SACK).
    pub fn next_deadline(&self) -> Option<Time> {
        let t = match (self.delack_at, self.comp.timer) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match (t, self.read_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The application reads later than the data arrives: each read is
    /// scheduled by the engine (`schedule_read`) when in-order data waits
    /// and none is (the engine draws the read latency, `[host] read_delay`).
    pub fn defer_reads(&mut self) {
        self.defer_reads = true;
    }

    /// In-order data waits and no read is scheduled (only with `defer_reads`).
    #[inline]
    pub fn read_wanted(&self) -> bool {
        self.unread > 0 && self.read_at.is_none()
    }

    /// The application's next read happens at `at` (≥ now).
    pub fn schedule_read(&mut self, at: Time) {
        self.read_at = Some(at);
    }

    /// A receiver timer fired: the application's read (`tcp_recvmsg`: it
    /// takes every in-order segment waiting, and `tcp_cleanup_rbuf` may ACK),
    /// `tcp_delack_timer` or `tcp_compressed_ack_kick`.
    pub fn on_timer(&mut self, now: Time) -> Option<Ack> {
        if self.read_at.is_some_and(|t| t <= now) {
            self.read_at = None;
            let n = std::mem::take(&mut self.unread);
            if let Some(ack) = self.app_read(now, n) {
                return Some(ack); // it cleared the other timers
            }
        }
        if self.comp.timer.is_some_and(|t| t <= now) {
            self.comp.timer = None;
            if self.comp.count > 0 {
                return Some(self.send_ack(now));
            }
        }
        match self.delack_at {
            Some(t) if t <= now => Some(self.send_ack(now)),
            _ => None,
        }
    }

    /// `tcp_send_ack` + `tcp_event_ack_sent`.
    fn send_ack(&mut self, now: Time) -> Ack {
        let nxt = self.bytes(self.rcv_nxt);
        let mut q = self.quick;
        let window = self.win.select_window(nxt, &mut q);
        self.quick = q.saturating_sub(1);
        self.comp.count = 0;
        self.comp.timer = None;
        self.delack_at = None;
        self.ack_now = false;
        self.pushed = false;
        self.acks_sent += 1;
        let mut ack = self.make_ack();
        ack.wnd_end = ((nxt + window) / self.mss as u64).min(u32::MAX as u64) as u32;
        ack.tsval_ms = ts_ms(now);
        ack.ece = self.ecn.demand_cwr;
        self.ece_acks += ack.ece as u64;
        ack
    }

    /// DCTCP's `__tcp_send_ack(sk, prior_rcv_nxt)`: an ACK of `cum` that
    /// leaves the delayed-ACK state alone (`tcp_event_ack_sent` returns early
    /// for it: "special ACK sent by DCTCP to reflect ECN").
    fn special_ack(&mut self, now: Time, cum: u32) -> Ack {
        let nxt = self.bytes(self.rcv_nxt);
        let mut q = self.quick;
        let window = self.win.select_window(nxt, &mut q);
        self.acks_sent += 1;
        let mut ack = self.make_ack();
        ack.cum = cum;
        ack.wnd_end = ((nxt + window) / self.mss as u64).min(u32::MAX as u64) as u32;
        ack.tsval_ms = ts_ms(now);
        ack.ece = self.ecn.demand_cwr;
        self.ece_acks += ack.ece as u64;
        ack
    }

    /// `this_sack` in `tcp_sack_new_ofo_skb`: the place of the first reported
    /// block that segment `seq` extends (`tcp_sack_extend`: overlapping or
    /// adjacent), or the number of blocks if it extends none.
    fn sack_slot(&self, seq: u32) -> usize {
        self.recent
            .iter()
            .position(|&(s, _)| self.ooo_range_of(s).is_some_and(|(a, b)| seq + 1 >= a && seq <= b))
            .unwrap_or(self.recent.len())
    }

    fn insert_ooo(&mut self, seq: u32) -> (u32, u32) {
        let i = self.ooo.partition_point(|&(_, e)| e < seq);
        // ooo[i] is the first range ending at or after seq.
        if i < self.ooo.len() && self.ooo[i].1 == seq {
            self.ooo[i].1 += 1;
            if i + 1 < self.ooo.len() && self.ooo[i + 1].0 == seq + 1 {
                self.ooo[i].1 = self.ooo[i + 1].1;
                self.ooo.remove(i + 1);
            }
        } else if i < self.ooo.len() && self.ooo[i].0 == seq + 1 {
            self.ooo[i].0 = seq;
        } else {
            self.ooo.insert(i, (seq, seq + 1));
        }
        self.ooo[i]
    }

    fn make_ack(&self) -> Ack {
        let mut ack = Ack { cum: self.rcv_nxt, ..Default::default() };
        if !self.sack {
            return ack;
        }
        // Refresh each reported block to the current extent of its range.
        let mut n = 0;
        for &(s, _) in &self.recent {
            if n == MAX_SACK_BLOCKS {
                break;
            }
            if let Some(r) = self.ooo_range_of(s) {
                if !ack.sacks[..n].contains(&r) {
                    ack.sacks[n] = r;
                    n += 1;
                }
            }
        }
        ack.n_sacks = n as u8;
        ack
    }

    /// The held out-of-order range containing `seq` (binary search: `ooo` is sorted).
    fn ooo_range_of(&self, seq: u32) -> Option<(u32, u32)> {
        let i = self.ooo.partition_point(|&(_, e)| e <= seq);
        self.ooo.get(i).copied().filter(|&(s, _)| s <= seq)
    }

    fn ooo_contains(&self, seq: u32) -> bool {
        self.ooo_range_of(seq).is_some()
    }

    pub fn has_holes(&self) -> bool {
        !self.ooo.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1448;

    fn receiver() -> Receiver {
        let cfg = RcvConfig { mss: MSS, truesize: 2304, rmem: [4096, 131_072, 64 << 20] };
        Receiver::new(Time::ZERO, cfg, Dur::from_ms(100))
    }

    /// A receiver past quick-ack mode whose in-order window has stopped
    /// growing (rcv_ssthresh at the free space with one segment charged).
    fn settled() -> Receiver {
        let mut r = receiver();
        for seq in 0..40 {
            r.on_segment(Time(seq as u64), seq, MSS, 0);
        }
        r.on_timer(Time(Dur::from_secs(1).0));
        assert_eq!(r.quick, 0);
        assert_eq!(r.win.rcv_ssthresh, ((131_072 - 2304) * 160) >> 8);
        r
    }

    #[test]
    fn first_segments_are_acked_one_by_one() {
        // tcp_event_data_recv: the first data segment enters quick-ack mode
        // (16 immediate ACKs); growing rcv_ssthresh also forces the next ACK.
        let mut r = receiver();
        for s in 0..MAX_QUICKACKS {
            assert_eq!(r.on_segment(Time(0), s, MSS, 0).map(|a| a.cum), Some(s + 1));
        }
    }

    #[test]
    fn steady_state_acks_every_second_segment_else_after_40ms() {
        let mut r = settled();
        let n = r.rcv_nxt;
        // Receive window no longer grows: ACK every second full segment ...
        assert_eq!(r.on_segment(Time(10), n, MSS, 0), None);
        assert_eq!(r.delack_at, Some(Time(10) + DELACK_MIN));
        assert_eq!(r.on_segment(Time(11), n + 1, MSS, 0).map(|a| a.cum), Some(n + 2));
        assert_eq!(r.delack_at, None);
        // ... or a lone segment after the delayed-ACK timer (40 ms).
        assert!(r.on_segment(Time(20), n + 2, MSS, 0).is_none());
        assert!(r.on_timer(Time(20) + Dur(DELACK_MIN.0 - 1)).is_none());
        assert_eq!(r.on_timer(Time(20) + DELACK_MIN).map(|a| a.cum), Some(n + 3));
    }

    #[test]
    fn a_late_read_holds_the_acks_and_then_acks_everything_it_read() {
        // __tcp_ack_snd_check: the every-other-segment ACK needs the window
        // not to shrink; unread data takes receive space, so while the
        // application has not read, ACKs wait — and tcp_cleanup_rbuf ACKs
        // all of it after the read (the kernel's stretch ACKs).
        let mut r = settled();
        r.defer_reads();
        let n = r.rcv_nxt;
        for k in 0..10 {
            let mut out = vec![];
            r.on_segment_flags(Time(10 + k as u64), n + k, MSS, 0, false, false, false, false, &mut out);
            assert!(out.is_empty(), "segment {k}: held while unread");
            if r.read_wanted() {
                assert_eq!(k, 0, "one read is scheduled for all of them");
                r.schedule_read(Time(100));
            }
        }
        assert_eq!(r.next_deadline(), Some(Time(100)), "the read comes before the delayed-ACK timer");
        assert_eq!(r.on_timer(Time(99)), None);
        assert_eq!(r.on_timer(Time(100)).map(|a| a.cum), Some(n + 10), "one ACK for the ten segments read");
        assert_eq!((r.next_deadline(), r.read_wanted()), (None, false));
        // Without deferred reads the same ten segments get five ACKs.
        let mut r = settled();
        let n = r.rcv_nxt;
        let acks: usize = (0..10).map(|k| seg_psh(&mut r, 10 + k as u64, n + k, false).len()).sum();
        assert_eq!(acks, 5);
    }

    /// Segment `seq` (full-sized) with PSH set or not; the ACKs it triggers.
    fn seg_psh(r: &mut Receiver, t: u64, seq: u32, psh: bool) -> Vec<u32> {
        let mut out = vec![];
        r.on_segment_flags(Time(t), seq, MSS, 0, false, false, false, psh, &mut out);
        out.iter().map(|a| a.cum).collect()
    }

    #[test]
    fn a_full_segment_with_psh_is_acked_when_the_read_empties_the_queue() {
        // tcp_measure_rcv_mss (Linux 6.18): a full-sized segment with PSH
        // sets ICSK_ACK_PUSHED; tcp_cleanup_rbuf then ACKs at once when the
        // read emptied the receive queue, though only one segment is unacked.
        let mut r = settled();
        let n = r.rcv_nxt;
        assert_eq!(seg_psh(&mut r, 10, n, false), vec![]);
        assert_eq!(seg_psh(&mut r, 11, n + 1, false), vec![n + 2]);
        assert_eq!(seg_psh(&mut r, 12, n + 2, true), vec![n + 3], "PSH: ACKed alone");
        assert_eq!(r.delack_at, None);
        // The flag went with that ACK: the next lone segment waits again.
        assert_eq!(seg_psh(&mut r, 13, n + 3, false), vec![]);
        assert_eq!(seg_psh(&mut r, 14, n + 4, false), vec![n + 5]);
        // A segment shorter than rcv_mss sets the flag too (without PSH).
        let m = r.rcv_nxt;
        let mut out = vec![];
        r.on_segment_flags(Time(15), m, 700, 0, false, false, false, false, &mut out);
        assert_eq!(out.iter().map(|a| a.cum).collect::<Vec<_>>(), vec![m + 1], "short: ACKed alone");
    }

    #[test]
    fn drs_measures_at_the_first_segment_of_a_read_less_what_waits_behind_it() {
        // Linux 6.18's tcp_recvmsg_locked calls tcp_rcv_space_adjust after
        // each skb it copies, and the measurement subtracts what is in order
        // but not yet read ("copied -= inq"). When a retransmission fills a
        // hole, the read that follows measures at its first segment with the
        // rest of the run still queued. The numbers are those of a kernel
        // run (BBR, 20 % loss, tracepoint tcp:tcp_rcvbuf_grow): copied=28960
        // inq=8688 space=14480 ooo=10136, and the next event's space=20272.
        let ms = |x: u64| Time(Dur::from_ms(x).0);
        let mut r = receiver();
        // 20 segments in order, timestamps giving a 100 ms receiver RTT; the
        // first starts the measurement (1448 bytes read, no growth).
        for seq in 0..20 {
            r.on_segment(Time(ms(100).0 + seq as u64), seq, MSS, 0);
        }
        assert_eq!(r.win.rtt(), Some(Dur::from_ms(100)));
        // Segment 20 is lost: 21..26 and (after another hole) 28..33 wait out of order.
        for seq in (21..27).chain(28..34) {
            r.on_segment(ms(150), seq, MSS, 0);
        }
        assert_eq!(r.win.space(), 14_480);
        // 150 ms after the measurement started, segment 20 arrives: the read
        // takes 20..26 (7 segments), and DRS measures after the first:
        // 28960 − 8688 = 20272 > 14480.
        r.on_segment(ms(250), 20, MSS, 0);
        assert_eq!(r.rcv_nxt, 27);
        assert_eq!(r.win.space(), 20_272, "the whole read (37648) would be measured without the rule");
        // tcp_rcvbuf_grow(20272) with 7 segments out of order (10136 bytes):
        // rcvwin = 2·20272 + 2·⌊40544·5792/14480⌋ + 10136 = 83114.
        assert_eq!(r.win.rcvbuf, (83_114u64 << 8) / 160);
    }

    #[test]
    fn acks_carry_the_window_right_edge_and_a_timestamp() {
        let mut r = receiver();
        // The SYN-ACK offered 65160 bytes = 45 segments.
        assert_eq!(r.initial_wnd_end(), 45);
        let a = r.on_segment(Time(Dur::from_ms(7).0), 0, MSS, 0).unwrap();
        assert_eq!(a.tsval_ms, 7);
        // After one segment the window grew by 2·mss and is offered from rcv_nxt.
        let edge = (MSS as u64 + r.win.rcv_wnd) / MSS as u64;
        assert_eq!(a.wnd_end as u64, edge);
        assert!(a.wnd_end > 45);
    }

    #[test]
    fn ack_every_segment_at_once_without_delayed_acks() {
        // ack_every = 1 (delayed_ack = false; Linux's quickack route attribute):
        // in steady state every in-order segment is ACKed at once, no 40 ms timer.
        let mut r = settled();
        r.set_ack_options(1, true);
        let base = r.rcv_nxt;
        for i in 0..6 {
            let t = Time(Dur::from_ms(1000 + i as u64).0);
            assert!(r.on_segment(t, base + i, 1448, 0).is_some(), "segment {i} ACKed at once");
            assert_eq!(r.delack_at, None);
        }
        // out of order: at once too, even after three duplicates (no compression)
        for i in 0..5 {
            assert!(r.on_segment(Time(Dur::from_ms(1100 + i).0), base + 10 + i as u32, 1448, 0).is_some());
        }
    }

    #[test]
    fn ack_every_n_segments_else_the_delayed_ack_timer() {
        let mut r = settled();
        r.set_ack_options(4, true);
        let base = r.rcv_nxt;
        let acked: Vec<bool> = (0..8).map(|i| r.on_segment(Time(10 + i as u64), base + i, MSS, 0).is_some()).collect();
        assert_eq!(acked, [false, false, false, true, false, false, false, true]);
        // PSH on every second segment (every two-segment skb) does not make
        // it ACK more often: the PSH rule is Linux's, for ack_every = 2.
        let base = r.rcv_nxt;
        let acked: Vec<bool> = (0..8).map(|i| !seg_psh(&mut r, 20 + i as u64, base + i, i % 2 == 1).is_empty()).collect();
        assert_eq!(acked, [false, false, false, true, false, false, false, true]);
        // a lone segment waits for the 40 ms timer
        assert!(r.on_segment(Time(30), base + 8, MSS, 0).is_none());
        assert_eq!(r.delack_at, Some(Time(30) + DELACK_MIN));
    }

    #[test]
    fn without_sack_out_of_order_data_gets_plain_duplicate_acks_at_once() {
        let mut r = settled();
        r.set_ack_options(2, false);
        let base = r.rcv_nxt;
        for i in 0..6 {
            let a = r.on_segment(Time(Dur::from_ms(1000 + i).0), base + 1 + i as u32, 1448, 0).expect("a duplicate ACK for each");
            assert_eq!((a.cum, a.n_sacks), (base, 0));
        }
    }

    #[test]
    fn out_of_order_sacks_three_at_once_then_compressed() {
        // __tcp_ack_snd_check with a non-empty out-of-order queue: the first
        // TCP_FASTRETRANS_THRESH duplicate ACKs for one rcv_nxt go at once, the
        // rest wait up to min(1 ms, RTT/20) plus the hrtimer's 100 µs slack, or
        // 44 of them (tcp_comp_sack_*).
        let mut r = settled();
        let n = r.rcv_nxt;
        // n is lost; n+1.. arrive. The first still grows rcv_ssthresh (it is
        // judged before being charged) and is ACKed at once for that; then
        // three duplicate ACKs; then compression.
        let mut sent = vec![];
        for k in 1..=6 {
            sent.push(r.on_segment(Time(100), n + k, MSS, 0).is_some());
        }
        assert_eq!(sent, [true, true, true, true, false, false]);
        let due = r.next_deadline().unwrap();
        assert_eq!(due, Time(100) + COMP_SACK_DELAY + COMP_SACK_SLACK);
        let a = r.on_timer(due).unwrap();
        assert_eq!((a.cum, a.sacks()), (n, &[(n + 1, n + 7)][..]));
        // Filling the hole empties the queue: ACK at once.
        let a = r.on_segment(Time(200), n, MSS, 0).unwrap();
        assert_eq!((a.cum, a.n_sacks), (n + 7, 0));
    }

    #[test]
    fn out_of_order_sack_blocks_most_recent_first() {
        let mut r = settled();
        let n = r.rcv_nxt;
        let a = r.on_segment(Time(1), n + 1, MSS, 0).unwrap();
        assert_eq!((a.cum, a.sacks()), (n, &[(n + 1, n + 2)][..]));
        let a = r.on_segment(Time(2), n + 2, MSS, 0).unwrap();
        assert_eq!(a.sacks(), &[(n + 1, n + 3)]);
        let a = r.on_segment(Time(3), n + 4, MSS, 0).unwrap();
        assert_eq!(a.sacks(), &[(n + 4, n + 5), (n + 1, n + 3)]);
    }

    #[test]
    fn a_compressed_ack_goes_out_before_its_block_would_leave_the_first_two() {
        // tcp_sack_new_ofo_skb (TCP_SACK_BLOCKS_EXPECTED = 2): n is lost, then
        // every other segment arrives, each a new block. The fifth is
        // compressed; the sixth would push its block to second place and the
        // one before to third, so the pending ACK leaves first, reporting the
        // blocks as they were.
        let mut r = settled();
        let n = r.rcv_nxt;
        let mut acks = vec![];
        for k in 0..6 {
            let mut out = vec![];
            r.on_segment_all(Time(100), n + 1 + 2 * k, MSS, 0, &mut out);
            acks.push(out);
        }
        let sent: Vec<usize> = acks.iter().map(Vec::len).collect();
        assert_eq!(sent, [1, 1, 1, 1, 0, 1]);
        let pre = acks[5][0];
        assert_eq!((pre.cum, pre.sacks()), (n, &[(n + 9, n + 10), (n + 7, n + 8), (n + 5, n + 6)][..]));
        // The sixth is itself compressed, sent when the timer fires.
        let a = r.on_timer(r.next_deadline().unwrap()).unwrap();
        assert_eq!(a.sacks(), &[(n + 11, n + 12), (n + 9, n + 10), (n + 7, n + 8)]);
        // A segment that extends the first block sends nothing early.
        let mut out = vec![];
        r.on_segment_all(Time(200), n + 12, MSS, 0, &mut out);
        r.on_segment_all(Time(200), n + 13, MSS, 0, &mut out);
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn at_most_three_sack_blocks() {
        let mut r = receiver();
        for s in [2, 4, 6, 8, 10, 12] {
            r.on_segment(Time(0), s, MSS, 0);
        }
        // The last three were compressed into one ACK, sent when the timer fires.
        let a = r.on_timer(r.next_deadline().unwrap()).unwrap();
        assert_eq!(a.sacks(), &[(12, 13), (10, 11), (8, 9)]);
    }

    #[test]
    fn held_segments_are_charged_truesize_and_freed_when_read() {
        let mut r = settled();
        let n = r.rcv_nxt;
        for k in 1..=5 {
            r.on_segment(Time(1), n + k, MSS, 0);
        }
        assert_eq!(r.win.rmem_alloc, 5 * 2304);
        r.on_segment(Time(2), n, MSS, 0);
        assert_eq!(r.win.rmem_alloc, 0);
        assert_eq!(r.rcv_nxt, n + 6);
    }

    #[test]
    fn duplicate_is_acked_at_once() {
        let mut r = settled();
        let n = r.rcv_nxt;
        assert_eq!(r.on_segment(Time(0), n - 1, MSS, 0).map(|a| a.cum), Some(n));
    }
}

#[cfg(test)]
mod ecn_tests {
    use super::*;

    fn rcv(mode: EcnMode) -> Receiver {
        let cfg = RcvConfig { mss: 1448, truesize: 2304, rmem: [4096, 131_072, 6 << 20] };
        let mut r = Receiver::new(Time::ZERO, cfg, Dur::from_ms(10));
        r.set_ecn(mode);
        r
    }

    fn seg(r: &mut Receiver, t_ms: u64, seq: u32, ce: bool, cwr: bool) -> Vec<Ack> {
        let mut out = vec![];
        r.on_segment_flags(Time(t_ms * 1_000_000), seq, 1448, 0, true, ce, cwr, false, &mut out);
        out
    }

    /// Deliver in-order segments until quick-ack mode is over (ACKs every
    /// second segment from then on).
    fn warm_up(r: &mut Receiver) -> u32 {
        let mut seq = 0;
        while r.quick > 0 || seq < 40 {
            seg(r, 1, seq, false, false);
            seq += 1;
        }
        seq
    }

    #[test]
    fn classic_echoes_ece_from_ce_until_cwr_and_acks_ce_at_once() {
        let mut r = rcv(EcnMode::Classic);
        let mut seq = warm_up(&mut r);
        // Make a delayed ACK pending (one segment), then a CE segment arrives:
        // __tcp_ecn_check_ce enters quick-ack mode, so it is ACKed at once.
        let a = seg(&mut r, 2, seq, false, false);
        assert!(a.is_empty() && r.delack_at.is_some());
        seq += 1;
        let a = seg(&mut r, 2, seq, true, false);
        seq += 1;
        assert_eq!(a.len(), 1);
        assert!(a[0].ece);
        // Every ACK carries ECE until a CWR segment arrives …
        for _ in 0..6 {
            for a in seg(&mut r, 3, seq, false, false) {
                assert!(a.ece);
            }
            seq += 1;
        }
        // … which is ACKed at once, without ECE.
        let a = seg(&mut r, 4, seq, false, true);
        assert_eq!(a.len(), 1);
        assert!(!a[0].ece);
        assert_eq!(r.ce_segments, 1);
    }

    #[test]
    fn dctcp_mirrors_ce_and_flushes_the_delayed_ack_on_a_change() {
        // RFC 8257 §3.2 / Linux dctcp_ece_ack_update.
        let mut r = rcv(EcnMode::Dctcp);
        let mut seq = warm_up(&mut r);
        let a = seg(&mut r, 2, seq, false, false);
        assert!(a.is_empty() && r.delack_at.is_some());
        seq += 1;
        // CE arrives with an ACK delayed: the delayed ACK goes first (ECE
        // clear, acking only the data before this segment), then this one.
        let a = seg(&mut r, 2, seq, true, false);
        assert_eq!(a.len(), 2, "{a:?}");
        assert!(!a[0].ece && a[0].cum == seq);
        assert!(a[1].ece && a[1].cum == seq + 1);
        seq += 1;
        // A CE run: every ACK carries ECE (how many ACKs depends on the
        // delayed-ACK rules; this young connection still grows its window
        // and ACKs most segments at once).
        let mut n = 0;
        for _ in 0..6 {
            for a in seg(&mut r, 3, seq, true, false) {
                assert!(a.ece);
                n += 1;
            }
            seq += 1;
        }
        assert!(n >= 3);
        // CWR does not end DCTCP's echo of a CE segment.
        let a = seg(&mut r, 3, seq, true, true);
        assert!(a.iter().all(|a| a.ece));
        seq += 1;
        // Back to not-CE: the ECE run ends at once.
        let a = seg(&mut r, 4, seq, false, false);
        assert!(!a.is_empty() && !a.last().unwrap().ece);
    }
}
