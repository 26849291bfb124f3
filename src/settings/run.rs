//! One run's settings: [`RunOptions`](super::RunOptions) (what a user gave, every field optional) resolved with
//! a model's recommended values and the defaults into a checked [`RunConfig`].
//!
//! Room for more choices: a new optimiser is one more [`OptimizerKind`] (parsed from its
//! name by `FromStr`, so the command line and Python accept it at once), its
//! hyperparameters one more arm of [`RunOptions::optimizer_config`](super::RunOptions::optimizer_config), and their checks one
//! more arm of [`RunConfig::validate`].

use super::choices::{EtaScale, OnNonFinite};
use super::error::SettingError;
use super::precise::PreciseConfig;
use super::resources::{Footprint, check_memory, check_threads, default_threads};
use super::values::{self, at_least, eta, eta_decay, positive, shown};
use crate::estimate::{EstimatorKind, Schedule};
use crate::ir::Model;
use crate::optim::{DogConfig, OptimizerConfig};

/// DSGD's accuracy at iteration 4000, and Fixed's throughout, unless given.
pub const DEFAULT_ETA: f64 = 0.1;

/// The settings of one run, every one decided.
#[derive(Clone, Debug, PartialEq)]
pub struct RunConfig {
    /// The gradient estimator (default DSGD).
    pub estimator: EstimatorKind,
    /// Accuracy at iteration 4000 (DSGD) or the fixed accuracy (Fixed).
    pub eta: f64,
    /// DSGD's decay; `None` means `1 / (2 l)` from the nesting depth.
    pub eta_decay: Option<f64>,
    /// `--eta auto`: DSGD's accuracy is chosen from the run's measurements
    /// (`estimate::AutoEta`) and `eta` is not read.
    pub eta_auto: bool,
    /// The units of DSGD's `eta` (Fixed always uses the guards' own).
    pub eta_scale: EtaScale,
    /// Optimisation steps.
    pub iterations: u64,
    /// Gradient samples averaged per step.
    pub batch: usize,
    /// The optimiser and its step size.
    pub optimizer: OptimizerConfig,
    /// The seed: the run is a pure function of it.
    pub seed: u64,
    /// Iterations between two measurements.
    pub log_every: u64,
    /// Fresh samples per measurement.
    pub log_samples: usize,
    /// What to do on a NaN or infinite objective or gradient.
    pub on_nonfinite: OnNonFinite,
    /// Worker threads; `None` uses rayon's global pool.
    pub threads: Option<usize>,
    /// Measure the objective at the final parameters precisely (many samples, a stated
    /// standard error) besides the paper's 1,000-sample final value; `None`: do not.
    pub precise: Option<PreciseConfig>,
    /// Each optimisation step reads this many rows of every plate, drawn afresh, the plate's
    /// sums scaled by `n / M` (an unbiased gradient); `None` reads every row. Measurements
    /// read M rows per chunk of samples, drawn afresh for each chunk (standard errors over
    /// chunks).
    pub subsample: Option<usize>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            estimator: EstimatorKind::Dsgd,
            eta: DEFAULT_ETA,
            eta_decay: None,
            eta_auto: false,
            eta_scale: EtaScale::default(),
            iterations: 10_000,
            batch: 16,
            optimizer: OptimizerConfig::default(),
            seed: 0,
            log_every: 100,
            log_samples: 1000,
            on_nonfinite: OnNonFinite::Stop,
            threads: None,
            precise: None,
            subsample: None,
        }
    }
}

impl RunConfig {
    /// Checks the settings, naming the first bad one.
    pub fn validate(&self) -> Result<(), SettingError> {
        eta(self.eta)?;
        if self.eta_auto && self.estimator != EstimatorKind::Dsgd {
            return Err(SettingError::invalid(
                "eta",
                format!("auto adapts DSGD's schedule only, not {}'s", self.estimator),
            ));
        }
        if let Some(d) = self.eta_decay {
            eta_decay(d)?;
            self.check_schedule(d)?;
        }
        at_least("iters", self.iterations, 1)?;
        at_least("batch", self.batch, 1)?;
        at_least("log_every", self.log_every, 1)?;
        at_least("log_samples", self.log_samples, 2)?;
        match self.optimizer {
            OptimizerConfig::Dog(c) => {
                check_dog(c)?;
            }
            OptimizerConfig::Adam(c) => {
                positive("lr", c.lr)?;
            }
            OptimizerConfig::Sgd(c) => {
                positive("lr", c.lr)?;
                values::non_negative("sgd_power", c.power)?;
            }
        }
        if let Some(n) = self.threads {
            check_threads(n)?;
        }
        if let Some(p) = &self.precise {
            p.validate()?;
        }
        if let Some(m) = self.subsample {
            at_least("subsample", m, 1)?;
        }
        Ok(())
    }

    /// DSGD's accuracy must stay a positive finite number from the first step to the last.
    fn check_schedule(&self, decay: f64) -> Result<(), SettingError> {
        if self.estimator != EstimatorKind::Dsgd {
            return Ok(());
        }
        let s = Schedule::Tightening {
            eta: self.eta,
            decay,
        };
        let first = s.eta(0).unwrap_or(self.eta);
        let last = s.eta(self.iterations.saturating_sub(1)).unwrap_or(self.eta);
        if !(first.is_finite() && last > 0.0) {
            return Err(SettingError::invalid(
                "eta_decay",
                format!(
                    "{} with eta {} makes eta_k {} (eta_0 = {first:e}, eta at the last \
                     iteration {last:e}); use a smaller decay",
                    shown(decay),
                    shown(self.eta),
                    if first.is_finite() {
                        "vanish"
                    } else {
                        "overflow"
                    }
                ),
            ));
        }
        Ok(())
    }

    /// Refuses a setting whose memory cannot fit on this machine, before any of it is
    /// allocated: the batch and measurement samples with a workspace per thread, and the
    /// trajectory (one row per measurement).
    pub fn check_resources(&self, model: &Model) -> Result<(), SettingError> {
        let f = Footprint::of(model);
        let threads = self.threads.unwrap_or_else(default_threads);
        check_memory(
            vec![
                ("batch", self.batch.to_string()),
                ("log_samples", self.log_samples.to_string()),
                ("threads", threads.to_string()),
            ],
            f.run_bytes(self.batch, self.log_samples, threads),
        )?;
        check_memory(
            vec![
                ("iters", self.iterations.to_string()),
                ("log_every", self.log_every.to_string()),
            ],
            f.report_bytes(self.iterations, self.log_every),
        )
    }
}

impl RunConfig {
    /// Refuses a comparison whose runs cannot fit in memory: `seeds` seeds of every arm
    /// (DSGD and Fixed per each of `etas` etas, and the other estimators), each run with
    /// these settings, one per thread at a time, every report kept until the end.
    pub fn check_comparison(
        &self,
        model: &Model,
        seeds: u64,
        etas: usize,
    ) -> Result<(), SettingError> {
        let f = Footprint::of(model);
        let runs = u128::from(seeds) * (2 * etas as u128 + 5);
        let threads = self.threads.unwrap_or_else(default_threads);
        check_memory(
            vec![
                ("seeds", seeds.to_string()),
                ("log_samples", self.log_samples.to_string()),
            ],
            threads as u128 * f.run_bytes(self.batch, self.log_samples, 1)
                + runs * f.report_bytes(self.iterations, self.log_every),
        )
    }
}

/// DoG's settings (none is an option of the front ends; a library caller may set them): a
/// positive first step, a non-negative averaging `gamma`, a forgetting decay in `[0, 1)`, a
/// positive settling fraction.
fn check_dog(c: DogConfig) -> Result<(), SettingError> {
    let bad = |what: String| Err(SettingError::invalid("optimizer", format!("dog's {what}")));
    if !(c.alpha > 0.0 && c.alpha.is_finite()) {
        return bad(format!(
            "alpha must be positive and finite, got {}",
            shown(c.alpha)
        ));
    }
    if let Some(g) = c.average.filter(|g| !(*g >= 0.0 && g.is_finite())) {
        return bad(format!(
            "averaging gamma must be non-negative and finite, got {}",
            shown(g)
        ));
    }
    if let Some(b) = c.forget.filter(|b| !(0.0..1.0).contains(b)) {
        return bad(format!(
            "forgetting decay must be in [0, 1), got {}",
            shown(b)
        ));
    }
    if let Some(e) = c.settle.filter(|e| !(*e > 0.0 && e.is_finite())) {
        return bad(format!(
            "settling fraction must be positive and finite, got {}",
            shown(e)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settling_fraction_that_is_not_positive_is_refused() {
        for e in [0.0, -0.1, f64::NAN, f64::INFINITY] {
            let config = RunConfig {
                optimizer: OptimizerConfig::Dog(DogConfig {
                    settle: Some(e),
                    ..DogConfig::default()
                }),
                ..RunConfig::default()
            };
            let err = config.validate().unwrap_err();
            assert_eq!(err.option(), "optimizer");
            assert!(err.to_string().contains("settling fraction"), "{err}");
        }
    }

    #[test]
    fn a_trajectory_beyond_memory_is_refused_up_front() {
        let model = crate::models::builtin("example").unwrap().unwrap();
        let config = RunConfig {
            iterations: u64::MAX,
            log_every: 1,
            ..RunConfig::default()
        };
        let e = config.check_resources(&model).unwrap_err();
        assert_eq!(e.kind, super::super::SettingKind::Memory);
        assert!(
            e.render(super::super::Style::Flag)
                .starts_with("--iters 18446744073709551615 with --log-every 1 would need"),
            "{e}"
        );
        let big_batch = RunConfig {
            batch: 1 << 62,
            ..RunConfig::default()
        };
        assert_eq!(
            big_batch.check_resources(&model).unwrap_err().option(),
            "batch"
        );
        assert!(RunConfig::default().check_resources(&model).is_ok());
    }
}
