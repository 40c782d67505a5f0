//! PROBE_RTT (tcp_bbr.c): if min_rtt has not been matched or lowered for
//! 10 s, cap cwnd at 4 packets for max(200 ms, one round) to drain the queue
//! and re-measure the two-way propagation delay, then restore the prior
//! cwnd and return to ProbeBW (or Startup if the pipe was never full).

use super::{Bbr, Mode};
use crate::cc::{Conn, RateSample};
use crate::time::Time;

impl Bbr {
    /// `bbr_reset_mode`.
    pub(crate) fn reset_mode(&mut self, conn: &Conn) {
        if !self.full_bw_reached() {
            self.reset_startup_mode();
        } else {
            self.reset_probe_bw_mode(conn);
        }
    }

    /// `bbr_check_probe_rtt_done`: after the 200 ms (and the round) are over,
    /// restart the min_rtt clock, restore cwnd and leave ProbeRTT.
    pub(crate) fn check_probe_rtt_done(&mut self, conn: &mut Conn) {
        match self.probe_rtt_done_stamp {
            Some(done) if conn.now > done => {}
            _ => return,
        }
        if let Some(sticky) = self.sticky.as_mut() {
            // bbr_sticky_rtprop: decide whether this probe may raise RTprop.
            self.min_rtt_ns = sticky.probe_done(self.min_rtt_ns);
        }
        self.min_rtt_stamp = conn.now; // wait a while until the next ProbeRTT
        conn.cwnd = conn.cwnd.max(self.prior_cwnd);
        self.reset_mode(conn);
    }

    /// `bbr_update_min_rtt`: track the min RTT over `min_rtt_win` (10 s);
    /// when it expires, enter ProbeRTT; while there, mark samples
    /// app-limited and hold ≤ 4 packets for max(200 ms, 1 round).
    pub(crate) fn update_min_rtt(&mut self, conn: &mut Conn, rs: &RateSample) {
        let filter_expired = conn.now > self.min_rtt_stamp + self.cfg.min_rtt_win;
        if let Some(rtt) = rs.rtt {
            let rtt = rtt.ns();
            match self.sticky.as_mut() {
                None => {
                    // Strictly lower, as Linux since 2020 (tcp_bbr.c
                    // bbr_update_min_rtt: `rs->rtt_us < bbr->min_rtt_us`): an
                    // equal sample does not restart the 10 s window.
                    if rtt < self.min_rtt_ns || (filter_expired && !rs.is_ack_delayed) {
                        self.min_rtt_ns = rtt;
                        self.min_rtt_stamp = conn.now;
                    }
                }
                Some(sticky) => {
                    // Lower samples are taken at once, as in Linux; an
                    // expired window does not overwrite RTprop here but
                    // feeds the probe's candidate, judged when ProbeRTT ends.
                    if rtt < self.min_rtt_ns {
                        self.min_rtt_ns = rtt;
                        self.min_rtt_stamp = conn.now;
                        sticky.lowered();
                    } else if filter_expired && !rs.is_ack_delayed {
                        sticky.observe(rtt);
                    }
                }
            }
        }

        if self.cfg.probe_rtt_mode.ns() > 0
            && filter_expired
            && !self.idle_restart
            && self.mode != Mode::ProbeRtt
        {
            self.mode = Mode::ProbeRtt; // dip, drain the queue
            self.save_cwnd(conn);
            self.probe_rtt_done_stamp = None;
        }

        if self.mode == Mode::ProbeRtt {
            // Ignore low-rate samples during this mode.
            conn.app_limited = (conn.delivered + conn.in_flight as u64).max(1);
            // Hold the minimum inflight for max(200 ms, 1 round).
            if self.probe_rtt_done_stamp.is_none() && conn.in_flight <= self.cfg.cwnd_min_target {
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
        // Restart after idle ends only once a new S/ACK for data arrives.
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// When the current ProbeRTT (if any) may end, for tests and the record.
    pub fn probe_rtt_done_stamp(&self) -> Option<Time> {
        self.probe_rtt_done_stamp
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use crate::sim::harness::{Harness, Path, MSS};

    #[test]
    fn probe_rtt_every_10s_at_4_packets_for_200ms_plus_a_round() {
        // docs/validation.md check 2 / tcp_bbr.c: a dip to cwnd 4 every ~10 s
        // lasting max(200 ms, 1 round) once inflight ≤ 4 — here 200 ms + the
        // time to drain to 4 packets, and about one round more.
        let path = Path::new(20_000_000, 40).with_buffer_bdp(4.0);
        let mut h = Harness::new("bbr", &[], path, 5);
        let mut entries = vec![];
        let mut exits = vec![];
        let mut max_cwnd_in_probe_rtt = 0;
        let mut prev = Mode::Startup;
        while h.now_secs() < 32.0 {
            h.step();
            let m = h.bbr().mode;
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
        eprintln!("ProbeRTT entries {entries:?} exits {exits:?}");
        assert!(entries.len() >= 3, "{entries:?}");
        // The first comes 10 s after the last new min (set in Startup, ≲ 0.3 s).
        assert!(entries[0] > 10.0 && entries[0] < 10.6, "{entries:?}");
        for w in entries.windows(2) {
            let gap = w[1] - w[0];
            assert!(gap > 10.0 && gap < 10.6, "gap {gap}");
        }
        let rtt = 0.040;
        for (e, x) in entries.iter().zip(&exits) {
            let d = x - e;
            assert!(d >= 0.2 && d <= 0.2 + 3.0 * rtt, "ProbeRTT lasted {d}");
        }
        assert_eq!(max_cwnd_in_probe_rtt, CWND_MIN_TARGET);
    }

    #[test]
    fn probe_rtt_restores_prior_cwnd() {
        // bbr_check_probe_rtt_done: cwnd = max(cwnd, prior_cwnd) on exit.
        let path = Path::new(20_000_000, 40).with_buffer_bdp(4.0);
        let mut h = Harness::new("bbr", &[], path, 5);
        let mut before = 0;
        let mut after = None;
        let mut prev = Mode::Startup;
        while h.now_secs() < 12.0 && after.is_none() {
            let cwnd = h.conn().cwnd;
            h.step();
            let m = h.bbr().mode;
            if m == Mode::ProbeRtt && prev != Mode::ProbeRtt {
                before = cwnd;
            }
            if m != Mode::ProbeRtt && prev == Mode::ProbeRtt {
                after = Some(h.conn().cwnd);
            }
            prev = m;
        }
        assert!(before > CWND_MIN_TARGET);
        // The same ACK then runs bbr_set_cwnd in the restored mode, which
        // caps cwnd at its target (full pipe): cwnd = min(prior + acked, target).
        let b = h.bbr();
        let target = b.quantization_budget(
            b.bdp(b.bbr_bw(), b.cwnd_gain) + b.ack_aggregation_cwnd(),
            MSS,
        );
        let after = after.unwrap();
        assert!(
            after >= before.min(target) && after <= target,
            "restored {after} vs prior {before}, target {target}"
        );
    }

    #[test]
    fn expired_filter_takes_a_higher_sample() {
        // bbr_update_min_rtt: after 10 s any (non-delayed-ACK) sample replaces min_rtt.
        use crate::cc::{Conn, RateSample};
        use crate::time::{Dur, Time};
        let mut c = Conn::new(Time::ZERO, 1448);
        let mut b = Bbr::new("bbr", BbrConfig::default(), 1);
        b.bbr_init(&mut c);
        let rs = |ms| RateSample {
            rtt: Some(Dur::from_ms(ms)),
            delivered: 1,
            ..Default::default()
        };
        b.update_min_rtt(&mut c, &rs(20));
        c.now = Time(Dur::from_secs(5).ns());
        b.update_min_rtt(&mut c, &rs(30));
        assert_eq!(b.min_rtt_ns, Dur::from_ms(20).ns());
        c.now = Time(Dur::from_secs(10).ns() + 1);
        b.update_min_rtt(&mut c, &rs(30));
        assert_eq!(b.min_rtt_ns, Dur::from_ms(30).ns());
        assert_eq!(b.mode, Mode::ProbeRtt);
    }
}
