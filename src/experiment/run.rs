//! One optimisation run: the loop that estimates a gradient, steps, and measures.
//!
//! Every `log_every` iterations (from iteration 0) and at the end, the runner draws
//! `log_samples` fresh samples and records the crisp objective estimate and the variance of
//! the estimator's gradient samples at that iterate (DESIGN.md section 3). A run is a pure
//! function of its configuration: the thread count changes nothing but the speed.

use std::time::Instant;

use thiserror::Error;

use super::observe::Observer;
use super::report::{RunReport, StopReason, TrajectoryRow};
use crate::estimate::{
    self, Engine, EstimateError, EstimatorKind, NonFinite, Problem, Purpose, StreamKey,
};
use crate::family::FamilyError;
use crate::ir::{Mode, Model};
use crate::optim::OptimizerConfig;

/// What to do when the objective or a gradient becomes NaN or infinite.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum OnNonFinite {
    /// End the run, keeping the trajectory so far.
    #[default]
    Stop,
    /// Keep going: skip steps whose gradient is not finite, keep logging.
    Continue,
}

/// The settings of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunConfig {
    pub estimator: EstimatorKind,
    /// Accuracy at iteration 4000 (DSGD) or the fixed accuracy (Fixed).
    pub eta: f64,
    /// DSGD's decay; `None` means `1 / (2 l)` from the nesting depth.
    pub eta_decay: Option<f64>,
    pub iterations: u64,
    pub batch: usize,
    pub optimizer: OptimizerConfig,
    pub seed: u64,
    pub log_every: u64,
    pub log_samples: usize,
    pub on_nonfinite: OnNonFinite,
    /// Worker threads; `None` uses rayon's global pool.
    pub threads: Option<usize>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            estimator: EstimatorKind::Dsgd,
            eta: 0.1,
            eta_decay: None,
            iterations: 10_000,
            batch: 16,
            optimizer: OptimizerConfig::Adam(Default::default()),
            seed: 0,
            log_every: 100,
            log_samples: 1000,
            on_nonfinite: OnNonFinite::Stop,
            threads: None,
        }
    }
}

/// Why a run could not start.
#[derive(Debug, Error)]
pub enum RunError {
    #[error("invalid setting: {0}")]
    Config(String),
    #[error(transparent)]
    Family(#[from] FamilyError),
    #[error(transparent)]
    Estimate(#[from] EstimateError),
    #[error("cannot start worker threads: {0}")]
    Threads(String),
}

impl RunConfig {
    /// Checks the settings, naming the first bad one.
    pub fn validate(&self) -> Result<(), RunError> {
        let bad = |s: String| Err(RunError::Config(s));
        if !(self.eta > 0.0 && self.eta.is_finite()) {
            return bad(format!("eta must be positive and finite, got {}", self.eta));
        }
        if let Some(d) = self.eta_decay.filter(|d| !(*d >= 0.0 && d.is_finite())) {
            return bad(format!(
                "eta decay must be non-negative and finite, got {d}"
            ));
        }
        if self.iterations == 0 {
            return bad("iterations must be at least 1".into());
        }
        if self.batch == 0 {
            return bad("batch must be at least 1".into());
        }
        if self.log_every == 0 {
            return bad("log-every must be at least 1".into());
        }
        if self.log_samples < 2 {
            return bad(format!(
                "log-samples must be at least 2 (variances need two), got {}",
                self.log_samples
            ));
        }
        let lr = self.optimizer.lr();
        if !(lr > 0.0 && lr.is_finite()) {
            return bad(format!(
                "the learning rate must be positive and finite, got {lr}"
            ));
        }
        let power = match self.optimizer {
            OptimizerConfig::Sgd(c) => c.power,
            OptimizerConfig::Adam(_) => 1.0,
        };
        if !(power >= 0.0 && power.is_finite()) {
            return bad(format!(
                "the SGD power must be non-negative and finite, got {}",
                power
            ));
        }
        if self.threads == Some(0) {
            return bad("threads must be at least 1".into());
        }
        Ok(())
    }
}

/// Runs `config` on `model`, reporting to `observers`.
pub fn run(
    model: &Model,
    config: &RunConfig,
    observers: &mut [&mut dyn Observer],
) -> Result<RunReport, RunError> {
    config.validate()?;
    match config.threads {
        Some(n) => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .map_err(|e| RunError::Threads(e.to_string()))?;
            pool.install(|| run_in_pool(model, config, observers))
        }
        None => run_in_pool(model, config, observers),
    }
}

fn run_in_pool(
    model: &Model,
    config: &RunConfig,
    observers: &mut [&mut dyn Observer],
) -> Result<RunReport, RunError> {
    let clock = Instant::now();
    let problem = Problem::new(model)?;
    let decay = config
        .eta_decay
        .unwrap_or_else(|| problem.analysis().default_eta_decay());
    let estimator = estimate::build(config.estimator, &problem, config.eta, Some(decay))?;
    let mut engine = Engine::new(problem, estimator);
    let mut runner = Runner::new(&mut engine, config);
    for o in observers.iter_mut() {
        o.started(config.iterations);
    }
    runner.go(observers);
    let Runner {
        theta,
        trajectory,
        stop,
        message,
        skipped,
        done,
        ..
    } = runner;
    let problem = engine.problem();
    let kind = config.estimator;
    let report = RunReport {
        model: problem.name().to_string(),
        mode: match problem.mode() {
            Mode::Variational => "variational",
            Mode::Objective { .. } => "objective",
        }
        .to_string(),
        estimator: kind.name().to_string(),
        eta: kind.uses_eta().then_some(config.eta),
        eta_decay: (kind == EstimatorKind::Dsgd).then_some(decay),
        optimizer: config.optimizer.name().to_string(),
        lr: config.optimizer.lr(),
        sgd_power: match config.optimizer {
            OptimizerConfig::Sgd(c) => Some(c.power),
            OptimizerConfig::Adam(_) => None,
        },
        batch: config.batch,
        seed: config.seed,
        iterations: done,
        iterations_requested: config.iterations,
        log_every: config.log_every,
        log_samples: config.log_samples,
        final_elbo: trajectory.last().map_or(f64::NAN, |r| r.elbo),
        theta,
        theta_names: problem.family().names().to_vec(),
        stop_reason: stop,
        stop_message: message,
        skipped_steps: skipped,
        trajectory,
        seconds: clock.elapsed().as_secs_f64(),
    };
    for o in observers.iter_mut() {
        o.finished(&report);
    }
    Ok(report)
}

/// The loop's state.
struct Runner<'a> {
    engine: &'a mut Engine,
    config: &'a RunConfig,
    theta: Vec<f64>,
    trajectory: Vec<TrajectoryRow>,
    norms: Vec<f64>,
    stop: StopReason,
    message: Option<String>,
    skipped: u64,
    done: u64,
}

impl<'a> Runner<'a> {
    fn new(engine: &'a mut Engine, config: &'a RunConfig) -> Runner<'a> {
        Runner {
            theta: engine.problem().family().init(),
            engine,
            config,
            trajectory: Vec::new(),
            norms: Vec::new(),
            stop: StopReason::Completed,
            message: None,
            skipped: 0,
            done: 0,
        }
    }

    fn go(&mut self, observers: &mut [&mut dyn Observer]) {
        let cfg = self.config;
        let mut optimizer = cfg.optimizer.build(self.theta.len());
        for k in 0..cfg.iterations {
            if k.is_multiple_of(cfg.log_every) && !self.measure(k, observers) {
                return;
            }
            let step = self.engine.evaluate(
                &self.theta,
                StreamKey::new(cfg.seed, k, Purpose::Step),
                cfg.batch,
                false,
            );
            let problem = match step {
                Err(e) => Some(format!("at iteration {k}: {e}")),
                Ok(()) => self
                    .engine
                    .first_non_finite()
                    .map(|nf| self.describe(k, nf)),
            };
            match problem {
                Some(msg) if cfg.on_nonfinite == OnNonFinite::Stop => {
                    self.fail(msg);
                    return;
                }
                Some(msg) => {
                    self.skipped += 1;
                    self.message.get_or_insert(msg);
                }
                None => optimizer.step(&mut self.theta, self.engine.mean_gradient()),
            }
            self.done = k + 1;
            for o in observers.iter_mut() {
                o.iteration(self.done);
            }
        }
        if self.trajectory.last().is_none_or(|r| r.iter != self.done) {
            self.measure(self.done, observers);
        }
    }

    fn fail(&mut self, msg: String) {
        self.stop = StopReason::NonFinite;
        self.message = Some(msg);
    }

    fn describe(&self, k: u64, nf: NonFinite) -> String {
        match nf {
            // The guide's -log q is finite for finite noise, so a non-finite ELBO sample
            // comes from the model's log-density.
            NonFinite::Value { lane, value } => format!(
                "at iteration {k}: {} is {value} at gradient sample {lane}",
                if self.engine.problem().mode() == Mode::Variational {
                    "the log-density log p(x, z)"
                } else {
                    "the objective"
                }
            ),
            NonFinite::Gradient { component, value } => format!(
                "at iteration {k}: the gradient with respect to {} is {value}",
                self.engine.problem().family().names()[component]
            ),
        }
    }

    /// Takes a measurement row at iteration `k`; false when it is not finite and the run
    /// must stop.
    fn measure(&mut self, k: u64, observers: &mut [&mut dyn Observer]) -> bool {
        let cfg = self.config;
        let n = cfg.log_samples;
        if let Err(e) = self.engine.evaluate(
            &self.theta,
            StreamKey::new(cfg.seed, k, Purpose::Measure),
            n,
            true,
        ) {
            let msg = format!("at iteration {k}: {e}");
            if cfg.on_nonfinite == OnNonFinite::Stop {
                self.fail(msg);
                return false;
            }
            self.message.get_or_insert(msg);
            return true;
        }
        let sign = self.engine.problem().objective_sign();
        let crisp = self.engine.crisp_values();
        let elbo = sign * crisp.iter().sum::<f64>() / n as f64;
        let d = self.engine.problem().dim();
        let g = self.engine.sample_gradients();
        let mut var_sum = 0.0;
        for p in 0..d {
            var_sum += sample_variance((0..n).map(|l| g[l * d + p]));
        }
        let var_component = if d == 0 { 0.0 } else { var_sum / d as f64 };
        self.norms.clear();
        self.norms.extend((0..n).map(|l| {
            g[l * d..(l + 1) * d]
                .iter()
                .map(|x| x * x)
                .sum::<f64>()
                .sqrt()
        }));
        let var_norm = sample_variance(self.norms.iter().copied());
        let eta = self.engine.estimator().semantics(k);
        let row = TrajectoryRow {
            iter: k,
            elbo,
            var_component,
            var_norm,
            eta: match eta {
                crate::ir::Semantics::Smoothed { eta } => Some(eta),
                _ => None,
            },
        };
        for o in observers.iter_mut() {
            o.logged(&row);
        }
        self.trajectory.push(row);
        if !elbo.is_finite() {
            let which = crisp.iter().position(|v| !v.is_finite());
            let msg = match which {
                Some(l) => format!(
                    "at iteration {k}: the objective estimate is {elbo} (f = {} at measurement sample {l})",
                    crisp[l]
                ),
                None => format!("at iteration {k}: the objective estimate is {elbo}"),
            };
            if cfg.on_nonfinite == OnNonFinite::Stop {
                self.fail(msg);
                return false;
            }
            self.message.get_or_insert(msg);
        }
        true
    }
}

/// The sample variance (ddof 1), two-pass for accuracy.
fn sample_variance(xs: impl Iterator<Item = f64> + Clone) -> f64 {
    let (mut n, mut sum) = (0usize, 0.0);
    for x in xs.clone() {
        n += 1;
        sum += x;
    }
    if n < 2 {
        return 0.0;
    }
    let mean = sum / n as f64;
    xs.map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64
}
