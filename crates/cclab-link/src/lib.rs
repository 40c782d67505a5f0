//! cclab-link: cclab's userspace bottleneck emulator and its traffic endpoints.
//!
//! * [`model`] — the link itself: per-flow access delays around the
//!   bottleneck of cclab-netmodel (loss → queue discipline → serialization
//!   at a constant / scheduled / Mahimahi-trace rate → propagation; the
//!   simulator runs the same code); ACKs delayed only. Pure: it receives
//!   `now` and packets and hands back packets with their due times. No
//!   clock, no I/O, seeded randomness — unit-tested without namespaces.
//! * [`ecn`] — the ECN field of real IPv4 packets: ECN-capable or not, and
//!   setting CE with the header checksum fixed.
//! * [`config`] — the resolved scenario (IR, `docs/ir.md`) as the emulator
//!   reads it, and the address plan shared with the Python orchestration.
//! * [`emulator`] — the real-time loop: TUN devices opened inside the
//!   sender-side and receiver-side namespaces, nanosecond `ppoll`, timer
//!   slack 1, sampling, SIGTERM.
//! * [`topo`] — the real-time loop of a topology: one TUN device per host
//!   namespace, every link in one thread (docs/topologies.md).
//! * [`traffic`] — the multi-flow TCP sender and receiver (`TCP_CONGESTION`
//!   per socket, goodput counted by the receiving application).
//! * [`rwnd`] — receive-window limits, applied to the receiver's ACKs.
//! * [`sys`] — the few raw syscalls (setns, TUN, clocks, signals).
//! * [`cli`] — the command line (`emulate`, `send`, `recv`, `version`), run
//!   by the `cclab-link` binary and by `python -m cclab._link`.

pub mod cli;
pub mod config;
pub mod ecn;
pub mod emulator;
pub mod model;
pub mod rwnd;
pub mod stats;
pub mod sys;
pub mod topo;
pub mod traffic;

/// Version written into every run's provenance (`meta.json`).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// A hash of the emulator's sources, compiler and profile (build.rs): what
/// `cclab parity` keys kernel records by.
pub const SOURCE_HASH: &str = env!("CCLAB_LINK_SOURCE_HASH");
