//! PROBE_BW (v3 tcp_bbr.c): DOWN (0.91) drains the probe's queue until
//! inflight ≤ min(BDP, inflight_hi − 15 %); CRUISE (1.0) holds with
//! headroom, adapting bw_lo/inflight_lo to loss; after 2 s + U[0,1) s (or
//! min(63, BDP) rounds, for Reno coexistence) REFILL (1.0) refills the pipe
//! for a round with the lower bounds reset; UP (1.25, cwnd gain 2.25) grows
//! inflight_hi by 1, 2, 4, 8… packets per round until the bw plateaus, loss
//! exceeds 2 % (inflight_hi cut to max(tx_in_flight, 0.7·target)), or a
//! previously too-high inflight_hi is reached. The max-bw filter window
//! flips once per cycle, so it spans 2 cycles.

use super::{AckPhase, Bbr3, Mode, Phase, BBR_SCALE, BBR_UNIT};
use crate::cc::{CaState, Conn, RateSample};

/// `bbr_pacing_gain[]` (v3), indexed by [`Phase`]: UP 5/4, DOWN 91/100, CRUISE 1, REFILL 1.
/// (draft-ietf-ccwg-bbr says DOWN 0.9; the code's 91/100 is 232/256 ≈ 0.906.)
pub const PACING_GAIN: [u32; 4] = [BBR_UNIT * 5 / 4, BBR_UNIT * 91 / 100, BBR_UNIT, BBR_UNIT];

impl Bbr3 {
    /// `bbr_raise_inflight_hi_slope`: double the per-round growth of inflight_hi.
    fn raise_inflight_hi_slope(&mut self, conn: &Conn) {
        let growth_this_round = 1u32 << self.bw_probe_up_rounds.min(30);
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.bw_probe_up_cnt = (conn.cwnd / growth_this_round).max(1);
    }

    /// `bbr_probe_inflight_hi_upward`: +1 per `bw_probe_up_cnt` packets ACKed
    /// while cwnd-limited at inflight_hi.
    fn probe_inflight_hi_upward(&mut self, conn: &Conn, rs: &RateSample) {
        if !conn.is_cwnd_limited || conn.cwnd < self.inflight_hi {
            if self.cfg.logic.probe_up_drops_unused_acks {
                self.bw_probe_up_acks = 0; // v2alpha: don't accumulate unused credits
            }
            return; // not using inflight_hi fully: don't grow it
        }
        self.bw_probe_up_acks += rs.acked_sacked;
        if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
            self.inflight_hi = self.inflight_hi.saturating_add(delta);
        }
        if self.round_start {
            self.raise_inflight_hi_slope(conn);
        }
    }

    /// `bbr_handle_inflight_too_high`: loss > 2 % while probing — cut
    /// inflight_hi (once per probe) and go DOWN.
    pub(crate) fn handle_inflight_too_high(&mut self, conn: &Conn, rs: &RateSample) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false; // react once per probe
        if !rs.is_app_limited {
            let cut = ((self.target_inflight(conn) as u64 * (BBR_UNIT - self.cfg.beta) as u64)
                >> BBR_SCALE) as u32;
            self.inflight_hi = rs.tx_in_flight.max(cut);
        }
        if self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Up {
            self.start_bw_probe_down(conn);
        }
    }

    /// `bbr_adapt_upper_bounds`. Returns true if it decided a transition.
    fn adapt_upper_bounds(&mut self, conn: &Conn, rs: &RateSample) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            // End of the samples from bandwidth probing.
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            // Now is the best time to forget the previous cycle's samples.
            if self.mode == Mode::ProbeBw && !rs.is_app_limited {
                self.advance_max_bw_filter();
            }
            // Probed all the way to inflight_hi without high loss: probe again,
            // holding at inflight_hi for a round, then accelerating beyond.
            if self.mode == Mode::ProbeBw && self.stopped_risky_probe && !self.prev_probe_too_high {
                self.start_bw_probe_refill(conn, 0);
                return true;
            }
        }
        if self.is_inflight_too_high(rs) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(conn, rs);
            }
        } else {
            if self.inflight_hi == u32::MAX {
                return false; // no excess-queue signals yet
            }
            // Resilience to random loss: raise inflight_hi to any level seen safe.
            if rs.tx_in_flight > self.inflight_hi {
                self.inflight_hi = rs.tx_in_flight;
            }
            if self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Up {
                self.probe_inflight_hi_upward(conn, rs);
            }
        }
        false
    }

    /// `bbr_pick_probe_wait`: random rounds offset and 2 s + U[0,1) s.
    fn pick_probe_wait(&mut self) {
        self.rounds_since_probe = self.random_below(self.cfg.bw_probe_rand_rounds as u64) as u32;
        self.probe_wait_us =
            self.cfg.bw_probe_base_us + self.random_below(self.cfg.bw_probe_rand_us);
    }

    /// `bbr_start_bw_probe_refill`.
    pub(crate) fn start_bw_probe_refill(&mut self, conn: &Conn, bw_probe_up_rounds: u32) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = bw_probe_up_rounds;
        self.bw_probe_up_acks = 0;
        self.stopped_risky_probe = false;
        self.ack_phase = AckPhase::Refilling;
        self.next_rtt_delivered = conn.delivered;
        self.cycle_idx = Phase::Refill;
    }

    /// `bbr_start_bw_probe_up`.
    fn start_bw_probe_up(&mut self, conn: &Conn) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.next_rtt_delivered = conn.delivered;
        self.cycle_mstamp = conn.now;
        if !self.cfg.logic.full_bw_on_max_bw_per_round {
            // v3 reuses the plateau detector to end PROBE_UP; v2alpha does not.
            self.reset_full_bw();
            self.full_bw = self.sample_bw;
        }
        self.cycle_idx = Phase::Up;
        self.raise_inflight_hi_slope(conn);
    }

    /// `bbr_start_bw_probe_down`: a new cycle; pick when to probe next.
    pub(crate) fn start_bw_probe_down(&mut self, conn: &Conn) {
        self.reset_congestion_signals();
        self.bw_probe_up_cnt = u32::MAX;
        self.pick_probe_wait();
        self.cycle_mstamp = conn.now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.next_rtt_delivered = conn.delivered;
        self.cycle_idx = Phase::Down;
    }

    /// `bbr_start_bw_probe_cruise`.
    pub(crate) fn start_bw_probe_cruise(&mut self) {
        if self.inflight_lo != u32::MAX {
            self.inflight_lo = self.inflight_lo.min(self.inflight_hi);
        }
        self.cycle_idx = Phase::Cruise;
    }

    /// `bbr_is_reno_coexistence_probe_time`: probe at least every
    /// min(63, BDP) rounds, as a Reno flow at our BDP would. (v2alpha scales
    /// the BDP by `bbr_bw_probe_reno_gain`, 1.0 by default as v3 hard-wires;
    /// 0 turns the bound off.)
    fn is_reno_coexistence_probe_time(&self, conn: &Conn) -> bool {
        let mut rounds = self.cfg.bw_probe_max_rounds;
        if self.cfg.bw_probe_reno_gain > 0 {
            let reno_rounds = ((self.target_inflight(conn) as u64
                * self.cfg.bw_probe_reno_gain as u64)
                >> BBR_SCALE) as u32;
            rounds = rounds.min(reno_rounds);
        }
        self.rounds_since_probe >= rounds
    }

    /// `bbr_has_elapsed_in_phase`.
    fn has_elapsed_in_phase(&self, conn: &Conn, interval_us: u64) -> bool {
        conn.now > self.cycle_mstamp + crate::time::Dur::from_us(interval_us)
    }

    /// `bbr_check_time_to_probe_bw`. ECN re-probe: after a cycle with ECN
    /// marks and no loss (in state Open), probe again at once, starting the
    /// inflight_hi growth at about `ecn_reprobe_gain` × inflight_hi
    /// (2^n per round, n = ilog2(inflight_hi × gain)) — "in case
    /// cross-traffic has ceased and freed up bw".
    fn check_time_to_probe_bw(&mut self, conn: &Conn) -> bool {
        if self.cfg.ecn_reprobe_gain > 0
            && self.ecn_eligible
            && self.ecn_in_cycle
            && !self.loss_in_cycle
            && conn.ca_state == CaState::Open
        {
            let v = (self.inflight_hi as u64 * self.cfg.ecn_reprobe_gain as u64) >> BBR_SCALE;
            let n = if v == 0 { 0 } else { 63 - v.leading_zeros() };
            self.start_bw_probe_refill(conn, n);
            return true;
        }
        if self.has_elapsed_in_phase(conn, self.probe_wait_us)
            || self.is_reno_coexistence_probe_time(conn)
        {
            self.start_bw_probe_refill(conn, 0);
            return true;
        }
        false
    }

    /// `bbr_check_time_to_cruise`: inflight below both the headroom level and the BDP.
    fn check_time_to_cruise(&self, conn: &Conn, inflight: u32, bw: u64) -> bool {
        if inflight > self.inflight_with_headroom() {
            return false;
        }
        inflight <= self.inflight(bw, BBR_UNIT, conn.mss)
    }

    /// `bbr_update_cycle_phase`: the PROBE_BW state machine.
    pub(crate) fn update_cycle_phase(&mut self, conn: &Conn, rs: &RateSample) {
        if !self.full_bw_reached {
            return;
        }
        // In DRAIN, PROBE_BW or PROBE_RTT, adjust the upper bounds.
        if self.adapt_upper_bounds(conn, rs) {
            return;
        }
        if self.mode != Mode::ProbeBw {
            return;
        }
        let inflight = self.packets_in_net_at_edt(conn, rs.prior_in_flight);
        let bw = self.max_bw();
        match self.cycle_idx {
            Phase::Cruise => {
                self.check_time_to_probe_bw(conn);
            }
            Phase::Refill => {
                // After a round of REFILL the samples reflect it: probe UP.
                if self.round_start {
                    self.bw_probe_samples = true;
                    self.start_bw_probe_up(conn);
                }
            }
            Phase::Up => {
                let mut is_bw_probe_done = false;
                if self.prev_probe_too_high && inflight >= self.inflight_hi {
                    self.stopped_risky_probe = true;
                    is_bw_probe_done = true;
                } else if self.cfg.logic.probe_up_ends_on_queue {
                    // v2alpha bbr2_update_cycle_phase: probed ≥ 1 min_rtt and
                    // the queue is building (inflight ≥ pif_gain·BDP).
                    is_bw_probe_done = self.has_elapsed_in_phase(conn, self.min_rtt_us())
                        && inflight >= self.inflight(bw, self.cfg.bw_probe_pif_gain, conn.mss);
                } else if conn.is_cwnd_limited && conn.cwnd >= self.inflight_hi {
                    // inflight_hi is limiting growth: restart the plateau test.
                    self.reset_full_bw();
                    self.full_bw = self.sample_bw;
                } else if self.full_bw_now {
                    is_bw_probe_done = true; // bw plateau: the pipe looks full
                }
                if is_bw_probe_done {
                    self.prev_probe_too_high = false;
                    self.start_bw_probe_down(conn);
                }
            }
            Phase::Down => {
                if self.check_time_to_probe_bw(conn) {
                    return;
                }
                if self.check_time_to_cruise(conn, inflight, bw) {
                    self.start_bw_probe_cruise();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use crate::sim::harness::{Harness, Path, MSS};

    #[test]
    fn probe_bw_cycles_down_cruise_refill_up_on_the_2_to_3_s_clock() {
        // v3 bbr_pick_probe_wait: REFILL comes 2 s + U[0,1) s after the cycle
        // clock started (DOWN, or a ProbeRTT exit); min(63, BDP) rounds would
        // be later here (63 × ≥ 100 ms).
        let path = Path::new(20_000_000, 100).with_buffer_bdp(2.0);
        let mut h = Harness::new("bbr3", &[], path, 21);
        let mut seq: Vec<(f64, Option<Phase>)> = vec![];
        let mut waits = vec![];
        while h.now_secs() < 30.0 {
            let clock = h.bbr3().cycle_mstamp;
            h.step();
            let b = h.bbr3();
            let ph = (b.mode == Mode::ProbeBw).then_some(b.cycle_idx);
            if seq.last().map(|(_, p)| *p) != Some(ph) {
                seq.push((h.now_secs(), ph));
                if ph == Some(Phase::Refill) {
                    waits.push(h.now_secs() - clock.secs_f64());
                }
            }
        }
        eprintln!(
            "{:?}",
            seq.iter()
                .map(|(t, p)| format!("{t:.2} {p:?}"))
                .collect::<Vec<_>>()
        );
        eprintln!("probe waits {waits:.2?}");
        // Each probe: REFILL → UP → DOWN (→ CRUISE) → REFILL …
        for w in seq.windows(2) {
            match (w[0].1, w[1].1) {
                (Some(Phase::Refill), n) => assert_eq!(n, Some(Phase::Up)),
                (Some(Phase::Up), n) => assert!(matches!(n, Some(Phase::Down) | None)),
                (Some(Phase::Cruise), n) => assert!(matches!(n, Some(Phase::Refill) | None)),
                _ => {}
            }
        }
        assert!(waits.len() >= 7, "{waits:?}");
        for w in &waits {
            assert!(*w >= 2.0 && *w < 3.0 + 0.01, "wait {w}");
        }
    }

    #[test]
    fn loss_in_probe_up_cuts_inflight_hi_and_goes_down() {
        // v3 bbr_handle_inflight_too_high: while probing, loss > 2 % of
        // tx_in_flight → inflight_hi = max(tx_in_flight, 0.7·target), DOWN.
        use crate::cc::{Conn, RateSample};
        use crate::time::{Dur, Time};
        let mut c = Conn::new(Time::ZERO, 1448);
        let mut b = Bbr3::new(Bbr3Config::default(), 1);
        b.bbr_init(&mut c);
        b.bw_hi = [BW_UNIT / 100, 0];
        b.min_rtt_ns = Dur::from_ms(20).ns(); // BDP 200
        b.full_bw_reached = true;
        b.mode = Mode::ProbeBw;
        b.cycle_idx = Phase::Up;
        b.bw_probe_samples = true;
        c.cwnd = 300;
        let rs = RateSample {
            lost: 10,
            tx_in_flight: 150,
            prior_in_flight: 300,
            interval: Dur::from_ms(20),
            delivered: 100,
            acked_sacked: 1,
            ..Default::default()
        };
        b.update_cycle_phase(&c, &rs);
        let target = b.target_inflight(&c);
        assert_eq!(b.inflight_hi, 150u32.max(target * 180 / 256));
        assert_eq!(b.cycle_idx, Phase::Down);
        assert!(b.prev_probe_too_high);
    }

    #[test]
    fn shallow_buffer_v3_loses_less_than_v1() {
        // The point of v3's bounds: in a 0.5-BDP buffer, v1 keeps ~2 BDP in
        // flight and drops steadily; v3 caps at inflight_hi/lo.
        let mut loss = vec![];
        for name in ["bbr", "bbr3"] {
            let path = Path::new(40_000_000, 25).with_buffer_bdp(0.5);
            let mut h = Harness::new_multi(name, &[], path, 2, 4);
            h.run_until(20.0);
            eprintln!(
                "{name}: loss {:.3} %, goodput {:.1} Mbit/s",
                100.0 * h.loss_rate(),
                h.delivered() as f64 * MSS as f64 * 8.0 / 20.0 / 1e6
            );
            loss.push(h.loss_rate());
        }
        assert!(loss[1] < loss[0]);
    }
}
