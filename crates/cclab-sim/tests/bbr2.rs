//! bbr2 (BBRv2 alpha, google/bbr v2alpha tcp_bbr2.c) through the whole
//! simulator: it fills a 1-BDP link, sets inflight_hi when the buffer
//! overflows, and exports the same record columns as bbr3.
mod common;
use cclab_sim::scenario::*;
use cclab_sim::simulate;
use common::*;

fn link_utilization(out: &cclab_sim::record::Output, rate_bps: f64, from_s: f64, to_s: f64) -> f64 {
    let l = &out.link;
    let i = l.time_ns.iter().position(|&t| t as f64 / 1e9 >= from_s).unwrap();
    let j = l.time_ns.iter().rposition(|&t| t as f64 / 1e9 <= to_s).unwrap();
    let bits = (l.egress_bytes[j] - l.egress_bytes[i]) as f64 * 8.0;
    bits / ((l.time_ns[j] - l.time_ns[i]) as f64 / 1e9) / rate_bps
}

fn state_names<'a>(out: &'a cclab_sim::record::Output, cca: &str) -> &'a [String] {
    &out.state_names.iter().find(|(n, _)| n == cca).unwrap().1
}

#[test]
fn one_bbr2_flow_fills_a_one_bdp_link() {
    // 50 Mbit/s, 40 ms, 1-BDP buffer: after Startup a lone bbr2 flow keeps
    // the link ≥ 95 % busy (it cruises at 1.0 × bw, probes up every 2–3 s,
    // and its ProbeRTT dips are short).
    let sc = dumbbell(50_000_000, vec![flow(0, "bbr2", 40)], 1.0, 30);
    let out = simulate(&sc).unwrap();
    let u = link_utilization(&out, 50e6, 5.0, 30.0);
    let names = state_names(&out, "bbr2");
    let f = &out.flows;
    let mut visits = std::collections::BTreeMap::<&str, usize>::new();
    for i in 1..f.len() {
        if f.cc_state[i] != f.cc_state[i - 1] {
            *visits.entry(names[f.cc_state[i] as usize].as_str()).or_default() += 1;
        }
    }
    eprintln!("bbr2 utilization 5–30 s: {u:.4}; state entries {visits:?}");
    assert!(u >= 0.95, "utilization {u}");
    assert!(visits.get("PROBE_BW_UP").copied().unwrap_or(0) >= 5, "{visits:?}");
}

#[test]
fn bbr2_records_bbr3s_columns_and_sets_inflight_hi_on_loss() {
    // 0.25-BDP buffer: Startup overflows it, the loss exit sets inflight_hi
    // (NaN in the record until then), and the record carries the same state
    // names and cc_* columns as bbr3.
    let sc = dumbbell(50_000_000, vec![flow(0, "bbr2", 40), flow(1, "bbr3", 40)], 0.25, 10);
    let out = simulate(&sc).unwrap();
    assert_eq!(state_names(&out, "bbr2"), state_names(&out, "bbr3"));
    let names = state_names(&out, "bbr2");
    let f = &out.flows;
    let rows: Vec<usize> = (0..f.len()).filter(|&i| f.flow_id[i] == 0).collect();
    let first_loss = rows.iter().position(|&i| f.lost_segs[i] > 0).expect("no loss");
    let first_hi = rows.iter().position(|&i| !f.cc_inflight_hi_bytes[i].is_nan()).expect("no inflight_hi");
    eprintln!(
        "bbr2 first loss in sample {first_loss}, inflight_hi from sample {first_hi}: {:.0} B, then in {}",
        f.cc_inflight_hi_bytes[rows[first_hi]],
        names[f.cc_state[rows[first_hi]] as usize]
    );
    assert!(first_hi >= first_loss, "inflight_hi before any loss");
    let last = *rows.last().unwrap();
    assert!(f.cc_inflight_hi_bytes[last] > 0.0);
    for col in [&f.cc_bw_bps, &f.cc_min_rtt_ns, &f.cc_pacing_gain, &f.cc_cwnd_gain, &f.cc_bw_hi_bps] {
        assert!(!col[last].is_nan());
    }
    assert!(f.cc_w_max_bytes[last].is_nan(), "no CUBIC state");
    assert_eq!(f.cc_pacing_gain[rows[0]], 739.0 / 256.0, "Startup at 2.89");
}

#[test]
fn same_seed_same_bbr2_records() {
    let mut sc = dumbbell(30_000_000, vec![flow(0, "bbr2", 30), flow(1, "bbr2", 50)], 0.5, 8);
    sc.links[0].loss = Loss::Bernoulli { p: 0.002 };
    let (a, b) = (simulate(&sc).unwrap(), simulate(&sc).unwrap());
    assert_eq!(format!("{:?}", a.flows), format!("{:?}", b.flows));
    assert_eq!(a.counters, b.counters);
}
