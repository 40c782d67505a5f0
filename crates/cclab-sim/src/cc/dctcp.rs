//! DCTCP — Data Center TCP (RFC 8257; Alizadeh et al., SIGCOMM 2010) as
//! Linux runs it (net/ipv4/tcp_dctcp.c): Reno's window growth, and a
//! reduction proportional to the fraction of ECN-marked data.
//!
//! * α, the estimated fraction of marked bytes, starts at
//!   `dctcp_alpha_on_init` = 1024/1024 (`DCTCP_MAX_ALPHA`; RFC 8257 §3.3
//!   leaves the initial value to the implementation and Linux starts
//!   conservatively at 1) and is updated once per window of data
//!   (`dctcp_update_alpha`, the `.in_ack_event` hook): when `snd_una` reaches
//!   the `snd_nxt` recorded at the previous update,
//!   α ← (1 − g)·α + g·F, F = (delivered with ECE) / delivered over that
//!   window, g = 1/2^`dctcp_shift_g` = 1/16 (RFC 8257 §3.3 eq. 1, §4.2
//!   recommends g = 1/16). Fixed point as Linux: α in 1/1024, the decay
//!   `α −= max(α >> g, 1 if α > 0)` (`min_not_zero`), F scaled by 2^(10 − g).
//! * On ECE the sender enters CWR once per window (the generic
//!   `tcp_enter_cwr` in the sender), with `dctcp_ssthresh`:
//!   max(cwnd − cwnd·α/2, 2), i.e. cwnd·(1 − α/2) (RFC 8257 §3.3 eq. 2);
//!   cwnd comes down to it by PRR.
//! * Loss: half the window, as Reno (`dctcp_react_to_loss` on entering
//!   Recovery or on an RTO, RFC 8257 §3.4); `.undo_cwnd` restores
//!   max(cwnd, loss_cwnd) (the simulator never undoes).
//! * `TCP_CONG_NEEDS_ECN`: every data packet, retransmissions included, is
//!   ECT. DCTCP without ECN is Reno in Linux (`dctcp_reno`); cclab refuses
//!   `cca = "dctcp"` with `ecn = false` instead of falling back.
//!
//! The receiver's half (RFC 8257 §3.2: ECE mirrors the CE bit of the last
//! data segment, and a delayed ACK is flushed when that bit changes —
//! Linux `dctcp_ece_ack_update`, net/ipv4/tcp_dctcp.h) lives in the
//! simulator's receiver (`tcp/receiver.rs`), which runs it for DCTCP flows.

use super::{tcp_reno_cong_avoid, CaState, CcError, CongestionOps, Conn, CwndEvent, Params, Snapshot};
use super::reno::{loss_based_state, LOSS_BASED_STATES};

/// `DCTCP_MAX_ALPHA`: α = 1.0 in Linux's fixed point.
pub const MAX_ALPHA: u32 = 1024;
/// `dctcp_shift_g` default: g = 1/2^4 = 1/16.
pub const SHIFT_G: u32 = 4;

/// Parameters `cca_params` may set (Linux's module parameters).
pub const PARAMS: &[&str] = &["shift_g", "alpha_on_init"];

#[derive(Clone, Debug)]
pub struct Dctcp {
    cwnd_cnt: u32,
    /// α in 1/1024.
    pub alpha: u32,
    next_seq: u32,
    old_delivered: u64,
    old_delivered_ce: u64,
    loss_cwnd: u32,
    shift_g: u32,
    alpha_on_init: u32,
}

impl Dctcp {
    pub(crate) fn from_params(mut p: Params) -> Result<Dctcp, CcError> {
        let g = p.take("shift_g", SHIFT_G as f64);
        let a = p.take("alpha_on_init", MAX_ALPHA as f64);
        p.finish(PARAMS)?;
        // dctcp_shift_g_set: param_set_uint_minmax(…, 0, 10).
        if !(0.0..=10.0).contains(&g) || g.fract() != 0.0 {
            return Err(CcError(format!("cca parameter 'shift_g' = {g} must be an integer in 0..=10 (g = 1/2^shift_g)")));
        }
        if !(0.0..=MAX_ALPHA as f64).contains(&a) || a.fract() != 0.0 {
            return Err(CcError(format!("cca parameter 'alpha_on_init' = {a} must be an integer in 0..=1024 (α in 1/1024)")));
        }
        Ok(Dctcp {
            cwnd_cnt: 0,
            alpha: a as u32,
            next_seq: 0,
            old_delivered: 0,
            old_delivered_ce: 0,
            loss_cwnd: 0,
            shift_g: g as u32,
            alpha_on_init: a as u32,
        })
    }

    /// `dctcp_reset`.
    fn reset(&mut self, conn: &Conn) {
        self.next_seq = conn.snd_nxt;
        self.old_delivered = conn.delivered;
        self.old_delivered_ce = conn.delivered_ce;
    }

    /// `dctcp_react_to_loss`.
    fn react_to_loss(&mut self, conn: &mut Conn) {
        self.loss_cwnd = conn.cwnd;
        conn.ssthresh = (conn.cwnd >> 1).max(2);
    }
}

impl CongestionOps for Dctcp {
    fn name(&self) -> &'static str {
        "dctcp"
    }
    /// `dctcp_init` (the connection negotiated ECN: cclab requires it).
    fn init(&mut self, conn: &mut Conn) {
        self.alpha = self.alpha_on_init.min(MAX_ALPHA);
        self.loss_cwnd = 0;
        self.reset(conn);
    }
    /// `dctcp_ssthresh`: cwnd·(1 − α/2), at least 2.
    fn ssthresh(&mut self, conn: &Conn) -> u32 {
        self.loss_cwnd = conn.cwnd;
        let cut = ((conn.cwnd as u64 * self.alpha as u64) >> 11) as u32;
        (conn.cwnd - cut).max(2)
    }
    /// `tcp_reno_cong_avoid`.
    fn cong_avoid(&mut self, conn: &mut Conn, acked: u32) {
        tcp_reno_cong_avoid(conn, &mut self.cwnd_cnt, acked);
    }
    /// `dctcp_update_alpha`: once per window of data.
    fn in_ack_event(&mut self, conn: &mut Conn, _ece: bool) {
        if conn.snd_una < self.next_seq {
            return;
        }
        let mut alpha = self.alpha;
        // alpha -= min_not_zero(alpha, alpha >> g)
        let dec = alpha >> self.shift_g;
        alpha -= if dec == 0 { alpha } else { dec.min(alpha) };
        let delivered_ce = conn.delivered_ce - self.old_delivered_ce;
        if delivered_ce > 0 {
            let delivered = (conn.delivered - self.old_delivered).max(1);
            let f = (delivered_ce << (10 - self.shift_g)) / delivered;
            alpha = (alpha as u64 + f).min(MAX_ALPHA as u64) as u32;
        }
        self.alpha = alpha;
        self.reset(conn);
    }
    /// `dctcp_state`: entering Recovery halves the window (RTOs come as `CA_EVENT_LOSS`).
    fn set_state(&mut self, conn: &mut Conn, new: CaState) {
        if new == CaState::Recovery && conn.ca_state != CaState::Recovery {
            self.react_to_loss(conn);
        }
    }
    /// `dctcp_cwnd_event` (the CE events are the receiver's, see the module doc).
    fn cwnd_event(&mut self, conn: &mut Conn, ev: CwndEvent) {
        if ev == CwndEvent::Loss {
            self.react_to_loss(conn);
        }
    }
    /// `dctcp_cwnd_undo`.
    fn undo_cwnd(&mut self, conn: &Conn) -> u32 {
        conn.cwnd.max(self.loss_cwnd)
    }
    fn needs_ecn(&self) -> bool {
        true
    }
    fn snapshot(&self, conn: &Conn) -> Snapshot {
        Snapshot { state: loss_based_state(conn), ..Default::default() }
    }
    fn state_names(&self) -> &'static [&'static str] {
        LOSS_BASED_STATES
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Time;
    use std::collections::BTreeMap;

    fn dctcp() -> Dctcp {
        Dctcp::from_params(Params::new("dctcp", &BTreeMap::new())).unwrap()
    }

    #[test]
    fn ssthresh_is_cwnd_times_one_minus_half_alpha() {
        let mut d = dctcp();
        let mut c = Conn::new(Time::ZERO, 1448);
        d.init(&mut c);
        c.cwnd = 100;
        assert_eq!(d.alpha, 1024);
        assert_eq!(d.ssthresh(&c), 50); // α = 1: half, like Reno
        d.alpha = 256; // α = 1/4 → cwnd·(1 − 1/8)
        assert_eq!(d.ssthresh(&c), 88);
        d.alpha = 0;
        assert_eq!(d.ssthresh(&c), 100);
        c.cwnd = 2;
        d.alpha = 1024;
        assert_eq!(d.ssthresh(&c), 2);
    }

    #[test]
    fn alpha_moves_by_g_once_per_window() {
        let mut d = dctcp();
        let mut c = Conn::new(Time::ZERO, 1448);
        c.snd_nxt = 10;
        d.init(&mut c);
        // Mid-window ACKs do not update α.
        c.snd_una = 5;
        c.delivered = 5;
        d.in_ack_event(&mut c, false);
        assert_eq!(d.alpha, 1024);
        // A window with no marks: α ← 15/16 α.
        c.snd_una = 10;
        c.delivered = 10;
        c.snd_nxt = 20;
        d.in_ack_event(&mut c, false);
        assert_eq!(d.alpha, 1024 - 64);
        // A window with every packet marked: α ← 15/16 α + 1/16.
        c.snd_una = 20;
        c.delivered = 20;
        c.delivered_ce = 10;
        d.in_ack_event(&mut c, true);
        assert_eq!(d.alpha, 960 - 60 + 64);
        // Unmarked windows decay α towards 0 (≈ (15/16)^n).
        for i in 0..200u32 {
            c.snd_una = 30 + 10 * i;
            c.snd_nxt = c.snd_una + 10;
            c.delivered = c.snd_una as u64;
            d.in_ack_event(&mut c, false);
        }
        assert_eq!(d.alpha, 0);
        // Half of a window marked, held: α converges to F = 1/2 (within the fixed point).
        for i in 0..400u64 {
            c.snd_una += 10;
            c.snd_nxt = c.snd_una + 10;
            c.delivered += 10;
            c.delivered_ce += 5;
            d.in_ack_event(&mut c, i % 2 == 0);
        }
        assert!((480..=527).contains(&d.alpha), "α = {}", d.alpha);
    }

    #[test]
    fn loss_halves_like_reno() {
        let mut d = dctcp();
        let mut c = Conn::new(Time::ZERO, 1448);
        d.init(&mut c);
        d.alpha = 100;
        c.cwnd = 80;
        d.set_state(&mut c, CaState::Recovery);
        assert_eq!(c.ssthresh, 40);
        c.cwnd = 60;
        d.cwnd_event(&mut c, CwndEvent::Loss);
        assert_eq!(c.ssthresh, 30);
        assert_eq!(d.undo_cwnd(&Conn { cwnd: 10, ..c.clone() }), 60);
    }

    #[test]
    fn parameters_are_checked() {
        let mut m = BTreeMap::new();
        m.insert("shift_g".to_string(), 11.0);
        assert!(Dctcp::from_params(Params::new("dctcp", &m)).is_err());
        m.insert("shift_g".to_string(), 2.0);
        m.insert("alpha_on_init".to_string(), 0.0);
        let d = Dctcp::from_params(Params::new("dctcp", &m)).unwrap();
        assert_eq!((d.shift_g, d.alpha_on_init), (2, 0));
    }
}
