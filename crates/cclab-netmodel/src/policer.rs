//! A token-bucket policer in front of the queue (`link.policer`): packets
//! that find too few tokens are dropped (`drops_policer`), the others go on
//! to the queue discipline. This is what ISPs use to cap a subscriber's rate
//! and what BBR's long-term bandwidth model (tcp_bbr.c `bbr_lt_bw_sampling`)
//! was written to detect.
//!
//! Linux's `police` action (net/sched/act_police.c, `tcf_police_act`): the
//! bucket holds at most `burst` worth of tokens and starts full; tokens
//! accrue at `rate` while time passes; a packet of L bytes conforms if the
//! bucket holds L bytes' worth, which it then takes; a packet that does not
//! conform takes nothing and is dropped (`conform-exceed drop`). Linux keeps
//! the bucket in nanoseconds of transmission time at `rate`, rounded per
//! packet (`psched_l2t`); here it is kept exactly, in bit·ns/s (1 byte =
//! 8·10⁹ units, `rate` bit/s adds `rate` units per ns), so the long-run
//! conforming rate is exactly `rate`. No peak rate, no overhead accounting:
//! L is the wire length the rest of the model uses.

use crate::Ns;
use serde::{Deserialize, Serialize};

/// The IR's `link.policer`.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PolicerConfig {
    /// Token rate, bit/s (wire bytes).
    pub rate_bps: u64,
    /// Bucket size, bytes: the largest burst that passes at once after an idle period.
    pub burst_bytes: u64,
}

impl PolicerConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.rate_bps == 0 {
            return Err("rate_bps = 0 must be > 0".into());
        }
        if self.burst_bytes == 0 {
            return Err("burst_bytes = 0 must be > 0".into());
        }
        Ok(())
    }
}

/// Units of the bucket per byte: 8 bits × 10⁹ ns/s.
const UNITS_PER_BYTE: u128 = 8_000_000_000;

/// A token bucket with its state.
#[derive(Clone, Debug)]
pub struct Policer {
    rate_bps: u128,
    cap: u128,
    tokens: u128,
    last: Ns,
}

impl Policer {
    /// A full bucket at `origin`.
    pub fn new(c: PolicerConfig, origin: Ns) -> Policer {
        let cap = c.burst_bytes as u128 * UNITS_PER_BYTE;
        Policer {
            rate_bps: c.rate_bps as u128,
            cap,
            tokens: cap,
            last: origin,
        }
    }

    /// Does a packet of `len` wire bytes arriving at `now` conform? If so
    /// it takes its tokens. Arrivals are judged in time order.
    #[inline]
    pub fn conforms(&mut self, now: Ns, len: u32) -> bool {
        if now > self.last {
            let dt = (now - self.last) as u128;
            self.tokens = (self.tokens + self.rate_bps * dt).min(self.cap);
            self.last = now;
        }
        let cost = len as u128 * UNITS_PER_BYTE;
        if self.tokens >= cost {
            self.tokens -= cost;
            true
        } else {
            false
        }
    }

    /// Bytes' worth of tokens in the bucket now (rounded down).
    pub fn tokens_bytes(&self) -> u64 {
        (self.tokens / UNITS_PER_BYTE) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(rate_bps: u64, burst_bytes: u64) -> Policer {
        Policer::new(
            PolicerConfig {
                rate_bps,
                burst_bytes,
            },
            0,
        )
    }

    #[test]
    fn a_full_bucket_passes_its_burst_then_drops() {
        // 4500 bytes of tokens: three 1500-byte packets at once, not a fourth.
        let mut b = p(1_000_000, 4500);
        let got: Vec<bool> = (0..4).map(|_| b.conforms(0, 1500)).collect();
        assert_eq!(got, [true, true, true, false]);
        assert_eq!(b.tokens_bytes(), 0);
    }

    #[test]
    fn tokens_accrue_at_the_rate_exactly() {
        // 1 Mbit/s = 125 bytes/ms: a 1500-byte packet's tokens take 12 ms.
        let mut b = p(1_000_000, 1500);
        assert!(b.conforms(0, 1500));
        assert!(!b.conforms(11_999_999, 1500), "one ns short");
        assert!(
            b.conforms(12_000_000, 1500),
            "the failed packet took nothing"
        );
        // At 7 Mbit/s a 1500-byte packet's worth takes 1 714 285.7 ns: the
        // fraction is kept, so 7 packets conform every 12 ms exactly. (The
        // bucket is emptied at 0 and large enough never to cap the refill.)
        let mut b = p(7_000_000, 15_000);
        assert!((0..10).all(|_| b.conforms(0, 1500)));
        let mut passed = 0;
        for i in 1..=12_000u64 {
            passed += b.conforms(i * 1000, 1500) as u32; // one try per µs
        }
        assert_eq!(passed, 7);
    }

    #[test]
    fn the_bucket_never_holds_more_than_burst() {
        let mut b = p(10_000_000, 3000);
        assert!(b.conforms(0, 3000));
        // a long idle period refills to 3000 bytes, not more
        assert!(b.conforms(1_000_000_000, 1500));
        assert!(b.conforms(1_000_000_000, 1500));
        assert!(!b.conforms(1_000_000_000, 100));
    }

    #[test]
    fn long_run_rate_is_the_token_rate_under_overload() {
        // 10 Mbit/s of tokens, 1500-byte packets offered at 100 Mbit/s for 1 s:
        // the burst plus rate × time conforms.
        let mut b = p(10_000_000, 30_000);
        let mut bytes = 0u64;
        for i in 0..8334u64 {
            if b.conforms(i * 120_000, 1500) {
                bytes += 1500;
            }
        }
        let expect = 30_000 + 10_000_000 / 8 * 8333 * 120_000 / 1_000_000_000;
        assert!(
            bytes <= expect && bytes + 1500 > expect,
            "{bytes} vs {expect}"
        );
    }

    #[test]
    fn zero_rate_or_burst_is_refused() {
        let c = PolicerConfig {
            rate_bps: 0,
            burst_bytes: 1,
        };
        assert_eq!(c.validate().unwrap_err(), "rate_bps = 0 must be > 0");
        let c = PolicerConfig {
            rate_bps: 1,
            burst_bytes: 0,
        };
        assert_eq!(c.validate().unwrap_err(), "burst_bytes = 0 must be > 0");
    }
}
