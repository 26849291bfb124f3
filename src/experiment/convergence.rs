//! Whether a run converged: the rule, applied to its measurements.
//!
//! The rule looks at the measurements of the last fifth of the run (iterations at or after
//! 80 % of the steps taken) and needs at least [`MIN_ROWS`] of them. Over that window it fits
//! a least-squares line to each tracked series against the iteration and calls the change
//! along the line over the window the series' *drift*.
//!
//! - The objective has settled when its drift is within [`Z`] standard errors of zero (the
//!   standard error follows from each measurement's Monte Carlo standard error) or smaller
//!   than [`OBJECTIVE_REL`] of `1 + |objective|`.
//! - A fitted value (each model parameter, each latent's location and scale) has settled when
//!   its drift is within [`Z`] standard errors of zero, the standard error estimated from the
//!   scatter of the series about its line (the step noise), or when the drift is negligible:
//!   below [`LATENT_REL`] of the latent's scale for a latent, below [`PARAM_REL`] of
//!   `1 + |value|` for a parameter.
//!
//! A run converged when it took every step, skipped none, and the objective and every fitted
//! value have settled. The verdict names the first reason it fails and what to change.

use super::report::{ObjectiveKind, StopReason, TrajectoryRow};

/// The fewest measurements in the last fifth that the rule judges.
pub const MIN_ROWS: usize = 3;
/// How many standard errors a drift may be and still count as noise.
pub const Z: f64 = 3.0;
/// An objective drift below this fraction of `1 + |objective|` is negligible.
pub const OBJECTIVE_REL: f64 = 1e-3;
/// A latent's location or scale drifting by less than this fraction of its scale is settled.
pub const LATENT_REL: f64 = 0.05;
/// A parameter drifting by less than this fraction of `1 + |value|` is settled.
pub const PARAM_REL: f64 = 1e-3;

/// The verdict on a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// Whether the run converged by the rule.
    pub converged: bool,
    /// Why, in a sentence (with what to change when it did not).
    pub reason: String,
}

/// What the rule reads of a run.
pub struct RunFacts<'a> {
    /// What the objective is (for the wording).
    pub kind: ObjectiveKind,
    /// Why the run ended.
    pub stop: StopReason,
    /// Steps taken.
    pub done: u64,
    /// Steps skipped as non-finite.
    pub skipped: u64,
    /// The measurements.
    pub trajectory: &'a [TrajectoryRow],
    /// Names of the model's parameters (the order of `TrajectoryRow::params`).
    pub param_names: &'a [String],
    /// Names of the fitted latents (the order of `TrajectoryRow::latent_loc`).
    pub latent_names: &'a [String],
}

const ADVICE: &str = "run more iterations or take a larger step size";

/// Applies the rule.
pub fn assess(facts: &RunFacts) -> Verdict {
    let no = |reason: String| Verdict {
        converged: false,
        reason,
    };
    if facts.stop == StopReason::NonFinite {
        return no(format!(
            "not converged: the run stopped early at iteration {} on a non-finite value; try a smaller step size",
            facts.done
        ));
    }
    if facts.done > 0 && facts.skipped == facts.done {
        return no(
            "not converged: every step was skipped (non-finite gradients), nothing was fitted"
                .into(),
        );
    }
    if facts.skipped > 0 {
        return no(format!(
            "not converged: {} of {} steps were skipped (non-finite gradients)",
            facts.skipped, facts.done
        ));
    }
    let from = facts.done - facts.done / 5;
    let window: Vec<&TrajectoryRow> = facts
        .trajectory
        .iter()
        .filter(|r| r.iter >= from && r.iter <= facts.done)
        .collect();
    if window.len() < MIN_ROWS {
        return no(format!(
            "not judged: {} measurement(s) in the last fifth of the run, at least {MIN_ROWS} are needed; measure more often or run longer",
            window.len()
        ));
    }
    let t: Vec<f64> = window.iter().map(|r| r.iter as f64).collect();
    let span = format!(
        "iterations {}-{}",
        window[0].iter,
        window[window.len() - 1].iter
    );
    let label = facts.kind.label();
    // The objective: drift against the Monte Carlo standard errors of the measurements.
    let values: Vec<f64> = window.iter().map(|r| r.value).collect();
    let ses: Vec<f64> = window.iter().map(|r| r.value_se).collect();
    let line = Line::fit(&t, &values);
    let obj_se = line.drift_se_known(&t, &ses);
    let mean_value = values.iter().sum::<f64>() / values.len() as f64;
    if !line.drift.is_finite() {
        return no(format!(
            "not converged: the {label} is not finite over the last fifth ({span})"
        ));
    }
    let obj_settled = line.drift.abs() <= Z * obj_se
        || line.drift.abs() <= OBJECTIVE_REL * (1.0 + mean_value.abs());
    if !obj_settled {
        let dir = if line.drift > 0.0 { "rose" } else { "fell" };
        return no(format!(
            "not converged: the {label} still {dir} by {} over the last fifth ({span}; standard error {}); {ADVICE}",
            fmt(line.drift.abs()),
            fmt(obj_se)
        ));
    }
    // The fitted values: drift against their own step noise, or negligible.
    let last = window[window.len() - 1];
    let mut worst: Option<(f64, String, f64, f64)> = None;
    let mut drifting = 0usize;
    let mut consider = |name: String, series: Vec<f64>, negligible: f64| {
        if series.len() != t.len() {
            return;
        }
        let line = Line::fit(&t, &series);
        let se = line.drift_se_scatter(&t, &series);
        let d = line.drift.abs();
        if d <= Z * se || d <= negligible || !d.is_finite() {
            return;
        }
        drifting += 1;
        let score = d / (Z * se).max(negligible);
        if worst.as_ref().is_none_or(|w| score > w.0) {
            worst = Some((score, name, line.drift, se));
        }
    };
    for (p, name) in facts.param_names.iter().enumerate() {
        let series: Vec<f64> = window
            .iter()
            .filter_map(|r| r.params.get(p).copied())
            .collect();
        let value = last.params.get(p).copied().unwrap_or(0.0);
        consider(
            format!("parameter `{name}`"),
            series,
            PARAM_REL * (1.0 + value.abs()),
        );
    }
    for (i, name) in facts.latent_names.iter().enumerate() {
        let scale = last.latent_scale.get(i).copied().unwrap_or(0.0);
        let locs: Vec<f64> = window
            .iter()
            .filter_map(|r| r.latent_loc.get(i).copied())
            .collect();
        let scales: Vec<f64> = window
            .iter()
            .filter_map(|r| r.latent_scale.get(i).copied())
            .collect();
        consider(
            format!("the location of `{name}`"),
            locs,
            LATENT_REL * scale,
        );
        consider(format!("the scale of `{name}`"), scales, LATENT_REL * scale);
    }
    if let Some((_, name, drift, se)) = worst {
        let more = match drifting {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        return no(format!(
            "not converged: {name}{more} still drifts by {} over the last fifth ({span}; step noise {}); {ADVICE}",
            fmt(drift),
            fmt(se)
        ));
    }
    Verdict {
        converged: true,
        reason: format!(
            "converged: over the last fifth ({span}) the {label} changed by {} (standard error {}) and no fitted value drifted beyond its step noise",
            fmt(line.drift),
            fmt(obj_se)
        ),
    }
}

/// Four significant digits.
fn fmt(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = (3 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.digits$}")
}

/// A least-squares line through `(t_i, y_i)` and its change over the span of `t`.
struct Line {
    slope: f64,
    intercept: f64,
    /// `slope * (t_last - t_first)`.
    drift: f64,
}

impl Line {
    fn fit(t: &[f64], y: &[f64]) -> Line {
        let n = t.len() as f64;
        let tbar = t.iter().sum::<f64>() / n;
        let ybar = y.iter().sum::<f64>() / n;
        let sxx: f64 = t.iter().map(|x| (x - tbar) * (x - tbar)).sum();
        let sxy: f64 = t.iter().zip(y).map(|(x, v)| (x - tbar) * (v - ybar)).sum();
        let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
        Line {
            slope,
            intercept: ybar - slope * tbar,
            drift: slope * (t[t.len() - 1] - t[0]),
        }
    }

    /// The standard error of `drift` when each `y_i` has a known standard error `se_i`:
    /// the slope is `sum_i w_i y_i` with `w_i = (t_i - tbar) / Sxx`.
    fn drift_se_known(&self, t: &[f64], se: &[f64]) -> f64 {
        let n = t.len() as f64;
        let tbar = t.iter().sum::<f64>() / n;
        let sxx: f64 = t.iter().map(|x| (x - tbar) * (x - tbar)).sum();
        if sxx <= 0.0 {
            return f64::INFINITY;
        }
        let var: f64 = t
            .iter()
            .zip(se)
            .map(|(x, s)| ((x - tbar) / sxx).powi(2) * s * s)
            .sum();
        var.sqrt() * (t[t.len() - 1] - t[0])
    }

    /// The standard error of `drift` estimated from the scatter about the line (ddof 2).
    fn drift_se_scatter(&self, t: &[f64], y: &[f64]) -> f64 {
        let n = t.len();
        if n < 3 {
            return f64::INFINITY;
        }
        let tbar = t.iter().sum::<f64>() / n as f64;
        let sxx: f64 = t.iter().map(|x| (x - tbar) * (x - tbar)).sum();
        let rss: f64 = t
            .iter()
            .zip(y)
            .map(|(x, v)| {
                let r = v - (self.intercept + self.slope * x);
                r * r
            })
            .sum();
        let s2 = rss / (n - 2) as f64;
        (s2 / sxx).sqrt() * (t[n - 1] - t[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(iter: u64, value: f64, se: f64, param: f64) -> TrajectoryRow {
        TrajectoryRow {
            iter,
            value,
            value_se: se,
            var_component: 0.0,
            var_norm: 0.0,
            eta: None,
            smoothed: None,
            gap: None,
            gap_se: None,
            params: vec![param],
            latent_loc: vec![],
            latent_scale: vec![],
        }
    }

    fn verdict(rows: &[TrajectoryRow], stop: StopReason, skipped: u64) -> Verdict {
        let names = ["theta".to_string()];
        assess(&RunFacts {
            kind: ObjectiveKind::Objective,
            stop,
            done: rows.last().map_or(0, |r| r.iter),
            skipped,
            trajectory: rows,
            param_names: &names,
            latent_names: &[],
        })
    }

    /// Noise of a fixed, deterministic pattern (no randomness in tests of the rule).
    fn jitter(k: u64) -> f64 {
        [0.3, -0.7, 0.5, -0.1, 0.9, -0.4, 0.2, -0.8, 0.6, -0.5][k as usize % 10]
    }

    #[test]
    fn flat_noisy_run_converges() {
        let rows: Vec<_> = (0..=100)
            .map(|k| {
                row(
                    k * 100,
                    -10.0 + 0.1 * jitter(k),
                    0.1,
                    0.37 + 1e-3 * jitter(k + 3),
                )
            })
            .collect();
        let v = verdict(&rows, StopReason::Completed, 0);
        assert!(v.converged, "{}", v.reason);
        assert!(v.reason.starts_with("converged"));
    }

    #[test]
    fn rising_objective_is_not_converged() {
        let rows: Vec<_> = (0..=100)
            .map(|k| row(k * 100, -10.0 + 0.05 * k as f64, 0.1, 0.37))
            .collect();
        let v = verdict(&rows, StopReason::Completed, 0);
        assert!(!v.converged);
        assert!(v.reason.contains("objective still rose"), "{}", v.reason);
        assert!(v.reason.contains("more iterations"), "{}", v.reason);
    }

    #[test]
    fn drifting_parameter_is_not_converged() {
        let rows: Vec<_> = (0..=100)
            .map(|k| row(k * 100, -10.0 + 0.1 * jitter(k), 0.1, 0.01 * k as f64))
            .collect();
        let v = verdict(&rows, StopReason::Completed, 0);
        assert!(!v.converged);
        assert!(v.reason.contains("parameter `theta`"), "{}", v.reason);
    }

    #[test]
    fn early_stop_skips_and_short_runs_are_not_converged() {
        let rows: Vec<_> = (0..=100).map(|k| row(k * 100, -10.0, 0.1, 0.3)).collect();
        assert!(!verdict(&rows, StopReason::NonFinite, 0).converged);
        let v = verdict(&rows, StopReason::Completed, 10_000);
        assert!(v.reason.contains("every step was skipped"), "{}", v.reason);
        assert!(!verdict(&rows, StopReason::Completed, 3).converged);
        let short: Vec<_> = (0..=3).map(|k| row(k * 100, -10.0, 0.1, 0.3)).collect();
        let v = verdict(&short, StopReason::Completed, 0);
        assert!(
            !v.converged && v.reason.starts_with("not judged"),
            "{}",
            v.reason
        );
    }

    #[test]
    fn drift_standard_error_matches_the_closed_form() {
        // Evenly spaced t with equal se s: se(slope) = s / sqrt(Sxx).
        let t: Vec<f64> = (0..5).map(|k| k as f64 * 10.0).collect();
        let line = Line::fit(&t, &[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert!((line.drift - 4.0).abs() < 1e-12);
        let se = line.drift_se_known(&t, &[0.5; 5]);
        let sxx = 1000.0;
        assert!((se - 0.5 / f64::sqrt(sxx) * 40.0).abs() < 1e-12);
        assert_eq!(line.drift_se_scatter(&t, &[1.0, 2.0, 3.0, 4.0, 5.0]), 0.0);
    }
}
