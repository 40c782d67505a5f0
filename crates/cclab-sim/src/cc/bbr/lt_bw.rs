//! The long-term ("LT") bandwidth model (tcp_bbr.c `bbr_lt_bw_sampling`):
//! token-bucket policers are common, and a policed flow sees consistent
//! throughput with heavy loss. If two consecutive sampling intervals of 4–16
//! rounds, each ending in a loss, have loss ≥ 50/256 (~20 %) and delivery
//! rates within 1/8 (or 4 kbit/s) of each other, BBR paces at their average
//! (`lt_bw`) with gain 1 for 48 rounds, then re-probes.

use super::{bw_to_bps, count_param, stamp_ms, Bbr, Mode, BBR_SCALE, BBR_UNIT, BW_UNIT};
use crate::cc::{CcError, Conn, Params, RateSample};

/// `bbr_lt_intvl_min_rtts` (tcp_bbr.c).
pub const LT_INTVL_MIN_RTTS: u32 = 4;
/// `bbr_lt_loss_thresh` (tcp_bbr.c): lost/delivered ≥ 50/256 ≈ 20 % is "lossy".
pub const LT_LOSS_THRESH: u32 = 50;
/// `bbr_lt_bw_ratio = BBR_UNIT / 8` (tcp_bbr.c).
pub const LT_BW_RATIO: u32 = BBR_UNIT / 8;
/// `bbr_lt_bw_diff = 4000 / 8` (tcp_bbr.c): 4 kbit/s, in bytes/s.
pub const LT_BW_DIFF: u64 = 4000 / 8;
/// `bbr_lt_bw_max_rtts` (tcp_bbr.c).
pub const LT_BW_MAX_RTTS: u32 = 48;

/// Knobs of the LT model (`cca_params`: `lt_bw` on/off, `lt_intvl_min_rtts`,
/// `lt_loss_thresh` as a fraction, `lt_bw_max_rtts`).
#[derive(Clone, Debug)]
pub struct LtBwConfig {
    pub enabled: bool,
    pub intvl_min_rtts: u32,
    /// In 1/256.
    pub loss_thresh: u32,
    pub bw_max_rtts: u32,
}

impl Default for LtBwConfig {
    fn default() -> Self {
        LtBwConfig {
            enabled: true,
            intvl_min_rtts: LT_INTVL_MIN_RTTS,
            loss_thresh: LT_LOSS_THRESH,
            bw_max_rtts: LT_BW_MAX_RTTS,
        }
    }
}

impl LtBwConfig {
    pub(crate) fn from_params(p: &mut Params) -> Result<LtBwConfig, CcError> {
        let d = LtBwConfig::default();
        let enabled = p.take_bool("lt_bw", d.enabled);
        let intvl_min_rtts =
            count_param(p, "lt_intvl_min_rtts", d.intvl_min_rtts as u64, 1)? as u32;
        let thresh = p.take("lt_loss_thresh", d.loss_thresh as f64 / BBR_UNIT as f64);
        if !(thresh.is_finite() && thresh > 0.0 && thresh <= 1.0) {
            return Err(CcError(format!(
                "{}: lt_loss_thresh = {thresh} must be in (0, 1]",
                p.cca
            )));
        }
        let bw_max_rtts = count_param(p, "lt_bw_max_rtts", d.bw_max_rtts as u64, 1)? as u32;
        Ok(LtBwConfig {
            enabled,
            intvl_min_rtts,
            loss_thresh: (thresh * BBR_UNIT as f64).round() as u32,
            bw_max_rtts,
        })
    }
}

/// LT state (the `lt_*` fields of `struct bbr`).
#[derive(Clone, Debug, Default)]
pub struct LtBw {
    /// `lt_is_sampling`.
    pub is_sampling: bool,
    /// `lt_rtt_cnt`: rounds in the interval (or since lt_bw took over).
    pub rtt_cnt: u32,
    /// `lt_use_bw`: pacing at `bw`, the policed rate.
    pub use_bw: bool,
    /// `lt_bw`, packets/µs << 24.
    pub bw: u64,
    /// `lt_last_delivered`, `lt_last_stamp` (ms), `lt_last_lost`.
    pub last_delivered: u64,
    pub last_stamp_ms: u64,
    pub last_lost: u64,
}

impl Bbr {
    /// `bbr_reset_lt_bw_sampling_interval`.
    fn reset_lt_bw_sampling_interval(&mut self, conn: &Conn) {
        self.lt.last_stamp_ms = stamp_ms(conn.delivered_time);
        self.lt.last_delivered = conn.delivered;
        self.lt.last_lost = conn.lost;
        self.lt.rtt_cnt = 0;
    }

    /// `bbr_reset_lt_bw_sampling`.
    pub(crate) fn reset_lt_bw_sampling(&mut self, conn: &Conn) {
        self.lt.bw = 0;
        self.lt.use_bw = false;
        self.lt.is_sampling = false;
        self.reset_lt_bw_sampling_interval(conn);
    }

    /// `bbr_lt_bw_interval_done`: a lossy interval ended with rate `bw`; if it
    /// matches the previous one, we are policed.
    fn lt_bw_interval_done(&mut self, conn: &Conn, bw: u64) {
        if self.lt.bw != 0 {
            let diff = bw.abs_diff(self.lt.bw);
            if diff as u128 * BBR_UNIT as u128 <= LT_BW_RATIO as u128 * self.lt.bw as u128
                || super::rate_bytes_per_sec(
                    diff,
                    conn.mss,
                    BBR_UNIT,
                    self.cfg.pacing_margin_percent,
                ) <= LT_BW_DIFF
            {
                // All criteria met: estimate we are policed.
                self.lt.bw = (bw + self.lt.bw) >> 1; // average of 2 intervals
                self.lt.use_bw = true;
                self.pacing_gain = BBR_UNIT; // try to avoid drops
                self.lt.rtt_cnt = 0;
                return;
            }
        }
        self.lt.bw = bw;
        self.reset_lt_bw_sampling_interval(conn);
    }

    /// `bbr_lt_bw_sampling`.
    pub(crate) fn lt_bw_sampling(&mut self, conn: &Conn, rs: &RateSample) {
        if !self.cfg.lt.enabled {
            return;
        }
        if self.lt.use_bw {
            // Already using lt_bw: after 48 rounds in ProbeBW, re-probe.
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt.rtt_cnt += 1;
                if self.lt.rtt_cnt >= self.cfg.lt.bw_max_rtts {
                    self.reset_lt_bw_sampling(conn);
                    self.reset_probe_bw_mode(conn);
                }
            }
            return;
        }
        // Wait for the first loss before sampling, so the policer's token
        // bucket is empty and we measure its steady-state rate.
        if !self.lt.is_sampling {
            if rs.losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(conn);
            self.lt.is_sampling = true;
        }
        // Running out of data would under-estimate: start over.
        if rs.is_app_limited {
            self.reset_lt_bw_sampling(conn);
            return;
        }
        if self.round_start {
            self.lt.rtt_cnt += 1;
        }
        if self.lt.rtt_cnt < self.cfg.lt.intvl_min_rtts {
            return; // interval must be longer
        }
        if self.lt.rtt_cnt > 4 * self.cfg.lt.intvl_min_rtts {
            self.reset_lt_bw_sampling(conn); // interval too long
            return;
        }
        // End the interval on a loss (tokens exhausted).
        if rs.losses == 0 {
            return;
        }
        let lost = conn.lost - self.lt.last_lost;
        let delivered = conn.delivered - self.lt.last_delivered;
        if delivered == 0 || (lost << BBR_SCALE) < self.cfg.lt.loss_thresh as u64 * delivered {
            return; // not lossy enough
        }
        let t_ms = stamp_ms(conn.delivered_time) as i64 - self.lt.last_stamp_ms as i64;
        if t_ms < 1 {
            return; // under 1 ms: wait
        }
        if t_ms as u64 >= u32::MAX as u64 / 1000 {
            self.reset_lt_bw_sampling(conn);
            return;
        }
        let t_us = t_ms as u64 * 1000;
        let bw = delivered * BW_UNIT / t_us;
        self.lt_bw_interval_done(conn, bw);
    }

    /// The long-term (policer) rate in bit/s, if BBR is using it.
    pub fn lt_bw_bps(&self, mss: u32) -> Option<f64> {
        self.lt.use_bw.then(|| bw_to_bps(self.lt.bw, mss))
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use crate::sim::harness::{Harness, Path, MSS};

    #[test]
    fn lt_bw_engages_under_a_token_bucket_policer() {
        // tcp_bbr.c bbr_lt_bw_sampling: a 10 Mbit/s policer on a 100 Mbit/s
        // path: two consistent lossy intervals → lt_use_bw, rate ≈ policer's
        // (its goodput rate: the bucket counts wire bytes, lt_bw segments),
        // pacing gain 1.0 while in use.
        let path = Path::new(100_000_000, 30)
            .with_buffer_bdp(4.0)
            .with_policer(10_000_000, 30_000);
        let policed_payload_bps = Path::new(10_000_000, 30).payload_bps();
        let mut h = Harness::new("bbr", &[], path, 9);
        let mut engaged_at = None;
        while h.now_secs() < 10.0 {
            h.step();
            if engaged_at.is_none() && h.bbr().lt.use_bw {
                engaged_at = Some(h.now_secs());
                let bps = h.bbr().lt_bw_bps(MSS).unwrap();
                eprintln!(
                    "lt_bw engaged at {:.2} s, {:.2} Mbit/s (policed goodput {:.2})",
                    h.now_secs(),
                    bps / 1e6,
                    policed_payload_bps / 1e6
                );
                assert!(
                    (bps / policed_payload_bps - 1.0).abs() < 0.15,
                    "lt_bw {bps}"
                );
            }
            if h.bbr().lt.use_bw && h.bbr().mode == Mode::ProbeBw {
                assert_eq!(h.bbr().pacing_gain, BBR_UNIT);
            }
        }
        assert!(engaged_at.is_some(), "policer never detected");
    }

    #[test]
    fn lt_bw_stays_off_on_an_unpoliced_deep_buffer() {
        let path = Path::new(50_000_000, 30).with_buffer_bdp(8.0);
        let mut h = Harness::new("bbr", &[], path, 9);
        while h.now_secs() < 8.0 {
            h.step();
            assert!(!h.bbr().lt.use_bw);
        }
    }

    #[test]
    fn lt_bw_param_disables_the_model() {
        let path = Path::new(100_000_000, 30)
            .with_buffer_bdp(4.0)
            .with_policer(10_000_000, 30_000);
        let mut h = Harness::new("bbr", &[("lt_bw", 0.0)], path, 9);
        while h.now_secs() < 6.0 {
            h.step();
            assert!(!h.bbr().lt.use_bw);
        }
    }
}
