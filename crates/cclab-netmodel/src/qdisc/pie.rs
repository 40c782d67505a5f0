//! PIE — Proportional Integral controller Enhanced (RFC 8033), as Linux
//! codes it (net/sched/sch_pie.c, include/net/pie.h) with its default of
//! measuring the queue delay by timestamps (`dq_rate_estimator` off: the
//! delay is the sojourn of the last packet dequeued, 0 once the queue is
//! empty).
//!
//! * Every `tupdate` (15 ms, RFC 8033 §4.2 T_UPDATE; Linux's first update
//!   is 500 ms after the qdisc is created, `pie_init`), the drop
//!   probability moves by α·(qdelay − target) + β·(qdelay − qdelay_old)
//!   (α 0.125 Hz, β 1.25 Hz, §4.2; Linux `alpha` 2/16, `beta` 20/16), with
//!   both gains scaled down by 2, 8, 32, 128, 512, 2048 while p < 10 %, 1 %,
//!   0.1 %, 0.01 %, 0.001 %, 0.0001 % (§4.2), the step capped at 2 % once
//!   p ≥ 10 % (§5.5), +2 % when qdelay > 250 ms (`pie_calculate_probability`),
//!   p decaying by 1/64 per update while the delay stays 0 (§4.2: "98 %"),
//!   p bounded to [0, 1]; after two updates with the delay below target/2
//!   and p = 0 the state restarts (burst allowance 150 ms again, §4.4).
//! * On arrival (`pie_drop_early`, §4.1): no early drop during the burst
//!   allowance (150 ms, reduced by the time between dequeues), while the
//!   delay is below target/2 and p < 20 %, or with fewer than two MTUs
//!   waiting; otherwise drop with probability p, de-randomized by the
//!   accumulated probability (§5.4: never below 0.85, always at 8.5). With
//!   `ecn`, an ECN-capable packet is marked instead while p ≤ 10 % (§5.1).
//!   `bytemode` scales p by size/MTU.
//! * The scenario's buffer replaces Linux's `limit` (1000 packets); it is
//!   checked first, as an overflow drop.
//!
//! The probability is a float here (Linux: fixed point, MAX_PROB = 2^56).

use super::{Cx, Fifo, Limits};
use crate::packet::{DropCause, Packet};
use crate::Ns;
use serde::{Deserialize, Serialize};

/// Linux `pie_init`: the first probability update comes HZ/2 after start.
const FIRST_UPDATE_NS: Ns = 500_000_000;
/// Above this delay p grows by another 2 % per update (sch_pie.c).
const HIGH_DELAY_NS: Ns = 250_000_000;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PieConfig {
    pub target_ns: Ns,
    pub tupdate_ns: Ns,
    /// α and β in Hz (per second of delay error).
    pub alpha: f64,
    pub beta: f64,
    pub max_burst_ns: Ns,
    pub mtu_bytes: u32,
    pub ecn: bool,
    pub bytemode: bool,
}

impl PieConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.target_ns == 0 || self.tupdate_ns == 0 {
            return Err("pie: target and tupdate must be positive".into());
        }
        if !(self.alpha >= 0.0
            && self.beta >= 0.0
            && self.alpha.is_finite()
            && self.beta.is_finite())
        {
            return Err("pie: alpha and beta must be finite and ≥ 0".into());
        }
        Ok(())
    }
}

pub struct Pie<P> {
    pub(crate) fifo: Fifo<P>,
    limits: Limits,
    cfg: PieConfig,
    prob: f64,
    accu_prob: f64,
    qdelay: Ns,
    qdelay_old: Ns,
    burst_time: Ns,
    dq_tstamp: Option<Ns>,
    next_update: Ns,
}

impl<P> Pie<P> {
    pub fn new(cfg: PieConfig, limits: Limits, origin: Ns) -> Self {
        let burst_time = cfg.max_burst_ns;
        Pie {
            fifo: Fifo::default(),
            limits,
            cfg,
            prob: 0.0,
            accu_prob: 0.0,
            qdelay: 0,
            qdelay_old: 0,
            burst_time,
            dq_tstamp: None,
            next_update: origin + FIRST_UPDATE_NS,
        }
    }

    /// The current drop probability.
    pub fn prob(&self) -> f64 {
        self.prob
    }

    /// `pie_vars_init`, as the restart of the measurement cycle.
    fn restart(&mut self) {
        self.burst_time = self.cfg.max_burst_ns;
        self.dq_tstamp = None;
        self.accu_prob = 0.0;
    }

    fn at_rest(&self) -> bool {
        self.prob == 0.0
            && self.qdelay == 0
            && self.qdelay_old == 0
            && self.burst_time == self.cfg.max_burst_ns
            && self.dq_tstamp.is_none()
            && self.accu_prob == 0.0
    }

    /// Run the periodic updates due at or before `now` (the qdisc's timer:
    /// between two packet events nothing else changes, so catching up here
    /// is exact).
    fn catch_up(&mut self, now: Ns) {
        while self.next_update <= now {
            self.calculate_probability();
            self.next_update += self.cfg.tupdate_ns;
            if self.at_rest() && self.next_update <= now {
                // every further update leaves this state as it is
                let skip = (now - self.next_update) / self.cfg.tupdate_ns + 1;
                self.next_update += skip * self.cfg.tupdate_ns;
            }
        }
    }

    /// `pie_calculate_probability` (timestamp mode).
    fn calculate_probability(&mut self) {
        let backlog = self.fifo.bytes();
        let (qdelay, qdelay_old) = (self.qdelay, self.qdelay_old);
        // A zero delay with packets waiting: too few to measure; p does
        // not decay this round.
        let mut update_prob = !(qdelay == 0 && backlog != 0);
        let (mut alpha, mut beta) = (self.cfg.alpha, self.cfg.beta);
        if self.prob < 0.1 {
            alpha /= 2.0;
            beta /= 2.0;
            let mut power = 100.0;
            while self.prob < 1.0 / power && power <= 1e6 {
                alpha /= 4.0;
                beta /= 4.0;
                power *= 10.0;
            }
        }
        let err = |a: Ns, b: Ns| (a as f64 - b as f64) / 1e9;
        let mut delta = alpha * err(qdelay, self.cfg.target_ns) + beta * err(qdelay, qdelay_old);
        if delta > 0.02 && self.prob >= 0.1 {
            delta = 0.02;
        }
        if qdelay > HIGH_DELAY_NS {
            delta += 0.02;
        }
        self.prob += delta;
        if self.prob > 1.0 {
            self.prob = 1.0;
            update_prob = false;
        } else if self.prob < 0.0 {
            self.prob = 0.0;
        }
        if qdelay == 0 && qdelay_old == 0 && update_prob {
            self.prob -= self.prob / 64.0;
        }
        if qdelay < self.cfg.target_ns / 2
            && qdelay_old < self.cfg.target_ns / 2
            && self.prob == 0.0
        {
            self.restart();
        }
        self.qdelay_old = qdelay;
    }

    /// `pie_drop_early`.
    fn drop_early(&mut self, len: u32, cx: &mut Cx<P>) -> bool {
        if self.burst_time > 0 {
            return false;
        }
        if self.qdelay < self.cfg.target_ns / 2 && self.prob < 0.2 {
            return false;
        }
        let mtu = self.cfg.mtu_bytes as u64;
        if self.fifo.bytes() < 2 * mtu {
            return false;
        }
        let local = if self.cfg.bytemode && len as u64 <= mtu {
            self.prob * len as f64 / mtu as f64
        } else {
            self.prob
        };
        if local == 0.0 {
            self.accu_prob = 0.0;
        } else {
            self.accu_prob += local;
        }
        if self.accu_prob < 0.85 {
            return false;
        }
        if self.accu_prob >= 8.5 {
            return true;
        }
        if cx.rng.uniform() < local {
            self.accu_prob = 0.0;
            return true;
        }
        false
    }

    pub fn enqueue(&mut self, pkt: Packet<P>, cx: &mut Cx<P>) {
        self.catch_up(cx.now);
        if !self
            .limits
            .admits(self.fifo.bytes(), self.fifo.len(), pkt.wire_len())
        {
            self.accu_prob = 0.0;
            cx.drop(pkt, DropCause::Overflow);
            return;
        }
        if !self.drop_early(pkt.wire_len(), cx) {
            self.fifo.push(pkt);
            return;
        }
        match cx.mark_or_drop(self.cfg.ecn && self.prob <= 0.1, pkt) {
            Some(p) => self.fifo.push(p),
            None => self.accu_prob = 0.0,
        }
    }

    /// Dequeue, and `pie_process_dequeue`: the delay sample and the burst
    /// allowance.
    pub fn dequeue(&mut self, cx: &mut Cx<P>) -> Option<Packet<P>> {
        self.catch_up(cx.now);
        let p = self.fifo.pop()?;
        let now = cx.now;
        self.qdelay = now.saturating_sub(p.enqueued);
        let dtime = self.dq_tstamp.map_or(0, |t| now - t);
        self.dq_tstamp = Some(now);
        if self.fifo.is_empty() {
            self.qdelay = 0;
        }
        if dtime > 0 {
            self.burst_time = self.burst_time.saturating_sub(dtime);
        }
        Some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::*;
    use crate::qdisc::{Qdisc, QdiscConfig};

    const MS: Ns = 1_000_000;

    fn cfg(ecn: bool) -> PieConfig {
        PieConfig {
            target_ns: 15 * MS,
            tupdate_ns: 15 * MS,
            alpha: 0.125,
            beta: 1.25,
            max_burst_ns: 150 * MS,
            mtu_bytes: 1500,
            ecn,
            bytemode: false,
        }
    }

    fn pie(h: &Harness<u32>) -> &Pie<u32> {
        match &h.q {
            Qdisc::Pie(q) => q,
            _ => unreachable!(),
        }
    }

    /// Unresponsive traffic at 1.25× a 12 Mbit/s link (one 1500-byte packet
    /// per ms served, 1.25 arriving): PIE must hold the delay near its
    /// target by dropping ~20 % — an open-loop check of the controller.
    #[test]
    fn an_overload_is_held_near_the_target_delay() {
        let mut h = Harness::new(
            &QdiscConfig::Pie(cfg(false)),
            Limits {
                bytes: None,
                packets: Some(100_000),
            },
        );
        let (mut delays, mut t, mut id) = (vec![], 0u64, 0u32);
        while t < 30_000 * MS {
            t += MS;
            for _ in 0..(if (t / MS).is_multiple_of(4) { 2 } else { 1 }) {
                h.enqueue(t, pkt(0, 1500, id));
                id += 1;
            }
            if let Some(p) = h.dequeue(t) {
                if t > 10_000 * MS {
                    delays.push((t - p.enqueued) as f64 / 1e6);
                }
            }
            h.take_drops();
        }
        delays.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let median = delays[delays.len() / 2];
        let dropped = h.counters.drops_aqm as f64 / id as f64;
        eprintln!(
            "pie open loop: median delay {median:.1} ms, p {:.3}, dropped {dropped:.3}",
            pie(&h).prob()
        );
        assert!((10.0..=20.0).contains(&median), "median delay {median} ms");
        assert!((dropped - 0.2).abs() < 0.03, "{dropped}");
    }

    #[test]
    fn probability_steps_follow_the_scaled_gains() {
        // One update with a constant 40 ms delay from p = 0: the step is
        // (α(40−15) + β·40) ms·Hz / 2048 (p < 0.0001 %).
        let mut h = Harness::new(
            &QdiscConfig::Pie(cfg(false)),
            Limits {
                bytes: None,
                packets: Some(1000),
            },
        );
        for i in 0..10 {
            h.enqueue(0, pkt(0, 1500, i));
        }
        h.dequeue(40 * MS); // qdelay = 40 ms, 9 still waiting
        h.enqueue(500 * MS, pkt(0, 1500, 99)); // runs the first update (at 500 ms)
        let expect = (0.125 * 0.025 + 1.25 * 0.040) / 2048.0;
        assert!(
            (pie(&h).prob() - expect).abs() < 1e-12,
            "{} vs {expect}",
            pie(&h).prob()
        );
    }

    #[test]
    fn no_early_drop_during_the_burst_allowance_or_with_two_packets_waiting() {
        let mut h = Harness::new(
            &QdiscConfig::Pie(cfg(false)),
            Limits {
                bytes: None,
                packets: Some(100_000),
            },
        );
        // a 100-packet burst arriving at once at 1 s is accepted whole
        for i in 0..100 {
            h.enqueue(1000 * MS, pkt(0, 1500, i));
        }
        assert_eq!(h.counters.drops_aqm, 0);
    }

    #[test]
    fn ecn_marks_while_p_is_at_most_ten_percent() {
        let mut h = Harness::new(
            &QdiscConfig::Pie(cfg(true)),
            Limits {
                bytes: None,
                packets: Some(100_000),
            },
        );
        let (mut t, mut id) = (0u64, 0u32);
        while t < 20_000 * MS {
            t += MS;
            for _ in 0..(if (t / MS).is_multiple_of(4) { 2 } else { 1 }) {
                h.enqueue(t, ect(0, 1500, id));
                id += 1;
            }
            h.dequeue(t);
            h.take_drops();
        }
        // marks do not shorten the queue: p climbs past 10 % and PIE drops
        assert!(h.counters.marks_ce > 0, "no marks");
        assert!(
            h.counters.drops_aqm > 0 && pie(&h).prob() > 0.1,
            "p {}",
            pie(&h).prob()
        );
    }
}
