//! A FIFO delay line: packets enter with an exit time and leave in order.
//!
//! Every link in the dumbbell has a constant (or only-growing-in-order) delay,
//! so its packets leave in the order they entered. Only the head needs an
//! event in the global queue, which keeps the heap O(links), not O(packets in
//! flight) — the per-packet cost does not grow with the bandwidth-delay product.

use crate::time::Time;
use std::collections::VecDeque;

pub struct Pipe<T> {
    q: VecDeque<(Time, T)>,
    last_exit: Time,
}

impl<T> Default for Pipe<T> {
    fn default() -> Self {
        Pipe { q: VecDeque::new(), last_exit: Time::ZERO }
    }
}

impl<T> Pipe<T> {
    /// Enqueue `item` to leave at `exit` (or right after the previous item if
    /// that is later: a delay decrease never reorders packets). Returns true
    /// if the pipe was empty, i.e. the caller must schedule an event at the
    /// returned head time.
    #[inline]
    pub fn push(&mut self, exit: Time, item: T) -> bool {
        let exit = exit.max(self.last_exit);
        self.last_exit = exit;
        self.q.push_back((exit, item));
        self.q.len() == 1
    }
    /// Pop the head if it is due at `now`.
    #[inline]
    pub fn pop_due(&mut self, now: Time) -> Option<T> {
        match self.q.front() {
            Some((t, _)) if *t <= now => self.q.pop_front().map(|(_, x)| x),
            _ => None,
        }
    }
    /// Prefetch hint: the entry that leaves next.
    #[inline(always)]
    pub fn prefetch_head(&self) {
        if let Some(e) = self.q.front() {
            crate::prefetch::value(e);
        }
    }
    /// Prefetch hint: where the next entry goes (just after the last one;
    /// past the end of the ring buffer the hint is merely useless).
    #[inline(always)]
    pub fn prefetch_tail(&self) {
        if let Some(e) = self.q.back() {
            let p = e as *const (Time, T) as *const u8;
            crate::prefetch::range(p, p.wrapping_add(2 * std::mem::size_of::<(Time, T)>()));
        }
    }
    /// The item that leaves next.
    #[inline]
    pub fn head(&self) -> Option<&T> {
        self.q.front().map(|(_, x)| x)
    }
    #[inline]
    pub fn head_time(&self) -> Option<Time> {
        self.q.front().map(|(t, _)| *t)
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.q.len()
    }
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_and_due_times() {
        let mut p = Pipe::default();
        assert!(p.push(Time(10), 'a'));
        assert!(!p.push(Time(12), 'b'));
        assert_eq!(p.pop_due(Time(9)), None);
        assert_eq!(p.pop_due(Time(10)), Some('a'));
        assert_eq!(p.head_time(), Some(Time(12)));
    }

    #[test]
    fn delay_decrease_does_not_reorder() {
        let mut p = Pipe::default();
        p.push(Time(100), 1);
        p.push(Time(50), 2); // delay dropped: still leaves after 1
        assert_eq!(p.pop_due(Time(100)), Some(1));
        assert_eq!(p.pop_due(Time(100)), Some(2));
    }
}
