//! One optimisation run: the loop that estimates a gradient, steps, and measures.
//!
//! Every `log_every` iterations (from iteration 0) and at the end, the runner draws
//! `log_samples` fresh samples and records the crisp objective estimate and the variance of
//! the estimator's gradient samples at that iterate (docs/design.md section 3). A run is a pure
//! function of its configuration: the thread count changes nothing but the speed. With more
//! than one thread a measurement runs beside the steps that follow it (it reads only the
//! iterate they start from), and the steps draw their next noise ahead; both are applied in
//! the serial order.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use thiserror::Error;

use super::bias::estimator_bias;
use super::convergence::{RunFacts, assess};
use super::culprit;
use super::observe::Observer;
use super::precise;
use super::report::{NamedValues, ObjectiveKind, RunReport, StopReason, TrajectoryRow};
use super::stationarity::Window;
use super::summary::{guide_moments, latent_summaries, param_values};
use crate::estimate::{
    self, Adjustment, AutoEta, Engine, EstimateError, EstimatorKind, GapProbe, NonFinite, Pathwise,
    Problem, Purpose, Schedule, StreamKey,
};
use crate::family::FamilyError;
use crate::ir::{Mode, Model, Semantics};
use crate::optim::OptimizerConfig;
use crate::settings::{EtaScale, EtaSetting, SettingError};

pub use crate::settings::{OnNonFinite, RunConfig};

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

/// The loop's state.
struct Runner<'a> {
    engine: &'a mut Engine,
    /// The engine of the measurements.
    probe: Engine,
    config: &'a RunConfig,
    cancel: &'a AtomicBool,
    theta: Vec<f64>,
    trajectory: Vec<TrajectoryRow>,
    /// The measurements' buffers: per-component variances and per-sample norms.
    spread: (Vec<f64>, Vec<f64>),
    /// `--eta auto`'s controller.
    auto: Option<AutoEta>,
    /// The accuracy schedule the steps and measurements use (`--eta auto` changes it), so
    /// the measurements' rows record the eta they used.
    schedule: Schedule,
    stop: StopReason,
    message: Option<String>,
    skipped: u64,
    done: u64,
    /// The steps of the last fifth, for the convergence rule.
    window: Window,
}

/// What the steps of one segment (the iterations between two measurements) did.
struct Segment {
    /// Steps taken (the iteration count at the end of the segment).
    done: u64,
    skipped: u64,
    /// The first problem met and skipped (`OnNonFinite::Continue`).
    message: Option<String>,
    /// The problem that ended the run (`OnNonFinite::Stop`).
    failed: Option<String>,
}

/// A measurement: its row and, when the objective estimate is not finite, why; or the
/// message of a family that cannot be evaluated.
type Measured = Result<(TrajectoryRow, Option<String>), String>;

impl<'a> Runner<'a> {
    fn new(
        engine: &'a mut Engine,
        probe: Engine,
        config: &'a RunConfig,
        cancel: &'a AtomicBool,
        schedule: Schedule,
    ) -> Runner<'a> {
        Runner {
            schedule,
            window: Window::new(config.iterations, engine.problem().dim()),
            theta: engine.problem().family().init(),
            engine,
            probe,
            config,
            cancel,
            trajectory: Vec::new(),
            spread: (Vec::new(), Vec::new()),
            auto: None,
            stop: StopReason::Completed,
            message: None,
            skipped: 0,
            done: 0,
        }
    }

    /// Segment by segment: the measurement at the segment's first iteration runs beside its
    /// steps (it reads the iterate they start from, the steps do not read it), then both
    /// are applied in the serial order, observers included. The report is the one of
    /// measuring and stepping one after the other, whatever the number of threads.
    ///
    /// An optimiser that averages its iterates ([`crate::optim::Optimizer::average`]) is
    /// measured, and reported at the end, at the average.
    fn go(&mut self, observers: &mut [&mut dyn Observer]) {
        let cfg = self.config;
        let mut optimizer = cfg.optimizer.build(self.theta.len());
        let measured_last = self.segments(optimizer.as_mut(), observers);
        if measured_last {
            return;
        }
        if let Some(average) = optimizer.average() {
            self.theta = average.to_vec();
        }
        if self.stop == StopReason::Completed
            && !self.cancel.load(Ordering::Relaxed)
            && self.trajectory.last().is_none_or(|r| r.iter != self.done)
        {
            let measured = measure(
                &mut self.probe,
                cfg,
                self.schedule,
                &self.theta,
                self.done,
                &mut self.spread,
                self.cancel,
            );
            // A final measurement that Ctrl-C stopped is not recorded.
            if let Some(measured) = measured {
                self.record(measured, observers);
            }
        }
    }

    /// The segments; true when the run ended at a measurement, whose point `theta` then is.
    fn segments(
        &mut self,
        optimizer: &mut dyn crate::optim::Optimizer,
        observers: &mut [&mut dyn Observer],
    ) -> bool {
        let cfg = self.config;
        let mut k = 0;
        while k < cfg.iterations {
            if self.cancel.load(Ordering::Relaxed) {
                return false;
            }
            self.race_eta(k, optimizer);
            let end = (k + cfg.log_every).min(cfg.iterations);
            let start_theta = self.theta.clone();
            let shown = optimizer
                .average()
                .map_or_else(|| start_theta.clone(), <[f64]>::to_vec);
            let Runner {
                engine,
                probe,
                theta,
                spread,
                cancel,
                window,
                ..
            } = self;
            let (segment, measured) = rayon::join(
                || steps(engine, cfg, optimizer, theta, k..end, cancel, window),
                || measure(probe, cfg, self.schedule, &shown, k, spread, cancel),
            );
            // Ctrl-C during the measurement (seconds over a plate of many rows): stop here.
            let Some(measured) = measured else {
                self.done = segment.done;
                return false;
            };
            self.adapt_eta(&measured);
            if !self.record(measured, observers) {
                // The run ended at the measurement: the segment's steps never happened.
                self.theta = shown;
                return true;
            }
            self.skipped += segment.skipped;
            if let Some(msg) = segment.message {
                self.message.get_or_insert(msg);
            }
            for done in k + 1..=segment.done {
                for o in observers.iter_mut() {
                    o.iteration(done);
                }
            }
            self.done = segment.done;
            if let Some(msg) = segment.failed {
                self.fail(msg);
                return false;
            }
            k = end;
        }
        false
    }

    /// `--eta auto`: the measurement's smoothing gap may call a tightening check at the next
    /// segment (this segment's steps ran beside the measurement).
    fn adapt_eta(&mut self, measured: &Measured) {
        let (Some(auto), Ok((row, _))) = (self.auto.as_mut(), measured) else {
            return;
        };
        let (Some(smoothed), Some(gap), Some(gap_se)) = (row.smoothed, row.gap, row.gap_se) else {
            return;
        };
        auto.observe(
            row.iter,
            &GapProbe {
                // Rows are in the user's sense (`minimize E` logs `E`); progress is upwards.
                smoothed: self.engine.problem().objective_sign() * smoothed,
                gap,
                gap_se,
                value_se: row.value_se,
            },
        );
    }

    /// `--eta auto`: when a decision is due before iteration `k` (the starting race at 0, a
    /// tightening check later: `estimate::race::race` runs either), makes it from the current
    /// state and sets the schedule of the steps and measurements that follow to its choice.
    fn race_eta(&mut self, k: u64, optimizer: &dyn crate::optim::Optimizer) {
        let Some(auto) = self.auto.as_mut() else {
            return;
        };
        let Some(candidates) = auto.race_at(k) else {
            return;
        };
        let cfg = self.config;
        let race = estimate::race::race(
            self.engine.problem(),
            &estimate::race::RaceConfig {
                length: auto.race_length(),
                batch: cfg.batch,
                samples: cfg.log_samples,
                decay: auto.decay(),
                seed: cfg.seed,
            },
            &estimate::race::Start {
                k,
                theta: &self.theta,
                optimizer,
                cancel: self.cancel,
            },
            &candidates,
        );
        if auto.raced(k, race.chosen) != Adjustment::Kept || k == 0 {
            self.schedule = auto.schedule();
            for e in [&mut *self.engine, &mut self.probe] {
                e.set_estimator(Box::new(Pathwise::new(EstimatorKind::Dsgd, self.schedule)));
            }
        }
    }

    fn fail(&mut self, msg: String) {
        self.stop = StopReason::NonFinite;
        self.message = Some(msg);
    }

    /// Applies a measurement; false when the run must stop there.
    fn record(&mut self, measured: Measured, observers: &mut [&mut dyn Observer]) -> bool {
        let stop = self.config.on_nonfinite == OnNonFinite::Stop;
        let problem = match measured {
            Err(msg) => Some(msg),
            Ok((row, problem)) => {
                for o in observers.iter_mut() {
                    o.logged(&row);
                }
                self.trajectory.push(row);
                problem
            }
        };
        let Some(msg) = problem else {
            return true;
        };
        if stop {
            self.fail(msg);
            return false;
        }
        self.message.get_or_insert(msg);
        true
    }
}

/// The optimisation steps `range`, from `theta` (updated in place).
fn steps(
    engine: &mut Engine,
    cfg: &RunConfig,
    optimizer: &mut dyn crate::optim::Optimizer,
    theta: &mut [f64],
    range: std::ops::Range<u64>,
    cancel: &AtomicBool,
    window: &mut Window,
) -> Segment {
    let mut seg = Segment {
        done: range.start,
        skipped: 0,
        message: None,
        failed: None,
    };
    for k in range {
        if cancel.load(Ordering::Relaxed) {
            return seg;
        }
        let step = engine.step_then_draw(
            theta,
            StreamKey::new(cfg.seed, k, Purpose::Step),
            cfg.batch,
            StreamKey::new(cfg.seed, k + 1, Purpose::Step),
        );
        let stop = cfg.on_nonfinite == OnNonFinite::Stop;
        // Only the first problem is reported, so only it is explained (which costs a sweep
        // of the reference interpreter).
        let wanted = stop || seg.message.is_none();
        let problem = match step {
            Err(e) => Some(format!("at iteration {k}: {e}")),
            Ok(()) => engine.first_non_finite().map(|nf| {
                if wanted {
                    let key = StreamKey::new(cfg.seed, k, Purpose::Step);
                    describe(engine, k, nf, key, theta)
                } else {
                    String::new()
                }
            }),
        };
        match problem {
            Some(msg) if stop => {
                seg.failed = Some(msg);
                return seg;
            }
            Some(msg) => {
                seg.skipped += 1;
                seg.message.get_or_insert(msg);
            }
            None => {
                window.before(k, theta);
                optimizer.step(theta, engine.mean_gradient());
                let answer = optimizer.average().unwrap_or(theta);
                window.after(k, engine.mean_gradient(), theta, answer);
            }
        }
        seg.done = k + 1;
    }
    seg
}

/// What went non-finite at iteration `k`, and (when the reference interpreter can tell) the
/// statement whose term did, at the first sample that shows it.
fn describe(engine: &Engine, k: u64, nf: NonFinite, key: StreamKey, theta: &[f64]) -> String {
    let (what, lane) = match nf {
        // The guide's -log q is finite for finite noise, so a non-finite ELBO sample
        // comes from the model's log-density.
        NonFinite::Value { lane, value } => (
            format!(
                "at iteration {k}: {} is {value} at gradient sample {lane}",
                if engine.problem().mode() == Mode::Variational {
                    "the log-density log p(x, z)"
                } else {
                    "the objective"
                }
            ),
            Some(lane),
        ),
        NonFinite::Gradient { component, value } => (
            format!(
                "at iteration {k}: the gradient with respect to {} is {value}",
                engine.problem().family().names()[component]
            ),
            (0..engine.values().len()).find(|&l| !engine.sample_gradient(l, component).is_finite()),
        ),
    };
    let semantics = engine.estimator().semantics(k);
    match lane.and_then(|l| {
        culprit::explain(
            engine.problem(),
            engine.family_state(),
            theta,
            key,
            l,
            semantics,
        )
    }) {
        Some(why) => format!("{what}; {why}"),
        None => what,
    }
}

/// The measurement row at iteration `k` and `theta`.
fn measure(
    engine: &mut Engine,
    cfg: &RunConfig,
    schedule: Schedule,
    theta: &[f64],
    k: u64,
    scratch: &mut (Vec<f64>, Vec<f64>),
    cancel: &AtomicBool,
) -> Option<Measured> {
    let n = cfg.log_samples;
    match engine.evaluate_or_cancel(
        theta,
        StreamKey::new(cfg.seed, k, Purpose::Measure),
        n,
        true,
        cancel,
    ) {
        Err(e) => return Some(Err(format!("at iteration {k}: {e}"))),
        Ok(false) => return None,
        Ok(true) => {}
    }
    let sign = engine.problem().objective_sign();
    let crisp = engine.crisp_values();
    let elbo = sign * crisp.iter().sum::<f64>() / n as f64;
    // Samples that share a chunk's rows are not independent: clusters of a chunk then.
    let cluster = if engine.rows_per_chunk() {
        crate::eval::CHUNK
    } else {
        1
    };
    let value_se = mean_se(crisp, cluster);
    let d = engine.problem().dim();
    let (variances, norms) = scratch;
    engine.gradient_spread(variances, norms);
    let var_sum = variances.iter().fold(0.0, |acc, v| acc + v);
    let var_component = if d == 0 { 0.0 } else { var_sum / d as f64 };
    let var_norm = sample_variance(norms.iter().copied());
    let eta = schedule.eta(k);
    let gap = eta.map(|_| {
        let diffs = engine
            .values()
            .iter()
            .zip(crisp)
            .map(|(s, c)| sign * (s - c));
        let gap = diffs.clone().sum::<f64>() / n as f64;
        let diffs: Vec<f64> = diffs.collect();
        (gap, mean_se(&diffs, cluster))
    });
    let family = engine.problem().family();
    let (latent_loc, latent_scale) = guide_moments(family, theta);
    let row = TrajectoryRow {
        iter: k,
        value: elbo,
        value_se,
        var_component,
        var_norm,
        eta,
        smoothed: gap.map(|(g, _)| elbo + g),
        gap: gap.map(|(g, _)| g),
        gap_se: gap.map(|(_, se)| se),
        params: theta[..family.model_param_count()].to_vec(),
        latent_loc,
        latent_scale,
    };
    let problem = (!elbo.is_finite()).then(|| match crisp.iter().position(|v| !v.is_finite()) {
        Some(l) => {
            let what = format!(
                "at iteration {k}: the objective estimate is {elbo} (f = {} at measurement sample {l})",
                crisp[l]
            );
            let key = StreamKey::new(cfg.seed, k, Purpose::Measure);
            let state = engine.family_state();
            match culprit::explain(engine.problem(), state, theta, key, l, Semantics::Crisp) {
                Some(why) => format!("{what}; {why}"),
                None => what,
            }
        }
        None => format!("at iteration {k}: the objective estimate is {elbo}"),
    });
    Some(Ok((row, problem)))
}

/// Why the final answer is still that of the smoothed problem, when the last measurement's
/// smoothing gap matters: it exceeds [`GAP_NOISE_FACTOR`] times its noise (the larger of the
/// gap's own standard error and the objective estimate's, so that a gap nobody could see in
/// the reported objective does not warn) and [`GAP_NEGLIGIBLE`] of the objective's size
/// `1 + |objective|` (a gap of a few parts in a billion, resolved only because the objective
/// is nearly exact, moves no answer).
fn smoothing_warning(row: &TrajectoryRow) -> Option<String> {
    let (eta, gap, se) = (row.eta?, row.gap?, row.gap_se?);
    let noise = se.max(row.value_se);
    let matters = gap.abs() > GAP_NOISE_FACTOR * noise
        && gap.abs() > GAP_NEGLIGIBLE * (1.0 + row.value.abs());
    matters.then(|| {
        format!(
            "at the end (eta {eta:.3e}) the smoothed objective differs from the original by \
             {gap:.4} (standard error {se:.2e}; objective's {:.2e}): the result is that of the \
             smoothed problem, not yet of the original one; tighten eta further (more \
             iterations, a smaller --eta, or --eta auto)",
            row.value_se
        )
    })
}

/// How many standard errors a final smoothing gap must exceed to be reported.
pub const GAP_NOISE_FACTOR: f64 = 2.0;

/// The fraction of `1 + |objective|` below which a final smoothing gap is negligible,
/// however well resolved.
pub const GAP_NEGLIGIBLE: f64 = 1e-6;

/// The sample variance (ddof 1), two-pass for accuracy.
/// The standard error of the mean of `xs`, whose consecutive runs of `cluster` values are
/// the independent units (1: every value): the cluster-robust formula
/// `sqrt(G / (G - 1) * sum_g (S_g - n_g mean)^2) / n`, which for clusters of one is the
/// sample standard deviation over `sqrt(n)`.
fn mean_se(xs: &[f64], cluster: usize) -> f64 {
    let n = xs.len();
    if cluster <= 1 {
        return (sample_variance(xs.iter().copied()) / n as f64).sqrt();
    }
    let groups = n.div_ceil(cluster);
    if groups < 2 {
        return 0.0;
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    let ss: f64 = xs
        .chunks(cluster)
        .map(|g| {
            let d = g.iter().sum::<f64>() - g.len() as f64 * mean;
            d * d
        })
        .sum();
    (groups as f64 / (groups - 1) as f64 * ss).sqrt() / n as f64
}

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

#[cfg(test)]
mod tests {
    use super::mean_se;

    #[test]
    fn clusters_of_one_give_the_plain_standard_error_and_larger_ones_the_clustered() {
        let xs = [1.0, 3.0, 2.0, 6.0, 4.0, 8.0];
        // Variance 34 / 5 over 6 values.
        let plain = (6.8f64 / 6.0).sqrt();
        assert!((mean_se(&xs, 1) - plain).abs() < 1e-12);
        // Clusters of two: sums 4, 8, 12 around 2 * 4 = 8: (16 + 0 + 16) * 3/2 = 48.
        assert!((mean_se(&xs, 2) - 48f64.sqrt() / 6.0).abs() < 1e-12);
        // One cluster has no spread to measure.
        assert_eq!(mean_se(&xs, 6), 0.0);
        // A last, shorter cluster: sums 16 and 8 around 5 * 4 and 1 * 4: (16 + 16) * 2 = 64.
        let want = 64f64.sqrt() / 6.0;
        let got = mean_se(&xs, 5);
        assert!((got - want).abs() < 1e-12, "{got} {want}");
    }
}
