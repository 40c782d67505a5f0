//! Software prefetch hints for the per-flow state of the next event.
//!
//! With thousands of flows their state does not fit the cache: every event
//! of a flow finds its sender, receiver and pipes in memory, a cache miss
//! per line, one after the other. The event loop knows (nearly always,
//! `EventQueue::peek_event`) which flow the next event is for, so while it
//! handles one event it asks the memory system for the lines the next one
//! will touch (`Sim::prefetch`): the misses overlap with useful work and
//! with each other instead of stalling one by one. A prefetch is only a
//! hint — it changes no value, so results stay byte-identical — and costs
//! a few instructions when the lines are cached already (few flows).
//!
//! The structs prefetched here keep the fields their hot paths touch
//! together (`#[repr(C)]`, hot fields first), so a hint is one contiguous
//! range of a few lines.

/// Bytes per cache line (x86-64 and most AArch64 cores).
const LINE: usize = 64;

/// Hint that the line holding `p` is needed soon.
#[inline(always)]
fn line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is a hint: it never faults and changes no state the
    // program can observe, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Hint that the bytes `[start, end)` are needed soon (every line they touch).
#[inline(always)]
pub fn range(start: *const u8, end: *const u8) {
    let mut a = start as usize & !(LINE - 1);
    while a < end as usize {
        line(a as *const u8);
        a += LINE;
    }
}

/// Hint that all of `x` is needed soon.
#[inline(always)]
pub fn value<T>(x: &T) {
    let p = x as *const T as *const u8;
    range(p, p.wrapping_add(std::mem::size_of::<T>()));
}

/// Hint that the fields from `first` up to and including `last` of one
/// `#[repr(C)]` struct are needed soon (`last` declared after `first`).
#[inline(always)]
pub fn fields<A, B>(first: &A, last: &B) {
    let end = (last as *const B as *const u8).wrapping_add(std::mem::size_of::<B>());
    range(first as *const A as *const u8, end);
}
