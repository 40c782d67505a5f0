//! The emulator's model of a topology (docs/topologies.md): links of
//! cclab-netmodel (the simulator's code) joined by the flows' paths.
//!
//! Per data packet of flow f: f's own forward delay (a FIFO line), then each
//! link of its path (loss → queue discipline → serialization → propagation),
//! then the receiver's host. Per ACK of f: f's own return delay, then either
//! the sender's host (no ACK path: an uncongested return) or each link of its
//! ACK path, where it queues beside the data going that way. The same rules
//! as the simulator (`crates/cclab-sim/src/sim.rs`): the flow's own delays
//! come from `cclab_netmodel::ir::split_extra_delay`, link k's random streams
//! from `link_seed(seed, k)`.
//!
//! Pure: `now` is handed in, packets come out with the time they are due and
//! the host (index into the run's host namespaces) they are due at.

use cclab_netmodel::{Bottleneck, BottleneckParams, DropCause, Ns, Out, Packet};
use std::collections::VecDeque;

/// Set in `Packet::flow` of an ACK inside the model (as in the simulator).
pub const ACK_FLAG: u32 = 1 << 31;

/// One flow's way through the topology.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NetFlow {
    /// Link indices of the data path and of the ACK path (empty: uncongested return).
    pub path: Vec<usize>,
    pub ack_path: Vec<usize>,
    /// The flow's own delay before its first link, and before its ACKs leave the receiver.
    pub fwd_extra_ns: Ns,
    pub ack_extra_ns: Ns,
    /// Host indices of its sender and its receiver.
    pub src_host: usize,
    pub dst_host: usize,
}

#[derive(Clone, Debug)]
pub struct NetParams {
    pub links: Vec<BottleneckParams>,
    pub flows: Vec<NetFlow>,
}

/// What the model hands back.
#[derive(Debug, PartialEq)]
pub enum NetDelivery<P> {
    /// Write `pkt` into host `host`'s device; it was due at `due`. `ce`: a
    /// link marked it Congestion Experienced.
    Deliver {
        host: usize,
        due: Ns,
        pkt: P,
        ce: bool,
        ack: bool,
    },
    /// Dropped at link `link` (the caller may recycle the buffer).
    Drop {
        link: usize,
        pkt: P,
        cause: DropCause,
        ack: bool,
    },
}

/// Per-flow cumulative counters (wire bytes; data only).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NetFlowCounters {
    /// Data bytes that reached the flow's first link.
    pub arrival_bytes: u64,
    /// Data bytes that left the flow's last link.
    pub egress_bytes: u64,
    /// Data packets dropped on any link of its path.
    pub drops: u64,
}

/// Whole-model counters (packets).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NetCounters {
    pub data_in: u64,
    pub data_out: u64,
    pub data_dropped: u64,
    pub ack_in: u64,
    pub ack_out: u64,
    pub ack_dropped: u64,
}

pub struct NetModel<P> {
    flows: Vec<NetFlow>,
    links: Vec<Bottleneck<P>>,
    /// Per link: departed packets on their propagation line (FIFO exit times from the model).
    props: Vec<VecDeque<(Ns, Packet<P>)>>,
    /// Per flow: its own forward and return delay lines (constant delays: FIFO).
    access: Vec<VecDeque<(Ns, Packet<P>)>>,
    returns: Vec<VecDeque<(Ns, Packet<P>)>>,
    out: Vec<Out<P>>,
    pub counters: NetCounters,
    pub flow_counters: Vec<NetFlowCounters>,
    /// The run's time zero: before it, packets are connection set-up and
    /// cross each link with its propagation delay only (`arrive`).
    setup_until: Ns,
}

impl<P> NetModel<P> {
    pub fn new(p: NetParams) -> Self {
        let (n_links, n_flows) = (p.links.len(), p.flows.len());
        let setup_until = p.links.iter().map(|l| l.origin).min().unwrap_or(0);
        NetModel {
            setup_until,
            links: p.links.into_iter().map(Bottleneck::new).collect(),
            props: (0..n_links).map(|_| VecDeque::new()).collect(),
            access: (0..n_flows).map(|_| VecDeque::new()).collect(),
            returns: (0..n_flows).map(|_| VecDeque::new()).collect(),
            flows: p.flows,
            out: Vec::new(),
            counters: NetCounters::default(),
            flow_counters: vec![NetFlowCounters::default(); n_flows],
        }
    }

    pub fn link(&self, k: usize) -> &Bottleneck<P> {
        &self.links[k]
    }

    pub fn n_links(&self) -> usize {
        self.links.len()
    }

    /// A data packet of flow `flow` (`len` wire bytes, `ect` ECN-capable) read from its sender's host at `now`.
    pub fn on_data(&mut self, now: Ns, flow: u32, len: u32, ect: bool, pkt: P) {
        self.counters.data_in += 1;
        let f = flow as usize;
        let t = now + self.flows[f].fwd_extra_ns;
        self.access[f].push_back((t, Packet::new(flow, len, ect, pkt)));
    }

    /// An ACK of flow `flow` read from its receiver's host at `now`.
    pub fn on_ack(&mut self, now: Ns, flow: u32, len: u32, pkt: P) {
        self.counters.ack_in += 1;
        let f = flow as usize;
        let t = now + self.flows[f].ack_extra_ns;
        self.returns[f].push_back((t, Packet::new(flow | ACK_FLAG, len, false, pkt)));
    }

    /// The earliest time at which the model has something to do.
    pub fn next_event(&self) -> Option<Ns> {
        let links = self.links.iter().filter_map(|l| l.next_event());
        let lines = self
            .props
            .iter()
            .chain(&self.access)
            .chain(&self.returns)
            .filter_map(|q| q.front().map(|x| x.0));
        links.chain(lines).min()
    }

    /// Packets inside the links (waiting, held, in service) and on any line.
    pub fn held_packets(&self) -> u64 {
        self.links.iter().map(|l| l.held_packets()).sum()
    }
    pub fn in_lines(&self) -> u64 {
        self.props
            .iter()
            .chain(&self.access)
            .chain(&self.returns)
            .map(|q| q.len() as u64)
            .sum()
    }

    /// Process everything due at or before `now`, in time order; at one
    /// instant the links' own events first, then arrivals at the far ends of
    /// propagation lines, then the flows' own delay lines.
    pub fn advance(&mut self, now: Ns, out: &mut impl FnMut(NetDelivery<P>)) {
        loop {
            let t_link = self
                .links
                .iter()
                .enumerate()
                .filter_map(|(k, l)| l.next_event().map(|t| (t, k)))
                .min();
            let t_prop = self
                .props
                .iter()
                .enumerate()
                .filter_map(|(k, q)| q.front().map(|x| (x.0, k)))
                .min();
            let t_acc = self
                .access
                .iter()
                .enumerate()
                .filter_map(|(f, q)| q.front().map(|x| (x.0, f)))
                .min();
            let t_ret = self
                .returns
                .iter()
                .enumerate()
                .filter_map(|(f, q)| q.front().map(|x| (x.0, f)))
                .min();
            let t = [t_link, t_prop, t_acc, t_ret]
                .iter()
                .flatten()
                .map(|x| x.0)
                .min();
            match t {
                Some(t) if t <= now => {}
                _ => return,
            }
            let t = t.unwrap();
            if let Some((tl, k)) = t_link.filter(|x| x.0 == t) {
                let mut o = std::mem::take(&mut self.out);
                self.links[k].advance(tl, &mut o);
                self.take_outputs(k, &mut o, out);
                self.out = o;
            } else if let Some((_, k)) = t_prop.filter(|x| x.0 == t) {
                let (due, pkt) = self.props[k].pop_front().unwrap();
                self.exit_link(due, k, pkt, out);
            } else if let Some((_, f)) = t_acc.filter(|x| x.0 == t) {
                let (due, pkt) = self.access[f].pop_front().unwrap();
                let first = self.flows[f].path[0];
                self.flow_counters[f].arrival_bytes += pkt.len as u64;
                self.arrive(due, first, pkt, out);
            } else if let Some((_, f)) = t_ret.filter(|x| x.0 == t) {
                let (due, pkt) = self.returns[f].pop_front().unwrap();
                match self.flows[f].ack_path.first() {
                    Some(&first) => self.arrive(due, first, pkt, out),
                    None => self.deliver(due, pkt, out),
                }
            }
        }
    }

    fn arrive(&mut self, t: Ns, k: usize, pkt: Packet<P>, out: &mut impl FnMut(NetDelivery<P>)) {
        if t < self.setup_until {
            // connection set-up: no queue, serialization or loss (LinkModel::advance)
            let exit = t + self.links[k].delay_at(t);
            self.props[k].push_back((exit, pkt));
            return;
        }
        let mut o = std::mem::take(&mut self.out);
        self.links[k].arrive(t, pkt, &mut o);
        self.take_outputs(k, &mut o, out);
        self.out = o;
    }

    /// Link `k`'s output: departures onto its propagation line, drops out.
    fn take_outputs(
        &mut self,
        k: usize,
        o: &mut Vec<Out<P>>,
        out: &mut impl FnMut(NetDelivery<P>),
    ) {
        for x in o.drain(..) {
            match x {
                Out::Depart { pkt, exit, .. } => self.props[k].push_back((exit, pkt)),
                Out::Drop { pkt, cause } => {
                    let ack = pkt.flow & ACK_FLAG != 0;
                    if ack {
                        self.counters.ack_dropped += 1;
                    } else {
                        self.counters.data_dropped += 1;
                        if let Some(c) = self.flow_counters.get_mut(pkt.flow as usize) {
                            c.drops += 1;
                        }
                    }
                    out(NetDelivery::Drop {
                        link: k,
                        pkt: pkt.data,
                        cause,
                        ack,
                    });
                }
            }
        }
    }

    /// `pkt` reached the far end of link `k` at `t`: the next link of its path, or its host.
    fn exit_link(&mut self, t: Ns, k: usize, pkt: Packet<P>, out: &mut impl FnMut(NetDelivery<P>)) {
        let ack = pkt.flow & ACK_FLAG != 0;
        let f = (pkt.flow & !ACK_FLAG) as usize;
        let path = if ack {
            &self.flows[f].ack_path
        } else {
            &self.flows[f].path
        };
        let i = path
            .iter()
            .position(|&l| l == k)
            .expect("a packet exits a link of its own path");
        match path.get(i + 1).copied() {
            Some(next) => self.arrive(t, next, pkt, out),
            None => {
                if !ack {
                    self.flow_counters[f].egress_bytes += pkt.len as u64;
                }
                self.deliver(t, pkt, out)
            }
        }
    }

    fn deliver(&mut self, t: Ns, pkt: Packet<P>, out: &mut impl FnMut(NetDelivery<P>)) {
        let ack = pkt.flow & ACK_FLAG != 0;
        let f = &self.flows[(pkt.flow & !ACK_FLAG) as usize];
        let host = if ack { f.src_host } else { f.dst_host };
        if ack {
            self.counters.ack_out += 1;
        } else {
            self.counters.data_out += 1;
        }
        out(NetDelivery::Deliver {
            host,
            due: t,
            pkt: pkt.data,
            ce: pkt.ce,
            ack,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cclab_netmodel::{Capacity, Limits, LossModel, QdiscConfig, RateSteps};

    fn link(rate_bps: u64, delay_ns: Ns, packets: u64) -> BottleneckParams {
        BottleneckParams {
            capacity: Capacity::Rate(RateSteps::new(rate_bps, vec![])),
            delay_steps: vec![(0, delay_ns)],
            loss_steps: vec![(0, LossModel::none())],
            limits: Limits {
                bytes: None,
                packets: Some(packets),
            },
            qdisc: QdiscConfig::Droptail {},
            policer: None,
            seed: 1,
            origin: 0,
        }
    }

    #[test]
    fn a_packet_crosses_its_path_and_its_ack_returns_over_links() {
        // two links of 12 Mbit/s (1500 B = 1 ms), 5 and 7 ms; back over a third, 3 ms
        let flows = vec![NetFlow {
            path: vec![0, 1],
            ack_path: vec![2],
            fwd_extra_ns: 2_000_000,
            ack_extra_ns: 1_000_000,
            src_host: 0,
            dst_host: 1,
        }];
        let mut m: NetModel<u32> = NetModel::new(NetParams {
            links: vec![
                link(12_000_000, 5_000_000, 10),
                link(12_000_000, 7_000_000, 10),
                link(12_000_000, 3_000_000, 10),
            ],
            flows,
        });
        m.on_data(0, 0, 1500, false, 7);
        let mut got = vec![];
        m.advance(100_000_000, &mut |d| got.push(d));
        // 2 (own) + 1 + 5 + 1 + 7 ms
        assert_eq!(
            got,
            vec![NetDelivery::Deliver {
                host: 1,
                due: 16_000_000,
                pkt: 7,
                ce: false,
                ack: false
            }]
        );
        m.on_ack(20_000_000, 0, 60, 8);
        got.clear();
        m.advance(100_000_000, &mut |d| got.push(d));
        // 20 + 1 (own) + 60 B at 12 Mbit/s (40 µs) + 3 ms
        assert_eq!(
            got,
            vec![NetDelivery::Deliver {
                host: 0,
                due: 24_040_000,
                pkt: 8,
                ce: false,
                ack: true
            }]
        );
        assert_eq!(
            m.flow_counters[0],
            NetFlowCounters {
                arrival_bytes: 1500,
                egress_bytes: 1500,
                drops: 0
            }
        );
    }

    #[test]
    fn set_up_before_t0_crosses_every_link_with_its_delay_only() {
        // 20 packets at once into 3-packet queues of two 12 Mbit/s links (5 and 7 ms)
        // before t0 = 50 ms: all arrive after 2 (own) + 5 + 7 ms, none dropped
        let flows = vec![NetFlow {
            path: vec![0, 1],
            ack_path: vec![],
            fwd_extra_ns: 2_000_000,
            ack_extra_ns: 0,
            src_host: 0,
            dst_host: 1,
        }];
        let mut links = vec![link(12_000_000, 5_000_000, 3), link(12_000_000, 7_000_000, 3)];
        for l in links.iter_mut() {
            l.origin = 50_000_000;
        }
        let mut m: NetModel<u32> = NetModel::new(NetParams { links, flows });
        for i in 0..20 {
            m.on_data(0, 0, 1500, false, i);
        }
        let mut got = vec![];
        m.advance(49_000_000, &mut |d| got.push(d));
        assert_eq!(got.len(), 20);
        assert!(got.iter().all(|d| matches!(d, NetDelivery::Deliver { due: 14_000_000, .. })));
    }

    #[test]
    fn data_and_acks_share_a_link_queue_and_are_conserved() {
        // flow 0 over link 0 with ACKs back over link 1; flow 1 over link 1 with ACKs over link 0;
        // link 1 holds 3 packets: a burst of flow 1's data fills it and flow 0's ACKs are dropped
        let flows = vec![
            NetFlow {
                path: vec![0],
                ack_path: vec![1],
                fwd_extra_ns: 0,
                ack_extra_ns: 0,
                src_host: 0,
                dst_host: 1,
            },
            NetFlow {
                path: vec![1],
                ack_path: vec![0],
                fwd_extra_ns: 0,
                ack_extra_ns: 0,
                src_host: 1,
                dst_host: 0,
            },
        ];
        let mut m: NetModel<u32> = NetModel::new(NetParams {
            links: vec![
                link(12_000_000, 1_000_000, 100),
                link(12_000_000, 1_000_000, 3),
            ],
            flows,
        });
        for i in 0..10 {
            m.on_data(0, 1, 1500, false, 100 + i);
        }
        for i in 0..4 {
            m.on_ack(10_000, 0, 52, 200 + i);
        }
        let (mut delivered, mut dropped) = (vec![], vec![]);
        m.advance(1_000_000_000, &mut |d| match d {
            NetDelivery::Deliver { pkt, ack, .. } => delivered.push((pkt, ack)),
            NetDelivery::Drop { pkt, link, ack, .. } => dropped.push((pkt, link, ack)),
        });
        let c = &m.counters;
        assert_eq!(c.data_in + c.ack_in, 14);
        assert_eq!(c.data_in, c.data_out + c.data_dropped);
        assert_eq!(c.ack_in, c.ack_out + c.ack_dropped);
        assert!(
            dropped.iter().any(|&(_, l, ack)| l == 1 && ack),
            "an ACK dropped behind the data: {dropped:?}"
        );
        assert_eq!(m.held_packets() + m.in_lines(), 0);
        // FIFO per flow
        let data: Vec<u32> = delivered.iter().filter(|x| !x.1).map(|x| x.0).collect();
        assert!(data.windows(2).all(|w| w[0] < w[1]));
    }
}
