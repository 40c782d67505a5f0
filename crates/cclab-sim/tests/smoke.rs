mod common;
use common::*;

#[test]
fn smoke_print() {
    for cca in ["reno", "cubic"] {
        let sc = dumbbell(100_000_000, vec![flow(0, cca, 25)], 1.0, 20);
        let t0 = std::time::Instant::now();
        let out = cclab_sim::simulate(&sc).unwrap();
        let g = goodput_bps(&out, 0, 5.0, 20.0);
        eprintln!("{cca}: goodput {:.2} Mbps, counters {:?}, wall {:?}", g / 1e6, out.counters, t0.elapsed());
        let n = out.flows.len();
        for i in (0..n).step_by(100) {
            eprintln!("t={} cwnd={} inflight={} srtt={:.1}ms retrans={} lost={} rto={}", out.flows.time_ns[i] as f64/1e9, out.flows.cwnd_bytes[i]/1448, out.flows.inflight_bytes[i]/1448, out.flows.srtt_ns[i]/1e6, out.flows.retrans_segs[i], out.flows.lost_segs[i], out.flows.rto_count[i]);
        }
    }
}
