//! Lateness histogram: how late (ns) the emulator released packets relative
//! to when the model said they were due. 1 µs buckets up to 100 ms, one
//! overflow bucket; percentiles read from the histogram.

pub struct Lateness {
    buckets: Vec<u64>,
    count: u64,
    max_ns: u64,
    sum_ns: u128,
}

const BUCKET_NS: u64 = 1_000;
const N_BUCKETS: usize = 100_000;

impl Default for Lateness {
    fn default() -> Self {
        Lateness {
            buckets: vec![0; N_BUCKETS + 1],
            count: 0,
            max_ns: 0,
            sum_ns: 0,
        }
    }
}

impl Lateness {
    pub fn record(&mut self, late_ns: u64) {
        let b = ((late_ns / BUCKET_NS) as usize).min(N_BUCKETS);
        self.buckets[b] += 1;
        self.count += 1;
        self.max_ns = self.max_ns.max(late_ns);
        self.sum_ns += late_ns as u128;
    }

    /// Add another histogram's samples (e.g. the other direction's thread).
    pub fn merge(&mut self, o: &Lateness) {
        for (a, b) in self.buckets.iter_mut().zip(&o.buckets) {
            *a += b;
        }
        self.count += o.count;
        self.max_ns = self.max_ns.max(o.max_ns);
        self.sum_ns += o.sum_ns;
    }

    pub fn count(&self) -> u64 {
        self.count
    }
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }
    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.count as f64
        }
    }

    /// The non-empty buckets as (upper edge ns, count), ascending; the last
    /// (overflow) bucket's edge is the maximum. The whole distribution, for
    /// whoever needs more than the quantiles (docs/kernel.md, provenance).
    pub fn histogram(&self) -> Vec<(u64, u64)> {
        self.buckets
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, &n)| {
                (
                    if i == N_BUCKETS {
                        self.max_ns
                    } else {
                        (i as u64 + 1) * BUCKET_NS
                    },
                    n,
                )
            })
            .collect()
    }

    /// Upper edge of the bucket holding quantile `q` (0..1), in ns.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut acc = 0;
        for (i, &n) in self.buckets.iter().enumerate() {
            acc += n;
            if acc >= rank {
                return if i == N_BUCKETS {
                    self.max_ns
                } else {
                    ((i as u64 + 1) * BUCKET_NS).min(self.max_ns.max(1))
                };
            }
        }
        self.max_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_from_the_histogram() {
        let mut l = Lateness::default();
        for i in 0..1000u64 {
            l.record(i * 1000); // 0 .. 999 µs
        }
        assert_eq!(l.count(), 1000);
        assert!((l.quantile_ns(0.5) as i64 - 500_000).abs() <= 1000);
        assert!((l.quantile_ns(0.99) as i64 - 990_000).abs() <= 1000);
        assert_eq!(l.max_ns(), 999_000);
        l.record(10_000_000_000);
        assert_eq!(l.quantile_ns(1.0), 10_000_000_000);
        let h = l.histogram();
        assert_eq!(h.len(), 1001);
        assert_eq!(h[0], (1000, 1));
        assert_eq!(h[1000], (10_000_000_000, 1));
        assert_eq!(h.iter().map(|b| b.1).sum::<u64>(), l.count());
    }
}
