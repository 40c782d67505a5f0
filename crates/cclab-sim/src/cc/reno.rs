//! NewReno as Linux runs it: `tcp_reno_cong_avoid` / `tcp_reno_ssthresh`
//! (net/ipv4/tcp_cong.c). Recovery itself (NewReno partial-ACK handling,
//! SACK, PRR) lives in the sender; this module only sets the window.

use super::{tcp_reno_cong_avoid, CaState, CongestionOps, Conn, CcError, Params, Snapshot};

#[derive(Clone, Debug, Default)]
pub struct Reno {
    /// `snd_cwnd_cnt`: ACKed packets accumulated toward the next +1.
    cwnd_cnt: u32,
}

/// State names of the loss-based algorithms (Reno, CUBIC): the sender's
/// recovery state, else slow start vs congestion avoidance.
pub const LOSS_BASED_STATES: &[&str] = &["SLOW_START", "CONG_AVOID", "RECOVERY", "LOSS"];

/// The state code of a loss-based algorithm, indexing [`LOSS_BASED_STATES`].
pub fn loss_based_state(conn: &Conn) -> u8 {
    match conn.ca_state {
        CaState::Recovery | CaState::Cwr => 2,
        CaState::Loss => 3,
        _ if conn.in_slow_start() => 0,
        _ => 1,
    }
}

/// Parameters `cca_params` may set (none for Reno).
pub const PARAMS: &[&str] = &[];

impl Reno {
    pub(crate) fn from_params(p: Params) -> Result<Reno, CcError> {
        p.finish(PARAMS)?;
        Ok(Reno::default())
    }
}

impl CongestionOps for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }
    /// `tcp_reno_ssthresh`: max(cwnd/2, 2) (RFC 5681 §3.1 eq. 4 uses FlightSize; Linux uses cwnd).
    fn ssthresh(&mut self, conn: &Conn) -> u32 {
        self.cwnd_cnt = 0;
        (conn.cwnd >> 1).max(2)
    }
    /// `tcp_reno_cong_avoid`: slow start below ssthresh, then +1 per cwnd ACKed.
    fn cong_avoid(&mut self, conn: &mut Conn, acked: u32) {
        tcp_reno_cong_avoid(conn, &mut self.cwnd_cnt, acked);
    }
    fn snapshot(&self, conn: &Conn) -> Snapshot {
        Snapshot { state: loss_based_state(conn), ..Default::default() }
    }
    fn state_names(&self) -> &'static [&'static str] {
        LOSS_BASED_STATES
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Time;

    fn conn(cwnd: u32, ssthresh: u32) -> Conn {
        let mut c = Conn::new(Time::ZERO, 1448);
        c.cwnd = cwnd;
        c.ssthresh = ssthresh;
        c.is_cwnd_limited = true;
        c
    }

    #[test]
    fn slow_start_doubles_per_window() {
        // RFC 5681 §3.1: cwnd += acked while cwnd < ssthresh.
        let mut r = Reno::default();
        let mut c = conn(10, 1000);
        r.cong_avoid(&mut c, 10);
        assert_eq!(c.cwnd, 20);
    }

    #[test]
    fn congestion_avoidance_adds_one_per_window() {
        // RFC 5681 §3.1 eq. 3: +1 MSS per RTT (one window of ACKs).
        let mut r = Reno::default();
        let mut c = conn(20, 10);
        for _ in 0..10 {
            r.cong_avoid(&mut c, 2);
        }
        assert_eq!(c.cwnd, 21);
    }

    #[test]
    fn ssthresh_halves_cwnd_with_floor_two() {
        let mut r = Reno::default();
        assert_eq!(r.ssthresh(&conn(40, 100)), 20);
        assert_eq!(r.ssthresh(&conn(3, 100)), 2);
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        let mut r = Reno::default();
        let mut c = conn(20, 10);
        c.is_cwnd_limited = false;
        r.cong_avoid(&mut c, 20);
        assert_eq!(c.cwnd, 20);
    }
}
