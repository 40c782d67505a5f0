//! The simulation of a topology: each flow's data leaves its sender, waits
//! its own forward delay (an infinitely fast access line), then crosses the
//! links of its `path` in order — each link the netmodel's loss → queue
//! discipline → serialization → propagation — to its receiver. Its ACKs wait
//! the flow's own return delay and then either reach the sender (an
//! uncongested return: `ack_path` empty, the dumbbell of IR v1–v3) or cross
//! the links of its `ack_path` as packets of their own, queued, dropped and
//! serialized beside the data of flows going the other way (docs/ir.md).
//!
//! `simulate` is a pure function of the scenario: same IR and seed ⇒
//! identical output, on any machine.

use crate::cc::{Cc, CcError, INFINITE_SSTHRESH};
use crate::event::{Event, EventQueue};
use crate::jitter::Jitter;
use crate::pauses::Pauses;
use crate::link::{Packet, Seg, SimLink, ACK_FLAG};
use crate::pipe::Pipe;
use crate::record::{opt, Counters, FlowColumns, FlowInfo, LinkColumns, Output};
use cclab_netmodel::WindowHist;
use crate::rng::{mix, Rng};
use crate::scenario::{Flow, Scenario, IR_VERSION};
use cclab_netmodel::ir::{link_seed, split_extra_delay};
use crate::tcp::rcvwnd::RcvConfig;
use crate::tcp::receiver::{Ack, EcnMode, Receiver};
use crate::tcp::sender::{Handshake, Sender, Transmit};
use crate::time::{Dur, Time};
use std::collections::VecDeque;

/// RNG stream labels (so streams never collide): the link's loss and qdisc
/// streams are `cclab_netmodel::STREAM_LOSS` (1) and `STREAM_QDISC` (2).
const STREAM_CC: u64 = 1 << 32;
/// Host jitter (`jitter.rs`): the receivers' line, then per flow its data
/// leaving the sender and its ACKs.
const STREAM_JITTER_DATA: u64 = 3;
const STREAM_JITTER_ACK: u64 = 2 << 32;
const STREAM_JITTER_TX: u64 = 3 << 32;
/// Host pauses (`pauses.rs`): one stream for the whole run.
const STREAM_PAUSES: u64 = 4 << 32;
/// Flow f's receiving application's read latencies (`[host] read_delay`).
const STREAM_READ: u64 = 5 << 32;

/// The test harness: the real simulator, stepped one event at a time, with
/// the flows' algorithm state in view (test builds only).
#[cfg(test)]
pub(crate) mod harness;

/// Laid out by use (`#[repr(C)]`, `crate::prefetch`): what every event of
/// the flow touches, the receiver, the RTT histogram, the sender, then the
/// configuration.
#[repr(C)]
struct FlowState {
    /// The pending `Wake` event's time, if any.
    wake_at: Option<Time>,
    total_bytes: Option<u64>,
    completion: Option<Time>,
    /// When the receiver last got new in-order data.
    last_delivery: Time,
    access_delay: Dur,
    ack_delay: Dur,
    /// The data path's first link (where its access line leads; `path[0]`,
    /// kept here beside the access line so an arrival reads no other
    /// allocation) and its last (where the receiver is).
    first_link: u32,
    last_link: u32,
    access: Pipe<Packet>,
    acks: Pipe<Ack>,
    /// Link indices of the data path and the ACK path (empty: uncongested return).
    path: Box<[u32]>,
    ack_path: Box<[u32]>,
    receiver: Receiver,
    /// RTT samples of ACKs arriving in the measure window.
    rtt_hist: WindowHist,
    /// The connection is established at time zero; the application writes
    /// from the flow's start time.
    sender: Sender,
    cfg: Flow,
    /// ACKs on the links of the ACK path, by number (an ACK packet carries
    /// its number): a flow's ACKs stay in order on every link (FIFO lines,
    /// and every queue discipline keeps a flow's packets in order), so the
    /// one that reaches the sender is the oldest not dropped on the way.
    acks_on_links: VecDeque<(u32, Ack)>,
    next_ack_number: u32,
    /// ACKs put onto the ACK path and taken off it at the sender.
    pub acks_onto_links: u64,
    pub acks_off_links: u64,
    /// This flow's streams of host-jitter draws (with `Sim::jitter`): its
    /// data leaving the sender, its ACKs (leaving the receiver and taken in
    /// by the sender).
    tx_jitter_rng: Rng,
    ack_jitter_rng: Rng,
    /// Its receiving application's read latencies (with `Sim::read_delay`).
    read_rng: Rng,
}

pub struct Sim {
    q: EventQueue,
    links: Vec<SimLink>,
    flows: Vec<FlowState>,
    /// Spare packet vectors for hand-overs between links at one instant.
    spare: Vec<Vec<Packet>>,
    scenario: Scenario,
    out: Output,
    tx_buf: Vec<Transmit>,
    pkt_buf: Vec<Packet>,
    ack_buf: Vec<Ack>,
    events: u64,
    last_sample: Time,
    /// Flows are sampled at multiples of this (docs/ir.md `record`).
    flows_interval: u64,
    /// Host jitter (`jitter.rs`), if any.
    jitter: Option<Jitter>,
    /// Prefetch the next event's state (`crate::prefetch`): only when the
    /// flows' state is larger than a core's caches, where it pays; below,
    /// it is instructions for nothing.
    prefetch: bool,
    /// Per flow, where its algorithm's state lies in its `Cc`
    /// (`Cc::state_span`): 4 bytes a flow, so the hint reads no line of the
    /// flow's own state.
    cc_spans: Vec<(u16, u16)>,
    /// Host pauses (`pauses.rs`), if any: data reaching the bottleneck and
    /// ACKs reaching their sender wait for the end of a pause.
    pauses: Option<Pauses>,
    /// The receiving applications' read latency (`host.read_delay_ns`), if
    /// they do not read at once.
    read_delay: Option<Jitter>,
}

/// Flows' state above which the event loop prefetches (see `Sim::prefetch`).
const PREFETCH_MIN_BYTES: usize = 8 << 20;

/// Wire bytes of a pure ACK: the headers (with the timestamp option) and, when
/// it carries SACK blocks, the SACK option — Linux `tcp_options_write`:
/// `TCPOLEN_SACK_BASE_ALIGNED` (4) + `TCPOLEN_SACK_PERBLOCK` (8) per block.
pub fn ack_wire_bytes(header_bytes: u32, ack: &Ack) -> u32 {
    match ack.n_sacks {
        0 => header_bytes,
        n => header_bytes + 4 + 8 * n as u32,
    }
}

/// Run a scenario to completion.
pub fn simulate(sc: &Scenario) -> Result<Output, String> {
    let mut sim = Sim::new(sc)?;
    sim.run();
    Ok(sim.finish())
}

fn validate(sc: &Scenario) -> Result<(), String> {
    if sc.ir_version != IR_VERSION {
        return Err(format!("ir_version {} is not supported by this engine (expects {IR_VERSION})", sc.ir_version));
    }
    if sc.sample_interval_ns == 0 || sc.duration_ns == 0 {
        return Err("duration_ns and sample_interval_ns must be positive".into());
    }
    if sc.mss == 0 {
        return Err("mss must be positive".into());
    }
    let [rmin, rdef, rmax] = sc.host.tcp_rmem;
    if !(rmin <= rdef && rdef <= rmax && rdef > 0) || rmax > u32::MAX as u64 {
        return Err(format!("host.tcp_rmem {:?} must be min ≤ default ≤ max, default > 0, max < 4 GiB", sc.host.tcp_rmem));
    }
    if sc.host.rcv_truesize < sc.mss {
        return Err(format!("host.rcv_truesize {} is below mss {}", sc.host.rcv_truesize, sc.mss));
    }
    if sc.links.is_empty() {
        return Err("links: a topology needs at least one link".into());
    }
    if !sc.host.jitter_ns.is_empty() && (sc.links.len() > 1 || sc.flows.iter().any(|f| !f.ack_path.is_empty())) {
        return Err("host.jitter_ns is modelled on one-link topologies with an uncongested return only".into());
    }
    if sc.host.pauses.is_some() && (sc.links.len() > 1 || sc.flows.iter().any(|f| !f.ack_path.is_empty())) {
        return Err("host.pauses is modelled on one-link topologies with an uncongested return only".into());
    }
    for (i, l) in sc.links.iter().enumerate() {
        if sc.links[..i].iter().any(|m| m.name == l.name) {
            return Err(format!("links[{i}].name {:?} is used twice", l.name));
        }
        if l.from == l.to {
            return Err(format!("links[{}]: from and to are the same node {:?}", l.name, l.from));
        }
    }
    for f in &sc.flows {
        if f.cca == "dctcp" && !f.ecn {
            return Err(format!("flows[{}]: cca 'dctcp' requires ecn = true (RFC 8257 §3: DCTCP relies on ECN marks)", f.id));
        }
        if f.ack_every == 0 {
            return Err(format!("flows[{}].ack_every must be at least 1", f.id));
        }
        let (path, ack_path) = topology(sc, f)?;
        let delay = |p: &[u32]| p.iter().map(|&k| sc.links[k as usize].delay_ns).sum::<u64>();
        let (fwd, back) = (delay(&path), delay(&ack_path));
        if split_extra_delay(f.rtt_ns, fwd, back).is_none() {
            return Err(format!(
                "flows[{}].rtt {} ns is below the propagation delay of its links ({} ns forward + {} ns on the ACK path)",
                f.id, f.rtt_ns, fwd, back
            ));
        }
    }
    Ok(())
}

/// The link indices of a flow's path and ACK path, checked: known names,
/// no link twice, each link starting where the previous one ends, and the
/// ACK path (if any) leading from the end of the data path back to its start.
fn topology(sc: &Scenario, f: &Flow) -> Result<(Vec<u32>, Vec<u32>), String> {
    let index = |which: &str, names: &[String]| -> Result<Vec<u32>, String> {
        let mut out: Vec<u32> = Vec::with_capacity(names.len());
        for (j, n) in names.iter().enumerate() {
            let k = sc.links.iter().position(|l| &l.name == n).ok_or_else(|| format!("flows[{}].{which}[{j}]: no link named {n:?}", f.id))?;
            if out.contains(&(k as u32)) {
                return Err(format!("flows[{}].{which}: link {n:?} appears twice", f.id));
            }
            if let Some(&prev) = out.last() {
                let p = &sc.links[prev as usize];
                if p.to != sc.links[k].from {
                    return Err(format!("flows[{}].{which}: link {n:?} starts at {:?}, not where {:?} ends ({:?})", f.id, sc.links[k].from, p.name, p.to));
                }
            }
            out.push(k as u32);
        }
        Ok(out)
    };
    let path = index("path", &f.path)?;
    if path.is_empty() {
        return Err(format!("flows[{}].path is empty", f.id));
    }
    let ack_path = index("ack_path", &f.ack_path)?;
    if let (Some(&a0), Some(&an)) = (ack_path.first(), ack_path.last()) {
        let (start, end) = (&sc.links[path[0] as usize].from, &sc.links[*path.last().unwrap() as usize].to);
        if &sc.links[a0 as usize].from != end || &sc.links[an as usize].to != start {
            return Err(format!("flows[{}].ack_path must lead from {end:?} (where its data path ends) back to {start:?} (its sender)", f.id));
        }
    }
    Ok((path, ack_path))
}

impl Sim {
    pub fn new(sc: &Scenario) -> Result<Sim, String> {
        validate(sc)?;
        let mut links = sc
            .links
            .iter()
            .enumerate()
            .map(|(k, l)| SimLink::new(k as u32, l, link_seed(sc.seed, k), sc.flows.len()))
            .collect::<Result<Vec<_>, _>>()?;
        let jitter = Jitter::with_probs(&sc.host.jitter_ns, &sc.host.jitter_p, "host.jitter_ns")?;
        let pauses = match &sc.host.pauses {
            Some(p) => Pauses::new(&p.gaps_ns, &p.durations_ns, Rng::new(sc.seed, STREAM_PAUSES))?,
            None => None,
        };
        let read_delay = Jitter::with_probs(&sc.host.read_delay_ns, &sc.host.read_delay_p, "host.read_delay_ns")?;
        if let Some(j) = &jitter {
            // validated: one link, ACKs uncongested — its line is the receivers'
            links[0].set_host_jitter(j.clone(), Rng::new(sc.seed, STREAM_JITTER_DATA));
        }
        let mut flows = Vec::with_capacity(sc.flows.len());
        let mut state_names: Vec<(String, Vec<String>)> = Vec::new();
        let rcv_cfg = RcvConfig { mss: sc.mss, truesize: sc.host.rcv_truesize, rmem: sc.host.tcp_rmem };
        for f in &sc.flows {
            let cc = Cc::new(&f.cca, &f.cca_params, mix(sc.seed, STREAM_CC + f.id as u64))
                .map_err(|CcError(m)| format!("flows[{}].cca: {m}", f.id))?;
            if !state_names.iter().any(|(n, _)| n == &f.cca) {
                state_names.push((f.cca.clone(), cc.state_names().iter().map(|s| s.to_string()).collect()));
            }
            let (path, ack_path) = topology(sc, f)?;
            let delay = |p: &[u32]| p.iter().map(|&k| sc.links[k as usize].delay_ns).sum::<u64>();
            let (access_delay, ack_delay) = split_extra_delay(f.rtt_ns, delay(&path), delay(&ack_path)).expect("validated");
            // Every connection is set up at time zero, before any flow starts,
            // over the idle path: the handshake measures the base RTT (as the
            // kernel backend, which connects all flows before the run).
            let rtt = Dur(f.rtt_ns);
            let mut receiver = Receiver::new(Time::ZERO, rcv_cfg, rtt);
            // The handshake negotiates ECN when the flow asks for it (RFC 3168
            // §6.1.1); a DCTCP flow's receiver runs DCTCP's echo (in Linux the
            // receiving socket's congestion control decides, cclab gives each
            // flow's receiver its sender's).
            let needs_ecn = cc.needs_ecn();
            receiver.set_ack_options(f.ack_every, f.sack);
            if read_delay.is_some() {
                receiver.defer_reads();
            }
            receiver.set_ecn(match (f.ecn, needs_ecn) {
                (false, _) => EcnMode::Off,
                (true, false) => EcnMode::Classic,
                (true, true) => EcnMode::Dctcp,
            });
            let handshake = Handshake { rtt: Some(rtt), wnd_end: receiver.initial_wnd_end() };
let mut sender = Sender::new(
                Time::ZERO,
                cc,
                sc.mss,
                sc.header_bytes,
                f.bytes,
                Time(f.start_ns),
                f.stop_ns.map(Time),
                f.rwnd_bytes,
                handshake,
            );
            sender.set_ecn(f.ecn);
            sender.set_sack(f.sack);
            flows.push(FlowState {
                cfg: f.clone(),
                sender,
                receiver,
                access: Pipe::default(),
                acks: Pipe::default(),
                access_delay: Dur(access_delay),
                ack_delay: Dur(ack_delay),
                first_link: path[0],
                last_link: *path.last().expect("validated: not empty"),
                path: path.into(),
                ack_path: ack_path.into(),
                acks_on_links: VecDeque::new(),
                next_ack_number: 0,
                acks_onto_links: 0,
                acks_off_links: 0,
                wake_at: None,
                total_bytes: f.bytes,
                completion: None,
                last_delivery: Time::ZERO,
                rtt_hist: {
                    let mut h = WindowHist::new();
                    h.set_window(sc.measure.from_ns, sc.measure.to_ns);
                    h
                },
                tx_jitter_rng: Rng::new(sc.seed, STREAM_JITTER_TX + f.id as u64),
                ack_jitter_rng: Rng::new(sc.seed, STREAM_JITTER_ACK + f.id as u64),
                read_rng: Rng::new(sc.seed, STREAM_READ + f.id as u64),
            });
        }
        let n_samples = (sc.duration_ns / sc.sample_interval_ns) as usize;
        let flows_interval = sc.flows_interval_ns();
        if flows_interval == 0 || flows_interval % sc.sample_interval_ns != 0 {
            return Err(format!(
                "record.flows_interval_ns {flows_interval} is not a positive multiple of sample_interval_ns {}",
                sc.sample_interval_ns
            ));
        }
        let n_flow_samples = (sc.duration_ns / flows_interval) as usize;
        for link in links.iter_mut() {
            link.model.sojourn_hist.set_window(sc.measure.from_ns, sc.measure.to_ns);
        }
        let mut q = EventQueue::new();
        for (i, f) in flows.iter_mut().enumerate() {
            if f.cfg.start_ns < sc.duration_ns {
                q.push(Time(f.cfg.start_ns), Event::Wake(i as u32));
                f.wake_at = Some(Time(f.cfg.start_ns));
            }
        }
        if n_samples > 0 {
            q.push(Time(sc.sample_interval_ns), Event::Sample);
        }
        let mut out = Output {
            flows: FlowColumns::with_capacity(n_flow_samples * sc.flows.len()),
            link: LinkColumns::default(),
            state_names,
            ..Default::default()
        };
        out.link.time_ns.reserve(n_samples * links.len());
        Ok(Sim {
            q,
            links,
            spare: Vec::new(),
            scenario: sc.clone(),
            out,
            tx_buf: Vec::with_capacity(64),
            pkt_buf: Vec::with_capacity(8),
            ack_buf: Vec::with_capacity(2),
            events: 0,
            last_sample: Time::ZERO,
            flows_interval,
            jitter,
            pauses,
            read_delay,
            prefetch: sc.flows.len() * std::mem::size_of::<FlowState>() > PREFETCH_MIN_BYTES,
            cc_spans: flows.iter().map(|f| f.sender.cc.state_span()).collect(),
            flows,
        })
    }

    /// Whether the event loop prefetches the next event's state
    /// (`crate::prefetch`): decided from the flows' state size; a hint
    /// that never changes results (tests/determinism.rs runs every
    /// scenario both ways).
    pub fn set_prefetch(&mut self, on: bool) {
        self.prefetch = on;
    }
    pub fn prefetching(&self) -> bool {
        self.prefetch
    }

    pub fn run(&mut self) {
        self.run_until(Time(self.scenario.duration_ns));
    }

    /// Process every event up to `limit` (at most the end of the run); the
    /// samples taken meanwhile are in the output (`take_rows` hands them
    /// over in chunks).
    pub fn run_until(&mut self, limit: Time) {
        let end = Time(self.scenario.duration_ns).min(limit);
        while let Some((now, ev)) = self.q.pop_until(end) {
            if self.prefetch {
                if let Some(next) = self.q.peek_event() {
                    self.prefetch(next);
                }
                self.prefetch_heap(ev);
            }
            self.dispatch(now, ev);
        }
    }

    /// Ask for the state the event `ev` will touch (`crate::prefetch`; a
    /// hint, no effect on results).
    #[inline(always)]
    fn prefetch(&self, ev: Event) {
        match ev {
            Event::Access(f) => {
                if let Some(fl) = self.flows.get(f as usize) {
                    crate::prefetch::value(&fl.access);
                }
            }
            Event::AckPath(f) | Event::Wake(f) => {
                if let Some(fl) = self.flows.get(f as usize) {
                    crate::prefetch::fields(&fl.wake_at, &fl.acks);
                    fl.receiver.prefetch_deadline();
                    crate::prefetch::value(&fl.rtt_hist);
                    fl.sender.prefetch_ack(self.cc_spans[f as usize]);
                }
            }
            Event::Bottleneck(k) | Event::Propagation(k) => {
                let link = &self.links[k as usize];
                let pkt = if matches!(ev, Event::Bottleneck(_)) { link.model.in_service() } else { link.prop_head() };
                if let Some(fl) = pkt.and_then(|p| self.flows.get(p.flow as usize)) {
                    // `receive`: the receiver, the ACK path, `rearm`
                    crate::prefetch::fields(&fl.wake_at, &fl.receiver);
                    fl.sender.prefetch_deadline();
                }
            }
            Event::Sample => {}
        }
    }

    /// Ask for what the event `ev` about to run reaches through pointers
    /// (its state itself was asked for when it was next in line): the
    /// entries its pipes give and take, the segments an ACK delivers.
    #[inline(always)]
    fn prefetch_heap(&self, ev: Event) {
        match ev {
            Event::Access(f) => {
                if let Some(fl) = self.flows.get(f as usize) {
                    fl.access.prefetch_head();
                }
            }
            Event::AckPath(f) => {
                if let Some(fl) = self.flows.get(f as usize) {
                    fl.acks.prefetch_head();
                    fl.sender.prefetch_segs();
                    fl.access.prefetch_tail();
                }
            }
            Event::Bottleneck(k) | Event::Propagation(k) => {
                let link = &self.links[k as usize];
                let pkt = if matches!(ev, Event::Bottleneck(_)) { link.model.in_service() } else { link.prop_head() };
                if let Some(fl) = pkt.and_then(|p| self.flows.get(p.flow as usize)) {
                    fl.acks.prefetch_tail();
                }
            }
            Event::Wake(_) | Event::Sample => {}
        }
    }

    /// Process the next event, if the run has one left: its time. (The
    /// algorithm tests step a run to watch its state: `sim::harness`. Test
    /// builds only: a second caller of `dispatch` costs `run` 1.5 % more
    /// instructions, callgrind, through other inlining.)
    #[cfg(test)]
    pub(crate) fn step(&mut self) -> Option<Time> {
        let (now, ev) = self.q.pop_until(Time(self.scenario.duration_ns))?;
        self.dispatch(now, ev);
        Some(now)
    }

    #[inline(always)]
    fn dispatch(&mut self, now: Time, ev: Event) {
        self.events += 1;
        match ev {
            Event::Access(f) => self.on_access(now, f as usize),
            Event::Bottleneck(k) => self.on_bottleneck(now, k as usize),
            Event::Propagation(k) => self.on_propagation(now, k as usize),
            Event::AckPath(f) => self.on_ack_path(now, f as usize),
            Event::Wake(f) => self.on_wake(now, f as usize),
            Event::Sample => self.on_sample(now),
        }
    }

    // ---- packets moving ---------------------------------------------------------

    fn on_access(&mut self, now: Time, f: usize) {
        let mut rx = std::mem::take(&mut self.pkt_buf);
        rx.clear();
        let k = self.flows[f].first_link as usize;
        while let Some(pkt) = self.flows[f].access.pop_due(now) {
            self.links[k].arrive(now, pkt, &mut self.q, &mut rx);
        }
        if let Some(t) = self.flows[f].access.head_time() {
            self.q.push(t, Event::Access(f as u32));
        }
        self.route_all(now, k, &mut rx);
        self.pkt_buf = rx;
    }

    fn on_bottleneck(&mut self, now: Time, k: usize) {
        let mut rx = std::mem::take(&mut self.pkt_buf);
        rx.clear();
        self.links[k].on_bottleneck(now, &mut self.q, &mut rx);
        self.route_all(now, k, &mut rx);
        self.pkt_buf = rx;
    }

    fn on_propagation(&mut self, now: Time, k: usize) {
        let mut rx = std::mem::take(&mut self.pkt_buf);
        rx.clear();
        self.links[k].on_propagation(now, &mut self.q, &mut rx);
        self.route_all(now, k, &mut rx);
        self.pkt_buf = rx;
    }

    /// Packets that reached the far end of link `k` now, in order. (One
    /// function with the receiver inlined, as the one-link engine had it:
    /// measured with callgrind.)
    #[inline(never)]
    fn route_all(&mut self, now: Time, k: usize, rx: &mut Vec<Packet>) {
        for pkt in rx.drain(..) {
            self.route(now, k, pkt);
        }
    }

    /// `pkt` reached the far end of link `k`: on to the next link of its
    /// path, or to its receiver (data) or sender (an ACK).
    #[inline(always)]
    fn route(&mut self, now: Time, k: usize, pkt: Packet) {
        // the common case first: data at the end of its path
        if pkt.flow & ACK_FLAG == 0 && self.flows[pkt.flow as usize].last_link == k as u32 {
            return self.receive(now, pkt);
        }
        self.route_on(now, k, pkt);
    }

    #[inline(never)]
    fn route_on(&mut self, now: Time, k: usize, pkt: Packet) {
        let is_ack = pkt.flow & ACK_FLAG != 0;
        let f = (pkt.flow & !ACK_FLAG) as usize;
        let fl = &self.flows[f];
        let path = if is_ack { &fl.ack_path } else { &fl.path };
        let next = match path.iter().position(|&l| l as usize == k) {
            Some(i) if i + 1 < path.len() => Some(path[i + 1] as usize),
            _ => None,
        };
        match (next, is_ack) {
            (Some(n), _) => {
                let mut rx = self.spare.pop().unwrap_or_default();
                self.links[n].arrive_from_link(now, pkt, &mut self.q, &mut rx);
                self.route_all(now, n, &mut rx);
                self.spare.push(rx);
            }
            (None, false) => self.receive(now, pkt),
            (None, true) => {
                let fl = &mut self.flows[f];
                // the ones before it were dropped on the way
                while fl.acks_on_links.front().is_some_and(|&(n, _)| n != pkt.data.seq) {
                    fl.acks_on_links.pop_front();
                }
                let (_, ack) = fl.acks_on_links.pop_front().expect("an ACK on the links is in its flow's list");
                fl.acks_off_links += 1;
                self.ack_to_sender(now, f, &ack);
            }
        }
    }

    /// A data packet reaches its receiver.
    #[inline(always)]
    fn receive(&mut self, now: Time, pkt: Packet) {
        let f = pkt.flow as usize;
        let fl = &mut self.flows[f];
        let had_timer = fl.receiver.next_deadline();
        let mut acks = std::mem::take(&mut self.ack_buf);
        acks.clear();
        let payload = pkt.wire_len() - self.scenario.header_bytes;
        // The receiver echoes CE (ECE, RFC 3168 §6.1.3 / RFC 8257 §3.2); the
        // sender reacts once per window (tcp/sender.rs, `enter_cwr`).
        let d = pkt.data;
        let rcv_nxt = fl.receiver.rcv_nxt;
        fl.receiver.on_segment_flags(now, d.seq, payload, d.tsecr_ms(), pkt.ect, pkt.ce, d.cwr(), d.psh(), &mut acks);
        if let Some(rd) = self.read_delay.as_ref() {
            if fl.receiver.read_wanted() {
                fl.receiver.schedule_read(now + Dur(rd.sample(&mut fl.read_rng)));
            }
        }
        if fl.receiver.rcv_nxt != rcv_nxt {
            fl.last_delivery = now;
        }
        for ack in acks.drain(..) {
            let late = self.jitter.as_ref().map_or(0, |j| j.sample(&mut fl.ack_jitter_rng) + j.sample(&mut fl.ack_jitter_rng));
            let mut at = now + fl.ack_delay + Dur(late);
            if let Some(p) = self.pauses.as_mut() {
                at = p.release(now, at);
            }
            if fl.acks.push(at, ack) {
                self.q.push(fl.acks.head_time().unwrap(), Event::AckPath(f as u32));
            }
        }
        self.ack_buf = acks;
        if let (Some(total), None) = (fl.total_bytes, fl.completion) {
            if fl.receiver.rcv_nxt as u64 * self.scenario.mss as u64 >= total {
                fl.completion = Some(now);
            }
        }
        let timer = fl.receiver.next_deadline();
        if timer.is_some() && timer != had_timer {
            self.rearm(f);
        }
    }

    fn on_ack_path(&mut self, now: Time, f: usize) {
        if !self.flows[f].ack_path.is_empty() {
            return self.acks_onto_links(now, f);
        }
        let mut tx = std::mem::take(&mut self.tx_buf);
        while let Some(ack) = self.flows[f].acks.pop_due(now) {
            tx.clear();
            let fl = &mut self.flows[f];
            let (n0, sum0) = (fl.sender.stats.rtt_n, fl.sender.stats.rtt_sum_ns);
            fl.sender.on_ack(now, &ack, &mut tx);
            if fl.sender.stats.rtt_n != n0 {
                // at most one RTT sample per ACK (the newest segment's)
                fl.rtt_hist.record_at(now.0, fl.sender.stats.rtt_sum_ns - sum0);
            }
            self.emit(now, f, &tx);
        }
        self.tx_buf = tx;
        if let Some(t) = self.flows[f].acks.head_time() {
            self.q.push(t, Event::AckPath(f as u32));
        }
        self.rearm(f);
    }

    /// ACKs due at the first link of the flow's ACK path become packets there.
    fn acks_onto_links(&mut self, now: Time, f: usize) {
        let mut rx = std::mem::take(&mut self.pkt_buf);
        rx.clear();
        let k = self.flows[f].ack_path[0] as usize;
        let header = self.scenario.header_bytes;
        while let Some(ack) = self.flows[f].acks.pop_due(now) {
            let fl = &mut self.flows[f];
            let number = fl.next_ack_number;
            fl.next_ack_number = number.wrapping_add(1);
            fl.acks_on_links.push_back((number, ack));
            fl.acks_onto_links += 1;
            let pkt = Packet::new(f as u32 | ACK_FLAG, ack_wire_bytes(header, &ack), false, Seg::new(number, 0, false));
            self.links[k].arrive_from_link(now, pkt, &mut self.q, &mut rx);
        }
        if let Some(t) = self.flows[f].acks.head_time() {
            self.q.push(t, Event::AckPath(f as u32));
        }
        self.route_all(now, k, &mut rx);
        self.pkt_buf = rx;
    }

    /// An ACK that crossed the flow's ACK path reaches its sender.
    fn ack_to_sender(&mut self, now: Time, f: usize, ack: &Ack) {
        let mut tx = std::mem::take(&mut self.tx_buf);
        tx.clear();
        let fl = &mut self.flows[f];
        let (n0, sum0) = (fl.sender.stats.rtt_n, fl.sender.stats.rtt_sum_ns);
        fl.sender.on_ack(now, ack, &mut tx);
        if fl.sender.stats.rtt_n != n0 {
            fl.rtt_hist.record_at(now.0, fl.sender.stats.rtt_sum_ns - sum0);
        }
        self.emit(now, f, &tx);
        self.tx_buf = tx;
        self.rearm(f);
    }

    /// Put the sender's segments onto its access link.
    fn emit(&mut self, now: Time, f: usize, tx: &[Transmit]) {
        let fl = &mut self.flows[f];
        let header = self.scenario.header_bytes;
        let exit = now + fl.access_delay;
        for t in tx {
            let pkt = Packet::new(f as u32, t.payload + header, t.ect, Seg::with_psh(t.seq, t.tsecr_ms, t.cwr, t.psh));
            let late = self.jitter.as_ref().map_or(0, |j| j.sample(&mut fl.tx_jitter_rng));
            let mut at = exit + Dur(late);
            if let Some(p) = self.pauses.as_mut() {
                at = p.release(now, at);
            }
            if fl.access.push(at, pkt) {
                self.q.push(fl.access.head_time().unwrap(), Event::Access(f as u32));
            }
        }
    }

    // ---- timers --------------------------------------------------------------------

    fn on_wake(&mut self, now: Time, f: usize) {
        if self.flows[f].wake_at != Some(now) {
            return; // superseded by an earlier wake-up
        }
        self.flows[f].wake_at = None;
        let mut tx = std::mem::take(&mut self.tx_buf);
        tx.clear();
        let fl = &mut self.flows[f];
        let s = &mut fl.sender;
        if s.snd_nxt == 0 && now.0 == fl.cfg.start_ns {
            // The application starts writing.
            s.try_send(now, &mut tx);
        }
        s.on_xmit_timer(now, &mut tx);
        if s.pacing_blocked && s.pace_next <= now || s.stop_time().is_some_and(|t| t <= now) {
            s.try_send(now, &mut tx);
        }
        s.ensure_timer(now);
        if let Some(ack) = fl.receiver.on_timer(now) {
            let late = self.jitter.as_ref().map_or(0, |j| j.sample(&mut fl.ack_jitter_rng) + j.sample(&mut fl.ack_jitter_rng));
            let mut at = now + fl.ack_delay + Dur(late);
            if let Some(p) = self.pauses.as_mut() {
                at = p.release(now, at);
            }
            if fl.acks.push(at, ack) {
                self.q.push(fl.acks.head_time().unwrap(), Event::AckPath(f as u32));
            }
        }
        self.emit(now, f, &tx);
        self.tx_buf = tx;
        self.rearm(f);
    }

    /// Make sure a `Wake` is pending at the flow's earliest deadline.
    fn rearm(&mut self, f: usize) {
        let fl = &mut self.flows[f];
        let now = self.q.now();
        let mut d = if fl.sender.started(now) { fl.sender.next_deadline() } else { Some(Time(fl.cfg.start_ns)) };
        if let Some(t) = fl.receiver.next_deadline() {
            d = Some(d.map_or(t, |x| x.min(t)));
        }
        if let Some(t) = d {
            let t = t.max(self.q.now());
            if fl.wake_at.is_none_or(|w| t < w) {
                fl.wake_at = Some(t);
                self.q.push(t, Event::Wake(f as u32));
            }
        }
    }

    // ---- sampling --------------------------------------------------------------------

    fn on_sample(&mut self, now: Time) {
        let mss = self.scenario.mss as u64;
        let cols = &mut self.out.flows;
        let flows_due = now.0 % self.flows_interval == 0;
        for (i, fl) in self.flows.iter_mut().enumerate().filter(|_| flows_due) {
            cols.time_ns.push(now.0);
            cols.flow_id.push(i as u32);
            let mut delivered = fl.receiver.rcv_nxt as u64 * mss;
            if let Some(t) = fl.total_bytes {
                delivered = delivered.min(t);
            }
            cols.delivered_bytes.push(delivered);
            // wire bytes of this flow that left the last link of its path
            cols.egress_bytes.push(self.links[fl.last_link as usize].flow_egress_bytes[i]);
            match Some(&mut fl.sender).filter(|s| s.started(now)) {
                Some(s) => {
                    cols.active.push(!(s.is_finished()));
                    cols.sent_bytes.push(s.stats.sent_bytes);
                    cols.sent_segs.push(s.stats.sent_packets);
                    cols.cwnd_bytes.push(s.cwnd_bytes());
                    cols.inflight_bytes.push(s.inflight_bytes());
                    let ss = s.conn.ssthresh;
                    cols.ssthresh_bytes.push(if ss >= INFINITE_SSTHRESH { f64::NAN } else { ss as f64 * mss as f64 });
                    cols.srtt_ns.push(s.rtt.srtt.map_or(f64::NAN, |d| d.0 as f64));
                    cols.rtt_ns.push(if s.stats.rtt_n > 0 { s.stats.rtt_sum_ns as f64 / s.stats.rtt_n as f64 } else { f64::NAN });
                    s.stats.rtt_sum_ns = 0;
                    s.stats.rtt_n = 0;
                    cols.min_rtt_ns.push(s.rtt.min_rtt.map_or(f64::NAN, |d| d.0 as f64));
                    cols.pacing_rate_bps.push(s.conn.pacing_rate.map_or(f64::NAN, |r| r.0 as f64));
                    cols.retrans_segs.push(s.stats.retrans_segs);
                    cols.lost_segs.push(s.stats.lost_segs);
                    cols.rto_count.push(s.stats.rto_count);
                    let snap = s.cc.snapshot(&s.conn);
                    cols.cc_state.push(snap.state);
                    cols.cc_w_max_bytes.push(snap.w_max_pkts.map_or(f64::NAN, |w| w * mss as f64));
                    cols.cc_bw_bps.push(opt(snap.bw_bps));
                    cols.cc_min_rtt_ns.push(opt(snap.min_rtt_ns));
                    cols.cc_pacing_gain.push(opt(snap.pacing_gain));
                    cols.cc_cwnd_gain.push(opt(snap.cwnd_gain));
                    cols.cc_inflight_hi_bytes.push(snap.inflight_hi_pkts.map_or(f64::NAN, |w| w * mss as f64));
                    cols.cc_inflight_lo_bytes.push(snap.inflight_lo_pkts.map_or(f64::NAN, |w| w * mss as f64));
                    cols.cc_bw_hi_bps.push(opt(snap.bw_hi_bps));
                    cols.cc_bw_lo_bps.push(opt(snap.bw_lo_bps));
                }
                None => {
                    cols.active.push(false);
                    cols.sent_bytes.push(0);
                    cols.sent_segs.push(0);
                    cols.cwnd_bytes.push(0);
                    cols.inflight_bytes.push(0);
                    for c in [&mut cols.ssthresh_bytes, &mut cols.srtt_ns, &mut cols.rtt_ns, &mut cols.min_rtt_ns, &mut cols.pacing_rate_bps] {
                        c.push(f64::NAN);
                    }
                    cols.retrans_segs.push(0);
                    cols.lost_segs.push(0);
                    cols.rto_count.push(0);
                    cols.cc_state.push(0);
                    for c in [
                        &mut cols.cc_w_max_bytes,
                        &mut cols.cc_bw_bps,
                        &mut cols.cc_min_rtt_ns,
                        &mut cols.cc_pacing_gain,
                        &mut cols.cc_cwnd_gain,
                        &mut cols.cc_inflight_hi_bytes,
                        &mut cols.cc_inflight_lo_bytes,
                        &mut cols.cc_bw_hi_bps,
                        &mut cols.cc_bw_lo_bps,
                    ] {
                        c.push(f64::NAN);
                    }
                }
            }
        }
        let l = &mut self.out.link;
        for (k, link) in self.links.iter().enumerate() {
            let m = &link.model;
            let c = &m.counters;
            l.time_ns.push(now.0);
            l.link_id.push(k as u32);
            l.queue_bytes.push(m.queue_bytes());
            l.queue_packets.push(m.queue_packets());
            l.sojourn_sum_ns.push(c.sojourn_sum_ns);
            l.departed_packets.push(c.departed_packets);
            l.egress_bytes.push(c.egress_bytes);
            l.arrival_bytes.push(c.arrival_bytes);
            l.drops_overflow.push(c.drops_overflow);
            l.drops_random.push(c.drops_random);
            l.drops_aqm.push(c.drops_aqm);
            l.marks_ce.push(c.marks_ce);
            l.drops_policer.push(c.drops_policer);
            // The sample at t comes after everything else at t (event.rs): the
            // interval is (previous sample, t], for the capacity too.
            l.capacity_bps.push(m.capacity().sample_bps(self.last_sample.0, now.0));
            l.delay_ns.push(m.delay_at(now.0));
        }
        self.last_sample = now;
        let next = now + Dur(self.scenario.sample_interval_ns);
        if next.0 <= self.scenario.duration_ns {
            self.q.push(next, Event::Sample);
        }
    }

    /// The samples taken since the last call (all of them the first time),
    /// moved out: the flows' rows and the link's rows.
    pub fn take_rows(&mut self) -> (FlowColumns, LinkColumns) {
        let rows = self.out.flows.len();
        (self.out.flows.take(rows), self.out.link.take())
    }

    /// (algorithm, state names by code) of every algorithm in the run.
    pub fn state_names(&self) -> &[(String, Vec<String>)] {
        &self.out.state_names
    }

    /// True once every event up to the end of the run is done.
    pub fn is_done(&mut self) -> bool {
        self.q.peek_time().is_none_or(|t| t.0 > self.scenario.duration_ns)
    }

    /// End-of-run data-packet totals (ACKs on links are left out): what the
    /// senders sent, the receivers got, the links dropped, the links hold
    /// (the models' count, less the ACKs they hold) and what is on the
    /// access and propagation lines (their lengths, less the ACKs on them).
    pub fn counters(&self) -> Counters {
        let sent: u64 = self.flows.iter().map(|f| f.sender.stats.sent_packets).sum();
        let delivered: u64 = self.flows.iter().map(|f| f.receiver.segments_received).sum();
        let access: u64 = self.flows.iter().map(|f| f.access.len() as u64).sum();
        let mut c = Counters { sent_packets: sent, delivered_packets: delivered, in_flight_packets: access, events: self.events, ..Default::default() };
        for l in &self.links {
            c.dropped_packets += l.dropped() - l.tally.acks_dropped;
            c.queued_packets += l.model.held_packets() - l.acks_held();
            c.in_flight_packets += l.in_flight() - l.acks_propagating();
        }
        c
    }

    /// The links, for end-of-run checks (tests).
    pub fn links(&self) -> &[SimLink] {
        &self.links
    }

    /// Per flow: ACKs put onto its ACK path, and ACKs that reached the sender over it (tests).
    pub fn ack_path_counts(&self) -> Vec<(u64, u64)> {
        self.flows.iter().map(|f| (f.acks_onto_links, f.acks_off_links)).collect()
    }

    pub fn finish(mut self) -> Output {
        self.out.counters = self.counters();
        self.out.flow_info = self
            .flows
            .iter()
            .map(|f| FlowInfo {
                id: f.cfg.id,
                cca: f.cfg.cca.clone(),
                completion_ns: f.completion.map(|t| t.0),
                ce_segments: f.receiver.ce_segments,
                end_ns: f.sender.is_finished().then_some(f.last_delivery.0),
            })
            .collect();
        self.out.rtt_hists = self.flows.iter_mut().map(|f| std::mem::take(&mut f.rtt_hist.hist)).collect();
        // one link: its sojourns; a topology: every link's, together
        let mut sojourn = std::mem::take(&mut self.links[0].model.sojourn_hist.hist);
        for l in &self.links[1..] {
            sojourn.merge(&l.model.sojourn_hist.hist);
        }
        self.out.sojourn_hist = sojourn;
        self.out
    }
}
