//! Whether a run converged: the rule, applied to its measurements and to the tests on its
//! last steps (`stationarity.rs`).
//!
//! The rule reads the last fifth of the run (iterations at or after 80 % of the steps taken):
//! the measurements there (at least [`MIN_ROWS`]) and the steps' gradients and values there
//! in batches. A run converged when it took every step, skipped none, and over that window:
//!
//! - **the objective has settled**: the change along a least-squares line through the
//!   measurements is within [`Z`] standard errors of zero (from each measurement's Monte
//!   Carlo standard error) or below [`OBJECTIVE_REL`] of `1 + |objective|`;
//! - **the gradient's mean is within its noise**: for every component of the optimised
//!   vector, `|mean| / se` of the steps' own gradients is within the Bonferroni-corrected `t`
//!   threshold (a stationary point of the estimator; a biased estimator's is its own, which
//!   the verdict then says);
//! - **the gradient at the answer is within its noise**: the answer the run reports (the
//!   last iterate, or DoG's average) is where the gradient's line through the window puts
//!   zero, within its standard error (`stationarity.rs`): an answer that is one iterate of
//!   many bouncing about the optimum is off it by as much as they bounce;
//! - **the answer no longer drifts**: the two halves of the window agree within their
//!   batch-means standard errors, component by component;
//! - **the answer does not jump**: a guided latent's location spreads over the window by less
//!   than [`JUMP`] of its guide scale, its `rho` by less than [`JUMP`];
//! - **the gradient test can see**: for a guided latent the test's threshold times the mean
//!   gradient's standard error, divided by the curvature `1 / scale^2` of the ELBO in the
//!   location at the guide's optimum, is at most [`RESOLUTION`] of the guide's scale; a
//!   gradient too noisy to locate the optimum better than that cannot vouch for it. The
//!   same for the scale, whose curvature there is `2 / scale^2`.
//!
//! When it did not converge the verdict names the first reason and which way to change the
//! step: smaller when the objective got worse or oscillates (its measurements scatter about
//! their trend far beyond their Monte Carlo errors, uncorrelated from one to the next:
//! `objective_trend.rs`), the values jump or oscillate about the
//! optimum (their steps cancel), or the optimiser crawls along a steady gradient far below
//! its step size (Adam still dividing by the huge gradients of earlier jumps); larger (or
//! more iterations) when the values still move steadily along the gradient at full speed.

mod advice;
mod guide_resolution;
mod objective_trend;
#[cfg(test)]
pub(super) mod tests;

use super::report::{ObjectiveKind, StopReason, TrajectoryRow};
use super::stationarity::Stationarity;
use advice::{LARGER, SMALLER, direction, fmt, nonfinite_advice, oscillates, smaller};
use guide_resolution::{answer_off, jumps, unresolved};
use objective_trend::{Line, Scatter};

/// The fewest measurements in the last fifth that the rule judges.
pub const MIN_ROWS: usize = 3;
/// How many standard errors an objective's drift may be and still count as noise.
pub const Z: f64 = 3.0;
/// An objective drift below this fraction of `1 + |objective|` is negligible.
pub const OBJECTIVE_REL: f64 = 1e-3;
/// The most a guided latent's location may spread over the window, in guide scales (and its
/// `rho`, in its own units).
pub const JUMP: f64 = 0.5;
/// The coarsest location, in guide scales, that the gradient test may leave undecided.
pub const RESOLUTION: f64 = 0.25;
/// Adam *crawls* when its steps are below this fraction of what the gradient's
/// signal-to-noise ratio and the step size give.
pub const CRAWL: f64 = 0.1;

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
    /// What went non-finite, when something did (the run's stop message).
    pub stop_message: Option<&'a str>,
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
    /// The tests on the steps of the last fifth (`None`: too few steps there).
    pub stationarity: Option<&'a Stationarity>,
    /// Names of the optimised vector's components (the order of the tests' components).
    pub theta_names: &'a [String],
    /// Adam's step size, when the optimiser is Adam (the crawl test reads it).
    pub adam_lr: Option<f64>,
    /// Whether the optimiser sets its own step (DoG): advice to take a smaller step then
    /// names what the user can set instead.
    pub own_step: bool,
    /// Why the estimator is biased for this program, when it is: a stationary point is then
    /// the estimator's, not the program's.
    pub bias: Option<&'a str>,
    /// Whether larger objectives are better (maximisation and the ELBO).
    pub maximise: bool,
}

/// Applies the rule.
pub fn assess(facts: &RunFacts) -> Verdict {
    let no = |reason: String| Verdict {
        converged: false,
        reason,
    };
    if facts.stop == StopReason::NonFinite {
        return no(format!(
            "not converged: the run stopped early at iteration {} on a non-finite value; {}",
            facts.done,
            nonfinite_advice(facts.stop_message)
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
    let Some(st) = facts.stationarity else {
        return no(
            "not judged: too few steps in the last fifth of the run to test the gradient; run longer"
                .into(),
        );
    };
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
    let scatter = Scatter::of(&line, &t, &values, &ses);
    let mean_value = values.iter().sum::<f64>() / values.len() as f64;
    if !line.drift.is_finite() {
        return no(format!(
            "not converged: the {label} is not finite over the last fifth ({span})"
        ));
    }
    let obj_settled = line.drift.abs() <= Z * obj_se
        || line.drift.abs() <= OBJECTIVE_REL * (1.0 + mean_value.abs());
    let improved = (line.drift > 0.0) == facts.maximise;
    if !obj_settled && !improved {
        let dir = if line.drift > 0.0 { "rose" } else { "fell" };
        return no(format!(
            "not converged: the {label} got worse, it {dir} by {} over the last fifth ({span}; standard error {}); {}",
            fmt(line.drift.abs()),
            fmt(obj_se),
            smaller(facts, st)
        ));
    }
    let name = |p: usize| {
        facts
            .theta_names
            .get(p)
            .cloned()
            .unwrap_or_else(|| format!("#{p}"))
    };
    // The values must not jump: a guided latent's location within a fraction of its scale.
    if let Some(why) = jumps(facts, st, &window) {
        return no(format!(
            "not converged: {why} over the last fifth ({span}): the values jump; {}",
            smaller(facts, st)
        ));
    }
    // The gradient's mean, then the values' drift.
    if let Some((p, z)) = st.worst_gradient().filter(|w| w.1 > st.gradient_threshold) {
        let c = &st.components[p];
        let advice = direction(facts, st, c);
        return no(format!(
            "not converged: the mean gradient in `{}` over the last fifth ({span}) is {} ({} standard errors, threshold {:.1}): not yet a stationary point; {advice}",
            name(p),
            fmt(c.gradient_mean),
            fmt(z),
            st.gradient_threshold
        ));
    }
    // The gradient at the answer, when it is the last iterate: one of many bouncing about
    // the optimum. (DoG's average is the iterates' centre, which the mean gradient judges.)
    if let Some((p, z)) = answer_off(facts, st, &window) {
        let c = &st.components[p];
        return no(format!(
            "not converged: the gradient in `{}` at the answer is {} ({} standard errors, threshold {:.1}; its mean over the last fifth, {span}, is within its noise): the answer, the last iterate, is not a stationary point: the iterates bounce about the optimum (by {} per step) more than the gradient allows; {SMALLER}, or leave out --lr for DoG, which averages them",
            name(p),
            fmt(c.answer_gradient),
            fmt(z),
            st.drift_threshold,
            fmt(c.path / st.steps.max(1) as f64)
        ));
    }
    if let Some((p, _)) = st.worst_drift().filter(|w| w.1 > 1.0) {
        let c = &st.components[p];
        let advice = direction(facts, st, c);
        return no(format!(
            "not converged: `{}` still drifts by {} between the halves of the last fifth ({span}; standard error {}); {advice}",
            name(p),
            fmt(c.drift),
            fmt(c.drift_se)
        ));
    }
    if !obj_settled {
        if scatter.jumps() && !st.averaged {
            return no(format!(
                "not converged: over the last fifth ({span}) {}",
                oscillates(facts, &scatter)
            ));
        }
        return no(format!(
            "not converged: the {label} still improves, by {} over the last fifth ({span}; standard error {}); {LARGER}",
            fmt(line.drift.abs()),
            fmt(obj_se)
        ));
    }
    if let Some(why) = unresolved(facts, st) {
        let step = if facts.own_step {
            "(DoG's step shrinks as they go)"
        } else {
            "with a smaller step size"
        };
        return no(format!(
            "not converged: {why}; run more iterations {step}, a larger batch, or a lower-variance estimator"
        ));
    }
    let base = format!(
        "over the last fifth ({span}) the {label} changed by {} (standard error {}), the mean gradient is within {} standard errors of zero (threshold {:.1}) and no value drifts",
        fmt(line.drift),
        fmt(obj_se),
        fmt(st.worst_gradient().map_or(0.0, |w| w.1)),
        st.gradient_threshold
    );
    Verdict {
        converged: true,
        reason: match facts.bias {
            None => format!("converged: {base}"),
            Some(why) => format!("converged, but to the estimator's biased answer: {base}. {why}"),
        },
    }
}
