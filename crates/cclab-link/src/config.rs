//! The IR as the emulator reads it (`docs/ir.md`), and the address plan.
//!
//! The top level and the flows deliberately accept unknown fields: the
//! emulator only needs the link and the flows' paths, and must not break
//! when the IR grows a field it does not use. The link itself is the
//! simulator's definition (cclab-netmodel), which rejects unknown fields.
//! The Python side (`cclab.kernel.backend.check`) rejects what the kernel
//! backend cannot do before anything starts.

use serde::Deserialize;
use std::net::Ipv4Addr;

#[derive(Clone, Debug, Deserialize)]
pub struct Ir {
    pub name: String,
    pub duration_ns: u64,
    pub seed: u64,
    pub sample_interval_ns: u64,
    pub mss: u32,
    pub header_bytes: u32,
    /// The topology's links (IR v4); the emulator runs one (`check` in
    /// python/cclab/kernel/backend.py refuses more before anything starts).
    pub links: Vec<Link>,
    pub flows: Vec<Flow>,
    /// The measure window: the queueing-delay histogram counts the packets
    /// that leave the bottleneck in it (docs/record.md "Distributions").
    #[serde(default)]
    pub measure: Option<Measure>,
}

#[derive(Clone, Copy, Debug, Deserialize)]
pub struct Measure {
    pub from_ns: u64,
    pub to_ns: u64,
}

/// The bottleneck (`link`): the same definition the simulator reads
/// (cclab-netmodel), strict about its fields — a link parameter the
/// emulator did not know would otherwise be silently ignored.
pub use cclab_netmodel::ir::{Buffer, Capacity, Change, Link};
pub use cclab_netmodel::LossConfig as Loss;

#[derive(Clone, Debug, Deserialize)]
pub struct Flow {
    pub id: u32,
    pub cca: String,
    pub rtt_ns: u64,
    pub start_ns: u64,
    pub stop_ns: Option<u64>,
    pub bytes: Option<u64>,
    /// Receive-window limit: the emulator clamps the receiver's advertised window to this (src/rwnd.rs).
    #[serde(default)]
    pub rwnd_bytes: Option<u64>,
    /// ECN-capable flow (IR v3). On the kernel backend the packets' own ECN
    /// field decides what the queue discipline may mark.
    #[serde(default)]
    pub ecn: bool,
    /// The links its data and its ACKs cross (IR v4; docs/topologies.md).
    #[serde(default)]
    pub path: Vec<String>,
    #[serde(default)]
    pub ack_path: Vec<String>,
}

impl Ir {
    /// The emulated link.
    pub fn link(&self) -> &Link {
        &self.links[0]
    }

    /// A topology (several links, or ACKs over links): the emulator's
    /// `emulate-topo` runs it, one host namespace per end node.
    pub fn is_topology(&self) -> bool {
        self.links.len() > 1 || self.flows.iter().any(|f| !f.ack_path.is_empty())
    }

    /// The index of the link named `name`.
    pub fn link_index(&self, name: &str) -> Result<usize, String> {
        self.links
            .iter()
            .position(|l| l.name == name)
            .ok_or_else(|| format!("resolved IR: no link named {name:?}"))
    }

    /// A flow's sender node and receiver node (where its path starts and ends).
    pub fn flow_nodes(&self, f: &Flow) -> Result<(String, String), String> {
        let first = f
            .path
            .first()
            .ok_or_else(|| format!("resolved IR: flows[{}].path is empty", f.id))?;
        let last = f.path.last().unwrap();
        Ok((
            self.links[self.link_index(first)?].from.clone(),
            self.links[self.link_index(last)?].to.clone(),
        ))
    }

    /// The host nodes of a topology — every node where a flow starts or ends —
    /// in the order the links name them (from, then to). Host h has the
    /// namespace the orchestrator lists h-th and the receiver address
    /// [`host_addr`]`(h)`. Shared with python/cclab/kernel/netns.py (`hosts`).
    pub fn hosts(&self) -> Result<Vec<String>, String> {
        let mut ends = std::collections::BTreeSet::new();
        for f in &self.flows {
            let (a, b) = self.flow_nodes(f)?;
            ends.insert(a);
            ends.insert(b);
        }
        let mut out: Vec<String> = vec![];
        for l in &self.links {
            for n in [&l.from, &l.to] {
                if ends.contains(n) && !out.contains(n) {
                    out.push(n.clone());
                }
            }
        }
        Ok(out)
    }

    pub fn from_json(text: &str) -> Result<Ir, String> {
        let ir: Ir = serde_json::from_str(text).map_err(|e| format!("resolved IR: {e}"))?;
        if ir.links.is_empty() {
            return Err("resolved IR: no links".into());
        }
        if ir.sample_interval_ns == 0 {
            return Err("resolved IR: sample_interval_ns must be > 0".into());
        }
        if ir.flows.len() > MAX_FLOWS {
            return Err(format!(
                "resolved IR: {} flows; the kernel backend supports at most {MAX_FLOWS}",
                ir.flows.len()
            ));
        }
        for (i, f) in ir.flows.iter().enumerate() {
            if f.id as usize != i {
                return Err(format!(
                    "resolved IR: flows[{i}].id is {}; expected ids 0..n in order",
                    f.id
                ));
            }
        }
        Ok(ir)
    }
}

// ---------------------------------------------------------------------------
// Address plan (shared with python/cclab/kernel/netns.py — keep in sync).
//
// Every run has its own pair of namespaces, so the plan is the same in every
// run. Flow i's sender socket binds 10.77.1.(10+i); the receiver listens on
// 10.77.2.1:5201. The emulator tells flows apart by the sender address
// (source of data packets, destination of ACKs) and gives each its own
// access delay — that is how flows get their own base RTT.

/// At most this many flows per run (one sender address per flow in a /24).
pub const MAX_FLOWS: usize = 200;
pub const SENDER_NET: [u8; 3] = [10, 77, 1];
pub const FIRST_HOST: u8 = 10;
pub const RECEIVER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 2, 1);
pub const PORT: u16 = 5201;

/// The receiver address of host `h` of a topology (docs/kernel.md "Topologies").
pub fn host_addr(h: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 77, 2, 1 + h as u8)
}

/// At most this many hosts (end nodes) in a topology run.
pub const MAX_HOSTS: usize = 200;

pub fn sender_addr(flow: u32) -> Ipv4Addr {
    Ipv4Addr::new(
        SENDER_NET[0],
        SENDER_NET[1],
        SENDER_NET[2],
        FIRST_HOST + flow as u8,
    )
}

/// The flow whose sender owns this address, if any.
pub fn flow_of_addr(a: [u8; 4], n_flows: usize) -> Option<u32> {
    if a[..3] == SENDER_NET && a[3] >= FIRST_HOST && ((a[3] - FIRST_HOST) as usize) < n_flows {
        Some((a[3] - FIRST_HOST) as u32)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_plan_round_trips() {
        for f in [0u32, 1, 7, 199] {
            assert_eq!(flow_of_addr(sender_addr(f).octets(), 200), Some(f));
        }
        assert_eq!(flow_of_addr([10, 77, 1, 12], 2), None); // beyond the run's flows
        assert_eq!(flow_of_addr(RECEIVER_ADDR.octets(), 2), None);
    }

    #[test]
    fn reads_the_documented_ir() {
        let text = r#"{"ir_version":3,"name":"x","duration_ns":1000000000,"seed":1,
          "sample_interval_ns":10000000,"measure":{"from_ns":0,"to_ns":1000000000},
          "mss":1448,"header_bytes":52,
          "links":[{"name":"link","from":"left","to":"right","capacity":{"kind":"constant","rate_bps":80000000},"delay_ns":0,
                  "buffer":{"bytes":437500,"packets":null},"loss":{"kind":"bernoulli","p":0.0},
                  "schedule":[{"at_ns":5,"rate_bps":1,"delay_ns":null,"loss":null}],"qdisc":{"kind":"droptail"},
                  "policer":{"rate_bps":5000000,"burst_bytes":30000}}],
          "flows":[{"id":0,"group":0,"cca":"cubic","cca_params":{},"rtt_ns":25000000,
                    "start_ns":0,"stop_ns":null,"bytes":null,"rwnd_bytes":null,"ecn":false}]}"#;
        let ir = Ir::from_json(text).unwrap();
        assert_eq!(
            ir.link().capacity,
            Capacity::Constant {
                rate_bps: 80_000_000
            }
        );
        assert_eq!(ir.link().schedule[0].rate_bps, Some(1));
        assert_eq!(ir.flows[0].cca, "cubic");
        // the emulator runs the policer with the rest of the link model
        let p = ir.link().params(1, 0, 0).unwrap();
        assert_eq!(p.policer.map(|p| (p.rate_bps, p.burst_bytes)), Some((5_000_000, 30_000)));
        // the old free-form `aqm` string is not a link field any more
        assert!(Ir::from_json(
            &text.replace(r#""qdisc":{"kind":"droptail"}"#, r#""aqm":"droptail""#)
        )
        .is_err());
    }
}
