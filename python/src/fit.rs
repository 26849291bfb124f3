//! `dsgd.Fit`: the result of `Model.fit` as numbers and numpy arrays (final value,
//! parameters, latent summaries in natural units, trajectory, status), posterior draws from
//! the fitted guide, pandas views, and the report exactly as `dsgd run --json` prints it.

use std::sync::Arc;

use dsgd::experiment::report::{RunReport, StopReason};
use numpy::{PyArray1, PyArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::core::{self, Compiled, LatentSummary, QUANTILES};
use crate::errors::to_py;

/// The result of `Model.fit`.
#[pyclass(module = "dsgd._core", name = "Fit", frozen)]
pub struct Fit {
    compiled: Arc<Compiled>,
    layout: Arc<core::Layout>,
    report: RunReport,
    latents: Vec<LatentSummary>,
}

impl Fit {
    pub(crate) fn new(
        py: Python<'_>,
        compiled: Arc<Compiled>,
        layout: Arc<core::Layout>,
        report: RunReport,
    ) -> PyResult<Fit> {
        let latents =
            core::latent_summaries(&compiled.model, &report.theta).map_err(|e| to_py(py, e))?;
        Ok(Fit {
            compiled,
            layout,
            report,
            latents,
        })
    }
}

fn array<'py>(py: Python<'py>, v: impl IntoIterator<Item = f64>) -> Bound<'py, PyArray1<f64>> {
    PyArray1::from_vec(py, v.into_iter().collect())
}

#[pymethods]
impl Fit {
    /// The last measured objective: the ELBO (variational models) or the user's `E`.
    #[getter]
    fn final_value(&self) -> f64 {
        self.report.final_elbo
    }

    /// The fitted parameter vector (see `param_names`).
    #[getter]
    fn params<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        array(py, self.report.theta.iter().copied())
    }

    /// The names of `params`' components.
    #[getter]
    fn param_names(&self) -> Vec<String> {
        self.report.theta_names.clone()
    }

    /// The latents' names: the columns of `sample` and the rows of `latents`.
    #[getter]
    fn latent_names(&self) -> Vec<String> {
        self.layout.latent_names.clone()
    }

    /// Per-latent summaries of the fitted guide, as columns: `name`, `mean`, `sd`, and the
    /// quantiles `q05`, `q50`, `q95` (arrays, one entry per latent).
    #[getter]
    fn latents<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item(
            "name",
            self.latents
                .iter()
                .map(|l| l.name.clone())
                .collect::<Vec<_>>(),
        )?;
        d.set_item("mean", array(py, self.latents.iter().map(|l| l.mean)))?;
        d.set_item("sd", array(py, self.latents.iter().map(|l| l.sd)))?;
        for (k, q) in QUANTILES.iter().enumerate() {
            let key = format!("q{:02}", (q * 100.0).round() as u32);
            d.set_item(key, array(py, self.latents.iter().map(|l| l.quantiles[k])))?;
        }
        Ok(d)
    }

    /// The measurements taken during the run, as columns of equal length: `iter`,
    /// `objective` (the crisp ELBO or `E`, from `log_samples` fresh samples), `var_component`
    /// and `var_norm` (the gradient estimator's variances there) and `eta` (the smoothing
    /// accuracy used then; NaN for estimators that do not smooth).
    #[getter]
    fn trajectory<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let t = &self.report.trajectory;
        let d = PyDict::new(py);
        d.set_item(
            "iter",
            PyArray1::from_vec(py, t.iter().map(|r| r.iter as i64).collect()),
        )?;
        d.set_item("objective", array(py, t.iter().map(|r| r.elbo)))?;
        d.set_item(
            "var_component",
            array(py, t.iter().map(|r| r.var_component)),
        )?;
        d.set_item("var_norm", array(py, t.iter().map(|r| r.var_norm)))?;
        d.set_item(
            "eta",
            array(py, t.iter().map(|r| r.eta.unwrap_or(f64::NAN))),
        )?;
        Ok(d)
    }

    /// `"completed"`, or `"non_finite"` when the objective or a gradient became NaN or
    /// infinite and the run stopped (see `message`).
    #[getter]
    fn status(&self) -> &'static str {
        match self.report.stop_reason {
            StopReason::Completed => "completed",
            StopReason::NonFinite => "non_finite",
        }
    }

    /// What went wrong (the iteration and the term), or None.
    #[getter]
    fn message(&self) -> Option<String> {
        self.report.stop_message.clone()
    }

    /// Steps taken.
    #[getter]
    fn iterations(&self) -> u64 {
        self.report.iterations
    }

    /// Wall-clock seconds of the run (the only machine-dependent number).
    #[getter]
    fn seconds(&self) -> f64 {
        self.report.seconds
    }

    /// The whole report as a dict, exactly what `dsgd run --json` prints.
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("json")?
            .call_method1("loads", (core::report_json(&self.report),))
    }

    /// `n` draws of the latents from the fitted guide, an `(n, len(latent_names))` array; a
    /// pure function of `seed`.
    #[pyo3(signature = (n, seed = 0))]
    fn sample<'py>(&self, py: Python<'py>, n: i64, seed: i64) -> PyResult<Bound<'py, PyAny>> {
        if n < 0 {
            return Err(PyValueError::new_err(format!(
                "n must be at least 0, got {n}"
            )));
        }
        if seed < 0 {
            return Err(PyValueError::new_err(format!(
                "seed must be at least 0, got {seed}"
            )));
        }
        let n = n as usize;
        let theta = &self.report.theta;
        let model = &self.compiled.model;
        let z = py
            .detach(|| core::sample(model, theta, n, seed as u64))
            .map_err(|e| to_py(py, e))?;
        let k = self.layout.latent_names.len();
        Ok(PyArray1::from_vec(py, z).reshape([n, k])?.into_any())
    }

    /// The trajectory as a pandas DataFrame (needs pandas).
    fn to_pandas<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("pandas")?
            .call_method1("DataFrame", (self.trajectory(py)?,))
    }

    /// The latent summaries as a pandas DataFrame indexed by name (needs pandas).
    fn latents_to_pandas<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let df = py
            .import("pandas")?
            .call_method1("DataFrame", (self.latents(py)?,))?;
        df.call_method1("set_index", ("name",))
    }

    fn __repr__(&self) -> String {
        format!(
            "Fit(model={:?}, estimator={:?}, final_value={}, status={:?}, iterations={})",
            self.report.model,
            self.report.estimator,
            self.report.final_elbo,
            self.status(),
            self.report.iterations
        )
    }
}
