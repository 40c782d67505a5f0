//! CoDel — Controlled Delay (RFC 8289), as Linux codes it
//! (include/net/codel_impl.h `codel_dequeue`, net/sched/sch_codel.c).
//!
//! The queue is a FIFO; all work happens at dequeue. A packet's sojourn
//! time is now − its arrival. Once the sojourn has stayed at or above
//! `target` (5 ms, RFC 8289 §4.3) for `interval` (100 ms, §4.2) — and more
//! than one `mtu` of bytes is still waiting (§5.5 `bytes() <= MAXPACKET`,
//! Linux `params->mtu`) — CoDel enters the dropping state: it drops (or,
//! with `ecn`, marks CE) the head packet, and then one packet every
//! interval/√count (the control law, §5.6), count growing by one per
//! drop, until a sojourn below target ends the state. Re-entering soon
//! after leaving (within 16 intervals) resumes from count − lastcount
//! (§5.5). The control law uses an exact square root where Linux uses a
//! Newton iteration on a 16-bit reciprocal.
//!
//! Defaults (sch_codel.c / codel_impl.h `codel_params_init`): target 5 ms,
//! interval 100 ms, ECN off; Linux's `limit` (1000 packets) is replaced by
//! the scenario's buffer. Not modelled: `ce_threshold` (off by default).

use super::{Cx, Fifo, Limits};
use crate::packet::{DropCause, Packet};
use crate::Ns;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CodelConfig {
    pub target_ns: Ns,
    pub interval_ns: Ns,
    /// MAXPACKET: no drop while at most this many bytes wait (the link's
    /// largest packet, as Linux's `psched_mtu`).
    pub mtu_bytes: u32,
    pub ecn: bool,
}

impl CodelConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.target_ns == 0 || self.interval_ns == 0 {
            return Err("codel: target and interval must be positive".into());
        }
        Ok(())
    }
}

/// Per-queue CoDel state (RFC 8289 §5.2; Linux `struct codel_vars`).
#[derive(Clone, Debug, Default)]
pub struct CodelVars {
    /// Drops (or marks) since entering the dropping state.
    pub count: u32,
    pub lastcount: u32,
    pub dropping: bool,
    /// When the sojourn will have been above target for an interval (0: not above).
    pub first_above_time: Ns,
    /// When the next drop is due.
    pub drop_next: Ns,
}

/// Where CoDel takes packets from: a FIFO, or one FQ-CoDel flow queue.
pub trait Source<P> {
    fn pop(&mut self) -> Option<Packet<P>>;
    /// Bytes still waiting (the whole qdisc's) after the last pop.
    fn backlog(&self) -> u64;
}

/// RFC 8289 §5.6 control law: t + interval/√count.
#[inline]
pub fn control_law(t: Ns, interval: Ns, count: u32) -> Ns {
    t + (interval as f64 / (count.max(1) as f64).sqrt()) as Ns
}

/// RFC 8289 §5.5 `dodequeue`'s verdict (Linux `codel_should_drop`) for the
/// packet just popped.
fn should_drop<P>(
    v: &mut CodelVars,
    c: &CodelConfig,
    pkt: Option<&Packet<P>>,
    backlog: u64,
    now: Ns,
) -> bool {
    let Some(p) = pkt else {
        v.first_above_time = 0;
        return false;
    };
    let sojourn = now.saturating_sub(p.enqueued);
    if sojourn < c.target_ns || backlog <= c.mtu_bytes as u64 {
        v.first_above_time = 0;
        return false;
    }
    if v.first_above_time == 0 {
        v.first_above_time = now + c.interval_ns;
        false
    } else {
        now >= v.first_above_time
    }
}

/// RFC 8289 §5.5 `dequeue`, with Linux's ECN marking (codel_impl.h): the
/// packet to send, after dropping (counted `drops_aqm`) or marking what the
/// control law says.
pub fn codel_dequeue<P>(
    v: &mut CodelVars,
    c: &CodelConfig,
    src: &mut impl Source<P>,
    cx: &mut Cx<P>,
) -> Option<Packet<P>> {
    let now = cx.now;
    let mut pkt = src.pop();
    if pkt.is_none() {
        v.dropping = false;
        return None;
    }
    let drop = should_drop(v, c, pkt.as_ref(), src.backlog(), now);
    if v.dropping {
        if !drop {
            v.dropping = false;
        } else {
            while v.dropping && now >= v.drop_next {
                v.count = v.count.wrapping_add(1);
                let p = pkt.take().expect("dropping state holds a packet");
                if c.ecn && p.ect {
                    pkt = cx.mark_or_drop(true, p);
                    v.drop_next = control_law(v.drop_next, c.interval_ns, v.count);
                    return pkt;
                }
                cx.drop(p, DropCause::Aqm);
                pkt = src.pop();
                if !should_drop(v, c, pkt.as_ref(), src.backlog(), now) {
                    v.dropping = false;
                } else {
                    v.drop_next = control_law(v.drop_next, c.interval_ns, v.count);
                }
            }
        }
    } else if drop {
        let p = pkt.take().expect("a packet was popped");
        if c.ecn && p.ect {
            pkt = cx.mark_or_drop(true, p);
        } else {
            cx.drop(p, DropCause::Aqm);
            pkt = src.pop();
            should_drop(v, c, pkt.as_ref(), src.backlog(), now);
        }
        v.dropping = true;
        // If the sojourn went above target soon after it last went below,
        // start from the drop rate that controlled the queue then.
        let delta = v.count.wrapping_sub(v.lastcount);
        if delta > 1 && (now as i128 - v.drop_next as i128) < 16 * c.interval_ns as i128 {
            v.count = delta;
        } else {
            v.count = 1;
        }
        v.lastcount = v.count;
        v.drop_next = control_law(now, c.interval_ns, v.count);
    }
    pkt
}

struct FifoSource<'a, P>(&'a mut Fifo<P>);

impl<P> Source<P> for FifoSource<'_, P> {
    #[inline]
    fn pop(&mut self) -> Option<Packet<P>> {
        self.0.pop()
    }
    #[inline]
    fn backlog(&self) -> u64 {
        self.0.bytes()
    }
}

/// The CoDel qdisc (sch_codel.c): a drop-tail FIFO bounded by the buffer,
/// CoDel at its head.
pub struct Codel<P> {
    pub(crate) fifo: Fifo<P>,
    limits: Limits,
    cfg: CodelConfig,
    vars: CodelVars,
}

impl<P> Codel<P> {
    pub fn new(cfg: CodelConfig, limits: Limits) -> Self {
        Codel {
            fifo: Fifo::default(),
            limits,
            cfg,
            vars: CodelVars::default(),
        }
    }

    pub fn enqueue(&mut self, pkt: Packet<P>, cx: &mut Cx<P>) {
        if self
            .limits
            .admits(self.fifo.bytes(), self.fifo.len(), pkt.wire_len())
        {
            self.fifo.push(pkt);
        } else {
            cx.drop(pkt, DropCause::Overflow);
        }
    }

    pub fn dequeue(&mut self, cx: &mut Cx<P>) -> Option<Packet<P>> {
        codel_dequeue(
            &mut self.vars,
            &self.cfg,
            &mut FifoSource(&mut self.fifo),
            cx,
        )
    }

    pub fn vars(&self) -> &CodelVars {
        &self.vars
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::*;
    use crate::qdisc::QdiscConfig;

    const MS: Ns = 1_000_000;

    fn cfg(ecn: bool) -> QdiscConfig {
        QdiscConfig::Codel(CodelConfig {
            target_ns: 5 * MS,
            interval_ns: 100 * MS,
            mtu_bytes: 1500,
            ecn,
        })
    }

    /// A standing queue: 200 packets arrive at once, then one packet is
    /// dequeued every ms (and one arrives, so the queue stays long). Returns
    /// the times of CoDel's drops.
    fn standing_queue(ecn: bool, until: Ns) -> (Vec<Ns>, Harness<u32>) {
        let mut h = Harness::new(
            &cfg(ecn),
            Limits {
                bytes: None,
                packets: Some(10_000),
            },
        );
        for i in 0..200 {
            h.enqueue(
                0,
                if ecn {
                    ect(0, 1500, i)
                } else {
                    pkt(0, 1500, i)
                },
            );
        }
        let mut times = vec![];
        let mut t = 0;
        let mut id = 200;
        while t < until {
            t += MS;
            h.enqueue(
                t,
                if ecn {
                    ect(0, 1500, id)
                } else {
                    pkt(0, 1500, id)
                },
            );
            id += 1;
            let before = h.counters.drops_aqm + h.counters.marks_ce;
            h.dequeue(t).unwrap();
            for _ in before..h.counters.drops_aqm + h.counters.marks_ce {
                times.push(t);
            }
            h.take_drops();
        }
        (times, h)
    }

    #[test]
    fn drops_start_one_interval_after_the_sojourn_exceeds_target_then_follow_the_control_law() {
        let (times, h) = standing_queue(false, 1000 * MS);
        // The packet dequeued at k ms waited k ms: the sojourn reaches the
        // 5 ms target at 5 ms, so first_above_time = 105 ms and the dequeue
        // then drops.
        assert_eq!(times[0], 105 * MS);
        // Then one drop per interval/√count: at 205, 275.7, 333.4, 383.4 ms
        // (drop_next advances from itself), seen on the 1 ms dequeue grid.
        let gaps: Vec<Ns> = times.windows(2).map(|w| (w[1] - w[0]) / MS).collect();
        assert_eq!(&gaps[..4], &[100, 71, 58, 50]);
        assert!(h.counters.marks_ce == 0 && h.counters.drops_overflow == 0);
        // count after n drops is n: the control law's spacing shrinks as 1/√n
        let n = times.len();
        let last_gap = gaps[n - 2] as f64;
        assert!(
            (last_gap - 100.0 / ((n - 1) as f64).sqrt()).abs() <= 1.5,
            "{gaps:?}"
        );
    }

    #[test]
    fn ecn_capable_packets_are_marked_not_dropped() {
        let (times, h) = standing_queue(true, 500 * MS);
        assert_eq!(h.counters.drops_aqm, 0);
        assert_eq!(h.counters.marks_ce as usize, times.len());
        assert_eq!(times[0], 105 * MS);
    }

    #[test]
    fn a_short_queue_or_a_single_packet_is_never_dropped() {
        // Each packet waits 20 ms but it is alone in the queue (backlog after
        // dequeue ≤ MAXPACKET): CoDel must not drop (RFC 8289 §5.5).
        let mut h = Harness::new(
            &cfg(false),
            Limits {
                bytes: None,
                packets: Some(100),
            },
        );
        for k in 0..100u64 {
            h.enqueue(k * 20 * MS, pkt(0, 1500, k as u32));
            h.dequeue(k * 20 * MS + 20 * MS).unwrap();
        }
        assert_eq!(h.counters.drops_aqm, 0);
    }

    #[test]
    fn control_law_is_interval_over_sqrt_count() {
        assert_eq!(control_law(0, 100 * MS, 1), 100 * MS);
        assert_eq!(control_law(0, 100 * MS, 4), 50 * MS);
        assert_eq!(control_law(7, 100 * MS, 2), 7 + 70_710_678);
    }
}
