//! The loop of one run: the steps between two measurements (on the steps' own threads, with
//! the next measurement beside them), `--eta auto`'s adjustments, and what the loop keeps for
//! the report and the convergence rule.

use std::sync::atomic::{AtomicBool, Ordering};

use super::super::observe::Observer;
use super::super::report::{StopReason, TrajectoryRow};
use super::super::stationarity::Window;
use super::measurement::{Measured, describe, measure};
use crate::estimate::{
    self, Adjustment, AutoEta, Engine, EstimatorKind, GapProbe, Pathwise, Purpose, Schedule,
    StreamKey,
};

use crate::settings::{OnNonFinite, RunConfig};

/// The loop's state.
pub(super) struct Runner<'a> {
    pub(super) engine: &'a mut Engine,
    /// The engine of the measurements.
    pub(super) probe: Engine,
    pub(super) config: &'a RunConfig,
    pub(super) cancel: &'a AtomicBool,
    pub(super) theta: Vec<f64>,
    pub(super) trajectory: Vec<TrajectoryRow>,
    /// The measurements' buffers: per-component variances and per-sample norms.
    pub(super) spread: (Vec<f64>, Vec<f64>),
    /// `--eta auto`'s controller.
    pub(super) auto: Option<AutoEta>,
    /// The accuracy schedule the steps and measurements use (`--eta auto` changes it), so
    /// the measurements' rows record the eta they used.
    pub(super) schedule: Schedule,
    pub(super) stop: StopReason,
    pub(super) message: Option<String>,
    pub(super) skipped: u64,
    pub(super) done: u64,
    /// The steps of the last fifth, for the convergence rule.
    pub(super) window: Window,
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

impl<'a> Runner<'a> {
    pub(super) fn new(
        engine: &'a mut Engine,
        probe: Engine,
        config: &'a RunConfig,
        cancel: &'a AtomicBool,
        schedule: Schedule,
    ) -> Runner<'a> {
        // A subsampled run with row latents steps the shared components at every step and
        // a row's only when it is drawn: the convergence rule tests the shared ones.
        let watched = engine
            .sparse_steps()
            .then(|| engine.problem().shared_components().map(<[u32]>::to_vec))
            .flatten();
        Runner {
            schedule,
            window: Window::watching(config.iterations, engine.problem().dim(), watched),
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
    pub(super) fn go(&mut self, observers: &mut [&mut dyn Observer]) {
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
    /// A later tightening moves the optimum at once: the optimiser is told
    /// ([`crate::optim::Optimizer::objective_changed`]), so a settled DoG steps fully again.
    fn race_eta(&mut self, k: u64, optimizer: &mut dyn crate::optim::Optimizer) {
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
                subsample: cfg.subsample,
            },
            &estimate::race::Start {
                k,
                theta: &self.theta,
                optimizer,
                cancel: self.cancel,
            },
            &candidates,
        );
        let adjustment = auto.raced(k, race.chosen);
        if adjustment == Adjustment::Tightened && k > 0 {
            optimizer.objective_changed();
        }
        if adjustment != Adjustment::Kept || k == 0 {
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
                match engine.touched() {
                    // A subsampled step with row latents: the undrawn rows' components
                    // got no gradient, and are neither stepped nor read here.
                    Some(touched) => optimizer.step_touched(theta, engine.mean_gradient(), touched),
                    None => optimizer.step(theta, engine.mean_gradient()),
                }
                if window.wants(k) {
                    // The answer per component; a dense step reads the optimiser's average
                    // once (a call per component cost 5 % of a small model's steps).
                    let sparse = engine.touched().is_some();
                    let average = if sparse { None } else { optimizer.average() };
                    match average {
                        Some(avg) => window.after(k, engine.mean_gradient(), theta, &|p| avg[p]),
                        None if !sparse => {
                            window.after(k, engine.mean_gradient(), theta, &|p| theta[p])
                        }
                        None => {
                            let answer = |p: usize| optimizer.average_at(p).unwrap_or(theta[p]);
                            window.after(k, engine.mean_gradient(), theta, &answer);
                        }
                    }
                }
            }
        }
        seg.done = k + 1;
    }
    seg
}
