//! The short-term lower bounds (v3 tcp_bbr.c): bw_lo and inflight_lo, cut
//! ×0.7 once per round trip with loss while not probing, never below what
//! the last round delivered (bw_latest, inflight_latest); reset when a probe
//! starts. Also the per-round congestion signals they are built from.

use super::*;

impl Bbr3 {
    /// `bbr_init_lower_bounds`.
    pub(crate) fn init_lower_bounds(&mut self, conn: &Conn, init_bw: bool) {
        if init_bw && self.bw_lo == u64::MAX {
            self.bw_lo = self.max_bw();
        }
        if self.inflight_lo == u32::MAX {
            self.inflight_lo = conn.cwnd;
        }
    }

    /// `bbr_loss_lower_bounds`: cut bw_lo and inflight_lo to ×(1 − β) = ×0.7,
    /// but not below what the last round delivered.
    pub(crate) fn loss_lower_bounds(&mut self) {
        let loss_cut = (BBR_UNIT - self.cfg.beta) as u64;
        self.bw_lo = self
            .bw_latest
            .max(((self.bw_lo as u128 * loss_cut as u128) >> BBR_SCALE) as u64);
        self.inflight_lo = (self.inflight_latest as u64)
            .max((self.inflight_lo as u64 * loss_cut) >> BBR_SCALE)
            as u32;
    }

    /// `bbr_adapt_lower_bounds`: once per round with loss or ECE, when not
    /// probing. ECN (`bbr_ecn_lower_bounds`): inflight_lo × (1 − ecn_factor·α),
    /// without the floor at what the last round delivered that the loss cut has.
    pub(crate) fn adapt_lower_bounds(&mut self, conn: &Conn) {
        if self.is_probing_bandwidth() {
            return;
        }
        let mut ecn_inflight_lo = u32::MAX;
        if self.ecn_in_round && self.cfg.ecn_factor > 0 {
            self.init_lower_bounds(conn, false);
            // bbr_ecn_cut
            let cut = BBR_UNIT as u64 - ((self.ecn_alpha as u64 * self.cfg.ecn_factor as u64) >> BBR_SCALE);
            ecn_inflight_lo = ((self.inflight_lo as u64 * cut) >> BBR_SCALE) as u32;
        }
        if self.loss_in_round {
            self.init_lower_bounds(conn, true);
            self.loss_lower_bounds();
        }
        self.inflight_lo = self.inflight_lo.min(ecn_inflight_lo);
        if !self.cfg.logic.bw_lo_may_reach_zero {
            self.bw_lo = self.bw_lo.max(1); // v3 only; bbr2_adapt_lower_bounds has no floor
        }
    }

    /// `bbr_reset_lower_bounds`.
    pub(crate) fn reset_lower_bounds(&mut self) {
        self.bw_lo = u64::MAX;
        self.inflight_lo = u32::MAX;
    }

    /// `bbr_reset_congestion_signals`.
    pub(crate) fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.loss_in_cycle = false;
        self.ecn_in_round = false;
        self.ecn_in_cycle = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
    }

    /// `bbr_update_latest_delivery_signals`.
    pub(crate) fn update_latest_delivery_signals(&mut self, conn: &Conn, rs: &RateSample) {
        self.loss_round_start = false;
        if rs.interval.ns() == 0 || rs.acked_sacked == 0 {
            return;
        }
        self.bw_latest = self.bw_latest.max(self.sample_bw);
        self.inflight_latest = self
            .inflight_latest
            .max(rs.delivered.min(u32::MAX as u64) as u32);
        if rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = conn.delivered;
            self.loss_round_start = true;
        }
    }

    /// `bbr_advance_latest_delivery_signals`.
    pub(crate) fn advance_latest_delivery_signals(&mut self, rs: &RateSample) {
        if self.loss_round_start {
            self.bw_latest = self.sample_bw;
            self.inflight_latest = rs.delivered.min(u32::MAX as u64) as u32;
        }
    }

    /// `bbr_update_congestion_signals`.
    pub(crate) fn update_congestion_signals(&mut self, conn: &Conn, rs: &RateSample) {
        if rs.interval.ns() == 0 || rs.acked_sacked == 0 {
            return;
        }
        let bw = self.sample_bw;
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.take_max_bw_sample(bw);
        }
        self.loss_in_round |= rs.losses > 0;
        if !self.loss_round_start {
            return;
        }
        self.adapt_lower_bounds(conn);
        self.loss_in_round = false;
        self.ecn_in_round = false;
    }

    /// `bbr_note_loss` (from `.skb_marked_lost`; see module docs).
    pub(crate) fn note_loss(&mut self, conn: &Conn) {
        if !self.loss_in_round {
            self.loss_round_delivered = conn.delivered;
        }
        self.loss_in_round = true;
        self.loss_in_cycle = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::tests::bbr3_with;

    #[test]
    pub(crate) fn inflight_lo_and_bw_lo_cut_to_70_percent_once_per_round_on_loss() {
        // bbr_adapt_lower_bounds / bbr_loss_lower_bounds: not probing, a round
        // with loss → inflight_lo = max(inflight_latest, 0.7·inflight_lo),
        // bw_lo = max(bw_latest, 0.7·bw_lo); inflight_lo starts from cwnd.
        let (mut b, mut c) = bbr3_with(BW_UNIT, 10_000);
        b.mode = Mode::ProbeBw;
        b.cycle_idx = Phase::Cruise;
        c.cwnd = 100;
        b.loss_in_round = true;
        b.inflight_latest = 10;
        b.bw_latest = BW_UNIT / 10;
        b.adapt_lower_bounds(&c);
        assert_eq!(b.inflight_lo, 100 * 180 / 256); // 70
        assert_eq!(b.bw_lo, BW_UNIT * 180 / 256);
        b.adapt_lower_bounds(&c);
        assert_eq!(b.inflight_lo, 70 * 180 / 256); // 49
                                                   // Not below what the last round delivered.
        b.inflight_latest = 45;
        b.adapt_lower_bounds(&c);
        assert_eq!(b.inflight_lo, 45);
        // The bound caps cwnd in CRUISE.
        c.cwnd = 200;
        b.bound_cwnd_for_inflight_model(&mut c);
        assert_eq!(c.cwnd, 45);
    }

    #[test]
    pub(crate) fn lower_bounds_not_cut_while_probing() {
        let (mut b, mut c) = bbr3_with(BW_UNIT, 10_000);
        b.mode = Mode::ProbeBw;
        b.cycle_idx = Phase::Up;
        c.cwnd = 100;
        b.loss_in_round = true;
        b.adapt_lower_bounds(&c);
        assert_eq!(b.inflight_lo, u32::MAX);
        assert_eq!(b.bw_lo, u64::MAX);
    }
}
