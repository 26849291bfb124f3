//! The cost of an estimator on a model: gradient samples per second, single-threaded unless
//! asked otherwise, timed over whole batches after a warm-up, as the median of several
//! repeats (docs/design.md section 3).
//!
//! Used by `dsgd bench` and by Table 2 of `dsgd reproduce` (cost = 1 / samples per second).
//! The batches are evaluated at the family's initial `theta`; only the clock is read, nothing
//! is printed.

use std::time::Instant;

use serde::Serialize;

use super::run::RunError;
use crate::estimate::{self, Engine, EstimatorKind, Problem, Purpose, StreamKey};
use crate::eval::vmath::KernelSet;

/// The widest kernels this process's sweeps run (`baseline`, `portable`, `avx2`, `avx512`),
/// which the costs depend on: `baseline` is the portable build without FMA (x86-64 CPUs
/// without it, or `DSGD_KERNELS=baseline`).
pub fn kernels() -> &'static str {
    match KernelSet::best() {
        KernelSet::Portable if cfg!(target_arch = "x86_64") && !crate::cpu::fma() => "baseline",
        KernelSet::Portable => "portable",
        KernelSet::Avx2 | KernelSet::Avx2Jit => "avx2",
        KernelSet::Avx512 | KernelSet::Jit => "avx512",
    }
}

/// How long to time.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct CostConfig {
    /// Gradient samples per timed batch.
    pub batch: usize,
    /// Time spent evaluating batches before the clock starts (and at least
    /// [`crate::eval::KERNEL_CHOICE_SWEEPS`] batches: until the engine has chosen the build
    /// of its forward sweep).
    pub warmup_seconds: f64,
    /// Timed repeats; the median is reported.
    pub repeats: usize,
    /// Length of one repeat (at least one batch).
    pub repeat_seconds: f64,
    /// Worker threads the batches run on (the paper's costs: 1).
    pub threads: usize,
}

/// About 0.1 s per estimator: the full reproduction times 35 model-estimator pairs on one
/// thread while the other core idles, so this is a visible share of its wall time (it was
/// 0.21 s per pair, 9 of the reproduction's 80 s). The claims that read costs compare
/// estimators whose work differs by far more than the spread of a median of 7 interleaved
/// repeats: on a quiet machine the repeats of one estimator agree to a few per cent, and
/// the median ignores the odd repeat that another process slowed by a third. A repeat of
/// 0.012 s is still hundreds of batches even for LYY18 on `cheating`. The warm-up has to
/// fault in the engine's buffers and fill the caches, which a few batches do, and let the
/// engine time the builds of its forward sweep, which takes a fixed number of batches
/// whatever the seconds asked for (on the 10,000-student survey, 0.05 s was not enough).
impl Default for CostConfig {
    fn default() -> Self {
        CostConfig {
            batch: 16,
            warmup_seconds: 0.005,
            repeats: 7,
            repeat_seconds: 0.012,
            threads: 1,
        }
    }
}

/// One cost measurement.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cost {
    /// The estimator's name.
    pub estimator: String,
    /// The eta the estimator smoothed with (DSGD's eta_4000, Fixed's constant), if any.
    pub eta: Option<f64>,
    /// Gradient samples per step.
    pub batch: usize,
    /// Median over repeats.
    pub samples_per_second: f64,
    /// Slowest and fastest repeat.
    pub min: f64,
    /// The fastest repeat's samples per second.
    pub max: f64,
    /// Every repeat's samples per second, in order.
    pub repeats: Vec<f64>,
}

impl Cost {
    /// Seconds per gradient sample (the paper's cost).
    pub fn seconds_per_sample(&self) -> f64 {
        1.0 / self.samples_per_second
    }

    /// The cost of `kind` from its repeats' samples per second (the median, the extremes).
    fn of_repeats(kind: EstimatorKind, eta: f64, batch: usize, repeats: Vec<f64>) -> Cost {
        let mut sorted = repeats.clone();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            0.5 * (sorted[n / 2 - 1] + sorted[n / 2])
        };
        Cost {
            estimator: kind.name().to_string(),
            eta: kind.uses_eta().then_some(eta),
            batch,
            samples_per_second: median,
            min: sorted[0],
            max: sorted[n - 1],
            repeats,
        }
    }
}

/// Times several estimators on `problem` on `config.threads` threads, interleaving their
/// repeats (repeat 1 of each, then repeat 2 of each, ...) so that a change in the machine's
/// load during the measurement affects them alike and their ratios stay fair. DSGD is timed
/// at iteration 4000, where its eta is `eta`; the per-iteration cost does not depend on the
/// iteration.
pub fn measure_interleaved(
    problem: &Problem,
    kinds: &[EstimatorKind],
    eta: f64,
    decay: Option<f64>,
    config: &CostConfig,
) -> Result<Vec<Cost>, RunError> {
    if config.batch == 0 || config.repeats == 0 || config.threads == 0 {
        return Err(RunError::Config(
            "the timed batch, the number of repeats and the threads must be at least 1".into(),
        ));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(config.threads)
        .build()
        .map_err(|e| RunError::Threads(e.to_string()))?;
    pool.install(|| {
        let mut timed = timed_engines(problem, kinds, eta, decay)?;
        let repeats = time_interleaved(&mut timed, config)?;
        Ok(kinds
            .iter()
            .zip(repeats)
            .map(|(&kind, repeats)| Cost::of_repeats(kind, eta, config.batch, repeats))
            .collect())
    })
}

/// An engine being timed, with its own iteration counter.
struct Timed {
    engine: Engine,
    theta: Vec<f64>,
    k: u64,
}

impl Timed {
    /// Samples per second over batches for at least `seconds` and at least `min_batches`
    /// batches (and at least one).
    fn time(&mut self, seconds: f64, batch: usize, min_batches: u64) -> Result<f64, RunError> {
        let clock = Instant::now();
        let mut n = 0u64;
        loop {
            self.k += 1;
            self.engine
                .step(&self.theta, StreamKey::new(0, self.k, Purpose::Step), batch)?;
            n += 1;
            let t = clock.elapsed().as_secs_f64();
            if t >= seconds && n >= min_batches {
                return Ok((n * batch as u64) as f64 / t.max(1e-12));
            }
        }
    }
}

/// One engine per estimator, at iteration 4000, all on one compiled problem (as a run's
/// engines share one: its tape, and the machine code compiled from it, are made once).
fn timed_engines(
    problem: &Problem,
    kinds: &[EstimatorKind],
    eta: f64,
    decay: Option<f64>,
) -> Result<Vec<Timed>, RunError> {
    kinds
        .iter()
        .map(|&kind| {
            let estimator = estimate::build(kind, problem, eta, decay)?;
            Ok(Timed {
                engine: Engine::new(problem.clone(), estimator),
                theta: problem.family().init(),
                k: 4000,
            })
        })
        .collect()
}

/// Each engine's samples per second in `config.repeats` repeats, interleaved, after a
/// warm-up.
fn time_interleaved(timed: &mut [Timed], config: &CostConfig) -> Result<Vec<Vec<f64>>, RunError> {
    let mut repeats = vec![Vec::with_capacity(config.repeats); timed.len()];
    // Until every engine has chosen the build of its forward sweep (each batch is at
    // least one chunk): on a large model the trials of the slower builds would otherwise
    // fall into the first timed repeats.
    let choice = u64::from(crate::eval::KERNEL_CHOICE_SWEEPS);
    for t in timed.iter_mut() {
        t.time(config.warmup_seconds, config.batch, choice)?;
    }
    for _ in 0..config.repeats {
        for (t, r) in timed.iter_mut().zip(&mut repeats) {
            r.push(t.time(config.repeat_seconds, config.batch, 1)?);
        }
    }
    Ok(repeats)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warm_up_runs_until_the_kernel_choice_is_made_however_short_its_seconds() {
        let model = crate::models::builtin("walk").unwrap().unwrap();
        let problem = Problem::new(&model).unwrap();
        let estimator = estimate::build(EstimatorKind::Reparam, &problem, 0.1, None).unwrap();
        let theta = problem.family().init();
        let mut timed = Timed {
            engine: Engine::new(problem, estimator),
            theta,
            k: 0,
        };
        let choice = u64::from(crate::eval::KERNEL_CHOICE_SWEEPS);
        timed.time(0.0, 16, choice).unwrap();
        assert_eq!(timed.k, choice);
        // A timed repeat of no seconds is one batch.
        timed.time(0.0, 16, 1).unwrap();
        assert_eq!(timed.k, choice + 1);
    }
}
