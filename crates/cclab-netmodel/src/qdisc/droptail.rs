//! Drop-tail: a FIFO that drops the arriving packet when the buffer is full
//! — Linux's `bfifo` (byte limit) / `pfifo` (packet limit), net/sched/sch_fifo.c.

use super::{Cx, Fifo, Limits};
use crate::packet::{DropCause, Packet};

pub struct DropTail<P> {
    pub(crate) fifo: Fifo<P>,
    limits: Limits,
}

impl<P> DropTail<P> {
    pub fn new(limits: Limits) -> Self {
        DropTail {
            fifo: Fifo::default(),
            limits,
        }
    }

    /// Queue `pkt`, or hand it back if the buffer is full.
    #[inline]
    pub fn try_push(&mut self, pkt: Packet<P>) -> Result<(), Packet<P>> {
        if self
            .limits
            .admits(self.fifo.bytes(), self.fifo.len(), pkt.wire_len())
        {
            self.fifo.push(pkt);
            Ok(())
        } else {
            Err(pkt)
        }
    }

    #[inline]
    pub fn enqueue(&mut self, pkt: Packet<P>, cx: &mut Cx<P>) {
        if let Err(pkt) = self.try_push(pkt) {
            cx.drop(pkt, DropCause::Overflow);
        }
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
    fn byte_limit_drops_the_arriving_packet() {
        let mut h = Harness::new(
            &QdiscConfig::Droptail {},
            Limits {
                bytes: Some(3000),
                packets: None,
            },
        );
        for i in 0..3 {
            h.enqueue(0, pkt(0, 1500, i));
        }
        assert_eq!(h.take_drops(), vec![(2, DropCause::Overflow)]);
        // 3000 + 52 > 3000: even a small packet does not fit
        h.enqueue(0, pkt(0, 52, 9));
        assert_eq!(h.take_drops(), vec![(9, DropCause::Overflow)]);
        assert_eq!((h.q.backlog_bytes(), h.q.backlog_packets()), (3000, 2));
        assert_eq!(h.dequeue(1).unwrap().data, 0);
        assert_eq!(h.dequeue(1).unwrap().data, 1);
        assert!(h.dequeue(1).is_none());
        assert_eq!(h.counters.drops_overflow, 2);
    }

    #[test]
    fn packet_limit_drops_the_arriving_packet() {
        let mut h = Harness::new(
            &QdiscConfig::Droptail {},
            Limits {
                bytes: None,
                packets: Some(2),
            },
        );
        for i in 0..4 {
            h.enqueue(0, pkt(0, 100, i));
        }
        assert_eq!(
            h.take_drops(),
            vec![(2, DropCause::Overflow), (3, DropCause::Overflow)]
        );
    }
}
