//! Comparing estimators on one model: which runs to do (every applicable estimator; DSGD and
//! Fixed once per eta), and what they add up to (final ELBO mean ± std per cell, mean
//! variances, the mean trajectories, gradient variances and smoothing gaps that the
//! `dsgd-report` crate draws in the style of the paper's Figure 2).
//!
//! Running the jobs is [`super::sweep`]'s job and writing files the caller's; this module
//! only plans and aggregates.

use serde::Serialize;

mod aggregate;
mod trajectories;

pub use aggregate::{Cell, ModelComparison, ParamSpread, Summary, aggregate};
pub use trajectories::{LineWithBand, mean_gap, mean_of_rows, mean_trajectory, spread_band};

use super::report::RunReport;
use super::run::RunConfig;
use super::sweep::Job;
use crate::estimate::{self, EstimatorKind, Problem};
use crate::ir::Model;
use crate::optim::OptimizerConfig;
use crate::settings::{EtaSetting, SettingError, at_least};

/// One cell of the comparison: an estimator, with its eta when it smooths.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Arm {
    /// The estimator.
    pub estimator: EstimatorKind,
    /// The eta it smooths with (DSGD's `eta_4000`, Fixed's constant); `None` when it does
    /// not smooth, and for DSGD with `--eta auto`.
    pub eta: Option<f64>,
}

/// `{estimator, eta}`, `eta` the number, `"auto"` for DSGD's `--eta auto` arm (as `run.json`
/// and the tables say it), or null.
impl Serialize for Arm {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Arm", 2)?;
        st.serialize_field("estimator", self.estimator.name())?;
        st.serialize_field("eta", &self.eta_setting())?;
        st.end()
    }
}

impl Arm {
    /// Whether `run` is one of this arm's runs (same estimator and, where the arm has one,
    /// the same eta).
    pub fn matches(&self, run: &RunReport) -> bool {
        run.estimator == self.estimator.name()
            && match self.eta {
                Some(e) => run
                    .eta
                    .and_then(EtaSetting::value)
                    .is_some_and(|x| (x - e).abs() < 1e-9),
                None => run.eta_auto == self.is_auto(),
            }
    }

    /// DSGD with `--eta auto`: the smoothing arm without an eta.
    pub fn is_auto(&self) -> bool {
        self.estimator == EstimatorKind::Dsgd && self.eta.is_none()
    }

    /// The arm of a run's configuration.
    pub fn of(config: &RunConfig) -> Arm {
        Arm {
            estimator: config.estimator,
            eta: (config.estimator.uses_eta() && !config.eta_auto).then_some(config.eta),
        }
    }

    /// The arm's eta as a setting: the number, `auto`, or `None`.
    pub fn eta_setting(&self) -> Option<EtaSetting> {
        match self.eta {
            Some(eta) => Some(EtaSetting::Value(eta)),
            None if self.is_auto() => Some(EtaSetting::Auto),
            None => None,
        }
    }

    /// How the tables print the arm's eta: the number, `auto`, or a dash.
    pub fn eta_text(&self) -> String {
        match self.eta {
            Some(eta) => eta.to_string(),
            None if self.is_auto() => "auto".into(),
            None => "–".into(),
        }
    }

    /// `dsgd η=0.1`, `score`.
    pub fn label(&self) -> String {
        match self.eta {
            Some(eta) => format!("{} η={eta}", self.estimator.name()),
            None if self.is_auto() => format!("{} η=auto", self.estimator.name()),
            None => self.estimator.name().to_string(),
        }
    }

    /// A file-name-safe name: `dsgd-eta0.1`, `score`.
    pub fn slug(&self) -> String {
        match self.eta {
            Some(eta) => format!("{}-eta{eta}", self.estimator.name()),
            None if self.is_auto() => format!("{}-auto", self.estimator.name()),
            None => self.estimator.name().to_string(),
        }
    }

    /// Whether this arm smooths with `eta` (compared to a tolerance of 1e-9).
    pub fn has_eta(&self, eta: f64) -> bool {
        self.eta.is_some_and(|e| (e - eta).abs() < 1e-9)
    }
}

/// A comparison's settings as a user gave them (`None`: `dsgd compare`'s default): the
/// command line and the Python package fill this in, and it decides the rest.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompareOptions {
    /// DSGD's and Fixed's etas (default: the paper's, [`super::paper::ETAS`]).
    pub etas: Option<Vec<f64>>,
    /// Seeds per cell, `0..seeds` (default [`CompareOptions::DEFAULT_SEEDS`]).
    pub seeds: Option<u64>,
    /// Optimisation steps per run.
    pub iters: Option<u64>,
    /// Adam's step (default: a built-in model's paper step; a user's file runs DoG, which
    /// needs none, unless this is given).
    pub lr: Option<f64>,
    /// DSGD's decay (default: a built-in model's paper decay, else the model's default).
    pub eta_decay: Option<f64>,
    /// Iterations between measurements.
    pub log_every: Option<u64>,
    /// Fresh samples per measurement.
    pub log_samples: Option<usize>,
}

impl CompareOptions {
    /// Seeds per cell unless given: the paper's five.
    pub const DEFAULT_SEEDS: u64 = 5;

    /// The etas, given or the paper's.
    pub fn etas(&self) -> Vec<f64> {
        self.etas
            .clone()
            .unwrap_or_else(|| super::paper::ETAS.to_vec())
    }

    /// The seeds per cell.
    pub fn seeds(&self) -> u64 {
        self.seeds.unwrap_or(Self::DEFAULT_SEEDS)
    }

    /// What every run of the comparison shares (each arm sets its estimator and eta), for
    /// the model called `name`: a built-in model (`builtin`) brings the paper's Adam step and
    /// decay, a user's file the general defaults (DoG unless `lr` is given). Checked, with
    /// each eta, and refused when the runs cannot fit in memory.
    pub fn base(&self, model: &Model, builtin: bool) -> Result<RunConfig, SettingError> {
        let name = &model.name;
        let (paper_lr, paper_decay) = if builtin {
            let (lr, decay) = super::protocol::paper_settings(name);
            (Some(lr), decay)
        } else {
            (None, None)
        };
        let d = RunConfig::default();
        let mut base = super::protocol::paper_run(name);
        base.iterations = self.iters.unwrap_or(d.iterations);
        base.log_every = self.log_every.unwrap_or(d.log_every);
        base.log_samples = self.log_samples.unwrap_or(d.log_samples);
        // A built-in model is compared at the paper's Adam step; a user's file with DoG (no
        // step size to choose) unless a step size is given, which means Adam's.
        base.optimizer = OptimizerConfig::default_for(self.lr.or(paper_lr));
        base.eta_decay = self.eta_decay.or(paper_decay);
        let etas = self.etas();
        let seeds = self.seeds();
        if etas.is_empty() {
            return Err(SettingError::invalid("etas", "must hold at least one eta"));
        }
        at_least("seeds", seeds, 1)?;
        for &eta in &etas {
            RunConfig {
                eta,
                ..base.clone()
            }
            .validate()?;
        }
        base.check_comparison(model, seeds, etas.len())?;
        Ok(base)
    }
}

/// Why LYY18 does not apply to `model` (`None`: it applies).
pub fn lyy18_refusal(model: &Model) -> Option<String> {
    match Problem::new(model) {
        Err(e) => Some(e.to_string()),
        Ok(p) => estimate::build(EstimatorKind::Lyy18, &p, 0.1, None)
            .err()
            .map(|e| e.to_string()),
    }
}

/// The arms of a comparison, in table order: DSGD per eta and with `--eta auto`, Fixed per eta, Score, RLOO (Score
/// with a leave-one-out baseline), Reparam,
/// and LYY18 when `lyy18` is true.
pub fn arms(etas: &[f64], lyy18: bool) -> Vec<Arm> {
    let mut v = Vec::new();
    for kind in [EstimatorKind::Dsgd, EstimatorKind::Fixed] {
        v.extend(etas.iter().map(|&eta| Arm {
            estimator: kind,
            eta: Some(eta),
        }));
        if kind == EstimatorKind::Dsgd {
            // `--eta auto`, beside the etas it should make unnecessary.
            v.push(Arm {
                estimator: kind,
                eta: None,
            });
        }
    }
    v.push(Arm {
        estimator: EstimatorKind::Score,
        eta: None,
    });
    v.push(Arm {
        estimator: EstimatorKind::Rloo,
        eta: None,
    });
    v.push(Arm {
        estimator: EstimatorKind::Reparam,
        eta: None,
    });
    if lyy18 {
        v.push(Arm {
            estimator: EstimatorKind::Lyy18,
            eta: None,
        });
    }
    v
}

/// The jobs of one model: for each arm, seeds `0..seeds`, with `base`'s other settings
/// (arm-major, then seed).
pub fn jobs(model: usize, arms: &[Arm], seeds: u64, base: &RunConfig) -> Vec<Job> {
    let mut v = Vec::new();
    for arm in arms {
        for seed in 0..seeds {
            v.push(Job {
                model,
                config: RunConfig {
                    estimator: arm.estimator,
                    eta: arm.eta.unwrap_or(base.eta),
                    eta_auto: arm.is_auto(),
                    seed,
                    ..base.clone()
                },
            });
        }
    }
    v
}

/// Runs the comparison of one model (in parallel across runs) and aggregates it. The reports
/// come back in job order (arm-major, then seed).
pub fn run_comparison(
    model: &Model,
    etas: &[f64],
    seeds: u64,
    base: &RunConfig,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<(ModelComparison, Vec<Arm>, Vec<RunReport>), super::run::RunError> {
    if etas.is_empty() || seeds == 0 {
        return Err(super::run::RunError::Config(
            "need at least one eta and one seed".into(),
        ));
    }
    for &eta in etas {
        RunConfig {
            eta,
            ..base.clone()
        }
        .validate()?;
    }
    let note = lyy18_refusal(model);
    let arms = arms(etas, note.is_none());
    let jobs = jobs(0, &arms, seeds, base);
    let reports = super::sweep::run_parallel(std::slice::from_ref(model), &jobs, progress)
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    let refs: Vec<&RunReport> = reports.iter().collect();
    let cmp = aggregate(&model.name, &arms, &refs, note);
    Ok((cmp, arms, reports))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_builtin_is_compared_at_the_papers_adam_a_file_with_dog() {
        let model = crate::models::builtin("xornet").unwrap().unwrap();
        let o = CompareOptions::default();
        let optimizer = |o: &CompareOptions, builtin| o.base(&model, builtin).unwrap().optimizer;
        assert_eq!(optimizer(&o, true).name(), "adam");
        assert_eq!(optimizer(&o, true).lr(), Some(0.01));
        // The same source as a user's file: no paper step, so DoG, which needs none.
        assert_eq!(optimizer(&o, false).name(), "dog");
        let lr = CompareOptions {
            lr: Some(0.02),
            ..CompareOptions::default()
        };
        assert_eq!(optimizer(&lr, false).lr(), Some(0.02));
        assert_eq!(optimizer(&lr, false).name(), "adam");
    }
}
