//! Queue disciplines through the simulator (docs/queues.md): what each AQM
//! is built to do, on the dumbbell with real TCP senders. Values are printed
//! with `--nocapture` (docs/validation.md lists them).
mod common;
use cclab_sim::record::Output;
use cclab_sim::scenario::*;
use cclab_sim::simulate;
use common::*;

/// Per-interval mean sojourn (ms) of the packets that left the bottleneck
/// in each sample interval with time in (from_s, to_s].
fn sojourn_ms(out: &Output, from_s: f64, to_s: f64) -> Vec<f64> {
    let l = &out.link;
    let mut v = vec![];
    for k in 1..l.time_ns.len() {
        let t = l.time_ns[k] as f64 / 1e9;
        let n = l.departed_packets[k] - l.departed_packets[k - 1];
        if t > from_s && t <= to_s && n > 0 {
            v.push((l.sojourn_sum_ns[k] - l.sojourn_sum_ns[k - 1]) as f64 / n as f64 / 1e6);
        }
    }
    v
}

fn percentile(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn utilization(out: &Output, rate_bps: f64, from_s: f64, to_s: f64) -> f64 {
    let l = &out.link;
    let i = l.time_ns.iter().position(|&t| t as f64 / 1e9 >= from_s).unwrap();
    let j = l.time_ns.iter().rposition(|&t| t as f64 / 1e9 <= to_s).unwrap();
    (l.egress_bytes[j] - l.egress_bytes[i]) as f64 * 8.0 / ((l.time_ns[j] - l.time_ns[i]) as f64 / 1e9) / rate_bps
}

fn last(v: &[u64]) -> u64 {
    *v.last().unwrap()
}

const MS_NS: u64 = 1_000_000;

fn codel() -> QdiscConfig {
    QdiscConfig::Codel(CodelConfig { target_ns: 5 * MS_NS, interval_ns: 100 * MS_NS, mtu_bytes: 1500, ecn: false })
}

fn fq_codel() -> QdiscConfig {
    QdiscConfig::FqCodel(FqCodelConfig {
        target_ns: 5 * MS_NS,
        interval_ns: 100 * MS_NS,
        mtu_bytes: 1500,
        ecn: true,
        quantum_bytes: 1514,
        flows: 1024,
        memory_limit_bytes: 32 << 20,
        drop_batch: 64,
    })
}

fn pie() -> QdiscConfig {
    QdiscConfig::Pie(PieConfig {
        target_ns: 15 * MS_NS,
        tupdate_ns: 15 * MS_NS,
        alpha: 0.125,
        beta: 1.25,
        max_burst_ns: 150 * MS_NS,
        mtu_bytes: 1500,
        ecn: false,
        bytemode: false,
    })
}

/// n CUBIC flows (starts 100 ms apart) on 100 Mbit/s / 50 ms with an 8-BDP buffer.
fn cubic_flows(n: u32, qdisc: QdiscConfig) -> Scenario {
    let flows = (0..n)
        .map(|i| {
            let mut f = flow(i, "cubic", 50);
            f.start_ns = i as u64 * 100 * MS;
            f
        })
        .collect();
    let mut sc = dumbbell(100_000_000, flows, 8.0, 30);
    sc.links[0].qdisc = qdisc;
    sc
}

#[test]
fn codel_holds_the_sojourn_near_its_target_on_a_deep_buffer_where_drop_tail_fills_it() {
    // RFC 8289 §4.3: CoDel lets a standing queue of about `target` (5 ms)
    // form, whatever the buffer, and keeps the link busy (§4.2: interval ≈
    // a worst-case RTT). Drop-tail on the same 8-BDP (5 MB) buffer lets
    // CUBIC fill it: ~330 ms of queue.
    for n in [1, 4, 8] {
        let out = simulate(&cubic_flows(n, codel())).unwrap();
        let s = sojourn_ms(&out, 10.0, 30.0);
        let (p50, p95) = (percentile(s.clone(), 0.5), percentile(s, 0.95));
        let u = utilization(&out, 1e8, 10.0, 30.0);
        let l = &out.link;
        eprintln!(
            "codel {n} cubic: sojourn p50 {p50:.2} ms p95 {p95:.2} ms, utilization {u:.3}, aqm drops {}, overflow {}",
            last(&l.drops_aqm),
            last(&l.drops_overflow)
        );
        assert!(u >= 0.90, "{n} flows: utilization {u}");
        assert!(p95 <= 15.0, "{n} flows: p95 sojourn {p95} ms");
        assert_eq!(last(&l.drops_overflow), 0, "CoDel never lets the 8-BDP buffer fill");
        assert!(last(&l.drops_aqm) > 0);
        if n >= 4 {
            assert!((2.5..=15.0).contains(&p50), "{n} flows: median sojourn {p50} ms");
        } else {
            // One CUBIC flow: after CoDel's drop, fast convergence puts
            // W_max (= 0.85 × cwnd) just below the BDP and the flow plateaus
            // there for seconds (tcp_cubic.c), so the queue is mostly empty:
            // the median is below target/2, never above target.
            assert!(p50 < 5.0, "1 flow: median sojourn {p50} ms");
        }
        let dt = simulate(&cubic_flows(n, QdiscConfig::Droptail {})).unwrap();
        let buffer = cubic_flows(n, QdiscConfig::Droptail {}).links[0].buffer.bytes.unwrap() as f64;
        let peak = *dt.link.queue_bytes.iter().max().unwrap() as f64;
        let dt_p50 = percentile(sojourn_ms(&dt, 10.0, 30.0), 0.5);
        eprintln!("droptail {n} cubic: sojourn p50 {dt_p50:.1} ms, peak queue {:.3} of the buffer", peak / buffer);
        assert!(peak >= 0.95 * buffer, "drop-tail: peak queue {peak} of {buffer}");
        assert!(dt_p50 > 10.0 * p50.max(2.5), "drop-tail median {dt_p50} ms");
    }
}

#[test]
fn fq_codel_shares_the_link_between_bbr_and_cubic_where_drop_tail_does_not() {
    // RFC 8290 §1, §4: flow queueing isolates flows, so a BBR flow cannot
    // take the CUBIC flow's share. On drop-tail with a 1-BDP buffer BBR
    // takes most of the link (Hock et al., "Experimental Evaluation of BBR
    // Congestion Control", ICNP 2017: BBR dominates shallow buffers); a
    // single CoDel queue does not fix that, FQ-CoDel does.
    let run = |q: QdiscConfig, bdp: f64| {
        let mut sc = dumbbell(100_000_000, vec![flow(0, "bbr", 50), flow(1, "cubic", 50)], bdp, 60);
        sc.links[0].qdisc = q;
        let out = simulate(&sc).unwrap();
        let (b, c) = (goodput_bps(&out, 0, 20.0, 60.0), goodput_bps(&out, 1, 20.0, 60.0));
        let jain = (b + c).powi(2) / (2.0 * (b * b + c * c));
        (b / (b + c), jain)
    };
    let (dt_share, dt_jain) = run(QdiscConfig::Droptail {}, 1.0);
    let (cd_share, cd_jain) = run(codel(), 1.0);
    eprintln!("drop-tail 1 BDP: BBR share {dt_share:.3}, Jain {dt_jain:.3}; CoDel: BBR share {cd_share:.3}, Jain {cd_jain:.3}");
    assert!(dt_share > 0.75 && dt_jain < 0.8);
    assert!(cd_share > 0.75);
    for bdp in [1.0, 4.0] {
        let (share, jain) = run(fq_codel(), bdp);
        eprintln!("fq_codel {bdp} BDP: BBR share {share:.3}, Jain {jain:.3}");
        assert!(jain >= 0.95, "fq_codel at {bdp} BDP: Jain {jain}");
    }
}

#[test]
fn pie_settles_near_its_15_ms_target_on_a_deep_buffer() {
    // RFC 8033 §4.2: the controller drives the queue delay to QDELAY_REF
    // (15 ms); on an 8-BDP buffer drop-tail would sit at ~330 ms.
    for n in [4, 8] {
        let out = simulate(&cubic_flows(n, pie())).unwrap();
        let s = sojourn_ms(&out, 10.0, 30.0);
        let p50 = percentile(s, 0.5);
        let u = utilization(&out, 1e8, 10.0, 30.0);
        eprintln!("pie {n} cubic: sojourn p50 {p50:.2} ms, utilization {u:.3}, aqm drops {}", last(&out.link.drops_aqm));
        assert!((10.0..=20.0).contains(&p50), "{n} flows: median sojourn {p50} ms");
        assert!(u >= 0.95, "{n} flows: utilization {u}");
        assert_eq!(last(&out.link.drops_overflow), 0);
    }
}

#[test]
fn red_drops_early_and_keeps_the_queue_below_max_th() {
    // Floyd & Jacobson 1993 §4: RED drops before the buffer is full, so the
    // queue stays around its thresholds instead of filling the buffer.
    // 4 CUBIC flows, 100 Mbit/s / 50 ms, buffer 4 BDP (2.5 MB), thresholds
    // 100/300 KB, max_p 0.1, w = 1/256. (The drop probability against the
    // average is checked exactly in cclab-netmodel's red.rs; with TCP the
    // flows synchronize — several early drops in a row empty the queue, the
    // classic RED oscillation — so the average is not a stable number.)
    let red = RedConfig {
        min_th_bytes: 100_000,
        max_th_bytes: 300_000,
        max_p: 0.1,
        weight: 1.0 / 256.0,
        avpkt_bytes: 1000,
        bandwidth_bps: 100_000_000,
        gentle: false,
        ecn: false,
        harddrop: false,
    };
    let flows = (0..4).map(|i| flow(i, "cubic", 50)).collect();
    let mut sc = dumbbell(100_000_000, flows, 4.0, 30);
    sc.links[0].qdisc = QdiscConfig::Red(red);
    let out = simulate(&sc).unwrap();
    let l = &out.link;
    let q: Vec<u64> = (0..l.time_ns.len()).filter(|&k| l.time_ns[k] > 10 * S).map(|k| l.queue_bytes[k]).collect();
    let peak = *q.iter().max().unwrap();
    let u = utilization(&out, 1e8, 10.0, 30.0);
    eprintln!("red 4 cubic: peak queue {peak} B, utilization {u:.3}, aqm drops {}, overflow {}", last(&l.drops_aqm), last(&l.drops_overflow));
    assert!(peak <= 300_000, "peak queue {peak}");
    assert!(last(&l.drops_aqm) > 0);
    assert_eq!(last(&l.drops_overflow), 0);
    assert!(u >= 0.95, "utilization {u}");
}

#[test]
fn ecn_capable_flows_are_marked_not_dropped_and_marks_reach_the_receiver() {
    // FQ-CoDel marks ECT packets CE (ECN on by default, RFC 8290 §5.2):
    // the marking and its count, per flow (the senders' reaction is checked
    // in tests/ecn.rs).
    let mut flows = vec![flow(0, "cubic", 50), flow(1, "cubic", 50)];
    flows[0].ecn = true;
    let mut sc = dumbbell(100_000_000, flows, 2.0, 20);
    sc.links[0].qdisc = fq_codel();
    let out = simulate(&sc).unwrap();
    let l = &out.link;
    let ce: u64 = out.flow_info.iter().map(|f| f.ce_segments).sum();
    eprintln!("ecn: marks {}, CE segments received {ce} (flow 0 {}, flow 1 {}), aqm drops {}", last(&l.marks_ce), out.flow_info[0].ce_segments, out.flow_info[1].ce_segments, last(&l.drops_aqm));
    assert!(last(&l.marks_ce) > 0);
    assert_eq!(out.flow_info[1].ce_segments, 0, "a not-ECT flow is never marked");
    assert!(ce > 0 && ce <= last(&l.marks_ce));
    // flow 1 (not ECN-capable) is controlled by drops
    assert!(last(&l.drops_aqm) > 0);
}

#[test]
fn same_scenario_and_seed_give_identical_records_with_every_qdisc() {
    let qdiscs = [QdiscConfig::Droptail {}, QdiscConfig::RandomDrop {}, codel(), fq_codel(), pie()];
    for q in qdiscs {
        let mut sc = dumbbell(50_000_000, vec![flow(0, "cubic", 30), flow(1, "bbr", 60)], 2.0, 5);
        sc.links[0].qdisc = q;
        sc.links[0].loss = Loss::Bernoulli { p: 0.001 };
        let (a, b) = (simulate(&sc).unwrap(), simulate(&sc).unwrap());
        assert_eq!(a.link.egress_bytes, b.link.egress_bytes);
        assert_eq!(a.link.drops_aqm, b.link.drops_aqm);
        assert_eq!(a.link.sojourn_sum_ns, b.link.sojourn_sum_ns);
        assert_eq!(a.flows.delivered_bytes, b.flows.delivered_bytes);
    }
}
