//! BBRv3 as google/bbr's v3 branch runs it (net/ipv4/tcp_bbr.c, BBR_VERSION
//! 3), with draft-ietf-ccwg-bbr where the code is silent. No PLB (it only
//! rehashes the IPv6 flow label). ECN as v3 does it (`bbr_update_ecn_alpha`,
//! `bbr_ecn_lower_bounds`, the ECN part of `bbr_is_inflight_too_high`,
//! `bbr_check_ecn_too_high_in_startup`), active only with ECN negotiated and
//! the `ecn_low` parameter (v3's `bbr_can_use_ecn` needs the route feature
//! `ecn_low`: CE marks from a shallow threshold) on paths with min_rtt ≤
//! 5 ms (`bbr_ecn_max_rtt_us`), with the quick re-probe after a cycle of
//! marks without loss (`bbr_ecn_reprobe_gain` = 1/2).
//!
//! Files: [`startup`] (plateau and loss exits), [`drain`], [`probe_bw`]
//! (DOWN/CRUISE/REFILL/UP and the upper bounds inflight_hi/bw_hi),
//! [`probe_rtt`]; this file holds the model (bandwidth filter, lower bounds
//! bw_lo/inflight_lo, ACK aggregation) and the control (pacing, cwnd).
//! Function names follow the v3 code (`bbr_adapt_lower_bounds` is
//! [`Bbr3::adapt_lower_bounds`], …). Units as in Linux (see `bbr`).
//!
//! Deviations from the v3 code, and why:
//! * `.skb_marked_lost` (per lost skb: `bbr_note_loss`, and while probing the
//!   exact inflight at which loss crossed 2 %, `bbr_inflight_hi_from_lost_skb`)
//!   has no hook in this interface. `bbr_note_loss` runs at the start of the
//!   ACK that marked the losses (`rs.losses > 0`), which is when Linux calls
//!   it too; the too-much-loss reaction uses the ACK's rate sample
//!   (`rs.tx_in_flight`, `rs.lost`) as `bbr_adapt_upper_bounds` does in v3,
//!   so inflight_hi is set from the delivered packet's tx_in_flight rather
//!   than the lost packet's loss-threshold prefix (at most a few packets apart).
//! * The app-limited fast path (`bbr_run_fast_path`) is a CPU optimization
//!   and is not modelled; every ACK takes the full path.
//! * TLP-specific handling (`CA_EVENT_TLP_RECOVERY`, `is_acking_tlp_retrans_seq`)
//!   is absent: the interface has no TLP event.
//! * Times are the simulator's ns clock instead of jiffies / µs stamps.
//!
//! The same machine runs BBRv2 (`bbr2`, google/bbr v2alpha tcp_bbr2.c) with
//! [`Bbr3Config::v2alpha`]: v2alpha's constants plus the [`Logic`] switches
//! for the pieces v3 rewrote; [`v2alpha`] lists every difference.

pub mod bounds;
pub mod config;
pub mod cwnd;
pub mod drain;
pub mod probe_bw;
pub mod probe_rtt;
pub mod startup;
pub mod v2alpha;

use super::bbr::{
    bdp_pkts, bw_to_bps, ca_rank, count_param, gain_param, BBR_SCALE, BBR_UNIT, BW_SCALE, BW_UNIT,
};
use super::{
    CaState, CcError, CongestionOps, Conn, CwndEvent, Params, RateSample, Snapshot,
    INFINITE_SSTHRESH,
};
use crate::time::{Bandwidth, Dur, Time, NS_PER_US};
use crate::rng::Rng;

pub use config::{Bbr3Config, PARAMS};
pub use v2alpha::Logic;

/// `bbr_min_rtt_win_sec` (v3 tcp_bbr.c).
pub const MIN_RTT_WIN_SEC: u64 = 10;
/// `bbr_probe_rtt_mode_ms`.
pub const PROBE_RTT_MODE_MS: u64 = 200;
/// `bbr_probe_rtt_win_ms`: ProbeRTT interval.
pub const PROBE_RTT_WIN_MS: u64 = 5000;
/// `bbr_probe_rtt_cwnd_gain = BBR_UNIT * 1 / 2`.
pub const PROBE_RTT_CWND_GAIN: u32 = BBR_UNIT / 2;
/// `bbr_tso_rtt_shift`: halve the RTT-based TSO allowance per 512 µs of min_rtt.
pub const TSO_RTT_SHIFT: u32 = 9;
/// `bbr_pacing_margin_percent`.
pub const PACING_MARGIN_PERCENT: u32 = 1;
/// `bbr_startup_pacing_gain = BBR_UNIT * 277 / 100 + 1` (4 ln 2 ≈ 2.77).
pub const STARTUP_PACING_GAIN: u32 = BBR_UNIT * 277 / 100 + 1;
/// `bbr_startup_cwnd_gain = BBR_UNIT * 2`.
pub const STARTUP_CWND_GAIN: u32 = BBR_UNIT * 2;
/// `bbr_drain_gain = BBR_UNIT * 1000 / 2885` (the code; draft-06 says 0.5).
pub const DRAIN_GAIN: u32 = BBR_UNIT * 1000 / 2885;
/// `bbr_cwnd_gain = BBR_UNIT * 2`.
pub const CWND_GAIN: u32 = BBR_UNIT * 2;
/// `bbr_cwnd_min_target`.
pub const CWND_MIN_TARGET: u32 = 4;
/// `bbr_full_bw_thresh = BBR_UNIT * 5 / 4`.
pub const FULL_BW_THRESH: u32 = BBR_UNIT * 5 / 4;
/// `bbr_full_bw_cnt`.
pub const FULL_BW_CNT: u32 = 3;
/// `bbr_extra_acked_gain`, `bbr_extra_acked_win_rtts`, `bbr_ack_epoch_acked_reset_thresh`, `bbr_extra_acked_max_us`.
pub const EXTRA_ACKED_GAIN: u32 = BBR_UNIT;
pub const EXTRA_ACKED_WIN_RTTS: u32 = 5;
pub const ACK_EPOCH_ACKED_RESET_THRESH: u32 = 1 << 20;
pub const EXTRA_ACKED_MAX_US: u64 = 100_000;
/// `bbr_beta = BBR_UNIT * 30 / 100`: on loss cut to (1 − β') = 0.7 (β = 0.7 in the draft's terms).
pub const BETA: u32 = BBR_UNIT * 30 / 100;
/// `bbr_loss_thresh = BBR_UNIT * 2 / 100`: 2 % loss means inflight is too high.
pub const LOSS_THRESH: u32 = BBR_UNIT * 2 / 100;
/// `bbr_full_loss_cnt`: Startup exits after ≥ 6 loss events in a round with loss > 2 %.
pub const FULL_LOSS_CNT: u32 = 6;
/// `bbr_inflight_headroom = BBR_UNIT * 15 / 100`.
pub const INFLIGHT_HEADROOM: u32 = BBR_UNIT * 15 / 100;
/// `bbr_bw_probe_cwnd_gain`: +0.25 cwnd gain in PROBE_UP (units of BBR_UNIT/4).
pub const BW_PROBE_CWND_GAIN: u32 = 1;
/// `bbr_bw_probe_max_rounds`: Reno-coexistence bound on rounds between probes.
pub const BW_PROBE_MAX_ROUNDS: u32 = 63;
/// `bbr_bw_probe_rand_rounds`.
pub const BW_PROBE_RAND_ROUNDS: u32 = 2;
/// `bbr_bw_probe_base_us`: 2 s.
pub const BW_PROBE_BASE_US: u64 = 2_000_000;
/// `bbr_bw_probe_rand_us`: + U[0, 1) s.
pub const BW_PROBE_RAND_US: u64 = 1_000_000;
/// `sysctl_tcp_min_tso_segs` default (net/ipv4/tcp_ipv4.c).
pub const MIN_TSO_SEGS: u32 = 2;
/// `GSO_LEGACY_MAX_SIZE` (include/linux/netdevice.h) and `MAX_TCP_HEADER` (320 on x86-64).
pub const GSO_LEGACY_MAX_SIZE: u64 = 65536;
pub const MAX_TCP_HEADER: u64 = 320;
/// `sk_pacing_shift` default.
pub const SK_PACING_SHIFT: u32 = 10;

/// `enum bbr_mode`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// `enum bbr_pacing_gain_phase`: ProbeBW's phases, indices into the gain table.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Phase {
    Up = 0,
    Down = 1,
    Cruise = 2,
    Refill = 3,
}

/// `enum bbr_ack_phase`: how the incoming ACKs relate to bandwidth probing.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

/// Names of `Snapshot::state` for bbr3 (`bbr_get_phase` order aside, one code per phase).
pub const STATE_NAMES: &[&str] = &[
    "STARTUP",
    "DRAIN",
    "PROBE_BW_DOWN",
    "PROBE_BW_CRUISE",
    "PROBE_BW_REFILL",
    "PROBE_BW_UP",
    "PROBE_RTT",
];

/// `bbr_rate_bytes_per_sec` (v3: never below 1 byte/s).
#[inline]
pub(crate) fn rate_bytes_per_sec(bw: u64, mss: u32, gain: u32, margin: u32) -> u64 {
    super::bbr::rate_bytes_per_sec(bw, mss, gain, margin).max(1)
}

/// BBRv3 state (`struct bbr`, v3).
#[derive(Clone, Debug)]
pub struct Bbr3 {
    pub(crate) cfg: Bbr3Config,
    rng: Rng,

    pub(crate) mode: Mode,
    pub(crate) cycle_idx: Phase,
    /// `min_rtt_us` (ns; `u64::MAX` = none) and its stamp.
    pub(crate) min_rtt_ns: u64,
    pub(crate) min_rtt_stamp: Time,
    /// `probe_rtt_min_us` (ns) and stamp: min RTT over the 5 s ProbeRTT window.
    pub(crate) probe_rtt_min_ns: u64,
    pub(crate) probe_rtt_min_stamp: Time,
    pub(crate) probe_rtt_done_stamp: Option<Time>,
    pub(crate) next_rtt_delivered: u64,
    pub(crate) cycle_mstamp: Time,
    pub(crate) prev_ca_state: CaState,
    pub(crate) round_start: bool,
    pub(crate) bw_probe_up_rounds: u32,
    pub(crate) idle_restart: bool,
    pub(crate) probe_rtt_round_done: bool,
    pub(crate) init_cwnd: u32,
    pub(crate) pacing_gain: u32,
    pub(crate) cwnd_gain: u32,
    pub(crate) full_bw_reached: bool,
    pub(crate) full_bw_cnt: u32,
    pub(crate) has_seen_rtt: bool,
    pub(crate) prior_cwnd: u32,
    pub(crate) full_bw: u64,
    pub(crate) ack_agg: super::bbr::AckAggregation,
    pub(crate) full_bw_now: bool,
    pub(crate) loss_in_cycle: bool,
    pub(crate) loss_round_delivered: u64,
    pub(crate) undo_bw_lo: u64,
    pub(crate) undo_inflight_lo: u32,
    pub(crate) undo_inflight_hi: u32,
    /// Max delivered bw / volume in the last round trip.
    pub(crate) bw_latest: u64,
    pub(crate) inflight_latest: u32,
    /// `bw_lo` (`u64::MAX` = unset), `bw_hi[2]` (the max filter over 2 ProbeBW cycles).
    pub(crate) bw_lo: u64,
    pub(crate) bw_hi: [u64; 2],
    /// `inflight_lo`, `inflight_hi` (`u32::MAX` = unset).
    pub(crate) inflight_lo: u32,
    pub(crate) inflight_hi: u32,
    pub(crate) bw_probe_up_cnt: u32,
    pub(crate) bw_probe_up_acks: u32,
    pub(crate) probe_wait_us: u64,
    pub(crate) bw_probe_samples: bool,
    pub(crate) prev_probe_too_high: bool,
    pub(crate) stopped_risky_probe: bool,
    pub(crate) rounds_since_probe: u32,
    pub(crate) loss_round_start: bool,
    pub(crate) loss_in_round: bool,
    pub(crate) ack_phase: AckPhase,
    pub(crate) loss_events_in_round: u32,
    /// `sk_pacing_rate`, bytes/s.
    pub(crate) pacing_rate_bytes: u64,
    /// `bbr_context.sample_bw` of the ACK being processed.
    pub(crate) sample_bw: u64,
    /// ECN state (google/bbr v3): whether the sender-side ECN logic is on for
    /// this connection, the CE-ratio EWMA, and the per-round/cycle signals.
    pub(crate) ecn_eligible: bool,
    pub(crate) ecn_alpha: u32,
    pub(crate) alpha_last_delivered: u64,
    pub(crate) alpha_last_delivered_ce: u64,
    pub(crate) ecn_in_round: bool,
    pub(crate) ecn_in_cycle: bool,
    pub(crate) startup_ecn_rounds: u32,
}

impl Bbr3 {
    /// `base` is [`Bbr3Config::default`] (bbr3) or [`Bbr3Config::v2alpha`] (bbr2).
    pub(crate) fn from_params(mut p: Params, seed: u64, base: Bbr3Config) -> Result<Bbr3, CcError> {
        let known = base.params();
        let cfg = Bbr3Config::from_params(&mut p, base)?;
        p.finish(known)?;
        Ok(Bbr3::new(cfg, seed))
    }

    pub fn new(cfg: Bbr3Config, seed: u64) -> Bbr3 {
        Bbr3 {
            rng: Rng::seed_from_u64(seed),
            mode: Mode::Startup,
            cycle_idx: Phase::Up,
            min_rtt_ns: u64::MAX,
            min_rtt_stamp: Time::ZERO,
            probe_rtt_min_ns: u64::MAX,
            probe_rtt_min_stamp: Time::ZERO,
            probe_rtt_done_stamp: None,
            next_rtt_delivered: 0,
            cycle_mstamp: Time::ZERO,
            prev_ca_state: CaState::Open,
            round_start: false,
            bw_probe_up_rounds: 0,
            idle_restart: false,
            probe_rtt_round_done: false,
            init_cwnd: super::INIT_CWND,
            pacing_gain: cfg.startup_pacing_gain,
            cwnd_gain: cfg.startup_cwnd_gain,
            full_bw_reached: false,
            full_bw_cnt: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            full_bw: 0,
            ack_agg: Default::default(),
            full_bw_now: false,
            loss_in_cycle: false,
            loss_round_delivered: 1,
            undo_bw_lo: 0,
            undo_inflight_lo: 0,
            undo_inflight_hi: 0,
            bw_latest: 0,
            inflight_latest: 0,
            bw_lo: u64::MAX,
            bw_hi: [0, 0],
            inflight_lo: u32::MAX,
            inflight_hi: u32::MAX,
            bw_probe_up_cnt: u32::MAX,
            bw_probe_up_acks: 0,
            probe_wait_us: 0,
            bw_probe_samples: false,
            prev_probe_too_high: false,
            stopped_risky_probe: false,
            rounds_since_probe: 0,
            loss_round_start: false,
            loss_in_round: false,
            ack_phase: AckPhase::Init,
            loss_events_in_round: 0,
            pacing_rate_bytes: 0,
            sample_bw: 0,
            ecn_eligible: false,
            ecn_alpha: cfg.ecn_alpha_init,
            alpha_last_delivered: 0,
            alpha_last_delivered_ce: 0,
            ecn_in_round: false,
            ecn_in_cycle: false,
            startup_ecn_rounds: 0,
            cfg,
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }
    pub fn phase(&self) -> Phase {
        self.cycle_idx
    }

    /// `get_random_u32_below(n)` from the seeded generator.
    pub(crate) fn random_below(&mut self, n: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        ((self.rng.next_u32() as u64) * n) >> 32
    }

    /// `bbr_max_bw`: max of the two ProbeBW-cycle windows.
    #[inline]
    pub(crate) fn max_bw(&self) -> u64 {
        self.bw_hi[0].max(self.bw_hi[1])
    }
    /// `bbr_bw`: the max filter, bounded by bw_lo.
    #[inline]
    pub(crate) fn bbr_bw(&self) -> u64 {
        self.max_bw().min(self.bw_lo)
    }
    #[inline]
    pub(crate) fn min_rtt_us(&self) -> u64 {
        self.min_rtt_ns / NS_PER_US
    }
    #[inline]
    fn extra_acked(&self) -> u32 {
        self.ack_agg.extra_acked[0].max(self.ack_agg.extra_acked[1])
    }

    fn bw_to_pacing_rate(&self, bw: u64, gain: u32, mss: u32) -> u64 {
        rate_bytes_per_sec(bw, mss, gain, self.cfg.pacing_margin_percent)
    }

    fn write_pacing_rate(&mut self, conn: &mut Conn, rate: u64) {
        self.pacing_rate_bytes = rate;
        conn.pacing_rate = Some(Bandwidth(rate.saturating_mul(8)));
    }

    /// `bbr_init_pacing_rate_from_rtt`.
    pub(crate) fn init_pacing_rate_from_rtt(&mut self, conn: &mut Conn) {
        let rtt_us = if conn.srtt.ns() > 0 {
            self.has_seen_rtt = true;
            (conn.srtt.ns() / NS_PER_US).max(1)
        } else {
            1000
        };
        let bw = conn.cwnd as u64 * BW_UNIT / rtt_us;
        let rate = self.bw_to_pacing_rate(bw, self.cfg.startup_pacing_gain, conn.mss);
        self.write_pacing_rate(conn, rate);
    }

    /// `bbr_set_pacing_rate`.
    pub(crate) fn set_pacing_rate(&mut self, conn: &mut Conn, bw: u64, gain: u32) {
        let rate = self.bw_to_pacing_rate(bw, gain, conn.mss);
        if !self.has_seen_rtt && conn.srtt.ns() > 0 {
            self.init_pacing_rate_from_rtt(conn);
        }
        if self.full_bw_reached || rate > self.pacing_rate_bytes {
            self.write_pacing_rate(conn, rate);
        }
    }

    /// `bbr_tso_segs_generic` / `bbr_tso_segs_goal`: ~1 ms of pacing rate plus
    /// an allowance of 64 KB halved per 512 µs of min_rtt.
    pub(crate) fn tso_segs_goal(&self, mss: u32) -> u32 {
        let mut bytes = self.pacing_rate_bytes >> SK_PACING_SHIFT;
        if self.min_rtt_ns != u64::MAX {
            let r = self.min_rtt_us() >> TSO_RTT_SHIFT;
            if r < 32 {
                bytes += GSO_LEGACY_MAX_SIZE >> r;
            }
        }
        bytes = bytes.min(GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER);
        let min_segs = if self.cfg.logic.min_tso_segs_by_rate
            && self.pacing_rate_bytes < v2alpha::MIN_TSO_RATE_BPS >> 3
        {
            1 // v2alpha bbr_min_tso_segs
        } else {
            MIN_TSO_SEGS
        };
        ((bytes / mss.max(1) as u64) as u32).max(min_segs)
    }

    /// `bbr_save_cwnd`.
    pub(crate) fn save_cwnd(&mut self, conn: &Conn) {
        if ca_rank(self.prev_ca_state) < ca_rank(CaState::Recovery) && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = conn.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(conn.cwnd);
        }
    }

    /// `bbr_bdp`: ceil(bw·min_rtt·gain), or the initial cwnd before any RTT sample.
    pub(crate) fn bdp(&self, bw: u64, gain: u32) -> u32 {
        if self.min_rtt_ns == u64::MAX {
            return self.init_cwnd;
        }
        bdp_pkts(bw, self.min_rtt_us(), gain)
    }

    /// `bbr_quantization_budget` (v3): at least 3 TSO bursts and 4 packets; +2 in UP.
    pub(crate) fn quantization_budget(&self, cwnd: u32, mss: u32) -> u32 {
        let mut cwnd = cwnd.max(3 * self.tso_segs_goal(mss));
        cwnd = cwnd.max(self.cfg.cwnd_min_target);
        if self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Up {
            cwnd += 2;
        }
        cwnd
    }

    /// `bbr_inflight`.
    pub(crate) fn inflight(&self, bw: u64, gain: u32, mss: u32) -> u32 {
        self.quantization_budget(self.bdp(bw, gain), mss)
    }

    /// `bbr_packets_in_net_at_edt`.
    pub(crate) fn packets_in_net_at_edt(&self, conn: &Conn, inflight_now: u32) -> u32 {
        let edt = conn.wstamp.max(conn.now);
        let interval_us = (edt - conn.now).ns() / NS_PER_US;
        let interval_delivered = ((self.bbr_bw() as u128 * interval_us as u128) >> BW_SCALE) as u64;
        let mut inflight_at_edt = inflight_now as u64;
        if self.pacing_gain > BBR_UNIT {
            inflight_at_edt += self.tso_segs_goal(conn.mss) as u64;
        }
        inflight_at_edt.saturating_sub(interval_delivered) as u32
    }

    /// `bbr_update_round_start`.
    fn update_round_start(&mut self, conn: &Conn, rs: &RateSample) {
        self.round_start = false;
        if rs.interval.ns() > 0 && rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = conn.delivered;
            self.round_start = true;
        }
    }

    /// `bbr_calculate_bw_sample`: rounded up, so low rates can still grow.
    fn calculate_bw_sample(&mut self, rs: &RateSample) {
        self.sample_bw = if rs.interval.ns() > 0 {
            let num = rs.delivered as u128 * BW_UNIT as u128 * NS_PER_US as u128;
            num.div_ceil(rs.interval.ns() as u128) as u64
        } else {
            0
        };
    }

    /// `bbr_take_max_bw_sample`.
    fn take_max_bw_sample(&mut self, bw: u64) {
        self.bw_hi[1] = self.bw_hi[1].max(bw);
    }

    /// `bbr_advance_max_bw_filter`: each ProbeBW cycle, flip the window.
    pub(crate) fn advance_max_bw_filter(&mut self) {
        if self.bw_hi[1] == 0 {
            return; // no samples in this window; remember the old one
        }
        self.bw_hi[0] = self.bw_hi[1];
        self.bw_hi[1] = 0;
    }

    /// `bbr_reset_full_bw`.
    pub(crate) fn reset_full_bw(&mut self) {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.full_bw_now = false;
    }

    /// `bbr_target_inflight`: the BDP, unless congestion cut cwnd below it.
    pub(crate) fn target_inflight(&self, conn: &Conn) -> u32 {
        self.inflight(self.bbr_bw(), BBR_UNIT, conn.mss)
            .min(conn.cwnd)
    }

    /// `bbr_is_probing_bandwidth`.
    pub(crate) fn is_probing_bandwidth(&self) -> bool {
        self.mode == Mode::Startup
            || (self.mode == Mode::ProbeBw && matches!(self.cycle_idx, Phase::Refill | Phase::Up))
    }

    /// `bbr_is_inflight_too_high`: lost > 2 % of the sampled packet's flight,
    /// or (ECN-eligible) more than `ecn_thresh` = 1/2 of the delivered packets CE-echoed.
    pub(crate) fn is_inflight_too_high(&self, rs: &RateSample) -> bool {
        if rs.lost > 0 && rs.tx_in_flight > 0 {
            let loss_thresh = (rs.tx_in_flight as u64 * self.cfg.loss_thresh as u64) >> BBR_SCALE;
            if rs.lost > loss_thresh {
                return true;
            }
        }
        if rs.delivered_ce > 0 && rs.delivered > 0 && self.ecn_eligible && self.cfg.ecn_thresh > 0 {
            let ecn_thresh = (rs.delivered * self.cfg.ecn_thresh as u64) >> BBR_SCALE;
            if rs.delivered_ce > ecn_thresh {
                return true;
            }
        }
        false
    }

    /// `bbr_can_use_ecn`: ECN negotiated and the route's `ecn_low` feature.
    pub(crate) fn can_use_ecn(&self, conn: &Conn) -> bool {
        conn.ecn_ok && self.cfg.ecn_low
    }

    /// `bbr_update_ecn_alpha` (once per round): the connection becomes
    /// ECN-eligible on a path with min_rtt ≤ `ecn_max_rtt_us`; then
    /// α ← (1 − g)·α + g·(CE-echoed / delivered over the round), g = 1/16.
    /// Returns the round's CE ratio (in 1/256), or `None`.
    pub(crate) fn update_ecn_alpha(&mut self, conn: &Conn) -> Option<u64> {
        let max_rtt_ns = self.cfg.ecn_max_rtt_us * NS_PER_US;
        if !self.ecn_eligible && self.can_use_ecn(conn) && self.cfg.ecn_factor > 0 && (self.min_rtt_ns <= max_rtt_ns || max_rtt_ns == 0) {
            self.ecn_eligible = true;
        }
        if !self.ecn_eligible {
            return None;
        }
        let delivered = conn.delivered - self.alpha_last_delivered;
        let delivered_ce = conn.delivered_ce - self.alpha_last_delivered_ce;
        if delivered == 0 {
            return None;
        }
        let ce_ratio = (delivered_ce << BBR_SCALE) / delivered;
        let gain = self.cfg.ecn_alpha_gain as u64;
        let mut alpha = ((BBR_UNIT as u64 - gain) * self.ecn_alpha as u64) >> BBR_SCALE;
        alpha += (gain * ce_ratio) >> BBR_SCALE;
        self.ecn_alpha = alpha.min(BBR_UNIT as u64) as u32;
        self.alpha_last_delivered = conn.delivered;
        self.alpha_last_delivered_ce = conn.delivered_ce;
        self.check_ecn_too_high_in_startup(conn, ce_ratio);
        Some(ce_ratio)
    }

    /// `bbr_check_ecn_too_high_in_startup`: STARTUP ends after `full_ecn_cnt`
    /// consecutive rounds with a CE ratio ≥ `ecn_thresh`.
    fn check_ecn_too_high_in_startup(&mut self, conn: &Conn, ce_ratio: u64) {
        if self.full_bw_reached || !self.ecn_eligible || self.cfg.full_ecn_cnt == 0 || self.cfg.ecn_thresh == 0 {
            return;
        }
        if ce_ratio >= self.cfg.ecn_thresh as u64 {
            self.startup_ecn_rounds += 1;
        } else {
            self.startup_ecn_rounds = 0;
        }
        if self.startup_ecn_rounds >= self.cfg.full_ecn_cnt {
            self.handle_queue_too_high_in_startup(conn);
        }
    }

    /// `bbr_update_gains`.
    pub(crate) fn update_gains(&mut self) {
        match self.mode {
            Mode::Startup => {
                self.pacing_gain = self.cfg.startup_pacing_gain;
                self.cwnd_gain = self.cfg.startup_cwnd_gain;
            }
            Mode::Drain => {
                self.pacing_gain = self.cfg.drain_gain;
                self.cwnd_gain = self.cfg.startup_cwnd_gain;
            }
            Mode::ProbeBw => {
                self.pacing_gain = self.cfg.pacing_gain[self.cycle_idx as usize];
                self.cwnd_gain = self.cfg.cwnd_gain;
                if self.cfg.bw_probe_cwnd_gain > 0 && self.cycle_idx == Phase::Up {
                    self.cwnd_gain += BBR_UNIT * self.cfg.bw_probe_cwnd_gain / 4;
                }
            }
            Mode::ProbeRtt => {
                self.pacing_gain = BBR_UNIT;
                self.cwnd_gain = BBR_UNIT;
            }
        }
    }

    /// `bbr_update_model`.
    fn update_model(&mut self, conn: &mut Conn, rs: &RateSample) {
        self.update_congestion_signals(conn, rs);
        self.update_ack_aggregation(conn, rs);
        self.check_loss_too_high_in_startup(conn, rs);
        self.check_full_bw_reached(rs);
        self.check_drain(conn);
        self.update_cycle_phase(conn, rs);
        self.update_min_rtt(conn, rs);
    }

    /// `bbr_main`.
    pub fn bbr_main(&mut self, conn: &mut Conn, rs: &RateSample) {
        if rs.losses > 0 {
            self.note_loss(conn);
        }
        self.update_round_start(conn, rs);
        if self.round_start {
            self.rounds_since_probe = (self.rounds_since_probe + 1).min(0xFF);
            self.update_ecn_alpha(conn);
        }
        // (PLB, bbr_plb, is not modelled: it only rehashes the IPv6 flow label.)
        self.ecn_in_round |= self.ecn_eligible && rs.is_ece;
        self.calculate_bw_sample(rs);
        self.update_latest_delivery_signals(conn, rs);
        self.update_model(conn, rs);
        self.update_gains();
        let bw = self.bbr_bw();
        self.set_pacing_rate(conn, bw, self.pacing_gain);
        self.set_cwnd(conn, rs.acked_sacked, bw, self.cwnd_gain);
        self.bound_cwnd_for_inflight_model(conn);
        self.advance_latest_delivery_signals(rs);
        self.prev_ca_state = conn.ca_state;
        self.loss_in_cycle |= rs.lost > 0;
        self.ecn_in_cycle |= rs.delivered_ce > 0;
    }

    /// `bbr_init`.
    pub fn bbr_init(&mut self, conn: &mut Conn) {
        self.init_cwnd = conn.cwnd.min(0x7F);
        self.prior_cwnd = 0;
        conn.ssthresh = INFINITE_SSTHRESH;
        self.next_rtt_delivered = conn.delivered;
        self.prev_ca_state = CaState::Open;
        self.probe_rtt_done_stamp = None;
        self.probe_rtt_round_done = false;
        let min_rtt = conn.min_rtt.map(|d| d.ns()).unwrap_or(u64::MAX);
        self.probe_rtt_min_ns = min_rtt;
        self.probe_rtt_min_stamp = conn.now;
        self.min_rtt_ns = min_rtt;
        self.min_rtt_stamp = conn.now;
        self.has_seen_rtt = false;
        self.init_pacing_rate_from_rtt(conn);
        self.round_start = false;
        self.idle_restart = false;
        self.full_bw_reached = false;
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.cycle_mstamp = Time::ZERO;
        self.cycle_idx = Phase::Up;
        self.mode = Mode::Startup;
        self.ack_agg = super::bbr::AckAggregation {
            epoch_mstamp: conn.now,
            ..Default::default()
        };
        self.loss_round_delivered = conn.delivered + 1;
        self.loss_round_start = false;
        self.undo_bw_lo = 0;
        self.undo_inflight_lo = 0;
        self.undo_inflight_hi = 0;
        self.loss_events_in_round = 0;
        self.startup_ecn_rounds = 0;
        self.ecn_eligible = false;
        self.ecn_alpha = self.cfg.ecn_alpha_init;
        self.alpha_last_delivered = 0;
        self.alpha_last_delivered_ce = 0;
        self.reset_congestion_signals();
        self.bw_lo = u64::MAX;
        self.bw_hi = [0, 0];
        self.inflight_lo = u32::MAX;
        self.inflight_hi = u32::MAX;
        self.reset_full_bw();
        self.bw_probe_up_cnt = u32::MAX;
        self.bw_probe_up_acks = 0;
        self.bw_probe_up_rounds = 0;
        self.probe_wait_us = 0;
        self.stopped_risky_probe = false;
        self.ack_phase = AckPhase::Init;
        self.rounds_since_probe = 0;
        self.bw_probe_samples = false;
        self.prev_probe_too_high = false;
        self.update_gains();
    }

    /// Snapshot state code: see [`STATE_NAMES`].
    fn state_code(&self) -> u8 {
        match (self.mode, self.cycle_idx) {
            (Mode::Startup, _) => 0,
            (Mode::Drain, _) => 1,
            (Mode::ProbeBw, Phase::Down) => 2,
            (Mode::ProbeBw, Phase::Cruise) => 3,
            (Mode::ProbeBw, Phase::Refill) => 4,
            (Mode::ProbeBw, Phase::Up) => 5,
            (Mode::ProbeRtt, _) => 6,
        }
    }
}

impl CongestionOps for Bbr3 {
    fn name(&self) -> &'static str {
        self.cfg.name
    }
    fn init(&mut self, conn: &mut Conn) {
        self.bbr_init(conn);
    }
    /// v3 `bbr_init`: `TCP_ECN_ECT_PERMANENT` when `bbr_can_use_ecn` — every
    /// packet ECT, and (`bbr_precise_ece_ack`) the DCTCP-style per-segment
    /// CE echo at the receiver, which the `ecn_low` route feature promises.
    fn needs_ecn(&self) -> bool {
        self.cfg.ecn_low
    }
    /// `bbr_ssthresh`: save cwnd and the loss-adapted bounds for undo.
    fn ssthresh(&mut self, conn: &Conn) -> u32 {
        self.save_cwnd(conn);
        self.undo_bw_lo = self.bw_lo;
        self.undo_inflight_lo = self.inflight_lo;
        self.undo_inflight_hi = self.inflight_hi;
        conn.ssthresh
    }
    /// `bbr_set_state`.
    fn set_state(&mut self, conn: &mut Conn, new: CaState) {
        if new == CaState::Loss {
            self.prev_ca_state = CaState::Loss;
            self.reset_full_bw();
            if !self.is_probing_bandwidth() && self.inflight_lo == u32::MAX {
                // bbr_adapt_lower_bounds needs the cwnd from before the RTO.
                self.inflight_lo = if self.cfg.logic.rto_inflight_lo_is_prior_cwnd {
                    self.prior_cwnd // v2alpha bbr2_set_state
                } else {
                    conn.cwnd.max(self.prior_cwnd)
                };
            }
        } else if self.prev_ca_state == CaState::Loss {
            // bbr_exit_loss_recovery
            conn.cwnd = conn.cwnd.max(self.prior_cwnd);
        }
    }
    /// `bbr_cwnd_event`.
    fn cwnd_event(&mut self, conn: &mut Conn, ev: CwndEvent) {
        if ev == CwndEvent::TxStart && conn.app_limited != 0 {
            self.idle_restart = true;
            self.ack_agg.epoch_mstamp = conn.now;
            self.ack_agg.epoch_acked = 0;
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
    /// `bbr_undo_cwnd`: the loss episode was spurious — restore the bounds.
    fn undo_cwnd(&mut self, conn: &Conn) -> u32 {
        self.reset_full_bw();
        self.loss_in_round = false;
        self.bw_lo = self.bw_lo.max(self.undo_bw_lo);
        self.inflight_lo = self.inflight_lo.max(self.undo_inflight_lo);
        self.inflight_hi = self.inflight_hi.max(self.undo_inflight_hi);
        if self.prior_cwnd == 0 {
            conn.cwnd
        } else {
            self.prior_cwnd
        }
    }
    fn has_cong_control(&self) -> bool {
        true
    }
    fn cong_control(&mut self, conn: &mut Conn, rs: &RateSample) {
        self.bbr_main(conn, rs);
    }
    fn snapshot(&self, conn: &Conn) -> Snapshot {
        let some_u32 = |v: u32| (v != u32::MAX).then_some(v as f64);
        Snapshot {
            state: self.state_code(),
            bw_bps: Some(bw_to_bps(self.bbr_bw(), conn.mss)),
            min_rtt_ns: (self.min_rtt_ns != u64::MAX).then_some(self.min_rtt_ns as f64),
            pacing_gain: Some(self.pacing_gain as f64 / BBR_UNIT as f64),
            cwnd_gain: Some(self.cwnd_gain as f64 / BBR_UNIT as f64),
            inflight_hi_pkts: some_u32(self.inflight_hi),
            inflight_lo_pkts: some_u32(self.inflight_lo),
            bw_hi_bps: Some(bw_to_bps(self.max_bw(), conn.mss)),
            bw_lo_bps: (self.bw_lo != u64::MAX).then(|| bw_to_bps(self.bw_lo, conn.mss)),
            ..Default::default()
        }
    }
    fn state_names(&self) -> &'static [&'static str] {
        STATE_NAMES
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Time;

    #[test]
    fn constants_match_the_v3_code_and_validation_table() {
        // google/bbr v3 tcp_bbr.c (docs/validation.md, BBRv3 constants).
        assert_eq!(STARTUP_PACING_GAIN, 710); // 2.77
        assert!((STARTUP_PACING_GAIN as f64 / 256.0 - 2.77).abs() < 0.01);
        assert_eq!(STARTUP_CWND_GAIN, 512);
        assert_eq!(DRAIN_GAIN, 88); // 0.344
        assert_eq!(probe_bw::PACING_GAIN, [320, 232, 256, 256]); // UP 1.25, DOWN 91/100, CRUISE, REFILL
        assert_eq!(BBR_UNIT - BETA, 180); // ×0.70
        assert_eq!(LOSS_THRESH, 5); // 2 % (5/256 = 1.95 %)
        assert_eq!(INFLIGHT_HEADROOM, 38); // 15 %
        assert_eq!(FULL_LOSS_CNT, 6);
        assert_eq!(PROBE_RTT_CWND_GAIN, 128);
    }

    /// A BBRv3 past Startup with bandwidth `bw` (BW_UNIT-scaled) and min RTT
    /// `min_rtt_us`: the starting point of tests that poke one mechanism.
    pub(crate) fn bbr3_with(bw: u64, min_rtt_us: u64) -> (Bbr3, Conn) {
        let mut c = Conn::new(Time::ZERO, 1448);
        let mut b = Bbr3::new(Bbr3Config::default(), 1);
        b.bbr_init(&mut c);
        b.bw_hi = [bw, 0];
        b.min_rtt_ns = min_rtt_us * 1000;
        b.full_bw_reached = true;
        (b, c)
    }

    #[test]
    fn bdp_below_one_packet_still_gives_cwnd_4() {
        // docs/validation.md check 5 / draft: cwnd never below cwnd_min_target = 4,
        // in ProbeBW and in ProbeRTT (max(4, 0.5·BDP)).
        let (mut b, mut c) = bbr3_with(BW_UNIT / 1_000_000, 1000); // 1 pkt/s × 1 ms ≪ 1 packet
        assert_eq!(b.bdp(b.bbr_bw(), BBR_UNIT), 1); // ceil of a tiny positive BDP
        b.mode = Mode::ProbeBw;
        b.cycle_idx = Phase::Cruise;
        b.update_gains();
        c.cwnd = 1;
        b.set_cwnd(&mut c, 1, b.bbr_bw(), b.cwnd_gain);
        b.bound_cwnd_for_inflight_model(&mut c);
        assert_eq!(c.cwnd, 4);
        b.mode = Mode::ProbeRtt;
        assert_eq!(b.probe_rtt_cwnd(), 4);
        c.cwnd = 100;
        b.set_cwnd(&mut c, 1, b.bbr_bw(), BBR_UNIT);
        assert!(c.cwnd >= 4);
        assert_eq!(c.cwnd.min(b.probe_rtt_cwnd()), 4);
    }

    #[test]
    fn headroom_leaves_15_percent_of_inflight_hi() {
        let (mut b, _) = bbr3_with(BW_UNIT, 10_000);
        b.inflight_hi = 100;
        assert_eq!(b.inflight_with_headroom(), 100 - 100 * 38 / 256); // 86
        b.inflight_hi = 4;
        assert_eq!(b.inflight_with_headroom(), 4);
    }

    #[test]
    fn snapshot_reports_bounds_and_phase() {
        let (mut b, c) = bbr3_with(BW_UNIT / 100, 10_000);
        b.mode = Mode::ProbeBw;
        b.cycle_idx = Phase::Up;
        b.inflight_hi = 120;
        let s = b.snapshot(&c);
        assert_eq!(STATE_NAMES[s.state as usize], "PROBE_BW_UP");
        assert_eq!(s.inflight_hi_pkts, Some(120.0));
        assert_eq!(s.inflight_lo_pkts, None);
        assert_eq!(s.bw_lo_bps, None);
        assert!((s.bw_hi_bps.unwrap() - 0.01e6 * 1448.0 * 8.0).abs() < 1e3);
    }
}
