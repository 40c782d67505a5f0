//! PROBE_RTT (v3 tcp_bbr.c): if no RTT sample has been lower than the
//! 5 s-window minimum for 5 s, cut cwnd to max(4, 0.5·BDP) for
//! max(200 ms, 1 round), then cruise. min_rtt itself keeps a 10 s window.

use super::{AckPhase, Bbr3, Mode, NS_PER_US};
use crate::cc::{Conn, RateSample};

impl Bbr3 {
    /// `bbr_exit_probe_rtt`.
    pub(crate) fn exit_probe_rtt(&mut self, conn: &Conn) {
        self.reset_lower_bounds();
        if self.full_bw_reached {
            self.mode = Mode::ProbeBw;
            // Re-raising inflight may cause loss: restart the ProbeBW clock
            // and schedule the next probe at a randomized, friendly time;
            // inflight is below BDP, so cruise.
            self.start_bw_probe_down(conn);
            self.start_bw_probe_cruise();
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// `bbr_check_probe_rtt_done`.
    pub(crate) fn check_probe_rtt_done(&mut self, conn: &mut Conn) {
        match self.probe_rtt_done_stamp {
            Some(done) if conn.now > done => {}
            _ => return,
        }
        self.probe_rtt_min_stamp = conn.now; // schedule the next ProbeRTT
        conn.cwnd = conn.cwnd.max(self.prior_cwnd);
        self.exit_probe_rtt(conn);
    }

    /// `bbr_update_min_rtt` (v3).
    pub(crate) fn update_min_rtt(&mut self, conn: &mut Conn, rs: &RateSample) {
        let probe_rtt_expired = conn.now > self.probe_rtt_min_stamp + self.cfg.probe_rtt_win;
        // v2alpha (tcp_bbr2.c bbr_update_min_rtt) compares in µs and lets an
        // equal sample refresh the filters; see Logic::probe_rtt_min_takes_equal_us.
        let v2_le = self.cfg.logic.probe_rtt_min_takes_equal_us;
        if let Some(rtt) = rs.rtt {
            let rtt = rtt.ns();
            let lower = if v2_le {
                // v2alpha: rs->rtt_us <= probe_rtt_min_us (the kernel's µs).
                rtt / NS_PER_US <= self.probe_rtt_min_ns / NS_PER_US
            } else {
                rtt < self.probe_rtt_min_ns
            };
            if lower || (probe_rtt_expired && !rs.is_ack_delayed) {
                self.probe_rtt_min_ns = rtt;
                self.probe_rtt_min_stamp = conn.now;
            }
        }
        let min_rtt_expired = conn.now > self.min_rtt_stamp + self.cfg.min_rtt_win;
        let probe_rtt_min_le = if v2_le {
            self.probe_rtt_min_ns / NS_PER_US <= self.min_rtt_ns / NS_PER_US
        } else {
            self.probe_rtt_min_ns <= self.min_rtt_ns
        };
        if probe_rtt_min_le || min_rtt_expired {
            self.min_rtt_ns = self.probe_rtt_min_ns;
            self.min_rtt_stamp = self.probe_rtt_min_stamp;
        }

        if self.cfg.probe_rtt_mode.ns() > 0
            && probe_rtt_expired
            && !self.idle_restart
            && self.mode != Mode::ProbeRtt
        {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd(conn);
            self.probe_rtt_done_stamp = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.next_rtt_delivered = conn.delivered;
        }

        if self.mode == Mode::ProbeRtt {
            conn.app_limited = (conn.delivered + conn.in_flight as u64).max(1);
            if self.probe_rtt_done_stamp.is_none() && conn.in_flight <= self.probe_rtt_cwnd() {
                self.probe_rtt_done_stamp = Some(conn.now + self.cfg.probe_rtt_mode);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = conn.delivered;
            } else if self.probe_rtt_done_stamp.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(conn);
                }
            }
        }
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use crate::sim::harness::{Harness, Path};

    #[test]
    fn probe_rtt_every_5s_at_half_bdp() {
        // docs/validation.md check 5 / v3 bbr_update_min_rtt: ProbeRTT every ~5 s,
        // cwnd = max(4, 0.5·BDP), lasting ≥ 200 ms + 1 round.
        let path = Path::new(20_000_000, 40).with_buffer_bdp(4.0);
        let bdp = path.bdp_pkts();
        let mut h = Harness::new("bbr3", &[], path, 5);
        let (mut entries, mut exits) = (vec![], vec![]);
        let mut max_cwnd_in_probe_rtt = 0;
        let mut prev = Mode::Startup;
        while h.now_secs() < 22.0 {
            h.step();
            let m = h.bbr3().mode;
            if m == Mode::ProbeRtt {
                max_cwnd_in_probe_rtt = max_cwnd_in_probe_rtt.max(h.conn().cwnd);
            }
            if m == Mode::ProbeRtt && prev != Mode::ProbeRtt {
                entries.push(h.now_secs());
            }
            if m != Mode::ProbeRtt && prev == Mode::ProbeRtt {
                exits.push(h.now_secs());
            }
            prev = m;
        }
        eprintln!("bbr3 ProbeRTT entries {entries:?} exits {exits:?}, max cwnd there {max_cwnd_in_probe_rtt} (BDP {bdp:.1})");
        assert!(entries.len() >= 3, "{entries:?}");
        for w in entries.windows(2) {
            let gap = w[1] - w[0];
            assert!(gap > 5.0 && gap < 5.7, "gap {gap}");
        }
        for (e, x) in entries.iter().zip(&exits) {
            assert!(
                x - e >= 0.2 && x - e < 0.2 + 4.0 * 0.040,
                "lasted {}",
                x - e
            );
        }
        // 0.5·BDP (+1 for the ceil in bbr_bdp, +the bw estimate's 1 % noise).
        assert!(max_cwnd_in_probe_rtt as f64 <= (bdp * 0.5 * 1.02).ceil() + 1.0);
        assert!(max_cwnd_in_probe_rtt >= 4);
    }

    #[test]
    fn first_sample_after_expiry_then_any_lower_one_restart_the_clock() {
        // v3 bbr_update_min_rtt: once probe_rtt_min is 5 s old, the next sample
        // (not from a delayed ACK) replaces it whatever its value and ProbeRTT
        // starts; afterwards a strictly lower sample restarts the 5-s clock, an
        // equal one does not. This is why, on a path where most ACKs cover a
        // TSO burst's second segment, ProbeRTTs can come more than 5 s apart.
        use super::super::tests::bbr3_with;
        use crate::cc::RateSample;
        use crate::time::{Dur, Time};
        let (mut b, mut c) = bbr3_with(BW_UNIT / 10, 40_000);
        let rs = |us: u64| RateSample { rtt: Some(Dur(us * 1000)), delivered: 1, ..Default::default() };
        b.mode = Mode::ProbeBw;
        b.update_min_rtt(&mut c, &rs(40_000)); // the handshake's value, stamped at 0
        c.now = Time(Dur::from_ms(5_001).0);
        b.update_min_rtt(&mut c, &rs(40_480));
        assert_eq!((b.probe_rtt_min_ns, b.probe_rtt_min_stamp), (40_480_000, c.now));
        assert_eq!(b.mode, Mode::ProbeRtt);
        b.mode = Mode::ProbeBw;
        c.now = Time(Dur::from_ms(7_000).0);
        b.update_min_rtt(&mut c, &rs(40_480)); // equal: no restart
        assert_eq!(b.probe_rtt_min_stamp, Time(Dur::from_ms(5_001).0));
        b.update_min_rtt(&mut c, &rs(40_240)); // lower: restart at 7 s
        assert_eq!((b.probe_rtt_min_ns, b.probe_rtt_min_stamp), (40_240_000, c.now));
        c.now = Time(Dur::from_ms(11_000).0);
        b.update_min_rtt(&mut c, &rs(40_960));
        assert_eq!(b.mode, Mode::ProbeBw, "4 s after the restart: no ProbeRTT yet");
        c.now = Time(Dur::from_ms(12_001).0);
        b.update_min_rtt(&mut c, &rs(40_960));
        assert_eq!(b.mode, Mode::ProbeRtt);
    }
}
