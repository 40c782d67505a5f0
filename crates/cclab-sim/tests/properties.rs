//! Property tests over random scenarios (docs/validation.md check 6): at every
//! instant every packet sent is delivered, dropped, queued or in flight, and
//! the bottleneck never carries more than its capacity.
mod common;
use cclab_sim::cc::ALGORITHMS;
use cclab_sim::scenario::*;
use common::*;
use proptest::prelude::*;

fn scenario(rate_mbps: u64, rtts: Vec<u64>, ccas: Vec<usize>, sacks: Vec<bool>, buf_pkts: u64, loss: f64, starts: Vec<u64>, dur_ms: u64, seed: u64) -> Scenario {
    let flows = rtts
        .iter()
        .zip(&ccas)
        .zip(&starts)
        .enumerate()
        .map(|(i, ((&rtt, &c), &st))| {
            let mut f = flow(i as u32, ALGORITHMS[c % ALGORITHMS.len()], rtt);
            f.start_ns = st * MS;
            // DCTCP requires ECN; the other algorithms run with or without it.
            f.ecn = f.cca == "dctcp" || (c / ALGORITHMS.len()) % 2 == 1;
            // Some flows without SACK (NewReno recovery).
            f.sack = sacks[i];
            f
        })
        .collect();
    let mut sc = dumbbell(rate_mbps * 1_000_000, flows, 1.0, 1);
    sc.duration_ns = dur_ms * MS;
    sc.measure.to_ns = sc.duration_ns;
    sc.links[0].buffer = Buffer { bytes: None, packets: Some(buf_pkts) };
    sc.links[0].loss = Loss::Bernoulli { p: loss };
    sc.seed = seed;
    sc
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn packets_are_conserved_and_capacity_is_respected(
        rate_mbps in 1u64..200,
        n in 1usize..5,
        rtts in proptest::collection::vec(2u64..150, 5),
        ccas in proptest::collection::vec(0usize..64, 5),
        sacks in proptest::collection::vec(proptest::bool::weighted(0.7), 5),
        starts in proptest::collection::vec(0u64..1500, 5),
        buf_pkts in 1u64..400,
        loss in prop_oneof![Just(0.0), 0.0..0.05],
        dur_ms in 500u64..3000,
        seed in 0u64..1000,
    ) {
        let sc = scenario(rate_mbps, rtts[..n].to_vec(), ccas[..n].to_vec(), sacks[..n].to_vec(), buf_pkts, loss, starts[..n].to_vec(), dur_ms, seed);
        let out = cclab_sim::simulate(&sc).unwrap();
        let c = &out.counters;
        prop_assert_eq!(c.sent_packets, c.delivered_packets + c.dropped_packets + c.queued_packets + c.in_flight_packets, "{:?}", c);
        // Bottleneck output per sample ≤ capacity × interval + one packet in service at the boundary.
        let l = &out.link;
        let rate = rate_mbps as f64 * 1e6;
        let mut prev = (0u64, 0u64);
        for k in 0..l.time_ns.len() {
            let bits = (l.egress_bytes[k] - prev.1) as f64 * 8.0;
            let cap = rate * (l.time_ns[k] - prev.0) as f64 / 1e9;
            prop_assert!(bits <= cap + 1500.0 * 8.0, "sample {}: {} bits > capacity {}", k, bits, cap);
            prev = (l.time_ns[k], l.egress_bytes[k]);
        }
        // Goodput (in-order payload at the receivers) never exceeds what left the bottleneck.
        let f = &out.flows;
        let last = f.len() - n;
        let delivered: u64 = (last..f.len()).map(|i| f.delivered_bytes[i]).sum();
        prop_assert!(delivered <= *l.egress_bytes.last().unwrap());
    }
}
