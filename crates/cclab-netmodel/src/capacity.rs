//! The bottleneck's capacity: a (scheduled) constant rate or a Mahimahi trace.

use crate::Ns;

/// Piecewise-constant rate: `(from, rate_bps)` steps sorted by time, the
/// first at time 0. A rate of 0 is an outage: packets wait in the queue
/// until the rate is positive again.
#[derive(Clone, Debug)]
pub struct RateSteps {
    steps: Vec<(Ns, u64)>,
}

impl RateSteps {
    pub fn new(base_bps: u64, mut changes: Vec<(Ns, u64)>) -> Self {
        changes.sort_by_key(|c| c.0);
        let mut steps = vec![(0, base_bps)];
        steps.extend(changes);
        RateSteps { steps }
    }

    /// Index of the step in force at `t`.
    #[inline]
    pub fn index_at(&self, t: Ns) -> usize {
        if self.steps.len() == 1 {
            return 0;
        }
        self.steps.partition_point(|s| s.0 <= t) - 1
    }

    #[inline]
    pub fn rate_at(&self, t: Ns) -> u64 {
        self.steps[self.index_at(t)].1
    }

    /// Mean rate over `[t0, t1)` in bit/s (the rate of the interval `(t0, t1]` a sample at `t1`
    /// describes): time-weighted over the steps in it; exactly the step's rate when none
    /// begins inside it; the rate at `t1` for an empty interval.
    pub fn mean_bps(&self, t0: Ns, t1: Ns) -> f64 {
        if t1 <= t0 {
            return self.rate_at(t1) as f64;
        }
        let mut i = self.index_at(t0);
        if self.steps.get(i + 1).map_or(true, |s| s.0 >= t1) {
            return self.steps[i].1 as f64;
        }
        let (mut t, mut bits) = (t0, 0u128);
        while t < t1 {
            let end = self.steps.get(i + 1).map_or(t1, |s| s.0.min(t1));
            bits += self.steps[i].1 as u128 * (end - t) as u128;
            t = end;
            i += 1;
        }
        bits as f64 / (t1 - t0) as f64
    }

    /// The first time ≥ `t` at which the rate is positive (None: never again).
    pub fn next_positive(&self, t: Ns) -> Option<Ns> {
        let i = self.index_at(t);
        if self.steps[i].1 > 0 {
            return Some(t);
        }
        self.steps[i + 1..].iter().find(|s| s.1 > 0).map(|s| s.0)
    }
}

/// A Mahimahi trace: delivery opportunities at `origin + k·period + opps[j]`
/// for k = 0, 1, …, each for `bytes_per_opp` bytes. Opportunities are
/// numbered globally, `g = k·n + j`, so equal times (several lines with the
/// same millisecond) are still distinct opportunities. An opportunity may
/// lie at offset `period` (Mahimahi's last line), i.e. at the same instant
/// as the next period's start.
#[derive(Clone, Debug)]
pub struct Trace {
    pub origin: Ns,
    opps: Vec<Ns>,
    period: Ns,
    pub bytes_per_opp: u32,
}

impl Trace {
    pub fn new(
        origin: Ns,
        mut opps: Vec<Ns>,
        period: Ns,
        bytes_per_opp: u32,
    ) -> Result<Self, String> {
        if opps.is_empty() || period == 0 || bytes_per_opp == 0 {
            return Err("trace: needs at least one opportunity, a positive period and bytes per opportunity".into());
        }
        opps.sort_unstable();
        if *opps.last().unwrap() > period {
            return Err("trace: an opportunity lies beyond the period".into());
        }
        Ok(Trace {
            origin,
            opps,
            period,
            bytes_per_opp,
        })
    }

    fn n(&self) -> u64 {
        self.opps.len() as u64
    }

    /// Time of global opportunity `g`.
    #[inline]
    pub fn time(&self, g: u64) -> Ns {
        self.origin + (g / self.n()) * self.period + self.opps[(g % self.n()) as usize]
    }

    /// The first opportunity at or after `t`.
    pub fn first_at_or_after(&self, t: Ns) -> u64 {
        let rel = t.saturating_sub(self.origin);
        let k = rel / self.period;
        let off = rel - k * self.period;
        if off == 0 && k > 0 {
            // the previous period's opportunities at offset `period` lie at t
            let at_end = self
                .opps
                .iter()
                .rev()
                .take_while(|&&o| o == self.period)
                .count() as u64;
            if at_end > 0 {
                return k * self.n() - at_end;
            }
        }
        k * self.n() + self.opps.partition_point(|&o| o < off) as u64
    }

    /// Number of opportunities with time ≤ `t`.
    pub fn count_upto(&self, t: Ns) -> u64 {
        if t < self.origin {
            return 0;
        }
        let rel = t - self.origin;
        let k = rel / self.period;
        k * self.n() + self.opps.partition_point(|&o| o <= rel - k * self.period) as u64
    }

    /// Mean rate of the whole trace in bit/s.
    pub fn mean_rate_bps(&self) -> u64 {
        (self.n() as u128 * self.bytes_per_opp as u128 * 8 * 1_000_000_000 / self.period as u128)
            as u64
    }

    fn bps(&self, n: u64, span: Ns) -> f64 {
        n as f64 * self.bytes_per_opp as f64 * 8.0 * 1e9 / span.max(1) as f64
    }
}

/// What serializes packets at the bottleneck.
#[derive(Clone, Debug)]
pub enum Capacity {
    Rate(RateSteps),
    Trace(Trace),
}

impl Capacity {
    /// Capacity over the sample interval `(t0, t1]` in bit/s: the mean over the
    /// interval — of the rate for a rate link (a step inside the interval, or
    /// at its end, no longer gives the whole interval the new rate: that made
    /// utilization exceed 1), of the opportunities in `(t0, t1]` for a trace.
    pub fn sample_bps(&self, t0: Ns, t1: Ns) -> f64 {
        match self {
            Capacity::Rate(r) => r.mean_bps(t0, t1),
            Capacity::Trace(tr) => {
                tr.bps(tr.count_upto(t1) - tr.count_upto(t0), t1.saturating_sub(t0))
            }
        }
    }

    /// The rate at `t` (a trace: its mean rate) — what RED's idle decay uses.
    pub fn nominal_bps(&self, t: Ns) -> u64 {
        match self {
            Capacity::Rate(r) => r.rate_at(t),
            Capacity::Trace(tr) => tr.mean_rate_bps(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_steps_switch_at_their_time() {
        let r = RateSteps::new(80, vec![(20, 160), (10, 0)]);
        assert_eq!(r.rate_at(0), 80);
        assert_eq!(r.rate_at(9), 80);
        assert_eq!(r.rate_at(10), 0);
        assert_eq!(r.rate_at(20), 160);
        assert_eq!(r.next_positive(12), Some(20));
        assert_eq!(r.next_positive(5), Some(5));
        assert_eq!(RateSteps::new(0, vec![]).next_positive(3), None);
    }

    #[test]
    fn a_sample_s_capacity_is_the_mean_rate_over_its_interval() {
        // a step 10 → … at 1.0 s; samples every 100 ms (ns)
        let ms = 1_000_000;
        let r = Capacity::Rate(RateSteps::new(100_000_000, vec![(1000 * ms, 10_000_000), (1050 * ms, 0)]));
        assert_eq!(r.sample_bps(900 * ms, 1000 * ms), 100e6); // ends at the step: the old rate
        assert_eq!(r.sample_bps(1000 * ms, 1100 * ms), 5e6); // 50 ms at 10 Mbit/s, 50 ms out
        assert_eq!(r.sample_bps(950 * ms, 1050 * ms), 55e6);
        assert_eq!(r.sample_bps(2000 * ms, 2100 * ms), 0.0);
        assert_eq!(r.sample_bps(0, 100 * ms), 100e6);
        assert_eq!(r.sample_bps(5, 5), 100e6);
    }

    #[test]
    fn trace_repeats_every_period_and_keeps_duplicates() {
        // Mahimahi lines "1 1 3" (ms): two opportunities at 1 ms, one at 3 ms; period 3 ms.
        let ms = 1_000_000;
        let t = Trace::new(100, vec![ms, ms, 3 * ms], 3 * ms, 1500).unwrap();
        assert_eq!(t.time(0), 100 + ms);
        assert_eq!(t.time(1), 100 + ms);
        assert_eq!(t.time(2), 100 + 3 * ms);
        assert_eq!(t.time(3), 100 + 4 * ms);
        assert_eq!(t.first_at_or_after(100 + ms), 0);
        assert_eq!(t.first_at_or_after(100 + ms + 1), 2);
        assert_eq!(t.first_at_or_after(0), 0);
        // the opportunity at offset = period is at the next period's start
        assert_eq!(t.first_at_or_after(100 + 3 * ms), 2);
        assert_eq!(t.first_at_or_after(100 + 3 * ms + 1), 3);
        assert_eq!(t.count_upto(100 + 3 * ms), 3);
        assert_eq!(t.count_upto(100 + 4 * ms), 5);
        // 3 opportunities × 1500 B per 3 ms = 12 Mbit/s
        let c = Capacity::Trace(t);
        assert_eq!(c.sample_bps(100, 100 + 300 * ms), 12e6);
        assert_eq!(c.nominal_bps(0), 12_000_000);
    }
}
