//! DRAIN (v3 tcp_bbr.c): pace at 0.344 (the code's `bbr_drain_gain`; the
//! draft says 0.5) until the in-network packets fit one BDP, then enter
//! PROBE_BW at DOWN (`bbr_check_drain`).

use super::{Bbr3, Mode, BBR_UNIT};
use crate::cc::Conn;

impl Bbr3 {
    /// `bbr_check_drain`.
    pub(crate) fn check_drain(&mut self, conn: &mut Conn) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            // Exported for monitoring: a non-infinite ssthresh marks Startup done.
            conn.ssthresh = self.inflight(self.max_bw(), BBR_UNIT, conn.mss);
            self.reset_congestion_signals();
        }
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(conn, conn.in_flight)
                <= self.inflight(self.max_bw(), BBR_UNIT, conn.mss)
        {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(conn);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use crate::sim::harness::{Harness, Path};

    #[test]
    fn drain_exits_within_three_rounds_into_probe_bw_down() {
        // google/bbr v3 bbr_check_drain: Drain exits within 3 rounds; then
        // PROBE_BW DOWN (bbr_start_bw_probe_down, which starts the probe
        // clock: cycle_mstamp = now). bbr_update_model runs bbr_check_drain
        // and then bbr_update_cycle_phase on the same ACK, and DOWN ends at
        // once when the ACK's prior in-flight (at EDT) is already ≤ BDP: with
        // delayed ACKs (2 segments per ACK) that is the ACK ending Drain, so
        // the phase seen after it is DOWN or, left on the same ACK, CRUISE.
        let path = Path::new(50_000_000, 30).with_buffer_bdp(8.0);
        let mut h = Harness::new("bbr3", &[], path, 3);
        while h.bbr3().mode != Mode::Drain && h.now_secs() < 3.0 {
            h.step();
        }
        let t0 = h.now_secs();
        // A round starts when next_rtt_delivered moves (round_start stays
        // set through the events after that ACK, so it is not counted per step).
        let mut rounds = 0;
        let mut mark = h.bbr3().next_rtt_delivered;
        while h.bbr3().mode == Mode::Drain {
            h.step();
            if h.bbr3().next_rtt_delivered != mark {
                mark = h.bbr3().next_rtt_delivered;
                rounds += 1;
            }
        }
        let b = h.bbr3();
        eprintln!(
            "Drain: {rounds} round(s), {:.3} s, then {:?} {:?}",
            h.now_secs() - t0,
            b.mode,
            b.cycle_idx
        );
        assert!(rounds <= 3);
        assert_eq!(b.mode, Mode::ProbeBw);
        assert_eq!(b.cycle_mstamp, h.now(), "DOWN began at the Drain exit");
        assert!(
            matches!(b.cycle_idx, Phase::Down | Phase::Cruise),
            "{:?}",
            b.cycle_idx
        );
    }
}
