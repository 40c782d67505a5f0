//! The resolved scenario (IR): explicit, integer units, no defaults.
//!
//! This is the contract between the Python front end (which validates and
//! resolves users' files) and both backends. The JSON form is
//! `resolved.json` in every run record; `docs/ir.md` documents each field.
//! Every field is required; unknown fields are rejected so a front end and an
//! engine that disagree fail loudly instead of silently ignoring something.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const IR_VERSION: u32 = 4;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub ir_version: u32,
    pub name: String,
    pub duration_ns: u64,
    pub seed: u64,
    pub sample_interval_ns: u64,
    pub measure: Measure,
    /// TCP maximum segment size (payload bytes per full segment).
    pub mss: u32,
    /// IP + TCP header bytes added to each segment on the wire (52 = 20 IP + 32 TCP with timestamps).
    pub header_bytes: u32,
    /// The topology's links (each one direction of a wire), in the order
    /// the scenario declared them; flows name them in `path`/`ack_path`.
    pub links: Vec<Link>,
    pub flows: Vec<Flow>,
    /// The end hosts' TCP settings (both backends use the same).
    pub host: Host,
    /// What the record keeps (absent: every flow at every sample).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<RecordCfg>,
}

/// The record's per-flow time series (docs/ir.md `record`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RecordCfg {
    /// Every flow is sampled every this many ns: a multiple of
    /// `sample_interval_ns` (the link is sampled at every sample).
    pub flows_interval_ns: u64,
    /// false: the per-flow series feed the summary only, `flows.parquet`
    /// keeps no rows (the engine samples them all the same).
    pub flows_stored: bool,
}

impl Scenario {
    /// The per-flow sample interval (ns).
    pub fn flows_interval_ns(&self) -> u64 {
        self.record.as_ref().map_or(self.sample_interval_ns, |r| r.flows_interval_ns)
    }
}

/// End-host TCP settings: what the kernel backend writes into its
/// namespaces' sysctls, and what the simulator's receiver models.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Host {
    /// `net.ipv4.tcp_rmem`: min, default (initial receive buffer), max.
    pub tcp_rmem: [u64; 3],
    /// `net.ipv4.tcp_wmem`: min, default, max (the simulator never runs out of send buffer).
    pub tcp_wmem: [u64; 3],
    /// Receive memory one full segment costs (`skb->truesize`), a property of
    /// the receiving device: 2304 for the kernel backend's TUN device.
    pub rcv_truesize: u32,
    /// Host timing jitter (`jitter.rs`): quantiles of the extra time a host
    /// takes to take in or put out a packet, at probabilities i / (n − 1),
    /// in ns. Optional (absent or empty: none), so scenarios without jitter
    /// keep their IR and its hash.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jitter_ns: Vec<u64>,
    /// The cumulative probability of each point of `jitter_ns` in units of
    /// 2⁻³², for a distribution given as a histogram; absent or empty: the
    /// points are evenly spaced in probability.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jitter_p: Vec<u64>,
    /// Host pauses (`pauses.rs`). Optional (absent: none), so scenarios
    /// without pauses keep their IR and its hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pauses: Option<HostPauses>,
    /// The receiving application's read latency (`tcp/receiver.rs`):
    /// quantiles of the time from in-order data reaching the socket to the
    /// application's read, at probabilities i / (n − 1) (or at
    /// `read_delay_p`), in ns. Optional
    /// (absent or empty: the application reads at once), so scenarios
    /// without it keep their IR and its hash.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_delay_ns: Vec<u64>,
    /// The same as `jitter_p`, for `read_delay_ns`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_delay_p: Vec<u64>,
}

/// Host pauses (`pauses.rs`): quantiles at probabilities i / (n − 1), in ns,
/// of the time from the end of one pause to the start of the next
/// (`gaps_ns`) and of a pause's length (`durations_ns`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HostPauses {
    pub gaps_ns: Vec<u64>,
    pub durations_ns: Vec<u64>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Measure {
    pub from_ns: u64,
    pub to_ns: u64,
}

/// A link (`links[]`): defined once in cclab-netmodel, shared with the
/// kernel backend's emulator.
pub use cclab_netmodel::ir::{Buffer, Capacity, Change, Link};
/// A loss process (`link.loss`, schedule entries' `loss`).
pub use cclab_netmodel::loss::LossConfig as Loss;
/// The queue discipline (`link.qdisc`, docs/queues.md).
pub use cclab_netmodel::qdisc::{CodelConfig, FqCodelConfig, PieConfig, QdiscConfig, RedConfig, StepConfig};
/// A token-bucket policer in front of the queue (`link.policer`).
pub use cclab_netmodel::PolicerConfig;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Flow {
    pub id: u32,
    /// Index of the `[[flows]]` group this flow came from.
    pub group: u32,
    pub cca: String,
    /// Algorithm parameters (e.g. `cwnd_gain`), numbers only; the engine
    /// rejects names the algorithm does not know.
    pub cca_params: BTreeMap<String, f64>,
    /// Base (propagation) RTT of this flow: the initial delays of the links
    /// of `path` and `ack_path` plus the flow's own delay, which is split
    /// around the path by `cclab_netmodel::ir::split_extra_delay`.
    pub rtt_ns: u64,
    /// The links its data crosses, in order (names of `links[]`).
    pub path: Vec<String>,
    /// The links its ACKs cross back to the sender, in order; empty: an
    /// uncongested return (a pure delay).
    pub ack_path: Vec<String>,
    /// The receiver ACKs at once when this many full segments are
    /// unacknowledged (Linux: 2; 1 = every segment at once, no delayed ACK).
    pub ack_every: u32,
    /// SACK negotiated (Linux's default `net.ipv4.tcp_sack = 1`).
    pub sack: bool,
    /// When the application starts writing, the random start offset included.
    pub start_ns: u64,
    /// The random part of `start_ns` drawn for this trial (docs/ir.md;
    /// information only — the engine uses `start_ns`). Absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub start_offset_ns: u64,
    /// The sender stops sending new data at this time (None: runs to the end).
    pub stop_ns: Option<u64>,
    /// Application bytes to send (None: unlimited, a bulk flow).
    pub bytes: Option<u64>,
    /// Receive-window limit in bytes (None: unlimited).
    pub rwnd_bytes: Option<u64>,
    /// The flow's packets are ECN-capable (ECT(0)): an AQM with ECN enabled
    /// marks them CE instead of dropping them. (The sender's and receiver's
    /// reaction to CE, RFC 3168 §6.1, is not modelled yet.)
    pub ecn: bool,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}
