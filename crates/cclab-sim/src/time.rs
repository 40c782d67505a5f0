//! Units in types: integer-nanosecond time and integer bit/s bandwidth.
//!
//! No floating point touches the event queue. `Bandwidth × Duration = bytes`
//! and `bytes / Bandwidth = Duration` are the only conversions, both rounded
//! the same way everywhere (serialization time rounds *up* so a link never
//! runs faster than configured).

use std::ops::{Add, AddAssign, Sub};

/// Nanoseconds since the start of the simulation.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub u64);

/// A span of nanoseconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dur(pub u64);

pub const NS_PER_US: u64 = 1_000;
pub const NS_PER_MS: u64 = 1_000_000;
pub const NS_PER_S: u64 = 1_000_000_000;

impl Time {
    pub const ZERO: Time = Time(0);
    pub const NEVER: Time = Time(u64::MAX);
    #[inline]
    pub fn ns(self) -> u64 {
        self.0
    }
    #[inline]
    pub fn saturating_sub(self, other: Time) -> Dur {
        Dur(self.0.saturating_sub(other.0))
    }
    #[inline]
    pub fn secs_f64(self) -> f64 {
        self.0 as f64 / NS_PER_S as f64
    }
}

impl Dur {
    pub const ZERO: Dur = Dur(0);
    #[inline]
    pub const fn from_ms(ms: u64) -> Dur {
        Dur(ms * NS_PER_MS)
    }
    #[inline]
    pub const fn from_us(us: u64) -> Dur {
        Dur(us * NS_PER_US)
    }
    #[inline]
    pub const fn from_secs(s: u64) -> Dur {
        Dur(s * NS_PER_S)
    }
    #[inline]
    pub fn ns(self) -> u64 {
        self.0
    }
    #[inline]
    pub fn secs_f64(self) -> f64 {
        self.0 as f64 / NS_PER_S as f64
    }
}

impl Add<Dur> for Time {
    type Output = Time;
    #[inline]
    fn add(self, d: Dur) -> Time {
        Time(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Dur> for Time {
    #[inline]
    fn add_assign(&mut self, d: Dur) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub<Time> for Time {
    type Output = Dur;
    #[inline]
    fn sub(self, t: Time) -> Dur {
        debug_assert!(self.0 >= t.0, "time went backwards: {} - {}", self.0, t.0);
        Dur(self.0 - t.0)
    }
}
impl Add for Dur {
    type Output = Dur;
    #[inline]
    fn add(self, d: Dur) -> Dur {
        Dur(self.0.saturating_add(d.0))
    }
}

/// Bits per second.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bandwidth(pub u64);

impl Bandwidth {
    #[inline]
    pub fn bps(self) -> u64 {
        self.0
    }
    /// Time to serialize `bytes` at this rate, rounded up to the next ns.
    #[inline]
    pub fn tx_time(self, bytes: u64) -> Dur {
        debug_assert!(self.0 > 0);
        let bits = bytes as u128 * 8 * NS_PER_S as u128;
        Dur(bits.div_ceil(self.0 as u128) as u64)
    }
    /// Bytes carried in `d` at this rate (rounded down).
    #[inline]
    pub fn bytes_in(self, d: Dur) -> u64 {
        (self.0 as u128 * d.0 as u128 / (8 * NS_PER_S as u128)) as u64
    }
    /// Rate that delivers `bytes` in `d`.
    #[inline]
    pub fn from_bytes_per(bytes: u64, d: Dur) -> Bandwidth {
        if d.0 == 0 {
            return Bandwidth(0);
        }
        // 64-bit fast path (bytes < 2.3 GB); same result as the 128-bit form.
        match bytes.checked_mul(8 * NS_PER_S) {
            Some(bits_ns) => Bandwidth(bits_ns / d.0),
            None => Bandwidth((bytes as u128 * 8 * NS_PER_S as u128 / d.0 as u128) as u64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_time_is_bits_over_rate() {
        // 1500 bytes at 100 Mbit/s = 12000 bits / 1e8 = 120 us exactly.
        assert_eq!(Bandwidth(100_000_000).tx_time(1500), Dur(120_000));
        // 1500 bytes at 3 bit/s does not divide: round up.
        assert_eq!(Bandwidth(3).tx_time(1), Dur(2_666_666_667));
    }

    #[test]
    fn from_bytes_per_fast_path_matches_wide_arithmetic() {
        for (b, d) in [(1u64, 1u64), (1448, 120_000), (2_000_000_000, 7), (u64::MAX / 16, 3), (123_456_789, 987_654_321)] {
            let wide = (b as u128 * 8 * NS_PER_S as u128 / d as u128) as u64;
            assert_eq!(Bandwidth::from_bytes_per(b, Dur(d)).0, wide, "{b} B in {d} ns");
        }
    }

    #[test]
    fn bytes_in_inverts_tx_time() {
        let r = Bandwidth(80_000_000);
        assert_eq!(r.bytes_in(r.tx_time(1500)), 1500);
        assert_eq!(Bandwidth::from_bytes_per(1500, Dur(120_000)), Bandwidth(100_000_000));
    }
}
