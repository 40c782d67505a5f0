//! The simulator's side of the bottleneck: the link model of cclab-netmodel
//! (loss → queue discipline → serialization → propagation delay, the same
//! code the kernel backend's emulator runs) driven from the event queue,
//! and the propagation line that carries departed packets to their
//! receivers.
//!
//! Only the head of each line has an event in the queue: one `Bottleneck`
//! event for the link's next action (a serialization ending, a trace
//! delivery opportunity, the end of an outage) and one `Propagation` event
//! for the first packet on its way to a receiver. An arrival first lets the
//! link finish what is due at the same instant, so a packet arriving as
//! another leaves sees the queue after the departure (as the emulator does).

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
    /// low 31 bits (24 days of milliseconds), the TCP CWR flag in the top
    /// bit — so the packet stays 24 bytes.
    pub ts_cwr: u32,
}

const CWR_BIT: u32 = 1 << 31;

impl Seg {
    pub fn new(seq: u32, tsecr_ms: u32, cwr: bool) -> Seg {
        Seg { seq, ts_cwr: (tsecr_ms & !CWR_BIT) | if cwr { CWR_BIT } else { 0 } }
    }
    #[inline]
    pub fn tsecr_ms(&self) -> u32 {
        self.ts_cwr & !CWR_BIT
    }
    #[inline]
    pub fn cwr(&self) -> bool {
        self.ts_cwr & CWR_BIT != 0
    }
}

/// A data packet on the wire (`len` = payload + headers, `ect`/`ce` its ECN
/// field).
pub type Packet = cclab_netmodel::Packet<Seg>;

pub struct SimLink {
    pub model: Bottleneck<Seg>,
    prop: Pipe<Packet>,
    /// The time of the `Bottleneck` event that is current (older ones are
    /// stale); `u64::MAX`: none.
    event_at: u64,
    /// Wire bytes of each flow that left the bottleneck.
    pub flow_egress_bytes: Vec<u64>,
    /// Dropped packets with their cause, when recording (tests).
    pub drop_log: Option<Vec<(Packet, DropCause)>>,
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
    jitter: &'a mut Option<(Jitter, Rng)>,
}

impl Sink<Seg> for Route<'_> {
    #[inline(always)]
    fn depart(&mut self, pkt: Packet, _at: u64, exit: u64) {
        if let Some(b) = self.egress.get_mut(pkt.flow as usize) {
            *b += pkt.len as u64;
        }
        let exit = match self.jitter {
            Some((j, rng)) => exit + j.sample(rng),
            None => exit,
        };
        if exit == self.now.0 && self.prop.is_empty() {
            // zero propagation delay: at its receiver now
            self.rx.push(pkt);
        } else if self.prop.push(Time(exit), pkt) {
            self.q.push(self.prop.head_time().unwrap(), Event::Propagation);
        }
    }
    #[inline]
    fn drop(&mut self, pkt: Packet, cause: DropCause) {
        if let Some(log) = self.drop_log.as_mut() {
            log.push((pkt, cause));
        }
    }
}

impl SimLink {
    pub fn new(link: &Link, seed: u64, n_flows: usize) -> Result<SimLink, String> {
        Ok(SimLink {
            model: Bottleneck::new(link.params(seed, 0, 0)?),
            prop: Pipe::default(),
            event_at: u64::MAX,
            flow_egress_bytes: vec![0; n_flows],
            drop_log: None,
            host_jitter: None,
        })
    }

    /// Delay each departure's arrival at its receiver by host jitter.
    pub fn set_host_jitter(&mut self, jitter: Jitter, rng: Rng) {
        self.host_jitter = Some((jitter, rng));
    }

    /// A packet reaches the bottleneck. Packets that reach their receiver
    /// at once (zero propagation delay) are appended to `rx`.
    #[inline]
    pub fn arrive(&mut self, now: Time, pkt: Packet, q: &mut EventQueue, rx: &mut Vec<Packet>) {
        let mut r = Route { now, prop: &mut self.prop, q, rx, egress: &mut self.flow_egress_bytes, drop_log: &mut self.drop_log, jitter: &mut self.host_jitter };
        self.model.arrive(now.0, pkt, &mut r);
        self.resched(q);
    }

    /// The `Bottleneck` event fired.
    pub fn on_bottleneck(&mut self, now: Time, q: &mut EventQueue, rx: &mut Vec<Packet>) {
        if self.event_at != now.0 {
            return; // superseded: the link already did what was due
        }
        self.event_at = u64::MAX;
        let mut r = Route { now, prop: &mut self.prop, q, rx, egress: &mut self.flow_egress_bytes, drop_log: &mut self.drop_log, jitter: &mut self.host_jitter };
        self.model.advance(now.0, &mut r);
        self.resched(q);
    }

    /// The `Propagation` event fired: packets due at their receivers.
    pub fn on_propagation(&mut self, now: Time, q: &mut EventQueue, rx: &mut Vec<Packet>) {
        while let Some(pkt) = self.prop.pop_due(now) {
            rx.push(pkt);
        }
        if let Some(t) = self.prop.head_time() {
            q.push(t, Event::Propagation);
        }
    }

    /// Keep one current `Bottleneck` event, at the link's next action.
    #[inline]
    fn resched(&mut self, q: &mut EventQueue) {
        let next = self.model.next_event_ns();
        if next != self.event_at {
            if next != u64::MAX {
                q.push(Time(next), Event::Bottleneck);
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

    /// Packets between the bottleneck and the receivers.
    pub fn in_flight(&self) -> u64 {
        self.prop.len() as u64
    }
}
