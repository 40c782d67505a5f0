//! The IR's links (`links[]`, docs/ir.md), as both backends read them, and
//! their translation into the model's parameters — written once, here; also
//! the two rules of a topology both backends must apply alike: how a flow's
//! own delay is split around its path ([`split_extra_delay`]) and which
//! random streams a link draws from ([`link_seed`]).

use crate::bottleneck::BottleneckParams;
use crate::capacity::{Capacity as Cap, RateSteps, Trace};
use crate::loss::{LossConfig, LossModel};
use crate::policer::PolicerConfig;
use crate::qdisc::{Limits, QdiscConfig};
use crate::Ns;
use serde::{Deserialize, Serialize};

/// One link of the topology: one direction of a wire between two nodes —
/// one queue, one rate, one delay. A duplex wire is two links.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// The link's name (`[links.NAME]`; `"link"` for the one-link `[link]` form).
    pub name: String,
    /// The node packets enter the link from, and the node they leave it at.
    pub from: String,
    pub to: String,
    pub capacity: Capacity,
    /// One-way propagation delay at time zero (a schedule may change it).
    pub delay_ns: u64,
    pub buffer: Buffer,
    pub loss: LossConfig,
    /// Timed changes of rate / delay / loss (sorted by `at_ns`).
    pub schedule: Vec<Change>,
    /// The queue discipline (docs/queues.md).
    pub qdisc: QdiscConfig,
    /// A token-bucket policer in front of the queue. Optional (absent or
    /// null: none), so scenarios without one keep their IR and its hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policer: Option<PolicerConfig>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Capacity {
    /// A constant serialization rate.
    Constant { rate_bps: u64 },
    /// A Mahimahi trace: each entry is a delivery opportunity for
    /// `bytes_per_opportunity` bytes at that time (ns) within the period; the
    /// trace repeats every `period_ns`.
    Trace {
        path: String,
        opportunities_ns: Vec<u64>,
        period_ns: u64,
        bytes_per_opportunity: u32,
    },
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Buffer {
    /// Limit in bytes (wire bytes), if any.
    pub bytes: Option<u64>,
    /// Limit in packets, if any. At least one of the two is set.
    pub packets: Option<u64>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Change {
    pub at_ns: u64,
    pub rate_bps: Option<u64>,
    pub delay_ns: Option<u64>,
    pub loss: Option<LossConfig>,
}

/// The random streams of link `index` of a topology derive from this seed:
/// link 0 draws from the scenario seed itself (so a one-link scenario draws
/// exactly what it always did), link k > 0 from `mix(seed, STREAM_LINKS + k)`
/// — each link has its own loss and queue-discipline streams, and adding a
/// link never changes the draws of another.
pub fn link_seed(seed: u64, index: usize) -> u64 {
    if index == 0 {
        seed
    } else {
        crate::rng::mix(seed, crate::STREAM_LINKS + index as u64)
    }
}

/// A flow's own propagation delay (its RTT minus the links' initial delays,
/// forward and ACK path: `rtt_ns − fwd_links_ns − ack_links_ns`), split into
/// the part before the first link of its path (the sender's access) and the
/// part after the receiver (the return): the forward direction as close to
/// half the RTT (rounded down) as the forward links allow, the rest on the
/// return. `None` when the links alone are longer than the RTT.
///
/// One link and an uncongested return: `(rtt/2 − delay, rtt − rtt/2)`, the
/// dumbbell's rule since version 1 of the IR.
pub fn split_extra_delay(rtt_ns: u64, fwd_links_ns: u64, ack_links_ns: u64) -> Option<(u64, u64)> {
    let extra = rtt_ns
        .checked_sub(fwd_links_ns)?
        .checked_sub(ack_links_ns)?;
    let fwd = (rtt_ns / 2).saturating_sub(fwd_links_ns).min(extra);
    Some((fwd, extra - fwd))
}

impl Link {
    /// The bottleneck's parameters on a clock whose run starts at `t0`
    /// (the simulator: 0; the emulator: its CLOCK_MONOTONIC time zero).
    /// Schedule entries apply at t0 + at; the configured loss applies from
    /// t0 on (before it the link loses nothing, and draws no random
    /// number); a trace is at phase 0 at `trace_origin` (≤ t0).
    pub fn params(&self, seed: u64, t0: Ns, trace_origin: Ns) -> Result<BottleneckParams, String> {
        let name = &self.name;
        if self.buffer.bytes.is_none() && self.buffer.packets.is_none() {
            return Err(format!("links[{name}].buffer needs bytes or packets"));
        }
        self.qdisc
            .validate()
            .map_err(|e| format!("links[{name}].qdisc: {e}"))?;
        if let Some(p) = &self.policer {
            p.validate().map_err(|e| format!("links[{name}].policer: {e}"))?;
        }
        let capacity = match &self.capacity {
            Capacity::Constant { rate_bps } => {
                let changes = self
                    .schedule
                    .iter()
                    .filter_map(|c| c.rate_bps.map(|r| (t0 + c.at_ns, r)))
                    .collect();
                Cap::Rate(RateSteps::new(*rate_bps, changes))
            }
            Capacity::Trace {
                opportunities_ns,
                period_ns,
                bytes_per_opportunity,
                ..
            } => {
                if !self.schedule.is_empty() && self.schedule.iter().any(|c| c.rate_bps.is_some()) {
                    return Err(format!(
                        "links[{name}].schedule cannot change the rate of a trace link"
                    ));
                }
                Cap::Trace(Trace::new(
                    trace_origin,
                    opportunities_ns.clone(),
                    *period_ns,
                    *bytes_per_opportunity,
                )?)
            }
        };
        let mut delay_steps = vec![(0, self.delay_ns)];
        delay_steps.extend(
            self.schedule
                .iter()
                .filter_map(|c| c.delay_ns.map(|d| (t0 + c.at_ns, d))),
        );
        let mut loss_steps = vec![];
        if t0 > 0 {
            loss_steps.push((0, LossModel::none()));
        }
        loss_steps.push((t0, LossModel::new(self.loss)));
        loss_steps.extend(
            self.schedule
                .iter()
                .filter_map(|c| c.loss.map(|l| (t0 + c.at_ns, LossModel::new(l)))),
        );
        Ok(BottleneckParams {
            capacity,
            delay_steps,
            loss_steps,
            limits: Limits {
                bytes: self.buffer.bytes,
                packets: self.buffer.packets,
            },
            qdisc: self.qdisc.clone(),
            policer: self.policer,
            seed,
            origin: t0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_documented_link_and_rejects_the_old_aqm_string() {
        let text = r#"{"name":"link","from":"left","to":"right",
            "capacity":{"kind":"constant","rate_bps":80000000},"delay_ns":0,
            "buffer":{"bytes":437500,"packets":null},"loss":{"kind":"bernoulli","p":0.0},
            "schedule":[{"at_ns":5,"rate_bps":1,"delay_ns":null,"loss":null}],
            "qdisc":{"kind":"fq_codel","target_ns":5000000,"interval_ns":100000000,"mtu_bytes":1500,"ecn":true,
                     "quantum_bytes":1514,"flows":1024,"memory_limit_bytes":33554432,"drop_batch":64}}"#;
        let l: Link = serde_json::from_str(text).unwrap();
        assert_eq!(l.qdisc.kind(), "fq_codel");
        let p = l.params(1, 0, 0).unwrap();
        assert_eq!(p.capacity.nominal_bps(5), 1);
        assert!(p.policer.is_none());
        let old = text.replace(r#""qdisc":{"#, r#""aqm":"droptail","x":{"#);
        assert!(serde_json::from_str::<Link>(&old).is_err());
    }

    #[test]
    fn reads_a_policer_and_refuses_a_zero_rate() {
        let text = r#"{"name":"link","from":"left","to":"right","capacity":{"kind":"constant","rate_bps":80000000},"delay_ns":0,
            "buffer":{"bytes":437500,"packets":null},"loss":{"kind":"bernoulli","p":0.0},
            "schedule":[],"qdisc":{"kind":"droptail"},
            "policer":{"rate_bps":5000000,"burst_bytes":30000}}"#;
        let l: Link = serde_json::from_str(text).unwrap();
        let want = PolicerConfig {
            rate_bps: 5_000_000,
            burst_bytes: 30_000,
        };
        assert_eq!(l.policer, Some(want));
        assert_eq!(l.params(1, 0, 0).unwrap().policer, Some(want));
        let zero: Link = serde_json::from_str(&text.replace("5000000", "0")).unwrap();
        assert_eq!(
            zero.params(1, 0, 0).unwrap_err(),
            "links[link].policer: rate_bps = 0 must be > 0"
        );
        let typo = text.replace("burst_bytes", "bucket_bytes");
        assert!(serde_json::from_str::<Link>(&typo).is_err());
    }
}

#[cfg(test)]
mod topology_tests {
    use super::*;

    #[test]
    fn one_link_keeps_the_dumbbell_split() {
        // v1–v3: access rtt/2 − delay, return rtt − rtt/2
        assert_eq!(
            split_extra_delay(25_000_001, 5_000_000, 0),
            Some((7_500_000, 12_500_001))
        );
        assert_eq!(split_extra_delay(40, 0, 0), Some((20, 20)));
    }

    #[test]
    fn long_links_move_the_rest_to_the_return_and_too_long_is_none() {
        // forward links longer than half the RTT: no access delay, the rest returns
        assert_eq!(split_extra_delay(30, 20, 0), Some((0, 10)));
        // ACK-path links count too; a long ACK path puts the extra forward
        assert_eq!(split_extra_delay(100, 10, 60), Some((30, 0)));
        assert_eq!(split_extra_delay(100, 10, 20), Some((40, 30)));
        assert_eq!(split_extra_delay(30, 20, 11), None);
        assert_eq!(split_extra_delay(30, 31, 0), None);
    }

    #[test]
    fn link_zero_keeps_the_scenario_seed_and_others_differ() {
        assert_eq!(link_seed(7, 0), 7);
        assert_ne!(link_seed(7, 1), link_seed(7, 2));
        assert_ne!(link_seed(7, 1), 7);
    }
}
