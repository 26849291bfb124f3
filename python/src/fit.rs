//! `dsgd.Fit`: the result of `Model.fit` as numbers and numpy arrays (final value,
//! parameters, latent summaries in natural units, trajectory, convergence), posterior draws
//! from the fitted family, pandas views, and the report exactly as `dsgd run --json` prints it.

use std::sync::Arc;

use dsgd::experiment::report::{RunReport, StopReason};
use dsgd::settings::EtaSetting;
use numpy::{PyArray1, PyArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::core::{self, Compiled};
use crate::{interrupt, options};

/// The result of `Model.fit`.
#[pyclass(module = "dsgd._core", name = "Fit", frozen)]
pub struct Fit {
    compiled: Arc<Compiled>,
    layout: Arc<core::Layout>,
    report: RunReport,
}

impl Fit {
    pub(crate) fn new(
        compiled: Arc<Compiled>,
        layout: Arc<core::Layout>,
        report: RunReport,
    ) -> Fit {
        Fit {
            compiled,
            layout,
            report,
        }
    }
}

fn array<'py>(py: Python<'py>, v: impl IntoIterator<Item = f64>) -> Bound<'py, PyArray1<f64>> {
    PyArray1::from_vec(py, v.into_iter().collect())
}

/// A `(rows, cols)` array from rows of equal length `cols`.
fn matrix<'py>(py: Python<'py>, rows: Vec<&[f64]>, cols: usize) -> PyResult<Bound<'py, PyAny>> {
    let n = rows.len();
    let flat: Vec<f64> = rows.into_iter().flat_map(|r| r.iter().copied()).collect();
    if flat.len() != n * cols {
        return Err(PyValueError::new_err(
            "internal error: ragged trajectory rows (please report)",
        ));
    }
    Ok(PyArray1::from_vec(py, flat).reshape([n, cols])?.into_any())
}

#[pymethods]
impl Fit {
    /// The last measured objective: the ELBO (`kind == "elbo"`) or the user's `E`.
    #[getter]
    fn final_value(&self) -> f64 {
        self.report.final_value
    }

    /// Monte Carlo standard error of `final_value`.
    #[getter]
    fn final_value_se(&self) -> f64 {
        self.report.final_value_se
    }

    /// `"elbo"` (variational inference) or `"objective"` (`maximize`/`minimize`).
    #[getter]
    fn kind(&self) -> &'static str {
        self.report.kind.column()
    }

    /// The fitted vector `theta` (names in `theta_names`): what `Model.gradients` takes.
    #[getter]
    fn theta<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        array(py, self.report.theta.iter().copied())
    }

    /// The names of `theta`'s components (`theta`, `mu[z]`, `rho[z]`).
    #[getter]
    fn theta_names(&self) -> Vec<String> {
        self.report.theta_names.clone()
    }

    /// The model's own parameters (`param` declarations) at the end, by name.
    #[getter]
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (name, value) in &self.report.params.0 {
            d.set_item(name, value)?;
        }
        Ok(d)
    }

    /// The fitted latents' names (fixed latents left out): the columns of `sample` and the
    /// rows of `latents`.
    #[getter]
    fn latent_names(&self) -> Vec<String> {
        self.layout.latent_names.clone()
    }

    /// Each fitted latent's distribution in its own units, as columns: `name`, `mean`, `sd`,
    /// the quantiles `q05`, `q50`, `q95`, and the Gaussian on the unconstrained variable
    /// (`guide_loc`, `guide_scale`) with its `transform` (`identity` when unconstrained).
    #[getter]
    fn latents<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let l = &self.report.latents;
        let d = PyDict::new(py);
        d.set_item("name", l.iter().map(|x| x.name.clone()).collect::<Vec<_>>())?;
        d.set_item("mean", array(py, l.iter().map(|x| x.mean)))?;
        d.set_item("sd", array(py, l.iter().map(|x| x.sd)))?;
        d.set_item("q05", array(py, l.iter().map(|x| x.q05)))?;
        d.set_item("q50", array(py, l.iter().map(|x| x.q50)))?;
        d.set_item("q95", array(py, l.iter().map(|x| x.q95)))?;
        d.set_item("guide_loc", array(py, l.iter().map(|x| x.guide_loc)))?;
        d.set_item("guide_scale", array(py, l.iter().map(|x| x.guide_scale)))?;
        d.set_item(
            "transform",
            l.iter().map(|x| x.transform.clone()).collect::<Vec<_>>(),
        )?;
        Ok(d)
    }

    /// The measurements taken during the run, as arrays with one entry per measurement:
    /// `iter`, `value` (the crisp ELBO or `E` from `log_samples` fresh samples) and its
    /// `value_se`, `var_component` and `var_norm` (the gradient estimator's variances),
    /// `eta` (the smoothing accuracy used then; NaN for estimators that do not smooth),
    /// `smoothed`, `gap` and `gap_se` (the smoothed objective at `eta` on the same samples,
    /// its difference from `value` and that difference's standard error; NaN for estimators
    /// that do not smooth), and the fitted values at each measurement: `params` `(rows, len(params))`, `latent_loc`
    /// and `latent_scale` `(rows, len(latent_names))`.
    #[getter]
    fn trajectory<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let t = &self.report.trajectory;
        let d = PyDict::new(py);
        d.set_item(
            "iter",
            PyArray1::from_vec(py, t.iter().map(|r| r.iter as i64).collect()),
        )?;
        d.set_item("value", array(py, t.iter().map(|r| r.value)))?;
        d.set_item("value_se", array(py, t.iter().map(|r| r.value_se)))?;
        d.set_item(
            "var_component",
            array(py, t.iter().map(|r| r.var_component)),
        )?;
        d.set_item("var_norm", array(py, t.iter().map(|r| r.var_norm)))?;
        d.set_item(
            "eta",
            array(py, t.iter().map(|r| r.eta.unwrap_or(f64::NAN))),
        )?;
        d.set_item(
            "smoothed",
            array(py, t.iter().map(|r| r.smoothed.unwrap_or(f64::NAN))),
        )?;
        d.set_item(
            "gap",
            array(py, t.iter().map(|r| r.gap.unwrap_or(f64::NAN))),
        )?;
        d.set_item(
            "gap_se",
            array(py, t.iter().map(|r| r.gap_se.unwrap_or(f64::NAN))),
        )?;
        let np = self.report.params.0.len();
        let nl = self.report.latents.len();
        d.set_item(
            "params",
            matrix(py, t.iter().map(|r| &r.params[..]).collect(), np)?,
        )?;
        d.set_item(
            "latent_loc",
            matrix(py, t.iter().map(|r| &r.latent_loc[..]).collect(), nl)?,
        )?;
        d.set_item(
            "latent_scale",
            matrix(py, t.iter().map(|r| &r.latent_scale[..]).collect(), nl)?,
        )?;
        Ok(d)
    }

    /// The objective at the final parameters measured with many fresh samples (`fit(...,
    /// precise=True)`, as `dsgd run --precise`): a dict `{"value", "se", "samples"}` (mean,
    /// its standard error, how many samples), or None when not asked for.
    #[getter]
    fn final_precise<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.report
            .final_precise
            .map(|p| {
                let d = PyDict::new(py);
                d.set_item("value", p.value)?;
                d.set_item("se", p.se)?;
                d.set_item("samples", p.samples)?;
                Ok(d)
            })
            .transpose()
    }

    /// The smoothing accuracy asked for: a number (DSGD's at iteration 4000, Fixed's
    /// constant), `"auto"` (`eta="auto"`), or None for estimators that do not smooth; the
    /// trajectory's `eta` is the accuracy used at each measurement.
    #[getter]
    fn eta<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(match self.report.eta {
            Some(EtaSetting::Value(x)) => x.into_pyobject(py)?.into_any(),
            Some(EtaSetting::Auto) => "auto".into_pyobject(py)?.into_any(),
            None => py.None().into_bound(py),
        })
    }

    /// Whether the run converged by the documented rule (see `convergence` for why).
    #[getter]
    fn converged(&self) -> bool {
        self.report.converged
    }

    /// Why the run is or is not judged converged, and what to change if not.
    #[getter]
    fn convergence(&self) -> String {
        self.report.convergence.clone()
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

    /// Why the estimator is biased for this program (the `warning:` `dsgd run` prints, and
    /// `bias_warning` in `run.json`), or None when it is not.
    #[getter]
    fn bias_warning(&self) -> Option<String> {
        self.report.bias_warning.clone()
    }

    /// The warning that the smoothing gap at the end exceeds its noise (`smoothing_warning`
    /// in `run.json`), or None.
    #[getter]
    fn smoothing_warning(&self) -> Option<String> {
        self.report.smoothing_warning.clone()
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

    /// `n` draws of the fitted latents from the fitted family, in their own units, an
    /// `(n, len(latent_names))` array; a pure function of `seed`. An `n` beyond this
    /// machine's memory raises `MemoryError` before anything is drawn; Ctrl-C stops it.
    #[pyo3(signature = (n, seed = 0))]
    fn sample<'py>(&self, py: Python<'py>, n: i128, seed: i128) -> PyResult<Bound<'py, PyAny>> {
        let n = options::count("n", Some(n), 0)?.unwrap_or(0);
        let seed = options::count("seed", Some(seed), 0)?.unwrap_or(0);
        let theta = &self.report.theta;
        let model = &self.compiled.model;
        let z = interrupt::run(py, |cancel| core::sample(model, theta, n, seed, cancel))?;
        let k = self.layout.latent_names.len();
        let rows = z.len().checked_div(k).unwrap_or(n as usize);
        Ok(PyArray1::from_vec(py, z).reshape([rows, k])?.into_any())
    }

    /// The trajectory as a pandas DataFrame (needs pandas), with the columns of
    /// `trajectory.csv`: `iter`, `value`, `value_se`, `var_component`, `var_norm`, `eta`,
    /// `smoothed`, `gap`, `gap_se` (NaN where unused), one column per model parameter (in its
    /// own units), then `u_loc[z]` and `u_scale[z]` per fitted latent, on the latent's
    /// unconstrained scale (the guide's Gaussian on `u`; `log z` for a positive latent).
    fn to_pandas<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let (header, rows) = self.report.trajectory_table();
        let d = PyDict::new(py);
        for (j, name) in header.iter().enumerate() {
            if j == 0 {
                let iters: Vec<i64> = self
                    .report
                    .trajectory
                    .iter()
                    .map(|r| r.iter as i64)
                    .collect();
                d.set_item(name, PyArray1::from_vec(py, iters))?;
            } else {
                d.set_item(
                    name,
                    array(py, rows.iter().map(|r| r[j].unwrap_or(f64::NAN))),
                )?;
            }
        }
        py.import("pandas")?.call_method1("DataFrame", (d,))
    }

    /// The latent summaries as a pandas DataFrame indexed by name (needs pandas).
    fn latents_to_pandas<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let df = py
            .import("pandas")?
            .call_method1("DataFrame", (self.latents(py)?,))?;
        df.call_method1("set_index", ("name",))
    }

    fn __repr__(&self) -> String {
        let eta = match self.report.eta {
            Some(EtaSetting::Value(x)) => x.to_string(),
            Some(EtaSetting::Auto) => "'auto'".into(),
            None => "None".into(),
        };
        format!(
            "Fit(model={:?}, estimator={:?}, eta={eta}, {}={}, status={:?}, converged={}, iterations={})",
            self.report.model,
            self.report.estimator,
            self.kind(),
            self.report.final_value,
            self.status(),
            self.report.converged,
            self.report.iterations
        )
    }
}
