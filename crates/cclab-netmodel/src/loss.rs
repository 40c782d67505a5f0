//! Random loss on arrival at the bottleneck (docs/ir.md "Loss"), before the
//! queue; counted as `drops_random`.

use crate::rng::Rng;
use crate::Ns;
use serde::{Deserialize, Serialize};

/// A loss process, in the IR's form (`link.loss`, schedule entries' `loss`).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LossConfig {
    /// Independent random loss with probability `p` per data packet.
    Bernoulli { p: f64 },
    /// Gilbert–Elliott two-state model: P(good→bad) = p, P(bad→good) = r,
    /// loss probability 1−k in the good state and 1−h in the bad one.
    GilbertElliott { p: f64, r: f64, h: f64, k: f64 },
}

/// A loss process with its state.
#[derive(Clone, Debug)]
pub struct LossModel {
    config: LossConfig,
    /// Gilbert–Elliott: currently in the bad state.
    bad: bool,
}

impl LossModel {
    pub fn new(config: LossConfig) -> LossModel {
        LossModel { config, bad: false }
    }

    pub fn none() -> LossModel {
        LossModel::new(LossConfig::Bernoulli { p: 0.0 })
    }

    /// Draw whether the next packet is lost. Gilbert–Elliott: the chain
    /// steps first (one transition per packet), then the packet is lost
    /// with the new state's probability. A zero probability draws nothing,
    /// so a loss-free link consumes no randomness.
    #[inline]
    pub fn lose(&mut self, rng: &mut Rng) -> bool {
        match self.config {
            LossConfig::Bernoulli { p } => rng.bernoulli(p),
            LossConfig::GilbertElliott { p, r, h, k } => {
                if self.bad {
                    if rng.bernoulli(r) {
                        self.bad = false;
                    }
                } else if rng.bernoulli(p) {
                    self.bad = true;
                }
                rng.bernoulli(if self.bad { 1.0 - h } else { 1.0 - k })
            }
        }
    }
}

/// `(from, model)` steps, the first at 0; each step's model keeps its own
/// state (a Gilbert–Elliott chain starts good when its step begins).
/// Arrivals are judged in time order, so the cursor only moves forward.
#[derive(Clone, Debug)]
pub struct LossSteps {
    steps: Vec<(Ns, LossModel)>,
    idx: usize,
}

impl LossSteps {
    pub fn new(mut steps: Vec<(Ns, LossModel)>) -> LossSteps {
        steps.sort_by_key(|s| s.0);
        if steps.first().is_none_or(|s| s.0 != 0) {
            steps.insert(0, (0, LossModel::none()));
        }
        LossSteps { steps, idx: 0 }
    }

    #[inline]
    pub fn lose(&mut self, t: Ns, rng: &mut Rng) -> bool {
        while self.idx + 1 < self.steps.len() && self.steps[self.idx + 1].0 <= t {
            self.idx += 1;
        }
        self.steps[self.idx].1.lose(rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bernoulli_rate_matches_p_and_is_seeded() {
        let run = |seed| {
            let mut rng = Rng::new(seed, 1);
            let mut m = LossModel::new(LossConfig::Bernoulli { p: 0.1 });
            (0..100_000)
                .map(|_| m.lose(&mut rng))
                .collect::<Vec<bool>>()
        };
        let a = run(3);
        assert_eq!(a, run(3), "same seed, same loss pattern");
        let rate = a.iter().filter(|&&x| x).count() as f64 / a.len() as f64;
        // Binomial(1e5, 0.1): sd ≈ 0.00095; ±0.004 is > 4 sd.
        assert!((rate - 0.1).abs() < 0.004, "{rate}");
    }

    #[test]
    fn gilbert_elliott_loses_in_bursts() {
        // p=0.01, r=0.1: mean bad run 10 packets; all lost in bad (h=0), none in good (k=1).
        let mut m = LossModel::new(LossConfig::GilbertElliott {
            p: 0.01,
            r: 0.1,
            h: 0.0,
            k: 1.0,
        });
        let mut rng = Rng::new(3, 0);
        let draws: Vec<bool> = (0..200_000).map(|_| m.lose(&mut rng)).collect();
        let lost = draws.iter().filter(|&&x| x).count() as f64;
        let runs = draws.windows(2).filter(|w| !w[0] && w[1]).count() as f64;
        // Stationary bad fraction p/(p+r) = 0.0909; mean burst 1/r = 10.
        assert!(
            (lost / 200_000.0 - 0.0909).abs() < 0.01,
            "{}",
            lost / 200_000.0
        );
        assert!((lost / runs - 10.0).abs() < 1.5, "{}", lost / runs);
    }

    #[test]
    fn steps_switch_the_model_at_their_time() {
        let mut s = LossSteps::new(vec![(10, LossModel::new(LossConfig::Bernoulli { p: 1.0 }))]);
        let mut rng = Rng::new(1, 1);
        assert!(!s.lose(9, &mut rng));
        assert!(s.lose(10, &mut rng));
    }
}
