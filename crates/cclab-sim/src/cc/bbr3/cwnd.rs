//! cwnd (v3 tcp_bbr.c): the target gain·BDP + ACK-aggregation allowance +
//! quantization budget (no packet conservation in v3: losses act through the
//! bounds), capped by the inflight model — inflight_hi while probing,
//! inflight_hi less 15 % headroom when cruising or in ProbeRTT, inflight_lo
//! always — and ProbeRTT's max(4, 0.5·BDP).

use super::*;

impl Bbr3 {
    /// `bbr_ack_aggregation_cwnd` (v3: also before the pipe is full).
    pub(crate) fn ack_aggregation_cwnd(&self) -> u32 {
        if self.cfg.extra_acked_gain == 0 {
            return 0;
        }
        let max_aggr =
            (self.bbr_bw() as u128 * EXTRA_ACKED_MAX_US as u128 / BW_UNIT as u128) as u64;
        let aggr = (self.cfg.extra_acked_gain as u64 * self.extra_acked() as u64) >> BBR_SCALE;
        aggr.min(max_aggr) as u32
    }

    /// `bbr_update_ack_aggregation` (v3: 1-round window before full bw).
    pub(crate) fn update_ack_aggregation(&mut self, conn: &Conn, rs: &RateSample) {
        if self.cfg.extra_acked_gain == 0 || rs.acked_sacked == 0 || rs.interval.ns() == 0 {
            return;
        }
        let bw = self.bbr_bw();
        let thresh = if self.full_bw_reached {
            self.cfg.extra_acked_win_rtts
        } else {
            1
        };
        let a = &mut self.ack_agg;
        if self.round_start {
            a.win_rtts = (a.win_rtts + 1).min(0x1F);
            if a.win_rtts >= thresh {
                a.win_rtts = 0;
                a.win_idx ^= 1;
                a.extra_acked[a.win_idx] = 0;
            }
        }
        let epoch_us = conn.delivered_time.saturating_sub(a.epoch_mstamp).ns() / NS_PER_US;
        let mut expected = (bw as u128 * epoch_us as u128 / BW_UNIT as u128) as u64;
        if a.epoch_acked as u64 <= expected
            || a.epoch_acked + rs.acked_sacked >= ACK_EPOCH_ACKED_RESET_THRESH
        {
            a.epoch_acked = 0;
            a.epoch_mstamp = conn.delivered_time;
            expected = 0;
        }
        a.epoch_acked = (a.epoch_acked + rs.acked_sacked).min(0xFFFFF);
        let extra = (a.epoch_acked as u64 - expected).min(conn.cwnd as u64) as u32;
        if extra > a.extra_acked[a.win_idx] {
            a.extra_acked[a.win_idx] = extra;
        }
    }

    /// `bbr_probe_rtt_cwnd`: max(4, 0.5·BDP).
    pub(crate) fn probe_rtt_cwnd(&self) -> u32 {
        self.cfg
            .cwnd_min_target
            .max(self.bdp(self.bbr_bw(), self.cfg.probe_rtt_cwnd_gain))
    }

    /// `bbr_set_cwnd` (v3: no packet conservation; losses act through the bounds).
    pub(crate) fn set_cwnd(&mut self, conn: &mut Conn, acked: u32, bw: u64, gain: u32) {
        let mut cwnd = conn.cwnd;
        if acked > 0 {
            let mut target = self.bdp(bw, gain);
            target = target.saturating_add(self.ack_aggregation_cwnd());
            target = self.quantization_budget(target, conn.mss);
            if self.full_bw_reached {
                cwnd = cwnd.saturating_add(acked);
                if cwnd >= target {
                    cwnd = target;
                }
            } else if cwnd < target || cwnd < 2 * self.init_cwnd {
                cwnd = cwnd.saturating_add(acked);
            }
            cwnd = cwnd.max(self.cfg.cwnd_min_target);
        }
        conn.cwnd = cwnd.min(conn.cwnd_clamp);
        if self.mode == Mode::ProbeRtt {
            conn.cwnd = conn.cwnd.min(self.probe_rtt_cwnd());
        }
    }

    /// `bbr_inflight_with_headroom`: leave 15 % of inflight_hi free.
    pub(crate) fn inflight_with_headroom(&self) -> u32 {
        if self.inflight_hi == u32::MAX {
            return u32::MAX;
        }
        let headroom = ((self.inflight_hi as u64 * self.cfg.inflight_headroom as u64) >> BBR_SCALE)
            .max(1) as i64;
        (self.inflight_hi as i64 - headroom).max(self.cfg.cwnd_min_target as i64) as u32
    }

    /// `bbr_bound_cwnd_for_inflight_model`.
    pub(crate) fn bound_cwnd_for_inflight_model(&mut self, conn: &mut Conn) {
        let mut cap = u32::MAX;
        if self.mode == Mode::ProbeBw && self.cycle_idx != Phase::Cruise {
            cap = self.inflight_hi; // probe to see if more fits
        } else if self.mode == Mode::ProbeRtt
            || (self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Cruise)
        {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_lo); // adapt to loss since the last probe
        cap = cap.max(self.cfg.cwnd_min_target);
        conn.cwnd = conn.cwnd.min(cap);
    }
}
