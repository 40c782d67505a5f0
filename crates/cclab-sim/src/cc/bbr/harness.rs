//! A small synthetic harness for the BBR-family unit tests (test-only): one
//! or more flows of one algorithm share an ideal bottleneck — constant rate,
//! fixed two-way propagation delay, FIFO drop-tail buffer, optional
//! token-bucket policer — with infinite data, one ACK per packet, and
//! delivery-rate samples generated as Linux's tcp_rate.c does
//! (`tcp_rate_skb_sent` / `tcp_rate_skb_delivered` / `tcp_rate_gen`).
//! Losses are detected when a later packet is ACKed (no reordering on a
//! FIFO path); lost data is not retransmitted (the source is infinite).
//! This is not the simulator's sender: it exists to drive the algorithms
//! through their mechanisms against Linux's and the draft's numbers.

use crate::cc::{AckSample, CaState, Cc, Conn, CwndEvent, RateSample};
use crate::time::{Bandwidth, Dur, Time};
use std::collections::{BTreeMap, VecDeque};

#[derive(Clone, Debug)]
pub struct Link {
    pub rate: Bandwidth,
    /// Two-way propagation delay (the RTT excluding serialization).
    pub base_rtt: Dur,
    pub mss: u32,
    /// Packets the buffer holds besides the one being serialized; `None` = unbounded.
    pub buffer_pkts: Option<usize>,
    /// Token bucket (rate, bucket bytes) in front of the bottleneck.
    pub policer: Option<(Bandwidth, u64)>,
    /// Changes of the bottleneck rate at given times (time, new rate).
    pub rate_changes: Vec<(Time, Bandwidth)>,
}

impl Link {
    pub fn new(rate_bps: u64, rtt_ms: u64, mss: u32) -> Link {
        Link {
            rate: Bandwidth(rate_bps),
            base_rtt: Dur::from_ms(rtt_ms),
            mss,
            buffer_pkts: None,
            policer: None,
            rate_changes: vec![],
        }
    }
    pub fn bdp_pkts(&self) -> u64 {
        self.rate.bytes_in(self.base_rtt) / self.mss as u64
    }
    pub fn pkts_per_sec(&self) -> f64 {
        self.rate.bps() as f64 / 8.0 / self.mss as f64
    }
    pub fn with_buffer_bdp(mut self, bdps: f64) -> Link {
        self.buffer_pkts = Some(((self.bdp_pkts() as f64 * bdps).round() as usize).max(1));
        self
    }
    pub fn with_policer(mut self, rate_bps: u64, bucket_bytes: u64) -> Link {
        self.policer = Some((Bandwidth(rate_bps), bucket_bytes));
        self
    }
    pub fn with_rate_change(mut self, at_s: f64, rate_bps: u64) -> Link {
        self.rate_changes
            .push((Time((at_s * 1e9) as u64), Bandwidth(rate_bps)));
        self
    }
}

#[derive(Clone, Debug)]
struct Pkt {
    flow: usize,
    seq: u64,
    sent: Time,
    delivered: u64,
    delivered_time: Time,
    first_tx: Time,
    app_limited: bool,
    tx_in_flight: u32,
    lost_at_send: u64,
}

pub struct Flow {
    pub cc: Cc,
    pub conn: Conn,
    next_seq: u64,
    /// Sent and neither ACKed nor detected lost, by sequence.
    outstanding: BTreeMap<u64, Pkt>,
    first_tx_mstamp: Time,
    next_send: Time,
    recovery_high: u64,
    /// ACKs of this flow in the return path.
    acks_pending: usize,
    pub total_delivered: u64,
    pub total_lost: u64,
}

pub struct Harness {
    pub link: Link,
    pub flows: Vec<Flow>,
    now: Time,
    /// Departure times of packets in the bottleneck (sorted).
    in_link: VecDeque<Time>,
    last_departure: Time,
    /// ACKs in flight back to the senders, in arrival order.
    acks: VecDeque<(Time, Pkt)>,
    tokens: f64,
    last_token_time: Time,
    rate_change_idx: usize,
}

impl Harness {
    pub fn new(name: &str, params: &[(&str, f64)], link: Link, seed: u64) -> Harness {
        Harness::new_multi(name, params, link, 1, seed)
    }

    pub fn new_multi(
        name: &str,
        params: &[(&str, f64)],
        link: Link,
        n: usize,
        seed: u64,
    ) -> Harness {
        let map: BTreeMap<String, f64> = params.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let flows = (0..n)
            .map(|i| {
                let mut cc =
                    Cc::new(name, &map, seed.wrapping_mul(1000).wrapping_add(i as u64)).unwrap();
                let mut conn = Conn::new(Time::ZERO, link.mss);
                cc.init(&mut conn);
                Flow {
                    cc,
                    conn,
                    next_seq: 0,
                    outstanding: BTreeMap::new(),
                    first_tx_mstamp: Time::ZERO,
                    next_send: Time::ZERO,
                    recovery_high: 0,
                    acks_pending: 0,
                    total_delivered: 0,
                    total_lost: 0,
                }
            })
            .collect();
        let tokens = link.policer.map(|(_, b)| b as f64).unwrap_or(0.0);
        Harness {
            link,
            flows,
            now: Time::ZERO,
            in_link: VecDeque::new(),
            last_departure: Time::ZERO,
            acks: VecDeque::new(),
            tokens,
            last_token_time: Time::ZERO,
            rate_change_idx: 0,
        }
    }

    pub fn now_secs(&self) -> f64 {
        self.now.secs_f64()
    }
    pub fn conn(&self) -> &Conn {
        &self.flows[0].conn
    }
    pub fn bbr(&self) -> &super::Bbr {
        match &self.flows[0].cc {
            Cc::Bbr(b) => b,
            _ => panic!("not a BBRv1-family flow"),
        }
    }
    /// The first flow's bbr3 / bbr2 state (one type: see `cc::bbr3::v2alpha`).
    pub fn bbr3(&self) -> &crate::cc::bbr3::Bbr3 {
        match &self.flows[0].cc {
            Cc::Bbr3(b) => b,
            _ => panic!("not a bbr3 / bbr2 flow"),
        }
    }
    /// Packets queued or in service at the bottleneck.
    pub fn queue_len(&self) -> usize {
        self.in_link.iter().filter(|d| **d > self.now).count()
    }
    /// Packets delivered, all flows.
    pub fn delivered(&self) -> u64 {
        self.flows.iter().map(|f| f.total_delivered).sum()
    }
    /// (lost, delivered), all flows.
    pub fn totals(&self) -> (u64, u64) {
        (
            self.flows.iter().map(|f| f.total_lost).sum(),
            self.delivered(),
        )
    }
    pub fn run_until(&mut self, secs: f64) {
        while self.now_secs() < secs {
            self.step();
        }
    }

    fn rto(&self, f: &Flow) -> Dur {
        Dur(Dur::from_ms(200)
            .ns()
            .max(2 * f.conn.srtt.ns() + self.link.base_rtt.ns()))
    }

    /// Process the next event (an ACK arrival, a transmission or an RTO).
    pub fn step(&mut self) {
        let ack_t = self.acks.front().map(|(t, _)| *t).unwrap_or(Time::NEVER);
        let mut send: Option<(Time, usize)> = None;
        let mut rto: Option<(Time, usize)> = None;
        for (i, f) in self.flows.iter().enumerate() {
            if f.conn.in_flight < f.conn.cwnd {
                let t = f.next_send.max(self.now);
                if send.map_or(true, |(s, _)| t < s) {
                    send = Some((t, i));
                }
            } else if f.acks_pending == 0 {
                if let Some((_, p)) = f.outstanding.iter().next() {
                    let t = (p.sent + self.rto(f)).max(self.now);
                    if rto.map_or(true, |(s, _)| t < s) {
                        rto = Some((t, i));
                    }
                }
            }
        }
        let send_t = send.map(|s| s.0).unwrap_or(Time::NEVER);
        let rto_t = rto.map(|s| s.0).unwrap_or(Time::NEVER);
        if ack_t == Time::NEVER && send_t == Time::NEVER && rto_t == Time::NEVER {
            panic!("harness stalled at {:?}", self.now);
        }
        if ack_t <= send_t && ack_t <= rto_t {
            let (t, p) = self.acks.pop_front().unwrap();
            self.now = t;
            self.on_ack(p);
        } else if send_t <= rto_t {
            self.now = send_t;
            self.send(send.unwrap().1);
        } else {
            self.now = rto_t;
            self.on_rto(rto.unwrap().1);
        }
    }

    fn send(&mut self, i: usize) {
        let now = self.now;
        let mss = self.link.mss;
        let f = &mut self.flows[i];
        if f.conn.packets_out == 0 {
            f.first_tx_mstamp = now;
            f.conn.delivered_time = now;
            f.conn.now = now;
            f.cc.cwnd_event(&mut f.conn, CwndEvent::TxStart);
        }
        let p = Pkt {
            flow: i,
            seq: f.next_seq,
            sent: now,
            delivered: f.conn.delivered,
            delivered_time: f.conn.delivered_time,
            first_tx: f.first_tx_mstamp,
            app_limited: f.conn.app_limited != 0,
            tx_in_flight: f.conn.in_flight + 1,
            lost_at_send: f.conn.lost,
        };
        f.next_seq += 1;
        f.conn.packets_out += 1;
        f.conn.in_flight += 1;
        f.conn.is_cwnd_limited = f.conn.in_flight >= f.conn.cwnd;
        if let Some(r) = f.conn.pacing_rate.filter(|r| r.bps() > 0) {
            f.next_send = now + r.tx_time(mss as u64);
        } else {
            f.next_send = now;
        }
        f.conn.wstamp = f.next_send;
        f.outstanding.insert(p.seq, p.clone());

        // Policer in front of the bottleneck.
        if let Some((rate, bucket)) = self.link.policer {
            let dt = now.saturating_sub(self.last_token_time);
            self.tokens =
                (self.tokens + rate.bps() as f64 * dt.secs_f64() / 8.0).min(bucket as f64);
            self.last_token_time = now;
            if self.tokens < mss as f64 {
                return; // policed: dropped
            }
            self.tokens -= mss as f64;
        }
        // Bottleneck rate changes.
        while self.rate_change_idx < self.link.rate_changes.len()
            && self.link.rate_changes[self.rate_change_idx].0 <= now
        {
            self.link.rate = self.link.rate_changes[self.rate_change_idx].1;
            self.rate_change_idx += 1;
        }
        while self.in_link.front().is_some_and(|d| *d <= now) {
            self.in_link.pop_front();
        }
        let waiting = self.in_link.len().saturating_sub(1);
        if self
            .link
            .buffer_pkts
            .is_some_and(|b| !self.in_link.is_empty() && waiting >= b)
        {
            return; // tail drop
        }
        let dep = self.last_departure.max(now) + self.link.rate.tx_time(mss as u64);
        self.last_departure = dep;
        self.in_link.push_back(dep);
        self.acks.push_back((dep + self.link.base_rtt, p));
        self.flows[i].acks_pending += 1;
    }

    fn on_rto(&mut self, i: usize) {
        let now = self.now;
        let f = &mut self.flows[i];
        f.conn.now = now;
        let n = f.outstanding.len() as u32;
        f.outstanding.clear();
        f.conn.lost += n as u64;
        f.total_lost += n as u64;
        f.conn.packets_out -= n;
        f.conn.in_flight -= n;
        f.conn.ssthresh = f.cc.ssthresh(&f.conn);
        f.cc.set_state(&mut f.conn, CaState::Loss);
        f.conn.ca_state = CaState::Loss;
        f.conn.cwnd = f.conn.in_flight + 1; // tcp_enter_loss
        f.recovery_high = f.next_seq;
    }

    fn on_ack(&mut self, p: Pkt) {
        let now = self.now;
        let f = &mut self.flows[p.flow];
        f.acks_pending -= 1;
        f.conn.now = now;
        if !f.outstanding.contains_key(&p.seq) {
            return; // declared lost by an RTO, then arrived
        }
        let prior_in_flight = f.conn.in_flight;
        // Loss detection: everything sent before p and not yet ACKed is lost.
        let lost: Vec<u64> = f.outstanding.range(..p.seq).map(|(s, _)| *s).collect();
        let n = lost.len() as u32;
        for s in lost {
            f.outstanding.remove(&s);
        }
        f.conn.lost += n as u64;
        f.total_lost += n as u64;
        f.conn.packets_out -= n;
        f.conn.in_flight -= n;
        // Delivery.
        f.outstanding.remove(&p.seq);
        f.conn.delivered += 1;
        f.total_delivered += 1;
        f.conn.packets_out -= 1;
        f.conn.in_flight -= 1;
        let rtt = now - p.sent;
        f.conn.srtt = if f.conn.srtt.ns() == 0 {
            rtt
        } else {
            Dur((f.conn.srtt.ns() * 7 + rtt.ns()) / 8)
        };
        f.conn.min_rtt = Some(f.conn.min_rtt.map_or(rtt, |m| m.min(rtt)));
        // CA state machine (tcp_fastretrans_alert, simplified): recovery ends
        // once everything sent before it began is ACKed; losses detected on
        // that same ACK start the next recovery at once.
        if matches!(f.conn.ca_state, CaState::Recovery | CaState::Loss) && p.seq >= f.recovery_high
        {
            f.cc.set_state(&mut f.conn, CaState::Open);
            f.conn.ca_state = CaState::Open;
        }
        if n > 0 && matches!(f.conn.ca_state, CaState::Open | CaState::Disorder) {
            f.conn.ssthresh = f.cc.ssthresh(&f.conn);
            f.cc.set_state(&mut f.conn, CaState::Recovery);
            f.conn.ca_state = CaState::Recovery;
            f.recovery_high = f.next_seq;
            if !f.cc.has_cong_control() {
                f.conn.cwnd = f.conn.ssthresh.max(2);
            }
        }
        // tcp_rate_skb_delivered + tcp_rate_gen.
        if f.conn.app_limited != 0 && f.conn.delivered > f.conn.app_limited {
            f.conn.app_limited = 0;
        }
        f.first_tx_mstamp = p.sent;
        f.conn.delivered_time = now;
        let snd = p.sent - p.first_tx;
        let ack = now - p.delivered_time;
        let mut interval = if snd > ack { snd } else { ack };
        if f.conn.min_rtt.is_some_and(|m| interval < m) {
            interval = Dur::ZERO;
        }
        let delivered = f.conn.delivered - p.delivered;
        let rs = RateSample {
            prior_delivered: p.delivered,
            delivered,
            interval,
            delivery_rate: (interval.ns() > 0)
                .then(|| Bandwidth::from_bytes_per(delivered * self.link.mss as u64, interval)),
            rtt: Some(rtt),
            losses: n,
            acked_sacked: 1,
            prior_in_flight,
            is_app_limited: p.app_limited,
            is_retrans: false,
            tx_in_flight: p.tx_in_flight,
            lost: f.conn.lost - p.lost_at_send,
            ..Default::default()
        };
        let sample = AckSample {
            pkts_acked: 1,
            rtt: Some(rtt),
            in_flight: f.conn.in_flight,
        };
        f.cc.pkts_acked(&mut f.conn, &sample);
        if f.cc.has_cong_control() {
            f.cc.cong_control(&mut f.conn, &rs);
        } else if f.conn.ca_state == CaState::Open {
            f.cc.cong_avoid(&mut f.conn, 1);
        }
    }
}

/// BBR in ProbeBW (phase 2) on a 100-packet BDP, cwnd 100: the starting
/// point of the unit tests that poke one mechanism at a time.
pub(crate) fn steady() -> (super::Bbr, Conn) {
    use super::{Bbr, BbrConfig, Mode, BW_UNIT};
    let mut c = Conn::new(Time::ZERO, 1024);
    let mut b = Bbr::new("bbr", BbrConfig::default(), 1);
    b.bbr_init(&mut c);
    b.bw.reset(0, BW_UNIT / 128); // 7812.5 pkt/s
    b.min_rtt_ns = Dur::from_us(12_800).ns(); // BDP 100
    b.full_bw_reached = true;
    b.mode = Mode::ProbeBw;
    b.cycle_idx = 2;
    b.update_gains();
    c.cwnd = 100;
    (b, c)
}
