//! STARTUP (tcp_bbr.c): pace and size cwnd at `bbr_high_gain` = 2/ln 2 ≈ 2.89
//! so the sending rate doubles every round, until the bandwidth estimate has
//! not grown by 25 % for 3 rounds (`bbr_check_full_bw_reached`).

use super::{Bbr, Mode, BBR_SCALE, BW_UNIT};
use crate::cc::{Conn, RateSample};
use crate::time::NS_PER_US;

impl Bbr {
    /// `bbr_reset_startup_mode`.
    pub(crate) fn reset_startup_mode(&mut self) {
        self.mode = Mode::Startup;
    }

    /// `bbr_init_pacing_rate_from_rtt`: high_gain · cwnd / srtt (1 ms if no
    /// RTT sample yet).
    pub(crate) fn init_pacing_rate_from_rtt(&mut self, conn: &mut Conn) {
        let rtt_us = if conn.srtt.ns() > 0 {
            self.has_seen_rtt = true;
            (conn.srtt.ns() / NS_PER_US).max(1)
        } else {
            1000 // nominal default RTT
        };
        let bw = conn.cwnd as u64 * BW_UNIT / rtt_us;
        let rate = self.bw_to_pacing_rate(bw, self.cfg.high_gain, conn.mss);
        self.pacing_rate_bytes = rate;
        conn.pacing_rate = Some(crate::time::Bandwidth(rate.saturating_mul(8)));
    }

    /// `bbr_check_full_bw_reached`: once per non-app-limited round, is the
    /// max filter ≥ 1.25× the bw at the last growth? If not for 3 rounds,
    /// the pipe is full. (Why 3: receive-window autotuning, filling the
    /// larger window, then seeing the higher delivery rate.)
    pub(crate) fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached() || !self.round_start || rs.is_app_limited {
            return;
        }
        let bw_thresh =
            ((self.full_bw as u128 * self.cfg.full_bw_thresh as u128) >> BBR_SCALE) as u64;
        if self.max_bw() >= bw_thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= self.cfg.full_bw_cnt;
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use crate::sim::harness::{Harness, Path, MSS};

    #[test]
    fn startup_gains_are_2_over_ln2_and_drain_is_its_inverse() {
        // tcp_bbr.c: bbr_high_gain = BBR_UNIT*2885/1000+1 = 739; drain = 256*1000/2885 = 88.
        assert_eq!(HIGH_GAIN, 739);
        assert_eq!(DRAIN_GAIN, 88);
        let b = Bbr::new("bbr", BbrConfig::default(), 1);
        assert_eq!(b.pacing_gain, 739);
        assert_eq!(b.cwnd_gain, 739);
        // 739/256 ≈ 2.887 (2/ln 2 rounded up) and 88/256 ≈ 0.344 (its inverse).
        assert!((HIGH_GAIN as f64 / 256.0 - 2.887).abs() < 1e-3);
        assert!((DRAIN_GAIN as f64 / 256.0 - 0.344).abs() < 1e-3);
    }

    #[test]
    fn full_bw_needs_three_rounds_without_25_percent_growth() {
        // bbr_check_full_bw_reached: growth ≥ 25 % resets the count; 3 flat rounds set full_bw_reached.
        let mut b = Bbr::new("bbr", BbrConfig::default(), 1);
        let rs = RateSample::default();
        b.round_start = true;
        for (i, bw) in [100u64, 130, 170, 200, 240, 260].iter().enumerate() {
            b.bw.reset(i as u64, *bw);
            b.check_full_bw_reached(&rs);
        }
        // 100 → 130 (+30 %) → 170 (+31 %) → 200 (+18 %: cnt 1) → 240 (+41 % of 170: reset) → 260 (cnt 1)
        assert_eq!(b.full_bw, 240);
        assert_eq!(b.full_bw_cnt, 1);
        assert!(!b.full_bw_reached());
        b.check_full_bw_reached(&rs);
        assert!(!b.full_bw_reached());
        b.check_full_bw_reached(&rs);
        assert!(b.full_bw_reached());
    }

    #[test]
    fn full_bw_check_skips_app_limited_and_mid_round_acks() {
        let mut b = Bbr::new("bbr", BbrConfig::default(), 1);
        b.bw.reset(0, 100);
        b.full_bw = 100;
        b.round_start = false;
        for _ in 0..5 {
            b.check_full_bw_reached(&RateSample::default());
        }
        assert_eq!(b.full_bw_cnt, 0);
        b.round_start = true;
        for _ in 0..5 {
            b.check_full_bw_reached(&RateSample {
                is_app_limited: true,
                ..Default::default()
            });
        }
        assert_eq!(b.full_bw_cnt, 0);
    }

    /// Run one BBR flow from an idle start on a `rate` bit/s, 40 ms path
    /// (at 100 Mbit/s a BDP of 333 packets of 1500 wire bytes; 10-BDP
    /// buffer). Returns (round of the last ≥ 25 % growth of max_bw, round
    /// Startup ended, peak queue in Startup, rounds spent in Drain, BDP,
    /// quantization budget at exit), rounds as BBR counts them (`rtt_cnt`).
    fn startup_run(rate: u64) -> (u64, u64, u64, u64, f64, u32) {
        let path = Path::new(rate, 40).with_buffer_bdp(10.0);
        let mut h = Harness::new("bbr", &[], path, 7);
        let bdp = h.path().bdp_pkts();
        let (mut last_growth_round, mut growth_base) = (0, 0u64);
        let mut exit = None;
        let mut drain_rounds = None;
        let mut budget = 0;
        let mut max_q = 0u64;
        while h.now_secs() < 3.0 {
            h.step();
            let b = h.bbr();
            if b.mode == Mode::Startup {
                max_q = max_q.max(h.queue_len());
                budget = budget.max(b.quantization_budget(0, MSS));
                // full_bw changes exactly when a round start saw ≥ 25 % growth.
                if b.full_bw != growth_base {
                    growth_base = b.full_bw;
                    last_growth_round = b.rtt_cnt;
                }
            }
            if exit.is_none() && b.mode != Mode::Startup {
                exit = Some(b.rtt_cnt);
            }
            if let Some(r) = exit {
                if drain_rounds.is_none() && b.mode == Mode::ProbeBw {
                    drain_rounds = Some(b.rtt_cnt - r);
                }
            }
        }
        (
            last_growth_round,
            exit.unwrap(),
            max_q,
            drain_rounds.unwrap(),
            bdp,
            budget,
        )
    }

    #[test]
    fn startup_exits_three_rounds_after_bw_stops_growing_25_percent() {
        // docs/validation.md check 1 (mechanism): bbr_check_full_bw_reached ends
        // Startup on the 3rd round start without 25 % growth of max_bw; the
        // Startup queue is bounded by cwnd = high_gain·BDP + quantization
        // budget (so ≤ (2.89 − 1)·BDP + budget); Drain takes about one round.
        // At 100 Mbit/s, and at 50 Mbit/s as tests/test_sim_bbr.py's run.
        for rate in [100_000_000, 50_000_000] {
            let (grew, exit, max_q, drain, bdp, budget) = startup_run(rate);
            eprintln!(
                "{} Mbit/s, BDP {bdp:.1}: last 25 % growth in round {grew}, Startup exit at round {exit} \
                 (log2(BDP/IW)+3 = {:.1}); peak queue {max_q} = {:.2} BDP; Drain {drain} round(s)",
                rate / 1_000_000,
                (bdp / 10.0).log2() + 3.0,
                max_q as f64 / bdp
            );
            assert_eq!(exit, grew + 3);
            let cap = (HIGH_GAIN as f64 / 256.0 - 1.0) * bdp + budget as f64 + 2.0;
            assert!((max_q as f64) <= cap, "queue {max_q} > {cap}");
            assert!(drain <= 1);
        }
    }

    /// EXPECTED TO FAIL. The rule of thumb (docs/validation.md check 1) says Startup ends after
    /// "about log2(BDP/IW) + 3 rounds" (= 8.1 here) with its queue peaking
    /// "below ~1.9 BDP". Measured (same code path as Linux tcp_bbr.c, the
    /// real sender with the handshake's RTT sample and Linux's unpaced first
    /// 10 segments): exit at round 11 and a peak queue of 2.10 BDP (round 10
    /// before the unpaced first segments were modelled). Reasons: (1) a delivery-rate sample
    /// describes the previous round's sending, so max_bw reaches the link
    /// rate about a round after cwnd passes the BDP (cwnd 567 > 333 in round
    /// 7, max_bw at the link rate in round 8; its last ≥ 25 % step is round
    /// 7's); (2) for the 3 rounds after that, cwnd climbs to its Startup
    /// cap, 2.89·BDP + 3·tso_segs_goal, which the 1.9 figure leaves out. The
    /// formula is right to within the sampling lag; the mechanism test above
    /// pins the Linux behaviour.
    #[test]
    #[should_panic(expected = "formula")]
    fn startup_exit_round_matches_log2_bdp_over_iw_plus_3() {
        let (_, exit, max_q, _, bdp, _) = startup_run(100_000_000);
        let expected = (bdp / 10.0).log2() + 3.0;
        assert!(
            (exit as f64 - expected).abs() <= 1.0 && (max_q as f64) < 1.9 * bdp,
            "formula: exit round {exit} vs {expected:.1}, peak queue {:.2} BDP",
            max_q as f64 / bdp
        );
    }
}
