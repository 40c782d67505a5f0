//! FQ-CoDel — Flow Queue CoDel (RFC 8290), as Linux codes it
//! (net/sched/sch_fq_codel.c).
//!
//! * Classification (RFC 8290 §4.1.1): each packet's flow is hashed, with a
//!   salt from the qdisc's random stream (Linux: `skb_get_hash`, seeded per
//!   boot), into one of `flows` queues (default 1024) —
//!   `reciprocal_scale(hash, flows)`. Two flows may share a queue, as on
//!   Linux. The flow key is the flow's id (on the kernel backend one flow
//!   is one 5-tuple; packets of no flow share one key).
//! * Scheduling (§4.2, `fq_codel_dequeue`): deficit round robin over two
//!   lists. A queue that becomes active joins the tail of *new flows* with
//!   a deficit of one `quantum` (default 1514 bytes, §5.2 / tc-fq_codel(8):
//!   an Ethernet MTU plus its 14-byte header). The head of new flows (else
//!   of old flows) sends while its deficit is positive; when the deficit
//!   is spent it gains a quantum and moves to the tail of old flows. A queue
//!   found empty leaves the lists — except that an empty queue from new
//!   flows moves to old flows when old flows is not empty (§4.2: a flow
//!   cannot starve the others by going empty and coming back as new).
//! * Each queue runs CoDel ([`super::codel`], target 5 ms, interval 100 ms;
//!   ECN on by default, §5.2 / `fq_codel_init`), on the whole qdisc's
//!   backlog for the MAXPACKET test, as Linux passes `sch->qstats.backlog`.
//! * Overflow (§4.1.1, `fq_codel_drop`): the packet is queued first; if the
//!   buffer (the scenario's, replacing Linux's 10240-packet `limit`) or the
//!   `memory_limit` (32 MB; counted here in wire bytes, Linux counts
//!   `skb->truesize`) is exceeded, the fattest queue loses packets from its
//!   head — up to half its bytes, at most `drop_batch` (64) packets — and
//!   its CoDel count grows by as many ("tell codel to increase its signal
//!   strength"). These are overflow drops.
//!
//! Not modelled: `ce_threshold` (off by default), external classifiers.

use super::codel::{codel_dequeue, CodelConfig, CodelVars, Source};
use super::{Cx, Limits};
use crate::packet::{DropCause, Packet};
use crate::rng::mix;
use crate::Ns;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FqCodelConfig {
    pub target_ns: Ns,
    pub interval_ns: Ns,
    pub mtu_bytes: u32,
    pub ecn: bool,
    pub quantum_bytes: u32,
    pub flows: u32,
    pub memory_limit_bytes: u64,
    pub drop_batch: u32,
}

impl FqCodelConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.target_ns == 0 || self.interval_ns == 0 {
            return Err("fq_codel: target and interval must be positive".into());
        }
        if self.flows == 0 || self.flows > 65536 {
            return Err(format!(
                "fq_codel: flows {} must be in 1..=65536",
                self.flows
            ));
        }
        if self.quantum_bytes < 256 {
            return Err(format!(
                "fq_codel: quantum {} must be at least 256 bytes",
                self.quantum_bytes
            ));
        }
        if self.drop_batch == 0 || self.memory_limit_bytes == 0 {
            return Err("fq_codel: drop_batch and memory_limit must be positive".into());
        }
        Ok(())
    }

    fn codel(&self) -> CodelConfig {
        CodelConfig {
            target_ns: self.target_ns,
            interval_ns: self.interval_ns,
            mtu_bytes: self.mtu_bytes,
            ecn: self.ecn,
        }
    }
}

struct FlowQueue<P> {
    q: VecDeque<Packet<P>>,
    backlog: u64,
    deficit: i64,
    vars: CodelVars,
    /// On the new or the old list (Linux: `!list_empty(&flow->flowchain)`).
    listed: bool,
}

pub struct FqCodel<P> {
    cfg: FqCodelConfig,
    codel: CodelConfig,
    limits: Limits,
    salt: u64,
    queues: Vec<FlowQueue<P>>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    bytes: u64,
    packets: u64,
}

/// One flow queue seen by CoDel: pops update the flow's and the qdisc's backlog.
struct FlowSource<'a, P> {
    q: &'a mut VecDeque<Packet<P>>,
    backlog: &'a mut u64,
    bytes: &'a mut u64,
    packets: &'a mut u64,
}

impl<P> Source<P> for FlowSource<'_, P> {
    #[inline]
    fn pop(&mut self) -> Option<Packet<P>> {
        let p = self.q.pop_front()?;
        *self.backlog -= p.len as u64;
        *self.bytes -= p.len as u64;
        *self.packets -= 1;
        Some(p)
    }
    #[inline]
    fn backlog(&self) -> u64 {
        *self.bytes
    }
}

impl<P> FqCodel<P> {
    pub fn new(cfg: FqCodelConfig, limits: Limits, salt: u64) -> Self {
        let queues = (0..cfg.flows)
            .map(|_| FlowQueue {
                q: VecDeque::new(),
                backlog: 0,
                deficit: 0,
                vars: CodelVars::default(),
                listed: false,
            })
            .collect();
        FqCodel {
            codel: cfg.codel(),
            cfg,
            limits,
            salt,
            queues,
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            bytes: 0,
            packets: 0,
        }
    }

    /// The queue a flow hashes to (Linux `reciprocal_scale(hash, flows_cnt)`).
    pub fn queue_of(&self, flow: u32) -> u32 {
        let h = (mix(self.salt, flow as u64) >> 32) as u32;
        ((h as u64 * self.cfg.flows as u64) >> 32) as u32
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    pub fn packets(&self) -> u64 {
        self.packets
    }

    pub fn enqueue(&mut self, pkt: Packet<P>, cx: &mut Cx<P>) {
        let idx = self.queue_of(pkt.flow);
        let f = &mut self.queues[idx as usize];
        f.backlog += pkt.len as u64;
        self.bytes += pkt.len as u64;
        self.packets += 1;
        f.q.push_back(pkt);
        if !f.listed {
            f.listed = true;
            f.deficit = self.cfg.quantum_bytes as i64;
            self.new_flows.push_back(idx);
        }
        let memory_limited = self.bytes > self.cfg.memory_limit_bytes;
        if self.limits.exceeded(self.bytes, self.packets) || memory_limited {
            self.drop_from_fattest(cx);
        }
    }

    /// `fq_codel_drop`: drop up to half the bytes (at most `drop_batch`
    /// packets) from the head of the queue with the largest backlog.
    fn drop_from_fattest(&mut self, cx: &mut Cx<P>) {
        let mut fattest = 0usize;
        let mut max = 0u64;
        for (i, f) in self.queues.iter().enumerate() {
            if f.backlog > max {
                max = f.backlog;
                fattest = i;
            }
        }
        let threshold = max / 2;
        let f = &mut self.queues[fattest];
        let (mut len, mut n) = (0u64, 0u32);
        loop {
            let Some(p) = f.q.pop_front() else { break };
            len += p.len as u64;
            n += 1;
            cx.drop(p, DropCause::Overflow);
            if n >= self.cfg.drop_batch || len >= threshold {
                break;
            }
        }
        f.vars.count = f.vars.count.wrapping_add(n);
        f.backlog -= len;
        self.bytes -= len;
        self.packets -= n as u64;
    }

    pub fn dequeue(&mut self, cx: &mut Cx<P>) -> Option<Packet<P>> {
        loop {
            let (from_new, idx) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (true, i),
                (None, Some(&i)) => (false, i),
                (None, None) => return None,
            };
            let FlowQueue {
                q,
                backlog,
                deficit,
                vars,
                listed,
            } = &mut self.queues[idx as usize];
            if *deficit <= 0 {
                *deficit += self.cfg.quantum_bytes as i64;
                if from_new {
                    self.new_flows.pop_front();
                } else {
                    self.old_flows.pop_front();
                }
                self.old_flows.push_back(idx);
                continue;
            }
            let mut src = FlowSource {
                q,
                backlog,
                bytes: &mut self.bytes,
                packets: &mut self.packets,
            };
            if let Some(p) = codel_dequeue(vars, &self.codel, &mut src, cx) {
                *deficit -= p.len as i64;
                return Some(p);
            }
            // The queue is empty: it leaves its list; one from new flows
            // takes a turn on old flows first if others are there.
            if from_new {
                self.new_flows.pop_front();
                if !self.old_flows.is_empty() {
                    self.old_flows.push_back(idx);
                    continue;
                }
            } else {
                self.old_flows.pop_front();
            }
            *listed = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::*;
    use crate::qdisc::{Qdisc, QdiscConfig};

    const MS: Ns = 1_000_000;

    fn cfg() -> FqCodelConfig {
        FqCodelConfig {
            target_ns: 5 * MS,
            interval_ns: 100 * MS,
            mtu_bytes: 1500,
            ecn: true,
            quantum_bytes: 1514,
            flows: 1024,
            memory_limit_bytes: 32 << 20,
            drop_batch: 64,
        }
    }

    fn harness(c: FqCodelConfig, limits: Limits) -> Harness<u32> {
        Harness::new(&QdiscConfig::FqCodel(c), limits)
    }

    fn fq(h: &Harness<u32>) -> &FqCodel<u32> {
        match &h.q {
            Qdisc::FqCodel(q) => q,
            _ => unreachable!(),
        }
    }

    /// Flow ids that hash to distinct queues.
    fn distinct_flows(h: &Harness<u32>, n: usize) -> Vec<u32> {
        let mut seen = std::collections::HashSet::new();
        (0..1000u32)
            .filter(|&f| seen.insert(fq(h).queue_of(f)))
            .take(n)
            .collect()
    }

    #[test]
    fn backlogged_flows_share_bytes_equally_whatever_their_packet_sizes() {
        // Flow a sends 1500-byte packets, flow b 500-byte ones; both always
        // backlogged. DRR gives each ~ the same bytes per round.
        let mut h = harness(
            cfg(),
            Limits {
                bytes: None,
                packets: Some(100_000),
            },
        );
        let fl = distinct_flows(&h, 2);
        for i in 0..3000 {
            h.enqueue(0, pkt(fl[0], 1500, i));
            h.enqueue(0, pkt(fl[1], 500, i));
            h.enqueue(0, pkt(fl[1], 500, i));
            h.enqueue(0, pkt(fl[1], 500, i));
        }
        let (mut a, mut b) = (0u64, 0u64);
        for _ in 0..2000 {
            // dequeue at t=0: no sojourn, no CoDel drops
            let p = h.dequeue(0).unwrap();
            if p.flow == fl[0] {
                a += p.len as u64
            } else {
                b += p.len as u64
            }
        }
        let share = a as f64 / (a + b) as f64;
        assert!((share - 0.5).abs() < 0.01, "{a} vs {b}");
    }

    #[test]
    fn a_new_sparse_flow_goes_before_backlogged_ones() {
        let mut h = harness(
            cfg(),
            Limits {
                bytes: None,
                packets: Some(100_000),
            },
        );
        let fl = distinct_flows(&h, 3);
        for i in 0..100 {
            h.enqueue(0, pkt(fl[0], 1500, i));
            h.enqueue(0, pkt(fl[1], 1500, i));
        }
        for _ in 0..10 {
            h.dequeue(0);
        }
        // both bulk flows have spent their first quantum and sit on old flows
        h.enqueue(0, pkt(fl[2], 100, 999));
        assert_eq!(
            h.dequeue(0).unwrap().data,
            999,
            "the sparse flow's packet is next"
        );
    }

    #[test]
    fn overflow_drops_half_the_fattest_flows_bytes_from_its_head() {
        let mut h = harness(
            cfg(),
            Limits {
                bytes: None,
                packets: Some(100),
            },
        );
        let fl = distinct_flows(&h, 2);
        for i in 0..80 {
            h.enqueue(0, pkt(fl[0], 1500, i));
        }
        for i in 0..20 {
            h.enqueue(0, pkt(fl[1], 1500, 1000 + i));
        }
        assert!(h.take_drops().is_empty());
        // the 101st packet (of the small flow) overflows: the fat flow loses
        // half its 80 packets from the head (40 ≤ the batch of 64)
        h.enqueue(0, pkt(fl[1], 1500, 2000));
        let d = h.take_drops();
        assert_eq!(d.len(), 40);
        assert!(d.iter().all(|&(id, c)| id < 80 && c == DropCause::Overflow));
        assert_eq!(d[0].0, 0, "from the head");
        assert_eq!(h.q.backlog_packets(), 61);
        assert_eq!(h.counters.drops_overflow, 40);
    }

    #[test]
    fn each_flow_has_its_own_codel() {
        // Flow a has a standing queue (waits > target for > interval); flow b
        // sends a packet now and then. Only a's packets are dropped/marked.
        let mut c = cfg();
        c.ecn = false;
        let mut h = harness(
            c,
            Limits {
                bytes: None,
                packets: Some(100_000),
            },
        );
        let fl = distinct_flows(&h, 2);
        for i in 0..400 {
            h.enqueue(0, pkt(fl[0], 1500, i));
        }
        let mut t = 0;
        let mut dropped_b = 0;
        for k in 0..600u32 {
            t += MS;
            h.enqueue(t, pkt(fl[0], 1500, 1000 + k));
            if k % 10 == 0 {
                h.enqueue(t, pkt(fl[1], 1500, 100_000 + k));
            }
            h.dequeue(t);
            for (id, _) in h.take_drops() {
                if id >= 100_000 {
                    dropped_b += 1;
                }
            }
        }
        assert!(h.counters.drops_aqm > 5, "{}", h.counters.drops_aqm);
        assert_eq!(dropped_b, 0);
    }

    #[test]
    fn all_flows_hash_into_range_and_salts_differ() {
        let h = harness(cfg(), Limits::default());
        assert!((0..10_000).all(|f| fq(&h).queue_of(f) < 1024));
        let other = FqCodel::<u32>::new(cfg(), Limits::default(), 12345);
        assert!((0..100).any(|f| other.queue_of(f) != fq(&h).queue_of(f)));
    }
}
