//! PROBE_BW (tcp_bbr.c): cycle the pacing gain through 1.25, 0.75, then 1.0
//! six times, each phase about one min_rtt long, starting at a random phase
//! that is never the 0.75 one; cwnd gain 2 (`bbr_cwnd_gain`).

use super::{Bbr, Mode, BBR_UNIT, CYCLE_LEN};
use crate::cc::{Conn, RateSample};

/// `bbr_pacing_gain[]` (tcp_bbr.c): probe at 5/4, drain at 3/4, cruise at 1.
pub const PACING_GAIN: [u32; CYCLE_LEN] = [
    BBR_UNIT * 5 / 4,
    BBR_UNIT * 3 / 4,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
];
/// `bbr_cycle_rand` (tcp_bbr.c): randomize the start over this many phases.
pub const CYCLE_RAND: u32 = 7;

impl Bbr {
    /// The gain of phase `idx`, with the configurable probe/drain gains.
    pub(crate) fn cycle_gain(&self, idx: usize) -> u32 {
        match idx {
            0 => self.cfg.probe_up_gain,
            1 => self.cfg.probe_down_gain,
            _ => PACING_GAIN[idx],
        }
    }

    /// `bbr_is_next_cycle_phase`: a 1.0 phase lasts one min_rtt; the probing
    /// phase lasts ≥ min_rtt and until inflight reaches gain·BDP (or a loss);
    /// the draining phase ends at min_rtt or as soon as inflight ≤ BDP.
    pub(crate) fn is_next_cycle_phase(&self, conn: &Conn, rs: &RateSample) -> bool {
        let is_full_length =
            conn.delivered_time.saturating_sub(self.cycle_mstamp).ns() / 1000 > self.min_rtt_us();
        if self.pacing_gain == BBR_UNIT {
            return is_full_length; // just use wall-clock time
        }
        let inflight = self.packets_in_net_at_edt(conn, rs.prior_in_flight);
        let bw = self.max_bw();
        if self.pacing_gain > BBR_UNIT {
            return is_full_length
                && (rs.losses > 0 || inflight >= self.inflight(bw, self.pacing_gain, conn.mss));
        }
        is_full_length || inflight <= self.inflight(bw, BBR_UNIT, conn.mss)
    }

    /// `bbr_advance_cycle_phase`.
    pub(crate) fn advance_cycle_phase(&mut self, conn: &Conn) {
        self.cycle_idx = (self.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.cycle_mstamp = conn.delivered_time;
    }

    /// `bbr_update_cycle_phase`.
    pub(crate) fn update_cycle_phase(&mut self, conn: &Conn, rs: &RateSample) {
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(conn, rs) {
            self.advance_cycle_phase(conn);
        }
    }

    /// `bbr_reset_probe_bw_mode`: pick `CYCLE_LEN − 1 − rand(7)` then advance,
    /// so the first phase is any but index 1 (the 0.75 phase).
    pub(crate) fn reset_probe_bw_mode(&mut self, conn: &Conn) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = CYCLE_LEN - 1 - self.prandom_u32_max(CYCLE_RAND) as usize;
        self.advance_cycle_phase(conn);
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;
    use crate::cc::Conn;
    use crate::sim::harness::{Harness, Path};
    use crate::time::{Dur, Time};

    #[test]
    fn gain_cycle_is_125_75_then_six_ones() {
        // tcp_bbr.c bbr_pacing_gain[] (docs/validation.md, BBRv1 constants).
        assert_eq!(PACING_GAIN, [320, 192, 256, 256, 256, 256, 256, 256]);
    }

    #[test]
    fn random_start_phase_is_never_the_075_phase_and_covers_the_rest() {
        // bbr_reset_probe_bw_mode: cycle_idx = 7 − rand(7), then +1.
        let mut seen = [0u32; CYCLE_LEN];
        for seed in 0..2000u64 {
            let mut b = Bbr::new("bbr", BbrConfig::default(), seed);
            let c = Conn::new(Time::ZERO, 1448);
            b.reset_probe_bw_mode(&c);
            seen[b.cycle_idx] += 1;
        }
        assert_eq!(seen[1], 0, "never starts in the 0.75 phase");
        for (i, n) in seen.iter().enumerate() {
            if i != 1 {
                // each of the 7 allowed phases ≈ 2000/7 ≈ 286
                assert!(*n > 200 && *n < 380, "phase {i}: {n}");
            }
        }
    }

    #[test]
    fn same_seed_same_start_phase() {
        let c = Conn::new(Time::ZERO, 1448);
        let pick = |seed| {
            let mut b = Bbr::new("bbr", BbrConfig::default(), seed);
            (0..20)
                .map(|_| {
                    b.reset_probe_bw_mode(&c);
                    b.cycle_idx
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(pick(42), pick(42));
    }

    fn probe_bw_at(idx: usize) -> (Bbr, Conn) {
        // 1024-byte packets at BW_UNIT/128 = 7812.5 pkt/s (exactly 64 Mbit/s) and a
        // 12.8 ms min_rtt: BDP exactly 100 packets, no rounding anywhere.
        let mut c = Conn::new(Time::ZERO, 1024);
        let mut b = Bbr::new("bbr", BbrConfig::default(), 1);
        b.bbr_init(&mut c);
        b.bw.reset(0, BW_UNIT / 128);
        b.min_rtt_ns = Dur::from_us(12_800).ns();
        b.full_bw_reached = true;
        b.mode = Mode::ProbeBw;
        b.cycle_idx = idx;
        b.cycle_mstamp = Time::ZERO;
        b.update_gains();
        (b, c)
    }

    #[test]
    fn unity_phase_ends_after_one_min_rtt() {
        let (b, mut c) = probe_bw_at(3);
        c.delivered_time = Time(Dur::from_us(12_800).ns());
        assert!(!b.is_next_cycle_phase(&c, &RateSample::default()));
        c.delivered_time = Time(Dur::from_us(12_801).ns());
        assert!(b.is_next_cycle_phase(&c, &RateSample::default()));
    }

    #[test]
    fn probe_phase_waits_for_inflight_125_bdp_or_loss() {
        let (b, mut c) = probe_bw_at(0);
        c.delivered_time = Time(Dur::from_ms(13).ns());
        let need = b.inflight(b.max_bw(), b.pacing_gain, c.mss);
        let tso = b.tso_segs_goal(c.mss); // in_net_at_edt adds the EDT burst when probing
        let below = RateSample {
            prior_in_flight: need - tso - 1,
            ..Default::default()
        };
        assert!(
            !b.is_next_cycle_phase(&c, &below),
            "full length but inflight < 1.25 BDP"
        );
        let lossy = RateSample {
            losses: 1,
            ..below.clone()
        };
        assert!(b.is_next_cycle_phase(&c, &lossy), "a loss ends probing");
        let reached = RateSample {
            prior_in_flight: need - tso,
            ..Default::default()
        };
        assert!(b.is_next_cycle_phase(&c, &reached));
        c.delivered_time = Time(Dur::from_ms(5).ns());
        assert!(!b.is_next_cycle_phase(&c, &reached), "never before min_rtt");
    }

    #[test]
    fn drain_phase_ends_early_once_inflight_le_bdp() {
        let (b, mut c) = probe_bw_at(1);
        c.delivered_time = Time(Dur::from_ms(1).ns());
        let bdp = b.inflight(b.max_bw(), BBR_UNIT, c.mss);
        assert!(!b.is_next_cycle_phase(
            &c,
            &RateSample {
                prior_in_flight: bdp + 1,
                ..Default::default()
            }
        ));
        assert!(b.is_next_cycle_phase(
            &c,
            &RateSample {
                prior_in_flight: bdp,
                ..Default::default()
            }
        ));
    }

    #[test]
    fn cwnd_is_two_bdp_plus_quantization_budget() {
        // bbr_set_cwnd + bbr_quantization_budget: target = 2·BDP + 3·tso_segs_goal,
        // rounded up to even, +2 in phase 0; cwnd snaps down to it once full.
        for idx in [0usize, 2] {
            let (mut b, mut c) = probe_bw_at(idx);
            b.set_pacing_rate(&mut c, b.max_bw(), b.pacing_gain);
            c.cwnd = 1000;
            let rs = RateSample {
                acked_sacked: 1,
                ..Default::default()
            };
            b.set_cwnd(&mut c, &rs, 1, b.max_bw(), CWND_GAIN);
            let tso = tso_segs_goal(b.pacing_rate_bytes, c.mss);
            let mut want = 200 + 3 * tso;
            want = (want + 1) & !1;
            if idx == 0 {
                want += 2;
            }
            assert_eq!(c.cwnd, want, "phase {idx}, tso goal {tso}");
        }
    }

    #[test]
    fn pacing_rate_is_gain_times_bw_less_one_percent() {
        // bbr_rate_bytes_per_sec: rate = bw·mss·gain·(100−1)/100.
        let (mut b, mut c) = probe_bw_at(2);
        b.set_pacing_rate(&mut c, b.max_bw(), BBR_UNIT);
        // 7812.5 pkt/s × 1024 B = 8 MB/s → ×0.99 = 7.92 MB/s = 63.36 Mbit/s.
        assert_eq!(c.pacing_rate.unwrap().bps(), 63_360_000);
        b.set_pacing_rate(&mut c, b.max_bw(), PACING_GAIN[0]);
        assert_eq!(c.pacing_rate.unwrap().bps(), 79_200_000);
    }

    #[test]
    fn pacing_rate_only_rises_before_full_bw() {
        // bbr_set_pacing_rate: before full_bw_reached only raise the rate.
        let (mut b, mut c) = probe_bw_at(2);
        b.full_bw_reached = false;
        b.set_pacing_rate(&mut c, b.max_bw(), BBR_UNIT);
        let r = c.pacing_rate.unwrap();
        b.set_pacing_rate(&mut c, b.max_bw() / 2, BBR_UNIT);
        assert_eq!(c.pacing_rate.unwrap(), r);
        b.full_bw_reached = true;
        b.set_pacing_rate(&mut c, b.max_bw() / 2, BBR_UNIT);
        assert!(c.pacing_rate.unwrap() < r);
    }

    #[test]
    fn one_flow_on_deep_buffer_fills_the_link_with_small_queue() {
        // docs/validation.md check 3: goodput ≥ 97 % of the link; queue small after Drain.
        let path = Path::new(50_000_000, 30).with_buffer_bdp(8.0);
        let mut h = Harness::new("bbr", &[], path, 11);
        h.run_until(2.0);
        let d0 = h.delivered();
        let mut max_q = 0;
        let mut sum_q = 0u64;
        let mut n = 0u64;
        while h.now_secs() < 12.0 {
            h.step();
            max_q = max_q.max(h.queue_len());
            sum_q += h.queue_len() as u64;
            n += 1;
        }
        // segments delivered per second against full packets per second:
        // the share of the payload capacity
        let rate = (h.delivered() - d0) as f64 / 10.0;
        let util = rate / h.path().pkts_per_sec();
        let bdp = h.path().bdp_pkts();
        eprintln!(
            "util {util:.4}, mean queue {:.1} pkts, max {max_q} (BDP {bdp})",
            sum_q as f64 / n as f64
        );
        assert!(util >= 0.97, "utilization {util}");
        // A lone BBR flow's ProbeBW queue is bounded by its cwnd (2 BDP) and
        // typically ~0.25 BDP from the 1.25 phase.
        assert!((max_q as f64) < 1.0 * bdp);
    }
}
