//! `dsgd.Model`: a compiled model, and what can be done with it (check, fit, gradients,
//! compare), plus pickling by source so that models travel to other processes (Ray tasks).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use numpy::{PyArray1, PyArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::core::{self, Compiled, ModelSource};
use crate::errors::to_py;
use crate::fit::Fit;
use crate::{interrupt, options};

/// A model compiled from `.dsgd` text, a file, or a built-in name.
///
/// Build one with `Model.from_source`, `Model.from_file` or `Model.builtin`; `dsgd.models()`
/// lists the built-ins. A model pickles as its source (with the data files it read), so it
/// can be sent to other processes, for instance Ray workers.
#[pyclass(module = "dsgd._core", name = "Model", frozen)]
pub struct Model {
    pub(crate) compiled: Arc<Compiled>,
    layout: Arc<core::Layout>,
}

impl Model {
    pub(crate) fn new(py: Python<'_>, compiled: Compiled) -> PyResult<Model> {
        let layout = core::layout(&compiled.model).map_err(|e| to_py(py, e))?;
        Ok(Model {
            compiled: Arc::new(compiled),
            layout: Arc::new(layout),
        })
    }

    fn compile(
        py: Python<'_>,
        f: impl FnOnce() -> Result<Compiled, core::CoreError> + Send,
    ) -> PyResult<Model> {
        let compiled = py.detach(f).map_err(|e| to_py(py, e))?;
        Model::new(py, compiled)
    }

    /// This model, or when `options` holds `data` (removed from it), the model with that
    /// data bound.
    fn bound(
        &self,
        py: Python<'_>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Option<Model>> {
        let Some(d) = options else { return Ok(None) };
        let Some(data) = d.get_item("data")? else {
            return Ok(None);
        };
        d.del_item("data")?;
        if data.is_none() {
            return Ok(None);
        }
        self.with_data(py, &data).map(Some)
    }
}

/// A dict of numbers and arrays as the core's [`core::Data`]: each value through
/// `numpy.asarray(value, dtype=float64)`, row-major (`ravel`).
fn data_of(py: Python<'_>, data: Option<&Bound<'_, PyAny>>) -> PyResult<core::Data> {
    let Some(data) = data.filter(|d| !d.is_none()) else {
        return Ok(Vec::new());
    };
    let dict = data.cast::<PyDict>().map_err(|_| {
        PyValueError::new_err("data must be a dict from data names to numbers or arrays")
    })?;
    let np = py.import("numpy")?;
    let mut out = Vec::new();
    for (k, v) in dict.iter() {
        let name: String = k
            .extract()
            .map_err(|_| PyValueError::new_err("data names must be strings"))?;
        let arr = np
            .call_method1("asarray", (v, "float64"))
            .map_err(|e| PyValueError::new_err(format!("data `{name}` is not numbers: {e}")))?;
        let shape: Vec<usize> = arr.getattr("shape")?.extract()?;
        let values: Vec<f64> = arr
            .call_method0("ravel")?
            .call_method0("tolist")?
            .extract()?;
        out.push((name, shape, values));
    }
    Ok(out)
}

fn data_dict<'py>(py: Python<'py>, data: &core::Data) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, shape, values) in data {
        let arr = PyArray1::from_vec(py, values.clone()).reshape(shape.clone())?;
        d.set_item(name, arr)?;
    }
    Ok(d)
}

#[pymethods]
impl Model {
    /// Compiles model text. `name` names it in error messages and reports; data files
    /// (`data x = csv("...")`) are read relative to `base_dir` (default: the current
    /// directory), and `data` binds `data` declarations by name (see `with_data`).
    #[staticmethod]
    #[pyo3(signature = (text, name = "model", base_dir = None, data = None))]
    fn from_source(
        py: Python<'_>,
        text: &str,
        name: &str,
        base_dir: Option<PathBuf>,
        data: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Model> {
        let base = base_dir.unwrap_or_else(|| PathBuf::from("."));
        let data = data_of(py, data)?;
        Model::compile(py, || core::compile_text(name, text, &base, data))
    }

    /// Compiles the `.dsgd` file at `path`; data files are read relative to its directory,
    /// and `data` binds `data` declarations by name (see `with_data`).
    #[staticmethod]
    #[pyo3(signature = (path, data = None))]
    fn from_file(
        py: Python<'_>,
        path: PathBuf,
        data: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Model> {
        let data = data_of(py, data)?;
        Model::compile(py, || core::compile_file(&path, data))
    }

    /// The built-in model `name` (see `dsgd.models()`), its `data` declarations optionally
    /// bound from `data` (replacing the embedded values).
    #[staticmethod]
    #[pyo3(signature = (name, data = None))]
    fn builtin(py: Python<'_>, name: &str, data: Option<&Bound<'_, PyAny>>) -> PyResult<Model> {
        let data = data_of(py, data)?;
        Model::compile(py, || core::compile_builtin(name, data))
    }

    /// The same model with `data` bound to its `data` declarations: a dict from a
    /// declaration's name to a number or an array (anything `numpy.asarray` turns into
    /// floats; nested lists must be rectangular). A bound value replaces the one written in
    /// the model and gives one to `data y;`. Replaces earlier bound data; `{}` removes it.
    /// Names the model does not declare, and non-finite numbers, are errors. `fit`,
    /// `gradients` and `dsgd.compare`/`dsgd.sweep` also take `data=` as a shorthand.
    fn with_data(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<Model> {
        let data = data_of(py, Some(data))?;
        let source = self.compiled.source.clone();
        Model::compile(py, || core::recompile(&source, data))
    }

    /// The data bound with `with_data` (or `data=`), as a dict of numpy arrays.
    #[getter]
    fn data<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        data_dict(py, &self.compiled.data)
    }

    /// The model's name (a file's stem, or the built-in's name).
    #[getter]
    fn name(&self) -> String {
        self.compiled.model.name.clone()
    }

    /// `"variational"` (the objective is the ELBO) or `"objective"` (`maximize`/`minimize`).
    #[getter]
    fn mode(&self) -> &'static str {
        match self.compiled.model.mode {
            dsgd::ir::Mode::Variational => "variational",
            dsgd::ir::Mode::Objective { .. } => "objective",
        }
    }

    /// The model's source text.
    #[getter]
    fn source(&self) -> String {
        self.compiled.text().to_string()
    }

    /// The names of the optimised vector `theta`'s components: the model's `param`s, then
    /// `mu[z]` and `rho[z]` (`std = softplus(rho)`) for each latent `z` with a guide.
    #[getter]
    fn theta_names(&self) -> Vec<String> {
        self.layout.theta_names.clone()
    }

    /// The initial `theta` (what a fit starts from).
    #[getter]
    fn init_theta<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_vec(py, self.layout.init_theta.clone())
    }

    /// The fitted latents' names (fixed latents left out), the order of `Fit.sample`'s columns.
    #[getter]
    fn latent_names(&self) -> Vec<String> {
        self.layout.latent_names.clone()
    }

    /// What `dsgd check --json` says about the model, as a dict: counts of latents,
    /// parameters and if-statements, nesting depth, safety, affine guards, whether LYY18
    /// applies, the default eta decay, and every guard.
    fn check<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let json = core::check_json(&self.compiled);
        py.import("json")?.call_method1("loads", (json,))
    }

    /// Optimises the model; returns a `Fit`. Keyword options and defaults are those of
    /// `dsgd run`: estimator="dsgd" (or "fixed", "reparam", "score", "lyy18"), eta=0.1,
    /// eta_decay=None (1 / (2 * nesting depth)), iters=10000, batch=16, optimizer=None
    /// ("dog", which needs no step size; "adam" when lr is given or a built-in model has its
    /// own; or "sgd"), lr=None (Adam 0.0015, SGD 0.5), sgd_power=1.0, seed=0, log_every=100,
    /// log_samples=1000, on_nonfinite="stop" (or "continue"), threads=None (all cores;
    /// results do not depend on it), data=None (as `with_data`), precise=False (True: also
    /// measure the objective at the final parameters with many fresh samples, as
    /// `dsgd run --precise`, into `Fit.final_precise`; with precise_rel_se=0.001,
    /// precise_min_samples=100000, precise_max_samples=1000000). The same seed gives the same
    /// numbers as the command line. Releases the GIL; Ctrl-C stops it with KeyboardInterrupt.
    #[pyo3(signature = (**options))]
    fn fit(&self, py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Fit> {
        if let Some(bound) = self.bound(py, options)? {
            return bound.fit(py, options);
        }
        let opts = options::fit_options(options, &[])?;
        let config = core::run_config(&self.compiled, &opts).map_err(|e| to_py(py, e))?;
        let compiled = &self.compiled;
        let report = interrupt::run(py, |cancel| core::fit(compiled, &config, cancel))?;
        Ok(Fit::new(self.compiled.clone(), self.layout.clone(), report))
    }

    /// Per-sample gradient estimates at `theta` (default: `init_theta`), an
    /// `(n, len(theta_names))` array: the `n` samples an optimisation step with batch `n`
    /// would average, of the maximised objective (the ELBO, `E` for `maximize`, `-E` for
    /// `minimize`). Options: estimator="dsgd", eta=0.1, eta_decay=None, seed=0 and
    /// iteration=3999 (the step whose random streams are used and, for DSGD, whose
    /// eta_k = eta * (4000 / (iteration + 1))^decay: at 3999 it is `eta` itself), and
    /// data=None (as `with_data`).
    #[pyo3(signature = (theta = None, n = 1000, **options))]
    fn gradients<'py>(
        &self,
        py: Python<'py>,
        theta: Option<Vec<f64>>,
        n: i64,
        options: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if n < 1 {
            return Err(PyValueError::new_err(format!(
                "n must be at least 1, got {n}"
            )));
        }
        let n = n as usize;
        if let Some(bound) = self.bound(py, options)? {
            return bound.gradients(py, theta, n as i64, options);
        }
        let opts = options::gradient_options(options, &[])?;
        let theta = theta.unwrap_or_else(|| self.layout.init_theta.clone());
        let compiled = &self.compiled;
        let g = interrupt::run(py, |cancel| {
            core::gradients(&compiled.model, &theta, n, &opts, cancel)
        })?;
        let d = self.layout.theta_names.len();
        Ok(PyArray1::from_vec(py, g).reshape([n, d])?.into_any())
    }

    /// Runs several fits in parallel across fits (each options dict as `fit`'s keywords);
    /// the `Fit`s in the given order. The local backend of `dsgd.sweep`.
    fn _fit_many(&self, py: Python<'_>, options: Vec<Bound<'_, PyDict>>) -> PyResult<Vec<Fit>> {
        let configs = options
            .iter()
            .map(|d| {
                let o = options::fit_options(Some(d), &[])?;
                core::run_config(&self.compiled, &o).map_err(|e| to_py(py, e))
            })
            .collect::<PyResult<Vec<_>>>()?;
        let compiled = &self.compiled;
        let reports = interrupt::run(py, |cancel| core::fit_many(compiled, &configs, cancel))?;
        Ok(reports
            .into_iter()
            .map(|r| Fit::new(self.compiled.clone(), self.layout.clone(), r))
            .collect())
    }

    /// The comparison of `dsgd compare --json` (a JSON string); `dsgd.compare` wraps it.
    #[pyo3(signature = (**options))]
    fn _compare(&self, py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<String> {
        if let Some(bound) = self.bound(py, options)? {
            return bound._compare(py, options);
        }
        let opts = options::compare_options(options, &[])?;
        let compiled = &self.compiled;
        interrupt::run(py, |cancel| core::compare(compiled, &opts, cancel))
    }

    fn __repr__(&self) -> String {
        format!(
            "Model({:?}, {}, latents={}, theta={})",
            self.compiled.model.name,
            self.mode(),
            self.layout.latent_names.len(),
            self.layout.theta_names.len()
        )
    }

    /// Pickles as the source (and the data files it read), compiled again on loading.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let restore = py.import("dsgd._core")?.getattr("_restore_model")?;
        let state: Bound<'py, PyAny> = match &self.compiled.source {
            ModelSource::Builtin(name) => ("builtin", name.clone()).into_pyobject(py)?.into_any(),
            ModelSource::Text {
                file,
                source,
                files,
            } => {
                let f = PyDict::new(py);
                for (k, v) in files {
                    f.set_item(k, v)?;
                }
                ("text", file.clone(), source.clone(), f)
                    .into_pyobject(py)?
                    .into_any()
            }
        };
        let data = self.compiled.data.clone().into_pyobject(py)?.into_any();
        PyTuple::new(py, [restore, PyTuple::new(py, [state, data])?.into_any()])
    }
}

/// Rebuilds a pickled [`Model`] from its source state and data (see `Model.__reduce__`).
#[pyfunction]
pub fn _restore_model(
    py: Python<'_>,
    state: &Bound<'_, PyTuple>,
    data: core::Data,
) -> PyResult<Model> {
    let kind: String = state.get_item(0)?.extract()?;
    let source = match kind.as_str() {
        "builtin" => ModelSource::Builtin(state.get_item(1)?.extract()?),
        "text" => ModelSource::Text {
            file: state.get_item(1)?.extract()?,
            source: state.get_item(2)?.extract()?,
            files: state.get_item(3)?.extract::<BTreeMap<String, String>>()?,
        },
        other => {
            return Err(PyValueError::new_err(format!(
                "not a pickled dsgd model: `{other}`"
            )));
        }
    };
    Model::compile(py, || core::recompile(&source, data))
}

/// The built-in models: a dict from name to a one-line description.
#[pyfunction]
pub fn models<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, description) in core::builtin_models() {
        d.set_item(name, description)?;
    }
    Ok(d)
}
