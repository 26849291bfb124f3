//! What a comparison's runs add up to, cell by cell: the final objective's mean and spread,
//! the mean gradient variances and the parameters' spread ([`Cell`]), for one model
//! ([`ModelComparison`]), from the runs of each arm ([`aggregate`]).

use serde::Serialize;

use super::super::precise::PreciseValue;
use super::super::report::{ObjectiveKind, RunReport, StopReason};
use super::Arm;
use crate::estimate::EstimatorKind;

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

/// Groups `reports` (one per job of [`jobs`](super::jobs), same order) by arm.
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
            let mean_of = |get: &dyn Fn(&super::super::report::TrajectoryRow) -> f64| {
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
