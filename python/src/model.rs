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
}

#[pymethods]
impl Model {
    /// Compiles model text. `name` names it in error messages and reports; data files
    /// (`data x = csv("...")`) are read relative to `base_dir` (default: the current directory).
    #[staticmethod]
    #[pyo3(signature = (text, name = "model", base_dir = None))]
    fn from_source(
        py: Python<'_>,
        text: &str,
        name: &str,
        base_dir: Option<PathBuf>,
    ) -> PyResult<Model> {
        let base = base_dir.unwrap_or_else(|| PathBuf::from("."));
        Model::compile(py, || core::compile_text(name, text, &base))
    }

    /// Compiles the `.dsgd` file at `path`; data files are read relative to its directory.
    #[staticmethod]
    fn from_file(py: Python<'_>, path: PathBuf) -> PyResult<Model> {
        Model::compile(py, || core::compile_file(&path))
    }

    /// The built-in model `name` (see `dsgd.models()`).
    #[staticmethod]
    fn builtin(py: Python<'_>, name: &str) -> PyResult<Model> {
        Model::compile(py, || core::compile_builtin(name))
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

    /// The names of the parameter vector's components: the model's `param`s, then
    /// `mu[z]` and `rho[z]` (`std = softplus(rho)`) for each latent `z` with a guide.
    #[getter]
    fn param_names(&self) -> Vec<String> {
        self.layout.param_names.clone()
    }

    /// The initial parameter vector (what a fit starts from).
    #[getter]
    fn init_params<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_vec(py, self.layout.init.clone())
    }

    /// The latent variables' names, in the order of `Fit.sample`'s columns.
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
    /// eta_decay=None (1 / (2 * nesting depth)), iters=10000, batch=16, optimizer="adam"
    /// (or "sgd"), lr=None (Adam 0.0015, SGD 0.5), sgd_power=1.0, seed=0, log_every=100,
    /// log_samples=1000, on_nonfinite="stop" (or "continue"), threads=None (all cores;
    /// results do not depend on it). The same seed gives the same numbers as the command
    /// line. Releases the GIL; Ctrl-C stops it with KeyboardInterrupt.
    #[pyo3(signature = (**options))]
    fn fit(&self, py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Fit> {
        let opts = options::fit_options(options, &[])?;
        let config = core::run_config(&opts).map_err(|e| to_py(py, e))?;
        let compiled = &self.compiled;
        let report = interrupt::run(py, |cancel| core::fit(&compiled.model, &config, cancel))?;
        Fit::new(py, self.compiled.clone(), self.layout.clone(), report)
    }

    /// Per-sample gradient estimates at `params` (default: the initial parameters), an
    /// `(n, len(param_names))` array: the `n` samples an optimisation step with batch `n`
    /// would average, of the maximised objective (the ELBO, `E` for `maximize`, `-E` for
    /// `minimize`). Options: estimator="dsgd", eta=0.1, eta_decay=None, seed=0 and
    /// iteration=3999 (the step whose random streams are used and, for DSGD, whose
    /// eta_k = eta * (4000 / (iteration + 1))^decay: at 3999 it is `eta` itself).
    #[pyo3(signature = (params = None, n = 1000, **options))]
    fn gradients<'py>(
        &self,
        py: Python<'py>,
        params: Option<Vec<f64>>,
        n: i64,
        options: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if n < 1 {
            return Err(PyValueError::new_err(format!(
                "n must be at least 1, got {n}"
            )));
        }
        let n = n as usize;
        let opts = options::gradient_options(options, &[])?;
        let theta = params.unwrap_or_else(|| self.layout.init.clone());
        let compiled = &self.compiled;
        let g = interrupt::run(py, |cancel| {
            core::gradients(&compiled.model, &theta, n, &opts, cancel)
        })?;
        let d = self.layout.param_names.len();
        Ok(PyArray1::from_vec(py, g).reshape([n, d])?.into_any())
    }

    /// Runs several fits in parallel across fits (each options dict as `fit`'s keywords);
    /// the `Fit`s in the given order. The local backend of `dsgd.sweep`.
    fn _fit_many(&self, py: Python<'_>, options: Vec<Bound<'_, PyDict>>) -> PyResult<Vec<Fit>> {
        let configs = options
            .iter()
            .map(|d| {
                let o = options::fit_options(Some(d), &[])?;
                core::run_config(&o).map_err(|e| to_py(py, e))
            })
            .collect::<PyResult<Vec<_>>>()?;
        let compiled = &self.compiled;
        let reports = interrupt::run(py, |cancel| {
            core::fit_many(&compiled.model, &configs, cancel)
        })?;
        reports
            .into_iter()
            .map(|r| Fit::new(py, self.compiled.clone(), self.layout.clone(), r))
            .collect()
    }

    /// The comparison of `dsgd compare --json` (a JSON string); `dsgd.compare` wraps it.
    #[pyo3(signature = (**options))]
    fn _compare(&self, py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<String> {
        let opts = options::compare_options(options, &[])?;
        let compiled = &self.compiled;
        interrupt::run(py, |cancel| core::compare(&compiled.model, &opts, cancel))
    }

    fn __repr__(&self) -> String {
        format!(
            "Model({:?}, {}, latents={}, params={})",
            self.compiled.model.name,
            self.mode(),
            self.layout.latent_names.len(),
            self.layout.param_names.len()
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
        PyTuple::new(py, [restore, PyTuple::new(py, [state])?.into_any()])
    }
}

/// Rebuilds a pickled [`Model`] from its state (see `Model.__reduce__`).
#[pyfunction]
pub fn _restore_model(py: Python<'_>, state: &Bound<'_, PyTuple>) -> PyResult<Model> {
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
    Model::compile(py, || core::recompile(&source))
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
