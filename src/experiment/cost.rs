//! The cost of an estimator on a model: gradient samples per second, single-threaded, timed
//! over whole batches after a warm-up, as the median of several repeats (DESIGN.md section 3).
//!
//! Used by `dsgd bench` and by Table 2 of `dsgd reproduce` (cost = 1 / samples per second).
//! The batches are evaluated at the family's initial `theta`; only the clock is read, nothing
//! is printed.

use std::time::Instant;

use serde::Serialize;

use super::run::RunError;
use crate::estimate::{self, Engine, EstimatorKind, Problem, Purpose, StreamKey};
use crate::ir::Model;

/// How long to time.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct CostConfig {
    /// Gradient samples per timed batch.
    pub batch: usize,
    /// Time spent evaluating batches before the clock starts (at least one batch).
    pub warmup_seconds: f64,
    /// Timed repeats; the median is reported.
    pub repeats: usize,
    /// Length of one repeat (at least one batch).
    pub repeat_seconds: f64,
}

impl Default for CostConfig {
    fn default() -> Self {
        CostConfig {
            batch: 16,
            warmup_seconds: 0.2,
            repeats: 7,
            repeat_seconds: 0.2,
        }
    }
}

/// One cost measurement.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cost {
    pub estimator: String,
    /// The eta the estimator smoothed with (DSGD's eta_4000, Fixed's constant), if any.
    pub eta: Option<f64>,
    pub batch: usize,
    /// Median over repeats.
    pub samples_per_second: f64,
    /// Slowest and fastest repeat.
    pub min: f64,
    pub max: f64,
    /// Every repeat's samples per second, in order.
    pub repeats: Vec<f64>,
}

impl Cost {
    /// Seconds per gradient sample (the paper's cost).
    pub fn seconds_per_sample(&self) -> f64 {
        1.0 / self.samples_per_second
    }
}

/// Times `kind` on `model` on one thread. DSGD is timed at iteration 4000, where its eta is
/// `eta`; the per-iteration cost does not depend on the iteration.
pub fn measure(
    model: &Model,
    kind: EstimatorKind,
    eta: f64,
    decay: Option<f64>,
    config: &CostConfig,
) -> Result<Cost, RunError> {
    if config.batch == 0 || config.repeats == 0 {
        return Err(RunError::Config(
            "the timed batch and the number of repeats must be at least 1".into(),
        ));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .map_err(|e| RunError::Threads(e.to_string()))?;
    pool.install(|| measure_here(model, kind, eta, decay, config))
}

fn measure_here(
    model: &Model,
    kind: EstimatorKind,
    eta: f64,
    decay: Option<f64>,
    config: &CostConfig,
) -> Result<Cost, RunError> {
    let problem = Problem::new(model)?;
    let estimator = estimate::build(kind, &problem, eta, decay)?;
    let theta = problem.family().init();
    let mut engine = Engine::new(problem, estimator);
    let mut k = 4000u64;
    let mut batch = |engine: &mut Engine| -> Result<(), RunError> {
        k += 1;
        engine.evaluate(
            &theta,
            StreamKey::new(0, k, Purpose::Step),
            config.batch,
            false,
        )?;
        Ok(())
    };
    let timed = |engine: &mut Engine,
                 seconds: f64,
                 batch: &mut dyn FnMut(&mut Engine) -> Result<(), RunError>|
     -> Result<f64, RunError> {
        let clock = Instant::now();
        let mut n = 0u64;
        loop {
            batch(engine)?;
            n += 1;
            let t = clock.elapsed().as_secs_f64();
            if t >= seconds {
                return Ok((n * config.batch as u64) as f64 / t.max(1e-12));
            }
        }
    };
    timed(&mut engine, config.warmup_seconds, &mut batch)?;
    let mut repeats = Vec::with_capacity(config.repeats);
    for _ in 0..config.repeats {
        repeats.push(timed(&mut engine, config.repeat_seconds, &mut batch)?);
    }
    let mut sorted = repeats.clone();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        0.5 * (sorted[n / 2 - 1] + sorted[n / 2])
    };
    Ok(Cost {
        estimator: kind.name().to_string(),
        eta: kind.uses_eta().then_some(eta),
        batch: config.batch,
        samples_per_second: median,
        min: sorted[0],
        max: sorted[n - 1],
        repeats,
    })
}
