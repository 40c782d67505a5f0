//! Quick engine-only timing of the reference scenarios (the user-facing
//! benchmark is `cclab bench`, which also reports peak memory).
//! Run: cargo run --release -p cclab-sim --example perf [-- NAME]
use cclab_sim::scenario::*;
use std::collections::BTreeMap;

fn sc(rate: u64, rtt_ms: u64, dur_s: u64, flows: &[(&str, u32)]) -> Scenario {
    let mut fl = vec![];
    for (cca, n) in flows {
        for _ in 0..*n {
            let id = fl.len() as u32;
            fl.push(Flow { id, group: 0, cca: cca.to_string(), cca_params: BTreeMap::new(), rtt_ns: rtt_ms * 1_000_000, start_ns: 0, stop_ns: None, bytes: None, rwnd_bytes: None, ecn: false, path: vec!["link".into()], ack_path: vec![], ack_every: 2, sack: true });
        }
    }
    let bdp = rate * rtt_ms / 8000;
    Scenario {
        ir_version: IR_VERSION, name: "perf".into(), duration_ns: dur_s * 1_000_000_000, seed: 1, sample_interval_ns: 10_000_000,
        measure: Measure { from_ns: 0, to_ns: dur_s * 1_000_000_000 }, mss: 1448, header_bytes: 52,
        links: vec![Link { name: "link".into(), from: "left".into(), to: "right".into(), capacity: Capacity::Constant { rate_bps: rate }, delay_ns: 0, buffer: Buffer { bytes: Some(bdp), packets: None }, loss: Loss::Bernoulli { p: 0.0 }, schedule: vec![], qdisc: QdiscConfig::Droptail {} }],
        flows: fl,
        host: Host { tcp_rmem: [4096, 131_072, 64 << 20], tcp_wmem: [4096, 16_384, 64 << 20], rcv_truesize: 2304, jitter_ns: vec![] },
    }
}

fn main() {
    let only = std::env::args().nth(1);
    let cases = vec![
        ("cubic-100M-25ms-60s", sc(100_000_000, 25, 60, &[("cubic", 1)])),
        ("reno2-cubic2-100M-25ms-60s", sc(100_000_000, 25, 60, &[("reno", 2), ("cubic", 2)])),
        ("cubic-1G-100ms-60s", sc(1_000_000_000, 100, 60, &[("cubic", 1)])),
        ("cubic100-1G-25ms-60s", sc(1_000_000_000, 25, std::env::var("DUR").map(|d| d.parse().unwrap()).unwrap_or(60), &[("cubic", 100)])),
        ("bbr-1G-100ms-60s", sc(1_000_000_000, 100, 60, &[("bbr", 1)])),
        ("bbr2-cubic2-100M-25ms-60s", sc(100_000_000, 25, 60, &[("bbr", 2), ("cubic", 2)])),
    ];
    for (name, s) in cases {
        if only.as_deref().is_some_and(|o| !name.contains(o)) { continue; }
        let t = std::time::Instant::now();
        let out = cclab_sim::simulate(&s).unwrap();
        let wall = t.elapsed().as_secs_f64();
        let pkts = *out.link.departed_packets.last().unwrap();
        let util = *out.link.egress_bytes.last().unwrap() as f64 * 8.0 / (s.duration_ns as f64 / 1e9) / match s.links[0].capacity { Capacity::Constant { rate_bps } => rate_bps as f64, _ => 1.0 };
        println!("{name:30} wall {wall:7.3}s  {:6.2} M pkts/s  {:7.1} sim-s/s  events {:>10}  util {:.3}", pkts as f64 / wall / 1e6, s.duration_ns as f64 / 1e9 / wall, out.counters.events, util);
    }
}
