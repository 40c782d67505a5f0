//! Quick engine-only timing of the reference scenarios (the user-facing
//! benchmark is `cclab bench`, which also reports peak memory).
//! Run: cargo run --release -p cclab-sim --example perf [-- NAME]
use cclab_sim::scenario::*;
use std::collections::BTreeMap;

fn sc(rate: u64, rtt_ms: u64, dur_s: u64, flows: &[(&str, u32)]) -> Scenario {
    staggered(rate, rtt_ms, dur_s, flows, 0)
}

/// Flow i starts at i × `stagger_ns` (the `cclab bench` many-flow cases).
fn staggered(rate: u64, rtt_ms: u64, dur_s: u64, flows: &[(&str, u32)], stagger_ns: u64) -> Scenario {
    let mut fl = vec![];
    for (cca, n) in flows {
        for _ in 0..*n {
            let id = fl.len() as u32;
            let start_ns = id as u64 * stagger_ns;
            fl.push(Flow { id, group: 0, cca: cca.to_string(), cca_params: BTreeMap::new(), rtt_ns: rtt_ms * 1_000_000, start_ns, start_offset_ns: 0, stop_ns: None, bytes: None, rwnd_bytes: None, ecn: false, path: vec!["link".into()], ack_path: vec![], ack_every: 2, sack: true });
        }
    }
    let bdp = rate * rtt_ms / 8000;
    Scenario {
        ir_version: IR_VERSION, name: "perf".into(), duration_ns: dur_s * 1_000_000_000, seed: 1, sample_interval_ns: 10_000_000,
        measure: Measure { from_ns: 0, to_ns: dur_s * 1_000_000_000 }, mss: 1448, header_bytes: 52,
        links: vec![Link { name: "link".into(), from: "left".into(), to: "right".into(), capacity: Capacity::Constant { rate_bps: rate }, delay_ns: 0, buffer: Buffer { bytes: Some(bdp), packets: None }, loss: Loss::Bernoulli { p: 0.0 }, schedule: vec![], qdisc: QdiscConfig::Droptail {}, policer: None }],
        flows: fl,
        host: Host { tcp_rmem: [4096, 131_072, 64 << 20], tcp_wmem: [4096, 16_384, 64 << 20], rcv_truesize: 2304, jitter_ns: vec![], pauses: None, read_delay_ns: vec![], jitter_p: vec![], read_delay_p: vec![] },
        record: None,
    }
}

/// The per-flow record interval `cclab` resolves by default (python/cclab/resolve.py
/// `flows_interval_ns`): every sample up to 2 000 000 per-flow rows, else the
/// smallest of 2, 5, 10, 20, 50, … samples that stays below (500 ms for 10 000
/// flows × 60 s at 10 ms samples, as `cclab bench` runs them).
fn auto_record(s: &Scenario) -> Option<RecordCfg> {
    let ladder = (0..19).flat_map(|e| [1u64, 2, 5].map(|m| m * 10u64.pow(e)));
    let k = ladder.take_while(|k| k * s.sample_interval_ns <= s.duration_ns).find(|k| s.flows.len() as u64 * (s.duration_ns / (k * s.sample_interval_ns)) <= 2_000_000)?;
    (k > 1).then(|| RecordCfg { flows_interval_ns: k * s.sample_interval_ns, flows_stored: true })
}

fn main() {
    let only = std::env::args().nth(1);
    // DUR=seconds: simulated seconds of every case (60, as `cclab bench`, by default).
    let dur = std::env::var("DUR").map(|d| d.parse().unwrap()).unwrap_or(60);
    let cases = vec![
        ("cubic-100M-25ms", sc(100_000_000, 25, dur, &[("cubic", 1)])),
        ("reno2-cubic2-100M-25ms", sc(100_000_000, 25, dur, &[("reno", 2), ("cubic", 2)])),
        ("cubic-1G-100ms", sc(1_000_000_000, 100, dur, &[("cubic", 1)])),
        ("cubic100-1G-25ms", staggered(1_000_000_000, 25, dur, &[("cubic", 100)], 10_000_000)),
        ("bbr-1G-100ms", sc(1_000_000_000, 100, dur, &[("bbr", 1)])),
        ("bbr2-cubic2-100M-25ms", sc(100_000_000, 25, dur, &[("bbr", 2), ("cubic", 2)])),
        ("cubic100-10G-25ms", staggered(10_000_000_000, 25, dur, &[("cubic", 100)], 10_000_000)),
        ("cubic1000-1G-25ms", staggered(1_000_000_000, 25, dur, &[("cubic", 1000)], 1_000_000)),
        ("cubic10000-10G-25ms", staggered(10_000_000_000, 25, dur, &[("cubic", 10_000)], 100_000)),
    ];
    // SAMPLE=ms overrides the 10 ms sample interval (to separate the packet path from sampling).
    let sample_ns = std::env::var("SAMPLE").map(|d| d.parse::<u64>().unwrap() * 1_000_000).ok();
    for (name, mut s) in cases {
        if only.as_deref().is_some_and(|o| !name.contains(o)) { continue; }
        if let Some(ns) = sample_ns { s.sample_interval_ns = ns; }
        s.record = auto_record(&s);
        // FLOWS=ms overrides the per-flow record interval (a multiple of the sample interval).
        if let Ok(ms) = std::env::var("FLOWS") {
            s.record = Some(RecordCfg { flows_interval_ns: ms.parse::<u64>().unwrap() * 1_000_000, flows_stored: true });
        }
        let t = std::time::Instant::now();
        let out = cclab_sim::simulate(&s).unwrap();
        let wall = t.elapsed().as_secs_f64();
        let pkts = *out.link.departed_packets.last().unwrap();
        let util = *out.link.egress_bytes.last().unwrap() as f64 * 8.0 / (s.duration_ns as f64 / 1e9) / match s.links[0].capacity { Capacity::Constant { rate_bps } => rate_bps as f64, _ => 1.0 };
        println!("{name:30} wall {wall:7.3}s  {:6.2} M pkts/s  {:7.1} sim-s/s  packets {pkts:>10}  events {:>10}  util {:.3}", pkts as f64 / wall / 1e6, s.duration_ns as f64 / 1e9 / wall, out.counters.events, util);
    }
}
