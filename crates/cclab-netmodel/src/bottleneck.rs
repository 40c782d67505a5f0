//! The bottleneck: random loss → token-bucket policer (if any) → queue
//! discipline → serialization at the capacity → propagation delay.
//!
//! Event-driven and caller-clocked: [`Bottleneck::arrive`] hands in a
//! packet at `now`; [`Bottleneck::next_event`] says when the link next has
//! something to do and [`Bottleneck::advance`] does everything due up to a
//! time. The simulator calls `advance` from its event queue, the emulator
//! from its real-time loop; both see the same departures, drops and marks
//! for the same arrivals (the property test in cclab-sim's
//! `tests/link_parity.rs`). Results go to an output vector: departures with
//! the time they left the bottleneck and the time they reach the far end,
//! and drops with their cause.
//!
//! Conventions (docs/ir.md):
//! * byte counts are wire bytes (IP datagram: headers + payload);
//! * a packet waits in the queue discipline until its serialization starts
//!   (a trace link: until the delivery opportunity that carries it); the
//!   queue and the buffer limit count waiting packets only;
//! * sojourn time = arrival → start of serialization (first opportunity);
//! * serialization of L bytes at R bit/s takes L·8/R s, to the ns, the
//!   remainder carried to the next packet so that the long-run rate is
//!   exactly R (reset when the rate changes);
//! * a packet being serialized finishes at the rate it started with; a rate
//!   of 0 (a scheduled outage) holds packets in the queue;
//! * at equal times, what the link has due (a serialization ending, a
//!   delivery opportunity) happens before an arrival is judged;
//! * propagation keeps FIFO order when the delay decreases.

use crate::capacity::{Capacity, Trace};
use crate::hist::WindowHist;
use crate::loss::{LossModel, LossSteps};
use crate::packet::{DropCause, Packet};
use crate::policer::{Policer, PolicerConfig};
use crate::qdisc::{Cx, Limits, Qdisc, QdiscConfig};
use crate::rng::Rng;
use crate::{Ns, STREAM_LOSS, STREAM_QDISC};

/// What the bottleneck hands back.
#[derive(Debug, PartialEq)]
pub enum Out<P> {
    /// `pkt` left the bottleneck at `at` and reaches the far end at `exit`
    /// (after the propagation delay). `pkt.ce` says whether it was marked.
    Depart {
        pkt: Packet<P>,
        at: Ns,
        exit: Ns,
    },
    Drop {
        pkt: Packet<P>,
        cause: DropCause,
    },
}

/// Where the bottleneck's output goes. `Vec<Out<P>>` collects it; the
/// simulator passes a sink that routes departures straight onto its
/// propagation line (no intermediate vector on the per-packet path).
pub trait Sink<P> {
    /// `pkt` left the bottleneck at `at`; it reaches the far end at `exit`.
    fn depart(&mut self, pkt: Packet<P>, at: Ns, exit: Ns);
    fn drop(&mut self, pkt: Packet<P>, cause: DropCause);
}

impl<P> Sink<P> for Vec<Out<P>> {
    #[inline]
    fn depart(&mut self, pkt: Packet<P>, at: Ns, exit: Ns) {
        self.push(Out::Depart { pkt, at, exit });
    }
    #[inline]
    fn drop(&mut self, pkt: Packet<P>, cause: DropCause) {
        self.push(Out::Drop { pkt, cause });
    }
}

/// Cumulative counters (the raw `link` columns of docs/record.md).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub arrival_bytes: u64,
    pub arrival_packets: u64,
    pub egress_bytes: u64,
    pub departed_packets: u64,
    /// Σ (start of serialization − arrival) over departed packets.
    pub sojourn_sum_ns: u64,
    /// Time spent serializing completed packets (trace: first to last
    /// opportunity a packet used); see [`Bottleneck::busy_ns_at`].
    pub busy_ns: u64,
    pub drops_overflow: u64,
    pub drops_random: u64,
    pub drops_aqm: u64,
    pub marks_ce: u64,
    pub drops_policer: u64,
}

/// Static parameters, on the model's clock.
#[derive(Clone, Debug)]
pub struct BottleneckParams {
    pub capacity: Capacity,
    /// `(from, delay_ns)` steps of the propagation delay; first at 0.
    pub delay_steps: Vec<(Ns, Ns)>,
    /// `(from, loss)` steps; first at 0.
    pub loss_steps: Vec<(Ns, LossModel)>,
    pub limits: Limits,
    pub qdisc: QdiscConfig,
    /// A token-bucket policer in front of the queue (full at `origin`).
    pub policer: Option<PolicerConfig>,
    /// The scenario seed: loss and qdisc draw from their own streams of it.
    pub seed: u64,
    /// The run's time zero on the model's clock (PIE's update timer).
    pub origin: Ns,
}

struct InService<P> {
    pkt: Packet<P>,
    start: Ns,
    done: Ns,
}

pub struct Bottleneck<P> {
    capacity: Capacity,
    delay_steps: Vec<(Ns, Ns)>,
    delay_idx: usize,
    loss: LossSteps,
    policer: Option<Policer>,
    qdisc: Qdisc<P>,
    rng_loss: Rng,
    rng_qdisc: Rng,
    in_service: Option<InService<P>>,
    /// Trace link: dequeued at an opportunity it did not fit; goes first at the next.
    held: Option<Packet<P>>,
    /// When the idle server acts next (an outage's end, a trace opportunity).
    wake: Option<Ns>,
    /// `next_event()` as a number (`Ns::MAX`: nothing), kept with `in_service`
    /// and `wake`: one load on the per-packet path.
    next_at: Ns,
    /// Serialization cache: (rate, len) → quotient and remainder of len·8e9/rate.
    ser_rate: u64,
    ser_len: u32,
    ser_q: Ns,
    ser_r: u64,
    /// Carried fraction of a ns, in units of 1/ser_rate.
    ser_rem: u64,
    /// Trace: the next unused opportunity, the one `wake` waits for, and
    /// bytes left of the opportunity where a multi-opportunity packet ends.
    trace_next: u64,
    trace_wake: u64,
    trace_left: u32,
    last_exit: Ns,
    pub counters: Counters,
    /// Sojourn time of every packet that leaves in the window set by
    /// [`WindowHist::set_window`] (counts nothing until then).
    pub sojourn_hist: WindowHist,
}

impl<P> Bottleneck<P> {
    pub fn new(p: BottleneckParams) -> Self {
        let mut delay_steps = p.delay_steps;
        delay_steps.sort_by_key(|s| s.0);
        if delay_steps.first().is_none_or(|s| s.0 != 0) {
            delay_steps.insert(0, (0, 0));
        }
        let mut rng_qdisc = Rng::new(p.seed, STREAM_QDISC);
        let qdisc = Qdisc::new(&p.qdisc, p.limits, p.origin, &mut rng_qdisc);
        Bottleneck {
            capacity: p.capacity,
            delay_steps,
            delay_idx: 0,
            loss: LossSteps::new(p.loss_steps),
            policer: p.policer.map(|c| Policer::new(c, p.origin)),
            qdisc,
            rng_loss: Rng::new(p.seed, STREAM_LOSS),
            rng_qdisc,
            in_service: None,
            held: None,
            wake: None,
            next_at: Ns::MAX,
            ser_rate: 0,
            ser_len: u32::MAX,
            ser_q: 0,
            ser_r: 0,
            ser_rem: 0,
            trace_next: 0,
            trace_wake: 0,
            trace_left: 0,
            last_exit: 0,
            counters: Counters::default(),
            sojourn_hist: WindowHist::new(),
        }
    }

    /// Bytes / packets waiting: in the queue discipline, or — a trace link — dequeued at an
    /// opportunity it did not fit and held for the next (CoDel and FQ-CoDel decide at dequeue,
    /// so they cannot be peeked: the held packet used to be counted nowhere, and a sample's
    /// arrivals, departed + dropped + the change of the queue, came out one short, even −1).
    #[inline]
    pub fn queue_bytes(&self) -> u64 {
        self.qdisc.backlog_bytes() + self.held.as_ref().map_or(0, |p| p.wire_len() as u64)
    }
    #[inline]
    pub fn queue_packets(&self) -> u64 {
        self.qdisc.backlog_packets() + self.held.is_some() as u64
    }
    /// Packets in the bottleneck: waiting, held for an opportunity, or being serialized.
    pub fn held_packets(&self) -> u64 {
        self.queue_packets() + self.in_service.is_some() as u64
    }
    pub fn capacity(&self) -> &Capacity {
        &self.capacity
    }
    pub fn qdisc(&self) -> &Qdisc<P> {
        &self.qdisc
    }

    /// The propagation delay in force at `t`.
    pub fn delay_at(&self, t: Ns) -> Ns {
        let s = &self.delay_steps;
        s[s.partition_point(|x| x.0 <= t) - 1].1
    }

    /// Cumulative serialization time up to `t` (after `advance(t)`),
    /// counting the packet in service up to `t`: an interval in which this
    /// grows by its length is one in which the link never idled.
    pub fn busy_ns_at(&self, t: Ns) -> u64 {
        let partial = self
            .in_service
            .as_ref()
            .map_or(0, |s| t.min(s.done).saturating_sub(s.start));
        self.counters.busy_ns + partial
    }

    /// When the link next has something to do (None: idle).
    #[inline]
    pub fn next_event(&self) -> Option<Ns> {
        (self.next_at != Ns::MAX).then_some(self.next_at)
    }

    /// [`Self::next_event`] as a number, `Ns::MAX` for none.
    #[inline]
    pub fn next_event_ns(&self) -> Ns {
        self.next_at
    }
    /// The packet being serialized (it leaves at the next event), if any.
    #[inline]
    pub fn in_service(&self) -> Option<&Packet<P>> {
        self.in_service.as_ref().map(|s| &s.pkt)
    }

    /// Do everything due at or before `now`.
    #[inline]
    pub fn advance<S: Sink<P>>(&mut self, now: Ns, out: &mut S) {
        while self.next_at <= now {
            self.fire(self.next_at, out);
        }
    }

    /// A packet arrives at the bottleneck at `now` (its `enqueued` is set
    /// here). What was due up to `now` happens first. (Inlined into the
    /// simulator's per-packet path: called out of line it cost 3.5 % of a
    /// one-flow run's instructions, measured with callgrind.)
    #[inline(always)]
    pub fn arrive<S: Sink<P>>(&mut self, now: Ns, mut pkt: Packet<P>, out: &mut S) {
        self.advance(now, out);
        pkt.enqueued = now;
        self.counters.arrival_bytes += pkt.len as u64;
        self.counters.arrival_packets += 1;
        if self.loss.lose(now, &mut self.rng_loss) {
            self.counters.drops_random += 1;
            out.drop(pkt, DropCause::Random);
            return;
        }
        if self.policer.is_some() {
            match self.police(now, pkt, out) {
                Some(p) => pkt = p,
                None => return,
            }
        }
        self.enqueue(now, pkt, out);
        if self.next_at == Ns::MAX {
            match self.capacity {
                Capacity::Rate(_) => self.serve_rate(now, out),
                Capacity::Trace(_) => self.wait_for_opportunity(now),
            }
            // a service that ends at once, an opportunity at `now`
            self.advance(now, out);
        }
    }

    /// The policer's verdict: the packet back if it conforms (kept out of
    /// line: the common link has no policer).
    #[cold]
    #[inline(never)]
    fn police<S: Sink<P>>(&mut self, now: Ns, pkt: Packet<P>, out: &mut S) -> Option<Packet<P>> {
        let pol = self.policer.as_mut()?;
        if pol.conforms(now, pkt.wire_len()) {
            return Some(pkt);
        }
        self.counters.drops_policer += 1;
        out.drop(pkt, DropCause::Policer);
        None
    }

    /// The queue discipline's enqueue, with drop-tail (the common case) inline.
    #[inline(always)]
    fn enqueue<S: Sink<P>>(&mut self, now: Ns, pkt: Packet<P>, out: &mut S) {
        if let Qdisc::Droptail(q) = &mut self.qdisc {
            if let Err(pkt) = q.try_push(pkt) {
                self.counters.drops_overflow += 1;
                out.drop(pkt, DropCause::Overflow);
            }
            return;
        }
        self.enqueue_aqm(now, pkt, out);
    }

    #[inline(never)]
    fn enqueue_aqm<S: Sink<P>>(&mut self, now: Ns, pkt: Packet<P>, out: &mut S) {
        let mut cx = Cx {
            now,
            rng: &mut self.rng_qdisc,
            counters: &mut self.counters,
            out,
        };
        self.qdisc.enqueue(pkt, &mut cx);
    }

    /// The queue discipline's dequeue, with drop-tail inline.
    #[inline(always)]
    fn dequeue<S: Sink<P>>(&mut self, now: Ns, out: &mut S) -> Option<Packet<P>> {
        if let Qdisc::Droptail(q) = &mut self.qdisc {
            return q.dequeue();
        }
        self.dequeue_aqm(now, out)
    }

    #[inline(never)]
    fn dequeue_aqm<S: Sink<P>>(&mut self, now: Ns, out: &mut S) -> Option<Packet<P>> {
        let mut cx = Cx {
            now,
            rng: &mut self.rng_qdisc,
            counters: &mut self.counters,
            out,
        };
        self.qdisc.dequeue(&mut cx)
    }

    #[inline]
    fn fire<S: Sink<P>>(&mut self, t: Ns, out: &mut S) {
        self.next_at = Ns::MAX;
        match self.in_service.take() {
            Some(s) => {
                debug_assert_eq!(s.done, t);
                self.counters.busy_ns += s.done - s.start;
                self.depart(s.pkt, s.start, t, out);
                match self.capacity {
                    Capacity::Rate(_) => self.serve_rate(t, out),
                    Capacity::Trace(_) => {
                        let left = self.trace_left;
                        self.serve_trace(t, left, out);
                    }
                }
            }
            None => {
                self.wake = None;
                match &self.capacity {
                    Capacity::Rate(_) => self.serve_rate(t, out),
                    Capacity::Trace(tr) => {
                        let budget = tr.bytes_per_opp;
                        self.trace_next = self.trace_wake + 1;
                        self.serve_trace(t, budget, out);
                    }
                }
            }
        }
    }

    #[inline(always)]
    fn depart<S: Sink<P>>(&mut self, pkt: Packet<P>, start: Ns, at: Ns, out: &mut S) {
        self.counters.egress_bytes += pkt.len as u64;
        self.counters.departed_packets += 1;
        let sojourn = start.saturating_sub(pkt.enqueued);
        self.counters.sojourn_sum_ns += sojourn;
        self.sojourn_hist.record_at(at, sojourn);
        // propagation: the delay in force when the packet leaves, FIFO
        let s = &self.delay_steps;
        while self.delay_idx + 1 < s.len() && s[self.delay_idx + 1].0 <= at {
            self.delay_idx += 1;
        }
        let exit = (at + s[self.delay_idx].1).max(self.last_exit);
        self.last_exit = exit;
        out.depart(pkt, at, exit);
    }

    /// Serialization time of `len` bytes at `rate`, the remainder carried.
    #[inline(always)]
    fn ser_time(&mut self, rate: u64, len: u32) -> Ns {
        if rate != self.ser_rate {
            self.ser_rate = rate;
            self.ser_rem = 0;
            self.ser_len = u32::MAX;
        }
        if len != self.ser_len {
            let bits_ns = len as u128 * 8 * 1_000_000_000;
            self.ser_q = (bits_ns / rate as u128) as Ns;
            self.ser_r = (bits_ns % rate as u128) as u64;
            self.ser_len = len;
        }
        let mut d = self.ser_q;
        self.ser_rem += self.ser_r;
        if self.ser_rem >= rate {
            self.ser_rem -= rate;
            d += 1;
        }
        d
    }

    /// Rate link, server free at `t`: start the next packet, or wait for
    /// the rate to come back.
    #[inline(always)]
    fn serve_rate<S: Sink<P>>(&mut self, t: Ns, out: &mut S) {
        let Capacity::Rate(steps) = &self.capacity else {
            unreachable!()
        };
        let rate = steps.rate_at(t);
        if rate == 0 {
            if self.qdisc.backlog_packets() > 0 {
                self.wake = steps.next_positive(t);
                self.next_at = self.wake.unwrap_or(Ns::MAX);
            }
            return;
        }
        if let Some(pkt) = self.dequeue(t, out) {
            let done = t + self.ser_time(rate, pkt.wire_len());
            self.next_at = done;
            self.in_service = Some(InService {
                pkt,
                start: t,
                done,
            });
        }
    }

    fn trace(&self) -> &Trace {
        match &self.capacity {
            Capacity::Trace(tr) => tr,
            Capacity::Rate(_) => unreachable!("a rate link has no opportunities"),
        }
    }

    /// Trace link with packets waiting: wake at the next unused opportunity.
    fn wait_for_opportunity(&mut self, t: Ns) {
        if self.held.is_none() && self.qdisc.backlog_packets() == 0 {
            return;
        }
        let Capacity::Trace(tr) = &self.capacity else {
            unreachable!()
        };
        let g = self.trace_next.max(tr.first_at_or_after(t));
        self.trace_wake = g;
        let at = tr.time(g);
        self.wake = Some(at);
        self.next_at = at;
    }

    /// Trace link at an opportunity at `t` with `budget` bytes: the
    /// packets waiting leave, as many as fit (Mahimahi: unused bytes are
    /// lost). A packet larger than a whole opportunity uses consecutive ones.
    fn serve_trace<S: Sink<P>>(&mut self, t: Ns, mut budget: u32, out: &mut S) {
        let full = self.trace().bytes_per_opp;
        while budget > 0 {
            let pkt = match self.held.take() {
                Some(p) => p,
                None => {
                    if self
                        .qdisc
                        .peek_len()
                        .is_some_and(|l| l > budget && budget < full)
                    {
                        break;
                    }
                    match self.dequeue(t, out) {
                        Some(p) => p,
                        None => break,
                    }
                }
            };
            if pkt.wire_len() <= budget {
                budget -= pkt.wire_len();
                self.depart(pkt, t, t, out);
                continue;
            }
            if budget == full {
                // needs ⌈(len − full)/full⌉ more opportunities
                let rest = (pkt.wire_len() - full) as u64;
                let k = rest.div_ceil(full as u64);
                let last = self.trace_next + k - 1;
                let done = self.trace().time(last);
                self.trace_next = last + 1;
                self.trace_left = (k * full as u64 - rest) as u32;
                self.next_at = done;
                self.in_service = Some(InService {
                    pkt,
                    start: t,
                    done,
                });
                return;
            }
            self.held = Some(pkt);
            break;
        }
        self.wait_for_opportunity(t);
    }
}

#[cfg(test)]
#[path = "bottleneck_tests.rs"]
mod tests;
