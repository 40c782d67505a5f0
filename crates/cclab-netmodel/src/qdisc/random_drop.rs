//! Random-drop-on-full: when the buffer is full, drop a waiting packet
//! chosen uniformly at random (repeatedly, until the arriving packet fits),
//! then queue the arriving one — RFC 2309 §3 ("Random drop on full";
//! Hashem, "Analysis of random drop for gateway congestion control", MIT
//! LCS TR-465, 1989). A flow's share of the drops follows its share of the
//! queue. The choice uses the qdisc's random stream.

use super::{Cx, Fifo, Limits};
use crate::packet::{DropCause, Packet};

pub struct RandomDrop<P> {
    pub(crate) fifo: Fifo<P>,
    limits: Limits,
}

impl<P> RandomDrop<P> {
    pub fn new(limits: Limits) -> Self {
        RandomDrop {
            fifo: Fifo::default(),
            limits,
        }
    }

    pub fn enqueue(&mut self, pkt: Packet<P>, cx: &mut Cx<P>) {
        while !self
            .limits
            .admits(self.fifo.bytes(), self.fifo.len(), pkt.wire_len())
        {
            if self.fifo.is_empty() {
                cx.drop(pkt, DropCause::Overflow);
                return;
            }
            let i = cx.rng.below(self.fifo.len() as u32) as usize;
            let victim = self.fifo.remove(i).expect("index below the length");
            cx.drop(victim, DropCause::Overflow);
        }
        self.fifo.push(pkt);
    }

    #[inline]
    pub fn dequeue(&mut self) -> Option<Packet<P>> {
        self.fifo.pop()
    }
}

#[cfg(test)]
mod tests {
    use crate::packet::DropCause;
    use crate::qdisc::testutil::*;
    use crate::qdisc::{Limits, QdiscConfig};

    #[test]
    fn victims_are_spread_uniformly_over_the_queue() {
        // A full 10-packet queue; each arrival evicts one waiting packet.
        // Over many rounds every position is hit about equally often.
        let mut h = Harness::new(
            &QdiscConfig::RandomDrop {},
            Limits {
                bytes: None,
                packets: Some(10),
            },
        );
        let mut hits = [0u32; 10];
        for round in 0..20_000u32 {
            for i in 0..10 {
                h.enqueue(0, pkt(0, 100, i));
            }
            h.take_drops();
            h.enqueue(0, pkt(0, 100, 99));
            let d = h.take_drops();
            assert_eq!(d.len(), 1, "round {round}");
            assert_eq!(d[0].1, DropCause::Overflow);
            hits[d[0].0 as usize] += 1;
            while h.dequeue(0).is_some() {}
        }
        // Binomial(20000, 0.1): sd ≈ 42; ±250 is about 6 sd.
        for (i, &n) in hits.iter().enumerate() {
            assert!((n as i64 - 2000).abs() < 250, "position {i}: {n}");
        }
        // the arriving packet is always kept, at the tail
        h.enqueue(0, pkt(0, 100, 7));
        assert_eq!(h.q.backlog_packets(), 1);
    }
}
