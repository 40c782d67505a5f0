//! cwnd (tcp_bbr.c): the target gain·BDP + ACK-aggregation allowance +
//! quantization budget, packet conservation in the first round of recovery
//! and the prior-cwnd restore, and the extra_acked estimator.

use super::*;

/// State for `bbr_update_ack_aggregation` (tcp_bbr.c's ACK-aggregation fields).
#[derive(Clone, Debug, Default)]
pub(crate) struct AckAggregation {
    /// `ack_epoch_mstamp`: start of the ACK sampling epoch.
    pub epoch_mstamp: Time,
    /// `ack_epoch_acked`: packets (S)ACKed in the epoch (20-bit in Linux).
    pub epoch_acked: u32,
    /// `extra_acked[2]`: max excess ACKed in the current and previous window.
    pub extra_acked: [u32; 2],
    /// `extra_acked_win_rtts`: rounds since the window last flipped.
    pub win_rtts: u32,
    /// `extra_acked_win_idx`.
    pub win_idx: usize,
}

impl Bbr {
    /// `bbr_bdp`: ceil(bw · min_rtt · gain), or the initial window before any RTT sample.
    pub(crate) fn bdp(&self, bw: u64, gain: u32) -> u32 {
        if self.min_rtt_ns == u64::MAX {
            return TCP_INIT_CWND;
        }
        bdp_pkts(bw, self.min_rtt_us(), gain)
    }

    /// `bbr_quantization_budget`: room for 3 TSO bursts in flight, even
    /// rounding for delayed ACKs, +2 in the probing phase so small BDPs still
    /// get inflight above BDP.
    pub(crate) fn quantization_budget(&self, cwnd: u32, mss: u32) -> u32 {
        let mut cwnd = cwnd.saturating_add(3 * self.tso_segs_goal(mss));
        cwnd = (cwnd.saturating_add(1)) & !1u32;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd = cwnd.saturating_add(2);
        }
        cwnd
    }

    /// `bbr_inflight`: BDP·gain plus the quantization budget.
    pub(crate) fn inflight(&self, bw: u64, gain: u32, mss: u32) -> u32 {
        self.quantization_budget(self.bdp(bw, gain), mss)
    }

    /// `bbr_ack_aggregation_cwnd`: extra cwnd for ACK aggregation, once the pipe is full.
    pub(crate) fn ack_aggregation_cwnd(&self) -> u32 {
        if self.cfg.extra_acked_gain == 0 || !self.full_bw_reached() {
            return 0;
        }
        let max_aggr_cwnd =
            (self.bbr_bw() as u128 * self.cfg.extra_acked_max_us as u128 / BW_UNIT as u128) as u64;
        let aggr_cwnd = (self.cfg.extra_acked_gain as u64 * self.extra_acked() as u64) >> BBR_SCALE;
        aggr_cwnd.min(max_aggr_cwnd) as u32
    }

    /// `bbr_update_ack_aggregation`: track the max excess of ACKed data over
    /// what bw predicts, over a 5–10 round window.
    pub(crate) fn update_ack_aggregation(&mut self, conn: &Conn, rs: &RateSample) {
        if self.cfg.extra_acked_gain == 0 || rs.acked_sacked == 0 || rs.interval.ns() == 0 {
            return;
        }
        let a = &mut self.ack_agg;
        if self.round_start {
            a.win_rtts = (a.win_rtts + 1).min(0x1F);
            if a.win_rtts >= self.cfg.extra_acked_win_rtts {
                a.win_rtts = 0;
                a.win_idx ^= 1;
                a.extra_acked[a.win_idx] = 0;
            }
        }
        // Packets the model expected to be delivered over the epoch.
        let epoch_us = conn.delivered_time.saturating_sub(a.epoch_mstamp).ns() / NS_PER_US;
        let bw = if self.lt.use_bw {
            self.lt.bw
        } else {
            self.bw.get()
        };
        let mut expected_acked = (bw as u128 * epoch_us as u128 / BW_UNIT as u128) as u64;
        // Restart the epoch if ACKs arrive slower than expected, or the epoch is very old.
        if a.epoch_acked as u64 <= expected_acked
            || a.epoch_acked + rs.acked_sacked >= ACK_EPOCH_ACKED_RESET_THRESH
        {
            a.epoch_acked = 0;
            a.epoch_mstamp = conn.delivered_time;
            expected_acked = 0;
        }
        a.epoch_acked = (a.epoch_acked + rs.acked_sacked).min(0xFFFFF);
        let extra = (a.epoch_acked as u64 - expected_acked).min(conn.cwnd as u64) as u32;
        if extra > a.extra_acked[a.win_idx] {
            a.extra_acked[a.win_idx] = extra;
        }
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: deduct losses; packet
    /// conservation in the first round of recovery; restore the prior cwnd
    /// on leaving recovery. Returns `Some(cwnd)` if conservation decides cwnd.
    pub(crate) fn set_cwnd_to_recover_or_restore(
        &mut self,
        conn: &Conn,
        rs: &RateSample,
        acked: u32,
    ) -> (u32, bool) {
        let prev_state = self.prev_ca_state;
        let state = conn.ca_state;
        let mut cwnd = conn.cwnd;
        // An ACK for P packets should release at most 2P: first deduct the
        // losses here, then set_cwnd slow-starts toward the target.
        if rs.losses > 0 {
            cwnd = (cwnd as i64 - rs.losses as i64).max(1) as u32;
        }
        if state == CaState::Recovery && prev_state != CaState::Recovery {
            // First round of Recovery: packet conservation.
            self.packet_conservation = true;
            self.next_rtt_delivered = conn.delivered; // start the round now
            cwnd = conn.in_flight + acked; // cut unused cwnd
        } else if ca_rank(prev_state) >= ca_rank(CaState::Recovery)
            && ca_rank(state) < ca_rank(CaState::Recovery)
        {
            // Leaving recovery: restore the cwnd saved when it started.
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(conn.in_flight + acked), true);
        }
        (cwnd, false)
    }

    /// The cwnd gain used for the target: the configured gain, or in
    /// `bbr_cwnd_feedback` the loop's gain while in ProbeBW.
    pub(crate) fn target_cwnd_gain(&self, gain: u32) -> u32 {
        match (&self.feedback, self.mode) {
            (Some(fb), Mode::ProbeBw) => fb.gain(),
            _ => gain,
        }
    }

    /// `bbr_set_cwnd`: slow-start toward gain·BDP + aggregation + budget, or
    /// snap down to it once the pipe is full; at least 4; 4 in ProbeRTT.
    pub(crate) fn set_cwnd(
        &mut self,
        conn: &mut Conn,
        rs: &RateSample,
        acked: u32,
        bw: u64,
        gain: u32,
    ) {
        let mut cwnd = conn.cwnd;
        if acked > 0 {
            let (c, conserving) = self.set_cwnd_to_recover_or_restore(conn, rs, acked);
            cwnd = c;
            if !conserving {
                let mut target_cwnd = self.bdp(bw, self.target_cwnd_gain(gain));
                target_cwnd = target_cwnd.saturating_add(self.ack_aggregation_cwnd());
                target_cwnd = self.quantization_budget(target_cwnd, conn.mss);
                if self.full_bw_reached() {
                    cwnd = (cwnd.saturating_add(acked)).min(target_cwnd);
                } else if cwnd < target_cwnd || conn.delivered < TCP_INIT_CWND as u64 {
                    cwnd = cwnd.saturating_add(acked);
                }
                cwnd = cwnd.max(self.cfg.cwnd_min_target);
            }
        }
        conn.cwnd = cwnd.min(conn.cwnd_clamp);
        if self.mode == Mode::ProbeRtt {
            conn.cwnd = conn.cwnd.min(self.cfg.cwnd_min_target);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{Dur, Time};

    use crate::cc::bbr::tests::steady;

    #[test]
    fn recovery_conserves_packets_then_restores_prior_cwnd() {
        // tcp_bbr.c bbr_set_cwnd_to_recover_or_restore: entering Recovery,
        // cwnd = inflight + acked (packet conservation) for the first round;
        // losses are deducted; on exit cwnd = max(cwnd, prior_cwnd saved by
        // bbr_ssthresh → bbr_save_cwnd).
        let (mut b, mut c) = steady();
        let ss = b.ssthresh(&c);
        assert_eq!(ss, c.ssthresh, "bbr_ssthresh leaves ssthresh alone");
        assert_eq!(b.prior_cwnd, 100);
        c.ca_state = CaState::Recovery;
        c.in_flight = 80;
        let rs = RateSample {
            losses: 5,
            acked_sacked: 1,
            ..Default::default()
        };
        b.set_cwnd(&mut c, &rs, 1, b.bbr_bw(), b.cwnd_gain);
        assert_eq!(c.cwnd, 81, "inflight + acked");
        assert!(b.packet_conservation);
        // Still the first round: an ACK for 2 releases 2 (cwnd = inflight + acked).
        c.in_flight = 79;
        let rs2 = RateSample {
            acked_sacked: 2,
            ..Default::default()
        };
        b.set_cwnd(&mut c, &rs2, 2, b.bbr_bw(), b.cwnd_gain);
        assert_eq!(c.cwnd, 81);
        // Next round: conservation off, slow start toward the target (+acked).
        b.packet_conservation = false;
        b.set_cwnd(&mut c, &rs2, 2, b.bbr_bw(), b.cwnd_gain);
        assert_eq!(c.cwnd, 83);
        // Recovery ends: restore the prior cwnd.
        c.ca_state = CaState::Open;
        b.set_cwnd(&mut c, &rs2, 2, b.bbr_bw(), b.cwnd_gain);
        assert_eq!(
            c.cwnd, 102,
            "max(cwnd, prior_cwnd) + acked, below the 2·BDP target"
        );
    }

    #[test]
    fn ack_aggregation_adds_extra_acked_capped_at_100ms_of_bw_and_cwnd() {
        // tcp_bbr.c bbr_update_ack_aggregation / bbr_ack_aggregation_cwnd.
        let (mut b, mut c) = steady();
        let rs = |n| RateSample {
            acked_sacked: n,
            interval: Dur::from_ms(13),
            delivered: n as u64,
            ..Default::default()
        };
        c.delivered_time = Time(Dur::from_ms(1).ns());
        b.update_ack_aggregation(&c, &rs(1)); // epoch restarts here (acked ≤ expected)
                                              // 1 ms later 40 packets arrive at once; bw predicts floor(7812.5 pkt/s · 1 ms) = 7.
                                              // The 1 packet acked so far is ≤ 7, so the epoch restarts at this ACK:
                                              // extra = 40 − 0.
        c.delivered_time = Time(Dur::from_ms(2).ns());
        b.update_ack_aggregation(&c, &rs(40));
        assert_eq!(b.extra_acked(), 40);
        assert_eq!(b.ack_aggregation_cwnd(), 40);
        // 0.5 ms later 30 more: epoch acked 70 vs expected floor(7812.5 · 0.5 ms) = 3.
        c.delivered_time = Time(Dur::from_us(2_500).ns());
        b.update_ack_aggregation(&c, &rs(30));
        assert_eq!(b.extra_acked(), 67);
        // Capped at cwnd …
        c.cwnd = 20;
        b.ack_agg.extra_acked = [0, 0];
        b.update_ack_aggregation(&c, &rs(30));
        assert_eq!(b.extra_acked(), 20);
        // … and at 100 ms of bw (781 packets).
        b.ack_agg.extra_acked = [5000, 0];
        assert_eq!(b.ack_aggregation_cwnd(), 781);
        // Not before the pipe is full.
        b.full_bw_reached = false;
        assert_eq!(b.ack_aggregation_cwnd(), 0);
    }
}
