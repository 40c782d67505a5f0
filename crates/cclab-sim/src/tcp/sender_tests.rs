//! Unit tests for the sender, driven by a tiny harness: send what the
//! sender allows, then feed it chosen ACKs at chosen times (in the spirit of
//! quiche's congestion/test_sender.rs). The rate-sampler checks that need a
//! link run the real simulator (`sim::harness`).

use super::receiver::{Ack, MAX_SACK_BLOCKS};
use super::rtt::RTO_MIN;
use super::sender::{Handshake, Sender, Transmit, XmitTimer};
use crate::cc::{CaState, Cc};
use crate::sim::harness::{Harness, Path};
use crate::time::{Bandwidth, Dur, Time};
use std::collections::BTreeMap;

const MS: u64 = 1_000_000;

/// No window limit and no RTT sample from the handshake: the tests set the RTT.
const NO_HANDSHAKE: Handshake = Handshake { rtt: None, wnd_end: u32::MAX };

fn sender(cca: &str) -> Sender {
    Sender::new(Time(0), Cc::new(cca, &BTreeMap::new(), 1).unwrap(), 1448, 52, None, Time(0), None, None, NO_HANDSHAKE)
}

fn send_all(s: &mut Sender, now: u64) -> Vec<Transmit> {
    let mut out = vec![];
    s.try_send(Time(now), &mut out);
    s.ensure_timer(Time(now));
    out
}

fn ack(cum: u32, sacks: &[(u32, u32)]) -> Ack {
    let mut a = Ack { cum, n_sacks: sacks.len() as u8, wnd_end: u32::MAX, ..Default::default() };
    a.sacks[..sacks.len()].copy_from_slice(&sacks[..sacks.len().min(MAX_SACK_BLOCKS)]);
    a
}

fn on_ack(s: &mut Sender, now: u64, a: Ack) -> Vec<Transmit> {
    let mut out = vec![];
    s.on_ack(Time(now), &a, &mut out);
    out
}

#[test]
fn initial_window_is_ten_segments() {
    // RFC 6928 / Linux TCP_INIT_CWND.
    let mut s = sender("reno");
    let tx = send_all(&mut s, 0);
    assert_eq!(tx.len(), 10);
    assert_eq!(tx.iter().map(|t| t.seq).collect::<Vec<_>>(), (0..10).collect::<Vec<_>>());
    assert_eq!(s.in_flight(), 10);
}

#[test]
fn slow_start_acks_release_two_segments_per_acked_segment() {
    let mut s = sender("reno");
    send_all(&mut s, 0);
    // One ACK for 2 segments: cwnd 10 → 12, in flight 8 → 4 new segments.
    let tx = on_ack(&mut s, 50 * MS, ack(2, &[]));
    assert_eq!(s.conn.cwnd, 12);
    assert_eq!(tx.len(), 4);
    assert_eq!(s.rtt.srtt, Some(Dur(50 * MS)));
}

#[test]
fn duplicate_acks_with_sack_do_not_raise_cwnd() {
    // tcp_may_raise_cwnd: without reordering, cwnd grows only on ACKs that
    // advance snd_una (FLAG_DATA_ACKED); a duplicate ACK that only SACKs new
    // data leaves it alone (RFC 5681 §3.1), so a flow whose loss is not yet
    // detected does not keep growing into a full queue.
    let mut s = sender("reno"); // slow start: any raise would add all it delivered
    send_all(&mut s, 0);
    on_ack(&mut s, 100 * MS, ack(2, &[]));
    let cwnd = s.conn.cwnd;
    on_ack(&mut s, 101 * MS, ack(2, &[(3, 5)])); // segment 2 missing, 3–4 SACKed
    assert_eq!(s.conn.cwnd, cwnd, "a SACK-only ACK must not raise cwnd");
    assert_eq!(s.conn.ca_state, CaState::Disorder);
}

#[test]
fn sack_below_dupthresh_waits_for_reorder_window_then_rack_marks_lost() {
    // RFC 8985 §6.2: a segment is lost once a later-sent one is delivered and
    // RACK.rtt + reo_wnd has passed; reo_wnd = min_rtt/4 while < 3 SACKed.
    let mut s = sender("reno");
    send_all(&mut s, 0);
    on_ack(&mut s, 100 * MS, ack(1, &[])); // RTT 100 ms; cwnd 11, sends 2 more (seq 10, 11)
    // Segment 1 lost; 2 is SACKed at 101 ms.
    on_ack(&mut s, 101 * MS, ack(1, &[(2, 3)]));
    assert_eq!(s.conn.lost_out, 0, "one SACK is not enough: wait min_rtt/4");
    assert_eq!(s.conn.ca_state, CaState::Disorder);
    let (t, kind) = s.xmit_timer.unwrap();
    assert_eq!(kind, XmitTimer::Reo);
    // Segment 1 was sent at 0: lost at 0 + rack.rtt (101 ms) + 25 ms.
    assert_eq!(t, Time(126 * MS));
    let mut out = vec![];
    s.on_xmit_timer(t, &mut out);
    assert_eq!(s.conn.ca_state, CaState::Recovery);
    assert_eq!(out.first().map(|t| (t.seq, t.retrans)), Some((1, true)));
}

#[test]
fn three_sacked_segments_mark_loss_at_once() {
    // Linux tcp_rack_reo_wnd: with sacked_out ≥ dupthresh (3) the window is 0.
    let mut s = sender("reno");
    send_all(&mut s, 0);
    let tx = on_ack(&mut s, 100 * MS, ack(1, &[(2, 5)]));
    assert_eq!(s.conn.lost_out, 1);
    assert_eq!(s.conn.ca_state, CaState::Recovery);
    // Recovery is entered before this ACK's cwnd growth (tcp_fastretrans_alert
    // runs before tcp_cong_control), so Reno halves the initial window: 10/2.
    assert_eq!(s.conn.ssthresh, 5);
    assert!(tx.iter().any(|t| t.seq == 1 && t.retrans), "fast retransmit of the hole");
}

#[test]
fn rto_marks_everything_lost_and_backs_off() {
    // RFC 6298 §5.4–5.6: on timeout retransmit the earliest segment, double the RTO.
    let mut s = sender("reno");
    send_all(&mut s, 0);
    on_ack(&mut s, 100 * MS, ack(2, &[])); // srtt 100 ms → RTO = 100 + 200 = 300 ms
    let (t0, _) = s.xmit_timer.unwrap();
    // TLP first (Open state): 2·srtt + 2 ms, capped by the RTO.
    let mut out = vec![];
    s.on_xmit_timer(t0, &mut out);
    assert_eq!(s.stats.tlp_count, 1);
    let (t1, kind) = s.xmit_timer.unwrap();
    assert_eq!(kind, XmitTimer::Rto);
    out.clear();
    s.on_xmit_timer(t1, &mut out);
    assert_eq!(s.stats.rto_count, 1);
    assert_eq!(s.conn.ca_state, CaState::Loss);
    assert_eq!(s.conn.cwnd, 1);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].seq, out[0].retrans), (2, true));
    let (t2, _) = s.xmit_timer.unwrap();
    assert_eq!(t2 - t1, Dur(2 * 300 * MS), "backoff doubles the 300 ms RTO");
    out.clear();
    s.on_xmit_timer(t2, &mut out);
    let (t3, _) = s.xmit_timer.unwrap();
    assert_eq!(t3 - t2, Dur(4 * 300 * MS));
    // Progress resets the backoff.
    on_ack(&mut s, t3.0 - 1, ack(3, &[]));
    assert_eq!(s.rtt.backoff, 0);
}

#[test]
fn rto_never_below_linux_minimum() {
    let mut s = sender("reno");
    send_all(&mut s, 0);
    on_ack(&mut s, MS / 10, ack(2, &[])); // 100 µs RTT
    assert!(s.rtt.rto() >= RTO_MIN);
}

#[test]
fn prr_spreads_the_reduction_over_the_recovery_round() {
    // RFC 6937: while in flight > ssthresh, send ≈ ssthresh/prior_cwnd per delivered segment.
    let mut s = sender("reno");
    s.conn.cwnd = 40;
    s.conn.ssthresh = 20; // congestion avoidance
    let tx = send_all(&mut s, 0);
    assert_eq!(tx.len(), 40);
    on_ack(&mut s, 100 * MS, ack(1, &[])); // cwnd 40 (CA), sends 1 more: 0..41 sent
    // Segment 1 lost: SACKs for 2.. arrive one by one.
    let mut sent_in_recovery = 0;
    for k in 2..=30u32 {
        let tx = on_ack(&mut s, 100 * MS + k as u64 * 10_000, ack(1, &[(2, k + 1)]));
        if s.conn.ca_state == CaState::Recovery {
            sent_in_recovery += tx.len();
        }
    }
    assert_eq!(s.conn.ssthresh, 20);
    // 29 delivered (SACKed) × 20/40 ≈ 14–15 sent, the first being the retransmission.
    assert!((13..=16).contains(&sent_in_recovery), "sent {sent_in_recovery}");
    assert!(s.conn.cwnd <= 40);
}

#[test]
fn recovery_ends_with_cwnd_at_ssthresh() {
    let mut s = sender("reno");
    s.conn.cwnd = 20;
    s.conn.ssthresh = 10;
    send_all(&mut s, 0);
    on_ack(&mut s, 100 * MS, ack(1, &[(2, 6)]));
    assert_eq!(s.conn.ca_state, CaState::Recovery);
    let high = s.snd_nxt;
    on_ack(&mut s, 200 * MS, ack(high, &[]));
    assert_eq!(s.conn.ca_state, CaState::Open);
    // tcp_end_cwnd_reduction sets cwnd = ssthresh (10); the same ACK then goes
    // through cong_avoid (Linux tcp_cong_control), which adds acked/cwnd: the
    // 15 segments this ACK delivered give exactly +1.
    assert_eq!(s.conn.ssthresh, 10);
    assert_eq!(s.conn.cwnd, 11);
}

#[test]
fn rate_sampler_measures_the_bottleneck_rate() {
    // draft-cheng-iccrg-delivery-rate-estimation §3.3: with the pipe full,
    // delivered/interval over a round equals the bottleneck rate. One Reno
    // flow through the real receiver (delayed ACKs) and link: 12 Mbit/s = one
    // 1500-byte packet per ms = 11.584 Mbit/s of payload, 50 ms RTT, a buffer
    // that never overflows (so the queue only grows and the link never idles).
    let mut h = Harness::new("reno", &[], Path::new(12_000_000, 50).for_secs(3.0), 1);
    let samples = h.rate_samples(0, 2.9);
    let late: Vec<_> = samples.iter().filter(|(t, _)| *t > 1.0).collect();
    assert!(late.len() > 900, "{} samples", late.len());
    assert!(h.link_counters().drops_overflow == 0);
    let (mut lo, mut hi) = (f64::MAX, 0f64);
    for (t, rs) in &late {
        let r = rs.delivery_rate.expect("valid sample once the pipe is full").0 as f64;
        (lo, hi) = (lo.min(r), hi.max(r));
        assert!((r / 11_584_000.0 - 1.0).abs() < 0.01, "t={t}: {r} bit/s");
        assert!(!rs.is_app_limited);
        assert!(rs.interval >= Dur(50 * MS), "interval spans at least one RTT");
    }
    eprintln!("{} samples after 1 s: {:.4}–{:.4} Mbit/s", late.len(), lo / 1e6, hi / 1e6);
}

#[test]
fn rate_sampler_flags_app_limited_samples_until_the_bubble_is_delivered() {
    // tcp_rate.c / draft §3.4: packets sent while tp->app_limited is set carry
    // the flag into their samples; the flag clears once `delivered` passes the
    // mark. BBR's ProbeRTT sets the mark exactly like this (bbr_probe_rtt).
    // One Reno flow, cwnd held near the 50-packet BDP (12 Mbit/s, 50 ms).
    let mut h = Harness::new("reno", &[], Path::new(12_000_000, 50).for_secs(2.0), 1);
    let s = h.sender_mut(0);
    s.conn.cwnd = 50;
    s.conn.ssthresh = 50;
    let mut samples = h.rate_samples(0, 0.6);
    let s = h.sender_mut(0);
    let mark = (s.conn.delivered + s.in_flight() as u64).max(1);
    s.conn.app_limited = mark;
    let marked_at = h.now_secs();
    samples.extend(h.rate_samples(0, 1.5));
    // tcp_init_sock starts every connection app-limited (`tp->app_limited =
    // ~0U`) until its first ACK: the initial window's samples carry the flag.
    assert!(samples.iter().take_while(|(t, _)| *t < 0.060).all(|(_, rs)| rs.is_app_limited));
    let flagged: Vec<f64> =
        samples.iter().filter(|(t, rs)| rs.is_app_limited && *t > 0.2).map(|(t, _)| *t).collect();
    assert!(!flagged.is_empty(), "packets sent inside the bubble must yield app-limited samples");
    // They are exactly the ACKs of packets sent in the round after the mark:
    // one RTT + one bottleneck round (cwnd packets at 1 ms) later at most.
    let (first, last) = (*flagged.first().unwrap(), *flagged.last().unwrap());
    eprintln!("marked at {marked_at:.4} s: app-limited samples {first:.4}–{last:.4} s");
    assert!(first > marked_at && last <= marked_at + 2.0 * (0.050 + 0.050), "{first} {last} {marked_at}");
    assert_eq!(h.conn().app_limited, 0, "the bubble cleared once delivered passed the mark");
    assert!(!samples.last().unwrap().1.is_app_limited);
}

#[test]
fn running_out_of_data_marks_the_bubble() {
    // tcp_rate_check_app_limited: no data left and the window not full →
    // app_limited = delivered + in_flight.
    let mut s = Sender::new(Time(0), Cc::new("reno", &BTreeMap::new(), 1).unwrap(), 1448, 52, Some(1448 * 5), Time(0), None, None, NO_HANDSHAKE);
    let tx = send_all(&mut s, 0);
    assert_eq!(tx.len(), 5);
    assert_eq!(s.conn.app_limited, 6, "delivered 1 (the SYN) + 5 in flight");
}

#[test]
fn finite_flow_sends_exact_bytes_then_stops() {
    let mut s = Sender::new(Time(0), Cc::new("cubic", &BTreeMap::new(), 1).unwrap(), 1000, 52, Some(4500), Time(0), None, None, NO_HANDSHAKE);
    let tx = send_all(&mut s, 0);
    assert_eq!(tx.iter().map(|t| t.payload).collect::<Vec<_>>(), vec![1000, 1000, 1000, 1000, 500]);
    on_ack(&mut s, 10 * MS, ack(5, &[]));
    assert!(s.is_finished());
    assert!(s.xmit_timer.is_none());
}

/// A paced sender with room in cwnd that has already sent `sent` segments:
/// 1448 B at 11.584 Mbit/s = 1 ms per segment; 1 ms of data < 2 segments →
/// skbs (pacing bursts) of 2.
fn paced_sender(sent: u64) -> Sender {
    let mut s = sender("reno");
    s.conn.cwnd = 100;
    s.stats.sent_packets = sent;
    s.conn.pacing_rate = Some(Bandwidth(11_584_000));
    s
}

#[test]
fn pacing_sends_tso_bursts_spaced_by_len_over_rate() {
    // Linux paces skbs (tcp_update_skb_after_send: wstamp += len/rate); an
    // skb holds tcp_tso_autosize() segments: ~1 ms of data, ≥ 2, ≤ 64 KB.
    // Past the connection's first 10 segments (not paced; next test).
    let mut s = paced_sender(10);
    assert_eq!(s.tso_segs(), 2);
    let tx = send_all(&mut s, 0);
    assert_eq!(tx.len(), 2);
    assert!(s.pacing_blocked);
    assert_eq!(s.pace_next, Time(2 * MS));
    assert_eq!(send_all(&mut s, 2 * MS - 1).len(), 0, "held by the pacer");
    assert_eq!(send_all(&mut s, 2 * MS).len(), 2);
    assert_eq!(s.pace_next, Time(4 * MS));
}

#[test]
fn the_first_ten_segments_are_not_paced() {
    // tcp_update_skb_after_send: "Original sch_fq does not pace first 10
    // MSS" — wstamp advances only once data_segs_out (counted before the
    // check, the skb's own segments included) reaches 10; that skb is paced
    // for its whole length.
    let mut s = paced_sender(0);
    let tx = send_all(&mut s, 0);
    assert_eq!(tx.len(), 10, "five 2-segment skbs leave at once");
    assert_eq!(s.pace_next, Time(2 * MS), "the fifth skb (segments 9 and 10) is paced");
    assert!(s.pacing_blocked);
    assert_eq!(send_all(&mut s, 2 * MS).len(), 2);
    assert_eq!(s.pace_next, Time(4 * MS));
}

#[test]
fn a_late_skb_gets_up_to_half_its_interval_as_credit() {
    // tcp_update_skb_after_send: len_ns -= min(len_ns / 2, credit), credit =
    // how far the skb's send time is past the previous wstamp.
    let mut s = paced_sender(10);
    assert_eq!(send_all(&mut s, 0).len(), 2);
    assert_eq!(s.pace_next, Time(2 * MS));
    // 0.3 ms late: the 2 ms skb counts 1.7 ms
    assert_eq!(send_all(&mut s, 2 * MS + 300_000).len(), 2);
    assert_eq!(s.pace_next, Time(4 * MS));
    // 5 ms late: at most half, 1 ms
    assert_eq!(send_all(&mut s, 9 * MS).len(), 2);
    assert_eq!(s.pace_next, Time(10 * MS));
}

/// A paced sender with four 2-segment skbs in flight (segments 0–7, sent
/// at 0, 2, 4 and 6 ms), nothing acknowledged yet.
fn paced_sender_with_four_skbs_out() -> Sender {
    let mut s = paced_sender(10);
    for k in 0..4 {
        assert_eq!(send_all(&mut s, 2 * k * MS).len(), 2);
    }
    assert_eq!(s.pace_next, Time(8 * MS));
    s
}

#[test]
fn a_retransmission_is_an_skb_of_its_own_in_its_own_pacing_slot() {
    // Linux never puts new data in a retransmitted skb: tcp_xmit_retransmit_queue
    // sends the lost skb (tcp_retransmit_skb) and stops at tcp_pacing_check,
    // and tcp_write_xmit's new data waits for the next slot.
    let mut s = paced_sender_with_four_skbs_out();
    // Segment 0 lost (1–7 SACKed): its retransmission leaves alone, 1 ms of
    // data less half as credit (it is 12 ms late).
    let tx = on_ack(&mut s, 20 * MS, ack(0, &[(1, 8)]));
    assert_eq!(tx.iter().map(|t| (t.seq, t.retrans)).collect::<Vec<_>>(), vec![(0, true)]);
    assert_eq!(s.pace_next, Time(20 * MS + MS / 2));
    assert!(s.pacing_blocked);
    let tx = send_all(&mut s, 20 * MS + MS / 2);
    assert_eq!(tx.iter().map(|t| (t.seq, t.retrans)).collect::<Vec<_>>(), vec![(8, false), (9, false)]);
}

#[test]
fn lost_segments_are_retransmitted_skb_by_skb() {
    // The retransmit queue holds the skbs as sent (split where SACKs or a
    // partial retransmission cut them): segments 0–1 lost together go out
    // as one skb; 1 and 2, lost from two different skbs, as two.
    let mut s = paced_sender_with_four_skbs_out();
    let tx = on_ack(&mut s, 20 * MS, ack(0, &[(2, 8)]));
    assert_eq!(tx.iter().map(|t| (t.seq, t.retrans)).collect::<Vec<_>>(), vec![(0, true), (1, true)]);
    assert_eq!(s.pace_next, Time(21 * MS));

    // Segment 0 is acknowledged first (with 8 and 9 sent at 10 ms): the
    // ACK that SACKs 3–7 then leaves RACK.rtt at 14 ms (segment 7's), and
    // both 1 and 2 are past it.
    let mut s = paced_sender_with_four_skbs_out();
    let tx = on_ack(&mut s, 10 * MS, ack(1, &[]));
    assert_eq!(tx.iter().map(|t| (t.seq, t.retrans)).collect::<Vec<_>>(), vec![(8, false), (9, false)]);
    let tx = on_ack(&mut s, 20 * MS, ack(1, &[(3, 8)]));
    assert_eq!(s.conn.lost_out, 2);
    assert_eq!(tx.iter().map(|t| (t.seq, t.retrans)).collect::<Vec<_>>(), vec![(1, true)]);
    assert_eq!(s.pace_next, Time(20 * MS + MS / 2));
    let tx = send_all(&mut s, 20 * MS + MS / 2);
    assert_eq!(tx.iter().map(|t| (t.seq, t.retrans)).collect::<Vec<_>>(), vec![(2, true)]);
    assert_eq!(s.pace_next, Time(21 * MS + MS / 2), "an on-time skb: no credit");
}

#[test]
fn rack_rtt_is_that_of_the_last_segment_the_ack_delivers() {
    // tcp_rack_advance sets RACK.rtt for every delivered segment that is not
    // an ambiguous retransmission, and RACK.xmit_time only for a more
    // recently sent one; tcp_ack walks the SACK blocks first, then the
    // cumulative part (tcp_clean_rtx_queue). An ACK that SACKs 3–7 (sent
    // at 2–6 ms) and acknowledges 0 (sent at 0) leaves RACK.rtt = 20 ms, so
    // at 20 ms segment 1 (sent at 0) is lost and segment 2 (sent at 2 ms)
    // not before 22 ms.
    let mut s = paced_sender_with_four_skbs_out();
    let tx = on_ack(&mut s, 20 * MS, ack(1, &[(3, 8)]));
    assert_eq!(s.rack.rtt, Dur(20 * MS));
    assert_eq!(s.rack.xmit_time, Time(6 * MS));
    assert_eq!(s.conn.lost_out, 1);
    assert_eq!(tx.iter().map(|t| (t.seq, t.retrans)).collect::<Vec<_>>(), vec![(1, true)]);
    assert_eq!(s.xmit_timer, Some((Time(22 * MS), XmitTimer::Reo)));
    let mut out = vec![];
    s.on_xmit_timer(Time(22 * MS), &mut out);
    assert_eq!(out.iter().map(|t| (t.seq, t.retrans)).collect::<Vec<_>>(), vec![(2, true)]);
}

#[test]
fn tso_autosize_follows_linux() {
    let mut s = sender("reno");
    // 1 Gbit/s: 125 MB/s >> 10 = 122 KB, capped at a 64 KB skb = 45 segments.
    s.conn.pacing_rate = Some(Bandwidth(1_000_000_000));
    assert_eq!(s.tso_segs(), (65536 - 1 - 320) / 1448);
    // 100 Mbit/s: 12.5 MB/s >> 10 = 12207 B = 8 segments.
    s.conn.pacing_rate = Some(Bandwidth(100_000_000));
    assert_eq!(s.tso_segs(), 8);
    // Below 1.2 Mbit/s BBR allows single-segment skbs.
    s.conn.pacing_rate = Some(Bandwidth(1_000_000));
    assert_eq!(s.tso_segs(), 1);
}

#[test]
fn internal_pacing_rate_is_exact_for_small_and_huge_windows() {
    // sk_pacing_rate_bps divides in u64 when mss·8·ratio·1e9·packets fits
    // and in u128 beyond (~8 000 packets): both must give the exact quotient.
    let mut s = sender("cubic");
    s.rtt.on_sample(Dur(7 * MS + 3));
    s.conn.ssthresh = u32::MAX;
    for cwnd in [10u32, 60, 7_999, 8_000, 12_000, 1_000_000, 50_000_000] {
        for ratio_high in [true, false] {
            s.conn.cwnd = cwnd;
            s.conn.ssthresh = if ratio_high { u32::MAX } else { cwnd };
            let ratio: u128 = if ratio_high { 200 } else { 120 };
            let exact = (1448u128 * 8 * ratio * cwnd as u128 * 1_000_000_000 / (100 * (7 * MS + 3) as u128)).min(u64::MAX as u128) as u64;
            assert_eq!(s.sk_pacing_rate_bps(), exact, "cwnd {cwnd}, ratio {ratio}");
        }
    }
}

#[test]
fn rwnd_limits_outstanding_segments() {
    let mut s = Sender::new(Time(0), Cc::new("reno", &BTreeMap::new(), 1).unwrap(), 1448, 52, None, Time(0), None, Some(4 * 1448), NO_HANDSHAKE);
    assert_eq!(send_all(&mut s, 0).len(), 4);
    assert_eq!(on_ack(&mut s, 10 * MS, ack(2, &[])).len(), 2);
}

/// An unpaced CUBIC sender in congestion avoidance (ssthresh 40) with `cwnd`
/// and an SRTT of 10 ms: its TSO size follows from its internal pacing rate.
fn cubic_in_congestion_avoidance(cwnd: u32) -> Sender {
    let mut s = sender("cubic");
    s.rtt.on_sample(Dur(10 * MS));
    s.conn.srtt = Dur(10 * MS);
    s.conn.cwnd = cwnd;
    s.conn.ssthresh = 40;
    s
}

#[test]
fn unpaced_flow_sizes_tso_from_its_internal_pacing_rate_and_defers_partial_skbs() {
    // tcp_update_pacing_rate gives an unpaced flow sk_pacing_rate =
    // 120 % · cwnd · mss / srtt in congestion avoidance; tcp_tso_autosize
    // sizes its GSO skbs from it (~1 ms of data). tcp_tso_should_defer holds
    // back an skb that cwnd would cut short when the last send was within
    // 1 ms and the oldest segment's ACK is due within min(srtt/2, 1 ms).
    let mut s = cubic_in_congestion_avoidance(60);
    // 1.2 · 60 · 1448 B / 10 ms = 10.4 MB/s → 10.2 KB per ms → 7 segments.
    assert_eq!(s.tso_segs(), 7);
    assert_eq!(send_all(&mut s, 0).len(), 60, "a fresh window goes out whole");
    // 10 ms later the first ACK: the last send was 10 ms ago, so no deferral.
    let tx = on_ack(&mut s, 10 * MS, ack(2, &[]));
    assert_eq!(tx.len(), 2);
    // 0.2 ms later: room for 2 (< 7) and segment 2's ACK is due now → held back.
    let tx = on_ack(&mut s, 10 * MS + 200_000, ack(4, &[]));
    assert!(tx.is_empty(), "a partial skb waits for the next ACK: {tx:?}");
    assert!(s.conn.is_cwnd_limited, "deferring for cwnd counts as cwnd-limited");
    // Room for 8: one full skb leaves (the later RTT samples lowered the rate a
    // little: 6 segments now), the last 2 are held back again.
    let tx = on_ack(&mut s, 10 * MS + 400_000, ack(10, &[]));
    assert_eq!(tx.len() as u32, s.tso_segs());
    assert_eq!(s.conn.cwnd - s.in_flight(), 2);
}

#[test]
fn the_rest_of_a_write_queue_skb_leaves_as_soon_as_it_fits() {
    // The application's writes fill skbs of tcp_xmit_size_goal (64 KB: 45
    // segments); tcp_write_xmit sends them in pieces of tcp_tso_autosize's
    // size (tso_fragment), and what a skb has left is sent as soon as the
    // window holds it — tcp_tso_should_defer: "Middle in queue won't get any
    // more data, full sendable already?" — instead of waiting for room for
    // a whole piece.
    let mut s = cubic_in_congestion_avoidance(42);
    assert_eq!(s.size_goal(), 45);
    // 1.2 · 42 · 1448 B / 10 ms = 7.3 MB/s → 7.1 KB per ms → 4 segments.
    assert_eq!(s.tso_segs(), 4);
    assert_eq!(send_all(&mut s, 0).len(), 42, "segments 0–41 of the first 45-segment skb");
    // The first ACK, 10 ms after the last send (no deferral then): room for one.
    assert_eq!(on_ack(&mut s, 10 * MS, ack(1, &[])).iter().map(|t| t.seq).collect::<Vec<_>>(), vec![42]);
    // 0.2 ms later room for 2, fewer than a piece (4), with segment 1's ACK
    // due: a fresh skb would be held back, but the 2 segments the first skb
    // has left leave at once.
    let tx = on_ack(&mut s, 10 * MS + 200_000, ack(3, &[]));
    assert_eq!(s.tso_segs(), 4);
    assert_eq!(tx.iter().map(|t| t.seq).collect::<Vec<_>>(), vec![43, 44]);
    // The next skb (segments 45–89) is whole again: room for 2 of a 4-segment piece waits.
    let tx = on_ack(&mut s, 10 * MS + 400_000, ack(5, &[]));
    assert!(tx.is_empty(), "{tx:?}");
    assert!(s.conn.is_cwnd_limited, "deferring for cwnd counts as cwnd-limited");
}

#[test]
fn a_short_head_skb_takes_segments_from_the_next_write_queue_skb() {
    // Linux ≥ 6.10, tcp_write_xmit → tcp_grow_skb ("tcp: try to send bigger
    // TSO packets"): a head skb shorter than the cwnd quota (tcp_cwnd_test,
    // at most the TSO size) takes the missing segments from the next
    // write-queue skb before the TSO tests, instead of leaving short.
    let mut s = cubic_in_congestion_avoidance(42);
    assert_eq!(s.size_goal(), 45);
    assert_eq!(s.tso_segs(), 4);
    assert_eq!(send_all(&mut s, 0).len(), 42, "segments 0–41 of the first 45-segment skb");
    // 10 ms later (the last send 10 ms ago: no deferral) an ACK for 5: room
    // for 5, a quota of 4. The first skb has 3 left (42–44) and takes segment
    // 45 from the next; room for one more is then held back (a piece of the
    // next skb, segment 1's ACK due). Before Linux 6.10 42–44 left alone.
    let tx = on_ack(&mut s, 10 * MS, ack(5, &[]));
    assert_eq!(s.tso_segs(), 4);
    assert_eq!(tx.iter().map(|t| t.seq).collect::<Vec<_>>(), vec![42, 43, 44, 45]);
    assert_eq!(s.conn.cwnd - s.in_flight(), 1);
    // A GSO skb carries PSH on its last segment only.
    assert_eq!(tx.iter().map(|t| t.psh).collect::<Vec<_>>(), vec![false, false, false, true]);
}

#[test]
fn psh_marks_the_last_segment_of_every_gso_skb_and_of_each_write_queue_skb() {
    // __tcp_transmit_skb forces PSH on every skb of more than one segment;
    // the application pushes every write-queue skb it fills (tcp_push →
    // tcp_mark_push), and a piece cut off its front does not take that mark
    // (tso_fragment). With TSO size 11 and 45-segment write-queue skbs the
    // pieces are 0–10, …, 33–43, then 44 grown into the next skb (44–54),
    // 55–65, 66–76, 77–87, 88–98 (grown), and 99 alone (cwnd 100): PSH on
    // the last segment of each but that one.
    let mut s = cubic_in_congestion_avoidance(100);
    assert_eq!((s.size_goal(), s.tso_segs()), (45, 11));
    let tx = send_all(&mut s, 0);
    assert_eq!(tx.len(), 100);
    let psh: Vec<u32> = tx.iter().filter(|t| t.psh).map(|t| t.seq).collect();
    assert_eq!(psh, vec![10, 21, 32, 43, 54, 65, 76, 87, 98]);
    // A single-segment skb that ends a write-queue skb is marked: the
    // first skb's last segment sent alone (cwnd room for one).
    let mut s = cubic_in_congestion_avoidance(45);
    s.conn.cwnd = 44;
    let tx = send_all(&mut s, 0);
    assert_eq!(tx.last().map(|t| (t.seq, t.psh)), Some((43, true)));
    s.conn.cwnd = 45;
    let tx = send_all(&mut s, 5 * MS);
    assert_eq!(tx.iter().map(|t| (t.seq, t.psh)).collect::<Vec<_>>(), vec![(44, true)]);
}

#[test]
fn write_queue_skbs_are_half_the_peers_largest_window_until_it_opens() {
    // tcp_xmit_size_goal → tcp_bound_to_half_wnd: behind the SYN-ACK's
    // window (65 160 B = 45 segments) the skbs are half of it, 22 segments;
    // once the peer has offered 90 segments or more, a whole 64 KB GSO skb.
    let hs = Handshake { rtt: Some(Dur(10 * MS)), wnd_end: 45 };
    let mut s = Sender::new(Time(0), Cc::new("cubic", &BTreeMap::new(), 1).unwrap(), 1448, 52, None, Time(0), None, None, hs);
    assert_eq!(s.size_goal(), 22);
    send_all(&mut s, 0);
    on_ack(&mut s, 10 * MS, Ack { cum: 2, wnd_end: 2 + 60, ..Default::default() });
    assert_eq!(s.size_goal(), 30);
    on_ack(&mut s, 10 * MS + 100_000, Ack { cum: 4, wnd_end: 4 + 200, ..Default::default() });
    assert_eq!(s.size_goal(), 45);
    // A scenario rwnd clamps the window the sender sees (the emulator rewrites it).
    let mut s = Sender::new(Time(0), Cc::new("cubic", &BTreeMap::new(), 1).unwrap(), 1448, 52, None, Time(0), None, Some(20 * 1448), hs);
    assert_eq!(s.size_goal(), 10);
    send_all(&mut s, 0);
    on_ack(&mut s, 10 * MS, Ack { cum: 2, wnd_end: 2 + 200, ..Default::default() });
    assert_eq!(s.size_goal(), 10);
}

fn ece(cum: u32) -> Ack {
    Ack { ece: true, ..ack(cum, &[]) }
}

#[test]
fn ece_reduces_the_window_once_per_window_and_sends_cwr_once() {
    // RFC 3168 §6.1.2; Linux tcp_try_to_open → tcp_enter_cwr: CA_CWR,
    // ssthresh from the algorithm, PRR down to it, CWR on the next new data
    // segment; ECE again within the same window changes nothing; CWR ends
    // when something above high_seq is acked (tcp_fastretrans_alert).
    let mut s = sender("reno");
    s.set_ecn(true);
    s.conn.cwnd = 20;
    s.conn.ssthresh = 10; // congestion avoidance
    let tx = send_all(&mut s, 0);
    assert_eq!(tx.len(), 20);
    assert!(tx.iter().all(|t| t.ect && !t.cwr));
    let tx = on_ack(&mut s, 100 * MS, ece(2));
    assert_eq!(s.conn.ca_state, CaState::Cwr);
    assert_eq!(s.conn.ssthresh, 10, "tcp_reno_ssthresh: cwnd 20 / 2");
    assert_eq!(s.stats_cwr, 1);
    let high = 20;
    // PRR: 2 delivered × 10/20 = 1 segment sent, carrying CWR.
    assert_eq!(tx.len(), 1);
    assert!(tx[0].cwr && tx[0].seq == high);
    // More ECE within the window: no second reduction, no second CWR.
    let mut sent = tx.len();
    for cum in 3..=high {
        let tx = on_ack(&mut s, (100 + cum as u64) * MS, ece(cum));
        assert!(tx.iter().all(|t| !t.cwr));
        sent += tx.len();
        assert_eq!(s.conn.ca_state, CaState::Cwr, "cum {cum}");
    }
    assert_eq!(s.stats_cwr, 1);
    assert_eq!(s.conn.ssthresh, 10);
    // PRR sent about ssthresh/prior_cwnd of what was delivered.
    assert!((9..=11).contains(&sent), "sent {sent} during CWR");
    // The ACK of the CWR segment (above high_seq) ends CWR with cwnd = ssthresh.
    on_ack(&mut s, 200 * MS, ack(high + 1, &[]));
    assert_eq!(s.conn.ca_state, CaState::Open);
    assert!((10..=11).contains(&s.conn.cwnd), "cwnd {}", s.conn.cwnd);
    // A new window's ECE reduces again.
    on_ack(&mut s, 210 * MS, ece(high + 2));
    assert_eq!(s.conn.ca_state, CaState::Cwr);
    assert_eq!(s.stats_cwr, 2);
}

#[test]
fn ece_is_ignored_without_ecn_and_retransmissions_are_not_ect() {
    let mut s = sender("cubic");
    s.conn.cwnd = 20;
    send_all(&mut s, 0);
    on_ack(&mut s, 100 * MS, ece(2));
    assert_eq!(s.conn.ca_state, CaState::Open);
    // RFC 3168 §6.1.5: retransmitted data is not ECT (Linux INET_ECN_dontxmit)…
    let mut s = sender("cubic");
    s.set_ecn(true);
    s.conn.cwnd = 20;
    send_all(&mut s, 0);
    let tx = on_ack(&mut s, 100 * MS, ack(1, &[(2, 6)]));
    assert_eq!(s.conn.ca_state, CaState::Recovery);
    let re: Vec<_> = tx.iter().filter(|t| t.retrans).collect();
    assert!(!re.is_empty() && re.iter().all(|t| !t.ect));
    assert!(tx.iter().filter(|t| !t.retrans).all(|t| t.ect));
    // …unless the algorithm needs ECN (DCTCP: TCP_CONG_NEEDS_ECN).
    let mut s = sender("dctcp");
    s.set_ecn(true);
    s.conn.cwnd = 20;
    send_all(&mut s, 0);
    let tx = on_ack(&mut s, 100 * MS, ack(1, &[(2, 6)]));
    assert!(tx.iter().any(|t| t.retrans) && tx.iter().all(|t| t.ect));
}

#[test]
fn ece_in_cwr_then_loss_enters_recovery_without_a_second_cut() {
    // tcp_enter_recovery: no new tcp_init_cwnd_reduction while in CWR.
    let mut s = sender("cubic");
    s.set_ecn(true);
    s.conn.cwnd = 40;
    s.conn.ssthresh = 20;
    send_all(&mut s, 0);
    on_ack(&mut s, 100 * MS, ece(2));
    assert_eq!(s.conn.ca_state, CaState::Cwr);
    let ss = s.conn.ssthresh;
    assert_eq!(ss, 40 * 717 / 1024, "CUBIC β = 717/1024");
    on_ack(&mut s, 101 * MS, ack(3, &[(4, 9)]));
    assert_eq!(s.conn.ca_state, CaState::Recovery);
    assert_eq!(s.conn.ssthresh, ss);
}

#[test]
fn dctcp_cuts_by_alpha_over_two_on_ece() {
    // dctcp_ssthresh with the initial α = 1: half; after unmarked windows α
    // decays and the cut shrinks (RFC 8257 §3.3).
    let mut s = sender("dctcp");
    s.set_ecn(true);
    s.conn.cwnd = 40;
    s.conn.ssthresh = 20;
    send_all(&mut s, 0);
    on_ack(&mut s, 100 * MS, ece(2));
    assert_eq!(s.conn.ssthresh, 20);
    let Cc::Dctcp(d) = &s.cc else { panic!() };
    assert!(d.alpha >= 1000);
}

// ---- without SACK: NewReno recovery as Linux's tcp_is_reno paths ----------

fn sender_without_sack() -> Sender {
    let mut s = sender("reno");
    s.set_sack(false);
    s
}

#[test]
fn without_sack_duplicate_acks_count_delivered_and_the_third_retransmits_the_head() {
    // RFC 5681 §3.2 / Linux tcp_add_reno_sack + tcp_newreno_mark_lost.
    let mut s = sender_without_sack();
    send_all(&mut s, 0);
    on_ack(&mut s, 100 * MS, ack(1, &[])); // cwnd 11: 1..=11 outstanding, 1 lost
    let delivered = s.conn.delivered;
    // First duplicate: one segment above the hole arrived. It counts as
    // delivered and frees one slot of in_flight = packets_out − sacked_out
    // (RFC 3042's limited transmit; here tcp_tso_should_defer holds the one
    // segment back, as Linux does outside Recovery).
    let out = s.conn.packets_out;
    let tx = on_ack(&mut s, 101 * MS, ack(1, &[]));
    assert_eq!(s.conn.delivered, delivered + 1);
    assert_eq!((s.conn.sacked_out, s.conn.ca_state), (1, CaState::Disorder));
    assert!(tx.iter().all(|t| !t.retrans));
    assert_eq!(s.in_flight(), out - 1 + tx.len() as u32);
    let cwnd = s.conn.cwnd;
    on_ack(&mut s, 102 * MS, ack(1, &[]));
    assert_eq!(s.conn.lost_out, 0, "two duplicates are not a loss");
    assert_eq!(s.conn.cwnd, cwnd, "duplicates do not raise cwnd");
    let tx = on_ack(&mut s, 103 * MS, ack(1, &[]));
    assert_eq!((s.conn.lost_out, s.conn.ca_state), (1, CaState::Recovery));
    assert_eq!(s.conn.ssthresh, 5, "Reno halves cwnd 11");
    assert_eq!(tx.first().map(|t| (t.seq, t.retrans)), Some((1, true)), "fast retransmit of the head");
}

#[test]
fn without_sack_a_partial_ack_retransmits_the_next_hole_at_once() {
    // RFC 6582 §3.2 step 5: segments 1 and 3 lost; the ACK for the
    // retransmitted 1 stops at 3, which is retransmitted without waiting for
    // three more duplicates.
    let mut s = sender_without_sack();
    send_all(&mut s, 0);
    on_ack(&mut s, 100 * MS, ack(1, &[]));
    for t in 101..104 {
        on_ack(&mut s, t * MS, ack(1, &[]));
    }
    assert_eq!(s.conn.ca_state, CaState::Recovery);
    let mut tx = on_ack(&mut s, 200 * MS, ack(3, &[]));
    assert_eq!(s.conn.ca_state, CaState::Recovery, "a partial ACK does not end recovery");
    assert_eq!(s.conn.lost_out, 1, "the new head is lost at once");
    assert_eq!(s.rtt.srtt, Some(Dur(100 * MS)), "no RTT sample from an ACK that covers retransmitted data");
    // PRR paces it out (flight is above ssthresh): the next segment sent is
    // that retransmission, on this ACK or a following duplicate.
    let mut t = 201;
    while tx.is_empty() && t < 210 {
        tx = on_ack(&mut s, t * MS, ack(3, &[]));
        t += 1;
    }
    assert_eq!(tx.first().map(|t| (t.seq, t.retrans)), Some((3, true)), "{tx:?}");
}

#[test]
fn without_sack_recovery_is_held_until_data_above_high_seq_is_acked() {
    // RFC 6582 §3.2 step 4; Linux tcp_try_undo_recovery: "For Reno it is MUST
    // to prevent false fast retransmits".
    let mut s = sender_without_sack();
    send_all(&mut s, 0);
    on_ack(&mut s, 100 * MS, ack(1, &[]));
    for t in 101..104 {
        on_ack(&mut s, t * MS, ack(1, &[]));
    }
    let high_seq = s.snd_nxt; // snd_nxt when recovery began
    // New data sent during recovery lies above high_seq.
    on_ack(&mut s, 200 * MS, ack(high_seq, &[]));
    assert_eq!(s.conn.ca_state, CaState::Recovery, "snd_una == high_seq holds the state");
    assert!(s.snd_nxt > high_seq);
    // Duplicates of high_seq while held are not counted.
    on_ack(&mut s, 201 * MS, ack(high_seq, &[]));
    assert_eq!((s.conn.sacked_out, s.conn.lost_out), (0, 0));
    on_ack(&mut s, 300 * MS, ack(high_seq + 1, &[]));
    assert_eq!(s.conn.ca_state, CaState::Open);
    assert_eq!(s.conn.cwnd, s.conn.ssthresh, "the reduction ends at ssthresh");
}

#[test]
fn without_sack_no_tail_loss_probe_and_rto_marks_everything_lost() {
    // tcp_schedule_loss_probe needs SACK; tcp_timeout_mark_lost resets the
    // duplicate count and marks every outstanding segment.
    let mut s = sender_without_sack();
    send_all(&mut s, 0);
    on_ack(&mut s, 100 * MS, ack(2, &[]));
    on_ack(&mut s, 101 * MS, ack(2, &[]));
    assert_eq!(s.conn.sacked_out, 1);
    let (t, kind) = s.xmit_timer.unwrap();
    assert_eq!(kind, XmitTimer::Rto);
    let mut out = vec![];
    s.on_xmit_timer(t, &mut out);
    assert_eq!(s.conn.ca_state, CaState::Loss);
    assert_eq!(s.conn.sacked_out, 0);
    assert_eq!(s.conn.lost_out, s.conn.packets_out);
    assert_eq!(out.iter().map(|t| (t.seq, t.retrans)).collect::<Vec<_>>(), vec![(2, true)]);
}

#[test]
fn the_ack_that_ends_recovery_looks_for_losses_in_the_open_state() {
    // tcp_fastretrans_alert runs step D (Recovery ends once snd_una reaches
    // high_seq) before tcp_identify_packet_loss, so RACK looks at that ACK
    // in the Open state, where tcp_rack_reo_wnd still allows min_rtt/4 while
    // fewer than 3 segments are SACKed.
    let mut s = sender("reno");
    send_all(&mut s, 0); // 0..9
    // 1 lost, 2..9 SACKed: Recovery with high_seq 10; the retransmission of
    // 1 and new segments 10..13 leave at 100 ms.
    let tx = on_ack(&mut s, 100 * MS, ack(1, &[(2, 10)]));
    assert_eq!(tx.iter().map(|t| (t.seq, t.retrans)).collect::<Vec<_>>(), [(1, true), (10, false), (11, false), (12, false), (13, false)]);
    assert_eq!((s.conn.ca_state, s.high_seq), (CaState::Recovery, 10));
    // 10 is lost; the retransmission of 1 and segment 11 arrive, one ACK
    // reports both: snd_una reaches high_seq, and 11, sent after 10, is
    // SACKed one RTT after both left.
    let tx = on_ack(&mut s, 200 * MS, ack(10, &[(11, 12)]));
    assert_eq!(s.conn.lost_out, 0, "one SACK in the Open state: wait min_rtt/4");
    assert!(tx.iter().all(|t| !t.retrans), "no retransmission of 10 yet");
    assert_eq!(s.conn.ca_state, CaState::Disorder);
    assert_eq!(s.xmit_timer, Some((Time(225 * MS), XmitTimer::Reo)));
    // The reordering timer marks it: a new Recovery, and 10 goes again.
    let mut out = vec![];
    s.on_xmit_timer(Time(225 * MS), &mut out);
    assert_eq!(s.conn.ca_state, CaState::Recovery);
    assert_eq!(out.first().map(|t| (t.seq, t.retrans)), Some((10, true)));
}
