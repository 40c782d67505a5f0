//! The link as the emulator runs it: the bottleneck of cclab-netmodel (the
//! same code as the simulator's: loss → queue discipline → serialization →
//! propagation) between per-flow access delays, plus the ACK path.
//!
//! Time is integer nanoseconds (`Ns`) on whatever clock the caller uses (the
//! emulator passes CLOCK_MONOTONIC). The model never reads a clock and
//! never draws from the OS RNG: the caller hands in `now`, the model hands
//! back packets with the time they are due.
//!
//! One link (`link.rs`, docs/ir.md): access delay of its flow (rtt/2 − link
//! delay) → the bottleneck (cclab-netmodel) → receiver side; ACKs: a delay,
//! nothing else. A topology (`net.rs`, docs/topologies.md): the flows' paths
//! over several links, ACKs over links where an ACK path says so.

pub mod link;
pub mod net;

pub use cclab_netmodel::{
    Bottleneck, BottleneckParams, Capacity, Counters as BottleneckCounters, DropCause, LossConfig,
    LossModel, Ns, RateSteps, Rng, Trace,
};
pub use link::{Delivery, Dir, FlowPath, LinkCounters, LinkModel, LinkParams};
pub use net::{NetCounters, NetDelivery, NetFlow, NetFlowCounters, NetModel, NetParams};
