//! Drop-front-on-full: when the buffer is full, drop from the head of the
//! queue until the arriving packet fits, then queue it — Linux's
//! `pfifo_head_drop` (net/sched/sch_fifo.c), generalised to byte limits.
//! The oldest packet goes, so the sender learns of the congestion one queue
//! delay earlier than with drop-tail (Lakshman, Neidhardt & Ott, "The Drop
//! from Front Strategy in TCP and in TCP over ATM", INFOCOM 1996).

use super::{Cx, Fifo, Limits};
use crate::packet::{DropCause, Packet};

pub struct DropFront<P> {
    pub(crate) fifo: Fifo<P>,
    limits: Limits,
}

impl<P> DropFront<P> {
    pub fn new(limits: Limits) -> Self {
        DropFront {
            fifo: Fifo::default(),
            limits,
        }
    }

    pub fn enqueue(&mut self, pkt: Packet<P>, cx: &mut Cx<P>) {
        while !self
            .limits
            .admits(self.fifo.bytes(), self.fifo.len(), pkt.wire_len())
        {
            match self.fifo.pop() {
                Some(head) => cx.drop(head, DropCause::Overflow),
                None => {
                    // larger than the whole buffer
                    cx.drop(pkt, DropCause::Overflow);
                    return;
                }
            }
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
    fn full_queue_drops_the_oldest_and_keeps_the_newest() {
        let mut h = Harness::new(
            &QdiscConfig::DropFront {},
            Limits {
                bytes: None,
                packets: Some(3),
            },
        );
        for i in 0..5 {
            h.enqueue(i as u64, pkt(0, 1500, i));
        }
        assert_eq!(
            h.take_drops(),
            vec![(0, DropCause::Overflow), (1, DropCause::Overflow)]
        );
        let left: Vec<u32> = std::iter::from_fn(|| h.dequeue(9))
            .map(|p| p.data)
            .collect();
        assert_eq!(left, vec![2, 3, 4]);
    }

    #[test]
    fn byte_limit_drops_as_many_heads_as_needed() {
        let mut h = Harness::new(
            &QdiscConfig::DropFront {},
            Limits {
                bytes: Some(3000),
                packets: None,
            },
        );
        h.enqueue(0, pkt(0, 1000, 0));
        h.enqueue(0, pkt(0, 1000, 1));
        h.enqueue(0, pkt(0, 1000, 2));
        h.enqueue(0, pkt(0, 1500, 3)); // needs 1500 free: drops 0 and 1
        assert_eq!(
            h.take_drops(),
            vec![(0, DropCause::Overflow), (1, DropCause::Overflow)]
        );
        assert_eq!(h.q.backlog_bytes(), 2500);
        h.enqueue(0, pkt(0, 4000, 4)); // never fits: the queue is emptied, then it goes too
        assert_eq!(h.take_drops().len(), 3);
        assert_eq!(h.q.backlog_packets(), 0);
    }
}
