//! The paper's protocol for one run of a built-in model: its Adam step and DSGD decay, and
//! the sizes of its full sweep. The reproduction (`reproduction.rs`) and the comparison of
//! a built-in model (`compare.rs`) both start from [`paper_run`].

use super::precise::PreciseConfig;
use crate::optim::{AdamConfig, OptimizerConfig};
use crate::settings::{EtaScale, OnNonFinite, RunConfig};

/// Iterations of each of the paper's runs.
pub const ITERATIONS: u64 = 10_000;

/// Gradient samples per step.
pub const BATCH: usize = 16;

/// Iterations between logged rows.
pub const LOG_EVERY: u64 = 100;

/// Samples of each logged measurement.
pub const LOG_SAMPLES: usize = 1000;

/// The eta whose DSGD and Fixed runs give Table 2's variances.
pub const VARIANCE_ETA: f64 = 0.1;

/// How precisely each run's final value is measured beyond the paper's 1,000 samples.
pub const PRECISE: PreciseConfig = PreciseConfig {
    rel_se: 1e-3,
    min_samples: 1 << 15,
    max_samples: 1 << 18,
};

/// The paper's Adam step and DSGD decay for `model`: the built-in model's recommended
/// settings (0.01 and 0.2 for xornet), else 0.0015 and the default `1 / (2 l)`.
pub fn paper_settings(model: &str) -> (f64, Option<f64>) {
    let r = crate::models::recommended(model);
    (r.lr.unwrap_or(AdamConfig::default().lr), r.eta_decay)
}

/// The paper's run of `model`: Adam at the paper's step, the paper's decay, every guard
/// smoothed in its own units, stopping at a non-finite value, at the full sweep's sizes and
/// [`VARIANCE_ETA`].
pub fn paper_run(model: &str) -> RunConfig {
    let (lr, decay) = paper_settings(model);
    RunConfig {
        eta: VARIANCE_ETA,
        eta_decay: decay,
        // The paper smooths every guard in its own units.
        eta_scale: EtaScale::Absolute,
        iterations: ITERATIONS,
        batch: BATCH,
        optimizer: OptimizerConfig::Adam(AdamConfig {
            lr,
            ..AdamConfig::default()
        }),
        log_every: LOG_EVERY,
        log_samples: LOG_SAMPLES,
        on_nonfinite: OnNonFinite::Stop,
        precise: Some(PRECISE),
        ..RunConfig::default()
    }
}
