//! The emulator's path model: per-flow access delays into the shared
//! bottleneck model (cclab-netmodel), and the ACK path's delays.
//!
//! Queue convention (docs/ir.md, docs/kernel.md, the simulator's, all from
//! cclab-netmodel): a packet is *in the queue* from its arrival at the
//! bottleneck until its serialization starts; the packet being serialized
//! no longer counts, for the buffer limit or for `queue_bytes`/
//! `queue_packets`. Byte convention: every byte count is the IP datagram
//! length as it crosses the TUN device (IP header + TCP header + payload,
//! no link-layer framing) — for a full segment mss + header_bytes
//! (1448 + 52 = 1500), the same "wire bytes" the simulator counts.

use cclab_netmodel::{Bottleneck, BottleneckParams, DropCause, Ns, Out, Packet, FLOW_NONE};
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
    /// Deliver `pkt` in direction `dir`; it was due at `due`. `ce`: the
    /// bottleneck marked it Congestion Experienced (the caller sets the
    /// ECN field of the real packet).
    Deliver { dir: Dir, due: Ns, pkt: P, ce: bool },
    /// The packet was dropped (the caller may recycle its buffer).
    Drop(P, DropCause),
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
    pub drops_aqm: u64,
    pub marks_ce: u64,
    pub drops_policer: u64,
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

/// Parameters: the bottleneck's (the IR's `link`, on the model's clock) and the paths.
#[derive(Clone, Debug)]
pub struct LinkParams {
    pub bottleneck: BottleneckParams,
    pub flows: Vec<FlowPath>,
    /// Path of packets that belong to no flow (e.g. IPv6 neighbour traffic).
    pub other: FlowPath,
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

/// The link. `P` is the caller's packet (a buffer in the emulator, an id in tests).
pub struct LinkModel<P> {
    flows: Vec<FlowPath>,
    other: FlowPath,
    seq: u64,
    access: BinaryHeap<Reverse<Timed<Packet<P>>>>,
    bottleneck: Bottleneck<P>,
    out: Vec<Out<P>>,
    prop: VecDeque<(Ns, P, bool)>,
    acks: BinaryHeap<Reverse<Timed<P>>>,
    data_in: u64,
    data_out: u64,
    ack_in: u64,
    ack_out: u64,
    pub flow_counters: Vec<FlowCounters>,
    /// The run's time zero (`BottleneckParams::origin`): before it, data is
    /// connection set-up and crosses the link without queue, serialization
    /// or loss (`advance`).
    setup_until: Ns,
}

impl<P> LinkModel<P> {
    pub fn new(p: LinkParams) -> Self {
        let n = p.flows.len();
        let setup_until = p.bottleneck.origin;
        LinkModel {
            setup_until,
            flows: p.flows,
            other: p.other,
            seq: 0,
            access: BinaryHeap::new(),
            bottleneck: Bottleneck::new(p.bottleneck),
            out: Vec::new(),
            prop: VecDeque::new(),
            acks: BinaryHeap::new(),
            data_in: 0,
            data_out: 0,
            ack_in: 0,
            ack_out: 0,
            flow_counters: vec![FlowCounters::default(); n],
        }
    }

    fn path(&self, flow: Option<u32>) -> FlowPath {
        flow.and_then(|f| self.flows.get(f as usize).copied())
            .unwrap_or(self.other)
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Cumulative counters of the link (the bottleneck's and the paths').
    pub fn counters(&self) -> LinkCounters {
        let c = &self.bottleneck.counters;
        LinkCounters {
            arrival_bytes: c.arrival_bytes,
            arrival_packets: c.arrival_packets,
            egress_bytes: c.egress_bytes,
            departed_packets: c.departed_packets,
            sojourn_sum_ns: c.sojourn_sum_ns,
            busy_ns: c.busy_ns,
            drops_overflow: c.drops_overflow,
            drops_random: c.drops_random,
            drops_aqm: c.drops_aqm,
            marks_ce: c.marks_ce,
            drops_policer: c.drops_policer,
            data_in: self.data_in,
            data_out: self.data_out,
            ack_in: self.ack_in,
            ack_out: self.ack_out,
        }
    }

    /// Packets dropped so far, all causes.
    pub fn drops(&self) -> u64 {
        let c = &self.bottleneck.counters;
        c.drops_overflow + c.drops_random + c.drops_aqm + c.drops_policer
    }

    /// Count the sojourn of every packet leaving the bottleneck with
    /// `from < t ≤ to` (model clock) in [`Self::sojourn_hist`].
    pub fn set_sojourn_window(&mut self, from: Ns, to: Ns) {
        self.bottleneck.sojourn_hist.set_window(from, to);
    }

    /// The sojourn histogram of the window set by [`Self::set_sojourn_window`].
    pub fn sojourn_hist(&self) -> &cclab_netmodel::LogHist {
        &self.bottleneck.sojourn_hist.hist
    }

    pub fn queue_bytes(&self) -> u64 {
        self.bottleneck.queue_bytes()
    }
    pub fn queue_packets(&self) -> u64 {
        self.bottleneck.queue_packets()
    }
    /// Packets waiting or being serialized at the bottleneck (for conservation checks).
    pub fn held_packets(&self) -> u64 {
        self.bottleneck.held_packets()
    }
    /// Packets inside the model that are not at the bottleneck (access and propagation lines, ACK path).
    pub fn in_flight_packets(&self) -> u64 {
        (self.access.len() + self.prop.len() + self.acks.len()) as u64
    }
    pub fn capacity(&self) -> &cclab_netmodel::Capacity {
        self.bottleneck.capacity()
    }

    /// See [`Bottleneck::busy_ns_at`]: the intervals the emulator's capacity
    /// self-check judges are those in which this grows by their length.
    /// Call after `advance(t)`.
    pub fn busy_ns_at(&self, t: Ns) -> u64 {
        self.bottleneck.busy_ns_at(t)
    }

    pub fn delay_at(&self, t: Ns) -> Ns {
        self.bottleneck.delay_at(t)
    }

    /// A data packet of `len` wire bytes read from the sender side at `now`;
    /// `ect`: its IP header says ECN-capable.
    pub fn on_data(&mut self, now: Ns, flow: Option<u32>, len: u32, ect: bool, pkt: P) {
        self.data_in += 1;
        let t = now + self.path(flow).access_delay_ns;
        let seq = self.next_seq();
        let item = Packet::new(flow.unwrap_or(FLOW_NONE), len, ect, pkt);
        self.access.push(Reverse(Timed { t, seq, item }));
    }

    /// A packet read from the receiver side at `now` (ACKs, and anything else going back).
    pub fn on_ack(&mut self, now: Ns, flow: Option<u32>, pkt: P) {
        self.ack_in += 1;
        let t = now + self.path(flow).ack_delay_ns;
        let seq = self.next_seq();
        self.acks.push(Reverse(Timed { t, seq, item: pkt }));
    }

    /// The earliest time at which the model has something to do.
    pub fn next_event(&self) -> Option<Ns> {
        [
            self.access.peek().map(|r| r.0.t),
            self.bottleneck.next_event(),
            self.prop.front().map(|x| x.0),
            self.acks.peek().map(|r| r.0.t),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Process everything due at or before `now`, in time order. At equal
    /// times the bottleneck's own events (a serialization ending, a delivery
    /// opportunity) come before an arrival is judged, and both before
    /// deliveries.
    pub fn advance(&mut self, now: Ns, out: &mut impl FnMut(Delivery<P>)) {
        loop {
            let t_srv = self.bottleneck.next_event().unwrap_or(Ns::MAX);
            let t_acc = self.access.peek().map(|r| r.0.t).unwrap_or(Ns::MAX);
            let t_prop = self.prop.front().map(|x| x.0).unwrap_or(Ns::MAX);
            let t_ack = self.acks.peek().map(|r| r.0.t).unwrap_or(Ns::MAX);
            let t = t_srv.min(t_acc).min(t_prop).min(t_ack);
            if t > now {
                return;
            }
            if t_srv == t {
                let mut o = std::mem::take(&mut self.out);
                self.bottleneck.advance(t, &mut o);
                self.route(&mut o, out);
                self.out = o;
            } else if t_acc == t {
                let Reverse(Timed { t, item, .. }) = self.access.pop().unwrap();
                if t < self.setup_until {
                    // Connection set-up, before the experiment: the
                    // handshakes of many flows at once must not overflow a
                    // shallow queue, nor wait for a slow link (a lost SYN
                    // waits 1 s, RFC 6298 §2.1). Only the propagation delay
                    // applies; the bottleneck never sees the packet (it is
                    // idle until t0, so the line stays in FIFO order).
                    let exit = t + self.bottleneck.delay_at(t);
                    self.prop.push_back((exit, item.data, false));
                    continue;
                }
                if let Some(c) = self.flow_counters.get_mut(item.flow as usize) {
                    c.arrival_bytes += item.len as u64;
                }
                let mut o = std::mem::take(&mut self.out);
                self.bottleneck.arrive(t, item, &mut o);
                self.route(&mut o, out);
                self.out = o;
            } else if t_prop == t {
                let (due, pkt, ce) = self.prop.pop_front().unwrap();
                self.data_out += 1;
                out(Delivery::Deliver {
                    dir: Dir::Data,
                    due,
                    pkt,
                    ce,
                });
            } else {
                let Reverse(Timed { t, item, .. }) = self.acks.pop().unwrap();
                self.ack_out += 1;
                out(Delivery::Deliver {
                    dir: Dir::Ack,
                    due: t,
                    pkt: item,
                    ce: false,
                });
            }
        }
    }

    /// The bottleneck's output: departures onto the propagation line (the
    /// model computed their FIFO exit times), drops to the caller.
    fn route(&mut self, o: &mut Vec<Out<P>>, out: &mut impl FnMut(Delivery<P>)) {
        for x in o.drain(..) {
            match x {
                Out::Depart { pkt, exit, .. } => {
                    if let Some(c) = self.flow_counters.get_mut(pkt.flow as usize) {
                        c.egress_bytes += pkt.len as u64;
                    }
                    self.prop.push_back((exit, pkt.data, pkt.ce));
                }
                Out::Drop { pkt, cause } => {
                    if let Some(c) = self.flow_counters.get_mut(pkt.flow as usize) {
                        c.drops += 1;
                    }
                    out(Delivery::Drop(pkt.data, cause));
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "link_tests.rs"]
mod tests;
