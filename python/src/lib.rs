//! The Python extension module `dsgd._core`: `Model`, `Fit`, `models()` and the
//! `CompileError` exception. The pure-Python package around it (`python/dsgd/`) adds
//! `compare` and `sweep`. Every call into the core crate goes through [`core`].

mod core;
mod data;
mod errors;
mod fit;
mod interrupt;
mod model;
mod options;

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<model::Model>()?;
    m.add_class::<fit::Fit>()?;
    m.add_class::<options::FitOptions>()?;
    m.add_function(wrap_pyfunction!(model::models, m)?)?;
    m.add_function(wrap_pyfunction!(model::_restore_model, m)?)?;
    m.add("CompileError", py.get_type::<errors::CompileError>())?;
    m.add("FIT_OPTIONS", options::FIT_KEYS.to_vec())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    #[cfg(feature = "test-hooks")]
    m.add_function(wrap_pyfunction!(interrupt::_panic_in_work, m)?)?;
    Ok(())
}
