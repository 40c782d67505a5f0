//! TCP Vegas as Linux runs it (net/ipv4/tcp_vegas.c; Brakmo & Peterson,
//! IEEE JSAC 13(8), 1995). Once per RTT, compare the expected rate
//! (cwnd/baseRTT) with the actual one (cwnd/RTT, RTT = the minimum sample of
//! the last RTT): `diff` = cwnd·(RTT − baseRTT)/baseRTT packets are queued.
//! Below α add one packet, above β remove one; in slow start leave as soon
//! as diff > γ. With fewer than 3 RTT samples in the RTT it behaves as Reno.
//!
//! Deviation: Linux marks the RTT boundary with `snd_nxt` and tests
//! `after(ack, beg_snd_nxt)`. `Conn` has no sequence numbers, so the same
//! test is made in packets: snd_nxt ≈ delivered − sacked_out + packets_out
//! and snd_una ≈ delivered − sacked_out (every packet below snd_una was
//! delivered exactly once), so "an ACK beyond the mark" is
//! `delivered − sacked_out > mark`.

use super::{
    tcp_slow_start, AckSample, CaState, CcError, CongestionOps, Conn, CwndEvent,
    Params, Snapshot,
};

/// `alpha` (tcp_vegas.c module parameter): lower bound of packets in the network.
pub const ALPHA: u32 = 2;
/// `beta`: upper bound of packets in the network.
pub const BETA: u32 = 4;
/// `gamma`: slow-start exit threshold.
pub const GAMMA: u32 = 1;

/// Parameters `cca_params` may set.
pub const PARAMS: &[&str] = &["alpha", "beta", "gamma"];

/// `0x7fffffff`: "no sample" for baseRTT / minRTT in tcp_vegas.c.
const NO_RTT: u32 = 0x7fff_ffff;

#[derive(Clone, Debug)]
pub struct Vegas {
    alpha: u32,
    beta: u32,
    gamma: u32,
    /// `doing_vegas_now`.
    doing_vegas_now: bool,
    /// `beg_snd_nxt`, in packets (see module docs).
    beg_snd_nxt: u64,
    /// `cntRTT`: RTT samples in the current RTT.
    cnt_rtt: u32,
    /// `minRTT` (µs + 1): min sample in the current RTT.
    min_rtt_us: u32,
    /// `baseRTT` (µs + 1): min sample since (re)start.
    base_rtt_us: u32,
    /// Reno's `snd_cwnd_cnt`.
    cwnd_cnt: u32,
}

impl Vegas {
    pub(crate) fn from_params(mut p: Params) -> Result<Vegas, CcError> {
        let cca = p.cca;
        let int = |p: &mut Params, name: &str, d: u32| -> Result<u32, CcError> {
            let v = p.take(name, d as f64);
            if !(v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < 1e6) {
                return Err(CcError(format!(
                    "{cca}: {name} = {v} must be a non-negative integer"
                )));
            }
            Ok(v as u32)
        };
        let alpha = int(&mut p, "alpha", ALPHA)?;
        let beta = int(&mut p, "beta", BETA)?;
        let gamma = int(&mut p, "gamma", GAMMA)?;
        p.finish(PARAMS)?;
        if alpha > beta {
            return Err(CcError(format!("vegas: alpha {alpha} > beta {beta}")));
        }
        Ok(Vegas::new(alpha, beta, gamma))
    }

    pub fn new(alpha: u32, beta: u32, gamma: u32) -> Vegas {
        Vegas {
            alpha,
            beta,
            gamma,
            doing_vegas_now: true,
            beg_snd_nxt: 0,
            cnt_rtt: 0,
            min_rtt_us: NO_RTT,
            base_rtt_us: NO_RTT,
            cwnd_cnt: 0,
        }
    }

    /// snd_nxt in packets.
    fn snd_nxt(conn: &Conn) -> u64 {
        conn.delivered.saturating_sub(conn.sacked_out as u64) + conn.packets_out as u64
    }
    /// snd_una in packets.
    fn snd_una(conn: &Conn) -> u64 {
        conn.delivered.saturating_sub(conn.sacked_out as u64)
    }

    /// `vegas_enable`: start taking samples; the first RTT ends when the data
    /// sent from now on is ACKed.
    fn enable(&mut self, conn: &Conn) {
        self.doing_vegas_now = true;
        self.beg_snd_nxt = Self::snd_nxt(conn);
        self.cnt_rtt = 0;
        self.min_rtt_us = NO_RTT;
    }

    /// `tcp_vegas_init`.
    fn vegas_init(&mut self, conn: &Conn) {
        self.base_rtt_us = NO_RTT;
        self.enable(conn);
    }

    /// `tcp_reno_cong_avoid`.
    fn reno_cong_avoid(&mut self, conn: &mut Conn, acked: u32) {
        super::tcp_reno_cong_avoid(conn, &mut self.cwnd_cnt, acked);
    }

    /// `tcp_current_ssthresh` (include/net/tcp.h).
    fn current_ssthresh(conn: &Conn) -> u32 {
        if matches!(conn.ca_state, CaState::Cwr | CaState::Recovery) {
            conn.ssthresh
        } else {
            conn.ssthresh.max((conn.cwnd >> 1) + (conn.cwnd >> 2))
        }
    }

    /// Base RTT (µs), if any sample.
    pub fn base_rtt_us(&self) -> Option<u32> {
        (self.base_rtt_us != NO_RTT).then_some(self.base_rtt_us)
    }
}

impl CongestionOps for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }
    fn init(&mut self, conn: &mut Conn) {
        self.vegas_init(conn);
    }
    /// `tcp_reno_ssthresh`.
    fn ssthresh(&mut self, conn: &Conn) -> u32 {
        (conn.cwnd >> 1).max(2)
    }
    /// `tcp_vegas_state`: sample only in Open.
    fn set_state(&mut self, conn: &mut Conn, new: CaState) {
        if new == CaState::Open {
            self.enable(conn);
        } else {
            self.doing_vegas_now = false;
        }
    }
    /// `tcp_vegas_cwnd_event`: restart from scratch after idle.
    fn cwnd_event(&mut self, conn: &mut Conn, ev: CwndEvent) {
        if ev == CwndEvent::TxStart {
            self.vegas_init(conn);
        }
    }
    /// `tcp_vegas_pkts_acked`: min-filter RTT samples (µs + 1, never zero).
    fn pkts_acked(&mut self, _conn: &mut Conn, sample: &AckSample) {
        let Some(rtt) = sample.rtt else { return };
        let vrtt = (rtt.ns() / 1000).min(NO_RTT as u64 - 1) as u32 + 1;
        self.base_rtt_us = self.base_rtt_us.min(vrtt);
        self.min_rtt_us = self.min_rtt_us.min(vrtt);
        self.cnt_rtt += 1;
    }
    /// `tcp_vegas_cong_avoid`.
    fn cong_avoid(&mut self, conn: &mut Conn, acked: u32) {
        if !self.doing_vegas_now {
            self.reno_cong_avoid(conn, acked);
            return;
        }
        if Self::snd_una(conn) > self.beg_snd_nxt {
            // The once-per-RTT adjustment; the next RTT ends with what is sent from now.
            self.beg_snd_nxt = Self::snd_nxt(conn);
            if self.cnt_rtt <= 2 {
                // Too few samples to trust one not delayed-ACKed: behave as Reno.
                self.reno_cong_avoid(conn, acked);
            } else {
                let rtt = self.min_rtt_us as u64;
                let base = self.base_rtt_us as u64;
                let cwnd = conn.cwnd as u64;
                let target_cwnd = cwnd * base / rtt;
                let diff = cwnd * (rtt - base) / base;
                if diff > self.gamma as u64 && conn.in_slow_start() {
                    // Too fast: match the actual rate (+1 for truncation), leave slow start.
                    conn.cwnd = conn.cwnd.min((target_cwnd + 1).min(u32::MAX as u64) as u32);
                    conn.ssthresh = conn.ssthresh.min(conn.cwnd);
                } else if conn.in_slow_start() {
                    tcp_slow_start(conn, acked);
                } else if diff > self.beta as u64 {
                    conn.cwnd -= 1;
                    conn.ssthresh = conn.ssthresh.min(conn.cwnd);
                } else if diff < self.alpha as u64 {
                    conn.cwnd += 1;
                }
                conn.cwnd = conn.cwnd.clamp(2, conn.cwnd_clamp.max(2));
                conn.ssthresh = Self::current_ssthresh(conn);
            }
            self.cnt_rtt = 0;
            self.min_rtt_us = NO_RTT;
        } else if conn.in_slow_start() {
            tcp_slow_start(conn, acked);
        }
    }
    fn snapshot(&self, conn: &Conn) -> Snapshot {
        let state = if !self.doing_vegas_now {
            0
        } else if conn.in_slow_start() {
            1
        } else {
            2
        };
        Snapshot {
            state,
            min_rtt_ns: self.base_rtt_us().map(|us| (us as f64 - 1.0) * 1000.0),
            ..Default::default()
        }
    }
    fn state_names(&self) -> &'static [&'static str] {
        &["RENO_FALLBACK", "SLOW_START", "VEGAS_CA"]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::harness::{Harness, Path};
    use crate::time::{Dur, Time};

    /// A Vegas flow in congestion avoidance with `base` µs baseRTT, then
    /// `n` samples of `rtt` µs in the RTT now ending.
    fn setup(cwnd: u32, base: u64, rtt: u64, n: u32) -> (Vegas, Conn) {
        let mut c = Conn::new(Time::ZERO, 1448);
        c.cwnd = cwnd;
        c.ssthresh = 10; // congestion avoidance
        c.is_cwnd_limited = true;
        let mut v = Vegas::new(ALPHA, BETA, GAMMA);
        v.init(&mut c);
        v.pkts_acked(
            &mut c,
            &AckSample {
                pkts_acked: 1,
                rtt: Some(Dur::from_us(base)),
                in_flight: cwnd,
            },
        );
        v.cnt_rtt = 0;
        v.min_rtt_us = NO_RTT;
        for _ in 0..n {
            v.pkts_acked(
                &mut c,
                &AckSample {
                    pkts_acked: 1,
                    rtt: Some(Dur::from_us(rtt)),
                    in_flight: cwnd,
                },
            );
        }
        c.delivered = 1; // an ACK beyond beg_snd_nxt (= 0): the RTT is over
        (v, c)
    }

    #[test]
    fn diff_below_alpha_adds_one_packet() {
        // tcp_vegas.c: diff = cwnd·(rtt−base)/base = 20·(10 500−10 000)/10 000 = 1 < α=2 → cwnd+1.
        let (mut v, mut c) = setup(20, 9_999, 10_499, 3);
        v.cong_avoid(&mut c, 1);
        assert_eq!(c.cwnd, 21);
    }

    #[test]
    fn diff_between_alpha_and_beta_holds() {
        // diff = 20·(11 500−10 000)/10 000 = 3 ∈ [α, β] → unchanged.
        let (mut v, mut c) = setup(20, 9_999, 11_499, 3);
        v.cong_avoid(&mut c, 1);
        assert_eq!(c.cwnd, 20);
    }

    #[test]
    fn diff_above_beta_removes_one_packet() {
        // diff = 20·(13 000−10 000)/10 000 = 6 > β=4 → cwnd−1, ssthresh ≤ cwnd then ¾-cwnd floor.
        let (mut v, mut c) = setup(20, 9_999, 12_999, 3);
        v.cong_avoid(&mut c, 1);
        assert_eq!(c.cwnd, 19);
        assert_eq!(c.ssthresh, (19 >> 1) + (19 >> 2));
    }

    #[test]
    fn too_few_samples_falls_back_to_reno() {
        // cntRTT ≤ 2: Reno's +1 per cwnd ACKed, no Vegas decision even at diff > β.
        let (mut v, mut c) = setup(20, 9_999, 12_999, 2);
        v.cong_avoid(&mut c, 1);
        assert_eq!(c.cwnd, 20);
        assert_eq!(v.cnt_rtt, 0, "slate wiped for the next RTT");
    }

    #[test]
    fn slow_start_exits_when_diff_exceeds_gamma() {
        // diff = 40·(15 000−10 000)/10 000 = 20 > γ → cwnd = target+1 = 40·10/15+1 = 27.
        let (mut v, mut c) = setup(40, 9_999, 14_999, 3);
        c.ssthresh = u32::MAX / 2;
        v.cong_avoid(&mut c, 1);
        assert_eq!(c.cwnd, 27);
        assert!(!c.in_slow_start());
    }

    #[test]
    fn adjusts_only_once_per_rtt() {
        let (mut v, mut c) = setup(20, 9_999, 10_499, 3);
        v.cong_avoid(&mut c, 1);
        assert_eq!(c.cwnd, 21);
        // Same RTT (no ACK beyond the new mark): no second step.
        c.packets_out = 21;
        v.cnt_rtt = 5;
        v.min_rtt_us = 10_500;
        v.cong_avoid(&mut c, 1);
        assert_eq!(c.cwnd, 21);
    }

    #[test]
    fn vegas_keeps_alpha_to_beta_packets_queued() {
        // tcp_vegas.c: on a clean path (deep drop-tail buffer, no other
        // traffic) Vegas converges to α..β packets in the queue; the
        // instantaneous queue also holds the packet in service and a TSO
        // burst (2 segments here) on top, hence the +3.
        let path = Path::new(20_000_000, 40).with_buffer_bdp(4.0);
        let mut h = Harness::new("vegas", &[], path, 1);
        h.run_until(15.0);
        let mut qmax = 0;
        let mut qmin = u64::MAX;
        while h.now_secs() < 25.0 {
            h.step();
            qmax = qmax.max(h.queue_len());
            qmin = qmin.min(h.queue_len());
        }
        eprintln!("vegas queue {qmin}..{qmax} pkts, cwnd {}", h.conn().cwnd);
        assert!(qmax <= BETA as u64 + 3, "queue up to {qmax}");
        assert!(qmin >= 1, "link went idle");
    }
}
