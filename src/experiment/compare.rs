//! Comparing estimators on one model: which runs to do (every applicable estimator; DSGD and
//! Fixed once per eta), and what they add up to (final ELBO mean ± std per cell, mean
//! variances, the mean trajectories, gradient variances and smoothing gaps that the
//! `dsgd-report` crate draws in the style of the paper's Figure 2).
//!
//! Running the jobs is [`super::sweep`]'s job and writing files the caller's; this module
//! only plans and aggregates.

use serde::Serialize;

use super::precise::PreciseValue;
use super::report::{ObjectiveKind, RunReport, StopReason, TrajectoryRow};
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

/// Mean and standard deviation of the finite values, with the count of values left out because
/// they are not finite. The std is the population std (ddof 0, NumPy's default), the paper's
/// convention: its walk cells read -85 ± 197, four seeds at about +13 and one 492.5 lower,
/// and 0.4 × 492.5 = 197 holds for ddof 0 only (ddof 1 would give 220).
#[derive(Copy, Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Mean of the finite values.
    pub mean: f64,
    /// Population standard deviation of the finite values.
    pub std: f64,
    /// Finite values.
    pub n: usize,
    /// Values that are not finite (left out of `mean` and `std`).
    pub non_finite: usize,
}

impl Summary {
    /// The summary of `values` (non-finite values counted apart).
    pub fn of(values: &[f64]) -> Summary {
        let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let n = finite.len();
        let mean = if n == 0 {
            f64::NAN
        } else {
            finite.iter().sum::<f64>() / n as f64
        };
        let std = if n < 2 {
            0.0
        } else {
            (finite.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64).sqrt()
        };
        Summary {
            mean,
            std,
            n,
            non_finite: values.len() - n,
        }
    }
}

/// The spread over seeds of one parameter's final value (objective programs).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ParamSpread {
    /// The parameter's name.
    pub name: String,
    /// Mean over the seeds' runs that took every step.
    pub mean: f64,
    /// Standard deviation (ddof 0) over those runs.
    pub std: f64,
}

/// What the runs of one arm add up to.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cell {
    /// The estimator and eta of the runs.
    pub arm: Arm,
    /// Final value (ELBO or objective) per seed, in seed order.
    pub final_elbo: Vec<f64>,
    /// Mean and std of the final values of the runs that took every step (a run that stopped
    /// early has no final value: it is counted in `stopped_early` instead).
    pub summary: Summary,
    /// Runs that converged by the documented rule.
    pub converged: usize,
    /// Runs that stopped before their last iteration (non-finite objective or gradient).
    pub stopped_early: usize,
    /// Each parameter's final value over the seeds (empty for variational models).
    pub params: Vec<ParamSpread>,
    /// The precise final value per seed, in seed order, where the runs measured one.
    pub final_precise: Vec<Option<PreciseValue>>,
    /// The standard error each seed's final value states from its own samples.
    pub final_value_se: Vec<f64>,
    /// [`Summary`] of the precise values (`n` is 0 when none was measured).
    pub precise_summary: Summary,
    /// Mean over every logged iterate of every seed of `Avg(V(.))` and of `V(||.||_2)`.
    pub mean_var_component: f64,
    /// Mean over every logged iterate of every seed of `V(||.||_2)`.
    pub mean_var_norm: f64,
    /// The standard deviation of the last ten logged ELBOs of a run, averaged over seeds: how
    /// much one measurement fluctuates near the end (Monte Carlo error plus the last steps).
    pub late_elbo_std: f64,
    /// Runs that stopped early or skipped steps, with their message.
    pub problems: Vec<String>,
    /// Mean wall time of a run.
    pub seconds: f64,
}

/// The comparison of one model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelComparison {
    /// The model's name.
    pub model: String,
    /// What the values are: the ELBO or a program's objective.
    pub kind: ObjectiveKind,
    /// Why LYY18 was left out, when it was.
    pub lyy18_note: Option<String>,
    /// One cell per arm, in the arms' order.
    pub cells: Vec<Cell>,
}

impl ModelComparison {
    /// The same comparison with every cell's final values replaced by the precise ones,
    /// when every run of every cell has one (`None` otherwise): the claims and tables on
    /// precise values are the same functions applied to this.
    pub fn with_precise_finals(&self) -> Option<ModelComparison> {
        let mut cmp = self.clone();
        for c in &mut cmp.cells {
            let values: Option<Vec<f64>> =
                c.final_precise.iter().map(|p| p.map(|p| p.value)).collect();
            c.final_elbo = values?;
            c.summary = Summary::of(&c.final_elbo);
        }
        Some(cmp)
    }

    /// The cell of `kind` at `eta` (`None`: the arm that does not smooth).
    pub fn cell(&self, kind: EstimatorKind, eta: Option<f64>) -> Option<&Cell> {
        self.cells.iter().find(|c| {
            c.arm.estimator == kind
                && match eta {
                    Some(e) => c.arm.has_eta(e),
                    None => c.arm.eta.is_none(),
                }
        })
    }

    /// The cell of `kind` at `eta` for smoothing estimators, or the eta-free cell otherwise.
    pub fn cell_at(&self, kind: EstimatorKind, eta: f64) -> Option<&Cell> {
        self.cell(kind, kind.uses_eta().then_some(eta))
    }
}

/// Groups `reports` (one per job of [`jobs`], same order) by arm.
pub fn aggregate(
    model: &str,
    arms: &[Arm],
    reports: &[&RunReport],
    lyy18_note: Option<String>,
) -> ModelComparison {
    let cells = arms
        .iter()
        .map(|arm| {
            let runs: Vec<&RunReport> =
                reports.iter().copied().filter(|r| arm.matches(r)).collect();
            let finals: Vec<f64> = runs.iter().map(|r| r.final_value).collect();
            let complete: Vec<&RunReport> = runs
                .iter()
                .copied()
                .filter(|r| r.stop_reason == StopReason::Completed)
                .collect();
            let complete_finals: Vec<f64> = complete.iter().map(|r| r.final_value).collect();
            let params = runs.first().map_or(Vec::new(), |first| {
                first
                    .params
                    .names()
                    .map(|name| {
                        let v: Vec<f64> =
                            complete.iter().filter_map(|r| r.params.get(name)).collect();
                        let s = Summary::of(&v);
                        ParamSpread {
                            name: name.to_string(),
                            mean: s.mean,
                            std: s.std,
                        }
                    })
                    .collect()
            });
            let precise: Vec<Option<PreciseValue>> = runs.iter().map(|r| r.final_precise).collect();
            let precise_values: Vec<f64> = precise.iter().flatten().map(|p| p.value).collect();
            let mean_of = |get: &dyn Fn(&super::report::TrajectoryRow) -> f64| {
                let v: Vec<f64> = runs
                    .iter()
                    .flat_map(|r| r.trajectory.iter().map(get))
                    .filter(|x| x.is_finite())
                    .collect();
                if v.is_empty() {
                    f64::NAN
                } else {
                    v.iter().sum::<f64>() / v.len() as f64
                }
            };
            Cell {
                arm: *arm,
                summary: Summary::of(&complete_finals),
                final_elbo: finals,
                converged: runs.iter().filter(|r| r.converged).count(),
                stopped_early: runs.len() - complete.len(),
                params,
                precise_summary: Summary::of(&precise_values),
                final_precise: precise,
                final_value_se: runs.iter().map(|r| r.final_value_se).collect(),
                mean_var_component: mean_of(&|r| r.var_component),
                mean_var_norm: mean_of(&|r| r.var_norm),
                late_elbo_std: {
                    let stds: Vec<f64> = runs
                        .iter()
                        .map(|r| {
                            let n = r.trajectory.len();
                            let tail: Vec<f64> = r.trajectory[n.saturating_sub(10)..]
                                .iter()
                                .map(|t| t.value)
                                .collect();
                            Summary::of(&tail).std
                        })
                        .collect();
                    Summary::of(&stds).mean
                },
                problems: runs
                    .iter()
                    .filter_map(|r| {
                        r.stop_message
                            .as_ref()
                            .map(|m| format!("seed {}: {} ({})", r.seed, m, r.stop_reason))
                    })
                    .collect(),
                seconds: if runs.is_empty() {
                    0.0
                } else {
                    runs.iter().map(|r| r.seconds).sum::<f64>() / runs.len() as f64
                },
            }
        })
        .collect();
    ModelComparison {
        model: model.to_string(),
        kind: reports.first().map_or(ObjectiveKind::Elbo, |r| r.kind),
        lyy18_note,
        cells,
    }
}

/// The mean trajectory over runs: at each logged iteration, the mean of the finite ELBOs
/// logged there by any run.
pub fn mean_trajectory(runs: &[&RunReport]) -> Vec<(f64, f64)> {
    mean_of_rows(runs, |row| Some(row.value))
}

/// At each logged iteration, the mean over runs of the finite values `f` gives there.
pub fn mean_of_rows(
    runs: &[&RunReport],
    f: impl Fn(&TrajectoryRow) -> Option<f64>,
) -> Vec<(f64, f64)> {
    let mut acc: std::collections::BTreeMap<u64, (f64, usize)> = Default::default();
    for r in runs {
        for row in &r.trajectory {
            if let Some(v) = f(row).filter(|v| v.is_finite()) {
                let e = acc.entry(row.iter).or_insert((0.0, 0));
                e.0 += v;
                e.1 += 1;
            }
        }
    }
    acc.into_iter()
        .map(|(k, (s, n))| (k as f64, s / n as f64))
        .collect()
}

/// A line `(x, y)` and a band `(x, low, high)` around it.
pub type LineWithBand = (Vec<(f64, f64)>, Vec<(f64, f64, f64)>);

/// The smoothing gap over runs: at each logged iteration, the mean gap of the runs that
/// logged a finite one there, and the band of ±2 standard errors of that mean (the runs'
/// standard errors combined: `sqrt(sum se_i^2) / n`). Empty for estimators that do not smooth.
pub fn mean_gap(runs: &[&RunReport]) -> LineWithBand {
    let mut acc: std::collections::BTreeMap<u64, (f64, f64, usize)> = Default::default();
    for r in runs {
        for row in &r.trajectory {
            if let (Some(gap), Some(se)) = (row.gap, row.gap_se)
                && gap.is_finite()
                && se.is_finite()
            {
                let e = acc.entry(row.iter).or_insert((0.0, 0.0, 0));
                e.0 += gap;
                e.1 += se * se;
                e.2 += 1;
            }
        }
    }
    let mut line = Vec::with_capacity(acc.len());
    let mut band = Vec::with_capacity(acc.len());
    for (k, (sum, var, n)) in acc {
        let (mean, se) = (sum / n as f64, var.sqrt() / n as f64);
        line.push((k as f64, mean));
        band.push((k as f64, mean - 2.0 * se, mean + 2.0 * se));
    }
    (line, band)
}

/// The spread over runs: at each logged iteration, the lowest and highest finite value any
/// run logged there (the shaded band of the trajectory figures).
pub fn spread_band(runs: &[&RunReport]) -> Vec<(f64, f64, f64)> {
    let mut acc: std::collections::BTreeMap<u64, (f64, f64)> = Default::default();
    for r in runs {
        for row in r.trajectory.iter().filter(|row| row.value.is_finite()) {
            let e = acc.entry(row.iter).or_insert((row.value, row.value));
            e.0 = e.0.min(row.value);
            e.1 = e.1.max(row.value);
        }
    }
    acc.into_iter()
        .map(|(k, (lo, hi))| (k as f64, lo, hi))
        .collect()
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
