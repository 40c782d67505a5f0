//! One link model, two drivers: the same arrival sequence through the
//! simulator's path (cclab-sim's `SimLink`, driven by its event queue, with
//! arrivals pushed before the link's own events so that equal times are
//! resolved by the link and not by the queue) and through the kernel
//! backend's emulator path (cclab-link's `LinkModel`, driven the way the
//! real-time loop drives it) gives the same departures (packet, time at the
//! receiver, CE mark), the same drops (packet, cause) and the same counters,
//! for every queue discipline, capacity kind, schedule and loss model, with
//! and without a token-bucket policer.
use cclab_link::model::{Delivery, FlowPath, LinkModel, LinkParams};
use cclab_netmodel::DropCause;
use cclab_sim::event::{Event, EventQueue};
use cclab_sim::link::{Packet, Seg, SimLink};
use cclab_sim::scenario::*;
use cclab_sim::time::Time;
use proptest::prelude::*;

const MS: u64 = 1_000_000;

/// (time, flow, wire length, ECN-capable)
type Arrival = (u64, u32, u32, bool);

#[derive(Debug, PartialEq)]
struct Trace {
    delivered: Vec<(u32, u64, bool)>,
    dropped: Vec<(u32, DropCause)>,
    counters: [u64; 11],
}

fn counters(c: &cclab_netmodel::Counters) -> [u64; 11] {
    [
        c.arrival_bytes,
        c.arrival_packets,
        c.egress_bytes,
        c.departed_packets,
        c.sojourn_sum_ns,
        c.busy_ns,
        c.drops_overflow,
        c.drops_random,
        c.drops_aqm,
        c.marks_ce,
        c.drops_policer,
    ]
}

fn sim_path(link: &Link, seed: u64, arrivals: &[Arrival]) -> Trace {
    let mut sl = SimLink::new(0, link, seed, 8).unwrap();
    sl.drop_log = Some(vec![]);
    let mut q = EventQueue::new();
    for (i, a) in arrivals.iter().enumerate() {
        q.push(Time(a.0), Event::Access(i as u32));
    }
    let (mut rx, mut delivered) = (vec![], vec![]);
    while let Some((now, ev)) = q.pop() {
        match ev {
            Event::Access(i) => {
                let (_, flow, len, ect) = arrivals[i as usize];
                let pkt = Packet::new(flow, len, ect, Seg::new(i, 0, false));
                sl.arrive(now, pkt, &mut q, &mut rx);
            }
            Event::Bottleneck(_) => sl.on_bottleneck(now, &mut q, &mut rx),
            Event::Propagation(_) => sl.on_propagation(now, &mut q, &mut rx),
            other => panic!("unexpected event {other:?}"),
        }
        delivered.extend(rx.drain(..).map(|p: Packet| (p.data.seq, now.0, p.ce)));
    }
    let dropped = sl.drop_log.take().unwrap().into_iter().map(|(p, c)| (p.data.seq, c)).collect();
    Trace { delivered, dropped, counters: counters(&sl.model.counters) }
}

fn emulator_path(link: &Link, seed: u64, arrivals: &[Arrival]) -> Trace {
    let p = LinkParams {
        bottleneck: link.params(seed, 0, 0).unwrap(),
        flows: vec![FlowPath::default(); 8],
        other: FlowPath::default(),
    };
    let mut m: LinkModel<u32> = LinkModel::new(p);
    let (mut delivered, mut dropped) = (vec![], vec![]);
    let mut take = |d: Delivery<u32>| match d {
        Delivery::Deliver { due, pkt, ce, .. } => delivered.push((pkt, due, ce)),
        Delivery::Drop(pkt, c) => dropped.push((pkt, c)),
    };
    for (i, &(t, flow, len, ect)) in arrivals.iter().enumerate() {
        m.on_data(t, Some(flow), len, ect, i as u32);
        m.advance(t, &mut take);
    }
    m.advance(u64::MAX / 4, &mut take);
    let c = m.counters();
    let counters = [
        c.arrival_bytes,
        c.arrival_packets,
        c.egress_bytes,
        c.departed_packets,
        c.sojourn_sum_ns,
        c.busy_ns,
        c.drops_overflow,
        c.drops_random,
        c.drops_aqm,
        c.marks_ce,
        c.drops_policer,
    ];
    Trace { delivered, dropped, counters }
}

fn qdisc(kind: usize, scale: u64, ecn: bool) -> QdiscConfig {
    // `scale` shrinks the AQMs' time constants so short sequences exercise them
    match kind % 7 {
        0 => QdiscConfig::Droptail {},
        1 => QdiscConfig::DropFront {},
        2 => QdiscConfig::RandomDrop {},
        3 => QdiscConfig::Red(RedConfig {
            min_th_bytes: 3000 * scale,
            max_th_bytes: 9000 * scale,
            max_p: 0.1,
            weight: 0.05,
            avpkt_bytes: 1000,
            bandwidth_bps: 10_000_000,
            gentle: scale.is_multiple_of(2),
            ecn,
            harddrop: false,
        }),
        4 => QdiscConfig::Codel(CodelConfig { target_ns: scale * 100_000, interval_ns: scale * 2 * MS, mtu_bytes: 1500, ecn }),
        5 => QdiscConfig::FqCodel(FqCodelConfig {
            target_ns: scale * 100_000,
            interval_ns: scale * 2 * MS,
            mtu_bytes: 1500,
            ecn,
            quantum_bytes: 300 + 300 * scale as u32,
            flows: 4 + scale as u32,
            memory_limit_bytes: 40_000 * scale,
            drop_batch: 1 + scale as u32,
        }),
        _ => QdiscConfig::Pie(PieConfig {
            target_ns: scale * 300_000,
            tupdate_ns: scale * 300_000,
            alpha: 0.125,
            beta: 1.25,
            max_burst_ns: scale * MS,
            mtu_bytes: 1500,
            ecn,
            bytemode: scale.is_multiple_of(3),
        }),
    }
}

/// `policer`: (on, rate in 100 kbit/s, bucket in 500-byte units).
#[allow(clippy::too_many_arguments)]
fn link(cap: usize, rate_mbps: u64, delay_us: u64, buffer: (bool, u64), loss: (usize, f64), kind: usize, scale: u64, ecn: bool, policer: (bool, u64, u64)) -> Link {
    let capacity = match cap {
        0 | 1 => Capacity::Constant { rate_bps: rate_mbps * 1_000_000 + if cap == 1 { 7 } else { 0 } },
        _ => Capacity::Trace {
            path: "synthetic".into(),
            // bursts and gaps, duplicate opportunities, one at the period's end
            opportunities_ns: vec![MS, MS, 2 * MS, 2 * MS + 500_000, 5 * MS, 9 * MS, 12 * MS, 12 * MS],
            period_ns: 12 * MS,
            bytes_per_opportunity: 1500,
        },
    };
    let schedule = if cap == 1 {
        vec![
            Change { at_ns: 20 * MS, rate_bps: Some(0), delay_ns: Some(delay_us * 500), loss: None },
            Change { at_ns: 25 * MS, rate_bps: Some(rate_mbps * 3_000_000 + 1), delay_ns: None, loss: Some(Loss::Bernoulli { p: 0.02 }) },
        ]
    } else {
        vec![]
    };
    let loss = match loss.0 % 3 {
        0 => Loss::Bernoulli { p: 0.0 },
        1 => Loss::Bernoulli { p: loss.1 },
        _ => Loss::GilbertElliott { p: loss.1, r: 0.3, h: 0.2, k: 0.99 },
    };
    Link {
        name: "link".into(),
        from: "left".into(),
        to: "right".into(),
        capacity,
        delay_ns: delay_us * 1000,
        buffer: if buffer.0 { Buffer { bytes: Some(1500 + buffer.1 * 500), packets: None } } else { Buffer { bytes: None, packets: Some(1 + buffer.1 / 2) } },
        loss,
        schedule,
        qdisc: qdisc(kind, scale, ecn),
        policer: policer.0.then_some(PolicerConfig { rate_bps: policer.1 * 100_000, burst_bytes: policer.2 * 500 }),
    }
}

fn arrivals(gaps: &[u64], lens: &[u32], flows: &[u32], ects: &[bool], coarse: bool) -> Vec<Arrival> {
    let mut t = 0;
    gaps.iter()
        .zip(lens)
        .zip(flows)
        .zip(ects)
        .map(|(((&g, &l), &f), &e)| {
            // coarse: times on a 120 µs grid, so arrivals coincide with
            // departures at 100 Mbit/s (1500 B = 120 µs)
            t += if coarse { (g % 4) * 120_000 } else { g };
            (t, f, if coarse { 1500 } else { l }, e)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn simulator_and_emulator_paths_agree_packet_for_packet(
        cap in 0usize..3,
        rate_mbps in 1u64..200,
        delay_us in 0u64..5000,
        buffer in (any::<bool>(), 0u64..200),
        loss in (0usize..3, 0.0f64..0.1),
        kind in 0usize..7,
        scale in 1u64..8,
        ecn in any::<bool>(),
        n in 50usize..1500,
        gaps in proptest::collection::vec(0u64..400_000, 1500),
        lens in proptest::collection::vec(40u32..1501, 1500),
        flows in proptest::collection::vec(0u32..6, 1500),
        ects in proptest::collection::vec(any::<bool>(), 1500),
        coarse in any::<bool>(),
        seed in 0u64..1000,
        policer in (0u64..4, 1u64..2000, 1u64..40),
    ) {
        let rate = if coarse && cap == 0 { 100 } else { rate_mbps };
        let l = link(cap, rate, delay_us, buffer, loss, kind, scale, ecn, (policer.0 == 0, policer.1, policer.2));
        let a = arrivals(&gaps[..n], &lens[..n], &flows[..n], &ects[..n], coarse);
        let sim = sim_path(&l, seed, &a);
        let emu = emulator_path(&l, seed, &a);
        prop_assert_eq!(sim.delivered.len() + sim.dropped.len(), n, "every packet delivered or dropped");
        prop_assert_eq!(&sim.dropped, &emu.dropped);
        prop_assert_eq!(&sim.delivered, &emu.delivered);
        prop_assert_eq!(sim.counters, emu.counters);
    }
}

#[test]
fn every_discipline_acts_in_the_parity_runs() {
    // The property above is only as good as its inputs: check that the
    // generated links do drop, mark and hold, for each discipline.
    for kind in 0..7 {
        let l = link(0, 5, 100, (true, 40), (0, 0.0), kind, 2, true, (false, 0, 0));
        let gaps = vec![400_000u64; 3000]; // 30 Mbit/s of 1500-byte packets into 5 Mbit/s
        let a = arrivals(&gaps, &[1500; 3000], &(0..3000).map(|i| i % 5).collect::<Vec<_>>(), &[true; 3000], false);
        let t = sim_path(&l, 1, &a);
        assert_eq!(t, emulator_path(&l, 1, &a), "kind {kind}");
        let c = &t.counters;
        eprintln!("{}: overflow {} aqm {} marks {}", l.qdisc.kind(), c[6], c[8], c[9]);
        assert!(c[6] + c[8] + c[9] > 0, "{}: no drop or mark", l.qdisc.kind());
        if kind >= 3 {
            assert!(c[8] + c[9] > 0, "{}: the AQM never acted", l.qdisc.kind());
        }
    }
    // and the policer (4 Mbit/s of tokens for 30 Mbit/s offered) polices
    let l = link(0, 5, 100, (true, 40), (0, 0.0), 0, 2, true, (true, 40, 6));
    let a = arrivals(&[400_000; 3000], &[1500; 3000], &[0; 3000], &[true; 3000], false);
    let t = sim_path(&l, 1, &a);
    assert_eq!(t, emulator_path(&l, 1, &a));
    let policed = t.counters[10];
    eprintln!("policer: {policed} of 3000 dropped, {} overflow", t.counters[6]);
    assert!(policed > 2000, "{policed}");
}
