//! Step marking: a FIFO that marks every ECN-capable packet CE when it
//! arrives to a queue longer than a threshold K — the switch configuration
//! DCTCP assumes (RFC 8257 §3.1: "mark arriving packets with CE if the
//! instantaneous queue length is greater than K"; Alizadeh et al., "Data
//! Center TCP", SIGCOMM 2010, §3.1). Linux gets the same from `sch_red`
//! with min = max = K, probability 1 and `ecn` (avg = instantaneous with
//! `Wlog` 0); cclab has it as its own discipline.
//!
//! * the queue compared with K is the one the packet joins (waiting bytes or
//!   packets, not counting the arriving packet);
//! * above K, an ECT packet is marked and queued; a not-ECT packet is
//!   dropped (`drops_aqm`; RFC 3168 §5: marking replaces a drop) — and with
//!   `ecn = false` every packet above K is dropped (a step dropper);
//! * the buffer is the hard limit, as for every discipline.

use super::{Cx, Fifo, Limits};
use crate::packet::{DropCause, Packet};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StepConfig {
    /// K in bytes (exactly one of `k_bytes`, `k_packets`).
    pub k_bytes: Option<u64>,
    /// K in packets.
    pub k_packets: Option<u64>,
    pub ecn: bool,
}

impl StepConfig {
    pub fn validate(&self) -> Result<(), String> {
        match (self.k_bytes, self.k_packets) {
            (Some(_), None) | (None, Some(_)) => Ok(()),
            _ => Err("step: exactly one of k_bytes and k_packets must be given".into()),
        }
    }
}

pub struct Step<P> {
    pub(crate) fifo: Fifo<P>,
    cfg: StepConfig,
    limits: Limits,
}

impl<P> Step<P> {
    pub fn new(cfg: StepConfig, limits: Limits) -> Self {
        Step {
            fifo: Fifo::default(),
            cfg,
            limits,
        }
    }

    #[inline]
    fn above_k(&self) -> bool {
        match (self.cfg.k_bytes, self.cfg.k_packets) {
            (Some(k), _) => self.fifo.bytes() > k,
            (None, Some(k)) => self.fifo.len() > k,
            (None, None) => false,
        }
    }

    #[inline]
    pub fn enqueue(&mut self, pkt: Packet<P>, cx: &mut Cx<P>) {
        if !self
            .limits
            .admits(self.fifo.bytes(), self.fifo.len(), pkt.wire_len())
        {
            cx.drop(pkt, DropCause::Overflow);
            return;
        }
        let pkt = if self.above_k() {
            match cx.mark_or_drop(self.cfg.ecn, pkt) {
                Some(p) => p,
                None => return,
            }
        } else {
            pkt
        };
        self.fifo.push(pkt);
    }

    #[inline]
    pub fn dequeue(&mut self) -> Option<Packet<P>> {
        self.fifo.pop()
    }
}

#[cfg(test)]
mod tests {
    use super::StepConfig;
    use crate::packet::DropCause;
    use crate::qdisc::testutil::*;
    use crate::qdisc::{Limits, QdiscConfig};

    fn step(k_bytes: Option<u64>, k_packets: Option<u64>, ecn: bool) -> QdiscConfig {
        QdiscConfig::Step(StepConfig {
            k_bytes,
            k_packets,
            ecn,
        })
    }

    #[test]
    fn marks_ect_packets_arriving_above_k_and_drops_not_ect_ones() {
        let limits = Limits {
            bytes: Some(15_000),
            packets: None,
        };
        let mut h = Harness::new(&step(Some(3000), None, true), limits);
        // 0, 1500, 3000 bytes waiting: not above K — no mark.
        for i in 0..3 {
            h.enqueue(0, ect(0, 1500, i));
        }
        assert_eq!(h.counters.marks_ce, 0);
        // 4500 > 3000: marked (ECT) or dropped (not ECT).
        h.enqueue(0, ect(0, 1500, 3));
        h.enqueue(0, pkt(1, 1500, 4));
        assert_eq!(h.counters.marks_ce, 1);
        assert_eq!(h.take_drops(), vec![(4, DropCause::Aqm)]);
        // The buffer still binds: 10 packets fill 15 000 bytes.
        for i in 5..20 {
            h.enqueue(0, ect(0, 1500, i));
        }
        assert_eq!(h.q.backlog_packets(), 10);
        assert_eq!(h.counters.drops_overflow, 9);
        assert_eq!(h.counters.marks_ce, 7);
        let marked: Vec<bool> = (0..10).map(|_| h.dequeue(1).unwrap().ce).collect();
        assert_eq!(
            marked,
            [false, false, false, true, true, true, true, true, true, true]
        );
        // Drained below K: no marks again.
        h.enqueue(2, ect(0, 1500, 30));
        assert!(!h.dequeue(2).unwrap().ce);
    }

    #[test]
    fn packet_threshold_and_step_dropping() {
        let limits = Limits {
            bytes: None,
            packets: Some(100),
        };
        let mut h = Harness::new(&step(None, Some(2), false), limits);
        for i in 0..5 {
            h.enqueue(0, ect(0, 100, i));
        }
        // 3 admitted (0, 1, 2 waiting ≤ K), then 3 waiting > 2: dropped even if ECT.
        assert_eq!(h.q.backlog_packets(), 3);
        assert_eq!(h.counters.drops_aqm, 2);
        assert_eq!(h.counters.marks_ce, 0);
        assert!(StepConfig {
            k_bytes: None,
            k_packets: None,
            ecn: true
        }
        .validate()
        .is_err());
        assert!(StepConfig {
            k_bytes: Some(1),
            k_packets: Some(1),
            ecn: true
        }
        .validate()
        .is_err());
    }
}
