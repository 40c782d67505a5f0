//! PyO3 bindings: `cclab._native`. The only crate that knows about Python.
//!
//! `simulate(ir_json)` runs one resolved scenario and returns the raw output
//! of docs/record.md as numpy arrays (no per-row Python objects), releasing
//! the GIL while the engine runs so sweeps can use threads.

use numpy::IntoPyArray;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// {algorithm name: [parameter names]} for every algorithm the engine has.
#[pyfunction]
fn algorithms(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new_bound(py);
    for name in cclab_sim::cc::ALGORITHMS {
        d.set_item(*name, cclab_sim::cc::parameters(name).unwrap_or(&[]).to_vec())?;
    }
    Ok(d)
}

/// `{parameter: default}` of one algorithm as the engine applies it (`cc::defaults`).
#[pyfunction]
fn algorithm_defaults<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyDict>> {
    let defaults = cclab_sim::cc::defaults(name)
        .ok_or_else(|| PyValueError::new_err(format!("unknown congestion control '{name}'")))?;
    let d = PyDict::new_bound(py);
    for (k, v) in defaults {
        d.set_item(k, v)?;
    }
    Ok(d)
}

macro_rules! put {
    ($py:expr, $d:expr, $src:expr, $($field:ident),+) => {
        $( $d.set_item(stringify!($field), std::mem::take(&mut $src.$field).into_pyarray_bound($py))?; )+
    };
}

/// Run a resolved scenario (the IR as JSON) and return the raw output dict.
#[pyfunction]
fn simulate(py: Python<'_>, ir_json: &str) -> PyResult<PyObject> {
    let sc: cclab_sim::Scenario =
        serde_json::from_str(ir_json).map_err(|e| PyValueError::new_err(format!("invalid IR: {e}")))?;
    let mut out = py.allow_threads(|| cclab_sim::simulate(&sc)).map_err(PyValueError::new_err)?;
    let d = PyDict::new_bound(py);
    let flows = PyDict::new_bound(py);
    let f = &mut out.flows;
    put!(py, flows, f, time_ns, flow_id, delivered_bytes, egress_bytes, sent_bytes, cwnd_bytes, inflight_bytes,
        ssthresh_bytes, srtt_ns, rtt_ns, min_rtt_ns, pacing_rate_bps, retrans_segs, lost_segs, rto_count, cc_state,
        cc_w_max_bytes, cc_bw_bps, cc_min_rtt_ns, cc_pacing_gain, cc_cwnd_gain, cc_inflight_hi_bytes,
        cc_inflight_lo_bytes, cc_bw_hi_bps, cc_bw_lo_bps);
    // numpy has no Vec<bool> conversion: hand over u8 and view as bool.
    let active: Vec<u8> = f.active.iter().map(|&b| b as u8).collect();
    let np = py.import_bound("numpy")?;
    flows.set_item("active", active.into_pyarray_bound(py).call_method1("astype", (np.getattr("bool_")?,))?)?;
    let link = PyDict::new_bound(py);
    let l = &mut out.link;
    put!(py, link, l, time_ns, link_id, queue_bytes, queue_packets, sojourn_sum_ns, departed_packets, egress_bytes,
        arrival_bytes, drops_overflow, drops_random, drops_aqm, marks_ce, capacity_bps, delay_ns);
    d.set_item("flows", flows)?;
    d.set_item("link", link)?;
    let names = PyDict::new_bound(py);
    for (cca, states) in &out.state_names {
        names.set_item(cca, states.clone())?;
    }
    d.set_item("state_names", names)?;
    let c = &out.counters;
    let counters = PyDict::new_bound(py);
    counters.set_item("sent_packets", c.sent_packets)?;
    counters.set_item("delivered_packets", c.delivered_packets)?;
    counters.set_item("dropped_packets", c.dropped_packets)?;
    counters.set_item("queued_packets", c.queued_packets)?;
    counters.set_item("in_flight_packets", c.in_flight_packets)?;
    counters.set_item("events", c.events)?;
    d.set_item("counters", counters)?;
    let info = pyo3::types::PyList::empty_bound(py);
    for fi in &out.flow_info {
        let x = PyDict::new_bound(py);
        x.set_item("id", fi.id)?;
        x.set_item("cca", &fi.cca)?;
        x.set_item("completion_ns", fi.completion_ns)?;
        x.set_item("ce_segments", fi.ce_segments)?;
        info.append(x)?;
    }
    d.set_item("flow_info", info)?;
    d.set_item("engine_version", env!("CARGO_PKG_VERSION"))?;
    Ok(d.into())
}

/// Run the kernel backend's link emulator (crates/cclab-link) with the
/// command line `argv` (`argv[0]` is the program name) and return its exit
/// code; `python -m cclab._link …` calls it, in a process of its own. The
/// GIL is released for the whole run.
#[cfg(target_os = "linux")]
#[pyfunction]
fn link_main(py: Python<'_>, argv: Vec<String>) -> i32 {
    py.allow_threads(|| cclab_link::cli::main(&argv))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ENGINE_VERSION", env!("CARGO_PKG_VERSION"))?;
    m.add("IR_VERSION", cclab_sim::scenario::IR_VERSION)?;
    m.add_function(wrap_pyfunction!(algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(algorithm_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    #[cfg(target_os = "linux")]
    m.add_function(wrap_pyfunction!(link_main, m)?)?;
    Ok(())
}
