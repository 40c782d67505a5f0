//! The link as the emulator runs it: the bottleneck of cclab-netmodel (the
//! same code as the simulator's: loss → queue discipline → serialization →
//! propagation) between per-flow access delays, plus the ACK path.
//!
//! Time is integer nanoseconds (`Ns`) on whatever clock the caller uses (the
//! emulator passes CLOCK_MONOTONIC). The model never reads a clock and
//! never draws from the OS RNG: the caller hands in `now`, the model hands
//! back packets with the time they are due.
//!
//! Data direction, per packet (docs/ir.md): access delay of its flow
//! (rtt/2 − link delay) → the bottleneck (cclab-netmodel) → receiver side.
//! ACK direction: the flow's rtt/2, nothing else.

pub mod link;

pub use cclab_netmodel::{
    Bottleneck, BottleneckParams, Capacity, Counters as BottleneckCounters, DropCause, LossConfig,
    LossModel, Ns, RateSteps, Rng, Trace,
};
pub use link::{Delivery, Dir, FlowPath, LinkCounters, LinkModel, LinkParams};
