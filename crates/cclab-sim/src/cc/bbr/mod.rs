//! BBRv1 as Linux runs it (net/ipv4/tcp_bbr.c), plus the three BBR variants
//! the WPI thesis proposes, as parameter presets of the same code.
//!
//! One file per state: [`startup`], [`drain`], [`probe_bw`], [`probe_rtt`];
//! the model pieces that cut across states live in [`filters`] (windowed max
//! filter), [`lt_bw`] (long-term / policer model) and [`variants`]
//! (`bbr_cwnd_feedback`, `bbr_sticky_rtprop`). Function names follow
//! tcp_bbr.c (`bbr_update_bw` is [`Bbr::update_bw`], …) so the two can be
//! read side by side.
//!
//! Units follow Linux so integer rounding matches: bandwidth in packets per
//! µs scaled by 2^24 (`BW_SCALE`), gains in 1/256 (`BBR_SCALE`), cwnd in
//! packets. Deliberate deviations from Linux:
//! * timestamps are the simulator's ns clock instead of jiffies/µs stamps
//!   (min_rtt window and ProbeRTT's 200 ms are exact rather than jiffy-rounded);
//! * `sk_max_pacing_rate` is unbounded;
//! * `GSO_MAX_SIZE − 1 − MAX_TCP_HEADER` for the TSO goal uses
//!   `MAX_TCP_HEADER` = 320 bytes (x86-64 default build).

pub mod config;
pub mod cwnd;
pub mod drain;
pub mod filters;
pub mod lt_bw;
pub mod probe_bw;
pub mod probe_rtt;
pub mod startup;
pub mod variants;

use super::{CaState, CcError, CongestionOps, Conn, CwndEvent, Params, RateSample, Snapshot};
use crate::time::{Bandwidth, Dur, Time, NS_PER_MS, NS_PER_US};
use filters::Minmax;
use lt_bw::LtBw;
use crate::rng::Rng;
use variants::{CwndFeedback, StickyRtprop};

pub(crate) use config::{count_param, gain_param};
pub use config::{BbrConfig, NAMES, PARAMS};
pub(crate) use cwnd::AckAggregation;

/// `BW_SCALE` (tcp_bbr.c): bandwidth is packets/µs << 24 (~715 bit/s per unit at 1500 B).
pub const BW_SCALE: u32 = 24;
pub const BW_UNIT: u64 = 1 << BW_SCALE;
/// `BBR_SCALE` (tcp_bbr.c): gains and fractions are in 1/256.
pub const BBR_SCALE: u32 = 8;
pub const BBR_UNIT: u32 = 1 << BBR_SCALE;

/// `CYCLE_LEN` (tcp_bbr.c): phases in the ProbeBW pacing-gain cycle.
pub const CYCLE_LEN: usize = 8;
/// `bbr_bw_rtts = CYCLE_LEN + 2` (tcp_bbr.c): max-filter window in rounds.
pub const BW_RTTS: u32 = CYCLE_LEN as u32 + 2;
/// `bbr_min_rtt_win_sec` (tcp_bbr.c).
pub const MIN_RTT_WIN_SEC: u64 = 10;
/// `bbr_probe_rtt_mode_ms` (tcp_bbr.c).
pub const PROBE_RTT_MODE_MS: u64 = 200;
/// `bbr_min_tso_rate` (tcp_bbr.c), bit/s: below it one-segment TSO bursts.
pub const MIN_TSO_RATE: u64 = 1_200_000;
/// `bbr_pacing_margin_percent` (tcp_bbr.c): pace 1 % below the estimate.
pub const PACING_MARGIN_PERCENT: u32 = 1;
/// `bbr_high_gain = BBR_UNIT * 2885 / 1000 + 1` (tcp_bbr.c): 2/ln 2, Startup's gain.
pub const HIGH_GAIN: u32 = BBR_UNIT * 2885 / 1000 + 1;
/// `bbr_drain_gain = BBR_UNIT * 1000 / 2885` (tcp_bbr.c): 1/high_gain.
pub const DRAIN_GAIN: u32 = BBR_UNIT * 1000 / 2885;
/// `bbr_cwnd_gain = BBR_UNIT * 2` (tcp_bbr.c): ProbeBW cwnd gain.
pub const CWND_GAIN: u32 = BBR_UNIT * 2;
/// `bbr_cwnd_min_target` (tcp_bbr.c): 4 packets keep delayed ACKs flowing.
pub const CWND_MIN_TARGET: u32 = 4;
/// `bbr_full_bw_thresh = BBR_UNIT * 5 / 4` (tcp_bbr.c).
pub const FULL_BW_THRESH: u32 = BBR_UNIT * 5 / 4;
/// `bbr_full_bw_cnt` (tcp_bbr.c).
pub const FULL_BW_CNT: u32 = 3;
/// `bbr_extra_acked_gain = BBR_UNIT` (tcp_bbr.c).
pub const EXTRA_ACKED_GAIN: u32 = BBR_UNIT;
/// `bbr_extra_acked_win_rtts` (tcp_bbr.c).
pub const EXTRA_ACKED_WIN_RTTS: u32 = 5;
/// `bbr_ack_epoch_acked_reset_thresh = 1U << 20` (tcp_bbr.c).
pub const ACK_EPOCH_ACKED_RESET_THRESH: u32 = 1 << 20;
/// `bbr_extra_acked_max_us` (tcp_bbr.c): cap extra_acked at 100 ms of bw.
pub const EXTRA_ACKED_MAX_US: u64 = 100_000;
/// `TCP_INIT_CWND` (include/net/tcp.h).
pub const TCP_INIT_CWND: u32 = super::INIT_CWND;
/// `sk_pacing_shift` default (include/net/sock.h `sk_pacing_shift_update`,
/// net/core/sock.c): TSO bursts hold ~1 ms (2^-10 s) of the pacing rate.
pub const SK_PACING_SHIFT: u32 = 10;
/// `GSO_MAX_SIZE - 1 - MAX_TCP_HEADER` (bbr_tso_segs_goal): 65536 − 1 − 320.
pub const TSO_MAX_BYTES: u64 = 65536 - 1 - 320;
/// `min(segs, 0x7FU)` in bbr_tso_segs_goal.
pub const TSO_MAX_SEGS: u32 = 0x7F;

/// `enum bbr_mode` (tcp_bbr.c).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    Startup = 0,
    Drain = 1,
    ProbeBw = 2,
    ProbeRtt = 3,
}

/// Names of [`Mode`] for the record, indexed by `Snapshot::state`.
pub const STATE_NAMES: &[&str] = &["STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT"];

/// Linux compares `enum tcp_ca_state` numerically (`prev_ca_state < TCP_CA_Recovery`).
#[inline]
pub(crate) fn ca_rank(s: CaState) -> u8 {
    match s {
        CaState::Open => 0,
        CaState::Disorder => 1,
        CaState::Cwr => 2,
        CaState::Recovery => 3,
        CaState::Loss => 4,
    }
}

/// A bandwidth sample in BBR units (packets/µs << 24) from a rate sample,
/// rounded down as `bbr_update_bw` does (`do_div`). `None` if invalid.
#[inline]
pub(crate) fn bw_sample(rs: &RateSample) -> Option<u64> {
    if rs.interval.ns() == 0 {
        return None;
    }
    Some(
        (rs.delivered as u128 * BW_UNIT as u128 * NS_PER_US as u128 / rs.interval.ns() as u128)
            as u64,
    )
}

/// `bbr_rate_bytes_per_sec`: BBR bw × mss × gain, in bytes/s, less `margin` percent.
#[inline]
pub(crate) fn rate_bytes_per_sec(bw: u64, mss: u32, gain: u32, margin: u32) -> u64 {
    let mut rate = bw as u128 * mss as u128;
    rate *= gain as u128;
    rate >>= BBR_SCALE;
    rate *= (1_000_000 / 100 * (100 - margin as u64)) as u128;
    (rate >> BW_SCALE) as u64
}

/// BBR bandwidth units → bit/s, no margin (for the record).
#[inline]
pub(crate) fn bw_to_bps(bw: u64, mss: u32) -> f64 {
    bw as f64 * mss as f64 * 8.0 * 1e6 / BW_UNIT as f64
}

/// `ceil(bw · min_rtt · gain)` in packets (`bbr_bdp`'s arithmetic).
#[inline]
pub(crate) fn bdp_pkts(bw: u64, min_rtt_us: u64, gain: u32) -> u32 {
    let w = bw as u128 * min_rtt_us as u128;
    let bdp = ((w * gain as u128) >> BBR_SCALE).div_ceil(BW_UNIT as u128); // DIV_ROUND_UP
    bdp.min(u32::MAX as u128) as u32
}

/// `bbr_min_tso_segs` + `bbr_tso_segs_goal`: segments per TSO burst at this pacing rate.
#[inline]
pub(crate) fn tso_segs_goal(pacing_rate_bytes: u64, mss: u32) -> u32 {
    let min_segs = if pacing_rate_bytes < (MIN_TSO_RATE >> 3) {
        1
    } else {
        2
    };
    let bytes = (pacing_rate_bytes >> SK_PACING_SHIFT).min(TSO_MAX_BYTES);
    let segs = ((bytes / mss.max(1) as u64) as u32).max(min_segs);
    segs.min(TSO_MAX_SEGS)
}

/// BBRv1 (`struct bbr`, tcp_bbr.c).
#[derive(Clone, Debug)]
pub struct Bbr {
    name: &'static str,
    pub(crate) cfg: BbrConfig,
    rng: Rng,

    pub(crate) mode: Mode,
    /// `min_rtt_us` (kept in ns); `u64::MAX` before the first sample (`~0U`).
    pub(crate) min_rtt_ns: u64,
    /// `min_rtt_stamp`.
    pub(crate) min_rtt_stamp: Time,
    /// `probe_rtt_done_stamp`; `None` is Linux's 0.
    pub(crate) probe_rtt_done_stamp: Option<Time>,
    /// `bw`: windowed max delivery rate, packets/µs << 24, over `rtt_cnt` rounds.
    pub(crate) bw: Minmax,
    /// `rtt_cnt`: packet-timed rounds elapsed.
    pub(crate) rtt_cnt: u64,
    /// `next_rtt_delivered`: `tp->delivered` at the end of the current round.
    pub(crate) next_rtt_delivered: u64,
    /// `cycle_mstamp`: start of the current gain-cycle phase.
    pub(crate) cycle_mstamp: Time,
    /// `prev_ca_state`.
    pub(crate) prev_ca_state: CaState,
    pub(crate) packet_conservation: bool,
    pub(crate) round_start: bool,
    pub(crate) idle_restart: bool,
    pub(crate) probe_rtt_round_done: bool,
    pub(crate) lt: LtBw,
    pub(crate) pacing_gain: u32,
    pub(crate) cwnd_gain: u32,
    pub(crate) full_bw_reached: bool,
    pub(crate) full_bw_cnt: u32,
    /// `cycle_idx`: index into the pacing-gain cycle.
    pub(crate) cycle_idx: usize,
    pub(crate) has_seen_rtt: bool,
    /// `prior_cwnd`: cwnd before recovery / ProbeRTT, to restore.
    pub(crate) prior_cwnd: u32,
    /// `full_bw`: bw at the last ≥ 25 % growth.
    pub(crate) full_bw: u64,
    pub(crate) ack_agg: AckAggregation,
    /// `sk->sk_pacing_rate` in bytes/s (mirrored to `conn.pacing_rate` in bit/s).
    pub(crate) pacing_rate_bytes: u64,

    pub(crate) sticky: Option<StickyRtprop>,
    pub(crate) feedback: Option<CwndFeedback>,
}

impl Bbr {
    /// Build one of [`NAMES`] from its `cca_params`; `seed` drives the random
    /// ProbeBW start phase (`prandom_u32_max` in Linux).
    pub(crate) fn from_params(mut p: Params, seed: u64) -> Result<Bbr, CcError> {
        let name = NAMES
            .iter()
            .copied()
            .find(|n| *n == p.cca)
            .ok_or_else(|| CcError(format!("'{}' is not a BBRv1-family algorithm", p.cca)))?;
        let cfg = BbrConfig::from_params(&mut p)?;
        p.finish(PARAMS)?;
        Ok(Bbr::new(name, cfg, seed))
    }

    pub fn new(name: &'static str, cfg: BbrConfig, seed: u64) -> Bbr {
        let sticky = cfg.sticky.clone().map(StickyRtprop::new);
        let feedback = cfg.feedback.clone().map(CwndFeedback::new);
        Bbr {
            name,
            rng: Rng::seed_from_u64(seed),
            mode: Mode::Startup,
            min_rtt_ns: u64::MAX,
            min_rtt_stamp: Time::ZERO,
            probe_rtt_done_stamp: None,
            bw: Minmax::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            cycle_mstamp: Time::ZERO,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            round_start: false,
            idle_restart: false,
            probe_rtt_round_done: false,
            lt: LtBw::default(),
            pacing_gain: cfg.high_gain,
            cwnd_gain: cfg.high_gain,
            full_bw_reached: false,
            full_bw_cnt: 0,
            cycle_idx: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            full_bw: 0,
            ack_agg: AckAggregation::default(),
            pacing_rate_bytes: 0,
            sticky,
            feedback,
            cfg,
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// `prandom_u32_max(n)`: uniform in [0, n), from the seeded generator.
    pub(crate) fn prandom_u32_max(&mut self, n: u32) -> u32 {
        ((self.rng.next_u32() as u64 * n as u64) >> 32) as u32
    }

    /// `bbr_full_bw_reached`.
    #[inline]
    pub(crate) fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    /// `bbr_max_bw`: the windowed max.
    #[inline]
    pub(crate) fn max_bw(&self) -> u64 {
        self.bw.get()
    }

    /// `bbr_bw`: the estimate in use — the policer's rate if one is modelled.
    #[inline]
    pub(crate) fn bbr_bw(&self) -> u64 {
        if self.lt.use_bw {
            self.lt.bw
        } else {
            self.max_bw()
        }
    }

    /// `min_rtt_us` as Linux holds it (truncated µs).
    #[inline]
    pub(crate) fn min_rtt_us(&self) -> u64 {
        self.min_rtt_ns / NS_PER_US
    }

    /// `bbr_extra_acked`: max over the current and previous windows.
    #[inline]
    pub(crate) fn extra_acked(&self) -> u32 {
        self.ack_agg.extra_acked[0].max(self.ack_agg.extra_acked[1])
    }

    /// `bbr_bw_to_pacing_rate`, bytes/s.
    #[inline]
    pub(crate) fn bw_to_pacing_rate(&self, bw: u64, gain: u32, mss: u32) -> u64 {
        rate_bytes_per_sec(bw, mss, gain, self.cfg.pacing_margin_percent)
    }

    fn write_pacing_rate(&mut self, conn: &mut Conn, bytes_per_sec: u64) {
        self.pacing_rate_bytes = bytes_per_sec;
        conn.pacing_rate = Some(Bandwidth(bytes_per_sec.saturating_mul(8)));
    }

    /// `bbr_set_pacing_rate`: pace at gain·bw; before the pipe is full only
    /// ever raise the rate (Startup must not slow down on a noisy sample).
    pub(crate) fn set_pacing_rate(&mut self, conn: &mut Conn, bw: u64, gain: u32) {
        let rate = self.bw_to_pacing_rate(bw, gain, conn.mss);
        if !self.has_seen_rtt && conn.srtt.ns() > 0 {
            self.init_pacing_rate_from_rtt(conn);
        }
        if self.full_bw_reached() || rate > self.pacing_rate_bytes {
            self.write_pacing_rate(conn, rate);
        }
    }

    /// `bbr_tso_segs_goal` at the current pacing rate.
    #[inline]
    pub(crate) fn tso_segs_goal(&self, mss: u32) -> u32 {
        tso_segs_goal(self.pacing_rate_bytes, mss)
    }

    /// `bbr_save_cwnd`: remember the last good cwnd to restore after
    /// recovery or ProbeRTT.
    pub(crate) fn save_cwnd(&mut self, conn: &Conn) {
        if ca_rank(self.prev_ca_state) < ca_rank(CaState::Recovery) && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = conn.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(conn.cwnd);
        }
    }

    /// `bbr_packets_in_net_at_edt`: inflight at the earliest departure time of
    /// the next packet, less what the path delivers until then.
    pub(crate) fn packets_in_net_at_edt(&self, conn: &Conn, inflight_now: u32) -> u32 {
        let edt = conn.wstamp.max(conn.now);
        let interval_us = (edt - conn.now).ns() / NS_PER_US;
        let interval_delivered = ((self.bbr_bw() as u128 * interval_us as u128) >> BW_SCALE) as u64;
        let mut inflight_at_edt = inflight_now as u64;
        if self.pacing_gain > BBR_UNIT {
            inflight_at_edt += self.tso_segs_goal(conn.mss) as u64; // include the EDT skb
        }
        if interval_delivered >= inflight_at_edt {
            return 0;
        }
        (inflight_at_edt - interval_delivered) as u32
    }

    /// `bbr_update_bw`: advance the packet-timed round counter and feed the
    /// delivery-rate sample to the max filter (app-limited samples only if
    /// they do not lower it).
    pub(crate) fn update_bw(&mut self, conn: &Conn, rs: &RateSample) {
        self.round_start = false;
        let Some(bw) = bw_sample(rs) else { return };
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = conn.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
            // bbr_cwnd_feedback: judge the round that just ended (before
            // this sample, which belongs to the new one).
            let (btl_bw, min_rtt_ns, in_probe_bw) =
                (self.bbr_bw(), self.min_rtt_ns, self.mode == Mode::ProbeBw);
            if let Some(fb) = self.feedback.as_mut() {
                fb.on_round_start(conn, btl_bw, min_rtt_ns, in_probe_bw);
            }
        }
        self.lt_bw_sampling(conn, rs);
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw
                .running_max(self.cfg.bw_rtts as u64, self.rtt_cnt, bw);
        }
        if let Some(fb) = self.feedback.as_mut() {
            fb.on_sample(bw, rs);
        }
    }

    /// `bbr_update_gains`: the gains each mode runs with.
    pub(crate) fn update_gains(&mut self) {
        match self.mode {
            Mode::Startup => {
                self.pacing_gain = self.cfg.high_gain;
                self.cwnd_gain = self.cfg.high_gain;
            }
            Mode::Drain => {
                self.pacing_gain = self.cfg.drain_gain;
                self.cwnd_gain = self.cfg.high_gain; // keep cwnd
            }
            Mode::ProbeBw => {
                self.pacing_gain = if self.lt.use_bw {
                    BBR_UNIT
                } else {
                    self.cycle_gain(self.cycle_idx)
                };
                self.cwnd_gain = self.target_cwnd_gain(self.cfg.cwnd_gain);
            }
            Mode::ProbeRtt => {
                self.pacing_gain = BBR_UNIT;
                self.cwnd_gain = BBR_UNIT;
            }
        }
    }

    /// `bbr_update_model`.
    fn update_model(&mut self, conn: &mut Conn, rs: &RateSample) {
        self.update_bw(conn, rs);
        self.update_ack_aggregation(conn, rs);
        self.update_cycle_phase(conn, rs);
        self.check_full_bw_reached(rs);
        self.check_drain(conn);
        self.update_min_rtt(conn, rs);
        self.update_gains();
    }

    /// `bbr_main`: the `.cong_control` hook.
    pub fn bbr_main(&mut self, conn: &mut Conn, rs: &RateSample) {
        self.update_model(conn, rs);
        let bw = self.bbr_bw();
        self.set_pacing_rate(conn, bw, self.pacing_gain);
        self.set_cwnd(conn, rs, rs.acked_sacked, bw, self.cwnd_gain);
    }

    /// `bbr_init`.
    pub fn bbr_init(&mut self, conn: &mut Conn) {
        self.prior_cwnd = 0;
        conn.ssthresh = super::INFINITE_SSTHRESH;
        self.rtt_cnt = 0;
        self.next_rtt_delivered = conn.delivered;
        self.prev_ca_state = CaState::Open;
        self.packet_conservation = false;
        self.probe_rtt_done_stamp = None;
        self.probe_rtt_round_done = false;
        self.min_rtt_ns = conn.min_rtt.map(|d| d.ns()).unwrap_or(u64::MAX);
        self.min_rtt_stamp = conn.now;
        self.bw.reset(self.rtt_cnt, 0);
        self.has_seen_rtt = false;
        self.init_pacing_rate_from_rtt(conn);
        self.round_start = false;
        self.idle_restart = false;
        self.full_bw_reached = false;
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.cycle_mstamp = Time::ZERO;
        self.cycle_idx = 0;
        self.reset_lt_bw_sampling(conn);
        self.reset_startup_mode();
        self.ack_agg = AckAggregation {
            epoch_mstamp: conn.now,
            ..Default::default()
        };
        self.update_gains();
    }
}

impl CongestionOps for Bbr {
    fn name(&self) -> &'static str {
        self.name
    }
    fn init(&mut self, conn: &mut Conn) {
        self.bbr_init(conn);
    }
    /// `bbr_ssthresh`: entering loss recovery — save cwnd, leave ssthresh alone.
    fn ssthresh(&mut self, conn: &Conn) -> u32 {
        self.save_cwnd(conn);
        conn.ssthresh
    }
    /// `bbr_set_state`: an RTO ends the round and counts as a loss for the
    /// policer model; full-bw detection restarts.
    fn set_state(&mut self, conn: &mut Conn, new: CaState) {
        if new == CaState::Loss {
            let rs = RateSample {
                losses: 1,
                ..Default::default()
            };
            self.prev_ca_state = CaState::Loss;
            self.full_bw = 0;
            self.round_start = true; // treat RTO like the end of a round
            self.lt_bw_sampling(conn, &rs);
        }
    }
    /// `bbr_cwnd_event`: restarting from idle while app-limited.
    fn cwnd_event(&mut self, conn: &mut Conn, ev: CwndEvent) {
        if ev == CwndEvent::TxStart && conn.app_limited != 0 {
            self.idle_restart = true;
            self.ack_agg.epoch_mstamp = conn.now;
            self.ack_agg.epoch_acked = 0;
            // Pace at the estimate, not above it, when restarting app-limited.
            match self.mode {
                Mode::ProbeBw => {
                    let bw = self.bbr_bw();
                    self.set_pacing_rate(conn, bw, BBR_UNIT);
                }
                Mode::ProbeRtt => self.check_probe_rtt_done(conn),
                _ => {}
            }
        }
    }
    /// `bbr_undo_cwnd`: a spurious loss signal — restart full-bw detection
    /// and the policer model; keep cwnd.
    fn undo_cwnd(&mut self, conn: &Conn) -> u32 {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.reset_lt_bw_sampling(conn);
        conn.cwnd
    }
    fn has_cong_control(&self) -> bool {
        true
    }
    fn cong_control(&mut self, conn: &mut Conn, rs: &RateSample) {
        self.bbr_main(conn, rs);
    }
    fn snapshot(&self, conn: &Conn) -> Snapshot {
        Snapshot {
            state: self.mode as u8,
            bw_bps: Some(bw_to_bps(self.bbr_bw(), conn.mss)),
            min_rtt_ns: (self.min_rtt_ns != u64::MAX).then_some(self.min_rtt_ns as f64),
            pacing_gain: Some(self.pacing_gain as f64 / BBR_UNIT as f64),
            cwnd_gain: Some(self.cwnd_gain as f64 / BBR_UNIT as f64),
            ..Default::default()
        }
    }
    fn state_names(&self) -> &'static [&'static str] {
        STATE_NAMES
    }
}

/// Milliseconds since the start, as Linux's lt_bw model holds stamps
/// (`div_u64(tp->delivered_mstamp, USEC_PER_MSEC)`).
#[inline]
pub(crate) fn stamp_ms(t: Time) -> u64 {
    t.ns() / NS_PER_MS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::harness::{Harness, Path, MSS};
    use crate::time::{Dur, Time};

    /// BBR in ProbeBW (phase 2) on a 100-packet BDP, cwnd 100: the starting
    /// point of the unit tests that poke one mechanism at a time.
    pub(crate) fn steady() -> (Bbr, Conn) {
        let mut c = Conn::new(Time::ZERO, 1024);
        let mut b = Bbr::new("bbr", BbrConfig::default(), 1);
        b.bbr_init(&mut c);
        b.bw.reset(0, BW_UNIT / 128); // 7812.5 pkt/s
        b.min_rtt_ns = Dur::from_us(12_800).ns(); // BDP 100
        b.full_bw_reached = true;
        b.mode = Mode::ProbeBw;
        b.cycle_idx = 2;
        b.update_gains();
        c.cwnd = 100;
        (b, c)
    }

    #[test]
    fn rto_counts_as_round_end_and_restarts_full_bw_detection() {
        // tcp_bbr.c bbr_set_state(TCP_CA_Loss).
        let (mut b, mut c) = steady();
        b.full_bw = 123;
        b.set_state(&mut c, CaState::Loss);
        assert_eq!(b.prev_ca_state, CaState::Loss);
        assert_eq!(b.full_bw, 0);
        assert!(b.round_start);
        assert!(b.lt.is_sampling, "an RTO is a loss for the policer model");
    }

    #[test]
    fn idle_restart_paces_at_bw_and_defers_probe_rtt() {
        // bbr_cwnd_event(CA_EVENT_TX_START) when app-limited; bbr_update_min_rtt
        // skips ProbeRTT while idle_restart.
        let (mut b, mut c) = steady();
        b.cycle_idx = 0; // the 1.25 phase
        b.update_gains();
        c.app_limited = 5;
        b.cwnd_event(&mut c, CwndEvent::TxStart);
        assert!(b.idle_restart);
        assert_eq!(
            c.pacing_rate.unwrap().bps(),
            63_360_000,
            "1.0 × bw less 1 %"
        );
        c.now = Time(Dur::from_secs(11).ns());
        b.update_min_rtt(
            &mut c,
            &RateSample {
                rtt: Some(Dur::from_ms(20)),
                ..Default::default()
            },
        );
        assert_eq!(b.mode, Mode::ProbeBw, "no ProbeRTT on restart from idle");
        b.update_min_rtt(
            &mut c,
            &RateSample {
                rtt: Some(Dur::from_ms(20)),
                delivered: 1,
                ..Default::default()
            },
        );
        assert!(!b.idle_restart, "cleared by an ACK of new data");
    }

    #[test]
    fn bw_estimate_forgets_a_halved_capacity_within_the_10_round_window() {
        // The max filter spans bbr_bw_rtts = 10 rounds (minmax_running_max):
        // after the bottleneck halves, the estimate falls to the new rate
        // (within 10 % of its goodput rate) at most 10 rounds after the last
        // delivery-rate sample above that — no sample outlives the window
        // (P2: "down within ~0.4 s", 10 rounds of the base RTT). A sample
        // spans about one round trip of deliveries, so the samples of the
        // round in progress at the change and of the next one still carry
        // old-rate deliveries: the estimate follows at most 10 + 1 + 2
        // rounds after the change.
        let path = Path::new(20_000_000, 40)
            .with_buffer_bdp(4.0)
            .with_rate_change(3.0, 10_000_000);
        let threshold = 1.1 * Path::new(10_000_000, 40).payload_bps();
        let mut h = Harness::new("bbr", &[], path, 2);
        h.run_until(3.0);
        let r0 = h.bbr().rtt_cnt;
        let (mut last_high, mut delivered) = (r0, h.conn().delivered);
        let mut dropped_after = None;
        while h.now_secs() < 6.0 && dropped_after.is_none() {
            h.step();
            let b = h.bbr();
            if h.conn().delivered != delivered {
                // this ACK's sample, as bbr_update_bw feeds the filter
                delivered = h.conn().delivered;
                let rs = &h.sender(0).last_rs;
                if let Some(bw) = bw_sample(rs) {
                    let fed = !rs.is_app_limited || bw >= b.max_bw();
                    if fed && bw_to_bps(bw, MSS) >= threshold {
                        last_high = b.rtt_cnt;
                    }
                }
            }
            if bw_to_bps(b.bbr_bw(), MSS) < threshold {
                dropped_after = Some((b.rtt_cnt, h.now_secs() - 3.0));
            }
        }
        let (round, secs) = dropped_after.expect("estimate never followed the drop");
        eprintln!(
            "estimate halved after {} rounds, {secs:.2} s; the last sample above the new rate \
             came {} round(s) after the change and lasted {} rounds",
            round - r0,
            last_high - r0,
            round - last_high
        );
        assert!(
            round - last_high <= BW_RTTS as u64 + 1,
            "{} rounds",
            round - last_high
        );
        assert!(
            last_high - r0 <= 2,
            "old-rate samples {} rounds after the change",
            last_high - r0
        );
    }

    #[test]
    fn same_seed_same_trajectory() {
        // docs/validation.md check 7 (determinism) at the algorithm level.
        let run = |seed| {
            let path = Path::new(30_000_000, 20).with_buffer_bdp(1.0);
            let mut h = Harness::new_multi("bbr", &[], path, 2, seed);
            let mut trace = vec![];
            while h.now_secs() < 5.0 {
                h.step();
                trace.push((h.conn_of(0).cwnd, h.conn_of(1).cwnd, h.bbr().cycle_idx));
            }
            trace
        };
        assert_eq!(run(4), run(4));
        assert_ne!(run(4), run(5));
    }

    #[test]
    fn cwnd_feedback_lowers_its_gain_on_a_shallow_buffer() {
        // Thesis Algorithm 1 in a 0.5-BDP buffer shared by 2 flows: loss above
        // 2 % pushes the cap's gain below Linux's 2.0, and loss falls.
        let mut res = vec![];
        for name in ["bbr", "bbr_cwnd_feedback"] {
            let path = Path::new(40_000_000, 25).with_buffer_bdp(0.5);
            let mut h = Harness::new_multi(name, &[], path, 2, 8);
            h.run_until(20.0);
            let loss = h.loss_rate();
            let gain = h.bbr().cwnd_feedback().map(|f| f.gain() as f64 / 256.0);
            eprintln!(
                "{name}: loss {:.3} %, goodput {:.1} Mbit/s, feedback gain {gain:?}",
                100.0 * loss,
                h.delivered() as f64 * MSS as f64 * 8.0 / 20.0 / 1e6
            );
            res.push((loss, gain));
        }
        assert!(res[1].1.unwrap() < 2.0);
        assert!(res[1].0 < res[0].0);
    }
}
