//! The algorithm tests' harness (test builds only): the real simulator —
//! `tcp::Sender` and `Receiver` (SACK, RACK-TLP, RTO, PRR, pacing and TSO
//! bursts, tcp_rate.c delivery-rate sampling, delayed ACKs, the handshake's
//! RTT sample) over the real bottleneck (`SimLink`, cclab-netmodel: drop-tail
//! buffer, token-bucket policer, rate schedule) — built from a scenario (IR)
//! and stepped one event at a time, so a test can watch an algorithm's state
//! as the run goes.
//!
//! [`Path`] builds the dumbbell most tests need (n flows of one algorithm,
//! one RTT, a buffer in BDPs, optionally a policer and rate changes);
//! [`Harness::from_scenario`] takes any scenario. Packets are full segments:
//! `mss` 1448 payload bytes + 52 header bytes = 1500 wire bytes, so the
//! link's rate in packets per second is rate / 12 000, and the goodput of a
//! full link is 1448/1500 of its rate.

use super::Sim;
use crate::cc::bbr::Bbr;
use crate::cc::bbr3::Bbr3;
use crate::cc::{Cc, Conn};
use crate::scenario::*;
use crate::tcp::sender::Sender;
use crate::time::Time;
use std::collections::BTreeMap;

pub const MSS: u32 = 1448;
pub const HEADER: u32 = 52;
/// Wire bytes of a full segment.
pub const WIRE: u64 = (MSS + HEADER) as u64;
const NS_PER_S: f64 = 1e9;

/// A dumbbell for algorithm tests: the bottleneck's rate, every flow's base
/// RTT (all of it on the access and ACK paths; the bottleneck adds only
/// serialization and queueing), the buffer, and the optional extras.
#[derive(Clone, Debug)]
pub struct Path {
    pub rate_bps: u64,
    pub rtt_ms: u64,
    /// Buffer in bytes (wire bytes) of waiting packets; `None`: unbounded (1 TB).
    pub buffer_bytes: Option<u64>,
    /// Token bucket in front of the queue: (rate bit/s, bucket bytes).
    pub policer: Option<(u64, u64)>,
    /// Bottleneck rate changes: (time s, new rate bit/s), the link's schedule.
    pub rate_changes: Vec<(f64, u64)>,
    /// Length of the run (the scenario's duration), s.
    pub duration_s: f64,
}

impl Path {
    pub fn new(rate_bps: u64, rtt_ms: u64) -> Path {
        Path {
            rate_bps,
            rtt_ms,
            buffer_bytes: None,
            policer: None,
            rate_changes: vec![],
            duration_s: 60.0,
        }
    }
    /// Bandwidth-delay product in bytes (rate × RTT), as the front end's `"4bdp"`.
    pub fn bdp_bytes(&self) -> f64 {
        self.rate_bps as f64 * self.rtt_ms as f64 / 8e3
    }
    /// Bandwidth-delay product in full packets (1500 wire bytes).
    pub fn bdp_pkts(&self) -> f64 {
        self.bdp_bytes() / WIRE as f64
    }
    /// Full packets per second at the initial rate.
    pub fn pkts_per_sec(&self) -> f64 {
        self.rate_bps as f64 / 8.0 / WIRE as f64
    }
    /// Goodput of a full link at the initial rate (payload bit/s).
    pub fn payload_bps(&self) -> f64 {
        self.rate_bps as f64 * MSS as f64 / WIRE as f64
    }
    /// A buffer of `bdps` × rate × RTT bytes (at least one packet).
    pub fn with_buffer_bdp(mut self, bdps: f64) -> Path {
        self.buffer_bytes = Some(((self.bdp_bytes() * bdps).ceil() as u64).max(WIRE));
        self
    }
    pub fn with_policer(mut self, rate_bps: u64, bucket_bytes: u64) -> Path {
        self.policer = Some((rate_bps, bucket_bytes));
        self
    }
    pub fn with_rate_change(mut self, at_s: f64, rate_bps: u64) -> Path {
        self.rate_changes.push((at_s, rate_bps));
        self
    }
    pub fn for_secs(mut self, secs: f64) -> Path {
        self.duration_s = secs;
        self
    }

    /// The scenario: `n` flows of `cca` (with `params`), all starting at 0.
    pub fn scenario(&self, cca: &str, params: &[(&str, f64)], n: usize, seed: u64) -> Scenario {
        let duration_ns = (self.duration_s * NS_PER_S) as u64;
        let cca_params: BTreeMap<String, f64> =
            params.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let flows = (0..n as u32)
            .map(|id| Flow {
                id,
                group: 0,
                cca: cca.into(),
                cca_params: cca_params.clone(),
                rtt_ns: self.rtt_ms * 1_000_000,
                start_ns: 0,
                start_offset_ns: 0,
                stop_ns: None,
                bytes: None,
                rwnd_bytes: None,
                ecn: false,
                path: vec!["link".into()],
                ack_path: vec![],
                ack_every: 2,
                sack: true,
            })
            .collect();
        let buffer = self.buffer_bytes.unwrap_or(1 << 40);
        Scenario {
            ir_version: IR_VERSION,
            name: format!("harness-{cca}"),
            duration_ns,
            seed,
            sample_interval_ns: 100_000_000,
            measure: Measure {
                from_ns: 0,
                to_ns: duration_ns,
            },
            mss: MSS,
            header_bytes: HEADER,
            links: vec![Link {
                name: "link".into(),
                from: "left".into(),
                to: "right".into(),
                capacity: Capacity::Constant {
                    rate_bps: self.rate_bps,
                },
                delay_ns: 0,
                buffer: Buffer {
                    bytes: Some(buffer),
                    packets: None,
                },
                loss: Loss::Bernoulli { p: 0.0 },
                schedule: self
                    .rate_changes
                    .iter()
                    .map(|&(at, r)| Change {
                        at_ns: (at * NS_PER_S) as u64,
                        rate_bps: Some(r),
                        delay_ns: None,
                        loss: None,
                    })
                    .collect(),
                qdisc: QdiscConfig::Droptail {},
                policer: self.policer.map(|(rate_bps, burst_bytes)| PolicerConfig {
                    rate_bps,
                    burst_bytes,
                }),
            }],
            flows,
            // the kernel backend's end hosts (tcp_rmem max 64 MiB: never the limit here)
            host: Host {
                tcp_rmem: [4096, 131_072, 64 << 20],
                tcp_wmem: [4096, 16_384, 64 << 20],
                rcv_truesize: 2304,
                jitter_ns: vec![],
                pauses: None,
                read_delay_ns: vec![],
                jitter_p: vec![],
                read_delay_p: vec![],
            },
            record: None,
        }
    }
}

/// A simulation stepped one event at a time.
pub struct Harness {
    pub sim: Sim,
    /// The path it was built from (None: built from a scenario).
    pub path: Option<Path>,
}

impl Harness {
    /// One flow of `cca` on `path`.
    pub fn new(cca: &str, params: &[(&str, f64)], path: Path, seed: u64) -> Harness {
        Harness::new_multi(cca, params, path, 1, seed)
    }

    /// `n` flows of `cca` on `path`.
    pub fn new_multi(
        cca: &str,
        params: &[(&str, f64)],
        path: Path,
        n: usize,
        seed: u64,
    ) -> Harness {
        let mut h = Harness::from_scenario(&path.scenario(cca, params, n, seed));
        h.path = Some(path);
        h
    }

    pub fn from_scenario(sc: &Scenario) -> Harness {
        Harness {
            sim: Sim::new(sc).unwrap_or_else(|e| panic!("harness scenario: {e}")),
            path: None,
        }
    }

    /// The path (panics for a harness built from a scenario).
    pub fn path(&self) -> &Path {
        self.path
            .as_ref()
            .expect("built from a scenario, not a Path")
    }

    /// Process the next event (panics when the run is over: lengthen the
    /// path's `duration_s`).
    pub fn step(&mut self) {
        if self.sim.step().is_none() {
            panic!("harness: the run ended at {:.3} s", self.now_secs());
        }
    }

    pub fn run_until(&mut self, secs: f64) {
        while self.now_secs() < secs {
            self.step();
        }
    }

    pub fn now(&self) -> Time {
        self.sim.q.now()
    }
    pub fn now_secs(&self) -> f64 {
        self.now().secs_f64()
    }

    pub fn n_flows(&self) -> usize {
        self.sim.flows.len()
    }
    pub fn sender(&self, i: usize) -> &Sender {
        &self.sim.flows[i].sender
    }
    /// Flow i's sender, to poke (a test that stands in for an algorithm).
    pub fn sender_mut(&mut self, i: usize) -> &mut Sender {
        &mut self.sim.flows[i].sender
    }
    /// Step to `until` s, collecting flow i's rate sample after every step
    /// in which it took an ACK that delivered data: (time s, sample).
    pub fn rate_samples(&mut self, i: usize, until: f64) -> Vec<(f64, crate::cc::RateSample)> {
        let mut out = vec![];
        let mut delivered = self.conn_of(i).delivered;
        while self.now_secs() < until {
            self.step();
            if self.conn_of(i).delivered != delivered {
                delivered = self.conn_of(i).delivered;
                out.push((self.now_secs(), self.sender(i).last_rs.clone()));
            }
        }
        out
    }
    /// Flow i's algorithm and connection state.
    pub fn cc(&self, i: usize) -> &Cc {
        &self.sim.flows[i].sender.cc
    }
    pub fn conn_of(&self, i: usize) -> &Conn {
        &self.sim.flows[i].sender.conn
    }
    /// Flow 0's connection state.
    pub fn conn(&self) -> &Conn {
        self.conn_of(0)
    }
    /// Flow i's BBRv1-family state.
    pub fn bbr_of(&self, i: usize) -> &Bbr {
        match self.cc(i) {
            Cc::Bbr(b) => b,
            _ => panic!("flow {i} is not a BBRv1-family flow"),
        }
    }
    pub fn bbr(&self) -> &Bbr {
        self.bbr_of(0)
    }
    /// Flow i's bbr3 / bbr2 state (one type: see `cc::bbr3::v2alpha`).
    pub fn bbr3_of(&self, i: usize) -> &Bbr3 {
        match self.cc(i) {
            Cc::Bbr3(b) => b,
            _ => panic!("flow {i} is not a bbr3 / bbr2 flow"),
        }
    }
    pub fn bbr3(&self) -> &Bbr3 {
        self.bbr3_of(0)
    }

    /// Packets at the bottleneck: waiting in the queue or being serialized.
    pub fn queue_len(&self) -> u64 {
        self.sim.links[0].model.held_packets()
    }
    /// The bottleneck's counters (arrivals, departures, drops by cause).
    pub fn link_counters(&self) -> &cclab_netmodel::Counters {
        &self.sim.links[0].model.counters
    }
    /// Segments delivered in order to flow i's receiver (its goodput in segments).
    pub fn delivered_of(&self, i: usize) -> u64 {
        self.sim.flows[i].receiver.rcv_nxt as u64
    }
    /// Segments delivered in order, all flows.
    pub fn delivered(&self) -> u64 {
        (0..self.n_flows()).map(|i| self.delivered_of(i)).sum()
    }
    /// Fraction of the packets that reached the bottleneck which it dropped
    /// (retransmissions included: every packet sent is counted once).
    pub fn loss_rate(&self) -> f64 {
        let c = self.link_counters();
        let drops = c.drops_overflow + c.drops_random + c.drops_aqm + c.drops_policer;
        drops as f64 / c.arrival_packets.max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stepped_run_is_the_run() {
        // Stepping changes nothing: the same scenario stepped to its end and
        // simulated in one go give the same record.
        let path = Path::new(20_000_000, 30).with_buffer_bdp(1.0).for_secs(3.0);
        let sc = path.scenario("cubic", &[], 2, 4);
        let mut h = Harness::from_scenario(&sc);
        while h.sim.step().is_some() {}
        let a = h.sim.finish();
        let b = crate::simulate(&sc).unwrap();
        assert_eq!(a.link.egress_bytes, b.link.egress_bytes);
        assert_eq!(a.flows.cwnd_bytes, b.flows.cwnd_bytes);
        assert_eq!(a.counters, b.counters);
    }

    #[test]
    fn the_path_sets_the_scenario() {
        let p = Path::new(10_000_000, 40)
            .with_buffer_bdp(2.0)
            .with_policer(5_000_000, 30_000)
            .with_rate_change(3.0, 20_000_000);
        let sc = p.scenario("bbr", &[("cwnd_gain", 1.5)], 3, 7);
        assert_eq!(sc.flows.len(), 3);
        assert_eq!(sc.flows[2].rtt_ns, 40_000_000);
        assert_eq!(sc.flows[0].cca_params["cwnd_gain"], 1.5);
        assert_eq!(sc.links[0].buffer.bytes, Some(100_000));
        assert_eq!(
            sc.links[0].policer,
            Some(PolicerConfig {
                rate_bps: 5_000_000,
                burst_bytes: 30_000
            })
        );
        assert_eq!(sc.links[0].schedule[0].at_ns, 3_000_000_000);
        assert!((p.bdp_pkts() - 50_000.0 / 1500.0).abs() < 1e-9);
        let mut h = Harness::new_multi("bbr", &[], p, 3, 7);
        h.run_until(0.5);
        assert!(h.delivered() > 0 && h.bbr_of(2).rtt_cnt > 0);
    }
}
