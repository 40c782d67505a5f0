//! The bottleneck's capacity: a (scheduled) constant rate or a Mahimahi trace.

use super::Ns;

/// Piecewise-constant rate: `(from, rate_bps)` steps sorted by time, the
/// first at time 0. Times are on the model's clock.
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

    fn index_at(&self, t: Ns) -> usize {
        self.steps.partition_point(|s| s.0 <= t) - 1
    }

    pub fn rate_at(&self, t: Ns) -> u64 {
        self.steps[self.index_at(t)].1
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
/// same millisecond) are still distinct opportunities.
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
    pub fn time(&self, g: u64) -> Ns {
        self.origin + (g / self.n()) * self.period + self.opps[(g % self.n()) as usize]
    }

    /// The first opportunity at or after `t`.
    pub fn first_at_or_after(&self, t: Ns) -> u64 {
        let rel = t.saturating_sub(self.origin);
        let k = rel / self.period;
        let j = self.opps.partition_point(|&o| o < rel - k * self.period) as u64;
        k * self.n() + j
    }

    /// Number of opportunities with time ≤ `t` (since the origin).
    pub fn count_upto(&self, t: Ns) -> u64 {
        if t < self.origin {
            return 0;
        }
        let rel = t - self.origin;
        let k = rel / self.period;
        k * self.n() + self.opps.partition_point(|&o| o <= rel - k * self.period) as u64
    }

    /// Mean capacity over `(t0, t1]` in bit/s.
    pub fn mean_bps(&self, t0: Ns, t1: Ns) -> u64 {
        if t1 <= t0 {
            return 0;
        }
        let n = self.count_upto(t1) - self.count_upto(t0);
        ((n as u128 * self.bytes_per_opp as u128 * 8 * 1_000_000_000) / (t1 - t0) as u128) as u64
    }
}

/// What serializes packets at the bottleneck.
#[derive(Clone, Debug)]
pub enum Capacity {
    Rate(RateSteps),
    Trace(Trace),
}

impl Capacity {
    /// Capacity reported for the sample interval `(t0, t1]`: the rate at
    /// `t1` for a rate link, the mean over the interval for a trace.
    pub fn sample_bps(&self, t0: Ns, t1: Ns) -> u64 {
        match self {
            Capacity::Rate(r) => r.rate_at(t1),
            Capacity::Trace(tr) => tr.mean_bps(t0, t1),
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
        assert_eq!(t.count_upto(100 + 3 * ms), 3);
        assert_eq!(t.count_upto(100 + 4 * ms), 5);
        // 3 opportunities × 1500 B per 3 ms = 12 Mbit/s
        assert_eq!(t.mean_bps(100, 100 + 300 * ms), 12_000_000);
    }
}
