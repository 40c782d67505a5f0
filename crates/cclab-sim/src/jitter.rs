//! Host timing jitter: how late an end host takes in a packet.
//!
//! A real host does not process a packet at the instant it arrives: interrupt
//! coalescing, softirq scheduling, the emulator's own wake-ups (on the kernel
//! backend) make every delivery a little late, and the lateness is heavy
//! tailed (most packets a few microseconds, one in a hundred a few hundred).
//! TCP's delivery-rate samples (`tcp_rate.c`) measure intervals between ACK
//! arrivals, so this noise biases them — a sample whose interval starts at a
//! late ACK is short — and BBR's max filter keeps the high ones.
//!
//! The model: each packet reaching a host (data at the receiver, an ACK at
//! the sender) is held an extra time J drawn independently from the
//! configured distribution, and packets of one path never overtake each
//! other (FIFO: a packet behind a late one is at least as late). The
//! distribution is given as a quantile table (the IR's `host.jitter_ns`,
//! computed by the front end: docs/ir.md), its points evenly spaced in
//! probability or, for a measured histogram, at the cumulative probabilities
//! the IR gives beside it (`host.jitter_p`); sampling is integer-only, so the
//! draws are identical on every machine.

use crate::rng::Rng;

/// The distribution: quantiles at probabilities i / (len − 1), or at
/// `probs[i]` / 2³² when `probs` is given, non-decreasing, in ns; linear in
/// probability between points. Shared by every path; each path draws from
/// its own seeded stream.
#[derive(Clone, Debug)]
pub struct Jitter {
    table: Vec<u64>,
    /// Cumulative probability of each point of `table` in units of 2⁻³²
    /// (0 first, 2³² last, non-decreasing); empty: evenly spaced.
    probs: Vec<u64>,
}

/// Probability one, in the units of `Jitter::probs`.
pub const PROB_ONE: u64 = 1 << 32;

impl Jitter {
    /// `None` for an empty table (no jitter: nothing is drawn). `field`
    /// names the IR field the table came from, in the errors.
    pub fn new(table: &[u64], field: &str) -> Result<Option<Jitter>, String> {
        Jitter::with_probs(table, &[], field)
    }

    /// The same with the points' cumulative probabilities (`probs`, in units
    /// of 2⁻³²; empty: evenly spaced), as the IR gives them for a histogram
    /// (`host.jitter_p`, `host.read_delay_p`: the field's name with `_ns`
    /// replaced by `_p`, in the errors).
    pub fn with_probs(table: &[u64], probs: &[u64], field: &str) -> Result<Option<Jitter>, String> {
        let pfield = format!("{}_p", field.strip_suffix("_ns").unwrap_or(field));
        if table.is_empty() {
            if !probs.is_empty() {
                return Err(format!("{pfield} is given without {field}"));
            }
            return Ok(None);
        }
        if table.len() < 2 {
            return Err(format!("{field} needs at least two quantiles (p0 and p100)"));
        }
        if table.windows(2).any(|w| w[0] > w[1]) {
            return Err(format!("{field} must be non-decreasing"));
        }
        if !probs.is_empty() {
            if probs.len() != table.len() {
                return Err(format!("{pfield} has {} points where {field} has {}", probs.len(), table.len()));
            }
            if probs[0] != 0 || probs[probs.len() - 1] != PROB_ONE {
                return Err(format!("{pfield} must start at 0 and end at 2^32 (probability one)"));
            }
            if probs.windows(2).any(|w| w[0] > w[1]) {
                return Err(format!("{pfield} must be non-decreasing"));
            }
        }
        Ok(Some(Jitter {
            table: table.to_vec(),
            probs: probs.to_vec(),
        }))
    }

    /// One draw from `rng`: the inverse CDF at a uniform point, linear
    /// between quantiles.
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        if !self.probs.is_empty() {
            return self.sample_at(rng.next_u32() as u64);
        }
        let n = (self.table.len() - 1) as u64;
        let x = rng.next_u32() as u64 * n; // 32.32 fixed point in [0, n)
        self.lerp((x >> 32) as usize, x & 0xffff_ffff)
    }

    /// `table[i]` plus `frac` / 2³² of the way to `table[i + 1]`.
    #[inline]
    fn lerp(&self, i: usize, frac: u64) -> u64 {
        let (lo, hi) = (self.table[i], self.table[i + 1]);
        lo + (((hi - lo) as u128 * frac as u128) >> 32) as u64
    }

    /// The inverse CDF at `u` / 2³² for a table with `probs`: the interval
    /// [probs[k], probs[k + 1]) holding `u` (empty intervals — bins nobody
    /// fell into — hold none), linear inside it.
    fn sample_at(&self, u: u64) -> u64 {
        // probs[0] = 0 ≤ u < 2³² = probs[last], so 1 ≤ idx ≤ last
        let k = self.probs.partition_point(|&p| p <= u) - 1;
        let (p0, p1) = (self.probs[k], self.probs[k + 1]);
        self.lerp(k, ((u - p0) << 32) / (p1 - p0)) // u − p0 < p1 − p0 ≤ 2³²: < 2³², no overflow
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_table_is_no_jitter_and_bad_tables_are_refused() {
        assert!(Jitter::new(&[], "t").unwrap().is_none());
        assert!(Jitter::new(&[5], "t").is_err());
        assert!(Jitter::new(&[5, 4], "t").is_err());
        let e = Jitter::new(&[5], "host.read_delay_ns").err().unwrap();
        assert!(e.starts_with("host.read_delay_ns needs at least two quantiles"), "{e}");
    }

    /// 200 000 draws (all asserted below 1000 ns): the fraction below 10 ns and the mean of the rest.
    fn below_10_and_upper_mean(j: &Jitter, seed: u64, stream: u64) -> (f64, f64) {
        let mut rng = Rng::new(seed, stream);
        let n = 200_000;
        let draws: Vec<u64> = (0..n).map(|_| j.sample(&mut rng)).collect();
        assert!(draws.iter().all(|&d| d < 1000));
        let below = draws.iter().filter(|&&d| d < 10).count() as f64 / n as f64;
        let upper: Vec<u64> = draws.iter().copied().filter(|&d| d >= 10).collect();
        (below, upper.iter().sum::<u64>() as f64 / upper.len() as f64)
    }

    #[test]
    fn draws_follow_the_quantile_table() {
        // Quantiles 0, 10, 1000 at p = 0, ½, 1: half the draws below 10 ns,
        // the upper half spread uniformly over (10, 1000).
        let j = Jitter::new(&[0, 10, 1000], "t").unwrap().unwrap();
        let (below, mean) = below_10_and_upper_mean(&j, 7, 3);
        assert!((below - 0.5).abs() < 0.005, "{below}");
        assert!((mean - 505.0).abs() < 5.0, "{mean}");
    }

    #[test]
    fn a_table_with_probabilities_follows_them_and_skips_empty_intervals() {
        // points 0, 10, 10, 1000 ns at p = 0, 0.9, 0.9, 1 (a histogram whose
        // middle bin is empty): 90 % of draws in [0, 10), 10 % in [10, 1000)
        let p = |x: f64| (x * PROB_ONE as f64) as u64;
        let j = Jitter::with_probs(&[0, 10, 10, 1000], &[0, p(0.9), p(0.9), PROB_ONE], "t_ns").unwrap().unwrap();
        let (below, mean) = below_10_and_upper_mean(&j, 5, 1);
        assert!((below - 0.9).abs() < 0.004, "{below}");
        assert!((mean - 505.0).abs() < 10.0, "{mean}");
        // the interval ends exactly
        assert_eq!(j.sample_at(0), 0);
        assert_eq!(j.sample_at(p(0.9)), 10);
        assert_eq!(j.sample_at(PROB_ONE - 1), 999);
    }

    #[test]
    fn bad_probabilities_are_refused_naming_their_field() {
        let one = PROB_ONE;
        for (probs, what) in [
            (vec![0, one], "has 2 points where t_ns has 3"),
            (vec![1, 5, one], "must start at 0 and end at 2^32"),
            (vec![0, 5, one - 1], "must start at 0 and end at 2^32"),
            (vec![9, 5, one], "must start at 0 and end at 2^32"),
            (vec![0, 9, 5], "must start at 0 and end at 2^32"),
        ] {
            let e = Jitter::with_probs(&[0, 1, 2], &probs, "t_ns").err().unwrap();
            assert!(e.starts_with("t_p ") && e.contains(what), "{e}");
        }
        let e = Jitter::with_probs(&[0, 1, 2, 3], &[0, 9, 5, one], "t_ns").err().unwrap();
        assert_eq!(e, "t_p must be non-decreasing");
        let e = Jitter::with_probs(&[], &[0, one], "host.read_delay_ns").err().unwrap();
        assert_eq!(e, "host.read_delay_p is given without host.read_delay_ns");
        // evenly spaced tables draw as before: `new` is `with_probs` without probabilities
        let (a, b) = (Jitter::new(&[0, 3, 9, 400], "t").unwrap().unwrap(), Jitter::with_probs(&[0, 3, 9, 400], &[], "t").unwrap().unwrap());
        let (mut r1, mut r2) = (Rng::new(3, 9), Rng::new(3, 9));
        assert!((0..100).all(|_| a.sample(&mut r1) == b.sample(&mut r2)));
    }

    #[test]
    fn same_seed_same_draws() {
        let t = [0, 3, 9, 400];
        let j = Jitter::new(&t, "t").unwrap().unwrap();
        let (mut a, mut b) = (Rng::new(3, 9), Rng::new(3, 9));
        assert!((0..100).all(|_| j.sample(&mut a) == j.sample(&mut b)));
    }
}
