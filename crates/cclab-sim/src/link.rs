//! The bottleneck: random loss on arrival → drop-tail queue (bytes and/or
//! packets) → serialization at a constant / scheduled rate or at a Mahimahi
//! trace's delivery opportunities.
//!
//! Conventions (shared with the kernel backend's emulator, docs/ir.md):
//! * byte counts are wire bytes (payload + headers);
//! * the queue limit counts packets waiting, not the one being serialized;
//! * a rate change lets the packet being serialized finish at the old rate;
//! * sojourn time = enqueue → start of service.

use crate::rng::Rng;
use crate::scenario::{Buffer, Capacity, Loss};
use crate::time::{Bandwidth, Dur, Time};
use std::collections::VecDeque;

/// A data packet on the wire.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    pub flow: u32,
    /// Segment number (the simulator's sequence space counts segments).
    pub seq: u32,
    /// Bytes on the wire (payload + headers).
    pub wire: u32,
    /// The TCP timestamp echo (TSecr, ms) it carries to the receiver.
    pub tsecr_ms: u32,
    /// When it entered the bottleneck queue.
    pub enqueued: Time,
}

/// Why the link dropped a packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Drop {
    Overflow,
    Random,
}

/// Delivery opportunities of a Mahimahi trace, repeating every `period`.
#[derive(Clone, Debug)]
pub struct Trace {
    opportunities: Vec<u64>,
    period: u64,
    bytes: u32,
    /// Index of the next opportunity within the current cycle.
    next_idx: usize,
    /// Start time of the current cycle.
    cycle_start: u64,
}

impl Trace {
    pub fn new(opportunities: Vec<u64>, period: u64, bytes: u32) -> Trace {
        assert!(!opportunities.is_empty() && period > 0, "trace validated by the front end");
        Trace { opportunities, period, bytes, next_idx: 0, cycle_start: 0 }
    }

    /// The first opportunity at or after `now`; advances the cursor to it.
    pub fn next_at_or_after(&mut self, now: Time) -> Time {
        let now = now.0;
        if now >= self.cycle_start + self.period {
            self.cycle_start = now - (now % self.period);
            self.next_idx = 0;
        }
        let offset = now - self.cycle_start;
        // Opportunities are sorted; skip those already past.
        if self.next_idx < self.opportunities.len() && self.opportunities[self.next_idx] < offset {
            self.next_idx = self.opportunities.partition_point(|&t| t < offset);
        }
        if self.next_idx >= self.opportunities.len() {
            self.cycle_start += self.period;
            self.next_idx = 0;
        }
        Time(self.cycle_start + self.opportunities[self.next_idx])
    }

    /// Consume the opportunity the cursor points at.
    fn consume(&mut self) {
        self.next_idx += 1;
    }

    /// Opportunities in [from, to) — for the capacity column.
    pub fn count_between(&self, from: u64, to: u64) -> u64 {
        let count_upto = |t: u64| -> u64 {
            let cycles = t / self.period;
            let rem = t % self.period;
            cycles * self.opportunities.len() as u64 + self.opportunities.partition_point(|&o| o < rem) as u64
        };
        count_upto(to) - count_upto(from)
    }

    /// Mean rate of the trace.
    pub fn mean_rate(&self) -> Bandwidth {
        Bandwidth::from_bytes_per(self.opportunities.len() as u64 * self.bytes as u64, Dur(self.period))
    }
}

#[derive(Clone, Debug)]
pub enum Service {
    Rate(Bandwidth),
    Trace(Trace),
}

/// Loss process state.
#[derive(Clone, Debug)]
pub struct LossModel {
    model: Loss,
    /// Gilbert–Elliott: currently in the bad state.
    bad: bool,
}

impl LossModel {
    pub fn new(model: Loss) -> LossModel {
        LossModel { model, bad: false }
    }
    /// Draw whether the next packet is lost.
    #[inline]
    pub fn lose(&mut self, rng: &mut Rng) -> bool {
        match self.model {
            Loss::Bernoulli { p } => rng.bernoulli(p),
            Loss::GilbertElliott { p, r, h, k } => {
                // Transition first, then lose with the new state's probability.
                if self.bad {
                    if rng.bernoulli(r) {
                        self.bad = false;
                    }
                } else if rng.bernoulli(p) {
                    self.bad = true;
                }
                rng.bernoulli(if self.bad { 1.0 - h } else { 1.0 - k })
            }
        }
    }
}

/// Cumulative counters (the raw `link` columns of docs/record.md).
#[derive(Clone, Debug, Default)]
pub struct LinkCounters {
    pub arrival_bytes: u64,
    pub egress_bytes: u64,
    pub departed_packets: u64,
    pub sojourn_sum_ns: u64,
    pub drops_overflow: u64,
    pub drops_random: u64,
}

pub struct Bottleneck {
    pub service: Service,
    pub delay: Dur,
    pub buffer: Buffer,
    pub loss: LossModel,
    queue: VecDeque<Packet>,
    queue_bytes: u64,
    /// A packet being serialized (rate mode) and when it finishes.
    in_service: Option<(Packet, Time)>,
    /// Whether a `Bottleneck` event is pending.
    pub busy: bool,
    /// (rate, bytes, time) of the last serialization computed: packets are
    /// mostly one size, so this skips a 128-bit division per packet.
    tx_cache: (u64, u64, Dur),
    pub counters: LinkCounters,
}

impl Bottleneck {
    pub fn new(capacity: &Capacity, delay: Dur, buffer: Buffer, loss: Loss) -> Bottleneck {
        let service = match capacity {
            Capacity::Constant { rate_bps } => Service::Rate(Bandwidth(*rate_bps)),
            Capacity::Trace { opportunities_ns, period_ns, bytes_per_opportunity, .. } => {
                Service::Trace(Trace::new(opportunities_ns.clone(), *period_ns, *bytes_per_opportunity))
            }
        };
        Bottleneck {
            service,
            delay,
            buffer,
            loss: LossModel::new(loss),
            queue: VecDeque::new(),
            queue_bytes: 0,
            in_service: None,
            busy: false,
            tx_cache: (0, 0, Dur::ZERO),
            counters: LinkCounters::default(),
        }
    }

    pub fn queue_bytes(&self) -> u64 {
        self.queue_bytes
    }
    pub fn queue_packets(&self) -> u64 {
        self.queue.len() as u64
    }
    /// Packets in the queue or being serialized.
    pub fn held_packets(&self) -> u64 {
        self.queue.len() as u64 + self.in_service.is_some() as u64
    }

    /// A packet arrives. Returns `Err(drop)` if it is dropped, else `Ok(Some(t))`
    /// when the caller must schedule a `Bottleneck` event at `t` (the link was idle).
    pub fn arrive(&mut self, now: Time, mut pkt: Packet, rng: &mut Rng) -> Result<Option<Time>, Drop> {
        self.counters.arrival_bytes += pkt.wire as u64;
        if self.loss.lose(rng) {
            self.counters.drops_random += 1;
            return Err(Drop::Random);
        }
        let over_bytes = self.buffer.bytes.is_some_and(|b| self.queue_bytes + pkt.wire as u64 > b);
        let over_pkts = self.buffer.packets.is_some_and(|p| self.queue.len() as u64 + 1 > p);
        // An idle link takes the packet straight into service (the buffer is the
        // waiting room), so even a one-packet buffer passes traffic.
        let idle = !self.busy;
        if !idle && (over_bytes || over_pkts) {
            self.counters.drops_overflow += 1;
            return Err(Drop::Overflow);
        }
        pkt.enqueued = now;
        self.queue_bytes += pkt.wire as u64;
        self.queue.push_back(pkt);
        if idle {
            self.busy = true;
            return Ok(Some(self.start_service(now)));
        }
        Ok(None)
    }

    /// Begin serving the head of the queue at `now`; returns when the
    /// `Bottleneck` event must fire.
    fn start_service(&mut self, now: Time) -> Time {
        match &mut self.service {
            Service::Rate(rate) => {
                let pkt = self.queue.pop_front().expect("start_service on empty queue");
                self.queue_bytes -= pkt.wire as u64;
                self.counters.sojourn_sum_ns += (now - pkt.enqueued).0;
                let (r, b) = (rate.0, pkt.wire as u64);
                if self.tx_cache.0 != r || self.tx_cache.1 != b {
                    self.tx_cache = (r, b, rate.tx_time(b));
                }
                let done = now + self.tx_cache.2;
                self.in_service = Some((pkt, done));
                done
            }
            Service::Trace(tr) => tr.next_at_or_after(now),
        }
    }

    /// The pending `Bottleneck` event fired at `now`: packets that leave now are
    /// appended to `out`. Returns the time of the next event, if any.
    pub fn on_event(&mut self, now: Time, out: &mut Vec<Packet>) -> Option<Time> {
        match &mut self.service {
            Service::Rate(_) => {
                let (pkt, done) = self.in_service.take().expect("rate event without a packet");
                debug_assert_eq!(done, now);
                self.depart(pkt, out);
            }
            Service::Trace(tr) => {
                tr.consume();
                let mut budget = tr.bytes as u64;
                while let Some(head) = self.queue.front() {
                    if head.wire as u64 > budget {
                        break;
                    }
                    budget -= head.wire as u64;
                    let pkt = self.queue.pop_front().unwrap();
                    self.queue_bytes -= pkt.wire as u64;
                    self.counters.sojourn_sum_ns += (now - pkt.enqueued).0;
                    self.depart(pkt, out);
                }
            }
        }
        if self.queue.is_empty() {
            self.busy = false;
            None
        } else {
            Some(self.start_service(now))
        }
    }

    #[inline]
    fn depart(&mut self, pkt: Packet, out: &mut Vec<Packet>) {
        self.counters.egress_bytes += pkt.wire as u64;
        self.counters.departed_packets += 1;
        out.push(pkt);
    }

    /// Current configured rate (trace: `None`).
    pub fn rate(&self) -> Option<Bandwidth> {
        match &self.service {
            Service::Rate(r) => Some(*r),
            Service::Trace(_) => None,
        }
    }
    pub fn set_rate(&mut self, r: Bandwidth) {
        if let Service::Rate(rate) = &mut self.service {
            *rate = r;
        }
    }
    pub fn set_loss(&mut self, l: Loss) {
        self.loss = LossModel::new(l);
    }
    /// Capacity over [from, to) in bit/s (constant: the configured rate).
    pub fn capacity_bps(&self, from: u64, to: u64) -> f64 {
        match &self.service {
            Service::Rate(r) => r.0 as f64,
            Service::Trace(tr) => {
                let n = tr.count_between(from, to);
                n as f64 * tr.bytes as f64 * 8.0 * 1e9 / (to - from).max(1) as f64
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(seq: u32, wire: u32) -> Packet {
        Packet { flow: 0, seq, wire, tsecr_ms: 0, enqueued: Time::ZERO }
    }
    fn link(rate: u64, bytes: Option<u64>, packets: Option<u64>) -> Bottleneck {
        Bottleneck::new(
            &Capacity::Constant { rate_bps: rate },
            Dur::ZERO,
            Buffer { bytes, packets },
            Loss::Bernoulli { p: 0.0 },
        )
    }

    #[test]
    fn packet_leaves_after_l_times_8_over_r() {
        // 1500 B at 10 Mbit/s: 1500·8/1e7 s = 1.2 ms.
        let mut l = link(10_000_000, Some(100_000), None);
        let mut rng = Rng::new(1, 0);
        let t = l.arrive(Time(0), pkt(0, 1500), &mut rng).unwrap().unwrap();
        assert_eq!(t, Time(1_200_000));
        // A second packet queued behind it leaves 1.2 ms later.
        assert_eq!(l.arrive(Time(10), pkt(1, 1500), &mut rng), Ok(None));
        let mut out = vec![];
        assert_eq!(l.on_event(t, &mut out), Some(Time(2_400_000)));
        assert_eq!(out, vec![pkt(0, 1500)]);
        out.clear();
        assert_eq!(l.on_event(Time(2_400_000), &mut out), None);
        assert_eq!(out[0].seq, 1);
        assert_eq!(l.counters.sojourn_sum_ns, 1_200_000 - 10);
    }

    #[test]
    fn byte_limit_drops_tail() {
        // 3000-byte buffer: one packet in service + two waiting; the fourth drops.
        let mut l = link(1_000_000, Some(3000), None);
        let mut rng = Rng::new(1, 0);
        for i in 0..3 {
            assert!(l.arrive(Time(0), pkt(i, 1500), &mut rng).is_ok());
        }
        assert_eq!(l.arrive(Time(0), pkt(3, 1500), &mut rng), Err(Drop::Overflow));
        assert_eq!(l.queue_bytes(), 3000);
        assert_eq!(l.counters.drops_overflow, 1);
        // A small packet still fits? No: 3000 + 52 > 3000.
        assert_eq!(l.arrive(Time(0), pkt(4, 52), &mut rng), Err(Drop::Overflow));
    }

    #[test]
    fn packet_limit_drops_tail() {
        let mut l = link(1_000_000, None, Some(2));
        let mut rng = Rng::new(1, 0);
        for i in 0..3 {
            assert!(l.arrive(Time(0), pkt(i, 100), &mut rng).is_ok());
        }
        assert_eq!(l.queue_packets(), 2);
        assert_eq!(l.arrive(Time(0), pkt(9, 100), &mut rng), Err(Drop::Overflow));
    }

    #[test]
    fn random_loss_rate_matches_p() {
        let mut l = Bottleneck::new(
            &Capacity::Constant { rate_bps: 1_000_000_000 },
            Dur::ZERO,
            Buffer { bytes: None, packets: Some(1_000_000) },
            Loss::Bernoulli { p: 0.1 },
        );
        let mut rng = Rng::new(7, 0);
        let n = 100_000;
        let lost = (0..n).filter(|&i| l.arrive(Time(0), pkt(i, 100), &mut rng).is_err()).count();
        // Binomial(1e5, 0.1): sd ≈ 95, so ±600 is > 6 sd.
        assert!((lost as i64 - 10_000).abs() < 600, "lost {lost}");
        assert_eq!(l.counters.drops_random as usize, lost);
    }

    #[test]
    fn gilbert_elliott_loses_in_bursts() {
        // p=0.01, r=0.1: mean bad run 10 packets; all lost in bad (h=0), none in good (k=1).
        let mut m = LossModel::new(Loss::GilbertElliott { p: 0.01, r: 0.1, h: 0.0, k: 1.0 });
        let mut rng = Rng::new(3, 0);
        let draws: Vec<bool> = (0..200_000).map(|_| m.lose(&mut rng)).collect();
        let lost = draws.iter().filter(|&&x| x).count() as f64;
        let runs = draws.windows(2).filter(|w| !w[0] && w[1]).count() as f64;
        // Stationary bad fraction p/(p+r) = 0.0909; mean burst 1/r = 10.
        assert!((lost / 200_000.0 - 0.0909).abs() < 0.01, "{}", lost / 200_000.0);
        assert!((lost / runs - 10.0).abs() < 1.5, "{}", lost / runs);
    }

    #[test]
    fn trace_opportunities_repeat_and_carry_1500_bytes() {
        // Opportunities at 1 ms and 3 ms, period 4 ms (Mahimahi: last line = period).
        let ms = 1_000_000;
        let mut l = Bottleneck::new(
            &Capacity::Trace { path: "t".into(), opportunities_ns: vec![ms, 3 * ms, 4 * ms], period_ns: 4 * ms, bytes_per_opportunity: 1500 },
            Dur::ZERO,
            Buffer { bytes: Some(1_000_000), packets: None },
            Loss::Bernoulli { p: 0.0 },
        );
        let mut rng = Rng::new(1, 0);
        let t = l.arrive(Time(0), pkt(0, 1500), &mut rng).unwrap().unwrap();
        assert_eq!(t, Time(ms));
        for i in 1..5 {
            l.arrive(Time(0), pkt(i, 1500), &mut rng).unwrap();
        }
        let mut times = vec![];
        let mut next = Some(t);
        while let Some(at) = next {
            let mut out = vec![];
            next = l.on_event(at, &mut out);
            assert_eq!(out.len(), 1, "one 1500-byte packet per opportunity");
            times.push(at.0 / ms);
        }
        assert_eq!(times, vec![1, 3, 4, 5, 7]);
        // Two small packets share one opportunity.
        let t = l.arrive(Time(8 * ms), pkt(9, 700), &mut rng).unwrap().unwrap();
        l.arrive(Time(8 * ms), pkt(10, 700), &mut rng).unwrap();
        let mut out = vec![];
        assert_eq!(l.on_event(t, &mut out), None);
        assert_eq!(out.len(), 2);
        // 3 opportunities per 4 ms of 1500 B = 9 Mbit/s.
        assert_eq!(l.capacity_bps(0, 4 * ms), 9_000_000.0);
    }
}
