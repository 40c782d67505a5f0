//! The receiver's memory and advertised window, as Linux 6.18 manages them.
//!
//! A receiver does not advertise "infinite" space: Linux starts every
//! connection with `tcp_rmem[1]` (128 KiB) of receive buffer, offers only part
//! of it (`rcv_ssthresh`, grown per received segment), charges every held
//! out-of-order segment its full `skb->truesize`, and grows the buffer once per
//! receiver RTT from what the application read (Dynamic Right-Sizing). Early
//! in a connection — and whenever loss leaves segments waiting in the
//! out-of-order queue — the advertised window, not cwnd, limits the sender
//! (measured on Linux 6.18: a BBR flow at 20 % random loss was receive-window
//! limited for 0.44 s of its Startup, which then ended at ~10 Mbit/s).
//!
//! Sources (Linux 6.18): net/ipv4/tcp_output.c `tcp_select_initial_window`,
//! `__tcp_select_window`, `tcp_select_window`; net/ipv4/tcp_input.c
//! `tcp_init_buffer_space`, `tcp_measure_rcv_mss`, `tcp_grow_window`,
//! `__tcp_grow_window`, `tcp_rcv_rtt_update`, `tcp_rcv_rtt_measure`,
//! `tcp_rcv_rtt_measure_ts`, `tcp_rcv_space_adjust`, `tcp_rcvbuf_grow`,
//! `tcp_clamp_window`; net/ipv4/tcp.c `tcp_set_window_clamp`,
//! `tcp_recvmsg_locked` (DRS measured after each skb copied);
//! include/net/tcp.h `tcp_win_from_space`, `tcp_space`, `tcp_full_space`.
//!
//! Byte counts are payload bytes (Linux's sequence space); memory is charged
//! in `truesize` bytes per segment, a property of the receiving host's
//! network device (2304 for the kernel backend's TUN device, measured with
//! sock_diag SKMEMINFO: 11 520 bytes for 5 held segments).
//!
//! Deviations: no memory pressure (`tcp_under_memory_pressure` is false), no
//! `SO_RCVBUF`/`SO_RCVLOWAT`, the application reads in-order data at once,
//! in-order data is never collapsed or coalesced (so each segment costs one
//! truesize while it waits), and a segment is never dropped for lack of
//! memory (the buffer may grow to `tcp_rmem[2]`; beyond that the overshoot is
//! counted in `overcommit_segments`).

use crate::time::{Dur, Time};

/// `TCP_RMEM_TO_WIN_SCALE` (include/net/tcp.h): scaling ratios are in 1/256.
const RMEM_TO_WIN_SCALE: u32 = 8;
/// `TCP_DEFAULT_SCALING_RATIO` (include/net/tcp.h): 1/2 until a full segment is measured.
const DEFAULT_SCALING_RATIO: u64 = 1 << (RMEM_TO_WIN_SCALE - 1);
/// `TCP_MSS_DEFAULT` (include/net/tcp.h): rcv_mss before the first segment (`tcp_initialize_rcv_mss`).
const MSS_DEFAULT: u32 = 536;
/// `TCP_INIT_CWND` (include/net/tcp.h): bounds the first DRS measurement (`tcp_init_buffer_space`).
const INIT_CWND: u64 = 10;
/// `TCP_MAX_WSCALE` (include/net/tcp.h).
const MAX_WSCALE: u32 = 14;
/// `net.core.rmem_max` default (`SK_RMEM_MAX` = 212 992): also bounds the window scale choice.
const CORE_RMEM_MAX: u64 = 212_992;
/// `SOCK_MIN_RCVBUF` (include/net/sock.h) = 2 × (2048 + sizeof(struct sk_buff)), ≈ 4.6 KB.
const SOCK_MIN_RCVBUF: u64 = 2 * (2048 + 256);

/// Receive-side host parameters (the IR's `host`).
#[derive(Clone, Copy, Debug)]
pub struct RcvConfig {
    /// Payload bytes per full segment (the peer's MSS, also our `advmss`).
    pub mss: u32,
    /// `skb->truesize` of one received full segment.
    pub truesize: u32,
    /// `net.ipv4.tcp_rmem`: min, default (initial `sk_rcvbuf`), max.
    pub rmem: [u64; 3],
}

#[derive(Clone, Debug)]
pub struct RcvWindow {
    cfg: RcvConfig,
    /// `sk->sk_rcvbuf`.
    pub rcvbuf: u64,
    /// `tp->scaling_ratio` (1/256): payload per byte of receive memory.
    pub scaling_ratio: u64,
    /// `tp->window_clamp`.
    pub window_clamp: u64,
    /// `tp->rcv_ssthresh`: the window the receiver is willing to offer now.
    pub rcv_ssthresh: u64,
    /// `tp->rcv_wnd`: the last window advertised, from `rcv_wup`.
    pub rcv_wnd: u64,
    /// `tp->rcv_wup`: rcv_nxt (bytes) when `rcv_wnd` was advertised.
    pub rcv_wup: u64,
    /// `tp->rx_opt.rcv_wscale`.
    pub wscale: u32,
    /// `icsk_ack.rcv_mss`: our guess of the peer's MSS.
    pub rcv_mss: u32,
    /// `sk->sk_rmem_alloc`: truesize of what is held (out-of-order or unread).
    pub rmem_alloc: u64,
    /// `tp->rcvq_space`: DRS state (bytes copied per RTT, measurement start).
    space: u64,
    space_seq: u64,
    space_time: Time,
    /// `tp->rcv_rtt_est.rtt_us` (×8, µs) and the window-based measurement's start.
    rtt_us8: u64,
    rtt_seq: u64,
    rtt_time: Option<Time>,
    /// `tp->rcv_rtt_last_tsecr`.
    last_tsecr: Option<u32>,
    /// Segments accepted beyond `tcp_rmem[2]` (Linux would drop them).
    pub overcommit_segments: u64,
}

#[inline]
fn align_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

impl RcvWindow {
    /// The state right after the three-way handshake at `now`
    /// (`tcp_select_initial_window` for the SYN-ACK, then `tcp_init_buffer_space`).
    pub fn new(now: Time, cfg: RcvConfig) -> RcvWindow {
        let mss = cfg.mss as u64;
        let mut w = RcvWindow {
            cfg,
            rcvbuf: cfg.rmem[1],
            scaling_ratio: DEFAULT_SCALING_RATIO,
            window_clamp: 0,
            rcv_ssthresh: 0,
            rcv_wnd: 0,
            rcv_wup: 0,
            wscale: 0,
            rcv_mss: MSS_DEFAULT,
            rmem_alloc: 0,
            space: 0,
            space_seq: 0,
            space_time: now,
            rtt_us8: 0,
            rtt_seq: 0,
            rtt_time: None,
            last_tsecr: None,
            overcommit_segments: 0,
        };
        // tcp_select_initial_window: offer the full space, a multiple of mss;
        // the scale is chosen for the largest buffer the socket may grow to.
        let space = w.full_space();
        let wscale_space = space.max(cfg.rmem[2]).max(CORE_RMEM_MAX).min((u16::MAX as u64) << MAX_WSCALE);
        w.wscale = wscale_space.ilog2().saturating_sub(15).min(MAX_WSCALE);
        w.rcv_wnd = if space > mss { space / mss * mss } else { space };
        w.rcv_ssthresh = w.rcv_wnd;
        // tcp_init_buffer_space (tcp_app_win = 31): clamp to the full space,
        // then reserve one segment for the application.
        let maxwin = w.full_space();
        w.window_clamp = maxwin;
        if w.window_clamp > 2 * mss && w.window_clamp + mss > maxwin {
            w.window_clamp = (2 * mss).max(maxwin - mss);
        }
        w.rcv_ssthresh = w.rcv_ssthresh.min(w.window_clamp);
        w.space = w.rcv_ssthresh.min(w.rcv_wnd).min(INIT_CWND * mss);
        w
    }

    /// `tcp_win_from_space`.
    #[inline]
    fn win_from_space(&self, space: i64) -> i64 {
        (space * self.scaling_ratio as i64) >> RMEM_TO_WIN_SCALE
    }
    /// `tcp_space_from_win`.
    #[inline]
    fn space_from_win(&self, win: u64) -> u64 {
        (win << RMEM_TO_WIN_SCALE) / self.scaling_ratio
    }
    /// `tcp_full_space`.
    #[inline]
    fn full_space(&self) -> u64 {
        self.win_from_space(self.rcvbuf as i64).max(0) as u64
    }
    /// `tcp_space`: the window the free receive memory could hold.
    #[inline]
    fn free_space(&self) -> i64 {
        self.win_from_space(self.rcvbuf as i64 - self.rmem_alloc as i64)
    }

    /// `tcp_measure_rcv_mss` for a segment of `len` payload bytes: the first
    /// full segment sets rcv_mss and the scaling ratio (len / truesize), which
    /// moves the window clamp (`tcp_set_window_clamp`).
    pub fn measure_rcv_mss(&mut self, len: u32) {
        if len < self.rcv_mss || len == self.rcv_mss {
            if len >= self.rcv_mss {
                self.rcv_mss = len.min(self.cfg.mss);
            }
            return;
        }
        let old = self.scaling_ratio;
        let ratio = ((len as u64) << RMEM_TO_WIN_SCALE) / self.cfg.truesize as u64;
        self.scaling_ratio = ratio.clamp(1, 255);
        if old != self.scaling_ratio {
            let clamp = (SOCK_MIN_RCVBUF / 2).max(self.full_space());
            if clamp < self.window_clamp {
                self.window_clamp = clamp;
                self.rcv_ssthresh = self.rcv_ssthresh.min(clamp);
            } else if clamp > self.window_clamp {
                self.window_clamp = clamp;
                self.rcv_ssthresh = self.rcv_ssthresh.max(self.rcv_wnd.min(clamp));
            }
        }
        self.rcv_mss = len.min(self.cfg.mss);
    }

    /// `tcp_grow_window`: a segment of `len` bytes (charged `truesize`) may
    /// raise `rcv_ssthresh` by two segments. Returns whether it grew (Linux
    /// then sets `icsk_ack.quick`, so the next ACK goes out at once).
    pub fn grow_window(&mut self, len: u32) -> bool {
        let room = (self.window_clamp as i64).min(self.free_space()) - self.rcv_ssthresh as i64;
        if room <= 0 {
            return false;
        }
        let truesize = self.cfg.truesize as i64;
        let incr = if self.win_from_space(truesize) <= len as i64 {
            2 * self.cfg.mss as i64
        } else {
            // __tcp_grow_window: allow it while rcv_ssthresh is small relative
            // to the largest buffer, halving both sides.
            let mut t = self.win_from_space(truesize) >> 1;
            let mut window = self.win_from_space(self.cfg.rmem[2] as i64) >> 1;
            let mut incr = 0;
            while self.rcv_ssthresh as i64 <= window {
                if t <= len as i64 {
                    incr = 2 * self.rcv_mss as i64;
                    break;
                }
                t >>= 1;
                window >>= 1;
            }
            incr
        };
        if incr == 0 {
            return false;
        }
        let incr = incr.max(2 * len as i64);
        self.rcv_ssthresh += room.min(incr) as u64;
        true
    }

    /// One more full segment held in receive memory; the buffer grows first
    /// if it would overflow (`tcp_try_rmem_schedule` → `tcp_prune_queue` →
    /// `tcp_clamp_window`).
    pub fn charge(&mut self) {
        let t = self.cfg.truesize as u64;
        if self.rmem_alloc + t > self.rcvbuf {
            if self.rcvbuf < self.cfg.rmem[2] {
                self.rcvbuf = (self.rmem_alloc + t).min(self.cfg.rmem[2]);
            }
            if self.rmem_alloc + t > self.rcvbuf {
                self.rcv_ssthresh = self.window_clamp.min(2 * self.cfg.mss as u64);
                self.overcommit_segments += 1;
            }
        }
        self.rmem_alloc += t;
    }

    /// `n` held segments were read by the application.
    pub fn uncharge(&mut self, n: u32) {
        self.rmem_alloc = self.rmem_alloc.saturating_sub(n as u64 * self.cfg.truesize as u64);
    }

    /// `tcp_rcv_rtt_update`: the receiver's RTT estimate (×8) takes any lower
    /// sample at once; with timestamps (`win_dep` false) a higher one moves it 1/8.
    fn rtt_update(&mut self, sample_us: u64, win_dep: bool) {
        let m = sample_us << 3;
        let old = self.rtt_us8;
        if old == 0 || m < old {
            self.rtt_us8 = m;
        } else if !win_dep {
            self.rtt_us8 = old - (old >> 3) + sample_us;
        }
    }

    /// `tcp_rcv_rtt_measure_ts`: a full segment echoing a new timestamp
    /// (TSecr, ms) gives an RTT sample — Linux's TCP timestamps tick in ms.
    pub fn rtt_measure_ts(&mut self, now: Time, tsecr_ms: u32, len: u32) {
        if self.last_tsecr == Some(tsecr_ms) {
            return;
        }
        self.last_tsecr = Some(tsecr_ms);
        if len >= self.rcv_mss {
            // TSecr travels modulo 2^30 ms (link::Seg); so does the difference.
            let delta_ms = ((now.0 / 1_000_000) as u32).wrapping_sub(tsecr_ms) & crate::link::TSECR_MASK;
            if delta_ms > 0 {
                self.rtt_update(delta_ms as u64 * 1000, false);
            }
        }
    }

    /// `tcp_rcv_rtt_measure`: the time to receive one advertised window.
    pub fn rtt_measure(&mut self, now: Time, rcv_nxt: u64) {
        if let Some(t) = self.rtt_time {
            if rcv_nxt < self.rtt_seq {
                return;
            }
            let delta_us = ((now - t).0 / 1000).max(1);
            self.rtt_update(delta_us, true);
        }
        self.rtt_seq = rcv_nxt + self.rcv_wnd;
        self.rtt_time = Some(now);
    }

    /// The receiver's RTT estimate (`rcv_rtt_est.rtt_us >> 3`), if any.
    pub fn rtt(&self) -> Option<Dur> {
        (self.rtt_us8 > 0).then(|| Dur((self.rtt_us8 >> 3) * 1000))
    }

    /// `tcp_rcv_space_adjust`, which `tcp_recvmsg_locked` calls after
    /// copying each skb: the application has read up to `copied_seq` bytes
    /// and `inq` more are in order but not yet read (`rcv_nxt −
    /// copied_seq`). Once per receiver RTT, what was read since the last
    /// measurement less `inq` ("copied -= inq", Linux 6.18) is compared with
    /// the last measurement; if larger, the buffer grows (`tcp_rcvbuf_grow`).
    /// Either way the next measurement starts here, at `copied_seq`.
    pub fn space_adjust(&mut self, now: Time, copied_seq: u64, inq: u64, ooo_span: u64) {
        if self.rtt_us8 == 0 {
            return;
        }
        let time_us = (now - self.space_time).0 / 1000;
        if time_us < self.rtt_us8 >> 3 {
            return;
        }
        // Linux computes it in an int: a long in-order run waiting behind
        // the first skb can make it negative (no growth).
        let copied = (copied_seq - self.space_seq) as i64 - inq as i64;
        if copied > self.space as i64 {
            self.rcvbuf_grow(copied as u64, ooo_span);
        }
        self.space_seq = copied_seq;
        self.space_time = now;
    }

    /// `tcp_rcvbuf_grow`: "DRS is always one RTT late" — the window doubles
    /// what was read, grows further in proportion to the read rate's growth
    /// (slow start), and covers what sits out of order; the buffer follows.
    pub fn rcvbuf_grow(&mut self, newval: u64, ooo_span: u64) {
        let oldval = self.space.max(1);
        self.space = newval;
        let mut rcvwin = newval << 1;
        let grow = rcvwin * newval.saturating_sub(oldval) / oldval;
        rcvwin += grow << 1;
        rcvwin += ooo_span;
        let rcvbuf = self.space_from_win(rcvwin).min(self.cfg.rmem[2]);
        if rcvbuf > self.rcvbuf {
            self.rcvbuf = rcvbuf;
            self.window_clamp = self.full_space();
        }
    }

    /// The DRS measurement's current "bytes per RTT" (`rcvq_space.space`).
    pub fn space(&self) -> u64 {
        self.space
    }

    /// `__tcp_select_window`: what the free memory and `rcv_ssthresh` allow
    /// now, in bytes (aligned to the window scale).
    pub fn raw_window(&mut self, quick: &mut u32) -> u64 {
        let mut mss = self.rcv_mss as i64;
        let mut free = self.free_space();
        let allowed = self.full_space() as i64;
        let full = (self.window_clamp as i64).min(allowed);
        if mss > full {
            mss = full;
            if mss <= 0 {
                return 0;
            }
        }
        let unit = 1i64 << self.wscale;
        if free < full >> 1 {
            *quick = 0;
            free = free.div_euclid(unit) * unit;
            if free < allowed >> 4 || free < mss {
                return 0;
            }
        }
        let free = (free as u64).min(self.rcv_ssthresh);
        if self.wscale > 0 {
            align_up(free, unit as u64)
        } else {
            free
        }
    }

    /// `tcp_select_window` at `rcv_nxt` (bytes): never shrink the offered
    /// right edge. Returns the window to advertise (bytes, a multiple of
    /// the scale unit, as the peer will read it).
    pub fn select_window(&mut self, rcv_nxt: u64, quick: &mut u32) -> u64 {
        let cur = (self.rcv_wup + self.rcv_wnd).saturating_sub(rcv_nxt);
        let mut new = self.raw_window(quick);
        if new < cur {
            new = align_up(cur, 1 << self.wscale);
        }
        self.rcv_wnd = new;
        self.rcv_wup = rcv_nxt;
        (new >> self.wscale) << self.wscale
    }

    /// The window still open from `rcv_nxt` (`tcp_receive_window`).
    pub fn receive_window(&self, rcv_nxt: u64) -> u64 {
        (self.rcv_wup + self.rcv_wnd).saturating_sub(rcv_nxt)
    }

    pub fn config(&self) -> &RcvConfig {
        &self.cfg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tun() -> RcvConfig {
        RcvConfig { mss: 1448, truesize: 2304, rmem: [4096, 131_072, 64 << 20] }
    }

    #[test]
    fn initial_window_matches_linux_on_the_kernel_backend() {
        // Measured on Linux 6.18 (kernel backend, tcp_rmem 4096 131072 64 MiB):
        // SYN-ACK window 65160, rcv_ssthresh 64088, rcv_space 14480, wscale 11.
        let w = RcvWindow::new(Time::ZERO, tun());
        assert_eq!(w.rcv_wnd, 65_160);
        assert_eq!(w.rcv_ssthresh, 64_088);
        assert_eq!(w.space(), 14_480);
        assert_eq!(w.wscale, 11);
    }

    #[test]
    fn first_full_segment_sets_the_scaling_ratio_and_clamp() {
        // 1448 / 2304 → ratio 160/256; window_clamp = 131072 × 160/256 = 81920,
        // rcv_ssthresh = min(rcv_wnd, clamp) = 65160 (both measured on 6.18).
        let mut w = RcvWindow::new(Time::ZERO, tun());
        w.measure_rcv_mss(1448);
        assert_eq!(w.scaling_ratio, 160);
        assert_eq!(w.window_clamp, 81_920);
        assert_eq!(w.rcv_ssthresh, 65_160);
        // Each in-order segment then grows rcv_ssthresh by 2·advmss up to the clamp.
        assert!(w.grow_window(1448));
        assert_eq!(w.rcv_ssthresh, 65_160 + 2896);
        for _ in 0..10 {
            w.grow_window(1448);
        }
        assert_eq!(w.rcv_ssthresh, 81_920);
        assert!(!w.grow_window(1448));
    }

    #[test]
    fn held_segments_shrink_the_offer_but_never_the_right_edge() {
        let mut w = RcvWindow::new(Time::ZERO, tun());
        w.measure_rcv_mss(1448);
        for _ in 0..10 {
            w.grow_window(1448);
        }
        let mut quick = 0;
        let first = w.select_window(0, &mut quick);
        assert_eq!(first, align_up(81_920, 2048));
        // 20 segments held out of order: free memory 131072 − 46080 → 53 120 bytes of window.
        for _ in 0..20 {
            w.charge();
        }
        assert_eq!(w.raw_window(&mut quick), align_up(((131_072 - 20 * 2304) * 160) >> 8, 2048));
        // The right edge offered at rcv_nxt = 0 stays: at rcv_nxt = 1448 the window is edge − 1448.
        let again = w.select_window(1448, &mut quick);
        assert_eq!(again, align_up(first - 1448, 2048));
    }

    #[test]
    fn drs_doubles_what_was_read_plus_the_slow_start_allowance() {
        // tcp_rcvbuf_grow from space 14480 to 34752 copied: rcvwin = 2·34752
        // + 2·⌊(2·34752)·(34752−14480)/14480⌋ = 264 114 → rcvbuf = 264 114·256/160.
        let mut w = RcvWindow::new(Time::ZERO, tun());
        w.measure_rcv_mss(1448);
        w.rtt_update(100_000, false);
        w.space_adjust(Time(Dur::from_ms(150).0), 34_752, 0, 0);
        assert_eq!(w.rcvbuf, (264_114u64 << 8) / 160);
        assert_eq!(w.window_clamp, (w.rcvbuf * 160) >> 8);
        // Too soon (less than one receiver RTT later): no change.
        let b = w.rcvbuf;
        w.space_adjust(Time(Dur::from_ms(200).0), 1_000_000, 0, 0);
        assert_eq!(w.rcvbuf, b);
    }

    #[test]
    fn drs_subtracts_what_is_in_order_but_unread_and_restarts_either_way() {
        let mut w = RcvWindow::new(Time::ZERO, tun());
        w.measure_rcv_mss(1448);
        w.rtt_update(100_000, false);
        // 20 segments read, 26 still queued: 28960 − 37648 < 0, no growth ...
        w.space_adjust(Time(Dur::from_ms(150).0), 28_960, 37_648, 0);
        assert_eq!((w.space(), w.rcvbuf), (14_480, 131_072));
        // ... but the next measurement starts there: 150 ms later, 40 more
        // segments read (57920 bytes) and nothing queued measure 57920.
        w.space_adjust(Time(Dur::from_ms(300).0), 28_960 + 57_920, 0, 0);
        assert_eq!(w.space(), 57_920);
    }

    #[test]
    fn receiver_rtt_from_timestamps_is_a_slow_moving_minimum() {
        let mut w = RcvWindow::new(Time::ZERO, tun());
        w.rtt_measure_ts(Time(Dur::from_ms(1100).0), 1000, 1448);
        assert_eq!(w.rtt(), Some(Dur::from_ms(100)));
        // The same echo again gives no sample; a higher one moves it by 1/8.
        w.rtt_measure_ts(Time(Dur::from_ms(1300).0), 1000, 1448);
        assert_eq!(w.rtt(), Some(Dur::from_ms(100)));
        w.rtt_measure_ts(Time(Dur::from_ms(1380).0), 1200, 1448);
        assert_eq!(w.rtt(), Some(Dur(((800_000 - 100_000 + 180_000) >> 3) * 1000)));
        // A lower one is taken at once.
        w.rtt_measure_ts(Time(Dur::from_ms(1450).0), 1360, 1448);
        assert_eq!(w.rtt(), Some(Dur::from_ms(90)));
    }
}
