//! A compact log-linear histogram of non-negative integers (nanoseconds):
//! the per-packet distributions of the run record (docs/record.md,
//! "Distributions") — the queueing delay of every packet that leaves the
//! bottleneck, the RTT sample of every ACK.
//!
//! Layout (as HdrHistogram's, with 2^[`SUB_BITS`] sub-buckets): values below
//! 2·[`SUB`] have a bin of their own (exact); above, every octave
//! [2^e, 2^(e+1)) is split into [`SUB`] equal bins, so a bin's width is at
//! most 1/[`SUB`] (0.78 %) of the values in it. A percentile read from the
//! histogram is therefore exact to its bin, whatever the number of samples,
//! and the mean is exact (the sum is kept). Bin `b` holds the values
//! `lower(b) ≤ v < lower(b) + width(b)`; `cclab.metrics` computes the same
//! edges from the bin index.
//!
//! Storage is one counter per bin between the lowest and the highest bin
//! seen (an RTT distribution spans a few octaves: a few hundred counters).

/// log2 of the sub-buckets per octave.
pub const SUB_BITS: u32 = 7;
/// Sub-buckets per octave (relative bin width ≤ 1/SUB).
pub const SUB: u64 = 1 << SUB_BITS;

/// The bin of value `v`.
#[inline(always)]
pub fn bin_of(v: u64) -> u32 {
    if v < 2 * SUB {
        v as u32
    } else {
        let e = 63 - v.leading_zeros(); // the highest set bit, ≥ SUB_BITS + 1
        let shift = e - SUB_BITS;
        shift * SUB as u32 + (v >> shift) as u32
    }
}

/// The smallest value in bin `b`.
pub fn bin_lower(b: u32) -> u64 {
    if (b as u64) < 2 * SUB {
        b as u64
    } else {
        let shift = b / SUB as u32 - 1;
        ((b - shift * SUB as u32) as u64) << shift
    }
}

/// How many values bin `b` holds.
pub fn bin_width(b: u32) -> u64 {
    if (b as u64) < 2 * SUB {
        1
    } else {
        1 << (b / SUB as u32 - 1)
    }
}

/// Counts of values per bin, with the exact count, sum, minimum and maximum.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogHist {
    /// Bin index of `counts[0]`.
    first: u32,
    counts: Vec<u64>,
    pub n: u64,
    pub sum: u128,
    pub min: u64,
    pub max: u64,
}

impl LogHist {
    pub fn new() -> LogHist {
        LogHist::default()
    }

    #[inline]
    pub fn record(&mut self, v: u64) {
        let b = bin_of(v);
        if self.counts.is_empty() {
            self.first = b;
            self.counts.push(0);
            self.min = v;
            self.max = v;
        } else if b < self.first {
            let grow = (self.first - b) as usize;
            self.counts.splice(0..0, std::iter::repeat_n(0, grow));
            self.first = b;
        } else if (b - self.first) as usize >= self.counts.len() {
            self.counts.resize((b - self.first) as usize + 1, 0);
        }
        self.counts[(b - self.first) as usize] += 1;
        self.n += 1;
        self.sum += v as u128;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Add every value of `o` (the histogram of both sets of values; the
    /// simulator merges its links' sojourn histograms in a topology).
    pub fn merge(&mut self, o: &LogHist) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = o.clone();
            return;
        }
        let first = self.first.min(o.first);
        let last = (self.first + self.counts.len() as u32).max(o.first + o.counts.len() as u32);
        let mut counts = vec![0u64; (last - first) as usize];
        for (b, c) in self.bins().chain(o.bins()) {
            counts[(b - first) as usize] += c;
        }
        self.first = first;
        self.counts = counts;
        self.n += o.n;
        self.sum += o.sum;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }

    /// `(bin, count)` of every non-empty bin, in increasing order.
    pub fn bins(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(move |(i, &c)| (self.first + i as u32, c))
    }

    /// The value of nearest rank ⌈q·n⌉ (0 < q ≤ 1), as the middle of its bin
    /// (exact for bins of width 1); None when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (b, c) in self.bins() {
            seen += c;
            if seen >= rank {
                return Some(bin_lower(b) as f64 + (bin_width(b) - 1) as f64 / 2.0);
            }
        }
        None
    }
}

/// A histogram that counts only values recorded at times `t` with
/// `from < t ≤ to` (the measure window, docs/record.md's convention for
/// which interval an event belongs to).
#[derive(Clone, Debug, Default)]
pub struct WindowHist {
    pub from: u64,
    pub to: u64,
    pub hist: LogHist,
}

impl WindowHist {
    /// Counts nothing until [`Self::set_window`].
    pub fn new() -> WindowHist {
        WindowHist {
            from: u64::MAX,
            to: 0,
            hist: LogHist::new(),
        }
    }
    pub fn set_window(&mut self, from: u64, to: u64) {
        self.from = from;
        self.to = to;
    }
    #[inline(always)]
    pub fn record_at(&mut self, t: u64, v: u64) {
        if t > self.from && t <= self.to {
            self.hist.record(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_two_histograms_equals_recording_both_sets() {
        let (mut a, mut b, mut both) = (LogHist::new(), LogHist::new(), LogHist::new());
        for v in [3u64, 900, 17, 5_000_000] {
            a.record(v);
            both.record(v);
        }
        for v in [1u64, 900, 70_000] {
            b.record(v);
            both.record(v);
        }
        a.merge(&b);
        assert_eq!(a, both);
        let mut empty = LogHist::new();
        empty.merge(&both);
        assert_eq!(empty, both);
    }

    #[test]
    fn bins_tile_the_integers_with_bounded_relative_width() {
        let mut prev_end = 0u64;
        let last = bin_of(u64::MAX);
        assert_eq!(last, 58 * SUB as u32 - 1); // shift 56, mantissa 255
        for b in 0..=last {
            let lo = bin_lower(b);
            assert_eq!(
                lo,
                prev_end,
                "bin {b} starts where bin {} ends",
                b.wrapping_sub(1)
            );
            let w = bin_width(b);
            assert!(
                w == 1 || (w as f64) / (lo as f64) <= 1.0 / SUB as f64 + 1e-12,
                "bin {b}: width {w} at {lo}"
            );
            assert_eq!(bin_of(lo), b);
            assert_eq!(bin_of(lo + (w - 1)), b);
            prev_end = lo.wrapping_add(w);
        }
        assert_eq!(prev_end, 0, "the last bin ends at 2^64");
    }

    #[test]
    fn quantiles_are_exact_to_a_bin() {
        let mut h = LogHist::new();
        for v in 1..=1000u64 {
            h.record(v * 1_000_000); // 1 ms … 1 s
        }
        assert_eq!(h.n, 1000);
        assert_eq!(h.min, 1_000_000);
        assert_eq!(h.max, 1_000_000_000);
        assert_eq!(h.sum, (1..=1000u128).sum::<u128>() * 1_000_000);
        for (q, exact) in [(0.5, 500e6), (0.99, 990e6), (0.01, 10e6), (1.0, 1000e6)] {
            let got = h.quantile(q).unwrap();
            assert!(
                (got - exact).abs() <= exact / SUB as f64,
                "q={q}: {got} vs {exact}"
            );
        }
        // small values are exact
        let mut s = LogHist::new();
        for v in [3u64, 1, 2, 200, 7] {
            s.record(v);
        }
        assert_eq!(s.quantile(0.5), Some(3.0));
        assert_eq!(s.quantile(1.0), Some(200.0));
        assert_eq!(
            s.bins().collect::<Vec<_>>(),
            vec![(1, 1), (2, 1), (3, 1), (7, 1), (200, 1)]
        );
    }

    #[test]
    fn window_counts_only_inside() {
        let mut w = WindowHist::new();
        w.record_at(5, 1);
        assert!(w.hist.is_empty());
        w.set_window(10, 20);
        for t in [10, 11, 20, 21] {
            w.record_at(t, t);
        }
        assert_eq!(w.hist.n, 2);
        assert_eq!((w.hist.min, w.hist.max), (11, 20));
    }
}
