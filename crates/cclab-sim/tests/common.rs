//! Scenario builders shared by the integration tests.
#![allow(dead_code)]
use cclab_sim::scenario::*;
use std::collections::BTreeMap;

pub const MS: u64 = 1_000_000;
pub const S: u64 = 1_000_000_000;

pub fn flow(id: u32, cca: &str, rtt_ms: u64) -> Flow {
    Flow {
        id,
        group: id,
        cca: cca.into(),
        cca_params: BTreeMap::new(),
        rtt_ns: rtt_ms * MS,
        start_ns: 0,
        start_offset_ns: 0,
        stop_ns: None,
        bytes: None,
        rwnd_bytes: None,
        ecn: false,
        path: vec!["link".into()],
        ack_path: vec![],
        ack_every: 2,
        sack: true,
    }
}

/// The kernel backend's end hosts: tcp_rmem/wmem 4096 131072|16384 64 MiB, TUN truesize 2304.
pub fn host() -> Host {
    Host { tcp_rmem: [4096, 131_072, 64 << 20], tcp_wmem: [4096, 16_384, 64 << 20], rcv_truesize: 2304, jitter_ns: vec![], pauses: None, read_delay_ns: vec![], jitter_p: vec![], read_delay_p: vec![] }
}

/// A constant-rate dumbbell with a buffer of `bdp_mult` × rate × min RTT.
pub fn dumbbell(rate_bps: u64, flows: Vec<Flow>, bdp_mult: f64, duration_s: u64) -> Scenario {
    let min_rtt = flows.iter().map(|f| f.rtt_ns).min().unwrap();
    let bdp = rate_bps as f64 * min_rtt as f64 / 8e9;
    Scenario {
        ir_version: IR_VERSION,
        name: "test".into(),
        duration_ns: duration_s * S,
        seed: 1,
        sample_interval_ns: 10 * MS,
        measure: Measure { from_ns: 0, to_ns: duration_s * S },
        mss: 1448,
        header_bytes: 52,
        links: vec![Link {
            name: "link".into(),
            from: "left".into(),
            to: "right".into(),
            capacity: Capacity::Constant { rate_bps },
            delay_ns: 0,
            buffer: Buffer { bytes: Some((bdp * bdp_mult).ceil().max(1500.0) as u64), packets: None },
            loss: Loss::Bernoulli { p: 0.0 },
            schedule: vec![],
            qdisc: QdiscConfig::Droptail {},
            policer: None,
        }],
        flows,
        host: host(),
        record: None,
    }
}

/// Mean of a per-sample goodput (bit/s) over samples with time in [from_s, to_s).
pub fn goodput_bps(out: &cclab_sim::record::Output, flow: u32, from_s: f64, to_s: f64) -> f64 {
    let f = &out.flows;
    let (mut first, mut last) = (None, None);
    for i in 0..f.len() {
        if f.flow_id[i] != flow {
            continue;
        }
        let t = f.time_ns[i] as f64 / 1e9;
        if t >= from_s && first.is_none() {
            first = Some(i);
        }
        if t <= to_s {
            last = Some(i);
        }
    }
    let (a, b) = (first.unwrap(), last.unwrap());
    let bytes = (f.delivered_bytes[b] - f.delivered_bytes[a]) as f64;
    bytes * 8.0 / ((f.time_ns[b] - f.time_ns[a]) as f64 / 1e9)
}
