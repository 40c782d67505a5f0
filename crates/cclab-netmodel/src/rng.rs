//! Seeded randomness: xoshiro256++ (Blackman & Vigna, "Scrambled linear
//! pseudorandom number generators", 2018), seeded through SplitMix64 as its
//! authors recommend. Identical on every machine, and bit-for-bit the stream
//! of `rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64` (the simulator's
//! tests check this), so the simulator's loss draws did not change when the
//! link moved into this crate.

/// SplitMix64 finalizer: mixes (seed, stream) into a well-spread 64-bit
/// seed, so that streams derived from one scenario seed never collide.
pub fn mix(seed: u64, stream: u64) -> u64 {
    let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// The stream `stream` of scenario seed `seed`.
    pub fn new(seed: u64, stream: u64) -> Rng {
        Rng::seed_from_u64(mix(seed, stream))
    }

    pub fn seed_from_u64(seed: u64) -> Rng {
        let mut x = seed;
        let s = [
            splitmix64(&mut x),
            splitmix64(&mut x),
            splitmix64(&mut x),
            splitmix64(&mut x),
        ];
        Rng { s }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// The upper 32 bits of the next output (the lower bits of the ++
    /// scrambler are weaker).
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// Uniform in [0, 1) with 53 random bits.
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in [0, n).
    #[inline]
    pub fn below(&mut self, n: u32) -> u32 {
        ((self.next_u32() as u64 * n as u64) >> 32) as u32
    }

    /// True with probability `p`; draws nothing when `p` ≤ 0, so a
    /// loss-free link consumes no randomness.
    #[inline]
    pub fn bernoulli(&mut self, p: f64) -> bool {
        p > 0.0 && self.uniform() < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_other_stream_other_values() {
        let draw = |seed, stream| {
            let mut r = Rng::new(seed, stream);
            (0..8).map(|_| r.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(draw(7, 1), draw(7, 1));
        assert_ne!(draw(7, 1), draw(7, 2));
        assert_ne!(draw(7, 1), draw(8, 1));
    }

    #[test]
    fn uniform_mean_is_one_half_and_below_is_in_range() {
        let mut r = Rng::new(1, 0);
        let n = 200_000;
        let mean = (0..n).map(|_| r.uniform()).sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.005, "{mean}");
        assert!((0..10_000).all(|_| r.below(7) < 7));
    }

    #[test]
    fn bernoulli_zero_draws_nothing() {
        let mut a = Rng::new(3, 1);
        let mut b = Rng::new(3, 1);
        assert!(!a.bernoulli(0.0));
        assert_eq!(a.next_u64(), b.next_u64());
    }
}
