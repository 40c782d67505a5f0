//! RTT estimation and the retransmission timeout (RFC 6298 with Linux's
//! constants: net/ipv4/tcp_input.c `tcp_rtt_estimator`, `tcp_set_rto`).

use crate::time::{Dur, Time};

/// `TCP_RTO_MIN` (include/net/tcp.h): HZ/5 = 200 ms. RFC 6298 §2.4 says 1 s; Linux uses 200 ms.
pub const RTO_MIN: Dur = Dur::from_ms(200);
/// `TCP_RTO_MAX` (include/net/tcp.h): 120 s.
pub const RTO_MAX: Dur = Dur::from_secs(120);
/// `TCP_TIMEOUT_INIT` (include/net/tcp.h), RFC 6298 §2.1: 1 s.
pub const RTO_INIT: Dur = Dur::from_secs(1);

#[derive(Clone, Debug)]
pub struct RttEstimator {
    pub srtt: Option<Dur>,
    /// RTTVAR (RFC 6298), ns.
    pub rttvar: Dur,
    /// Minimum RTT seen (`tcp_min_rtt`; Linux windows it over 300 s, longer than any run here).
    pub min_rtt: Option<Dur>,
    /// Base RTO before backoff.
    rto: Dur,
    /// Exponential backoff shift (`icsk_backoff`).
    pub backoff: u32,
}

impl Default for RttEstimator {
    fn default() -> Self {
        RttEstimator { srtt: None, rttvar: Dur::ZERO, min_rtt: None, rto: RTO_INIT, backoff: 0 }
    }
}

impl RttEstimator {
    /// RFC 6298 §2.2/§2.3: first sample sets SRTT = R, RTTVAR = R/2; later
    /// RTTVAR = 3/4·RTTVAR + 1/4·|SRTT − R|, SRTT = 7/8·SRTT + 1/8·R.
    /// RTO = SRTT + max(4·RTTVAR, RTO_MIN) — Linux's form: its `rttvar_us` is
    /// floored at `tcp_rto_min`, so an idle-variance path still gets SRTT + 200 ms.
    pub fn on_sample(&mut self, r: Dur) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = Dur(r.0 / 2);
            }
            Some(s) => {
                let err = s.0.abs_diff(r.0);
                self.rttvar = Dur((3 * self.rttvar.0 + err) / 4);
                self.srtt = Some(Dur((7 * s.0 + r.0) / 8));
            }
        }
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        let s = self.srtt.unwrap();
        self.rto = Dur(s.0 + (4 * self.rttvar.0).max(RTO_MIN.0)).min(RTO_MAX);
    }
    /// The current timeout including exponential backoff (RFC 6298 §5.5), capped at 120 s.
    pub fn rto(&self) -> Dur {
        Dur(self.rto.0.saturating_mul(1u64 << self.backoff.min(20))).min(RTO_MAX)
    }
    pub fn srtt_or_zero(&self) -> Dur {
        self.srtt.unwrap_or(Dur::ZERO)
    }
    /// RACK's reordering-window base: min_rtt (RFC 8985 §6.2).
    pub fn min_rtt_or(&self, d: Dur) -> Dur {
        self.min_rtt.unwrap_or(d)
    }
    #[allow(dead_code)]
    pub fn deadline_from(&self, now: Time) -> Time {
        now + self.rto()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_and_linux_rto_floor() {
        let mut e = RttEstimator::default();
        assert_eq!(e.rto(), RTO_INIT);
        e.on_sample(Dur::from_ms(100));
        assert_eq!(e.srtt, Some(Dur::from_ms(100)));
        assert_eq!(e.rttvar, Dur::from_ms(50));
        // 100 + max(4·50, 200) = 300 ms.
        assert_eq!(e.rto(), Dur::from_ms(300));
        for _ in 0..50 {
            e.on_sample(Dur::from_ms(100));
        }
        // Variance decays to ~0: RTO = SRTT + 200 ms (Linux's floor).
        assert_eq!(e.rto(), Dur::from_ms(300));
    }

    #[test]
    fn rto_backoff_doubles_and_caps_at_120s() {
        let mut e = RttEstimator::default();
        e.on_sample(Dur::from_ms(50));
        let base = e.rto();
        e.backoff = 1;
        assert_eq!(e.rto(), Dur(base.0 * 2));
        e.backoff = 3;
        assert_eq!(e.rto(), Dur(base.0 * 8));
        e.backoff = 30;
        assert_eq!(e.rto(), RTO_MAX);
    }

    #[test]
    fn smoothing_follows_rfc6298() {
        let mut e = RttEstimator::default();
        e.on_sample(Dur(800));
        e.on_sample(Dur(1600));
        // RTTVAR = 3/4·400 + 1/4·800 = 500; SRTT = 7/8·800 + 1/8·1600 = 900.
        assert_eq!(e.rttvar, Dur(500));
        assert_eq!(e.srtt, Some(Dur(900)));
        assert_eq!(e.min_rtt, Some(Dur(800)));
    }
}
