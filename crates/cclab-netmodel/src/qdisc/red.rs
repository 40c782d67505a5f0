//! RED — Random Early Detection (Floyd & Jacobson, "Random Early Detection
//! Gateways for Congestion Avoidance", IEEE/ACM ToN 1993), as Linux codes
//! it (include/net/red.h, net/sched/sch_red.c), with Floyd's "gentle" mode
//! (http://www.icir.org/floyd/notes/test-suite-red.txt, "gentle_", 2000).
//!
//! On each arrival the average queue (bytes, as Linux) is updated,
//! `avg ← (1−w)·avg + w·backlog`, or, after an idle period,
//! `avg ← (1−w)^m·avg` with m = idle time / transmission time of an
//! `avpkt`-byte packet at `bandwidth_bps` (red.h
//! `red_calc_qavg_from_idle_time`; cclab computes the power exactly where
//! Linux uses a lookup table). Then (red.h `red_action`):
//!
//! * avg < min_th: enqueue; count ← −1;
//! * min_th ≤ avg < max_th: p_b = max_p·(avg − min_th)/(max_th − min_th);
//!   the packet is dropped (or, with `ecn`, an ECN-capable one is marked
//!   CE) once count·p_b ≥ R, where R is uniform in [0, 1) and redrawn after
//!   each drop: drops are spaced uniformly between 1 and 1/p_b packets, the
//!   paper's p_a = p_b/(1 − count·p_b) — on average 2·p_b/(1 + p_b) of the
//!   packets at a steady average;
//! * gentle, max_th ≤ avg < 2·max_th: the same with
//!   p_b = max_p + (1 − max_p)·(avg − max_th)/max_th;
//! * above that (avg ≥ max_th without gentle): every packet is dropped, or
//!   marked CE if `ecn` and not `harddrop` (sch_red.c `RED_HARD_MARK`).
//!
//! Early and forced drops count as `drops_aqm`; the buffer (Linux's
//! `limit`, checked after RED's decision, as sch_red's child bfifo does) as
//! `drops_overflow`.

use super::{Cx, Fifo, Limits};
use crate::packet::{DropCause, Packet};
use crate::Ns;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RedConfig {
    /// Thresholds on the average backlog, bytes.
    pub min_th_bytes: u64,
    pub max_th_bytes: u64,
    /// Drop probability at max_th (tc `probability`, default 0.02).
    pub max_p: f64,
    /// EWMA weight w (Linux: 2^−Wlog, from `burst` by tc's `tc_red_eval_ewma`).
    pub weight: f64,
    /// Average packet size for the idle decay (tc `avpkt`, default 1000).
    pub avpkt_bytes: u32,
    /// Link rate for the idle decay (tc `bandwidth`).
    pub bandwidth_bps: u64,
    pub gentle: bool,
    pub ecn: bool,
    pub harddrop: bool,
}

impl RedConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.min_th_bytes >= self.max_th_bytes {
            return Err(format!(
                "red: min_th ({} B) must be below max_th ({} B)",
                self.min_th_bytes, self.max_th_bytes
            ));
        }
        if !(self.max_p > 0.0 && self.max_p <= 1.0) {
            return Err(format!("red: max_p {} must be in (0, 1]", self.max_p));
        }
        if !(self.weight > 0.0 && self.weight <= 1.0) {
            return Err(format!("red: weight {} must be in (0, 1]", self.weight));
        }
        if self.avpkt_bytes == 0 || self.bandwidth_bps == 0 {
            return Err("red: avpkt and bandwidth must be positive".into());
        }
        Ok(())
    }
}

pub struct Red<P> {
    pub(crate) fifo: Fifo<P>,
    limits: Limits,
    cfg: RedConfig,
    /// Average backlog, bytes.
    avg: f64,
    /// Packets since the last drop (−1: below min_th, or R not drawn yet).
    count: i64,
    /// The cached uniform draw R.
    r: f64,
    /// Start of the current idle period (queue empty), if idle.
    idle_since: Option<Ns>,
    /// Transmission time of an avpkt-byte packet, ns.
    avpkt_ns: f64,
}

/// Where an average falls (red.h `red_cmp_thresh`, plus the gentle band).
#[derive(Debug, PartialEq)]
enum Region {
    Below,
    Between(f64),
    Above,
}

impl<P> Red<P> {
    pub fn new(cfg: RedConfig, limits: Limits) -> Self {
        let avpkt_ns = cfg.avpkt_bytes as f64 * 8e9 / cfg.bandwidth_bps as f64;
        Red {
            fifo: Fifo::default(),
            limits,
            cfg,
            avg: 0.0,
            count: -1,
            r: 0.0,
            idle_since: None,
            avpkt_ns,
        }
    }

    /// The drop probability p_b for an average queue of `avg` bytes
    /// (None above the last threshold: every packet).
    pub fn p_b(cfg: &RedConfig, avg: f64) -> Option<f64> {
        match Self::region(cfg, avg) {
            Region::Below => Some(0.0),
            Region::Between(p) => Some(p),
            Region::Above => None,
        }
    }

    fn region(cfg: &RedConfig, avg: f64) -> Region {
        let (min, max) = (cfg.min_th_bytes as f64, cfg.max_th_bytes as f64);
        if avg < min {
            Region::Below
        } else if avg < max {
            Region::Between(cfg.max_p * (avg - min) / (max - min))
        } else if cfg.gentle && avg < 2.0 * max {
            Region::Between(cfg.max_p + (1.0 - cfg.max_p) * (avg - max) / max)
        } else {
            Region::Above
        }
    }

    /// The current average backlog, bytes.
    pub fn avg(&self) -> f64 {
        self.avg
    }

    pub fn enqueue(&mut self, mut pkt: Packet<P>, cx: &mut Cx<P>) {
        let w = self.cfg.weight;
        self.avg = match self.idle_since.take() {
            // red_calc_qavg_from_idle_time: m dummy packets of avpkt bytes
            // "sent" during the idle time, each decaying the average.
            Some(since) => {
                let m = cx.now.saturating_sub(since) as f64 / self.avpkt_ns;
                self.avg * (1.0 - w).powf(m)
            }
            None => self.avg + w * (self.fifo.bytes() as f64 - self.avg),
        };
        let early = match Self::region(&self.cfg, self.avg) {
            Region::Below => {
                self.count = -1;
                false
            }
            Region::Between(p_b) => {
                self.count += 1;
                if self.count == 0 {
                    self.r = cx.rng.uniform();
                    false
                } else if p_b * self.count as f64 >= self.r {
                    self.count = 0;
                    self.r = cx.rng.uniform();
                    true
                } else {
                    false
                }
            }
            Region::Above => {
                self.count = -1;
                // forced: mark only with ecn and without harddrop
                match cx.mark_or_drop(self.cfg.ecn && !self.cfg.harddrop, pkt) {
                    Some(p) => pkt = p,
                    None => return,
                }
                false
            }
        };
        if early {
            match cx.mark_or_drop(self.cfg.ecn, pkt) {
                Some(p) => pkt = p,
                None => return,
            }
        }
        if self
            .limits
            .admits(self.fifo.bytes(), self.fifo.len(), pkt.wire_len())
        {
            self.fifo.push(pkt);
        } else {
            cx.drop(pkt, DropCause::Overflow);
        }
    }

    pub fn dequeue(&mut self, cx: &mut Cx<P>) -> Option<Packet<P>> {
        let p = self.fifo.pop();
        // The queue ran empty: an idle period starts (Floyd & Jacobson:
        // "q_time ← time" when the queue becomes empty).
        if self.fifo.is_empty() && self.idle_since.is_none() {
            self.idle_since = Some(cx.now);
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::*;
    use crate::qdisc::{Qdisc, QdiscConfig};

    fn cfg(gentle: bool, ecn: bool) -> RedConfig {
        RedConfig {
            min_th_bytes: 30_000,
            max_th_bytes: 90_000,
            max_p: 0.1,
            weight: 1.0,
            avpkt_bytes: 1000,
            bandwidth_bps: 100_000_000,
            gentle,
            ecn,
            harddrop: false,
        }
    }

    /// Fraction of packets dropped at a steady p_b: drops come after
    /// c = max(1, ⌈R/p_b⌉) packets, R uniform in [0, 1), so E[c] =
    /// Σ_{k≥0} max(0, 1 − k·p_b) — (N + 1)/2 for p_b = 1/N, i.e. the
    /// fraction 2·p_b/(1 + p_b) of Floyd & Jacobson 1993, §7.
    fn expected_fraction(p_b: f64) -> f64 {
        if p_b == 0.0 {
            return 0.0;
        }
        let mut e = 0.0;
        let mut k = 0.0;
        while 1.0 - k * p_b > 0.0 {
            e += 1.0 - k * p_b;
            k += 1.0;
        }
        1.0 / e
    }

    /// Hold the backlog at `level` bytes (weight 1: avg = backlog) and count
    /// the fraction of `n` arrivals RED drops (or marks).
    fn drop_fraction(c: &RedConfig, level: u64, n: u32, ect: bool) -> (f64, f64) {
        let mut h: Harness<u32> = Harness::new(
            &QdiscConfig::Red(c.clone()),
            Limits {
                bytes: Some(10_000_000),
                packets: None,
            },
        );
        let mut t = 0;
        while h.q.backlog_bytes() < level {
            h.enqueue(t, pkt(0, 1000, 0));
        }
        h.take_drops();
        let (m0, d0) = (h.counters.marks_ce, h.counters.drops_aqm);
        for i in 0..n {
            t += 1000;
            // keep the backlog at `level`: one out for each one in
            h.enqueue(
                t,
                if ect {
                    super::super::testutil::ect(0, 1000, i)
                } else {
                    pkt(0, 1000, i)
                },
            );
            if h.q.backlog_bytes() > level {
                h.dequeue(t);
            }
            h.take_drops();
        }
        (
            (h.counters.drops_aqm - d0) as f64 / n as f64,
            (h.counters.marks_ce - m0) as f64 / n as f64,
        )
    }

    #[test]
    fn drop_probability_follows_min_th_max_th_max_p() {
        // Drops are spaced uniformly in 1..1/p_b (expected_fraction).
        let c = cfg(false, false);
        assert!((expected_fraction(0.025) - 2.0 * 0.025 / 1.025).abs() < 1e-12);
        let n = 200_000;
        for (level, p_b) in [
            (20_000u64, 0.0),
            (45_000, 0.025),
            (60_000, 0.05),
            (75_000, 0.075),
        ] {
            let (got, _) = drop_fraction(&c, level, n, false);
            let expect = expected_fraction(p_b);
            // The count process renews at each drop; the spread of the
            // fraction is below that of a Bernoulli(expect) sample, whose
            // sd bounds it: 5 sd.
            let sd = (expect * (1.0 - expect) / n as f64).sqrt();
            eprintln!("red avg {level}: dropped {got:.5}, expected {expect:.5} (p_b {p_b})");
            assert!(
                (got - expect).abs() <= 5.0 * sd + 1e-9,
                "avg {level}: {got} vs {expect}"
            );
        }
        // At max_th (no gentle): every packet.
        let (got, _) = drop_fraction(&c, 90_000, 10_000, false);
        assert_eq!(got, 1.0);
    }

    #[test]
    fn gentle_mode_ramps_from_max_p_to_one_between_max_th_and_twice_it() {
        let c = cfg(true, false);
        let n = 100_000;
        for (level, p_b) in [(90_000u64, 0.1), (135_000, 0.55)] {
            let (got, _) = drop_fraction(&c, level, n, false);
            let expect = expected_fraction(p_b);
            let sd = (expect * (1.0 - expect) / n as f64).sqrt();
            eprintln!("red gentle avg {level}: dropped {got:.5}, expected {expect:.5}");
            assert!(
                (got - expect).abs() <= 5.0 * sd,
                "avg {level}: {got} vs {expect}"
            );
        }
        assert_eq!(drop_fraction(&c, 180_000, 1000, false).0, 1.0);
    }

    #[test]
    fn ecn_marks_instead_of_dropping_capable_packets_harddrop_forces_drops() {
        let c = cfg(false, true);
        let (dropped, marked) = drop_fraction(&c, 60_000, 50_000, true);
        assert_eq!(dropped, 0.0);
        assert!((marked - expected_fraction(0.05)).abs() < 0.01, "{marked}");
        // not ECN-capable: dropped as without ecn
        let (dropped, marked) = drop_fraction(&c, 60_000, 50_000, false);
        assert!(dropped > 0.08 && marked == 0.0);
        // at max_th: marked (ecn, no harddrop) ...
        assert_eq!(drop_fraction(&c, 90_000, 1000, true), (0.0, 1.0));
        // ... or dropped with harddrop
        let hard = RedConfig {
            harddrop: true,
            ..c
        };
        assert_eq!(drop_fraction(&hard, 90_000, 1000, true), (1.0, 0.0));
    }

    #[test]
    fn average_follows_the_ewma_and_decays_while_idle() {
        let c = RedConfig {
            weight: 0.5,
            ..cfg(false, false)
        };
        let mut h: Harness<u32> = Harness::new(
            &QdiscConfig::Red(c),
            Limits {
                bytes: Some(1_000_000),
                packets: None,
            },
        );
        h.enqueue(0, pkt(0, 1000, 0)); // avg = 0 + 0.5·(0 − 0) = 0
        h.enqueue(0, pkt(0, 1000, 1)); // avg = 0.5·1000 = 500
        h.enqueue(0, pkt(0, 1000, 2)); // avg = 500 + 0.5·(2000 − 500) = 1250
        let avg = |h: &Harness<u32>| match &h.q {
            Qdisc::Red(r) => r.avg(),
            _ => unreachable!(),
        };
        assert_eq!(avg(&h), 1250.0);
        while h.dequeue(10).is_some() {}
        // idle from t = 10 for 4 avpkt times (80 µs each at 100 Mbit/s):
        // avg = 1250 · 0.5^4
        h.enqueue(10 + 4 * 80_000, pkt(0, 1000, 3));
        assert!((avg(&h) - 1250.0 / 16.0).abs() < 1e-9, "{}", avg(&h));
    }

    #[test]
    fn the_buffer_limit_still_applies_as_overflow() {
        let mut h: Harness<u32> = Harness::new(
            &QdiscConfig::Red(cfg(false, false)),
            Limits {
                bytes: None,
                packets: Some(5),
            },
        );
        for i in 0..8 {
            h.enqueue(0, pkt(0, 1000, i));
        }
        assert_eq!(h.counters.drops_overflow, 3);
        assert_eq!(h.counters.drops_aqm, 0);
    }
}
