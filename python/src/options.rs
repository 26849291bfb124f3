//! The keyword options of `Model.fit` (and of each fit of a sweep) as one typed signature,
//! [`FitOptions`]'s constructor: Python checks the names and kinds, and the core's
//! `dsgd::settings` fills in what was not given, checks every value and names the option
//! in its error. Nothing here holds a default or a range.

use pyo3::exceptions::{PyMemoryError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use dsgd::estimate::EstimatorKind;
use dsgd::settings::{
    EtaSetting, PreciseOptions, RunOptions, SettingError, SettingKind, Style, whole,
};

/// The keywords of `Model.fit` and of a sweep's grid (`FitOptions`'s signature, in order).
pub const FIT_KEYS: &[&str] = &[
    "estimator",
    "eta",
    "eta_decay",
    "eta_scale",
    "iters",
    "batch",
    "optimizer",
    "lr",
    "sgd_power",
    "seed",
    "log_every",
    "log_samples",
    "on_nonfinite",
    "threads",
    "precise",
    "precise_rel_se",
    "precise_min_samples",
    "precise_max_samples",
    "subsample",
];

/// A refused setting as the Python exception for it: `MemoryError` when it cannot fit in
/// memory, `ValueError` otherwise, the options named as keywords.
pub fn setting_error(e: SettingError) -> PyErr {
    let msg = e.render(Style::Keyword);
    match e.kind {
        SettingKind::Memory => PyMemoryError::new_err(msg),
        SettingKind::Invalid => PyValueError::new_err(msg),
    }
}

/// A whole number option (Python's `int` is unbounded, so it arrives as `i128`).
pub fn count(option: &'static str, x: Option<i128>, min: u64) -> PyResult<Option<u64>> {
    x.map(|x| whole(option, x, min).map_err(setting_error))
        .transpose()
}

/// A whole number option that sizes something in memory.
pub fn size(option: &'static str, x: Option<i128>, min: u64) -> PyResult<Option<usize>> {
    count(option, x, min)?
        .map(|x| {
            usize::try_from(x).map_err(|_| {
                setting_error(SettingError::invalid(
                    option,
                    format!("must fit in a machine word, got {x}"),
                ))
            })
        })
        .transpose()
}

/// `eta`: a number or `"auto"`.
pub fn eta(v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<EtaSetting>> {
    let Some(v) = v.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    if let Ok(s) = v.cast::<PyString>() {
        let s = s.to_string();
        return s.parse().map(Some).map_err(setting_error);
    }
    let x: f64 = v.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "argument 'eta': must be a number or \"auto\", got {}",
            v.repr().map_or_else(|_| "?".to_string(), |r| r.to_string())
        ))
    })?;
    Ok(Some(EtaSetting::Value(x)))
}

/// An estimator's name.
pub fn estimator(name: Option<String>) -> PyResult<Option<EstimatorKind>> {
    name.map(|n| {
        n.parse::<EstimatorKind>()
            .map_err(|e| PyValueError::new_err(e.to_string()))
    })
    .transpose()
}

/// A name parsed by the core (`optimizer`, `on_nonfinite`).
fn parsed<T: std::str::FromStr<Err = SettingError>>(s: Option<String>) -> PyResult<Option<T>> {
    s.map(|s| s.parse::<T>().map_err(setting_error)).transpose()
}

/// `Model.fit`'s options, as given: every keyword typed, none defaulted here.
#[pyclass(module = "dsgd._core", name = "FitOptions", frozen)]
#[derive(Clone)]
pub struct FitOptions {
    pub options: RunOptions,
}

#[pymethods]
impl FitOptions {
    #[new]
    #[pyo3(signature = (
        *,
        estimator = None,
        eta = None,
        eta_decay = None,
        eta_scale = None,
        iters = None,
        batch = None,
        optimizer = None,
        lr = None,
        sgd_power = None,
        seed = None,
        log_every = None,
        log_samples = None,
        on_nonfinite = None,
        threads = None,
        precise = false,
        precise_rel_se = None,
        precise_min_samples = None,
        precise_max_samples = None,
        subsample = None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        estimator: Option<String>,
        eta: Option<Bound<'_, PyAny>>,
        eta_decay: Option<f64>,
        eta_scale: Option<String>,
        iters: Option<i128>,
        batch: Option<i128>,
        optimizer: Option<String>,
        lr: Option<f64>,
        sgd_power: Option<f64>,
        seed: Option<i128>,
        log_every: Option<i128>,
        log_samples: Option<i128>,
        on_nonfinite: Option<String>,
        threads: Option<i128>,
        precise: bool,
        precise_rel_se: Option<f64>,
        precise_min_samples: Option<i128>,
        precise_max_samples: Option<i128>,
        subsample: Option<i128>,
    ) -> PyResult<FitOptions> {
        let precise_given = [
            ("precise_rel_se", precise_rel_se.is_some()),
            ("precise_min_samples", precise_min_samples.is_some()),
            ("precise_max_samples", precise_max_samples.is_some()),
        ];
        if !precise && let Some((key, _)) = precise_given.iter().find(|(_, given)| *given) {
            return Err(PyValueError::new_err(format!("{key} needs precise=True")));
        }
        let options = RunOptions {
            estimator: self::estimator(estimator)?,
            eta: self::eta(eta.as_ref())?,
            eta_decay,
            eta_scale: parsed(eta_scale)?,
            iterations: count("iters", iters, 1)?,
            batch: size("batch", batch, 1)?,
            optimizer: parsed(optimizer)?,
            lr,
            sgd_power,
            seed: count("seed", seed, 0)?,
            log_every: count("log_every", log_every, 1)?,
            log_samples: size("log_samples", log_samples, 2)?,
            on_nonfinite: parsed(on_nonfinite)?,
            threads: size("threads", threads, 1)?,
            precise: precise
                .then(|| -> PyResult<PreciseOptions> {
                    Ok(PreciseOptions {
                        rel_se: precise_rel_se,
                        min_samples: size("precise_min_samples", precise_min_samples, 2)?,
                        max_samples: size("precise_max_samples", precise_max_samples, 2)?,
                    })
                })
                .transpose()?,
            subsample: size("subsample", subsample, 1)?,
        };
        Ok(FitOptions { options })
    }
}

impl FitOptions {
    /// The options in `kwargs`, through the typed signature above (so an unknown keyword
    /// or a value of the wrong kind is Python's own `TypeError`).
    pub fn from_kwargs(py: Python<'_>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<RunOptions> {
        let made = py.get_type::<FitOptions>().call((), kwargs)?;
        Ok(made.cast::<FitOptions>()?.get().options.clone())
    }
}
