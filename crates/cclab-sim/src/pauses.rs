//! Host pauses: stretches of time in which a test bed's hosts do nothing.
//!
//! A CPU is now and then busy elsewhere for a fraction of a millisecond to
//! several milliseconds — the guest kernel's own work, or a virtual
//! machine's host taking the vCPU away; on the project's 2-vCPU AMD VM a
//! pinned busy loop saw 3.5 such gaps a second over both vCPUs (0.3 to 3
//! per vCPU in two measurements), most of them 0.8–1 ms, some 2–8 ms
//! (docs/validation.md §4, "Host pauses"). Whatever the stalled vCPU was
//! doing — the emulator reading the sender's packets, the sender's stack
//! taking in ACKs — stops, and what piled up meanwhile goes on at the end
//! of the pause, back to back: an ACK-clocked train leaves as a burst.
//! Per-packet jitter (`jitter.rs`) cannot express this: a pause is an
//! interval of time, the same for every packet that falls into it, and
//! pauses come at a rate in time, not per packet.
//!
//! The model: pauses start at the instants of a renewal process whose gaps
//! (from the end of one pause to the start of the next) and durations are
//! drawn from quantile tables (the IR's `host.pauses`, built by the front
//! end: an exponential for the gaps, the measured durations); a data packet
//! reaching the bottleneck or an ACK reaching its sender during a pause
//! does so at the pause's end instead, in order. One process serves every
//! flow (the hosts share the machine). The pauses are drawn from their own
//! seeded stream ahead of time as far as the run asks, so they do not
//! depend on the traffic, and every draw is integer arithmetic
//! ([`Jitter::sample`]).

use crate::jitter::Jitter;
use crate::rng::Rng;
use crate::time::Time;

pub struct Pauses {
    gaps: Jitter,
    durations: Jitter,
    rng: Rng,
    /// Pauses `[start, end)` drawn so far and not yet over at the last
    /// query's `now`, earliest first.
    spans: std::collections::VecDeque<(u64, u64)>,
    /// The end of the last pause drawn.
    horizon: u64,
}

impl Pauses {
    /// `None` when both tables are empty (no pauses).
    pub fn new(gaps_ns: &[u64], durations_ns: &[u64], rng: Rng) -> Result<Option<Pauses>, String> {
        if gaps_ns.is_empty() && durations_ns.is_empty() {
            return Ok(None);
        }
        let gaps = Jitter::new(gaps_ns, "host.pauses.gaps_ns")?;
        let durations = Jitter::new(durations_ns, "host.pauses.durations_ns")?;
        let (Some(gaps), Some(durations)) = (gaps, durations) else {
            return Err("host.pauses needs both gaps_ns and durations_ns".into());
        };
        if gaps_ns.iter().all(|&g| g == 0) && durations_ns.iter().any(|&d| d > 0) {
            return Err(
                "host.pauses.gaps_ns must not be all zero (the hosts would never run)".into(),
            );
        }
        Ok(Some(Pauses {
            gaps,
            durations,
            rng,
            spans: Default::default(),
            horizon: 0,
        }))
    }

    /// When something due at `t` (≥ `now`) happens: at `t`, or at the end
    /// of the pause `t` falls into. Monotone in `t`, so FIFO lines stay FIFO.
    #[inline]
    pub fn release(&mut self, now: Time, t: Time) -> Time {
        while self.spans.front().is_some_and(|&(_, e)| e <= now.0) {
            self.spans.pop_front();
        }
        while self.horizon <= t.0 {
            let start = self.horizon.saturating_add(self.gaps.sample(&mut self.rng));
            let end = start.saturating_add(self.durations.sample(&mut self.rng));
            self.spans.push_back((start, end));
            self.horizon = end.max(start.saturating_add(1));
        }
        let i = self.spans.partition_point(|&(s, _)| s <= t.0);
        match i.checked_sub(1).map(|k| self.spans[k]) {
            Some((s, e)) if s <= t.0 && t.0 < e => Time(e),
            _ => t,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pauses(gaps: &[u64], durations: &[u64], seed: u64) -> Pauses {
        Pauses::new(gaps, durations, Rng::new(seed, 1))
            .unwrap()
            .unwrap()
    }

    #[test]
    fn empty_tables_are_no_pauses_and_bad_tables_are_refused() {
        assert!(Pauses::new(&[], &[], Rng::new(1, 1)).unwrap().is_none());
        assert!(Pauses::new(&[10, 20], &[], Rng::new(1, 1)).is_err());
        assert!(Pauses::new(&[20, 10], &[1, 2], Rng::new(1, 1)).is_err());
        assert!(Pauses::new(&[0, 0], &[1, 2], Rng::new(1, 1)).is_err());
    }

    #[test]
    fn times_inside_a_pause_move_to_its_end_and_others_stay() {
        // Every gap 1 000 ns, every pause 100 ns: pauses [1000, 1100), [2100, 2200), …
        let mut p = pauses(&[1000, 1000], &[100, 100], 3);
        let at = |p: &mut Pauses, t: u64| p.release(Time(0), Time(t)).0;
        assert_eq!(at(&mut p, 999), 999);
        assert_eq!(at(&mut p, 1000), 1100);
        assert_eq!(at(&mut p, 1099), 1100);
        assert_eq!(at(&mut p, 1100), 1100);
        assert_eq!(at(&mut p, 2150), 2200);
        assert_eq!(at(&mut p, 2200), 2200);
        // asked out of order, the same answers (the pauses do not depend on the queries)
        assert_eq!(at(&mut p, 1050), 1100);
        assert_eq!(at(&mut p, 5), 5);
    }

    #[test]
    fn release_is_monotone_and_the_pauses_follow_their_tables() {
        let mut p = pauses(&[0, 500_000, 2_000_000], &[100_000, 1_000_000], 9);
        let mut last = 0;
        let mut paused = 0u64;
        for t in (0..400_000_000u64).step_by(997) {
            let r = p.release(Time(t), Time(t)).0;
            assert!(r >= t && r >= last);
            if r > t {
                paused += 1;
            }
            last = r;
        }
        // linear between quantiles: mean gap (0 + 0.5) / 4 + (0.5 + 2) / 4 = 0.75 ms,
        // mean pause 0.55 ms: paused 0.55 / 1.3 of the time
        let frac = paused as f64 / (400_000_000 / 997) as f64;
        assert!((frac - 0.55 / 1.3).abs() < 0.02, "{frac}");
    }

    #[test]
    fn same_seed_same_pauses_and_queries_do_not_change_them() {
        let (mut a, mut b) = (
            pauses(&[0, 1_000_000], &[0, 500_000], 5),
            pauses(&[0, 1_000_000], &[0, 500_000], 5),
        );
        // b is asked far ahead first; both must answer alike afterwards
        b.release(Time(0), Time(50_000_000));
        for t in (0..50_000_000u64).step_by(1_231) {
            assert_eq!(a.release(Time(0), Time(t)), b.release(Time(0), Time(t)));
        }
    }
}
