//! The TCP receiver: cumulative ACK + SACK blocks, delayed ACKs as Linux does.
//!
//! Linux (net/ipv4/tcp_input.c `__tcp_ack_snd_check`): ACK at once when more
//! than one full segment is unacknowledged (i.e. every second segment), in
//! quick-ack mode (the first `TCP_MAX_QUICKACKS` = 16 segments of a
//! connection), and for out-of-order data or data that fills a hole;
//! otherwise arm the delayed-ACK timer (`TCP_DELACK_MIN` = 40 ms).
//! SACK blocks follow RFC 2018 §4: the first block holds the most recently
//! received segment, then the most recently reported other blocks; at most 3
//! blocks fit beside the timestamp option Linux sends.

use crate::time::{Dur, Time};

/// `TCP_MAX_QUICKACKS` (include/net/tcp.h).
pub const MAX_QUICKACKS: u32 = 16;
/// `TCP_DELACK_MIN` (include/net/tcp.h): HZ/25 = 40 ms.
pub const DELACK_MIN: Dur = Dur::from_ms(40);
/// SACK blocks per ACK with the timestamp option (RFC 2018 §3, 40-byte option space).
pub const MAX_SACK_BLOCKS: usize = 3;

/// An ACK as the sender sees it (segment-numbered).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Ack {
    /// Next segment expected (cumulative).
    pub cum: u32,
    pub n_sacks: u8,
    pub sacks: [(u32, u32); MAX_SACK_BLOCKS],
}

impl Ack {
    pub fn sacks(&self) -> &[(u32, u32)] {
        &self.sacks[..self.n_sacks as usize]
    }
}

#[derive(Clone, Debug)]
pub struct Receiver {
    /// Next in-order segment expected (`rcv_nxt`).
    pub rcv_nxt: u32,
    /// Out-of-order ranges held [start, end), sorted, disjoint, all > rcv_nxt.
    ooo: Vec<(u32, u32)>,
    /// SACK blocks in RFC 2018 recency order.
    recent: Vec<(u32, u32)>,
    /// In-order segments received since the last ACK.
    unacked: u32,
    quickacks: u32,
    /// Delayed-ACK deadline, if armed.
    pub delack_at: Option<Time>,
    /// Segments received (incl. duplicates) — for conservation checks.
    pub segments_received: u64,
}

impl Default for Receiver {
    fn default() -> Self {
        Receiver {
            rcv_nxt: 0,
            ooo: Vec::new(),
            recent: Vec::new(),
            unacked: 0,
            quickacks: MAX_QUICKACKS,
            delack_at: None,
            segments_received: 0,
        }
    }
}

impl Receiver {
    /// Segment `seq` arrives. Returns an ACK to send now, or `None` (delayed).
    pub fn on_segment(&mut self, now: Time, seq: u32) -> Option<Ack> {
        self.segments_received += 1;
        if seq < self.rcv_nxt || self.ooo_contains(seq) {
            // Duplicate: ACK at once (Linux sends a D-SACK; we send a plain ACK).
            return Some(self.make_ack());
        }
        if seq == self.rcv_nxt {
            self.rcv_nxt += 1;
            let had_holes = !self.ooo.is_empty();
            // Pull in any out-of-order range now contiguous.
            if let Some(&(s, e)) = self.ooo.first() {
                if s == self.rcv_nxt {
                    self.rcv_nxt = e;
                    self.ooo.remove(0);
                }
            }
            self.recent.retain(|&(_, e)| e > self.rcv_nxt);
            self.unacked += 1;
            // Filling a hole, quick-ack mode, or a second full segment: ACK now.
            if had_holes || self.quickacks > 0 || self.unacked >= 2 {
                self.quickacks = self.quickacks.saturating_sub(1);
                return Some(self.make_ack());
            }
            if self.delack_at.is_none() {
                self.delack_at = Some(now + DELACK_MIN);
            }
            return None;
        }
        // Out of order: insert, merge, and ACK at once with SACK.
        let block = self.insert_ooo(seq);
        self.recent.retain(|&(s, e)| !(block.0 <= s && e <= block.1));
        self.recent.insert(0, block);
        self.recent.truncate(4);
        Some(self.make_ack())
    }

    /// The delayed-ACK timer fired.
    pub fn on_delack_timer(&mut self, now: Time) -> Option<Ack> {
        match self.delack_at {
            Some(t) if t <= now => Some(self.make_ack()),
            _ => None,
        }
    }

    fn insert_ooo(&mut self, seq: u32) -> (u32, u32) {
        let i = self.ooo.partition_point(|&(_, e)| e < seq);
        // ooo[i] is the first range ending at or after seq.
        if i < self.ooo.len() && self.ooo[i].1 == seq {
            self.ooo[i].1 += 1;
            if i + 1 < self.ooo.len() && self.ooo[i + 1].0 == seq + 1 {
                self.ooo[i].1 = self.ooo[i + 1].1;
                self.ooo.remove(i + 1);
            }
        } else if i < self.ooo.len() && self.ooo[i].0 == seq + 1 {
            self.ooo[i].0 = seq;
        } else {
            self.ooo.insert(i, (seq, seq + 1));
        }
        self.ooo[i]
    }

    fn make_ack(&mut self) -> Ack {
        self.unacked = 0;
        self.delack_at = None;
        let mut ack = Ack { cum: self.rcv_nxt, ..Default::default() };
        // Refresh each reported block to the current extent of its range.
        let mut n = 0;
        for &(s, _) in &self.recent {
            if n == MAX_SACK_BLOCKS {
                break;
            }
            if let Some(r) = self.ooo_range_of(s) {
                if !ack.sacks[..n].contains(&r) {
                    ack.sacks[n] = r;
                    n += 1;
                }
            }
        }
        ack.n_sacks = n as u8;
        ack
    }

    /// The held out-of-order range containing `seq` (binary search: `ooo` is sorted).
    fn ooo_range_of(&self, seq: u32) -> Option<(u32, u32)> {
        let i = self.ooo.partition_point(|&(_, e)| e <= seq);
        self.ooo.get(i).copied().filter(|&(s, _)| s <= seq)
    }

    fn ooo_contains(&self, seq: u32) -> bool {
        self.ooo_range_of(seq).is_some()
    }

    pub fn has_holes(&self) -> bool {
        !self.ooo.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn past_quickack(r: &mut Receiver) {
        r.quickacks = 0;
    }

    #[test]
    fn quickack_at_start_then_every_second_segment() {
        let mut r = Receiver::default();
        // The first 16 segments are each ACKed at once (Linux quick-ack mode).
        for s in 0..MAX_QUICKACKS {
            assert_eq!(r.on_segment(Time(0), s).map(|a| a.cum), Some(s + 1));
        }
        // Then every second full segment.
        assert_eq!(r.on_segment(Time(1), 16), None);
        assert_eq!(r.delack_at, Some(Time(1) + DELACK_MIN));
        assert_eq!(r.on_segment(Time(2), 17).map(|a| a.cum), Some(18));
        assert_eq!(r.delack_at, None);
    }

    #[test]
    fn delayed_ack_fires_after_40ms() {
        let mut r = Receiver::default();
        past_quickack(&mut r);
        assert!(r.on_segment(Time(0), 0).is_none());
        assert!(r.on_delack_timer(Time(39_999_999)).is_none());
        assert_eq!(r.on_delack_timer(Time(40_000_000)).map(|a| a.cum), Some(1));
    }

    #[test]
    fn out_of_order_acks_at_once_with_sack_most_recent_first() {
        let mut r = Receiver::default();
        past_quickack(&mut r);
        r.on_segment(Time(0), 0);
        // 1 is lost; 2, 3 arrive, then 5.
        let a = r.on_segment(Time(1), 2).unwrap();
        assert_eq!((a.cum, a.sacks()), (1, &[(2, 3)][..]));
        let a = r.on_segment(Time(2), 3).unwrap();
        assert_eq!(a.sacks(), &[(2, 4)]);
        let a = r.on_segment(Time(3), 5).unwrap();
        assert_eq!(a.sacks(), &[(5, 6), (2, 4)]);
        // Filling the hole ACKs at once; the cumulative ACK jumps over 2..4.
        let a = r.on_segment(Time(4), 1).unwrap();
        assert_eq!((a.cum, a.sacks()), (4, &[(5, 6)][..]));
        let a = r.on_segment(Time(5), 4).unwrap();
        assert_eq!((a.cum, a.n_sacks), (6, 0));
    }

    #[test]
    fn at_most_three_sack_blocks() {
        let mut r = Receiver::default();
        for s in [2, 4, 6, 8, 10] {
            r.on_segment(Time(0), s);
        }
        let a = r.on_segment(Time(0), 12).unwrap();
        assert_eq!(a.sacks(), &[(12, 13), (10, 11), (8, 9)]);
    }

    #[test]
    fn duplicate_is_acked_at_once() {
        let mut r = Receiver::default();
        past_quickack(&mut r);
        r.on_segment(Time(0), 0);
        r.on_segment(Time(0), 1);
        assert_eq!(r.on_segment(Time(0), 0).map(|a| a.cum), Some(2));
    }
}
