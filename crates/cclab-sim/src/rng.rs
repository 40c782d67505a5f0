//! Seeded randomness. Every stream is derived from the scenario seed and a
//! stream label, so adding a flow does not change another flow's draws.
//! The generator (xoshiro256++ through SplitMix64) lives in cclab-netmodel,
//! shared with the link model; `tests/rng_stream.rs` checks it against
//! `rand_xoshiro`, the implementation the simulator used before.

pub use cclab_netmodel::rng::{mix, Rng};
