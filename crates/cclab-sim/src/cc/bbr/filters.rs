//! Kathleen Nichols' windowed min/max filter as Linux runs it
//! (lib/win_minmax.c, include/linux/win_minmax.h): three samples — best,
//! second best, third best — each from a later sub-window, so the filter
//! tracks the extreme over a sliding window of `win` time units in O(1)
//! space. BBRv1 uses the running max over packet-timed rounds for its
//! bottleneck-bandwidth estimate (`bbr_update_bw`).

/// One `struct minmax_sample`: time (here a round count) and value.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct MinmaxSample {
    pub t: u64,
    pub v: u64,
}

/// `struct minmax`: the best, 2nd best and 3rd best samples.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Minmax {
    s: [MinmaxSample; 3],
}

impl Minmax {
    /// `minmax_get`: the windowed extreme.
    #[inline]
    pub fn get(&self) -> u64 {
        self.s[0].v
    }

    /// `minmax_reset`: forget everything; `meas` at `t` is the only sample.
    pub fn reset(&mut self, t: u64, meas: u64) -> u64 {
        let val = MinmaxSample { t, v: meas };
        self.s = [val; 3];
        self.s[0].v
    }

    /// `minmax_subwin_update`: as time passes, age the best sample out and
    /// promote the later ones; also keep the sub-windows spread over the window.
    fn subwin_update(&mut self, win: u64, val: MinmaxSample) -> u64 {
        let dt = val.t.wrapping_sub(self.s[0].t);
        if dt > win {
            // The best sample expired: shift the others up and enter `val`
            // as the newest. If even the 2nd best is now outside the window,
            // shift once more (win_minmax.c does exactly two shifts at most).
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.t.wrapping_sub(self.s[0].t) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].t == self.s[0].t && dt > win / 4 {
            // A quarter of the window passed without a 2nd choice: take one.
            self.s[1] = val;
            self.s[2] = val;
        } else if self.s[2].t == self.s[1].t && dt > win / 2 {
            // Half the window passed without a 3rd choice: take one.
            self.s[2] = val;
        }
        self.s[0].v
    }

    /// `minmax_running_max`: add `meas` at time `t`, return the max over the
    /// last `win` time units.
    pub fn running_max(&mut self, win: u64, t: u64, meas: u64) -> u64 {
        let val = MinmaxSample { t, v: meas };
        if val.v >= self.s[0].v || val.t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, meas); // new max, or nothing left in the window
        }
        if val.v >= self.s[1].v {
            self.s[1] = val;
            self.s[2] = val;
        } else if val.v >= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }

    /// `minmax_running_min`: the mirror image, for callers that want a min.
    pub fn running_min(&mut self, win: u64, t: u64, meas: u64) -> u64 {
        let val = MinmaxSample { t, v: meas };
        if val.v <= self.s[0].v || val.t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, meas);
        }
        if val.v <= self.s[1].v {
            self.s[1] = val;
            self.s[2] = val;
        } else if val.v <= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_max_holds_peak_for_window_then_forgets_it() {
        // win_minmax.c: a peak is kept for `win` rounds, then the best of the
        // later sub-windows takes over.
        let mut m = Minmax::default();
        m.reset(0, 0);
        assert_eq!(m.running_max(10, 1, 100), 100);
        for t in 2..=11 {
            assert_eq!(m.running_max(10, t, 50), 100, "round {t}");
        }
        // Round 12 is more than 10 rounds after the peak at round 1.
        assert_eq!(m.running_max(10, 12, 50), 50);
    }

    #[test]
    fn running_max_tracks_a_decreasing_series_with_lag() {
        let mut m = Minmax::default();
        m.reset(0, 1000);
        let mut last = 1000;
        for t in 1..60u64 {
            let v = 1000 - 10 * t;
            last = m.running_max(10, t, v);
            // Never older than the window allows, never below the current sample.
            assert!(last >= v);
            assert!(last <= 1000 - 10 * t.saturating_sub(11));
        }
        assert!(last < 1000);
    }

    #[test]
    fn new_max_resets_all_three_samples() {
        let mut m = Minmax::default();
        m.reset(0, 5);
        m.running_max(10, 1, 3);
        m.running_max(10, 2, 9);
        assert_eq!(m.s, [MinmaxSample { t: 2, v: 9 }; 3]);
    }

    #[test]
    fn running_min_mirrors_max() {
        let mut m = Minmax::default();
        m.reset(0, 100);
        assert_eq!(m.running_min(10, 1, 20), 20);
        assert_eq!(m.running_min(10, 5, 40), 20);
        assert_eq!(m.running_min(10, 12, 40), 40);
    }
}
