//! A packet as the link model sees it.

use crate::Ns;

/// `flow` of packets that belong to no flow (e.g. IPv6 neighbour traffic on
/// the emulator's TUN device). They share one FQ-CoDel queue.
pub const FLOW_NONE: u32 = u32::MAX;

/// A packet at the bottleneck. `P` is the caller's payload (the simulator's
/// segment number and timestamp, the emulator's buffer); the model never
/// looks into it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet<P> {
    /// The flow it belongs to ([`FLOW_NONE`] if none): FQ-CoDel's flow key.
    pub flow: u32,
    /// Bytes on the wire (IP datagram: headers + payload; an IPv4 datagram
    /// is at most 65 535 bytes). 16 bits keep the packet, with the
    /// simulator's 8-byte payload, at 24 bytes.
    pub len: u16,
    /// ECN-capable transport (ECT(0), ECT(1), or already CE; RFC 3168 §5):
    /// an AQM with ECN enabled may mark it instead of dropping it.
    pub ect: bool,
    /// Congestion Experienced: set by an AQM (RFC 3168 §5).
    pub ce: bool,
    /// When it arrived at the bottleneck (set by [`crate::Bottleneck`]).
    pub enqueued: Ns,
    pub data: P,
}

impl<P> Packet<P> {
    /// `len` above 65 535 is clamped (no IPv4 datagram is longer).
    pub fn new(flow: u32, len: u32, ect: bool, data: P) -> Packet<P> {
        debug_assert!(len <= u16::MAX as u32, "{len}-byte packet");
        Packet {
            flow,
            len: len.min(u16::MAX as u32) as u16,
            ect,
            ce: false,
            enqueued: 0,
            data,
        }
    }

    /// Bytes on the wire.
    #[inline]
    pub fn wire_len(&self) -> u32 {
        self.len as u32
    }

    /// Set CE if the packet is ECN-capable (Linux `INET_ECN_set_ce`): true
    /// if it now carries CE, false if it is not ECN-capable and must be
    /// dropped instead.
    #[inline]
    pub fn mark_ce(&mut self) -> bool {
        if self.ect {
            self.ce = true;
        }
        self.ect
    }
}

/// Why the link dropped a packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DropCause {
    /// The configured random loss, before the queue (`drops_random`).
    Random,
    /// The buffer was full (`drops_overflow`): drop-tail, drop-front,
    /// random-drop, the hard limit of every AQM, FQ-CoDel's fat-flow drop.
    Overflow,
    /// An AQM decided to drop (`drops_aqm`): RED's early and forced drops,
    /// CoDel's and FQ-CoDel's dequeue drops, PIE's early drops.
    Aqm,
    /// The token-bucket policer in front of the queue found too few tokens
    /// (`drops_policer`, [`crate::policer`]).
    Policer,
}
