//! One optimisation run: the loop that estimates a gradient, steps, and measures.
//!
//! Every `log_every` iterations (from iteration 0) and at the end, the runner draws
//! `log_samples` fresh samples and records the crisp objective estimate and the variance of
//! the estimator's gradient samples at that iterate (docs/design.md section 3). A run is a pure
//! function of its configuration: the thread count changes nothing but the speed. With more
//! than one thread a measurement runs beside the steps that follow it (it reads only the
//! iterate they start from), and the steps draw their next noise ahead; both are applied in
//! the serial order.

mod measurement;
mod runner;
mod smoothing_gap;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use thiserror::Error;

use super::bias::estimator_bias;
use super::convergence::{RunFacts, assess};
use super::observe::Observer;
use super::precise;
use super::report::{NamedValues, ObjectiveKind, RunReport};
use super::summary::{latent_summaries, param_values};
use crate::estimate::{self, AutoEta, Engine, EstimateError, EstimatorKind, Problem};
use crate::family::FamilyError;
use crate::ir::{Mode, Model};
use crate::optim::OptimizerConfig;
use crate::settings::{EtaScale, EtaSetting, SettingError};

pub use crate::settings::{OnNonFinite, RunConfig};
use runner::Runner;
use smoothing_gap::smoothing_warning;
pub use smoothing_gap::{GAP_NEGLIGIBLE, GAP_NOISE_FACTOR};

/// Why a run could not start.
#[derive(Debug, Error)]
pub enum RunError {
    /// A setting is out of range; the message names it.
    #[error("invalid setting: {0}")]
    Config(String),
    /// A setting out of range or beyond this machine's memory, naming its options.
    #[error("invalid setting: {0}")]
    Setting(#[from] SettingError),
    /// The model's family cannot be built or evaluated.
    #[error(transparent)]
    Family(#[from] FamilyError),
    /// The estimator does not apply to the model (e.g. LYY18 on a non-affine guard).
    #[error(transparent)]
    Estimate(#[from] EstimateError),
    /// The thread pool could not start.
    #[error("cannot start worker threads: {0}")]
    Threads(String),
    /// The caller's cancel flag was raised (e.g. Ctrl-C in the Python package).
    #[error("the run was cancelled")]
    Cancelled,
}

/// Runs `config` on `model`, reporting to `observers`.
pub fn run(
    model: &Model,
    config: &RunConfig,
    observers: &mut [&mut dyn Observer],
) -> Result<RunReport, RunError> {
    run_cancellable(model, config, observers, &AtomicBool::new(false))
}

/// [`run`], ending with [`RunError::Cancelled`] soon after `cancel` becomes true: the loop
/// reads the flag before every step, so a front end (the Python package on Ctrl-C) can stop a
/// long run within one step and one measurement.
pub fn run_cancellable(
    model: &Model,
    config: &RunConfig,
    observers: &mut [&mut dyn Observer],
    cancel: &AtomicBool,
) -> Result<RunReport, RunError> {
    config.validate()?;
    config.check_resources(model)?;
    let go = |observers: &mut [&mut dyn Observer]| run_in_pool(model, config, observers, cancel);
    match config.threads {
        Some(n) => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .map_err(|e| RunError::Threads(e.to_string()))?;
            pool.install(|| go(observers))
        }
        None => crate::estimate::on_a_worker(|| go(observers)),
    }
}

fn run_in_pool(
    model: &Model,
    config: &RunConfig,
    observers: &mut [&mut dyn Observer],
    cancel: &AtomicBool,
) -> Result<RunReport, RunError> {
    let clock = Instant::now();
    let problem = problem_for(model, config)?;
    let decay = estimate::decay_or_default(config.eta_decay, problem.analysis());
    let auto = config
        .eta_auto
        .then(|| AutoEta::new(decay, config.iterations));
    let eta = auto.map_or(config.eta, |a| a.amplitude());
    let schedule = estimate::schedule_of(config.estimator, eta, decay);
    let estimator = estimate::build(config.estimator, &problem, eta, Some(decay))?;
    // The measurements get their own engine, so that they can run beside the steps.
    let probe_estimator = estimate::build(config.estimator, &problem, eta, Some(decay))?;
    let mut probe = Engine::new(problem.clone(), probe_estimator);
    let mut engine = Engine::new(problem, estimator);
    // Steps may read a subsample of each plate's rows; so do the measurements, each chunk of
    // samples its own rows, so that they cost no more than the steps whatever the data's size
    // and their standard errors (over chunks) include the rows' sampling.
    engine.set_subsample(config.subsample);
    probe.set_subsample(config.subsample);
    probe.set_rows_per_chunk(true);
    let mut runner = Runner::new(&mut engine, probe, config, cancel, schedule);
    runner.auto = auto;
    for o in observers.iter_mut() {
        o.started(config.iterations);
    }
    runner.go(observers);
    if cancel.load(Ordering::Relaxed) {
        return Err(RunError::Cancelled);
    }
    let Runner {
        theta,
        trajectory,
        stop,
        message,
        skipped,
        done,
        window,
        ..
    } = runner;
    let problem = engine.problem();
    let family = problem.family();
    // A parameter vector the family rejects has no precise value (the run's message says why).
    let final_precise = config.precise.and_then(|p| {
        precise::measure_cancellable(problem, &theta, config.seed, done, &p, cancel).ok()
    });
    if cancel.load(Ordering::Relaxed) {
        return Err(RunError::Cancelled);
    }
    let kind = config.estimator;
    let objective = match problem.mode() {
        Mode::Variational => ObjectiveKind::Elbo,
        Mode::Objective { .. } => ObjectiveKind::Objective,
    };
    let latents = latent_summaries(problem.program(), family, &theta).unwrap_or_default();
    let params = NamedValues(param_values(family, &theta));
    let param_names: Vec<String> = params.names().map(String::from).collect();
    let latent_names: Vec<String> = latents.iter().map(|l| l.name.clone()).collect();
    let bias_warning = estimator_bias(kind, problem.analysis(), problem.program());
    let verdict = assess(&RunFacts {
        kind: objective,
        stop,
        stop_message: message.as_deref(),
        done,
        skipped,
        trajectory: &trajectory,
        param_names: &param_names,
        latent_names: &latent_names,
        stationarity: window.assess().as_ref(),
        theta_names: family.names(),
        adam_lr: match config.optimizer {
            OptimizerConfig::Adam(_) => config.optimizer.lr(),
            _ => None,
        },
        own_step: matches!(config.optimizer, OptimizerConfig::Dog(_)),
        bias: bias_warning.as_deref(),
        maximise: problem.objective_sign() > 0.0,
    });
    let last = trajectory.last();
    let final_value = last.map_or(f64::NAN, |r| r.value);
    let report = RunReport {
        model: problem.name().to_string(),
        kind: objective,
        estimator: kind.name().to_string(),
        eta: kind.uses_eta().then_some(if config.eta_auto {
            EtaSetting::Auto
        } else {
            EtaSetting::Value(config.eta)
        }),
        eta_auto: config.eta_auto,
        eta_decay: (kind == EstimatorKind::Dsgd).then_some(decay),
        eta_scale: problem
            .relative_guards()
            .then(|| EtaScale::Relative.name().to_string()),
        optimizer: config.optimizer.name().to_string(),
        lr: config.optimizer.lr(),
        sgd_power: match config.optimizer {
            OptimizerConfig::Sgd(c) => Some(c.power),
            OptimizerConfig::Adam(_) | OptimizerConfig::Dog(_) => None,
        },
        batch: config.batch,
        seed: config.seed,
        iterations: done,
        iterations_requested: config.iterations,
        log_every: config.log_every,
        log_samples: config.log_samples,
        subsample: config.subsample.filter(|_| problem.has_plates()),
        final_value,
        final_value_se: last.map_or(f64::NAN, |r| r.value_se),
        final_elbo: (objective == ObjectiveKind::Elbo).then_some(final_value),
        final_precise,
        params,
        latents,
        converged: verdict.converged,
        convergence: verdict.reason,
        theta,
        theta_names: family.names().to_vec(),
        stop_reason: stop,
        stop_message: message,
        skipped_steps: skipped,
        smoothing_warning: last.and_then(smoothing_warning),
        bias_warning,
        trajectory,
        seconds: clock.elapsed().as_secs_f64(),
    };
    for o in observers.iter_mut() {
        o.finished(&report);
    }
    Ok(report)
}

/// The problem `config`'s estimator differentiates: DSGD with `--eta-scale relative` reads
/// each guard linear in the latents in units of its spread under the guide
/// ([`Problem::relative`]); everything else reads the program as written.
pub fn problem_for(model: &Model, config: &RunConfig) -> Result<Problem, FamilyError> {
    if config.estimator == EstimatorKind::Dsgd && config.eta_scale == EtaScale::Relative {
        Problem::relative(model)
    } else {
        Problem::new(model)
    }
}
