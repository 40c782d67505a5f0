//! ECN end to end (RFC 3168 with Linux's sender and receiver) and DCTCP
//! (RFC 8257) through the simulator. Values are printed with `--nocapture`
//! (docs/validation.md lists them).
mod common;
use cclab_sim::record::Output;
use cclab_sim::scenario::*;
use cclab_sim::simulate;
use common::*;

const US: u64 = 1_000;

fn sojourn_ms(out: &Output, from_s: f64) -> Vec<f64> {
    let l = &out.link;
    (1..l.time_ns.len())
        .filter(|&k| l.time_ns[k] as f64 / 1e9 > from_s && l.departed_packets[k] > l.departed_packets[k - 1])
        .map(|k| (l.sojourn_sum_ns[k] - l.sojourn_sum_ns[k - 1]) as f64 / (l.departed_packets[k] - l.departed_packets[k - 1]) as f64 / 1e6)
        .collect()
}

fn percentile(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn utilization(out: &Output, rate_bps: f64, from_s: f64) -> f64 {
    let l = &out.link;
    let i = l.time_ns.iter().position(|&t| t as f64 / 1e9 >= from_s).unwrap();
    let j = l.time_ns.len() - 1;
    (l.egress_bytes[j] - l.egress_bytes[i]) as f64 * 8.0 / ((l.time_ns[j] - l.time_ns[i]) as f64 / 1e9) / rate_bps
}

fn last(v: &[u64]) -> u64 {
    *v.last().unwrap()
}

fn codel(ecn: bool) -> QdiscConfig {
    QdiscConfig::Codel(CodelConfig { target_ns: 5 * MS, interval_ns: 100 * MS, mtu_bytes: 1500, ecn })
}

fn red(ecn: bool) -> QdiscConfig {
    QdiscConfig::Red(RedConfig {
        min_th_bytes: 100_000,
        max_th_bytes: 300_000,
        max_p: 0.1,
        weight: 1.0 / 256.0,
        avpkt_bytes: 1000,
        bandwidth_bps: 100_000_000,
        gentle: false,
        ecn,
        harddrop: false,
    })
}

/// `n` flows of `cca`, 100 Mbit/s / 50 ms, 8-BDP buffer, 30 s.
fn flows(cca: &str, n: u32, ecn: bool, q: QdiscConfig) -> Scenario {
    let fl = (0..n)
        .map(|i| {
            let mut f = flow(i, cca, 50);
            f.start_ns = i as u64 * 100 * MS;
            f.ecn = ecn;
            f
        })
        .collect();
    let mut sc = dumbbell(100_000_000, fl, 8.0, 30);
    sc.links[0].qdisc = q;
    sc
}

#[test]
fn ecn_reno_and_cubic_are_marked_not_dropped_and_react_like_to_drops() {
    // RFC 3168 §5–6: under an ECN-marking AQM an ECN flow gets CE marks
    // instead of drops and reduces its window on ECE as it would on a loss,
    // so the queue is controlled as well as by dropping: the same standing
    // queue, no AQM drops, no overflow, no retransmissions.
    for (name, q_ecn, q_drop) in [("codel", codel(true), codel(false)), ("red", red(true), red(false))] {
        for cca in ["reno", "cubic"] {
            let ecn = simulate(&flows(cca, 4, true, q_ecn.clone())).unwrap();
            let drop = simulate(&flows(cca, 4, false, q_drop.clone())).unwrap();
            let (le, ld) = (&ecn.link, &drop.link);
            let (pe, pd) = (percentile(sojourn_ms(&ecn, 10.0), 0.5), percentile(sojourn_ms(&drop, 10.0), 0.5));
            let (ue, ud) = (utilization(&ecn, 1e8, 10.0), utilization(&drop, 1e8, 10.0));
            let ce: u64 = ecn.flow_info.iter().map(|f| f.ce_segments).sum();
            let retrans = *ecn.flows.retrans_segs.iter().max().unwrap();
            eprintln!(
                "{name} {cca} ×4: ECN marks {} (CE received {ce}), aqm drops {}, overflow {}, retrans {retrans}, sojourn p50 {pe:.2} ms, util {ue:.3} | \
                 dropping: aqm drops {}, sojourn p50 {pd:.2} ms, util {ud:.3}",
                last(&le.marks_ce), last(&le.drops_aqm), last(&le.drops_overflow), last(&ld.drops_aqm)
            );
            assert!(last(&le.marks_ce) > 0);
            assert_eq!(last(&le.drops_aqm), 0, "{name} {cca}: no ECT packet is dropped by the AQM");
            assert_eq!(last(&le.drops_overflow), 0);
            assert_eq!(retrans, 0, "{name} {cca}: nothing lost, nothing retransmitted");
            assert!(ce > 0 && ce <= last(&le.marks_ce));
            assert!(last(&ld.drops_aqm) > 0 && last(&ld.marks_ce) == 0);
            assert!(ue >= 0.9, "{name} {cca}: utilization {ue}");
            // The ECN flows hold the queue as the dropping ones do (the
            // reaction is the same window reduction), not at the buffer.
            assert!(pe <= 2.0 * pd.max(2.5), "{name} {cca}: ECN sojourn p50 {pe} vs dropping {pd}");
        }
    }
}

#[test]
fn ecn_flows_reduce_at_most_once_per_round_trip() {
    // RFC 3168 §6.1.2: "the TCP source halves the congestion window … at
    // most once per window of data". One CUBIC flow under marking CoDel:
    // between two successive reductions (cwnd drops seen in 1-ms samples)
    // there is at least about one RTT (50 ms).
    let mut sc = flows("cubic", 1, true, codel(true));
    sc.sample_interval_ns = MS;
    sc.duration_ns = 20 * S;
    let out = simulate(&sc).unwrap();
    let f = &out.flows;
    let mut cuts = vec![];
    for i in 1..f.len() {
        // a reduction: ssthresh changes (set on entering CWR)
        let (a, b) = (f.ssthresh_bytes[i - 1], f.ssthresh_bytes[i]);
        if a.is_finite() && b.is_finite() && b < a || a.is_nan() && b.is_finite() {
            cuts.push(f.time_ns[i]);
        }
    }
    let min_gap = cuts.windows(2).map(|w| w[1] - w[0]).min().unwrap();
    eprintln!("cubic ECN under codel: {} reductions in 20 s, shortest gap {:.1} ms", cuts.len(), min_gap as f64 / 1e6);
    assert!(cuts.len() >= 3);
    assert!(min_gap >= 45 * MS, "two reductions {} ms apart", min_gap as f64 / 1e6);
}

/// `n` DCTCP flows on a `rate` link with base RTT `rtt_ns`, step marking at
/// `k` packets, a deep (8-BDP, at least 200-packet) buffer.
fn dctcp(n: u32, rate: u64, rtt_ns: u64, k: u64, secs: u64) -> Scenario {
    let fl = (0..n)
        .map(|i| {
            let mut f = flow(i, "dctcp", 1);
            f.rtt_ns = rtt_ns;
            f.ecn = true;
            f.start_ns = i as u64 * 10 * MS;
            f
        })
        .collect();
    let mut sc = dumbbell(rate, fl, 8.0, secs);
    let min_buf = 200 * 1500;
    sc.links[0].buffer.bytes = Some(sc.links[0].buffer.bytes.unwrap().max(min_buf));
    sc.links[0].qdisc = QdiscConfig::Step(StepConfig { k_bytes: None, k_packets: Some(k), ecn: true });
    sc.sample_interval_ns = MS;
    sc
}

#[test]
fn dctcp_holds_the_queue_near_k_at_full_utilization() {
    // RFC 8257 §3 / Alizadeh et al. 2010 §3.3: with step marking at K the
    // DCTCP queue oscillates just above K (amplitude O(√(C·RTT))) while the
    // link stays busy — K > C·RTT/7 suffices for full throughput. Cases: the
    // paper's K = 20 packets at 1 Gbit/s and 65 packets at 10 Gbit/s.
    for (n, rate, rtt, k) in [(2, 1_000_000_000u64, 250 * US, 20u64), (4, 1_000_000_000, 500 * US, 20), (2, 10_000_000_000, 100 * US, 65)] {
        let secs = if rate > 1_000_000_000 { 2 } else { 4 };
        let out = simulate(&dctcp(n, rate, rtt, k, secs)).unwrap();
        let l = &out.link;
        let q: Vec<f64> = (0..l.time_ns.len()).filter(|&i| l.time_ns[i] > S / 2).map(|i| l.queue_packets[i] as f64).collect();
        let (p10, p50, p90) = (percentile(q.clone(), 0.1), percentile(q.clone(), 0.5), percentile(q, 0.9));
        let u = utilization(&out, rate as f64, 0.5);
        let goodputs: Vec<f64> = (0..n).map(|i| goodput_bps(&out, i, 0.5, secs as f64) / 1e6).collect();
        eprintln!(
            "dctcp ×{n} {} Gbit/s rtt {} µs K {k}: queue p10/p50/p90 {p10}/{p50}/{p90} pkts, util {u:.4}, marks {}, aqm drops {}, overflow {}, goodput Mbit/s {goodputs:.0?}",
            rate / 1_000_000_000,
            rtt / US,
            last(&l.marks_ce),
            last(&l.drops_aqm),
            last(&l.drops_overflow)
        );
        assert!(u >= 0.95, "utilization {u}");
        assert!((0.5 * k as f64..=2.0 * k as f64).contains(&p50), "queue p50 {p50} vs K {k}");
        assert_eq!(last(&l.drops_overflow), 0);
        assert_eq!(last(&l.drops_aqm), 0);
    }
}

#[test]
fn dctcp_keeps_a_shorter_queue_than_ecn_reno_on_the_same_step_queue() {
    // RFC 8257 §1: proportional reduction — Reno with ECN halves on every
    // marked window and, to keep the link busy, needs K ≈ C·RTT; DCTCP cuts
    // by α/2 and keeps full throughput with a small K. Same K, same link:
    // DCTCP has the higher utilization.
    let d = simulate(&dctcp(2, 1_000_000_000, 250 * US, 20, 4)).unwrap();
    let mut sc = dctcp(2, 1_000_000_000, 250 * US, 20, 4);
    for f in &mut sc.flows {
        f.cca = "reno".into();
    }
    let r = simulate(&sc).unwrap();
    let (ud, ur) = (utilization(&d, 1e9, 0.5), utilization(&r, 1e9, 0.5));
    eprintln!("K = 20 pkts at 1 Gbit/s, 250 µs: utilization dctcp {ud:.4}, ecn reno {ur:.4}");
    assert!(ud > ur);
}

#[test]
fn dctcp_without_ecn_is_refused() {
    let mut sc = dctcp(1, 1_000_000_000, 250 * US, 20, 1);
    sc.flows[0].ecn = false;
    let e = simulate(&sc).err().unwrap();
    assert!(e.contains("dctcp") && e.contains("ecn"), "{e}");
}

#[test]
fn ecn_runs_are_deterministic() {
    for sc in [flows("cubic", 2, true, codel(true)), dctcp(2, 1_000_000_000, 250 * US, 20, 1)] {
        let (a, b) = (simulate(&sc).unwrap(), simulate(&sc).unwrap());
        assert_eq!(a.link.marks_ce, b.link.marks_ce);
        assert_eq!(a.link.egress_bytes, b.link.egress_bytes);
        assert_eq!(a.flows.cwnd_bytes, b.flows.cwnd_bytes);
    }
}

#[test]
fn bbr3_ecn_low_responds_to_marks_and_holds_a_shorter_queue() {
    // google/bbr v3 tcp_bbr.c: with ECN negotiated and the route's ecn_low
    // feature (cca parameter `ecn_low`), on a path with min_rtt ≤ 5 ms, BBRv3
    // tracks the CE ratio (α, g = 1/16) and once per round with ECE cuts
    // inflight_lo to ×(1 − α/3) outside bandwidth probing; PROBE_UP stops when
    // more than half of a round is marked; a cycle of marks without loss is
    // followed by an immediate re-probe. On a step-marking queue (K = 20
    // packets, 1 Gbit/s, 250 µs) the marked flows keep the queue shorter than
    // the same flows ignoring ECN, at full utilization.
    let run = |ecn_low: bool| {
        let mut sc = dctcp(2, 1_000_000_000, 250 * US, 20, 4);
        sc.links[0].buffer.bytes = Some(400 * 1500);
        for f in &mut sc.flows {
            f.cca = "bbr3".into();
            if ecn_low {
                f.cca_params.insert("ecn_low".into(), 1.0);
            }
        }
        let out = simulate(&sc).unwrap();
        let l = &out.link;
        let q: Vec<f64> = (0..l.time_ns.len()).filter(|&i| l.time_ns[i] > S).map(|i| l.queue_packets[i] as f64).collect();
        let retrans: u64 = (0..2).map(|i| out.flows.retrans_segs.iter().zip(&out.flows.flow_id).filter(|(_, &f)| f == i).map(|(r, _)| *r).max().unwrap()).sum();
        (percentile(q.clone(), 0.5), percentile(q, 0.95), utilization(&out, 1e9, 1.0), last(&l.marks_ce), retrans)
    };
    let (p50e, p95e, ue, me, re) = run(true);
    let (p50n, p95n, un, mn, rn) = run(false);
    eprintln!("bbr3 ×2, 1 Gbit/s, 250 µs, step K = 20 pkts: ecn_low queue p50/p95 {p50e}/{p95e} pkts, util {ue:.4}, marks {me}, retrans {re} | without: {p50n}/{p95n} pkts, util {un:.4}, marks {mn}, retrans {rn}");
    assert!(ue >= 0.95, "utilization {ue}");
    assert!(p50e <= 40.0 && p50e < p50n, "queue p50 with ECN {p50e} vs without {p50n}");
}
