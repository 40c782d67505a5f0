//! PyO3 bindings: `cclab._native`. The only crate that knows about Python.
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

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ENGINE_VERSION", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(algorithms, m)?)?;
    Ok(())
}
