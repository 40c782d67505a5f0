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
//! computed by the front end: docs/ir.md); sampling is integer-only, so the
//! draws are identical on every machine.

use crate::rng::Rng;

/// The distribution: quantiles at probabilities i / (len − 1),
/// non-decreasing, in ns. Shared by every path; each path draws from its own
/// seeded stream.
#[derive(Clone, Debug)]
pub struct Jitter {
    table: Vec<u64>,
}

impl Jitter {
    /// `None` for an empty table (no jitter: nothing is drawn). `field`
    /// names the IR field the table came from, in the errors.
    pub fn new(table: &[u64], field: &str) -> Result<Option<Jitter>, String> {
        if table.is_empty() {
            return Ok(None);
        }
        if table.len() < 2 {
            return Err(format!("{field} needs at least two quantiles (p0 and p100)"));
        }
        if table.windows(2).any(|w| w[0] > w[1]) {
            return Err(format!("{field} must be non-decreasing"));
        }
        Ok(Some(Jitter {
            table: table.to_vec(),
        }))
    }

    /// One draw from `rng`: the inverse CDF at a uniform point, linear
    /// between quantiles.
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let n = (self.table.len() - 1) as u64;
        let x = rng.next_u32() as u64 * n; // 32.32 fixed point in [0, n)
        let i = (x >> 32) as usize;
        let frac = x & 0xffff_ffff;
        let (lo, hi) = (self.table[i], self.table[i + 1]);
        lo + (((hi - lo) as u128 * frac as u128) >> 32) as u64
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

    #[test]
    fn draws_follow_the_quantile_table() {
        // Quantiles 0, 10, 1000 at p = 0, ½, 1: half the draws below 10 ns,
        // the upper half spread uniformly over (10, 1000).
        let j = Jitter::new(&[0, 10, 1000], "t").unwrap().unwrap();
        let mut rng = Rng::new(7, 3);
        let n = 200_000;
        let draws: Vec<u64> = (0..n).map(|_| j.sample(&mut rng)).collect();
        let below = draws.iter().filter(|&&d| d < 10).count() as f64 / n as f64;
        assert!((below - 0.5).abs() < 0.005, "{below}");
        assert!(draws.iter().all(|&d| d < 1000));
        let upper: Vec<u64> = draws.iter().copied().filter(|&d| d >= 10).collect();
        let mean = upper.iter().sum::<u64>() as f64 / upper.len() as f64;
        assert!((mean - 505.0).abs() < 5.0, "{mean}");
    }

    #[test]
    fn same_seed_same_draws() {
        let t = [0, 3, 9, 400];
        let j = Jitter::new(&t, "t").unwrap().unwrap();
        let (mut a, mut b) = (Rng::new(3, 9), Rng::new(3, 9));
        assert!((0..100).all(|_| j.sample(&mut a) == j.sample(&mut b)));
    }
}
