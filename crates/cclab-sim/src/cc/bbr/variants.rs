//! The WPI thesis's proposed BBRv1 changes ("Sharing but not Caring",
//! WPI 2019, §5), implemented so they can be tested as the thesis asked.
//! `bbr_shallow` (cwnd gain 1.5) needs no code: it is the `cwnd_gain`
//! preset in [`super::BbrConfig::from_params`]. The other two are here.

use super::{count_param, Bbr, BBR_UNIT};
use crate::cc::{CcError, Conn, Params, RateSample};

// ---------------------------------------------------------------------------
// bbr_sticky_rtprop (thesis §5.5.2)
// ---------------------------------------------------------------------------

/// Defaults for `bbr_sticky_rtprop`:
/// * `sticky_probes` = 3: RTprop rises only after 3 consecutive ProbeRTT
///   probes (each 10 s apart, so ~30 s) all measured higher. The thesis's
///   CUBIC-vs-BBR oscillation (P6) has a ~20 s period driven by one inflated
///   probe; needing 3 in a row outlasts it, while a real path change is
///   still adopted within half a minute.
/// * `sticky_jump` = 3.0: one probe at ≥ 3× RTprop is taken at once. A
///   queue of b BDP inflates the RTT to at most (1+b)×, so up to the 2-BDP
///   buffers where the thesis saw the oscillation a queue cannot fake a 3×
///   jump, while a route change of that size should not wait 30 s.
pub const STICKY_PROBES: u32 = 3;
pub const STICKY_JUMP: f64 = 3.0;

#[derive(Clone, Debug)]
pub struct StickyRtpropConfig {
    /// `sticky_probes`: consecutive higher probes needed to raise RTprop.
    pub probes: u32,
    /// `sticky_jump`: a probe this many times RTprop or more raises it at once.
    pub jump: f64,
}

impl StickyRtpropConfig {
    pub(crate) fn from_params(p: &mut Params) -> Result<StickyRtpropConfig, CcError> {
        let probes = count_param(p, "sticky_probes", STICKY_PROBES as u64, 1)? as u32;
        let jump = p.take("sticky_jump", STICKY_JUMP);
        if !(jump.is_finite() && jump > 1.0) {
            return Err(CcError(format!(
                "{}: sticky_jump = {jump} must be > 1",
                p.cca
            )));
        }
        Ok(StickyRtpropConfig { probes, jump })
    }
}

/// Sticky-RTprop state: the lowest RTT seen since the window expired (this
/// probe's measurement) and the run of consecutive higher probes.
#[derive(Clone, Debug)]
pub struct StickyRtprop {
    cfg: StickyRtpropConfig,
    /// Min RTT observed since the min_rtt window expired (`u64::MAX`: none).
    candidate_ns: u64,
    /// Consecutive probes that measured higher than RTprop.
    pub higher_probes: u32,
    /// Lowest measurement over that run.
    run_min_ns: u64,
}

impl StickyRtprop {
    pub fn new(cfg: StickyRtpropConfig) -> StickyRtprop {
        StickyRtprop {
            cfg,
            candidate_ns: u64::MAX,
            higher_probes: 0,
            run_min_ns: u64::MAX,
        }
    }
    /// A sample at or below RTprop lowered it (the Linux path): the run ends.
    pub(crate) fn lowered(&mut self) {
        self.candidate_ns = u64::MAX;
        self.higher_probes = 0;
        self.run_min_ns = u64::MAX;
    }
    /// A sample after the window expired (during the probe).
    pub(crate) fn observe(&mut self, rtt_ns: u64) {
        self.candidate_ns = self.candidate_ns.min(rtt_ns);
    }
    /// ProbeRTT ends: return the RTprop to use from now on.
    pub(crate) fn probe_done(&mut self, rtprop_ns: u64) -> u64 {
        let c = std::mem::replace(&mut self.candidate_ns, u64::MAX);
        if c == u64::MAX || rtprop_ns == u64::MAX {
            return if rtprop_ns == u64::MAX { c } else { rtprop_ns };
        }
        if c <= rtprop_ns {
            self.lowered();
            return c;
        }
        if c as f64 >= rtprop_ns as f64 * self.cfg.jump {
            self.lowered();
            return c; // drastically higher: the path changed
        }
        self.higher_probes += 1;
        self.run_min_ns = self.run_min_ns.min(c);
        if self.higher_probes >= self.cfg.probes {
            let v = self.run_min_ns;
            self.lowered();
            return v; // consistently higher: accept the lowest of the run
        }
        rtprop_ns
    }
}

// ---------------------------------------------------------------------------
// bbr_cwnd_feedback (thesis Algorithm 1)
// ---------------------------------------------------------------------------

/// Defaults for `bbr_cwnd_feedback`, evaluated once per packet-timed round
/// in ProbeBW:
/// * `fb_loss_thresh` = 0.02: BBRv3's `bbr_loss_thresh` — the loss rate
///   Google uses to tell buffer overflow caused by probing from noise.
/// * `fb_rate_thresh` = 0.95: a round whose best delivery rate is < 95 % of
///   BtlBw did not fill the pipe (beyond the 1 % pacing margin and sampling
///   noise), so the cap is too tight: raise it.
/// * `fb_rtt_thresh` = 1.5: a round whose lowest RTT is > 1.5·RTprop carries
///   a standing queue of > 0.5 BDP, twice what a lone BBR flow's 1.25 phase
///   adds; the cap is feeding a queue: lower it.
/// * `fb_decrease` = 0.9 per round, `fb_increase` = +1/16 per round: AIMD,
///   which converges (Chiu–Jain); 2.0 → 1.0 takes ~7 bad rounds, 1.0 → 2.0
///   16 good ones (two ProbeBW gain cycles).
/// * `fb_gain_min` = 1.0 (below one BDP the pipe empties by design),
///   `fb_gain_max` = `cwnd_gain` (never above Linux's static cap).
pub const FB_LOSS_THRESH: f64 = 0.02;
pub const FB_RATE_THRESH: f64 = 0.95;
pub const FB_RTT_THRESH: f64 = 1.5;
pub const FB_DECREASE: f64 = 0.9;
pub const FB_INCREASE: f64 = 1.0 / 16.0;
pub const FB_GAIN_MIN: f64 = 1.0;

#[derive(Clone, Debug)]
pub struct CwndFeedbackConfig {
    pub loss_thresh: f64,
    pub rate_thresh: f64,
    pub rtt_thresh: f64,
    /// Gains in 1/256.
    pub gain_min: u32,
    pub gain_max: u32,
    pub decrease: f64,
    pub increase: u32,
}

impl CwndFeedbackConfig {
    pub(crate) fn from_params(
        p: &mut Params,
        cwnd_gain: u32,
    ) -> Result<CwndFeedbackConfig, CcError> {
        let cca = p.cca;
        let frac = |p: &mut Params, name: &str, d: f64, lo: f64, hi: f64| -> Result<f64, CcError> {
            let v = p.take(name, d);
            if !(v.is_finite() && v > lo && v <= hi) {
                return Err(CcError(format!(
                    "{cca}: {name} = {v} must be in ({lo}, {hi}]"
                )));
            }
            Ok(v)
        };
        let loss_thresh = frac(p, "fb_loss_thresh", FB_LOSS_THRESH, 0.0, 1.0)?;
        let rate_thresh = frac(p, "fb_rate_thresh", FB_RATE_THRESH, 0.0, 1.0)?;
        let rtt_thresh = frac(p, "fb_rtt_thresh", FB_RTT_THRESH, 1.0, 100.0)?;
        let gain_min = frac(p, "fb_gain_min", FB_GAIN_MIN, 0.0, 64.0)?;
        let gain_max = frac(
            p,
            "fb_gain_max",
            cwnd_gain as f64 / BBR_UNIT as f64,
            0.0,
            64.0,
        )?;
        let decrease = frac(p, "fb_decrease", FB_DECREASE, 0.0, 1.0)?;
        let increase = frac(p, "fb_increase", FB_INCREASE, 0.0, 64.0)?;
        if gain_min > gain_max {
            return Err(CcError(format!(
                "{cca}: fb_gain_min {gain_min} > fb_gain_max {gain_max}"
            )));
        }
        let u = |g: f64| (g * BBR_UNIT as f64).round().max(1.0) as u32;
        Ok(CwndFeedbackConfig {
            loss_thresh,
            rate_thresh,
            rtt_thresh,
            gain_min: u(gain_min),
            gain_max: u(gain_max),
            decrease,
            increase: u(increase),
        })
    }
}

/// What the loop decided at the last round end (for tests and debugging).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FeedbackDecision {
    None,
    DecreaseLoss,
    IncreaseRate,
    DecreaseRtt,
    Hold,
}

#[derive(Clone, Debug)]
pub struct CwndFeedback {
    cfg: CwndFeedbackConfig,
    /// The cwnd gain the loop currently applies in ProbeBW, 1/256.
    gain: u32,
    round_max_bw: u64,
    round_min_rtt_ns: u64,
    last_delivered: u64,
    last_lost: u64,
    pub last_decision: FeedbackDecision,
}

impl CwndFeedback {
    pub fn new(cfg: CwndFeedbackConfig) -> CwndFeedback {
        CwndFeedback {
            gain: cfg.gain_max,
            cfg,
            round_max_bw: 0,
            round_min_rtt_ns: u64::MAX,
            last_delivered: 0,
            last_lost: 0,
            last_decision: FeedbackDecision::None,
        }
    }
    #[inline]
    pub fn gain(&self) -> u32 {
        self.gain
    }
    /// Every valid rate sample of the round.
    pub(crate) fn on_sample(&mut self, bw: u64, rs: &RateSample) {
        if !rs.is_app_limited {
            self.round_max_bw = self.round_max_bw.max(bw);
        }
        if let Some(rtt) = rs.rtt {
            self.round_min_rtt_ns = self.round_min_rtt_ns.min(rtt.ns());
        }
    }
    /// Thesis Algorithm 1, once per round: loss > threshold → decrease;
    /// else delivery rate < BtlBw → increase; else RTT ≫ RTprop → decrease;
    /// else hold. Only ProbeBW rounds adjust the cap.
    pub(crate) fn on_round_start(
        &mut self,
        conn: &Conn,
        btl_bw: u64,
        rtprop_ns: u64,
        in_probe_bw: bool,
    ) {
        let delivered = conn.delivered - self.last_delivered;
        let lost = conn.lost - self.last_lost;
        if in_probe_bw && delivered > 0 && btl_bw > 0 {
            let loss_rate = lost as f64 / (lost + delivered) as f64;
            self.last_decision = if loss_rate > self.cfg.loss_thresh {
                FeedbackDecision::DecreaseLoss
            } else if (self.round_max_bw as f64) < self.cfg.rate_thresh * btl_bw as f64 {
                FeedbackDecision::IncreaseRate
            } else if rtprop_ns != u64::MAX
                && self.round_min_rtt_ns != u64::MAX
                && self.round_min_rtt_ns as f64 > self.cfg.rtt_thresh * rtprop_ns as f64
            {
                FeedbackDecision::DecreaseRtt
            } else {
                FeedbackDecision::Hold
            };
            self.gain = match self.last_decision {
                FeedbackDecision::DecreaseLoss | FeedbackDecision::DecreaseRtt => {
                    (self.gain as f64 * self.cfg.decrease).round() as u32
                }
                FeedbackDecision::IncreaseRate => self.gain + self.cfg.increase,
                _ => self.gain,
            }
            .clamp(self.cfg.gain_min, self.cfg.gain_max);
        }
        self.last_delivered = conn.delivered;
        self.last_lost = conn.lost;
        self.round_max_bw = 0;
        self.round_min_rtt_ns = u64::MAX;
    }
}

impl Bbr {
    /// The `bbr_cwnd_feedback` loop, if this flow runs it.
    pub fn cwnd_feedback(&self) -> Option<&CwndFeedback> {
        self.feedback.as_ref()
    }
    /// The `bbr_sticky_rtprop` state, if this flow runs it.
    pub fn sticky_rtprop(&self) -> Option<&StickyRtprop> {
        self.sticky.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;
    use crate::cc::Cc;
    use crate::sim::harness::{Harness, Path};
    use crate::time::{Dur, Time};
    use std::collections::BTreeMap;

    fn cfg(probes: u32, jump: f64) -> StickyRtprop {
        StickyRtprop::new(StickyRtpropConfig { probes, jump })
    }

    #[test]
    fn sticky_rtprop_needs_n_consecutive_higher_probes() {
        let mut s = cfg(3, 3.0);
        let base = 20_000_000;
        s.observe(30_000_000);
        assert_eq!(s.probe_done(base), base);
        s.observe(28_000_000);
        assert_eq!(s.probe_done(base), base);
        s.observe(32_000_000);
        assert_eq!(
            s.probe_done(base),
            28_000_000,
            "3rd higher probe: lowest of the run"
        );
        assert_eq!(s.higher_probes, 0);
    }

    #[test]
    fn sticky_rtprop_run_resets_when_rtprop_is_matched() {
        let mut s = cfg(2, 3.0);
        let base = 20_000_000;
        s.observe(30_000_000);
        assert_eq!(s.probe_done(base), base);
        s.lowered(); // a sample ≤ RTprop arrived (taken directly in update_min_rtt)
        s.observe(30_000_000);
        assert_eq!(s.probe_done(base), base, "run restarted");
    }

    #[test]
    fn sticky_rtprop_takes_a_drastic_jump_at_once() {
        let mut s = cfg(3, 3.0);
        s.observe(61_000_000);
        assert_eq!(s.probe_done(20_000_000), 61_000_000);
    }

    #[test]
    fn sticky_rtprop_keeps_rtprop_through_one_inflated_probe_in_bbr() {
        // Linux takes the expired-window sample even if higher; sticky does not.
        let mut linux = Bbr::new("bbr", BbrConfig::default(), 1);
        let mut sticky_cfg = BbrConfig::default();
        sticky_cfg.sticky = Some(StickyRtpropConfig {
            probes: 3,
            jump: 3.0,
        });
        let mut sticky = Bbr::new("bbr_sticky_rtprop", sticky_cfg, 1);
        for b in [&mut linux, &mut sticky] {
            let mut c = crate::cc::Conn::new(Time::ZERO, 1448);
            b.bbr_init(&mut c);
            b.full_bw_reached = true;
            let rs = |ms: u64| RateSample {
                rtt: Some(Dur::from_ms(ms)),
                delivered: 1,
                ..Default::default()
            };
            b.update_min_rtt(&mut c, &rs(20));
            c.now = Time(Dur::from_secs(11).ns());
            c.in_flight = 4;
            b.update_min_rtt(&mut c, &rs(35)); // enters ProbeRTT, starts the 200 ms
            b.round_start = true;
            c.now = Time(Dur::from_ms(11_300).ns());
            b.update_min_rtt(&mut c, &rs(35));
            assert_ne!(b.mode, Mode::ProbeRtt);
        }
        assert_eq!(linux.min_rtt_ns, Dur::from_ms(35).ns());
        assert_eq!(sticky.min_rtt_ns, Dur::from_ms(20).ns());
    }

    fn fb_conn(delivered: u64, lost: u64) -> crate::cc::Conn {
        let mut c = crate::cc::Conn::new(Time::ZERO, 1448);
        c.delivered = delivered;
        c.lost = lost;
        c
    }

    fn fb() -> CwndFeedback {
        let mut p = Params::new("bbr_cwnd_feedback", &BTreeMap::new());
        CwndFeedback::new(CwndFeedbackConfig::from_params(&mut p, CWND_GAIN).unwrap())
    }

    #[test]
    fn feedback_loss_above_threshold_decreases_gain() {
        let mut f = fb();
        let rs = RateSample {
            rtt: Some(Dur::from_ms(20)),
            ..Default::default()
        };
        f.on_sample(1000, &rs);
        f.on_round_start(&fb_conn(100, 5), 1000, Dur::from_ms(20).ns(), true);
        assert_eq!(f.last_decision, FeedbackDecision::DecreaseLoss);
        assert_eq!(f.gain(), (512.0f64 * 0.9).round() as u32);
    }

    #[test]
    fn feedback_low_delivery_rate_increases_gain_up_to_the_cap() {
        let mut f = fb();
        f.gain = 300;
        let rs = RateSample {
            rtt: Some(Dur::from_ms(20)),
            ..Default::default()
        };
        f.on_sample(900, &rs);
        f.on_round_start(&fb_conn(100, 0), 1000, Dur::from_ms(20).ns(), true);
        assert_eq!(f.last_decision, FeedbackDecision::IncreaseRate);
        assert_eq!(f.gain(), 316);
        for _ in 0..50 {
            f.on_sample(900, &rs);
            let d = f.last_delivered + 100;
            f.on_round_start(&fb_conn(d, 0), 1000, Dur::from_ms(20).ns(), true);
        }
        assert_eq!(f.gain(), CWND_GAIN);
    }

    #[test]
    fn feedback_high_rtt_decreases_and_otherwise_holds() {
        let mut f = fb();
        f.on_sample(
            1000,
            &RateSample {
                rtt: Some(Dur::from_ms(35)),
                ..Default::default()
            },
        );
        f.on_round_start(&fb_conn(100, 0), 1000, Dur::from_ms(20).ns(), true);
        assert_eq!(f.last_decision, FeedbackDecision::DecreaseRtt);
        let g = f.gain();
        f.on_sample(
            1000,
            &RateSample {
                rtt: Some(Dur::from_ms(25)),
                ..Default::default()
            },
        );
        f.on_round_start(&fb_conn(200, 0), 1000, Dur::from_ms(20).ns(), true);
        assert_eq!(f.last_decision, FeedbackDecision::Hold);
        assert_eq!(f.gain(), g);
        // Never below fb_gain_min.
        for i in 0..100 {
            f.on_sample(
                1000,
                &RateSample {
                    rtt: Some(Dur::from_ms(90)),
                    ..Default::default()
                },
            );
            f.on_round_start(
                &fb_conn(300 + 100 * i, 0),
                1000,
                Dur::from_ms(20).ns(),
                true,
            );
        }
        assert_eq!(f.gain(), BBR_UNIT);
    }

    #[test]
    fn presets_set_their_mechanism_and_params_override() {
        let none = BTreeMap::new();
        let Cc::Bbr(b) = Cc::new("bbr_shallow", &none, 1).unwrap() else {
            panic!()
        };
        assert_eq!(b.cfg.cwnd_gain, 384);
        let Cc::Bbr(b) = Cc::new("bbr_sticky_rtprop", &none, 1).unwrap() else {
            panic!()
        };
        assert!(b.sticky.is_some() && b.feedback.is_none());
        let Cc::Bbr(b) = Cc::new("bbr_cwnd_feedback", &none, 1).unwrap() else {
            panic!()
        };
        assert!(b.feedback.is_some() && b.sticky.is_none());
        let p: BTreeMap<String, f64> = [
            ("cwnd_gain".to_string(), 1.75),
            ("sticky_rtprop".to_string(), 1.0),
        ]
        .into();
        let Cc::Bbr(b) = Cc::new("bbr", &p, 1).unwrap() else {
            panic!()
        };
        assert_eq!(b.cfg.cwnd_gain, 448);
        assert!(b.sticky.is_some());
        let bad: BTreeMap<String, f64> = [("cwnd_gian".to_string(), 1.75)].into();
        let err = Cc::new("bbr", &bad, 1).unwrap_err();
        assert!(err.0.contains("cwnd_gian"), "{err}");
    }

    #[test]
    fn shallow_variant_loses_less_than_bbr_at_one_bdp_buffer() {
        // WPI thesis §5: cwnd gain 1.5 cuts BBR's loss in shallow buffers.
        // Two flows of the same algorithm share a 1-BDP buffer.
        let mut lost = vec![];
        for name in ["bbr", "bbr_shallow"] {
            let path = Path::new(40_000_000, 25).with_buffer_bdp(1.0);
            let mut h = Harness::new_multi(name, &[], path, 2, 3);
            h.run_until(20.0);
            let c = h.link_counters();
            eprintln!(
                "{name}: dropped {} of {} sent ({:.3} %)",
                c.drops_overflow,
                c.arrival_packets,
                100.0 * h.loss_rate()
            );
            lost.push(h.loss_rate());
        }
        assert!(
            lost[1] < lost[0],
            "shallow {:.4} vs bbr {:.4}",
            lost[1],
            lost[0]
        );
    }
}
