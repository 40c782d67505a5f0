//! Unit tests of the bottleneck: rate, trace, schedule, loss, queue, delay.

use super::*;
use crate::capacity::{RateSteps, Trace};
use crate::loss::LossConfig;

const MS: Ns = 1_000_000;

fn params(capacity: Capacity) -> BottleneckParams {
    BottleneckParams {
        capacity,
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
    }
}

fn rate(bps: u64) -> Capacity {
    Capacity::Rate(RateSteps::new(bps, vec![]))
}

fn pkt(id: u32, len: u32) -> Packet<u32> {
    Packet::new(0, len, false, id)
}

/// A little driver: arrivals (time, id, len) in order, everything run to
/// `until`; returns departures (id, at, exit) and drops (id, cause).
#[allow(clippy::type_complexity)]
fn run(
    b: &mut Bottleneck<u32>,
    arrivals: &[(Ns, u32, u32)],
    until: Ns,
) -> (Vec<(u32, Ns, Ns)>, Vec<(u32, DropCause)>) {
    let mut out = vec![];
    for &(t, id, len) in arrivals {
        b.arrive(t, pkt(id, len), &mut out);
    }
    b.advance(until, &mut out);
    let mut dep = vec![];
    let mut drops = vec![];
    for o in out {
        match o {
            Out::Depart { pkt, at, exit } => dep.push((pkt.data, at, exit)),
            Out::Drop { pkt, cause } => drops.push((pkt.data, cause)),
        }
    }
    (dep, drops)
}

#[test]
fn a_packet_leaves_after_l_times_8_over_r_then_propagates() {
    // 1500 B at 10 Mbit/s: 1.2 ms; link delay 5 ms; the second packet,
    // queued behind the first, leaves 1.2 ms later and waited 1.2 ms − 10 ns.
    let mut p = params(rate(10_000_000));
    p.delay_steps = vec![(0, 5 * MS)];
    let mut b = Bottleneck::new(p);
    let (dep, drops) = run(&mut b, &[(0, 0, 1500), (10, 1, 1500)], 100 * MS);
    assert!(drops.is_empty());
    assert_eq!(
        dep,
        vec![(0, 1_200_000, 6_200_000), (1, 2_400_000, 7_400_000)]
    );
    assert_eq!(b.counters.sojourn_sum_ns, 1_200_000 - 10);
    assert_eq!(
        (b.counters.departed_packets, b.counters.egress_bytes),
        (2, 3000)
    );
}

#[test]
fn serialization_carries_the_remainder_so_the_rate_is_exact() {
    // 7 Mbit/s: 1500 B take 1 714 285.714… ns. Packets alternate between
    // 1 714 285 and 1 714 286 ns so that n packets take ⌊n · 12000/7e6 s⌋.
    let mut b = Bottleneck::new(params(rate(7_000_000)));
    let n = 10_000u32;
    let arrivals: Vec<_> = (0..n).map(|i| (0, i, 1500)).collect();
    let (dep, _) = run(&mut b, &arrivals, u64::MAX / 2);
    for (k, d) in dep.iter().enumerate() {
        let exact = (k as u128 + 1) * 12_000 * 1_000_000_000 / 7_000_000;
        assert_eq!(d.1 as u128, exact, "packet {k}");
    }
}

#[test]
fn long_run_rate_does_not_drift_and_busy_time_tracks_the_clock() {
    let mut b = Bottleneck::new(params(rate(333_000_000)));
    let mut out = vec![];
    for i in 0..100_000 {
        b.arrive(0, pkt(i, 1500), &mut out);
    }
    for k in 1..=3u64 {
        b.advance(k * 10_000_000, &mut out);
        assert_eq!(b.busy_ns_at(k * 10_000_000), k * 10_000_000);
    }
    b.advance(u64::MAX / 2, &mut out);
    let Some(Out::Depart { at, .. }) = out.last() else {
        panic!()
    };
    let expect = 100_000.0 * 1500.0 * 8.0 / 333e6 * 1e9;
    assert!((*at as f64 - expect).abs() <= 1.0, "{at} vs {expect}");
}

#[test]
fn busy_time_counts_serialization_only() {
    // 12 Mbit/s: 1 ms per packet. Two at 0, one at 5 ms: busy [0, 2) and [5, 6).
    let mut b = Bottleneck::new(params(rate(12_000_000)));
    let mut out = vec![];
    b.arrive(0, pkt(0, 1500), &mut out);
    b.arrive(0, pkt(1, 1500), &mut out);
    b.advance(MS / 2, &mut out);
    assert_eq!(b.busy_ns_at(MS / 2), MS / 2);
    b.advance(4 * MS, &mut out);
    assert_eq!(b.busy_ns_at(4 * MS), 2 * MS);
    b.arrive(5 * MS, pkt(2, 1500), &mut out);
    b.advance(10 * MS, &mut out);
    assert_eq!(b.busy_ns_at(10 * MS), 3 * MS);
}

#[test]
fn byte_limit_counts_waiting_packets_not_the_one_in_service() {
    // 3000-byte buffer: one in service + two waiting; the fourth is dropped;
    // once the first is done the next starts and there is room again.
    let mut p = params(rate(12_000_000));
    p.limits = Limits {
        bytes: Some(3000),
        packets: None,
    };
    let mut b = Bottleneck::new(p);
    let (_, drops) = run(
        &mut b,
        &[(0, 0, 1500), (0, 1, 1500), (0, 2, 1500), (0, 3, 1500)],
        0,
    );
    assert_eq!(drops, vec![(3, DropCause::Overflow)]);
    assert_eq!(
        (b.queue_bytes(), b.queue_packets(), b.held_packets()),
        (3000, 2, 3)
    );
    // at 1 ms packet 0 completes (before the arrival is judged): room for one
    let (_, drops) = run(&mut b, &[(MS, 4, 1500)], MS);
    assert!(drops.is_empty());
    assert_eq!(b.counters.drops_overflow, 1);
}

#[test]
fn packet_limit_and_an_idle_link_passing_a_one_packet_buffer() {
    let mut p = params(rate(12_000_000));
    p.limits = Limits {
        bytes: None,
        packets: Some(1),
    };
    let mut b = Bottleneck::new(p);
    let (dep, drops) = run(&mut b, &[(0, 0, 100), (0, 1, 100), (0, 2, 100)], 10 * MS);
    assert_eq!(drops, vec![(2, DropCause::Overflow)]);
    assert_eq!(dep.len(), 2);
}

#[test]
fn rate_change_lets_the_packet_in_service_finish_at_the_old_rate() {
    // 12 Mbit/s until 0.5 ms, then 24: packet 0 takes 1 ms, packet 1 0.5 ms.
    let mut b = Bottleneck::new(params(Capacity::Rate(RateSteps::new(
        12_000_000,
        vec![(MS / 2, 24_000_000)],
    ))));
    let (dep, _) = run(&mut b, &[(0, 0, 1500), (0, 1, 1500)], 10 * MS);
    assert_eq!(
        dep.iter().map(|d| d.1).collect::<Vec<_>>(),
        vec![MS, MS + MS / 2]
    );
}

#[test]
fn an_outage_holds_packets_in_the_queue_until_the_rate_returns() {
    let mut b = Bottleneck::new(params(Capacity::Rate(RateSteps::new(
        0,
        vec![(5 * MS, 12_000_000)],
    ))));
    let mut out = vec![];
    b.arrive(0, pkt(0, 1500), &mut out);
    b.arrive(MS, pkt(1, 1500), &mut out);
    assert_eq!((b.queue_packets(), b.next_event()), (2, Some(5 * MS)));
    let (dep, _) = run(&mut b, &[], 100 * MS);
    assert_eq!(
        dep.iter().map(|d| d.1).collect::<Vec<_>>(),
        vec![6 * MS, 7 * MS]
    );
    assert_eq!(b.counters.sojourn_sum_ns, 5 * MS + 5 * MS);
}

#[test]
fn a_delay_decrease_never_reorders() {
    // delay 10 ms, then 1 ms from 1.5 ms: packet 1 (done at 2 ms) would
    // arrive at 3 ms, before packet 0 (11 ms); FIFO holds it to 11 ms.
    let mut p = params(rate(12_000_000));
    p.delay_steps = vec![(0, 10 * MS), (MS + MS / 2, MS)];
    let mut b = Bottleneck::new(p);
    let (dep, _) = run(&mut b, &[(0, 0, 1500), (0, 1, 1500)], 100 * MS);
    assert_eq!(dep, vec![(0, MS, 11 * MS), (1, 2 * MS, 11 * MS)]);
    assert_eq!(b.delay_at(0), 10 * MS);
    assert_eq!(b.delay_at(2 * MS), MS);
}

#[test]
fn seeded_random_loss_before_the_queue_on_its_own_stream() {
    let run_seed = |seed, qdisc: QdiscConfig| {
        let mut p = params(rate(1_000_000_000_000));
        p.loss_steps = vec![(0, LossModel::new(LossConfig::Bernoulli { p: 0.2 }))];
        p.seed = seed;
        p.qdisc = qdisc;
        let mut b = Bottleneck::new(p);
        let arrivals: Vec<_> = (0..20_000u32).map(|i| (i as Ns * 1000, i, 100)).collect();
        let (_, drops) = run(&mut b, &arrivals, u64::MAX / 2);
        drops.into_iter().map(|d| d.0).collect::<Vec<_>>()
    };
    let a = run_seed(5, QdiscConfig::Droptail {});
    assert_eq!(
        a,
        run_seed(5, QdiscConfig::Droptail {}),
        "same seed, same losses"
    );
    assert_ne!(a, run_seed(6, QdiscConfig::Droptail {}));
    // another qdisc (drawing from its own stream) does not move the losses
    assert_eq!(a, run_seed(5, QdiscConfig::RandomDrop {}));
    let rate = a.len() as f64 / 20_000.0;
    assert!((rate - 0.2).abs() < 0.015, "{rate}");
}

#[test]
fn a_loss_schedule_switches_the_model() {
    let mut p = params(rate(1_000_000_000_000));
    p.loss_steps = vec![(10 * MS, LossModel::new(LossConfig::Bernoulli { p: 1.0 }))];
    let mut b = Bottleneck::new(p);
    let (dep, drops) = run(&mut b, &[(0, 0, 100), (20 * MS, 1, 100)], 100 * MS);
    assert_eq!(dep.len(), 1);
    assert_eq!(drops, vec![(1, DropCause::Random)]);
}

#[test]
fn the_policer_drops_non_conforming_packets_after_random_loss_before_the_queue() {
    // 1 Mbit/s of tokens, a 3000-byte bucket, in front of a 100 Mbit/s link:
    // of five 1500-byte packets at once two pass; 12 ms later one more.
    let mut p = params(rate(100_000_000));
    p.policer = Some(PolicerConfig {
        rate_bps: 1_000_000,
        burst_bytes: 3000,
    });
    let mut b = Bottleneck::new(p.clone());
    let mut arrivals: Vec<_> = (0..5).map(|i| (0, i, 1500)).collect();
    arrivals.push((12 * MS, 5, 1500));
    arrivals.push((12 * MS, 6, 1500));
    let (dep, drops) = run(&mut b, &arrivals, 100 * MS);
    assert_eq!(dep.iter().map(|d| d.0).collect::<Vec<_>>(), [0, 1, 5]);
    let policed = [2, 3, 4, 6].map(|i| (i, DropCause::Policer));
    assert_eq!(drops, policed);
    assert_eq!(b.counters.drops_policer, 4);
    assert_eq!(b.counters.arrival_packets, 7, "policed packets arrived");
    assert_eq!(b.counters.drops_overflow + b.counters.drops_random, 0);
    // A randomly lost packet takes no tokens: with loss p = 1 until 1 ms,
    // the bucket is still full after it.
    p.loss_steps = vec![
        (0, LossModel::new(LossConfig::Bernoulli { p: 1.0 })),
        (MS, LossModel::none()),
    ];
    let mut b = Bottleneck::new(p);
    let (dep, drops) = run(
        &mut b,
        &[(0, 0, 1500), (MS, 1, 1500), (MS, 2, 1500)],
        100 * MS,
    );
    assert_eq!(drops, vec![(0, DropCause::Random)]);
    assert_eq!(dep.len(), 2);
}

#[test]
fn trace_opportunities_are_shared_by_small_packets_unused_bytes_are_lost() {
    // Opportunities every 1 ms (1500 B), period 10 ms. Two 700-byte packets
    // share the 1 ms opportunity; the third does not fit the 100 bytes left
    // and leaves at 2 ms. A packet arriving at 2.5 ms cannot use what the
    // 2 ms opportunity left over: 3 ms.
    let tr = Trace::new(0, (1..=10).map(|k| k * MS).collect(), 10 * MS, 1500).unwrap();
    let mut b = Bottleneck::new(params(Capacity::Trace(tr)));
    let (dep, _) = run(
        &mut b,
        &[
            (0, 0, 700),
            (0, 1, 700),
            (0, 2, 700),
            (2 * MS + MS / 2, 3, 100),
        ],
        100 * MS,
    );
    assert_eq!(
        dep.iter().map(|d| d.1).collect::<Vec<_>>(),
        vec![MS, MS, 2 * MS, 3 * MS]
    );
    // waiting for the opportunity is queueing: 1+1+2 ms, then 0.5 ms
    assert_eq!(b.counters.sojourn_sum_ns, 4 * MS + MS / 2);
}

#[test]
fn trace_repeats_with_its_period_and_a_packet_at_an_opportunity_uses_it() {
    // Opportunities at 1, 3, 4 ms, period 4 ms (Mahimahi: last line = period).
    let ms = MS;
    let tr = Trace::new(0, vec![ms, 3 * ms, 4 * ms], 4 * ms, 1500).unwrap();
    let mut b = Bottleneck::new(params(Capacity::Trace(tr)));
    let arrivals: Vec<_> = (0..5).map(|i| (0, i, 1500)).collect();
    let (dep, _) = run(&mut b, &arrivals, 100 * ms);
    assert_eq!(
        dep.iter().map(|d| d.1 / ms).collect::<Vec<_>>(),
        vec![1, 3, 4, 5, 7]
    );
    // an idle link: a packet arriving exactly at an opportunity (8 ms) leaves then
    let (dep, _) = run(&mut b, &[(8 * ms, 9, 1500)], 100 * ms);
    assert_eq!(dep[0].1, 8 * ms);
    assert_eq!(b.capacity().sample_bps(0, 4 * ms), 9e6);
}

#[test]
fn trace_jumbo_packet_uses_consecutive_opportunities() {
    let tr = Trace::new(0, vec![MS, 2 * MS, 3 * MS], 3 * MS, 1500).unwrap();
    let mut b = Bottleneck::new(params(Capacity::Trace(tr)));
    // 9000 bytes: 6 opportunities, 1..6 ms; the next packet at 7 ms
    let (dep, _) = run(&mut b, &[(0, 0, 9000), (0, 1, 1500)], 100 * MS);
    assert_eq!(
        dep.iter().map(|d| d.1).collect::<Vec<_>>(),
        vec![6 * MS, 7 * MS]
    );
    assert_eq!(b.counters.sojourn_sum_ns, MS + 7 * MS);
    assert_eq!(b.counters.busy_ns, 5 * MS);
}

#[test]
fn ce_marks_ride_on_departing_packets() {
    // CoDel with ECN: a standing queue gets marked, and the marks come out
    // on the departures.
    let mut p = params(rate(12_000_000));
    p.qdisc = QdiscConfig::Codel(crate::qdisc::CodelConfig {
        target_ns: 5 * MS,
        interval_ns: 100 * MS,
        mtu_bytes: 1500,
        ecn: true,
    });
    let mut b = Bottleneck::new(p);
    let mut out = vec![];
    for i in 0..400u32 {
        b.arrive(i as Ns * MS / 2, Packet::new(0, 1500, true, i), &mut out);
    }
    b.advance(u64::MAX / 2, &mut out);
    let marked = out
        .iter()
        .filter(|o| matches!(o, Out::Depart { pkt, .. } if pkt.ce))
        .count() as u64;
    assert!(marked > 0);
    assert_eq!(marked, b.counters.marks_ce);
    assert_eq!(b.counters.drops_aqm, 0);
}

#[test]
fn conservation_under_random_operations() {
    // In = departed + dropped + held, at every step, for every discipline.
    let qdiscs = [
        QdiscConfig::Droptail {},
        QdiscConfig::DropFront {},
        QdiscConfig::RandomDrop {},
        QdiscConfig::Codel(crate::qdisc::CodelConfig {
            target_ns: MS,
            interval_ns: 10 * MS,
            mtu_bytes: 1500,
            ecn: false,
        }),
    ];
    let mut rng = Rng::new(42, 0);
    for (case, q) in qdiscs.iter().cycle().take(12).enumerate() {
        let mut p = params(rate(10_000_000 + case as u64 * 7_000_000));
        p.limits = Limits {
            bytes: Some(20_000 + case as u64 * 1000),
            packets: (case % 2 == 0).then_some(10),
        };
        p.loss_steps = vec![(0, LossModel::new(LossConfig::Bernoulli { p: 0.05 }))];
        p.delay_steps = vec![(0, MS), (50 * MS, 3 * MS), (80 * MS, 0)];
        p.qdisc = q.clone();
        p.seed = case as u64;
        // every third case polices at about the link rate
        p.policer = (case % 3 == 1).then_some(PolicerConfig {
            rate_bps: 10_000_000,
            burst_bytes: 6000,
        });
        let mut b = Bottleneck::new(p);
        let (mut now, mut out, mut last_exit) = (0u64, vec![], 0u64);
        let (mut departed, mut dropped) = (0u64, 0u64);
        for id in 0..3000u32 {
            now += rng.next_u64() % 300_000;
            b.arrive(now, pkt(id, 40 + (rng.next_u64() % 1461) as u32), &mut out);
            for o in out.drain(..) {
                match o {
                    Out::Depart { at, exit, .. } => {
                        assert!(at <= now && exit >= last_exit, "FIFO after the bottleneck");
                        last_exit = exit;
                        departed += 1;
                    }
                    Out::Drop { .. } => dropped += 1,
                }
            }
            let c = &b.counters;
            assert_eq!(id as u64 + 1, departed + dropped + b.held_packets());
            assert_eq!(
                c.drops_overflow + c.drops_random + c.drops_aqm + c.drops_policer,
                dropped
            );
            assert!(b.queue_bytes() <= 20_000 + case as u64 * 1000);
        }
    }
}

#[test]
fn a_packet_held_for_the_next_trace_opportunity_is_counted_as_queued() {
    // CoDel and FQ-CoDel decide at dequeue and cannot be peeked, so on a trace link a packet
    // that does not fit what is left of an opportunity is dequeued and held for the next. It
    // used to be counted neither as queued nor as departed: a sample's arrivals (departed +
    // dropped + the change of the queue) came out one short, even −1.
    let tr = Trace::new(0, (1..=10).map(|k| k * MS).collect(), 10 * MS, 1500).unwrap();
    for q in [
        QdiscConfig::Codel(crate::qdisc::CodelConfig {
            target_ns: 5 * MS,
            interval_ns: 100 * MS,
            mtu_bytes: 1500,
            ecn: false,
        }),
        QdiscConfig::Droptail {},
    ] {
        let mut p = params(Capacity::Trace(tr.clone()));
        p.qdisc = q;
        let mut b = Bottleneck::new(p);
        let mut out = vec![];
        let (mut departed, mut dropped) = (0u64, 0u64);
        for id in 0..200u32 {
            let now = id as Ns * MS / 3;
            b.arrive(now, pkt(id, 1052), &mut out);
            b.advance(now, &mut out);
            for o in out.drain(..) {
                match o {
                    Out::Depart { .. } => departed += 1,
                    Out::Drop { .. } => dropped += 1,
                }
            }
            let in_service = b.in_service().is_some() as u64;
            assert_eq!(id as u64 + 1, departed + dropped + b.queue_packets() + in_service, "packet {id}");
        }
        // one 1052-byte packet an opportunity: the second waits, held, for the next one
        assert!(departed > 0 && b.queue_packets() > 0);
    }
}
