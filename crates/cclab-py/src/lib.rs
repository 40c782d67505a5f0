//! PyO3 bindings: `cclab._native`. The only crate that knows about Python.
//!
//! `simulate(ir_json)` runs one resolved scenario and returns the raw output
//! of docs/record.md as numpy arrays (no per-row Python objects), releasing
//! the GIL while the engine runs so sweeps can use threads.

use numpy::IntoPyArray;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use cclab_sim::record::LogHist;

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

/// The raw `flows` and `link` tables of docs/record.md (numpy arrays).
fn rows_dict<'py>(
    py: Python<'py>,
    f: &mut cclab_sim::record::FlowColumns,
    l: &mut cclab_sim::record::LinkColumns,
) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyDict>)> {
    let flows = PyDict::new_bound(py);
    put!(py, flows, f, time_ns, flow_id, delivered_bytes, egress_bytes, sent_bytes, sent_segs, cwnd_bytes,
        inflight_bytes, ssthresh_bytes, srtt_ns, rtt_ns, min_rtt_ns, pacing_rate_bps, retrans_segs, lost_segs, rto_count, cc_state,
        cc_w_max_bytes, cc_bw_bps, cc_min_rtt_ns, cc_pacing_gain, cc_cwnd_gain, cc_inflight_hi_bytes,
        cc_inflight_lo_bytes, cc_bw_hi_bps, cc_bw_lo_bps);
    // numpy has no Vec<bool> conversion: hand over u8 and view as bool.
    let active: Vec<u8> = std::mem::take(&mut f.active).into_iter().map(|b| b as u8).collect();
    let np = py.import_bound("numpy")?;
    flows.set_item("active", active.into_pyarray_bound(py).call_method1("astype", (np.getattr("bool_")?,))?)?;
    let link = PyDict::new_bound(py);
    put!(py, link, l, time_ns, link_id, queue_bytes, queue_packets, sojourn_sum_ns, departed_packets, egress_bytes,
        arrival_bytes, drops_overflow, drops_random, drops_aqm, marks_ce, drops_policer, capacity_bps, delay_ns);
    Ok((flows, link))
}

/// A histogram's non-empty bins as `{"bin": u32[], "count": u64[]}` (+ `flow_id` when given).
fn hist_dict<'py>(py: Python<'py>, hists: &[&LogHist], ids: Option<&[u32]>) -> PyResult<Bound<'py, PyDict>> {
    let (mut fid, mut bin, mut count) = (Vec::new(), Vec::new(), Vec::new());
    let (mut n, mut sum, mut min, mut max) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, h) in hists.iter().enumerate() {
        for (b, c) in h.bins() {
            fid.push(ids.map_or(0, |x| x[i]));
            bin.push(b);
            count.push(c);
        }
        n.push(h.n);
        sum.push(h.sum as f64);
        min.push(if h.n > 0 { h.min as f64 } else { f64::NAN });
        max.push(if h.n > 0 { h.max as f64 } else { f64::NAN });
    }
    let d = PyDict::new_bound(py);
    if let Some(x) = ids {
        d.set_item("flow_id", fid.into_pyarray_bound(py))?;
        d.set_item("stats_flow_id", x.to_vec().into_pyarray_bound(py))?;
    }
    d.set_item("bin", bin.into_pyarray_bound(py))?;
    d.set_item("count", count.into_pyarray_bound(py))?;
    d.set_item("n", n.into_pyarray_bound(py))?;
    d.set_item("sum_ns", sum.into_pyarray_bound(py))?;
    d.set_item("min_ns", min.into_pyarray_bound(py))?;
    d.set_item("max_ns", max.into_pyarray_bound(py))?;
    Ok(d)
}

/// What the run leaves besides its rows: state names, counters, per-flow
/// facts, the histograms, the engine version.
fn tail_into(py: Python<'_>, d: &Bound<'_, PyDict>, out: &cclab_sim::record::Output) -> PyResult<()> {
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
        x.set_item("end_ns", fi.end_ns)?;
        x.set_item("ce_segments", fi.ce_segments)?;
        info.append(x)?;
    }
    d.set_item("flow_info", info)?;
    let hists = PyDict::new_bound(py);
    hists.set_item("sub_bits", cclab_sim::record::HIST_SUB_BITS)?;
    let ids: Vec<u32> = out.flow_info.iter().map(|f| f.id).collect();
    let rtt: Vec<&LogHist> = out.rtt_hists.iter().collect();
    hists.set_item("rtt", hist_dict(py, &rtt, Some(&ids))?)?;
    hists.set_item("sojourn", hist_dict(py, &[&out.sojourn_hist], None)?)?;
    hists.set_item("rtt_source", "every ACK's RTT sample (newest acknowledged segment)")?;
    d.set_item("histograms", hists)?;
    d.set_item("engine_version", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

fn parse_ir(ir_json: &str) -> PyResult<cclab_sim::Scenario> {
    serde_json::from_str(ir_json).map_err(|e| PyValueError::new_err(format!("invalid IR: {e}")))
}

/// Run a resolved scenario (the IR as JSON) and return the raw output dict.
#[pyfunction]
fn simulate(py: Python<'_>, ir_json: &str) -> PyResult<PyObject> {
    let sc = parse_ir(ir_json)?;
    let mut out = py.allow_threads(|| cclab_sim::simulate(&sc)).map_err(PyValueError::new_err)?;
    let d = PyDict::new_bound(py);
    let (flows, link) = rows_dict(py, &mut out.flows, &mut out.link)?;
    d.set_item("flows", flows)?;
    d.set_item("link", link)?;
    tail_into(py, &d, &out)?;
    Ok(d.into())
}

/// A simulation run in steps, its samples handed over in chunks (records
/// written as the run goes, docs/record.md "Writing"):
///
///     sim = Simulation(ir_json)
///     while not sim.done:
///         chunk = sim.advance(until_ns)     # {"flows": {...}, "link": {...}}
///     tail = sim.finish()                   # state names, counters, flow info, histograms
#[pyclass]
struct Simulation {
    sim: Option<cclab_sim::sim::Sim>,
}

#[pymethods]
impl Simulation {
    #[new]
    fn new(ir_json: &str) -> PyResult<Self> {
        let sc = parse_ir(ir_json)?;
        let sim = cclab_sim::sim::Sim::new(&sc).map_err(PyValueError::new_err)?;
        Ok(Simulation { sim: Some(sim) })
    }

    /// Run every event up to `until_ns` and return the rows sampled meanwhile.
    fn advance(&mut self, py: Python<'_>, until_ns: u64) -> PyResult<PyObject> {
        let sim = self.sim.as_mut().ok_or_else(|| PyValueError::new_err("the simulation is finished"))?;
        let (mut f, mut l) = py.allow_threads(|| {
            sim.run_until(cclab_sim::time::Time(until_ns));
            sim.take_rows()
        });
        let d = PyDict::new_bound(py);
        let (flows, link) = rows_dict(py, &mut f, &mut l)?;
        d.set_item("flows", flows)?;
        d.set_item("link", link)?;
        Ok(d.into())
    }

    /// {algorithm: [state names by code]} (known before the run starts).
    fn state_names<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new_bound(py);
        if let Some(sim) = &self.sim {
            for (cca, states) in sim.state_names() {
                d.set_item(cca, states.clone())?;
            }
        }
        Ok(d)
    }

    /// True once the run reached its end.
    #[getter]
    fn done(&mut self) -> bool {
        self.sim.as_mut().is_none_or(|s| s.is_done())
    }

    /// End the run (after the last `advance`): everything but the rows.
    fn finish(&mut self, py: Python<'_>) -> PyResult<PyObject> {
        let sim = self.sim.take().ok_or_else(|| PyValueError::new_err("the simulation is finished"))?;
        let mut out = sim.finish();
        if !out.flows.is_empty() || !out.link.time_ns.is_empty() {
            return Err(PyValueError::new_err("finish() before every row was taken by advance()"));
        }
        let d = PyDict::new_bound(py);
        tail_into(py, &d, &out)?;
        out.flows = Default::default();
        Ok(d.into())
    }
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
    m.add_class::<Simulation>()?;
    #[cfg(target_os = "linux")]
    m.add_function(wrap_pyfunction!(link_main, m)?)?;
    Ok(())
}
