//! The link model: access delays, loss, drop-tail queue, serialization,
//! propagation, and the ACK path.
//!
//! Queue convention (docs/ir.md, docs/kernel.md; the simulator's): a packet
//! is *in the queue* from its arrival at the bottleneck until its
//! serialization starts; the packet being serialized no longer counts, for
//! the drop-tail limit or for `queue_bytes`/`queue_packets`. Its sojourn time
//! (`sojourn_sum_ns`) is the time it waited before its serialization began
//! (for a trace link: until its first delivery opportunity), so an empty
//! queue reads 0 delay. Byte convention: every byte count is the IP
//! datagram length as it crosses the TUN device (IP header + TCP header +
//! payload, no link-layer framing) — for a full segment mss + header_bytes
//! (1448 + 52 = 1500), the same "wire bytes" the simulator counts.

use super::capacity::Capacity;
use super::loss::LossModel;
use super::rng::Xoshiro256;
use super::Ns;
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

/// Per-flow path: extra delay before the bottleneck (rtt/2 − link delay)
/// and the ACK path's one-way delay (rtt/2).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FlowPath {
    pub access_delay_ns: Ns,
    pub ack_delay_ns: Ns,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// sender side → receiver side, through the bottleneck
    Data,
    /// receiver side → sender side, delay only
    Ack,
}

/// What the model hands back to its caller.
#[derive(Debug, PartialEq)]
pub enum Delivery<P> {
    /// Deliver `pkt` in direction `dir`; it was due at `due`.
    Deliver { dir: Dir, due: Ns, pkt: P },
    /// The packet was dropped (the caller may recycle its buffer).
    Drop(P),
}

/// Cumulative counters, in the raw `link` format of docs/record.md.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkCounters {
    pub arrival_bytes: u64,
    pub arrival_packets: u64,
    pub egress_bytes: u64,
    pub departed_packets: u64,
    pub sojourn_sum_ns: u64,
    /// Time the link spent serializing completed packets (ns); see [`LinkModel::busy_ns_at`].
    pub busy_ns: u64,
    pub drops_overflow: u64,
    pub drops_random: u64,
    /// data packets handed to the model / delivered out of it
    pub data_in: u64,
    pub data_out: u64,
    pub ack_in: u64,
    pub ack_out: u64,
}

/// Per-flow cumulative counters (bytes as on the wire).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FlowCounters {
    pub arrival_bytes: u64,
    pub egress_bytes: u64,
    pub drops: u64,
}

/// Static parameters of the link (the IR's `link`, on the model's clock).
#[derive(Clone, Debug)]
pub struct LinkParams {
    pub capacity: Capacity,
    /// `(from, delay_ns)` steps of the bottleneck propagation delay; first at 0.
    pub delay_steps: Vec<(Ns, Ns)>,
    /// `(from, loss)` steps; first at 0.
    pub loss_steps: Vec<(Ns, LossModel)>,
    pub limit_bytes: Option<u64>,
    pub limit_packets: Option<u64>,
    pub flows: Vec<FlowPath>,
    /// Path of packets that belong to no flow (e.g. IPv6 neighbour traffic).
    pub other: FlowPath,
    pub seed: u64,
}

struct Timed<T> {
    t: Ns,
    seq: u64,
    item: T,
}
impl<T> PartialEq for Timed<T> {
    fn eq(&self, o: &Self) -> bool {
        (self.t, self.seq) == (o.t, o.seq)
    }
}
impl<T> Eq for Timed<T> {}
impl<T> PartialOrd for Timed<T> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Timed<T> {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.t, self.seq).cmp(&(o.t, o.seq))
    }
}

/// A data packet on its access path: (flow, wire length, packet).
type AccessItem<P> = (Option<u32>, u32, P);

struct Queued<P> {
    arrival: Ns,
    len: u32,
    flow: Option<u32>,
    pkt: P,
}

struct InService<P> {
    q: Queued<P>,
    start: Ns,
    done: Ns,
}

/// The link. `P` is the caller's packet (a buffer in the emulator, an id in tests).
pub struct LinkModel<P> {
    p: LinkParams,
    rng: Xoshiro256,
    seq: u64,
    access: BinaryHeap<Reverse<Timed<AccessItem<P>>>>,
    queue: VecDeque<Queued<P>>,
    in_service: Option<InService<P>>,
    /// bytes/packets at the bottleneck, including the one being serialized
    queue_bytes: u64,
    queue_packets: u64,
    /// carried remainder of ns·bps so serialization times do not drift
    ser_remainder: u128,
    trace_cursor: u64,
    trace_left: u32,
    trace_left_time: Ns,
    prop: VecDeque<(Ns, P)>,
    last_prop_release: Ns,
    acks: BinaryHeap<Reverse<Timed<P>>>,
    loss_idx: usize,
    pub counters: LinkCounters,
    pub flow_counters: Vec<FlowCounters>,
}

impl<P> LinkModel<P> {
    pub fn new(mut p: LinkParams) -> Self {
        if p.delay_steps.is_empty() || p.delay_steps[0].0 != 0 {
            p.delay_steps.insert(0, (0, 0));
        }
        p.delay_steps.sort_by_key(|s| s.0);
        if p.loss_steps.is_empty() {
            p.loss_steps.push((0, LossModel::Bernoulli { p: 0.0 }));
        }
        p.loss_steps.sort_by_key(|s| s.0);
        let n = p.flows.len();
        LinkModel {
            rng: Xoshiro256::seed_from_u64(p.seed),
            p,
            seq: 0,
            access: BinaryHeap::new(),
            queue: VecDeque::new(),
            in_service: None,
            queue_bytes: 0,
            queue_packets: 0,
            ser_remainder: 0,
            trace_cursor: 0,
            trace_left: 0,
            trace_left_time: 0,
            prop: VecDeque::new(),
            last_prop_release: 0,
            acks: BinaryHeap::new(),
            loss_idx: 0,
            counters: LinkCounters::default(),
            flow_counters: vec![FlowCounters::default(); n],
        }
    }

    fn path(&self, flow: Option<u32>) -> FlowPath {
        flow.and_then(|f| self.p.flows.get(f as usize).copied())
            .unwrap_or(self.p.other)
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    pub fn queue_bytes(&self) -> u64 {
        self.queue_bytes
    }
    pub fn queue_packets(&self) -> u64 {
        self.queue_packets
    }
    /// Packets inside the model that are not at the bottleneck queue (access and propagation lines, ACK path).
    /// Packets waiting or being serialized (for conservation checks).
    pub fn held_packets(&self) -> u64 {
        self.queue_packets + self.in_service.is_some() as u64
    }
    pub fn in_flight_packets(&self) -> u64 {
        (self.access.len() + self.prop.len() + self.acks.len()) as u64
    }
    pub fn capacity(&self) -> &Capacity {
        &self.p.capacity
    }

    /// Cumulative time up to `t` during which the link was serializing a packet
    /// (from the start of its serialization to its end; for a trace link, from
    /// its first to its last delivery opportunity). An interval in which this
    /// grows by the interval's length is one in which the link never idled —
    /// the intervals the emulator's capacity self-check judges. Call after
    /// `advance(t)`.
    pub fn busy_ns_at(&self, t: Ns) -> u64 {
        let partial = self
            .in_service
            .as_ref()
            .map(|s| t.min(s.done).saturating_sub(s.start))
            .unwrap_or(0);
        self.counters.busy_ns + partial
    }

    pub fn delay_at(&self, t: Ns) -> Ns {
        let s = &self.p.delay_steps;
        s[s.partition_point(|x| x.0 <= t) - 1].1
    }

    /// A data packet of `len` wire bytes read from the sender side at `now`.
    pub fn on_data(&mut self, now: Ns, flow: Option<u32>, len: u32, pkt: P) {
        self.counters.data_in += 1;
        let t = now + self.path(flow).access_delay_ns;
        let seq = self.next_seq();
        self.access.push(Reverse(Timed {
            t,
            seq,
            item: (flow, len, pkt),
        }));
    }

    /// A packet read from the receiver side at `now` (ACKs, and anything else going back).
    pub fn on_ack(&mut self, now: Ns, flow: Option<u32>, pkt: P) {
        self.counters.ack_in += 1;
        let t = now + self.path(flow).ack_delay_ns;
        let seq = self.next_seq();
        self.acks.push(Reverse(Timed { t, seq, item: pkt }));
    }

    /// The earliest time at which the model has something to do.
    pub fn next_event(&self) -> Option<Ns> {
        [
            self.access.peek().map(|r| r.0.t),
            self.in_service.as_ref().map(|s| s.done),
            self.prop.front().map(|x| x.0),
            self.acks.peek().map(|r| r.0.t),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Process everything due at or before `now`, in time order. At equal
    /// times a serialization completes before an arrival is judged (the
    /// arriving packet sees the queue after the departure).
    pub fn advance(&mut self, now: Ns, out: &mut impl FnMut(Delivery<P>)) {
        loop {
            let t_srv = self.in_service.as_ref().map(|s| s.done).unwrap_or(Ns::MAX);
            let t_acc = self.access.peek().map(|r| r.0.t).unwrap_or(Ns::MAX);
            let t_prop = self.prop.front().map(|x| x.0).unwrap_or(Ns::MAX);
            let t_ack = self.acks.peek().map(|r| r.0.t).unwrap_or(Ns::MAX);
            let t = t_srv.min(t_acc).min(t_prop).min(t_ack);
            if t > now {
                return;
            }
            if t_srv == t {
                self.finish_service(out);
            } else if t_acc == t {
                let Reverse(Timed {
                    t,
                    item: (flow, len, pkt),
                    ..
                }) = self.access.pop().unwrap();
                self.bottleneck_arrival(t, flow, len, pkt, out);
            } else if t_prop == t {
                let (due, pkt) = self.prop.pop_front().unwrap();
                self.counters.data_out += 1;
                out(Delivery::Deliver {
                    dir: Dir::Data,
                    due,
                    pkt,
                });
            } else {
                let Reverse(Timed { t, item, .. }) = self.acks.pop().unwrap();
                self.counters.ack_out += 1;
                out(Delivery::Deliver {
                    dir: Dir::Ack,
                    due: t,
                    pkt: item,
                });
            }
        }
    }

    /// Arrivals are judged in time order, so the loss step only moves forward.
    fn loss_index_at(&mut self, t: Ns) -> usize {
        while self.loss_idx + 1 < self.p.loss_steps.len()
            && self.p.loss_steps[self.loss_idx + 1].0 <= t
        {
            self.loss_idx += 1;
        }
        self.loss_idx
    }

    fn bottleneck_arrival(
        &mut self,
        t: Ns,
        flow: Option<u32>,
        len: u32,
        pkt: P,
        out: &mut impl FnMut(Delivery<P>),
    ) {
        self.counters.arrival_bytes += len as u64;
        self.counters.arrival_packets += 1;
        if let Some(c) = flow.and_then(|f| self.flow_counters.get_mut(f as usize)) {
            c.arrival_bytes += len as u64;
        }
        let idx = self.loss_index_at(t);
        let lost = self.p.loss_steps[idx].1.lose(&mut self.rng);
        if lost {
            self.counters.drops_random += 1;
            self.count_flow_drop(flow);
            out(Delivery::Drop(pkt));
            return;
        }
        let over_bytes = self
            .p
            .limit_bytes
            .is_some_and(|b| self.queue_bytes + len as u64 > b);
        let over_pkts = self
            .p
            .limit_packets
            .is_some_and(|n| self.queue_packets + 1 > n);
        if over_bytes || over_pkts {
            self.counters.drops_overflow += 1;
            self.count_flow_drop(flow);
            out(Delivery::Drop(pkt));
            return;
        }
        self.queue_bytes += len as u64;
        self.queue_packets += 1;
        let q = Queued {
            arrival: t,
            len,
            flow,
            pkt,
        };
        if self.in_service.is_none() {
            self.start_service(t, q);
        } else {
            self.queue.push_back(q);
        }
    }

    fn count_flow_drop(&mut self, flow: Option<u32>) {
        if let Some(c) = flow.and_then(|f| self.flow_counters.get_mut(f as usize)) {
            c.drops += 1;
        }
    }

    /// Begin serializing `q` no earlier than `t`; computes when it starts and ends.
    fn start_service(&mut self, t: Ns, q: Queued<P>) {
        let len = q.len as u64;
        let (start, done) = match &self.p.capacity {
            Capacity::Rate(r) => match r.next_positive(t) {
                None => (Ns::MAX, Ns::MAX), // the link never comes back
                Some(s) => {
                    // A packet being serialized finishes at the rate of its start (docs/ir.md).
                    let rate = r.rate_at(s) as u128;
                    let num = len as u128 * 8 * 1_000_000_000 + self.ser_remainder;
                    self.ser_remainder = num % rate;
                    (s, s + (num / rate) as Ns)
                }
            },
            Capacity::Trace(tr) => {
                // Each opportunity carries up to bytes_per_opp bytes; several
                // small packets may share one; bytes left unused are lost
                // (Mahimahi). A packet larger than one opportunity uses as
                // many consecutive ones as it needs.
                let mut need = len;
                let mut first: Option<Ns> = None;
                let mut last = t;
                if self.trace_left > 0 && self.trace_left_time >= t {
                    let take = need.min(self.trace_left as u64);
                    need -= take;
                    self.trace_left -= take as u32;
                    first = Some(self.trace_left_time);
                    last = self.trace_left_time;
                }
                while need > 0 {
                    let g = self.trace_cursor.max(tr.first_at_or_after(t));
                    self.trace_cursor = g + 1;
                    let ot = tr.time(g);
                    let take = need.min(tr.bytes_per_opp as u64);
                    need -= take;
                    first.get_or_insert(ot);
                    last = ot;
                    self.trace_left = tr.bytes_per_opp - take as u32;
                    self.trace_left_time = ot;
                }
                (first.unwrap_or(t), last)
            }
        };
        // The packet being serialized has left the queue: the drop-tail limit
        // and queue_bytes/packets count waiting packets only, as the
        // simulator, ns-3, Mahimahi and Linux's bfifo/tbf do (docs/ir.md).
        self.queue_bytes -= q.len as u64;
        self.queue_packets -= 1;
        self.in_service = Some(InService { q, start, done });
    }

    fn finish_service(&mut self, _out: &mut impl FnMut(Delivery<P>)) {
        let InService { q, start, done } = self.in_service.take().unwrap();
        let len = q.len as u64;
        self.counters.egress_bytes += len;
        self.counters.departed_packets += 1;
        self.counters.sojourn_sum_ns += start.saturating_sub(q.arrival);
        self.counters.busy_ns += done - start;
        if let Some(c) = q.flow.and_then(|f| self.flow_counters.get_mut(f as usize)) {
            c.egress_bytes += len;
        }
        // Propagation keeps FIFO order even when the delay drops (docs/ir.md).
        let release = (done + self.delay_at(done)).max(self.last_prop_release);
        self.last_prop_release = release;
        self.prop.push_back((release, q.pkt));
        if let Some(next) = self.queue.pop_front() {
            self.start_service(done, next);
        }
    }
}

#[cfg(test)]
#[path = "link_tests.rs"]
mod tests;
