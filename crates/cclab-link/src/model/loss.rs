//! Random loss on arrival at the bottleneck (docs/ir.md "Loss").

use super::rng::Xoshiro256;
use crate::config::Loss;

#[derive(Clone, Debug)]
pub enum LossModel {
    /// Each data packet is lost independently with probability `p`.
    Bernoulli { p: f64 },
    /// Gilbert–Elliott: P(good→bad) = p, P(bad→good) = r; a packet is lost
    /// with probability 1−k in the good state and 1−h in the bad one. The
    /// packet is judged in the current state, then the chain steps once
    /// (one transition per packet, as netem's `gemodel` does).
    GilbertElliott {
        p: f64,
        r: f64,
        h: f64,
        k: f64,
        bad: bool,
    },
}

impl LossModel {
    pub fn from_config(l: &Loss) -> Self {
        match *l {
            Loss::Bernoulli { p } => LossModel::Bernoulli { p },
            Loss::GilbertElliott { p, r, h, k } => LossModel::GilbertElliott {
                p,
                r,
                h,
                k,
                bad: false,
            },
        }
    }

    /// True when this packet is lost. Draws nothing when the loss
    /// probability is zero, so a loss-free link consumes no randomness.
    pub fn lose(&mut self, rng: &mut Xoshiro256) -> bool {
        match self {
            LossModel::Bernoulli { p } => *p > 0.0 && rng.next_f64() < *p,
            LossModel::GilbertElliott { p, r, h, k, bad } => {
                let p_loss = if *bad { 1.0 - *h } else { 1.0 - *k };
                let lost = p_loss > 0.0 && rng.next_f64() < p_loss;
                let flip = if *bad { *r } else { *p };
                if flip > 0.0 && rng.next_f64() < flip {
                    *bad = !*bad;
                }
                lost
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bernoulli_rate_matches_p_and_is_seeded() {
        let run = |seed| {
            let mut rng = Xoshiro256::seed_from_u64(seed);
            let mut m = LossModel::Bernoulli { p: 0.1 };
            (0..100_000)
                .map(|_| m.lose(&mut rng))
                .collect::<Vec<bool>>()
        };
        let a = run(3);
        assert_eq!(a, run(3), "same seed, same loss pattern");
        let rate = a.iter().filter(|&&x| x).count() as f64 / a.len() as f64;
        assert!((rate - 0.1).abs() < 0.004, "{rate}");
    }

    #[test]
    fn zero_loss_never_loses() {
        let mut rng = Xoshiro256::seed_from_u64(1);
        let mut m = LossModel::Bernoulli { p: 0.0 };
        assert!((0..10_000).all(|_| !m.lose(&mut rng)));
    }

    #[test]
    fn gilbert_elliott_mean_loss_follows_the_stationary_distribution() {
        // Stationary P(bad) = p / (p + r); loss = P(good)(1−k) + P(bad)(1−h).
        let (p, r, h, k) = (0.01, 0.2, 0.3, 1.0);
        let mut rng = Xoshiro256::seed_from_u64(9);
        let mut m = LossModel::GilbertElliott {
            p,
            r,
            h,
            k,
            bad: false,
        };
        let n = 400_000;
        let lost = (0..n).filter(|_| m.lose(&mut rng)).count() as f64 / n as f64;
        let pb = p / (p + r);
        let expect = (1.0 - pb) * (1.0 - k) + pb * (1.0 - h);
        assert!((lost - expect).abs() < 0.004, "{lost} vs {expect}");
    }
}
