//! Unit tests of the emulator's path model: per-flow access and ACK delays
//! around the shared bottleneck (whose own tests — rate, trace, schedule,
//! loss, queue disciplines — live in cclab-netmodel). No namespaces, no
//! clock: time is handed in.

use super::*;
use cclab_netmodel::qdisc::{Limits, QdiscConfig};
use cclab_netmodel::{Capacity, LossConfig, LossModel, RateSteps, Rng};

const MS: Ns = 1_000_000;

fn params(rate_bps: u64) -> LinkParams {
    LinkParams {
        bottleneck: BottleneckParams {
            capacity: Capacity::Rate(RateSteps::new(rate_bps, vec![])),
            delay_steps: vec![(0, 0)],
            loss_steps: vec![],
            limits: Limits {
                bytes: Some(1 << 40),
                packets: None,
            },
            qdisc: QdiscConfig::Droptail {},
            policer: None,
            seed: 1,
            origin: 0,
        },
        flows: vec![FlowPath::default()],
        other: FlowPath::default(),
    }
}

/// Drive the model to `until`, collecting (dir, due, id, ce) and dropped ids.
#[allow(clippy::type_complexity)]
fn drain(m: &mut LinkModel<u32>, until: Ns) -> (Vec<(Dir, Ns, u32, bool)>, Vec<u32>) {
    let mut got = vec![];
    let mut dropped = vec![];
    m.advance(until, &mut |d| match d {
        Delivery::Deliver { dir, due, pkt, ce } => got.push((dir, due, pkt, ce)),
        Delivery::Drop(p, _) => dropped.push(p),
    });
    (got, dropped)
}

#[test]
fn constant_rate_serializes_back_to_back_then_propagates() {
    // 12 Mbit/s: a 1500-byte packet takes exactly 1 ms; link delay 5 ms.
    let mut p = params(12_000_000);
    p.bottleneck.delay_steps = vec![(0, 5 * MS)];
    let mut m = LinkModel::new(p);
    for i in 0..3 {
        m.on_data(0, Some(0), 1500, false, i);
    }
    assert_eq!(m.next_event(), Some(0));
    let (got, dropped) = drain(&mut m, 100 * MS);
    assert!(dropped.is_empty());
    assert_eq!(
        got.iter().map(|g| g.1).collect::<Vec<_>>(),
        vec![6 * MS, 7 * MS, 8 * MS]
    );
    let c = m.counters();
    assert_eq!(
        (c.egress_bytes, c.departed_packets, c.sojourn_sum_ns),
        (4500, 3, 3 * MS)
    );
    assert_eq!(m.flow_counters[0].egress_bytes, 4500);
}

#[test]
fn per_flow_paths_give_each_flow_its_rtt() {
    // Flow 0: rtt 20 ms, flow 1: rtt 60 ms, link delay 5 ms, fast link.
    let mut p = params(100_000_000_000);
    p.bottleneck.delay_steps = vec![(0, 5 * MS)];
    p.flows = vec![
        FlowPath {
            access_delay_ns: 5 * MS,
            ack_delay_ns: 10 * MS,
        },
        FlowPath {
            access_delay_ns: 25 * MS,
            ack_delay_ns: 30 * MS,
        },
    ];
    let mut m = LinkModel::new(p);
    m.on_data(0, Some(1), 40, false, 1);
    m.on_data(0, Some(0), 40, false, 0);
    m.on_ack(0, Some(0), 10);
    m.on_ack(0, Some(1), 11);
    let (got, _) = drain(&mut m, 100 * MS);
    let at = |id| got.iter().find(|g| g.2 == id).unwrap().1;
    // one-way data = access + serialization (3.2 ns) + link delay
    assert_eq!(at(0) / 1000, 10 * MS / 1000);
    assert_eq!(at(1) / 1000, 30 * MS / 1000);
    assert_eq!(at(10), 10 * MS);
    assert_eq!(at(11), 30 * MS);
    assert_eq!((at(0) + at(10)) / 1000, 20 * MS / 1000);
}

#[test]
fn packets_of_no_flow_take_the_other_path() {
    let mut p = params(100_000_000_000);
    p.other = FlowPath {
        access_delay_ns: 0,
        ack_delay_ns: 7 * MS,
    };
    let mut m = LinkModel::new(p);
    m.on_ack(0, None, 1);
    let (got, _) = drain(&mut m, 100 * MS);
    assert_eq!(got, vec![(Dir::Ack, 7 * MS, 1, false)]);
}

#[test]
fn ce_marks_reach_the_caller_with_the_packet() {
    let mut p = params(12_000_000);
    p.bottleneck.qdisc = QdiscConfig::Codel(cclab_netmodel::qdisc::CodelConfig {
        target_ns: 5 * MS,
        interval_ns: 100 * MS,
        mtu_bytes: 1500,
        ecn: true,
    });
    let mut m = LinkModel::new(p);
    let mut marked = 0;
    for i in 0..400u32 {
        m.on_data(i as Ns * MS / 2, Some(0), 1500, true, i);
        marked += drain(&mut m, i as Ns * MS / 2)
            .0
            .iter()
            .filter(|g| g.3)
            .count() as u64;
    }
    marked += drain(&mut m, 10_000 * MS).0.iter().filter(|g| g.3).count() as u64;
    assert!(marked > 0 && marked == m.counters().marks_ce, "{marked}");
}

#[test]
fn conservation_under_random_operations() {
    // At every step: packets in = delivered + dropped + at the bottleneck + in the delay lines.
    let mut rng = Rng::new(42, 0);
    for case in 0..20u64 {
        let mut p = params(10_000_000 + case * 7_000_000);
        let limit = 20_000 + case * 1000;
        p.bottleneck.limits = Limits {
            bytes: Some(limit),
            packets: (case % 2 == 0).then_some(10),
        };
        p.bottleneck.loss_steps = vec![(0, LossModel::new(LossConfig::Bernoulli { p: 0.05 }))];
        p.bottleneck.delay_steps = vec![(0, MS), (50 * MS, 3 * MS), (80 * MS, 0)];
        p.bottleneck.seed = case;
        p.flows = vec![
            FlowPath {
                access_delay_ns: MS,
                ack_delay_ns: 2 * MS,
            },
            FlowPath {
                access_delay_ns: 9 * MS,
                ack_delay_ns: 10 * MS,
            },
        ];
        let mut m = LinkModel::new(p);
        let (mut now, mut id, mut delivered, mut dropped, mut last_due) =
            (0u64, 0u32, 0u64, 0u64, 0u64);
        for _ in 0..3000 {
            now += rng.next_u64() % 300_000;
            let flow = (rng.next_u64() % 3) as u32;
            let flow = if flow == 2 { None } else { Some(flow) };
            if rng.next_u64().is_multiple_of(4) {
                m.on_ack(now, flow, id);
            } else {
                m.on_data(now, flow, 40 + (rng.next_u64() % 1461) as u32, false, id);
            }
            id += 1;
            m.advance(now, &mut |d| match d {
                Delivery::Deliver { dir, due, .. } => {
                    assert!(due <= now);
                    if dir == Dir::Data {
                        assert!(
                            due >= last_due,
                            "data leaves in FIFO order after the bottleneck"
                        );
                        last_due = due;
                    }
                    delivered += 1;
                }
                Delivery::Drop(..) => dropped += 1,
            });
            let c = m.counters();
            assert_eq!(c.data_in + c.ack_in, id as u64);
            assert_eq!(
                id as u64,
                delivered + dropped + m.held_packets() + m.in_flight_packets()
            );
            assert_eq!(m.drops(), dropped);
            assert!(m.queue_bytes() <= limit);
        }
    }
}

#[test]
fn set_up_before_t0_skips_the_queue_and_the_rate_then_the_link_applies() {
    // 64 handshakes at once into a 10-packet queue at 12 Mbit/s (1 ms a
    // packet), link delay 5 ms, t0 at 100 ms: before t0 every packet only
    // propagates (none dropped, none serialized); from t0 on the queue and
    // the rate apply again.
    let mut p = params(12_000_000);
    p.bottleneck.delay_steps = vec![(0, 5 * MS)];
    p.bottleneck.limits = Limits { bytes: None, packets: Some(10) };
    p.bottleneck.origin = 100 * MS;
    let mut m = LinkModel::new(p);
    for i in 0..64 {
        m.on_data(MS, Some(0), 1500, false, i);
    }
    let (got, dropped) = drain(&mut m, 99 * MS);
    assert!(dropped.is_empty());
    assert_eq!(got.len(), 64);
    assert!(got.iter().all(|g| g.1 == 6 * MS), "delay only");
    for i in 0..64 {
        m.on_data(100 * MS, Some(0), 1500, false, 100 + i);
    }
    let (got, dropped) = drain(&mut m, 1000 * MS);
    // one in service and ten queued, the rest dropped; 1 ms apart
    assert_eq!((got.len(), dropped.len()), (11, 53));
    assert_eq!(got.iter().map(|g| g.1).collect::<Vec<_>>(), (0..11).map(|k| 106 * MS + k * MS).collect::<Vec<_>>());
}
