//! The deterministic event queue. Events pop in (time, scheduling order):
//! events at equal times pop in the order they were pushed — except
//! `Sample`, which pops after every other event at its time: a sample at t
//! describes the interval (t_prev, t], everything that happens at t included
//! (docs/record.md; the emulator samples the same way).
//!
//! The queue is a hierarchical timing wheel with nanosecond resolution
//! (11 levels of 64 slots; level l holds events whose time first differs
//! from the wheel's current time in bits 6l…6l+5), so pushing and popping
//! cost the same whether 3 or 30 000 events wait: no comparison between
//! pending events, where the binary heap it replaced sifted through
//! log₂(pending) levels per operation (3 per flow pending: 15 levels at
//! 10 000 flows). Each slot is a FIFO and no sequence number is stored:
//!
//! * a level-0 slot holds events of one single time, in push order;
//! * all pending events whose times share a slot's range sit together in
//!   one slot (the one the highest bit in which they differ from the
//!   current time selects); when the current time reaches a higher-level
//!   slot, the slot is moved whole, in order, into the lower levels, which
//!   hold nothing of that range yet — events pushed later land behind them.
//!
//! So every slot is in push order and popping level 0 front to back gives
//! exactly the (time, push order) order of a heap keyed by (time, sequence)
//! (`tests::matches_a_heap_on_random_operations` checks it against one). An
//! event alone in the earliest slot pops straight from it (the common case
//! when events are sparse); otherwise the slot moves down. `Sample` events
//! wait in their own small heap and win only a strictly earlier time. New
//! event variants need nothing here.
//!
//! Events are nodes of one slab linked into their slot's FIFO and reused
//! through a free list, and a slot is 16 bytes (its first and last node, its earliest time), so
//! a run with one flow touches about as many cache lines as the heap did:
//! 256-slot levels of growable vectors cost the same instructions but three
//! times the L1 misses (callgrind's cache model), which made the one-flow
//! cases ~15 % slower. Measured (docs/performance.md): ~100 instructions per
//! event at any number of flows, where the heap took ~440 with 100 flows
//! pending and ~620 with 10 000.
//!
//! The queue stays small: links are FIFO, so packets in flight on a link
//! wait in the link's own queue and only the head of each link has an event
//! here (see [`crate::pipe::Pipe`]); timers are one wake-up per flow.

use crate::time::Time;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What happens when an event fires.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The head of flow f's access line (its own forward delay) reaches the
    /// first link of its path.
    Access(u32),
    /// Link k's next action: a serialization ends, a trace delivery
    /// opportunity, the end of an outage (link schedules live in the link model).
    Bottleneck(u32),
    /// The head of link k's propagation line reaches the link's far end.
    Propagation(u32),
    /// The head of flow f's return line (its own return delay) reaches its
    /// sender, or the first link of its `ack_path`.
    AckPath(u32),
    /// Flow f has a timer due (RTO, TLP, RACK reorder, pacing, delayed ACK, start).
    Wake(u32),
    /// Take a sample of every flow and the link.
    Sample,
}

/// Bits of time per level: 64 slots.
const BITS: u32 = 6;
const SLOTS: usize = 1 << BITS;
const MASK: u64 = SLOTS as u64 - 1;
/// 11 × 6 bits: every u64 time has a level.
const LEVELS: usize = 64_usize.div_ceil(BITS as usize);

/// Which of a level's 64 slots hold events.
#[derive(Default, Clone, Copy)]
struct Bitmap(u64);

impl Bitmap {
    #[inline(always)]
    fn set(&mut self, s: usize) {
        self.0 |= 1 << s;
    }
    #[inline(always)]
    fn clear(&mut self, s: usize) {
        self.0 &= !(1 << s);
    }
    #[inline(always)]
    fn any(&self) -> bool {
        self.0 != 0
    }
    /// The lowest occupied slot (call only if `any`).
    #[inline(always)]
    fn first(&self) -> usize {
        self.0.trailing_zeros() as usize
    }
}

/// "No node".
const NIL: u32 = u32::MAX;

/// A pending event in the node slab, linked to the next one of its slot.
#[derive(Copy, Clone)]
struct Node {
    t: u64,
    ev: Event,
    next: u32,
}

/// A FIFO of nodes: first and last (`NIL` when empty), and the earliest
/// time among them (kept as nodes are appended: on a level above 0 the
/// slot's nodes have different times and the queue needs their minimum at
/// every pop; walking the slot for it touched every node, a cache miss each
/// with 10 000 flows' events in the slab).
#[derive(Copy, Clone)]
struct Slot {
    head: u32,
    tail: u32,
    min: u64,
}

const EMPTY: Slot = Slot { head: NIL, tail: NIL, min: u64::MAX };

/// The timing wheel (events other than `Sample`). Events live in one slab
/// of nodes, reused through a free list (so a few pending events stay in a
/// few cache lines); a slot is 16 bytes, a level 1 kB.
struct Wheel {
    /// No pending event is earlier; level-0 events share all but the low 8 bits with it.
    cur: u64,
    /// Level l's slots (level 0: one per nanosecond of the current 256-ns block).
    slots: Box<[[Slot; SLOTS]; LEVELS]>,
    occupied: [Bitmap; LEVELS],
    /// Bit l set: level l (≥ 1) holds events.
    levels_occupied: u32,
    nodes: Vec<Node>,
    /// First free node (`NIL`: none).
    free: u32,
    len: usize,
}

/// Where the earliest pending event is: level 0's slot, or a higher level's slot.
#[derive(Copy, Clone)]
enum Next {
    L0(usize),
    Up(usize, usize),
}

impl Wheel {
    fn new() -> Wheel {
        Wheel {
            cur: 0,
            slots: Box::new([[EMPTY; SLOTS]; LEVELS]),
            occupied: [Bitmap::default(); LEVELS],
            levels_occupied: 0,
            nodes: Vec::new(),
            free: NIL,
            len: 0,
        }
    }

    #[inline(always)]
    fn push(&mut self, t: u64, ev: Event) {
        debug_assert!(t >= self.cur);
        self.len += 1;
        let i = if self.free != NIL {
            let i = self.free;
            self.free = self.nodes[i as usize].next;
            self.nodes[i as usize] = Node { t, ev, next: NIL };
            i
        } else {
            self.nodes.push(Node { t, ev, next: NIL });
            (self.nodes.len() - 1) as u32
        };
        self.place(i, t);
    }

    /// Append node `i` (time `t` ≥ `cur`, `next` = NIL) to the slot its highest
    /// bit differing from `cur` selects.
    #[inline(always)]
    fn place(&mut self, i: u32, t: u64) {
        let x = t ^ self.cur;
        let (l, s) = if x <= MASK {
            (0, (t & MASK) as usize)
        } else {
            let l = ((63 - x.leading_zeros()) / BITS) as usize;
            (l, ((t >> (BITS * l as u32)) & MASK) as usize)
        };
        let slot = &mut self.slots[l][s];
        if slot.head == NIL {
            slot.head = i;
            self.occupied[l].set(s);
            if l > 0 {
                self.levels_occupied |= 1 << l;
            }
        } else {
            self.nodes[slot.tail as usize].next = i;
        }
        slot.tail = i;
        slot.min = slot.min.min(t);
    }

    /// The slot of the earliest pending event and its time.
    #[inline(always)]
    fn next(&self) -> Option<(Next, u64)> {
        if self.occupied[0].any() {
            let s = self.occupied[0].first();
            return Some((Next::L0(s), (self.cur & !MASK) | s as u64));
        }
        if self.levels_occupied == 0 {
            return None;
        }
        let l = self.levels_occupied.trailing_zeros() as usize;
        let s = self.occupied[l].first();
        Some((Next::Up(l, s), self.slots[l][s].min))
    }

    /// An event among the next to pop (the head of the earliest occupied
    /// slot): a hint for prefetching, not necessarily the very next one.
    #[inline(always)]
    fn peek_event(&self) -> Option<Event> {
        let (l, s) = if self.occupied[0].any() {
            (0, self.occupied[0].first())
        } else if self.levels_occupied != 0 {
            let l = self.levels_occupied.trailing_zeros() as usize;
            (l, self.occupied[l].first())
        } else {
            return None;
        };
        Some(self.nodes[self.slots[l][s].head as usize].ev)
    }

    #[inline(always)]
    fn peek(&self) -> Option<u64> {
        self.next().map(|(_, t)| t)
    }

    /// Free node `i`, returning its event.
    #[inline(always)]
    fn release(&mut self, i: u32) -> Event {
        let n = &mut self.nodes[i as usize];
        n.next = self.free;
        self.free = i;
        n.ev
    }

    /// Pop the earliest event if its time is at most `limit`.
    #[inline(always)]
    fn pop_at_most(&mut self, limit: u64) -> Option<(u64, Event)> {
        let (mut at, t) = self.next()?;
        if t > limit {
            return None;
        }
        self.len -= 1;
        loop {
            match at {
                Next::L0(s) => {
                    self.cur = (self.cur & !MASK) | s as u64;
                    let slot = &mut self.slots[0][s];
                    let i = slot.head;
                    slot.head = self.nodes[i as usize].next;
                    if slot.head == NIL {
                        *slot = EMPTY;
                        self.occupied[0].clear(s);
                    }
                    return Some((t, self.release(i)));
                }
                Next::Up(l, s) => {
                    // The current time moves to the slot's earliest event.
                    self.cur = t;
                    let mut i = std::mem::replace(&mut self.slots[l][s], EMPTY).head;
                    self.occupied[l].clear(s);
                    if !self.occupied[l].any() {
                        self.levels_occupied &= !(1 << l);
                    }
                    if self.nodes[i as usize].next == NIL {
                        // alone in its slot: it is the next event (the common case of sparse times)
                        return Some((t, self.release(i)));
                    }
                    // Move the slot down, in order; its earliest events land on level 0.
                    while i != NIL {
                        let n = &mut self.nodes[i as usize];
                        let (next, ti) = (n.next, n.t);
                        n.next = NIL;
                        self.place(i, ti);
                        i = next;
                    }
                    at = Next::L0((t & MASK) as usize);
                }
            }
        }
    }
}

pub struct EventQueue {
    wheel: Wheel,
    /// `Sample` events: (time, sequence), earliest first.
    last: BinaryHeap<Reverse<(Time, u64)>>,
    seq: u64,
    now: Time,
}

impl Default for EventQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl EventQueue {
    pub fn new() -> Self {
        EventQueue { wheel: Wheel::new(), last: BinaryHeap::new(), seq: 0, now: Time::ZERO }
    }
    /// Schedule `event` at `time` (never in the past).
    #[inline(always)]
    pub fn push(&mut self, time: Time, event: Event) {
        assert!(time >= self.now, "event scheduled in the past: {} < {}", time.0, self.now.0);
        if matches!(event, Event::Sample) {
            self.seq += 1;
            self.last.push(Reverse((time, self.seq)));
        } else {
            self.wheel.push(time.0, event);
        }
    }
    /// Pop the earliest event; time never goes backwards.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        self.pop_until(Time::NEVER)
    }
    /// Pop the earliest event if it is due at or before `end`.
    #[inline]
    pub fn pop_until(&mut self, end: Time) -> Option<(Time, Event)> {
        // a Sample pops after every other event at its time
        let ts = self.last.peek().map_or(Time::NEVER, |r| r.0 .0);
        if let Some((t, ev)) = self.wheel.pop_at_most(ts.min(end).0) {
            debug_assert!(t >= self.now.0);
            self.now = Time(t);
            return Some((self.now, ev));
        }
        if ts > end {
            return None;
        }
        let Reverse((ts, _)) = self.last.pop()?;
        self.now = ts;
        Some((ts, Event::Sample))
    }
    #[inline]
    pub fn peek_time(&mut self) -> Option<Time> {
        let tw = self.wheel.peek().map(Time);
        let ts = self.last.peek().map(|r| r.0 .0);
        match (tw, ts) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
    /// One of the events that pop next (a prefetching hint; `Sample`s aside).
    #[inline(always)]
    pub fn peek_event(&self) -> Option<Event> {
        self.wheel.peek_event()
    }
    pub fn now(&self) -> Time {
        self.now
    }
    pub fn len(&self) -> usize {
        self.wheel.len + self.last.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn pops_in_time_order() {
        let mut q = EventQueue::new();
        q.push(Time(30), Event::Sample);
        q.push(Time(10), Event::Bottleneck(0));
        q.push(Time(20), Event::Propagation(0));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(t, _)| t.0).collect();
        assert_eq!(order, vec![10, 20, 30]);
    }

    #[test]
    fn equal_times_pop_fifo() {
        // Ties are broken by insertion order so runs are deterministic.
        let mut q = EventQueue::new();
        for f in 0..100 {
            q.push(Time(5), Event::Wake(f));
        }
        for f in 0..100 {
            assert_eq!(q.pop(), Some((Time(5), Event::Wake(f))));
        }
        assert!(q.pop().is_none());
    }

    #[test]
    fn a_sample_pops_after_everything_else_at_its_time() {
        let mut q = EventQueue::new();
        q.push(Time(10), Event::Sample);
        q.push(Time(10), Event::Bottleneck(0));
        q.push(Time(5), Event::Wake(0));
        q.push(Time(10), Event::Propagation(0));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, vec![Event::Wake(0), Event::Bottleneck(0), Event::Propagation(0), Event::Sample]);
    }

    #[test]
    fn now_follows_popped_events() {
        let mut q = EventQueue::new();
        q.push(Time(7), Event::Sample);
        q.pop();
        assert_eq!(q.now(), Time(7));
        q.push(Time(7), Event::Sample); // same time is allowed
        assert_eq!(q.pop().unwrap().0, Time(7));
    }

    #[test]
    fn far_and_near_times_on_every_level() {
        // Times whose highest bit differing from now is on each of the 8 levels,
        // pushed in reverse, plus the largest time there is.
        let mut q = EventQueue::new();
        let times: Vec<u64> = (0..64).map(|b| 1u64 << b).chain([u64::MAX, 0, 3, 255, 256, 257]).collect();
        for &t in times.iter().rev() {
            q.push(Time(t), Event::Wake(t as u32));
        }
        let mut sorted = times.clone();
        sorted.sort();
        let got: Vec<u64> = std::iter::from_fn(|| q.pop()).map(|(t, _)| t.0).collect();
        assert_eq!(got, sorted);
        assert!(q.is_empty());
    }

    #[test]
    #[should_panic(expected = "in the past")]
    fn pushing_into_the_past_is_refused() {
        let mut q = EventQueue::new();
        q.push(Time(1000), Event::Bottleneck(0));
        q.pop();
        q.push(Time(999), Event::Bottleneck(0));
    }

    /// The reference: a binary heap keyed by (time, sequence), `Sample`'s
    /// sequence with the top bit set (the engine's queue before the wheel).
    #[derive(Default)]
    struct HeapQueue {
        heap: BinaryHeap<Reverse<(u64, u64, u32)>>,
        seq: u64,
    }

    impl HeapQueue {
        fn push(&mut self, t: u64, ev: Event) {
            self.seq += 1;
            let seq = if ev == Event::Sample { self.seq | 1 << 63 } else { self.seq };
            self.heap.push(Reverse((t, seq, encode(ev))));
        }
        fn pop(&mut self) -> Option<(u64, Event)> {
            self.heap.pop().map(|Reverse((t, _, e))| (t, decode(e)))
        }
    }

    fn encode(ev: Event) -> u32 {
        match ev {
            Event::Wake(f) => f,
            Event::Sample => u32::MAX,
            _ => unreachable!(),
        }
    }
    fn decode(e: u32) -> Event {
        if e == u32::MAX {
            Event::Sample
        } else {
            Event::Wake(e)
        }
    }

    /// An operation: pop, or push an event `delay` after now — delays drawn
    /// to hit equal times, every level and level boundaries.
    #[derive(Debug, Clone)]
    enum Op {
        Pop,
        /// `pop_until(now + horizon)`
        PopUntil(u64),
        Push { delay: u64, sample: bool },
    }

    fn op() -> impl Strategy<Value = Op> {
        let delay = prop_oneof![
            Just(0u64),
            0u64..4,
            0u64..300,
            0u64..70_000,
            0u64..20_000_000,
            (0u32..64).prop_map(|b| 1u64 << b),
            (1u32..8).prop_map(|l| (1u64 << (8 * l)) - 1),
            0u64..(1 << 40),
        ];
        let horizon = prop_oneof![Just(0u64), 0u64..300, 0u64..100_000];
        prop_oneof![
            2 => Just(Op::Pop),
            1 => horizon.prop_map(Op::PopUntil),
            3 => (delay, prop::bool::weighted(0.05)).prop_map(|(delay, sample)| Op::Push { delay, sample }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]
        #[test]
        fn matches_a_heap_on_random_operations(ops in prop::collection::vec(op(), 1..600), peek_every in 1usize..5) {
            let (mut q, mut h) = (EventQueue::new(), HeapQueue::default());
            let mut id = 0;
            for (i, op) in ops.iter().enumerate() {
                match *op {
                    Op::Pop => {
                        let want = h.pop();
                        if i % peek_every == 0 {
                            prop_assert_eq!(q.peek_time().map(|t| t.0), want.map(|w| w.0));
                        }
                        prop_assert_eq!(q.pop().map(|(t, e)| (t.0, e)), want);
                    }
                    Op::PopUntil(horizon) => {
                        let end = q.now().0.saturating_add(horizon);
                        let due = h.heap.peek().is_some_and(|Reverse((t, _, _))| *t <= end);
                        let want = if due { h.pop() } else { None };
                        prop_assert_eq!(q.pop_until(Time(end)).map(|(t, e)| (t.0, e)), want);
                    }
                    Op::Push { delay, sample } => {
                        let t = q.now().0.saturating_add(delay);
                        let ev = if sample { Event::Sample } else { id += 1; Event::Wake(id) };
                        q.push(Time(t), ev);
                        h.push(t, ev);
                    }
                }
                prop_assert_eq!(q.len(), h.heap.len());
            }
            while let Some(want) = h.pop() {
                prop_assert_eq!(q.pop().map(|(t, e)| (t.0, e)), Some(want));
            }
            prop_assert!(q.pop().is_none());
        }
    }
}
