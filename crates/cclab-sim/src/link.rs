//! The simulator's side of a link: the link model of cclab-netmodel
//! (loss → queue discipline → serialization → propagation delay, the same
//! code the kernel backend's emulator runs) driven from the event queue,
//! and the propagation line that carries departed packets to the link's far
//! end (the next link of their path, their receiver, or — for an ACK — their
//! sender; `sim.rs` routes them).
//!
//! Only the head of each line has an event in the queue: one
//! `Bottleneck(k)` event for link k's next action (a serialization ending, a
//! trace delivery opportunity, the end of an outage) and one
//! `Propagation(k)` event for the first packet on its way to the far end.
//! An arrival first lets the link finish what is due at the same instant,
//! so a packet arriving as another leaves sees the queue after the
//! departure (as the emulator does).
//!
//! Data and ACKs share a link's queue when a flow's `ack_path` crosses it:
//! an ACK is a packet whose `flow` carries [`ACK_FLAG`] (so FQ-CoDel hashes
//! a flow's ACKs apart from its data, as Linux's 5-tuple hash does) and
//! whose payload indexes the ACK it carries.

use crate::event::{Event, EventQueue};
use crate::jitter::Jitter;
use crate::pipe::Pipe;
use crate::rng::Rng;
use crate::scenario::Link;
use crate::time::Time;
use cclab_netmodel::{Bottleneck, DropCause, Sink};

/// What a data segment carries through the link besides its size.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Seg {
    /// Segment number (the simulator's sequence space counts segments).
    pub seq: u32,
    /// The TCP timestamp echo (TSecr, ms) it carries to the receiver in the
    /// low 30 bits (modulo 2^30 ms, about 12 days: the receiver takes RTTs
    /// as differences modulo that), the TCP CWR flag in the top bit and PSH
    /// in the next — so the packet stays 24 bytes.
    pub ts_cwr: u32,
}

const CWR_BIT: u32 = 1 << 31;
const PSH_BIT: u32 = 1 << 30;
/// The bits of [`Seg::ts_cwr`] that hold TSecr.
pub const TSECR_MASK: u32 = PSH_BIT - 1;

impl Seg {
    pub fn new(seq: u32, tsecr_ms: u32, cwr: bool) -> Seg {
        Seg::with_psh(seq, tsecr_ms, cwr, false)
    }
    pub fn with_psh(seq: u32, tsecr_ms: u32, cwr: bool, psh: bool) -> Seg {
        Seg { seq, ts_cwr: (tsecr_ms & TSECR_MASK) | if cwr { CWR_BIT } else { 0 } | if psh { PSH_BIT } else { 0 } }
    }
    /// TSecr modulo 2^30 ms.
    #[inline]
    pub fn tsecr_ms(&self) -> u32 {
        self.ts_cwr & TSECR_MASK
    }
    #[inline]
    pub fn cwr(&self) -> bool {
        self.ts_cwr & CWR_BIT != 0
    }
    /// The TCP PSH flag: the segment ends an skb of several segments
    /// (`__tcp_transmit_skb`) or one that the sending application pushed
    /// (`tcp_push` → `tcp_mark_push`).
    #[inline]
    pub fn psh(&self) -> bool {
        self.ts_cwr & PSH_BIT != 0
    }
}

/// A packet on the wire (`len` = payload + headers, `ect`/`ce` its ECN
/// field): a data segment, or an ACK when `flow` has [`ACK_FLAG`].
pub type Packet = cclab_netmodel::Packet<Seg>;

/// Set in `Packet::flow` of an ACK (the flow id is in the low bits; its
/// `data.seq` indexes the simulator's store of ACKs in flight on links).
pub const ACK_FLAG: u32 = 1 << 31;

/// The simulator's own count of the ACKs that entered and left a link (the
/// link model counts every packet; data = all − ACKs) and of every packet
/// that reached the far end: the end-of-run counters and the conservation
/// property tests read these beside the model's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// ACKs handed to the link.
    pub acks_arrived: u64,
    /// ACKs that finished serialization (onto the propagation line).
    pub acks_departed: u64,
    /// ACKs the link dropped (random loss, full buffer, AQM).
    pub acks_dropped: u64,
    /// ACKs that reached the far end of the propagation line.
    pub acks_exited: u64,
    /// Packets (data and ACKs) that reached the far end of the propagation line.
    pub exited: u64,
}

#[inline(always)]
fn is_ack(pkt: &Packet) -> bool {
    pkt.flow & ACK_FLAG != 0
}

pub struct SimLink {
    pub model: Bottleneck<Seg>,
    /// The propagation line: departed packets on their way to the far end.
    pub prop: Pipe<Packet>,
    /// This link's index in the topology (carried by its events).
    index: u32,
    /// The time of the `Bottleneck` event that is current (older ones are
    /// stale); `u64::MAX`: none.
    event_at: u64,
    /// Wire bytes of each flow that left the bottleneck.
    pub flow_egress_bytes: Vec<u64>,
    /// Dropped packets with their cause, when recording (tests).
    pub drop_log: Option<Vec<(Packet, DropCause)>>,
    pub tally: Tally,
    /// The receiving hosts' jitter (`jitter.rs`) and its stream: added to
    /// each departure's arrival at its receiver, FIFO kept (the receivers
    /// take packets in from one line, as the emulator's data thread writes
    /// them into one device).
    host_jitter: Option<(Jitter, Rng)>,
}

/// Routes the model's output: departures onto the propagation line (or
/// straight to `rx` with zero delay), drops to the log if recording.
struct Route<'a> {
    now: Time,
    prop: &'a mut Pipe<Packet>,
    q: &'a mut EventQueue,
    rx: &'a mut Vec<Packet>,
    egress: &'a mut [u64],
    drop_log: &'a mut Option<Vec<(Packet, DropCause)>>,
    tally: &'a mut Tally,
    index: u32,
    jitter: &'a mut Option<(Jitter, Rng)>,
}

impl Sink<Seg> for Route<'_> {
    #[inline(always)]
    fn depart(&mut self, pkt: Packet, _at: u64, exit: u64) {
        // (an ACK's flow index, with ACK_FLAG, is beyond the table)
        if let Some(b) = self.egress.get_mut(pkt.flow as usize) {
            *b += pkt.len as u64;
        }
        if is_ack(&pkt) {
            self.tally.acks_departed += 1;
        }
        let exit = match self.jitter {
            Some((j, rng)) => exit + j.sample(rng),
            None => exit,
        };
        if exit == self.now.0 && self.prop.is_empty() {
            // zero propagation delay: at the far end now
            self.tally.exited += 1;
            self.tally.acks_exited += is_ack(&pkt) as u64;
            self.rx.push(pkt);
        } else if self.prop.push(Time(exit), pkt) {
            self.q.push(self.prop.head_time().unwrap(), Event::Propagation(self.index));
        }
    }
    #[inline]
    fn drop(&mut self, pkt: Packet, cause: DropCause) {
        self.tally.acks_dropped += is_ack(&pkt) as u64;
        if let Some(log) = self.drop_log.as_mut() {
            log.push((pkt, cause));
        }
    }
}

impl SimLink {
    /// Link `index` of the topology (its events carry the index), with the
    /// random streams of `seed` (the caller derives it:
    /// `cclab_netmodel::ir::link_seed`), counting egress bytes per flow for
    /// `n_flows` flows.
    pub fn new(index: u32, link: &Link, seed: u64, n_flows: usize) -> Result<SimLink, String> {
        Ok(SimLink {
            model: Bottleneck::new(link.params(seed, 0, 0)?),
            prop: Pipe::default(),
            index,
            event_at: u64::MAX,
            flow_egress_bytes: vec![0; n_flows],
            drop_log: None,
            tally: Tally::default(),
            host_jitter: None,
        })
    }

    /// Delay each departure's arrival at the far end by host jitter (the
    /// receivers' line of a one-link topology).
    pub fn set_host_jitter(&mut self, jitter: Jitter, rng: Rng) {
        self.host_jitter = Some((jitter, rng));
    }

    /// A packet reaches the link. Packets that reach the far end at once
    /// (zero propagation delay) are appended to `rx`. (The per-packet path
    /// from a flow's access line: inlined there with the model's `arrive` —
    /// measured with callgrind, the model's `arrive` called out of line cost
    /// 3.5 % of a one-flow run's instructions. Hand-overs between links and
    /// ACKs use [`Self::arrive_from_link`].)
    #[inline(always)]
    pub fn arrive(&mut self, now: Time, pkt: Packet, q: &mut EventQueue, rx: &mut Vec<Packet>) {
        if is_ack(&pkt) {
            self.tally.acks_arrived += 1;
        }
        let mut r = Route { now, prop: &mut self.prop, q, rx, egress: &mut self.flow_egress_bytes, drop_log: &mut self.drop_log, tally: &mut self.tally, index: self.index, jitter: &mut self.host_jitter };
        self.model.arrive(now.0, pkt, &mut r);
        self.resched(q);
    }

    /// [`Self::arrive`], not inlined: a packet from another link or an ACK.
    #[inline(never)]
    pub fn arrive_from_link(&mut self, now: Time, pkt: Packet, q: &mut EventQueue, rx: &mut Vec<Packet>) {
        self.arrive(now, pkt, q, rx)
    }

    /// The link's `Bottleneck` event fired.
    pub fn on_bottleneck(&mut self, now: Time, q: &mut EventQueue, rx: &mut Vec<Packet>) {
        if self.event_at != now.0 {
            return; // superseded: the link already did what was due
        }
        self.event_at = u64::MAX;
        let mut r = Route { now, prop: &mut self.prop, q, rx, egress: &mut self.flow_egress_bytes, drop_log: &mut self.drop_log, tally: &mut self.tally, index: self.index, jitter: &mut self.host_jitter };
        self.model.advance(now.0, &mut r);
        self.resched(q);
    }

    /// The link's `Propagation` event fired: packets due at the far end.
    pub fn on_propagation(&mut self, now: Time, q: &mut EventQueue, rx: &mut Vec<Packet>) {
        while let Some(pkt) = self.prop.pop_due(now) {
            self.tally.exited += 1;
            self.tally.acks_exited += is_ack(&pkt) as u64;
            rx.push(pkt);
        }
        if let Some(t) = self.prop.head_time() {
            q.push(t, Event::Propagation(self.index));
        }
    }

    /// Keep one current `Bottleneck` event, at the link's next action.
    #[inline]
    fn resched(&mut self, q: &mut EventQueue) {
        let next = self.model.next_event_ns();
        if next != self.event_at {
            if next != u64::MAX {
                q.push(Time(next), Event::Bottleneck(self.index));
            }
            self.event_at = next;
        }
    }

    /// The packet at the head of the propagation line (the next
    /// `Propagation` event delivers it).
    #[inline]
    pub fn prop_head(&self) -> Option<&Packet> {
        self.prop.head()
    }

    /// Packets on the propagation line (between the link and its far end).
    pub fn in_flight(&self) -> u64 {
        self.prop.len() as u64
    }

    /// ACKs waiting, held or in service at the link, by the simulator's own count.
    pub fn acks_held(&self) -> u64 {
        let t = &self.tally;
        t.acks_arrived - t.acks_departed - t.acks_dropped
    }

    /// ACKs on the propagation line, by the simulator's own count.
    pub fn acks_propagating(&self) -> u64 {
        self.tally.acks_departed - self.tally.acks_exited
    }

    /// Packets the link dropped (all causes), data and ACKs.
    pub fn dropped(&self) -> u64 {
        let c = &self.model.counters;
        c.drops_overflow + c.drops_random + c.drops_aqm + c.drops_policer
    }
}
