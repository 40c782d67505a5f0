//! Receive-window limits (`rwnd_bytes`, docs/ir.md) applied on the ACK path.
//!
//! Linux offers TCP_WINDOW_CLAMP, but since 6.x the receiver recomputes its
//! window clamp from the receive buffer whenever its skb scaling ratio
//! changes (tcp_measure_rcv_mss → tcp_set_window_clamp), so a clamp set by
//! the application does not hold — measured here: 64 KiB set, 252 KiB a
//! moment later. The emulator therefore rewrites the window field of the
//! receiver's segments, as a middlebox would: the sender sees
//! `min(advertised, rwnd)`. The window scale comes from the receiver's
//! SYN-ACK; the TCP checksum is updated incrementally (RFC 1624, eqn. 3).

/// Per-flow state of the rewriter.
#[derive(Clone, Debug, Default)]
pub struct WindowClamp {
    /// rwnd limit in bytes per flow (None: no limit)
    limits: Vec<Option<u64>>,
    /// the receiver's window scale per flow, from its SYN-ACK
    wscale: Vec<u8>,
    pub rewritten: u64,
}

const TCP: u8 = 6;
const SYN: u8 = 0x02;

impl WindowClamp {
    pub fn new(limits: Vec<Option<u64>>) -> Self {
        let n = limits.len();
        WindowClamp {
            limits,
            wscale: vec![0; n],
            rewritten: 0,
        }
    }

    pub fn active(&self) -> bool {
        self.limits.iter().any(|l| l.is_some())
    }

    /// Clamp the advertised window of `pkt` (an IPv4 packet from the receiver of `flow`) in place.
    pub fn apply(&mut self, flow: u32, pkt: &mut [u8]) {
        let f = flow as usize;
        let Some(Some(limit)) = self.limits.get(f).copied() else {
            return;
        };
        if pkt.len() < 20 || pkt[0] >> 4 != 4 || pkt[9] != TCP {
            return;
        }
        let ihl = ((pkt[0] & 0x0f) as usize) * 4;
        if pkt.len() < ihl + 20 {
            return;
        }
        let tcp = &mut pkt[ihl..];
        let data_off = ((tcp[12] >> 4) as usize) * 4;
        let flags = tcp[13];
        let window = u16::from_be_bytes([tcp[14], tcp[15]]);
        let new_window = if flags & SYN != 0 {
            // SYN-ACK: learn the scale; its window field is never scaled (RFC 7323 §2.2)
            self.wscale[f] = window_scale_option(&tcp[20..data_off.min(tcp.len()).max(20)])
                .unwrap_or(0)
                .min(14);
            (window as u64).min(limit) as u16
        } else {
            let shift = self.wscale[f];
            if (window as u64) << shift <= limit {
                return;
            }
            ((limit >> shift).max(1)).min(u16::MAX as u64) as u16
        };
        if new_window == window {
            return;
        }
        tcp[14..16].copy_from_slice(&new_window.to_be_bytes());
        let sum = u16::from_be_bytes([tcp[16], tcp[17]]);
        tcp[16..18].copy_from_slice(&checksum_update(sum, window, new_window).to_be_bytes());
        self.rewritten += 1;
    }
}

/// The options of a TCP header (`opts`: the bytes after the fixed 20) as
/// (kind, data) pairs, up to End of Option List or a malformed option.
pub(crate) fn tcp_options(opts: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    let mut i = 0;
    std::iter::from_fn(move || loop {
        match *opts.get(i)? {
            0 => return None,
            1 => i += 1,
            kind => {
                let len = *opts.get(i + 1)? as usize;
                let data = opts.get(i + 2..i + len).filter(|_| len >= 2)?;
                i += len;
                return Some((kind, data));
            }
        }
    })
}

/// The window-scale option (kind 3) in TCP options, if present.
fn window_scale_option(opts: &[u8]) -> Option<u8> {
    tcp_options(opts).find(|&(kind, data)| kind == 3 && data.len() == 1).map(|(_, data)| data[0])
}

/// RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), in one's-complement arithmetic.
pub fn checksum_update(hc: u16, old: u16, new: u16) -> u16 {
    let mut s = (!hc as u32) + (!old as u32) + new as u32;
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Full TCP checksum over the IPv4 pseudo-header and the segment.
    fn tcp_checksum(pkt: &[u8]) -> u16 {
        let ihl = ((pkt[0] & 0x0f) as usize) * 4;
        let seg = &pkt[ihl..];
        let mut s: u32 = 0;
        let mut add = |b: &[u8]| {
            for c in b.chunks(2) {
                s += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32;
            }
        };
        add(&pkt[12..20]);
        add(&[0, TCP]);
        add(&(seg.len() as u16).to_be_bytes());
        let mut copy = seg.to_vec();
        copy[16] = 0;
        copy[17] = 0;
        add(&copy);
        while s >> 16 != 0 {
            s = (s & 0xffff) + (s >> 16);
        }
        !(s as u16)
    }

    fn segment(flags: u8, window: u16, options: &[u8]) -> Vec<u8> {
        let tcp_len = 20 + options.len();
        let mut p = vec![0u8; 20 + tcp_len + 4];
        p[0] = 0x45;
        p[9] = TCP;
        p[12..16].copy_from_slice(&[10, 77, 2, 1]);
        p[16..20].copy_from_slice(&[10, 77, 1, 10]);
        let t = &mut p[20..];
        t[0..2].copy_from_slice(&5201u16.to_be_bytes());
        t[12] = ((tcp_len / 4) as u8) << 4;
        t[13] = flags;
        t[14..16].copy_from_slice(&window.to_be_bytes());
        t[20..20 + options.len()].copy_from_slice(options);
        t[tcp_len..tcp_len + 4].copy_from_slice(b"data");
        let c = tcp_checksum(&p);
        p[36..38].copy_from_slice(&c.to_be_bytes());
        p
    }

    #[test]
    fn clamps_scaled_windows_and_keeps_the_checksum_valid() {
        let mut w = WindowClamp::new(vec![Some(65536)]);
        // SYN-ACK with MSS, NOP, window scale 7
        let mut synack = segment(0x12, 65160, &[2, 4, 0x05, 0xb4, 1, 3, 3, 7]);
        w.apply(0, &mut synack);
        assert_eq!(
            u16::from_be_bytes([synack[34], synack[35]]),
            65160,
            "below the limit: unchanged"
        );
        // an ACK advertising 2000 << 7 = 256000 bytes is cut to 65536 >> 7 = 512 units
        let mut ack = segment(0x10, 2000, &[]);
        w.apply(0, &mut ack);
        assert_eq!(u16::from_be_bytes([ack[34], ack[35]]), 512);
        assert_eq!(u16::from_be_bytes([ack[36], ack[37]]), tcp_checksum(&ack));
        assert_eq!(w.rewritten, 1);
        // a smaller window passes untouched
        let mut small = segment(0x10, 100, &[]);
        let before = small.clone();
        w.apply(0, &mut small);
        assert_eq!(small, before);
    }

    #[test]
    fn flows_without_a_limit_are_untouched() {
        let mut w = WindowClamp::new(vec![None, Some(1000)]);
        assert!(w.active());
        let mut ack = segment(0x10, 60000, &[]);
        let before = ack.clone();
        w.apply(0, &mut ack);
        assert_eq!(ack, before);
        w.apply(1, &mut ack);
        assert_eq!(u16::from_be_bytes([ack[34], ack[35]]), 1000);
        assert_eq!(u16::from_be_bytes([ack[36], ack[37]]), tcp_checksum(&ack));
    }

    #[test]
    fn incremental_checksum_matches_recomputation_for_many_values() {
        for (old, new) in [(0u16, 1u16), (0xffff, 0), (1234, 65535), (40000, 3)] {
            let mut p = segment(0x10, old, &[1, 1, 1, 1]);
            let sum = u16::from_be_bytes([p[36], p[37]]);
            p[34..36].copy_from_slice(&new.to_be_bytes());
            let upd = checksum_update(sum, old, new);
            p[36..38].copy_from_slice(&upd.to_be_bytes());
            assert_eq!(upd, tcp_checksum(&p));
        }
    }
}
