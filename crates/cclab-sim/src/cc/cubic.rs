//! CUBIC as Linux runs it (net/ipv4/tcp_cubic.c). Placeholder until written.
use super::{CongestionOps, Conn, CcError, Params, Snapshot};
#[derive(Clone, Debug, Default)]
pub struct Cubic {}
pub const PARAMS: &[&str] = &[];
impl Cubic {
    pub(crate) fn from_params(p: Params) -> Result<Cubic, CcError> { p.finish(&[])?; Ok(Cubic::default()) }
}
impl CongestionOps for Cubic {
    fn name(&self) -> &'static str { "cubic" }
    fn ssthresh(&mut self, conn: &Conn) -> u32 { (conn.cwnd * 717 / 1024).max(2) }
    fn snapshot(&self, _conn: &Conn) -> Snapshot { Snapshot::default() }
    fn state_names(&self) -> &'static [&'static str] { &["slow_start", "cong_avoid"] }
}
