//! `dsgd.Model`: a compiled model, and what can be done with it (check, fit, gradients,
//! compare), plus pickling by source so that models travel to other processes (Ray tasks).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use numpy::{PyArray1, PyArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::core::{self, Compiled, ModelSource};
use crate::data::{data_dict, data_of};
use crate::errors::{to_py, warn_all};
use crate::fit::Fit;
use crate::interrupt;
use crate::options::{self, FitOptions};
use dsgd::lang::PlatePolicy;

/// A model compiled from `.dsgd` text, a file, or a built-in name.
///
/// Build one with `Model.from_source`, `Model.from_file` or `Model.builtin`; `dsgd.models()`
/// lists the built-ins. A model pickles as its source (with the data files it read), so it
/// can be sent to other processes, for instance Ray workers. A model whose `data y;` has no
/// value waits for one: `fit(data=..)`, `with_data(..)` and the other calls taking `data=`
/// compile it then, and any other use says which data is missing.
#[pyclass(module = "dsgd._core", name = "Model", frozen)]
pub struct Model {
    state: State,
}

/// A model compiled, or waiting for values of its `data` declarations.
enum State {
    Compiled {
        compiled: Arc<Compiled>,
        layout: Arc<core::Layout>,
    },
    /// The source, where its data files are read from (`None`: from those recorded when
    /// it was first compiled), and the compiler's word on what is missing.
    NeedsData {
        source: ModelSource,
        base: Option<PathBuf>,
        error: Box<dsgd::lang::CompileError>,
        plates: PlatePolicy,
    },
}

/// The plate policy named by `plates=` (`"auto"`, `"on"` or `"off"`, as `--plates`).
fn plate_policy(plates: &str) -> PyResult<PlatePolicy> {
    PlatePolicy::from_name(plates).ok_or_else(|| {
        PyValueError::new_err(format!(
            "plates must be \"auto\", \"on\" or \"off\", got {plates:?}"
        ))
    })
}

impl Model {
    pub(crate) fn new(py: Python<'_>, compiled: Compiled) -> PyResult<Model> {
        let layout = core::layout(&compiled.model).map_err(|e| to_py(py, e))?;
        Ok(Model {
            state: State::Compiled {
                compiled: Arc::new(compiled),
                layout: Arc::new(layout),
            },
        })
    }

    /// Compiles on a worker thread that Ctrl-C stops; a model that only lacks data keeps
    /// its source until data is bound.
    fn compile(
        py: Python<'_>,
        waiting: Option<(ModelSource, Option<PathBuf>)>,
        plates: PlatePolicy,
        f: impl FnOnce(&Arc<AtomicBool>) -> Result<Compiled, core::CoreError> + Send,
    ) -> PyResult<Model> {
        match (interrupt::run_core(py, f)?, waiting) {
            (Ok(compiled), _) => Model::new(py, compiled),
            (Err(core::CoreError::Compile(error)), Some((source, base)))
                if dsgd::lang::is_missing_data(&error) =>
            {
                Ok(Model {
                    state: State::NeedsData {
                        source,
                        base,
                        error,
                        plates,
                    },
                })
            }
            (Err(e), _) => Err(to_py(py, e)),
        }
    }

    /// The compiled model, or the compile error that says which data it waits for.
    fn ready(&self, py: Python<'_>) -> PyResult<(&Arc<Compiled>, &Arc<core::Layout>)> {
        match &self.state {
            State::Compiled { compiled, layout } => Ok((compiled, layout)),
            State::NeedsData { error, .. } => {
                Err(to_py(py, core::CoreError::Compile(error.clone())))
            }
        }
    }

    /// The plate policy the model compiles with.
    fn plate_policy(&self) -> PlatePolicy {
        match &self.state {
            State::Compiled { compiled, .. } => compiled.plates,
            State::NeedsData { plates, .. } => *plates,
        }
    }

    /// Where the model's text comes from.
    fn model_source(&self) -> &ModelSource {
        match &self.state {
            State::Compiled { compiled, .. } => &compiled.source,
            State::NeedsData { source, .. } => source,
        }
    }

    /// This model, or when `data` is given, the model with that data bound.
    fn bound(&self, py: Python<'_>, data: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Model>> {
        match data.filter(|d| !d.is_none()) {
            None => Ok(None),
            Some(d) => self.with_data(py, d).map(Some),
        }
    }
}

#[pymethods]
impl Model {
    /// Compiles model text. `name` names it in error messages and reports; data files
    /// (`data x = csv("...")`) are read relative to `base_dir` (default: the current
    /// directory), and `data` binds `data` declarations by name (see `with_data`). `plates`
    /// says which `for` loops stay loops, as the command line's `--plates`: `"auto"` (loops
    /// of independent rows over at least 1,000 rows), `"on"` (every qualifying loop) or
    /// `"off"` (every loop unrolled); the model keeps it (binding data, pickling).
    #[staticmethod]
    #[pyo3(signature = (text, name = "model", base_dir = None, data = None, plates = "auto"))]
    fn from_source(
        py: Python<'_>,
        text: &str,
        name: &str,
        base_dir: Option<PathBuf>,
        data: Option<&Bound<'_, PyAny>>,
        plates: &str,
    ) -> PyResult<Model> {
        let plates = plate_policy(plates)?;
        let base = base_dir.unwrap_or_else(|| PathBuf::from("."));
        let data = data_of(py, data)?;
        let source = ModelSource::Text {
            file: name.to_string(),
            source: text.to_string(),
            files: BTreeMap::new(),
        };
        Model::compile(py, Some((source, Some(base.clone()))), plates, |cancel| {
            core::compile_text(name, text, &base, data, plates, cancel)
        })
    }

    /// Compiles the `.dsgd` file at `path`; data files are read relative to its directory,
    /// and `data` binds `data` declarations by name (see `with_data`); `plates` as in
    /// `from_source`.
    #[staticmethod]
    #[pyo3(signature = (path, data = None, plates = "auto"))]
    fn from_file(
        py: Python<'_>,
        path: PathBuf,
        data: Option<&Bound<'_, PyAny>>,
        plates: &str,
    ) -> PyResult<Model> {
        let plates = plate_policy(plates)?;
        let data = data_of(py, data)?;
        let text = core::read_model_file(&path).map_err(|e| to_py(py, e))?;
        let source = ModelSource::Text {
            file: path.display().to_string(),
            source: text.clone(),
            files: BTreeMap::new(),
        };
        let base = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let file = path.display().to_string();
        Model::compile(py, Some((source, Some(base.clone()))), plates, |cancel| {
            core::compile_text(&file, &text, &base, data, plates, cancel)
        })
    }

    /// The built-in model `name` (see `dsgd.models()`), its `data` declarations optionally
    /// bound from `data` (replacing the embedded values); `plates` as in `from_source`.
    #[staticmethod]
    #[pyo3(signature = (name, data = None, plates = "auto"))]
    fn builtin(
        py: Python<'_>,
        name: &str,
        data: Option<&Bound<'_, PyAny>>,
        plates: &str,
    ) -> PyResult<Model> {
        let plates = plate_policy(plates)?;
        let data = data_of(py, data)?;
        Model::compile(py, None, plates, |_| {
            core::compile_builtin(name, data, plates)
        })
    }

    /// The same model with `data` bound to its `data` declarations: a dict from a
    /// declaration's name to a number or an array: a list of numbers, or a numpy array of
    /// floats, integers or booleans (read from its memory, converted to float64; nested
    /// lists must be rectangular; arrays of Python objects are refused). A million rows bind
    /// in milliseconds and are held once, shared with the model. A bound value replaces the
    /// one written in the model and gives one to `data y;`. Replaces earlier bound data; `{}`
    /// removes it.
    /// Names the model does not declare, and non-finite numbers, are errors. `fit`,
    /// `gradients` and `dsgd.compare`/`dsgd.sweep` also take `data=` as a shorthand.
    fn with_data(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<Model> {
        let data = data_of(py, Some(data))?;
        let source = self.model_source().clone();
        let base = match &self.state {
            State::NeedsData { base, .. } => base.clone(),
            State::Compiled { .. } => None,
        };
        let waiting = Some((source.clone(), base.clone()));
        let plates = self.plate_policy();
        Model::compile(py, waiting, plates, |cancel| match (&source, &base) {
            // Never compiled: its data files are read now, from where the model is.
            (ModelSource::Text { file, source, .. }, Some(base)) => {
                core::compile_text(file, source, base, data, plates, cancel)
            }
            _ => core::recompile(&source, data, plates, cancel),
        })
    }

    /// The plate policy the model compiles with (`"auto"`, `"on"` or `"off"`; see
    /// `from_source`).
    #[getter]
    fn plates(&self) -> &'static str {
        self.plate_policy().name()
    }

    /// The data bound with `with_data` (or `data=`), as a dict of numpy arrays.
    #[getter]
    fn data<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        match &self.state {
            State::Compiled { compiled, .. } => data_dict(py, &compiled.data),
            State::NeedsData { .. } => Ok(PyDict::new(py)),
        }
    }

    /// The model's name (a file's stem, or the built-in's name).
    #[getter]
    fn name(&self) -> String {
        match &self.state {
            State::Compiled { compiled, .. } => compiled.model.name.clone(),
            State::NeedsData { source, .. } => match source {
                ModelSource::Builtin(name) => name.clone(),
                ModelSource::Text { file, .. } => Path::new(file)
                    .file_stem()
                    .map_or(file.clone(), |s| s.to_string_lossy().into_owned()),
            },
        }
    }

    /// `"variational"` (the objective is the ELBO) or `"objective"` (`maximize`/`minimize`).
    #[getter]
    fn mode(&self, py: Python<'_>) -> PyResult<&'static str> {
        Ok(match self.ready(py)?.0.model.mode {
            dsgd::Mode::Variational => "variational",
            dsgd::Mode::Objective { .. } => "objective",
        })
    }

    /// The model's source text.
    #[getter]
    fn source(&self) -> String {
        match &self.state {
            State::Compiled { compiled, .. } => compiled.text().to_string(),
            State::NeedsData { source, .. } => match source {
                ModelSource::Builtin(name) => {
                    dsgd::models::builtin_source(name).unwrap_or("").to_string()
                }
                ModelSource::Text { source, .. } => source.clone(),
            },
        }
    }

    /// The names of the optimised vector `theta`'s components: the model's `param`s, then
    /// `mu[z]` and `rho[z]` (`std = softplus(rho)`) for each latent `z` with a guide.
    #[getter]
    fn theta_names(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        Ok(self.ready(py)?.1.theta_names.clone())
    }

    /// The initial `theta` (what a fit starts from).
    #[getter]
    fn init_theta<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        Ok(PyArray1::from_vec(py, self.ready(py)?.1.init_theta.clone()))
    }

    /// The fitted latents' names (fixed latents left out), the order of `Fit.sample`'s columns.
    #[getter]
    fn latent_names(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        Ok(self.ready(py)?.1.latent_names.clone())
    }

    /// What `dsgd check --json` says about the model, as a dict: counts of latents,
    /// parameters and if-statements, nesting depth, safety, affine guards, whether LYY18
    /// applies, the default eta decay, and every guard.
    fn check<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let json = core::check_json(self.ready(py)?.0);
        py.import("json")?.call_method1("loads", (json,))
    }

    /// Optimises the model; returns a `Fit`. The keywords are those of `dsgd run`
    /// (`dsgd._core.FitOptions` holds their signature): estimator ("dsgd", "fixed",
    /// "reparam", "score", "lyy18" or "rloo"), eta (a number or "auto"), eta_decay,
    /// eta_scale ("relative", the default: DSGD smooths each guard linear in the latents at
    /// eta times its standard deviation under the guide; "absolute": in the guard's units), iters,
    /// batch, optimizer ("dog", "adam" or "sgd"; left out, "adam" when lr is given or a
    /// built-in model has its own step size, else "dog", which needs none), lr, sgd_power,
    /// seed, log_every, log_samples, on_nonfinite ("stop" or "continue"), threads (results
    /// do not depend on it), precise
    /// (True: also measure the objective at the final parameters with many fresh samples,
    /// as `dsgd run --precise`, into `Fit.final_precise`, with precise_rel_se,
    /// precise_min_samples, precise_max_samples), and data (as `with_data`). Each one left
    /// out takes `dsgd run`'s default, and a built-in model its own recommended settings.
    /// The same seed gives the same numbers as the command line. A setting that cannot fit
    /// in this machine's memory raises `MemoryError` before anything runs; an option the
    /// run does not read (eta for estimator="score", lr for DoG, ...) gives a `UserWarning`,
    /// as `dsgd run` warns. Releases the GIL; Ctrl-C stops it with KeyboardInterrupt.
    #[pyo3(signature = (*, data = None, **options))]
    fn fit(
        &self,
        py: Python<'_>,
        data: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Fit> {
        if let Some(bound) = self.bound(py, data)? {
            return bound.fit(py, None, options);
        }
        let opts = FitOptions::from_kwargs(py, options)?;
        let (compiled, layout) = self.ready(py)?;
        let config = core::run_config(compiled, &opts).map_err(|e| to_py(py, e))?;
        warn_all(py, &core::ignored_options(compiled, &opts))?;
        let report = interrupt::run(py, |cancel| core::fit(compiled, &config, cancel))?;
        Ok(Fit::new(compiled.clone(), layout.clone(), report))
    }

    /// Per-sample gradient estimates at `theta` (default: `init_theta`), an
    /// `(n, len(theta_names))` array: the `n` samples an optimisation step with batch `n`
    /// would average, of the maximised objective (the ELBO, `E` for `maximize`, `-E` for
    /// `minimize`). Options (left out: `dsgd run`'s defaults): estimator, eta, eta_decay,
    /// seed, and iteration (the step whose random streams are used and, for DSGD, whose
    /// eta_k = eta * (4000 / (iteration + 1))^decay; by default 3999, where eta_k is `eta`
    /// itself), and data (as `with_data`). Computed in parts, the same numbers as one batch,
    /// so Ctrl-C stops it with KeyboardInterrupt; an option the estimator does not read
    /// gives a `UserWarning`.
    #[pyo3(signature = (
        theta = None,
        n = 1000,
        *,
        estimator = None,
        eta = None,
        eta_decay = None,
        seed = None,
        iteration = None,
        data = None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn gradients<'py>(
        &self,
        py: Python<'py>,
        theta: Option<Vec<f64>>,
        n: i128,
        estimator: Option<String>,
        eta: Option<f64>,
        eta_decay: Option<f64>,
        seed: Option<i128>,
        iteration: Option<i128>,
        data: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let n = options::size("n", Some(n), 1)?.unwrap_or(1);
        if let Some(bound) = self.bound(py, data)? {
            return bound.gradients(
                py, theta, n as i128, estimator, eta, eta_decay, seed, iteration, None,
            );
        }
        let opts = core::GradientOptions {
            estimator: options::estimator(estimator)?,
            eta,
            eta_decay,
            seed: options::count("seed", seed, 0)?,
            iteration: options::count("iteration", iteration, 0)?,
        };
        let (compiled, layout) = self.ready(py)?;
        warn_all(py, &core::ignored_gradient_options(&opts))?;
        let theta = theta.unwrap_or_else(|| layout.init_theta.clone());
        let g = interrupt::run(py, |cancel| {
            core::gradients(&compiled.model, &theta, n, &opts, cancel)
        })?;
        let d = layout.theta_names.len();
        Ok(PyArray1::from_vec(py, g).reshape([n, d])?.into_any())
    }

    /// Runs several fits in parallel across fits (each options dict as `fit`'s keywords);
    /// the `Fit`s in the given order. The local backend of `dsgd.sweep`.
    fn _fit_many(&self, py: Python<'_>, options: Vec<Bound<'_, PyDict>>) -> PyResult<Vec<Fit>> {
        let (compiled, layout) = self.ready(py)?;
        let configs = options
            .iter()
            .map(|d| {
                let o = FitOptions::from_kwargs(py, Some(d))?;
                let config = core::run_config(compiled, &o).map_err(|e| to_py(py, e))?;
                warn_all(py, &core::ignored_options(compiled, &o))?;
                Ok(config)
            })
            .collect::<PyResult<Vec<_>>>()?;
        let reports = interrupt::run(py, |cancel| core::fit_many(compiled, &configs, cancel))?;
        Ok(reports
            .into_iter()
            .map(|r| Fit::new(compiled.clone(), layout.clone(), r))
            .collect())
    }

    /// The comparison of `dsgd compare --json` (a JSON string); `dsgd.compare` wraps it.
    #[pyo3(signature = (
        *,
        etas = None,
        seeds = None,
        iters = None,
        lr = None,
        eta_decay = None,
        log_every = None,
        log_samples = None,
        data = None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn _compare(
        &self,
        py: Python<'_>,
        etas: Option<Vec<f64>>,
        seeds: Option<i128>,
        iters: Option<i128>,
        lr: Option<f64>,
        eta_decay: Option<f64>,
        log_every: Option<i128>,
        log_samples: Option<i128>,
        data: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        if let Some(bound) = self.bound(py, data)? {
            return bound._compare(
                py,
                etas,
                seeds,
                iters,
                lr,
                eta_decay,
                log_every,
                log_samples,
                None,
            );
        }
        let opts = core::CompareOptions {
            etas,
            seeds: options::count("seeds", seeds, 1)?,
            iters: options::count("iters", iters, 1)?,
            lr,
            eta_decay,
            log_every: options::count("log_every", log_every, 1)?,
            log_samples: options::size("log_samples", log_samples, 2)?,
        };
        let compiled = self.ready(py)?.0;
        interrupt::run(py, |cancel| core::compare(compiled, &opts, cancel))
    }

    fn __repr__(&self) -> String {
        match &self.state {
            State::Compiled { compiled, layout } => format!(
                "Model({:?}, {}, latents={}, theta={})",
                compiled.model.name,
                match compiled.model.mode {
                    dsgd::Mode::Variational => "variational",
                    dsgd::Mode::Objective { .. } => "objective",
                },
                layout.latent_names.len(),
                layout.theta_names.len()
            ),
            State::NeedsData { .. } => format!("Model({:?}, waiting for data)", self.name()),
        }
    }

    /// Pickles as the source (and the data files it read), compiled again on loading.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let restore = py.import("dsgd._core")?.getattr("_restore_model")?;
        let state: Bound<'py, PyAny> = match self.model_source() {
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
        // The data travel as a dict of numpy arrays (pickled as their bytes, not as text).
        let data = match &self.state {
            State::Compiled { compiled, .. } => data_dict(py, &compiled.data)?,
            State::NeedsData { .. } => PyDict::new(py),
        }
        .into_any();
        let plates = self.plate_policy().name().into_pyobject(py)?.into_any();
        PyTuple::new(
            py,
            [restore, PyTuple::new(py, [state, data, plates])?.into_any()],
        )
    }
}

/// Rebuilds a pickled [`Model`] from its source state, data and plate policy (see
/// `Model.__reduce__`; a pickle without the policy compiles with `"auto"`).
#[pyfunction]
#[pyo3(signature = (state, data, plates = "auto"))]
pub fn _restore_model(
    py: Python<'_>,
    state: &Bound<'_, PyTuple>,
    data: &Bound<'_, PyAny>,
    plates: &str,
) -> PyResult<Model> {
    let plates = plate_policy(plates)?;
    let data = data_of(py, Some(data))?;
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
    let waiting = Some((source.clone(), None));
    Model::compile(py, waiting, plates, |cancel| {
        core::recompile(&source, data, plates, cancel)
    })
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
