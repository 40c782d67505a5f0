//! cclab-sim: a deterministic packet-level simulator of TCP congestion control.
//!
//! The core does no I/O and reads no clock: time is integer nanoseconds
//! ([`time::Time`]), randomness is seeded from the scenario. Start at
//! [`sim::simulate`], which takes a resolved scenario ([`scenario::Scenario`])
//! and returns sampled time series ([`record::Output`]).

pub mod cc;
pub mod event;
pub mod jitter;
pub mod link;
pub mod pauses;
pub mod pipe;
mod prefetch;
pub mod rng;
pub mod scenario;
pub mod tcp;
pub mod time;
pub mod record;
pub mod sim;

pub use scenario::Scenario;
pub use sim::simulate;
