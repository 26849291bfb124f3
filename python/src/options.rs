//! Keyword options from Python to the core's option structs: every key known, every value
//! checked, and a `ValueError` naming the option and what it must be otherwise.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use dsgd::experiment::precise::PreciseConfig;

use crate::core::{CompareOptions, FitOptions, GradientOptions};

/// The keywords of `Model.fit` (and of a sweep's grid), with `dsgd run`'s defaults.
pub const FIT_KEYS: &[&str] = &[
    "estimator",
    "eta",
    "eta_decay",
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
];

/// The iteration whose `eta_k` equals `eta` in DSGD's schedule (`K_MATCH - 1`, zero-based).
pub const ITERATION_AT_ETA: u64 = 3999;

/// Reads typed values out of a keyword dictionary, remembering which keys were used.
struct Reader<'a, 'py> {
    dict: Option<&'a Bound<'py, PyDict>>,
}

impl<'py> Reader<'_, 'py> {
    fn get(&self, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.dict {
            None => Ok(None),
            Some(d) => Ok(d.get_item(key)?.filter(|v| !v.is_none())),
        }
    }

    fn string(&self, key: &str, default: &str) -> PyResult<String> {
        match self.get(key)? {
            None => Ok(default.to_string()),
            Some(v) => v.extract::<String>().map_err(|_| {
                PyValueError::new_err(format!("{key} must be a string, got {}", repr(&v)))
            }),
        }
    }

    fn boolean(&self, key: &str, default: bool) -> PyResult<bool> {
        match self.get(key)? {
            None => Ok(default),
            Some(v) if v.is_instance_of::<pyo3::types::PyBool>() => v.extract::<bool>(),
            Some(v) => Err(PyValueError::new_err(format!(
                "{key} must be True or False, got {}",
                repr(&v)
            ))),
        }
    }

    fn float(&self, key: &str) -> PyResult<Option<f64>> {
        match self.get(key)? {
            None => Ok(None),
            Some(v) if v.is_instance_of::<pyo3::types::PyBool>() => Err(not_a_number(key, &v)),
            Some(v) => v
                .extract::<f64>()
                .map(Some)
                .map_err(|_| not_a_number(key, &v)),
        }
    }

    /// A whole number of at least `min`.
    fn count(&self, key: &str, min: u64) -> PyResult<Option<u64>> {
        match self.get(key)? {
            None => Ok(None),
            Some(v) => {
                let bad = || {
                    PyValueError::new_err(format!(
                        "{key} must be a whole number of at least {min}, got {}",
                        repr(&v)
                    ))
                };
                if v.is_instance_of::<pyo3::types::PyBool>() {
                    return Err(bad());
                }
                match v.extract::<u64>() {
                    Ok(x) if x >= min => Ok(Some(x)),
                    _ => Err(bad()),
                }
            }
        }
    }

    fn usize(&self, key: &str, min: u64) -> PyResult<Option<usize>> {
        self.count(key, min)?
            .map(|x| {
                usize::try_from(x)
                    .map_err(|_| PyValueError::new_err(format!("{key} is too large: {x}")))
            })
            .transpose()
    }

    /// Fails on any key not in `known`.
    fn only(&self, known: &[&str], what: &str) -> PyResult<()> {
        let Some(d) = self.dict else { return Ok(()) };
        for k in d.keys() {
            let k: String = k.extract().map_err(|_| {
                PyValueError::new_err(format!("{what} option names must be strings"))
            })?;
            if !known.contains(&k.as_str()) {
                return Err(PyValueError::new_err(format!(
                    "unknown {what} option `{k}` (expected one of {})",
                    known.join(", ")
                )));
            }
        }
        Ok(())
    }
}

fn repr(v: &Bound<'_, PyAny>) -> String {
    v.repr().map_or_else(|_| "?".to_string(), |r| r.to_string())
}

fn not_a_number(key: &str, v: &Bound<'_, PyAny>) -> PyErr {
    PyValueError::new_err(format!("{key} must be a number, got {}", repr(v)))
}

/// `Model.fit`'s options; `extra` names further keys the caller handles itself.
pub fn fit_options(d: Option<&Bound<'_, PyDict>>, extra: &[&str]) -> PyResult<FitOptions> {
    let r = Reader { dict: d };
    let known: Vec<&str> = FIT_KEYS.iter().chain(extra).copied().collect();
    r.only(&known, "fit")?;
    let eta_auto = match r.get("eta")? {
        Some(v) => v
            .extract::<String>()
            .map(|s| {
                if s.eq_ignore_ascii_case("auto") {
                    Ok(true)
                } else {
                    Err(PyValueError::new_err(format!(
                        "eta must be a number or \"auto\", got {}",
                        repr(&v)
                    )))
                }
            })
            .unwrap_or(Ok(false))?,
        None => false,
    };
    Ok(FitOptions {
        estimator: r.string("estimator", "dsgd")?,
        eta: if eta_auto {
            dsgd::estimate::START_AMPLITUDE
        } else {
            r.float("eta")?.unwrap_or(0.1)
        },
        eta_auto,
        eta_decay: r.float("eta_decay")?,
        iters: r.count("iters", 1)?.unwrap_or(10_000),
        batch: r.usize("batch", 1)?.unwrap_or(16),
        optimizer: match r.get("optimizer")? {
            None => None,
            Some(_) => Some(r.string("optimizer", "")?),
        },
        lr: r.float("lr")?,
        sgd_power: r.float("sgd_power")?.unwrap_or(1.0),
        seed: r.count("seed", 0)?.unwrap_or(0),
        log_every: r.count("log_every", 1)?.unwrap_or(100),
        log_samples: r.usize("log_samples", 2)?.unwrap_or(1000),
        on_nonfinite: r.string("on_nonfinite", "stop")?,
        threads: r.usize("threads", 1)?,
        precise: precise_config(&r)?,
    })
}

/// The precise final measurement (`dsgd run --precise` and its `--precise-*` settings):
/// `None` unless `precise=True`; a setting given without it is an error, as on the command
/// line.
fn precise_config(r: &Reader<'_, '_>) -> PyResult<Option<PreciseConfig>> {
    let d = PreciseConfig::default();
    if !r.boolean("precise", false)? {
        for key in [
            "precise_rel_se",
            "precise_min_samples",
            "precise_max_samples",
        ] {
            if r.get(key)?.is_some() {
                return Err(PyValueError::new_err(format!("{key} needs precise=True")));
            }
        }
        return Ok(None);
    }
    let rel_se = r.float("precise_rel_se")?.unwrap_or(d.rel_se);
    if !(rel_se > 0.0 && rel_se.is_finite()) {
        return Err(PyValueError::new_err(format!(
            "precise_rel_se must be a positive number, got {rel_se}"
        )));
    }
    Ok(Some(PreciseConfig {
        rel_se,
        min_samples: r.usize("precise_min_samples", 2)?.unwrap_or(d.min_samples),
        max_samples: r.usize("precise_max_samples", 2)?.unwrap_or(d.max_samples),
    }))
}

/// `Model.gradients`' options.
pub fn gradient_options(
    d: Option<&Bound<'_, PyDict>>,
    extra: &[&str],
) -> PyResult<GradientOptions> {
    let r = Reader { dict: d };
    let known: Vec<&str> = ["estimator", "eta", "eta_decay", "seed", "iteration"]
        .iter()
        .chain(extra)
        .copied()
        .collect();
    r.only(&known, "gradients")?;
    Ok(GradientOptions {
        estimator: r.string("estimator", "dsgd")?,
        eta: r.float("eta")?.unwrap_or(0.1),
        eta_decay: r.float("eta_decay")?,
        seed: r.count("seed", 0)?.unwrap_or(0),
        iteration: r.count("iteration", 0)?.unwrap_or(ITERATION_AT_ETA),
    })
}

/// `dsgd.compare`'s options (`dsgd compare`'s defaults).
pub fn compare_options(d: Option<&Bound<'_, PyDict>>, extra: &[&str]) -> PyResult<CompareOptions> {
    let r = Reader { dict: d };
    let known: Vec<&str> = [
        "etas",
        "seeds",
        "iters",
        "lr",
        "eta_decay",
        "log_every",
        "log_samples",
    ]
    .iter()
    .chain(extra)
    .copied()
    .collect();
    r.only(&known, "compare")?;
    let etas = match r.get("etas")? {
        None => dsgd::experiment::paper::ETAS.to_vec(),
        Some(v) => v.extract::<Vec<f64>>().map_err(|_| {
            PyValueError::new_err(format!("etas must be a list of numbers, got {}", repr(&v)))
        })?,
    };
    Ok(CompareOptions {
        etas,
        seeds: r.count("seeds", 1)?.unwrap_or(5),
        iters: r.count("iters", 1)?.unwrap_or(10_000),
        lr: r.float("lr")?,
        eta_decay: r.float("eta_decay")?,
        log_every: r.count("log_every", 1)?.unwrap_or(100),
        log_samples: r.usize("log_samples", 2)?.unwrap_or(1000),
    })
}
