//! The precise final value: the crisp objective at one parameter vector, estimated with as
//! many fresh samples as a stated standard error needs.
//!
//! The paper's final value is the mean of 1,000 samples. Where a rare event costs a lot (a
//! temperature that crosses a threshold scores about -5e5 on `temperature`), 1,000 samples
//! usually miss it, and the short measurement flatters guides that make the event more
//! likely. This measurement keeps drawing until the standard error is at most
//! [`PreciseConfig::rel_se`] of `|value|`, between a floor and a cap of samples.
//!
//! Forward-only (crisp values, no gradients), in blocks of [`BLOCK`] samples evaluated in
//! parallel; sample `l` always draws lane `l` of the same key, each block is summarised
//! serially and the blocks are combined in order, so the result is a pure function of
//! `(problem, theta, seed, iteration, config)`, whatever the number of threads.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;
use serde::Serialize;

use crate::estimate::{Problem, Purpose, Scratch, StreamKey};
use crate::eval::CHUNK;
use crate::family::FamilyError;

/// The random streams of precise measurements (their own purpose tag, so they share no
/// numbers with the steps or the 1,000-sample measurements).
pub const PRECISE_PURPOSE: Purpose = Purpose::Other(0x5052);

/// Samples per parallel task; the sample counts are multiples of it.
pub const BLOCK: usize = 4096;

pub use crate::settings::PreciseConfig;

/// The objective at the final parameters, precisely: mean, its standard error, samples.
#[derive(Copy, Clone, Debug, PartialEq, Serialize)]
pub struct PreciseValue {
    /// The mean crisp objective (the ELBO, or in objective mode the user's `E`).
    pub value: f64,
    /// The standard error of `value` (sample standard deviation / sqrt(samples)).
    pub se: f64,
    /// How many fresh samples were drawn (a multiple of the block size).
    pub samples: usize,
}

impl PreciseValue {
    /// The standard deviation of one sample.
    pub fn sample_sd(&self) -> f64 {
        self.se * (self.samples as f64).sqrt()
    }
}

/// Count, mean and sum of squared deviations of some samples (Chan et al.'s combination).
#[derive(Copy, Clone, Debug, Default)]
struct Moments {
    n: f64,
    mean: f64,
    m2: f64,
}

impl Moments {
    fn of(values: &[f64]) -> Moments {
        let n = values.len() as f64;
        if values.is_empty() {
            return Moments::default();
        }
        let mean = values.iter().sum::<f64>() / n;
        let m2 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
        Moments { n, mean, m2 }
    }

    fn merge(self, o: Moments) -> Moments {
        if o.n == 0.0 {
            return self;
        }
        if self.n == 0.0 {
            return o;
        }
        let n = self.n + o.n;
        let delta = o.mean - self.mean;
        Moments {
            n,
            mean: self.mean + delta * o.n / n,
            m2: self.m2 + o.m2 + delta * delta * self.n * o.n / n,
        }
    }

    fn se(&self) -> f64 {
        if self.n < 2.0 {
            return f64::INFINITY;
        }
        (self.m2 / (self.n - 1.0) / self.n).sqrt()
    }
}

/// The crisp objective of `problem` at `theta`, from the streams of `(seed, iteration)`,
/// drawn until `config` is satisfied. Stops at the first block with a non-finite value
/// (the value is then not finite). Fails only when `theta` is not a valid family point.
pub fn measure(
    problem: &Problem,
    theta: &[f64],
    seed: u64,
    iteration: u64,
    config: &PreciseConfig,
) -> Result<PreciseValue, FamilyError> {
    measure_cancellable(
        problem,
        theta,
        seed,
        iteration,
        config,
        &AtomicBool::new(false),
    )
}

/// [`measure`] that stops drawing once `cancel` rises (each block of [`BLOCK`] samples
/// reads it first); the value is then that of the blocks drawn, and the caller discards it.
pub fn measure_cancellable(
    problem: &Problem,
    theta: &[f64],
    seed: u64,
    iteration: u64,
    config: &PreciseConfig,
    cancel: &AtomicBool,
) -> Result<PreciseValue, FamilyError> {
    let mut state = problem.family().state();
    state.update(problem.family(), theta)?;
    let key = StreamKey::new(seed, iteration, PRECISE_PURPOSE);
    let threads = rayon::current_num_threads().max(1);
    let scratch: Vec<Mutex<(Scratch, Vec<f64>)>> = (0..threads)
        .map(|_| Mutex::new((problem.scratch(), vec![0.0; BLOCK])))
        .collect();
    let block_moments = |b: usize| -> Moments {
        if cancel.load(Ordering::Relaxed) {
            return Moments::default();
        }
        let slot = rayon::current_thread_index().unwrap_or(0) % scratch.len();
        let mut guard = scratch[slot].lock().unwrap_or_else(|e| e.into_inner());
        let (sc, values) = &mut *guard;
        for c in 0..BLOCK / CHUNK {
            let first = b * BLOCK + c * CHUNK;
            problem.draw(key, first, CHUNK, sc);
            problem.crisp_values(&state, theta, sc, &mut values[c * CHUNK..(c + 1) * CHUNK]);
        }
        Moments::of(values)
    };
    let blocks_for = |samples: usize| samples.div_ceil(BLOCK).max(1);
    let max_blocks = blocks_for(config.max_samples);
    let mut target = blocks_for(config.min_samples).min(max_blocks);
    let mut done = 0;
    let mut total = Moments::default();
    loop {
        let parts: Vec<Moments> = (done..target)
            .into_par_iter()
            .with_max_len(1)
            .map(block_moments)
            .collect();
        total = parts.into_iter().fold(total, Moments::merge);
        done = target;
        let (mean, se) = (total.mean, total.se());
        let goal = config.rel_se * mean.abs();
        let cancelled = cancel.load(Ordering::Relaxed);
        if cancelled || !mean.is_finite() || !se.is_finite() || se <= goal || done >= max_blocks {
            break;
        }
        // The samples that would bring the standard error to the goal, with a margin.
        let sd = se * total.n.sqrt();
        let needed = (sd / goal).powi(2) * 1.2;
        let needed = if needed.is_finite() {
            blocks_for(needed.min(usize::MAX as f64 / 2.0) as usize)
        } else {
            max_blocks
        };
        target = needed.clamp(done + 1, max_blocks);
    }
    let sign = problem.objective_sign();
    Ok(PreciseValue {
        value: sign * total.mean,
        se: total.se(),
        samples: total.n as usize,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_moments_match_one_pass() {
        let xs: Vec<f64> = (0..1000)
            .map(|i| ((i * 37) % 101) as f64 - 3.5e5 * f64::from(i == 500))
            .collect();
        let whole = Moments::of(&xs);
        let parts = xs
            .chunks(77)
            .map(Moments::of)
            .fold(Moments::default(), Moments::merge);
        assert_eq!(whole.n, parts.n);
        assert!((whole.mean - parts.mean).abs() < 1e-9 * whole.mean.abs());
        assert!((whole.m2 - parts.m2).abs() < 1e-9 * whole.m2);
    }

    #[test]
    fn bad_settings_are_named() {
        let bad = PreciseConfig {
            rel_se: 0.0,
            ..PreciseConfig::default()
        };
        assert_eq!(bad.validate().unwrap_err().option(), "precise_rel_se");
        let bad = PreciseConfig {
            min_samples: 10,
            max_samples: 5,
            ..PreciseConfig::default()
        };
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("must be at least precise_min_samples"), "{e}");
        assert!(PreciseConfig::default().validate().is_ok());
    }
}
