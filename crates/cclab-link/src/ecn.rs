//! The ECN field of real IPv4 packets (RFC 3168 §5): reading whether a
//! packet is ECN-capable, and setting Congestion Experienced with the
//! header checksum updated incrementally (RFC 1624, eqn. 3:
//! HC' = ~(~HC + ~m + m')), as Linux's `IP_ECN_set_ce` does.

/// The ECN codepoints (the two low bits of the IPv4 TOS byte).
pub const NOT_ECT: u8 = 0b00;
pub const ECT_1: u8 = 0b01;
pub const ECT_0: u8 = 0b10;
pub const CE: u8 = 0b11;

fn is_ipv4(pkt: &[u8]) -> bool {
    pkt.len() >= 20 && pkt[0] >> 4 == 4 && (pkt[0] & 0x0f) >= 5
}

/// True if `pkt` is an IPv4 packet whose ECN field is ECT(0), ECT(1) or CE.
pub fn ipv4_ect(pkt: &[u8]) -> bool {
    is_ipv4(pkt) && pkt[1] & 0b11 != NOT_ECT
}

/// Set CE in an ECN-capable IPv4 packet and fix the header checksum;
/// false (packet untouched) if it is not IPv4 or not ECN-capable.
pub fn set_ce_ipv4(pkt: &mut [u8]) -> bool {
    if !ipv4_ect(pkt) {
        return false;
    }
    let ecn = pkt[1] & 0b11;
    if ecn == CE {
        return true;
    }
    // The TOS byte is the low byte of the header's first 16-bit word.
    let old = u16::from_be_bytes([pkt[0], pkt[1]]);
    pkt[1] |= CE;
    let new = u16::from_be_bytes([pkt[0], pkt[1]]);
    let hc = u16::from_be_bytes([pkt[10], pkt[11]]);
    let mut sum = (!hc) as u32 + (!old) as u32 + new as u32;
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    let hc2 = !(sum as u16);
    pkt[10..12].copy_from_slice(&hc2.to_be_bytes());
    true
}

/// The Internet checksum of an IPv4 header (RFC 791 §3.1), for tests and checks.
pub fn ipv4_header_checksum(hdr: &[u8]) -> u16 {
    let ihl = ((hdr[0] & 0x0f) as usize) * 4;
    let mut sum: u32 = 0;
    for i in (0..ihl).step_by(2) {
        if i == 10 {
            continue; // the checksum field itself
        }
        sum += u16::from_be_bytes([hdr[i], hdr[i + 1]]) as u32;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TCP/IPv4 header (20 bytes) with a valid checksum, then payload.
    fn packet(tos: u8) -> Vec<u8> {
        let mut p = vec![
            0x45, tos, 0x05, 0xdc, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x06, 0x00, 0x00, 10, 77, 1, 10,
            10, 77, 2, 1,
        ];
        let c = ipv4_header_checksum(&p);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p.extend_from_slice(&[0xab; 40]);
        p
    }

    #[test]
    fn setting_ce_keeps_the_header_checksum_valid() {
        for dscp in [0u8, 0x28, 0xb8, 0xfc] {
            for ecn in [ECT_0, ECT_1] {
                let mut p = packet(dscp | ecn);
                let before = p.clone();
                assert!(ipv4_ect(&p));
                assert!(set_ce_ipv4(&mut p));
                assert_eq!(p[1], dscp | CE, "DSCP kept, ECN = CE");
                assert_eq!(
                    u16::from_be_bytes([p[10], p[11]]),
                    ipv4_header_checksum(&p),
                    "tos {:#x}",
                    dscp | ecn
                );
                // nothing else changed
                assert_eq!(p[2..10], before[2..10]);
                assert_eq!(p[12..], before[12..]);
            }
        }
    }

    #[test]
    fn not_ect_packets_and_non_ipv4_are_left_alone_ce_stays_ce() {
        let mut p = packet(0x28);
        let before = p.clone();
        assert!(!ipv4_ect(&p) && !set_ce_ipv4(&mut p));
        assert_eq!(p, before);
        let mut ce = packet(CE);
        let before = ce.clone();
        assert!(set_ce_ipv4(&mut ce));
        assert_eq!(ce, before);
        let mut v6 = vec![
            0x60, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ];
        assert!(!ipv4_ect(&v6) && !set_ce_ipv4(&mut v6));
        assert!(!ipv4_ect(&[0x45, 0x02]));
    }

    #[test]
    fn checksum_matches_a_known_header() {
        // The classic example header (checksum 0xb861).
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(ipv4_header_checksum(&h), 0xb861);
    }
}
