//! cclab-netmodel: the bottleneck link, one model for every backend.
//!
//! The simulator (`cclab-sim`) and the kernel backend's emulator
//! (`cclab-link`) both run the bottleneck through this crate, so a queue
//! discipline, a rounding rule or a loss draw is defined exactly once.
//!
//! Pure: no I/O, no clock, no OS randomness. Time is integer nanoseconds
//! ([`Ns`]) on whatever clock the caller uses; the caller hands in `now` and
//! gets back packets with the time they leave. Randomness is seeded from the
//! scenario's seed, one stream for random loss and another for the queue
//! discipline (so choosing a qdisc never changes which packets random loss
//! hits).
//!
//! Per data packet (docs/ir.md): random loss on arrival (`drops_random`) →
//! token-bucket policer, if any ([`policer`], `drops_policer`) → queue
//! discipline ([`qdisc`]: drop-tail and its variants, RED, CoDel, FQ-CoDel,
//! PIE; `drops_overflow` when the buffer is full, `drops_aqm` /
//! `marks_ce` for AQM decisions) → serialization at the capacity (constant
//! or scheduled rate, Mahimahi trace) → propagation (the link delay, FIFO
//! even when the delay changes). Start at [`Bottleneck`].

pub mod bottleneck;
pub mod capacity;
pub mod hist;
pub mod ir;
pub mod loss;
pub mod packet;
pub mod policer;
pub mod qdisc;
pub mod rng;

/// Nanoseconds on the caller's clock.
pub type Ns = u64;

pub use bottleneck::{Bottleneck, BottleneckParams, Counters, Out, Sink};
pub use capacity::{Capacity, RateSteps, Trace};
pub use hist::{LogHist, WindowHist};
pub use loss::{LossConfig, LossModel, LossSteps};
pub use packet::{DropCause, Packet, FLOW_NONE};
pub use policer::{Policer, PolicerConfig};
pub use qdisc::{Limits, Qdisc, QdiscConfig};
pub use rng::{mix, Rng};

/// Random streams derived from the scenario seed ([`rng::mix`]); the
/// simulator's per-flow congestion-control streams use labels ≥ 2^32.
pub const STREAM_LOSS: u64 = 1;
pub const STREAM_QDISC: u64 = 2;
/// Links after the first of a topology derive their seed from
/// `STREAM_LINKS + index` ([`ir::link_seed`]); below the simulator's 2^32.
pub const STREAM_LINKS: u64 = 1 << 16;
