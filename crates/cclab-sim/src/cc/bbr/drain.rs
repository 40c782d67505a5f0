//! DRAIN (tcp_bbr.c): pace at 1/high_gain to drain the queue Startup built,
//! keeping cwnd at high_gain·BDP, until the packets in the network at the
//! next departure time fit one BDP (`bbr_check_drain`).

use super::{Bbr, Mode, BBR_UNIT};
use crate::cc::Conn;

impl Bbr {
    /// `bbr_check_drain`: Startup → Drain once the pipe is full (ssthresh is
    /// set to the BDP for monitoring); Drain → ProbeBW once inflight ≤ BDP.
    pub(crate) fn check_drain(&mut self, conn: &mut Conn) {
        if self.mode == Mode::Startup && self.full_bw_reached() {
            self.mode = Mode::Drain;
            conn.ssthresh = self.inflight(self.max_bw(), BBR_UNIT, conn.mss);
        }
        // Fall through: inflight may already be small.
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(conn, conn.in_flight)
                <= self.inflight(self.max_bw(), BBR_UNIT, conn.mss)
        {
            self.reset_probe_bw_mode(conn);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use crate::cc::Conn;
    use crate::time::{Dur, Time};

    fn drained_bbr() -> (Bbr, Conn) {
        let mut c = Conn::new(Time::ZERO, 1000);
        let mut b = Bbr::new("bbr", BbrConfig::default(), 3);
        b.bbr_init(&mut c);
        // bw = 1 packet/µs·2^24/100 (0.01 pkt/µs = 10 kpkt/s), min_rtt 10 ms → BDP 100.
        b.bw.reset(0, BW_UNIT / 100);
        b.min_rtt_ns = Dur::from_ms(10).ns();
        b.full_bw_reached = true;
        (b, c)
    }

    #[test]
    fn drain_holds_while_inflight_above_bdp_and_exits_at_bdp() {
        // bbr_check_drain: leave DRAIN when in-network packets ≤ bbr_inflight(max_bw, 1.0).
        let (mut b, mut c) = drained_bbr();
        let target = b.inflight(b.max_bw(), BBR_UNIT, c.mss);
        c.in_flight = 250;
        b.check_drain(&mut c);
        assert_eq!(b.mode, Mode::Drain);
        assert_eq!(
            c.ssthresh, target,
            "ssthresh exported as the BDP on entering Drain"
        );
        b.update_gains(); // bbr_update_model: gains follow the mode on the same ACK
        c.in_flight = target + 1;
        b.check_drain(&mut c);
        assert_eq!(b.mode, Mode::Drain);
        c.in_flight = target;
        b.check_drain(&mut c);
        assert_eq!(b.mode, Mode::ProbeBw);
    }

    #[test]
    fn drain_gain_paces_below_bw_but_keeps_high_cwnd_gain() {
        let (mut b, mut c) = drained_bbr();
        c.in_flight = 250;
        b.check_drain(&mut c);
        b.update_gains();
        assert_eq!(b.pacing_gain, DRAIN_GAIN);
        assert_eq!(b.cwnd_gain, HIGH_GAIN);
    }
}
