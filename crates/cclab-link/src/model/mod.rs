//! The bottleneck link as a pure, deterministic model.
//!
//! Time is integer nanoseconds (`Ns`) on whatever clock the caller uses (the
//! emulator passes CLOCK_MONOTONIC). The model never reads a clock and
//! never draws from the OS RNG: the caller hands in `now`, the model hands
//! back packets with the time they are due.
//!
//! Data direction, per packet (docs/ir.md):
//! access delay of its flow (rtt/2 − link delay) → random loss on arrival at
//! the bottleneck (`drops_random`) → drop-tail queue limited in bytes and/or
//! packets (`drops_overflow`) → serialization at the capacity → propagation
//! (link delay, FIFO even when the delay changes). ACK direction: the flow's
//! rtt/2, nothing else.

pub mod capacity;
pub mod link;
pub mod loss;
pub mod rng;

pub type Ns = u64;

pub use capacity::{Capacity, RateSteps, Trace};
pub use link::{Delivery, Dir, FlowPath, LinkCounters, LinkModel, LinkParams};
pub use loss::LossModel;
pub use rng::Xoshiro256;
