//! The library's front door: compile a model, fit it, and sample gradients, one call each.
//!
//! These functions only wire together the layers below (`lang`, `experiment::run`,
//! `estimate`); the crate root re-exports them with the types they take and return.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use crate::estimate::{self, Engine, Purpose, StreamKey};
use crate::experiment::observe::Observer;
use crate::experiment::report::RunReport;
use crate::experiment::run::{RunConfig, RunError, run, run_cancellable};
use crate::ir::Model;
use crate::lang::{self, CompileError, CompileOptions};
use crate::settings::{Footprint, check_memory};

/// Compiles model source text. `name` names it in error messages (and, without its
/// extension, in reports); `data` files are read relative to the current directory.
pub fn compile(name: &str, source: &str) -> Result<Model, CompileError> {
    lang::compile_source(name, source, Path::new("."), &CompileOptions::default())
}

/// Compiles the `.dsgd` file at `path`; its `data` files are read relative to its directory.
pub fn compile_file(path: impl AsRef<Path>) -> Result<Model, CompileError> {
    lang::compile_file(path.as_ref(), &CompileOptions::default())
}

/// The built-in model `name` (`example`, `temperature`, `xornet`, ...), or `None`.
pub fn builtin(name: &str) -> Option<Result<Model, CompileError>> {
    crate::models::builtin(name)
}

/// The default settings with a built-in model's recommended ones (Adam at temperature's and
/// xornet's step sizes, xornet's decay); for any other name, the plain defaults (DoG).
pub fn recommended_config(model_name: &str) -> RunConfig {
    RunConfig::recommended(model_name)
}

/// Fits `model` with `config`: the whole run, its measurements, fitted values and verdict.
pub fn fit(model: &Model, config: &RunConfig) -> Result<RunReport, RunError> {
    run(model, config, &mut [])
}

/// [`fit`], reporting progress to `observers`.
pub fn fit_observed(
    model: &Model,
    config: &RunConfig,
    observers: &mut [&mut dyn Observer],
) -> Result<RunReport, RunError> {
    run(model, config, observers)
}

/// [`fit_observed`] that ends with [`RunError::Cancelled`] soon after `cancel` becomes true
/// (within one step and one measurement): for front ends that stop on Ctrl-C.
pub fn fit_cancellable(
    model: &Model,
    config: &RunConfig,
    observers: &mut [&mut dyn Observer],
    cancel: &AtomicBool,
) -> Result<RunReport, RunError> {
    run_cancellable(model, config, observers, cancel)
}

/// Per-sample gradients of the objective at one point, from one estimator.
#[derive(Clone, Debug, PartialEq)]
pub struct GradientSamples {
    /// The components' names (those of [`RunReport::theta_names`]).
    pub names: Vec<String>,
    /// `samples[l][p]`: component `p` of gradient sample `l`.
    pub samples: Vec<Vec<f64>>,
    /// The objective's value per sample under the estimator's semantics (smoothed for
    /// DSGD and Fixed).
    pub values: Vec<f64>,
}

/// `n` gradient samples of the objective (the ELBO, or the program's `E` also for
/// `minimize`) at `theta`, from `config`'s estimator as it is at `iteration` (which fixes
/// DSGD's eta), with the noise of `config.seed`: the samples a run with that seed measures
/// at that iteration.
pub fn gradient_samples(
    model: &Model,
    config: &RunConfig,
    theta: &[f64],
    n: usize,
    iteration: u64,
) -> Result<GradientSamples, RunError> {
    gradient_samples_cancellable(model, config, theta, n, iteration, &AtomicBool::new(false))
}

/// [`gradient_samples`] that ends with [`RunError::Cancelled`] soon after `cancel` becomes
/// true: the samples are computed in parts (the same bits as one batch) and the flag is read
/// between them. An `n` whose samples cannot fit in this machine's memory is refused first.
pub fn gradient_samples_cancellable(
    model: &Model,
    config: &RunConfig,
    theta: &[f64],
    n: usize,
    iteration: u64,
    cancel: &AtomicBool,
) -> Result<GradientSamples, RunError> {
    config.validate()?;
    if n == 0 {
        return Err(RunError::Config("need at least one gradient sample".into()));
    }
    check_memory(
        vec![("n", n.to_string())],
        Footprint::of(model).gradient_bytes(n as u64),
    )?;
    let problem = problem_at(model, config, theta)?;
    let names = problem.family().names().to_vec();
    let sign = problem.objective_sign();
    let key = StreamKey::new(config.seed, iteration, Purpose::Measure);
    let all = sample_all(problem, config, theta, n, key, cancel)?.ok_or(RunError::Cancelled)?;
    let d = names.len();
    Ok(GradientSamples {
        names,
        samples: (0..n)
            .map(|l| {
                all.gradients[l * d..(l + 1) * d]
                    .iter()
                    .map(|x| sign * x)
                    .collect()
            })
            .collect(),
        values: all.values.iter().map(|v| sign * v).collect(),
    })
}

/// `model` compiled for `config` (the problem a run of it samples), with `theta` checked to be
/// a point of its family: what a measurement's and a step's gradient samples start from.
pub(crate) fn problem_at(
    model: &Model,
    config: &RunConfig,
    theta: &[f64],
) -> Result<estimate::Problem, RunError> {
    let problem = crate::experiment::run::problem_for(model, config)?;
    problem.check_theta(theta).map_err(RunError::Config)?;
    Ok(problem)
}

/// The `n` samples of `problem` at `theta` (gradients, component-major per lane, and
/// values) that `config`'s estimator draws under `key`, on a worker of the pool and in blocks
/// (the same bits as one batch); `None` when `cancel` rose. What a measurement's and a
/// step's gradient samples share.
pub(crate) fn sample_all(
    problem: estimate::Problem,
    config: &RunConfig,
    theta: &[f64],
    n: usize,
    key: StreamKey,
    cancel: &AtomicBool,
) -> Result<Option<estimate::AllSamples>, RunError> {
    let estimator = estimate::build(config.estimator, &problem, config.eta, config.eta_decay)?;
    let mut engine = Engine::new(problem, estimator);
    let block = engine.block_lanes();
    Ok(estimate::on_a_worker(|| {
        engine.sample_all(theta, key, n, block, cancel)
    })?)
}
