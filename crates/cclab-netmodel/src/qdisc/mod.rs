//! Queue disciplines: a closed set, one file each.
//!
//! | IR `kind` | file | source |
//! |---|---|---|
//! | `droptail` | [`droptail`] | Linux `sch_fifo.c` (bfifo / pfifo) |
//! | `drop_front` | [`drop_front`] | Linux `sch_fifo.c` (pfifo_head_drop) |
//! | `random_drop` | [`random_drop`] | RFC 2309 §3 ("random drop on full") |
//! | `red` | [`red`] | Floyd & Jacobson 1993; Linux `include/net/red.h`, `sch_red.c`; gentle: Floyd 2000 |
//! | `codel` | [`codel`] | RFC 8289; Linux `include/net/codel_impl.h`, `sch_codel.c` |
//! | `fq_codel` | [`fq_codel`] | RFC 8290; Linux `sch_fq_codel.c` |
//! | `pie` | [`pie`] | RFC 8033; Linux `sch_pie.c`, `include/net/pie.h` |
//! | `step` | [`step`] | RFC 8257 §3.1 (DCTCP's marking threshold K) |
//!
//! Conventions shared by all of them (docs/queues.md):
//! * the queue holds packets *waiting*; the packet being serialized has left
//!   it (Linux: the qdisc hands the packet to the device when its
//!   transmission starts), so the buffer limit counts waiting packets;
//! * the scenario's buffer ([`Limits`], bytes and/or packets) is every
//!   discipline's hard limit (Linux's `limit`); a packet beyond it is an
//!   overflow drop, whatever the AQM;
//! * an AQM with ECN enabled marks an ECN-capable packet CE where it would
//!   have dropped it (RFC 3168 §5, RFC 7567 §4.2.1);
//! * randomness comes from the qdisc's own stream (`STREAM_QDISC`), never
//!   from the loss stream.

pub mod codel;
pub mod drop_front;
pub mod droptail;
pub mod fq_codel;
pub mod pie;
pub mod random_drop;
pub mod red;
pub mod step;

use crate::bottleneck::Counters;
use crate::bottleneck::Sink;
use crate::packet::{DropCause, Packet};
use crate::rng::Rng;
use crate::Ns;
#[cfg(test)]
use crate::Out;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

pub use codel::CodelConfig;
pub use fq_codel::FqCodelConfig;
pub use pie::PieConfig;
pub use red::RedConfig;
pub use step::StepConfig;

/// The buffer: a packet is admitted only if the waiting packets, with it,
/// stay within both limits (docs/ir.md "Buffer").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    pub bytes: Option<u64>,
    pub packets: Option<u64>,
}

impl Limits {
    /// Whether a packet of `len` bytes fits beside `bytes`/`packets` waiting.
    #[inline]
    pub fn admits(&self, bytes: u64, packets: u64, len: u32) -> bool {
        !(self.bytes.is_some_and(|b| bytes + len as u64 > b)
            || self.packets.is_some_and(|p| packets + 1 > p))
    }

    /// Whether `bytes`/`packets` (already counted) exceed a limit.
    #[inline]
    pub fn exceeded(&self, bytes: u64, packets: u64) -> bool {
        self.bytes.is_some_and(|b| bytes > b) || self.packets.is_some_and(|p| packets > p)
    }
}

/// A discipline and its parameters, in the IR's form (`link.qdisc`,
/// docs/ir.md); every parameter explicit, in ns / bytes / plain numbers.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum QdiscConfig {
    /// Drop the arriving packet when the buffer is full.
    Droptail {},
    /// Drop from the head of the queue until the arriving packet fits.
    DropFront {},
    /// Drop randomly chosen waiting packets until the arriving packet fits.
    RandomDrop {},
    Red(RedConfig),
    Codel(CodelConfig),
    FqCodel(FqCodelConfig),
    Pie(PieConfig),
    /// Mark (or drop) every packet arriving above a threshold K.
    Step(StepConfig),
}

impl QdiscConfig {
    /// The IR's name of this discipline.
    pub fn kind(&self) -> &'static str {
        match self {
            QdiscConfig::Droptail {} => "droptail",
            QdiscConfig::DropFront {} => "drop_front",
            QdiscConfig::RandomDrop {} => "random_drop",
            QdiscConfig::Red(_) => "red",
            QdiscConfig::Codel(_) => "codel",
            QdiscConfig::FqCodel(_) => "fq_codel",
            QdiscConfig::Pie(_) => "pie",
            QdiscConfig::Step(_) => "step",
        }
    }

    /// Parameters that are out of range (the front end checks them first;
    /// this guards the engines against a hand-written IR).
    pub fn validate(&self) -> Result<(), String> {
        match self {
            QdiscConfig::Red(c) => c.validate(),
            QdiscConfig::Codel(c) => c.validate(),
            QdiscConfig::FqCodel(c) => c.validate(),
            QdiscConfig::Pie(c) => c.validate(),
            QdiscConfig::Step(c) => c.validate(),
            _ => Ok(()),
        }
    }
}

/// What a discipline may touch besides its queue: the time, its random
/// stream, the link's counters, and where dropped packets go.
pub struct Cx<'a, P> {
    pub now: Ns,
    pub rng: &'a mut Rng,
    pub counters: &'a mut Counters,
    pub out: &'a mut dyn Sink<P>,
}

impl<P> Cx<'_, P> {
    #[inline]
    pub fn drop(&mut self, pkt: Packet<P>, cause: DropCause) {
        match cause {
            DropCause::Overflow => self.counters.drops_overflow += 1,
            DropCause::Aqm => self.counters.drops_aqm += 1,
            DropCause::Random => self.counters.drops_random += 1,
            DropCause::Policer => self.counters.drops_policer += 1,
        }
        self.out.drop(pkt, cause);
    }

    /// Mark CE instead of dropping if `ecn` and the packet is ECN-capable;
    /// returns the packet if it must still be dropped.
    #[inline]
    pub fn mark_or_drop(&mut self, ecn: bool, mut pkt: Packet<P>) -> Option<Packet<P>> {
        if ecn && pkt.mark_ce() {
            self.counters.marks_ce += 1;
            return Some(pkt);
        }
        self.drop(pkt, DropCause::Aqm);
        None
    }
}

/// A FIFO of packets with its byte count.
#[derive(Debug)]
pub struct Fifo<P> {
    q: VecDeque<Packet<P>>,
    bytes: u64,
}

impl<P> Default for Fifo<P> {
    fn default() -> Self {
        Fifo {
            q: VecDeque::new(),
            bytes: 0,
        }
    }
}

impl<P> Fifo<P> {
    #[inline]
    pub fn push(&mut self, p: Packet<P>) {
        self.bytes += p.len as u64;
        self.q.push_back(p);
    }
    #[inline]
    pub fn pop(&mut self) -> Option<Packet<P>> {
        let p = self.q.pop_front()?;
        self.bytes -= p.len as u64;
        Some(p)
    }
    pub fn remove(&mut self, i: usize) -> Option<Packet<P>> {
        let p = self.q.remove(i)?;
        self.bytes -= p.len as u64;
        Some(p)
    }
    #[inline]
    pub fn front_len(&self) -> Option<u32> {
        self.q.front().map(|p| p.len as u32)
    }
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    #[inline]
    pub fn len(&self) -> u64 {
        self.q.len() as u64
    }
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
}

/// A queue discipline with its state.
pub enum Qdisc<P> {
    Droptail(droptail::DropTail<P>),
    DropFront(drop_front::DropFront<P>),
    RandomDrop(random_drop::RandomDrop<P>),
    Red(red::Red<P>),
    Codel(codel::Codel<P>),
    FqCodel(Box<fq_codel::FqCodel<P>>),
    Pie(pie::Pie<P>),
    Step(step::Step<P>),
}

impl<P> Qdisc<P> {
    /// `origin`: the run's time zero on the model's clock (PIE's timer);
    /// `rng`: the qdisc's stream (FQ-CoDel takes its hash salt from it).
    pub fn new(cfg: &QdiscConfig, limits: Limits, origin: Ns, rng: &mut Rng) -> Qdisc<P> {
        match cfg {
            QdiscConfig::Droptail {} => Qdisc::Droptail(droptail::DropTail::new(limits)),
            QdiscConfig::DropFront {} => Qdisc::DropFront(drop_front::DropFront::new(limits)),
            QdiscConfig::RandomDrop {} => Qdisc::RandomDrop(random_drop::RandomDrop::new(limits)),
            QdiscConfig::Red(c) => Qdisc::Red(red::Red::new(c.clone(), limits)),
            QdiscConfig::Codel(c) => Qdisc::Codel(codel::Codel::new(c.clone(), limits)),
            QdiscConfig::FqCodel(c) => Qdisc::FqCodel(Box::new(fq_codel::FqCodel::new(
                c.clone(),
                limits,
                rng.next_u64(),
            ))),
            QdiscConfig::Pie(c) => Qdisc::Pie(pie::Pie::new(c.clone(), limits, origin)),
            QdiscConfig::Step(c) => Qdisc::Step(step::Step::new(c.clone(), limits)),
        }
    }

    /// A packet arrives (its `enqueued` time is set). It is queued, marked,
    /// or dropped through `cx` — possibly together with packets already
    /// waiting (drop-front, random-drop, FQ-CoDel's fat-flow drop).
    #[inline]
    pub fn enqueue(&mut self, pkt: Packet<P>, cx: &mut Cx<P>) {
        match self {
            Qdisc::Droptail(q) => q.enqueue(pkt, cx),
            Qdisc::DropFront(q) => q.enqueue(pkt, cx),
            Qdisc::RandomDrop(q) => q.enqueue(pkt, cx),
            Qdisc::Red(q) => q.enqueue(pkt, cx),
            Qdisc::Codel(q) => q.enqueue(pkt, cx),
            Qdisc::FqCodel(q) => q.enqueue(pkt, cx),
            Qdisc::Pie(q) => q.enqueue(pkt, cx),
            Qdisc::Step(q) => q.enqueue(pkt, cx),
        }
    }

    /// The link is ready to send: the next packet, if any (an AQM may drop
    /// or mark packets on the way). Called also when the queue is empty,
    /// as a device asks its qdisc whenever it can send.
    #[inline]
    pub fn dequeue(&mut self, cx: &mut Cx<P>) -> Option<Packet<P>> {
        match self {
            Qdisc::Droptail(q) => q.dequeue(),
            Qdisc::DropFront(q) => q.dequeue(),
            Qdisc::RandomDrop(q) => q.dequeue(),
            Qdisc::Red(q) => q.dequeue(cx),
            Qdisc::Codel(q) => q.dequeue(cx),
            Qdisc::FqCodel(q) => q.dequeue(cx),
            Qdisc::Pie(q) => q.dequeue(cx),
            Qdisc::Step(q) => q.dequeue(),
        }
    }

    /// Length of the packet `dequeue` would return, when that is known
    /// without dequeuing (plain FIFOs). `None` for CoDel and FQ-CoDel, whose
    /// dequeue may drop first; a trace link then dequeues and holds the
    /// packet, as Linux's `qdisc_peek_dequeued` does.
    #[inline]
    pub fn peek_len(&self) -> Option<u32> {
        match self {
            Qdisc::Droptail(q) => q.fifo.front_len(),
            Qdisc::DropFront(q) => q.fifo.front_len(),
            Qdisc::RandomDrop(q) => q.fifo.front_len(),
            Qdisc::Red(q) => q.fifo.front_len(),
            Qdisc::Pie(q) => q.fifo.front_len(),
            Qdisc::Step(q) => q.fifo.front_len(),
            Qdisc::Codel(_) | Qdisc::FqCodel(_) => None,
        }
    }

    /// Bytes waiting.
    #[inline]
    pub fn backlog_bytes(&self) -> u64 {
        match self {
            Qdisc::Droptail(q) => q.fifo.bytes(),
            Qdisc::DropFront(q) => q.fifo.bytes(),
            Qdisc::RandomDrop(q) => q.fifo.bytes(),
            Qdisc::Red(q) => q.fifo.bytes(),
            Qdisc::Codel(q) => q.fifo.bytes(),
            Qdisc::FqCodel(q) => q.bytes(),
            Qdisc::Pie(q) => q.fifo.bytes(),
            Qdisc::Step(q) => q.fifo.bytes(),
        }
    }

    /// Packets waiting.
    #[inline]
    pub fn backlog_packets(&self) -> u64 {
        match self {
            Qdisc::Droptail(q) => q.fifo.len(),
            Qdisc::DropFront(q) => q.fifo.len(),
            Qdisc::RandomDrop(q) => q.fifo.len(),
            Qdisc::Red(q) => q.fifo.len(),
            Qdisc::Codel(q) => q.fifo.len(),
            Qdisc::FqCodel(q) => q.packets(),
            Qdisc::Pie(q) => q.fifo.len(),
            Qdisc::Step(q) => q.fifo.len(),
        }
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Driving a discipline by hand in unit tests.
    use super::*;

    pub struct Harness<P> {
        pub q: Qdisc<P>,
        pub rng: Rng,
        pub counters: Counters,
        pub out: Vec<Out<P>>,
    }

    impl<P> Harness<P> {
        pub fn new(cfg: &QdiscConfig, limits: Limits) -> Self {
            let mut rng = Rng::new(1, crate::STREAM_QDISC);
            let q = Qdisc::new(cfg, limits, 0, &mut rng);
            Harness {
                q,
                rng,
                counters: Counters::default(),
                out: vec![],
            }
        }
        pub fn enqueue(&mut self, now: Ns, mut pkt: Packet<P>) {
            pkt.enqueued = now;
            let mut cx = Cx {
                now,
                rng: &mut self.rng,
                counters: &mut self.counters,
                out: &mut self.out,
            };
            self.q.enqueue(pkt, &mut cx);
        }
        pub fn dequeue(&mut self, now: Ns) -> Option<Packet<P>> {
            let mut cx = Cx {
                now,
                rng: &mut self.rng,
                counters: &mut self.counters,
                out: &mut self.out,
            };
            self.q.dequeue(&mut cx)
        }
        /// Drops so far (payloads), and clears them.
        pub fn take_drops(&mut self) -> Vec<(P, DropCause)> {
            self.out
                .drain(..)
                .filter_map(|o| match o {
                    Out::Drop { pkt, cause } => Some((pkt.data, cause)),
                    _ => None,
                })
                .collect()
        }
    }

    pub fn pkt(flow: u32, len: u32, id: u32) -> Packet<u32> {
        Packet::new(flow, len, false, id)
    }
    pub fn ect(flow: u32, len: u32, id: u32) -> Packet<u32> {
        Packet::new(flow, len, true, id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ir_form_of_each_kind_round_trips_and_rejects_unknown_fields() {
        for text in [
            r#"{"kind":"droptail"}"#,
            r#"{"kind":"drop_front"}"#,
            r#"{"kind":"random_drop"}"#,
            r#"{"kind":"codel","target_ns":5000000,"interval_ns":100000000,"mtu_bytes":1500,"ecn":false}"#,
        ] {
            let c: QdiscConfig = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&c).unwrap(), text);
        }
        for bad in [
            r#"{"kind":"droptail","limit":3}"#,
            r#"{"kind":"codel","target_ns":5000000,"interval_ns":100000000,"mtu_bytes":1500,"ecn":false,"x":1}"#,
            r#"{"kind":"codel","target_ns":5000000}"#,
            r#"{"kind":"sfq"}"#,
        ] {
            assert!(serde_json::from_str::<QdiscConfig>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn limits_count_bytes_and_packets() {
        let l = Limits {
            bytes: Some(3000),
            packets: Some(3),
        };
        assert!(l.admits(1500, 1, 1500));
        assert!(!l.admits(1500, 1, 1501));
        assert!(!l.admits(0, 3, 10));
        assert!(l.exceeded(3001, 1) && l.exceeded(0, 4) && !l.exceeded(3000, 3));
    }
}
