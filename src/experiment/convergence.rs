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
//! step: smaller when the objective got worse, the values jump or oscillate about the
//! optimum (their steps cancel), or the optimiser crawls along a steady gradient far below
//! its step size (Adam still dividing by the huge gradients of earlier jumps); larger (or
//! more iterations) when the values still move steadily along the gradient at full speed.

use super::report::{ObjectiveKind, StopReason, TrajectoryRow};
use super::stationarity::{ComponentTest, Stationarity};

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
    /// Why the estimator is biased for this program, when it is: a stationary point is then
    /// the estimator's, not the program's.
    pub bias: Option<&'a str>,
    /// Whether larger objectives are better (maximisation and the ELBO).
    pub maximise: bool,
}

const LARGER: &str = "run more iterations or take a larger step size";
const SMALLER: &str = "take a smaller step size";

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
            "not converged: the {label} got worse, it {dir} by {} over the last fifth ({span}; standard error {}); {SMALLER}",
            fmt(line.drift.abs()),
            fmt(obj_se)
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
            "not converged: {why} over the last fifth ({span}): the values jump; {SMALLER}"
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
        return no(format!(
            "not converged: the {label} still improves, by {} over the last fifth ({span}; standard error {}); {LARGER}",
            fmt(line.drift.abs()),
            fmt(obj_se)
        ));
    }
    if let Some(why) = unresolved(facts, st) {
        return no(format!(
            "not converged: {why}; run more iterations with a smaller step size, a larger batch, or a lower-variance estimator"
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

/// What to do about a run that stopped on a non-finite value, from what went non-finite: an
/// objective or log-density that is itself infinite or NaN at some samples is the model's
/// (a term that is minus infinity where the samples reach, from the start), not the step's;
/// a gradient that overflows where the value is finite may be the step's.
fn nonfinite_advice(message: Option<&str>) -> &'static str {
    let value = message.is_some_and(|m| {
        [
            "objective estimate is ",
            "log p(x, z) is ",
            "the objective is ",
        ]
        .iter()
        .any(|what| m.contains(what))
    });
    if value {
        "the objective itself is not finite at some samples (the error names the term), which no step size mends: start where the term is finite (`init(mean = .., std = ..)` on the latent's `sample`), give the latent a prior that keeps it away, or write the term so it stays finite (`log_normal_cdf(x)` for `log(normal_cdf(x))`)"
    } else {
        "a gradient overflowed where the objective is finite (the error names the term): try a smaller step size, or start nearer the answer"
    }
}

/// The guided latent (by the index of its `mu` in the optimised vector) named `mu[name]`,
/// with its guide scale at the end.
fn guided<'a>(facts: &'a RunFacts, window: &[&TrajectoryRow]) -> Vec<(usize, &'a str, f64)> {
    let last = window[window.len() - 1];
    facts
        .latent_names
        .iter()
        .enumerate()
        .filter_map(|(i, n)| {
            let mu = format!("mu[{n}]");
            let p = facts.theta_names.iter().position(|t| *t == mu)?;
            Some((p, n.as_str(), last.latent_scale.get(i).copied()?))
        })
        .collect()
}

/// The component whose gradient at the answer is resolvably non-zero, with its `z`, when the
/// answer is the last iterate: a model parameter at any size (it has no scale of its own but
/// what the gradient resolves), a guided latent's location or scale only when the offset the
/// gradient implies (through the curvature at the guide's optimum, as [`unresolved`] reads
/// it) exceeds [`RESOLUTION`] of its guide scale.
fn answer_off(
    facts: &RunFacts,
    st: &Stationarity,
    window: &[&TrajectoryRow],
) -> Option<(usize, f64)> {
    if st.averaged {
        return None;
    }
    let guided = guided(facts, window);
    let matters = |p: usize, c: &ComponentTest| -> bool {
        for &(q, _, scale) in &guided {
            if p == q {
                return c.answer_gradient.abs() * scale * scale > RESOLUTION * scale;
            }
            if p == q + 1 {
                let slope = 1.0 - crate::elementary::exp(-scale);
                return c.answer_gradient.abs() * scale * scale / (2.0 * slope)
                    > RESOLUTION * scale;
            }
        }
        true
    };
    st.components
        .iter()
        .enumerate()
        .map(|(p, c)| (p, c.answer_gradient_z()))
        .filter(|&(p, z)| z > st.drift_threshold && matters(p, &st.components[p]))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// Why the values jump, if they do.
fn jumps(facts: &RunFacts, st: &Stationarity, window: &[&TrajectoryRow]) -> Option<String> {
    for (p, name, scale) in guided(facts, window) {
        let loc = st.components.get(p)?;
        if loc.spread > JUMP * scale {
            return Some(format!(
                "the location of `{name}` spreads by {} (batch means' standard deviation), against a guide scale of {}",
                fmt(loc.spread),
                fmt(scale)
            ));
        }
        let rho = st.components.get(p + 1)?;
        if rho.spread > JUMP {
            return Some(format!(
                "the scale parameter `rho[{name}]` spreads by {} (batch means' standard deviation)",
                fmt(rho.spread)
            ));
        }
    }
    None
}

/// Why the gradient test cannot locate a guided latent's optimum well enough, if so.
fn unresolved(facts: &RunFacts, st: &Stationarity) -> Option<String> {
    let rows: Vec<&TrajectoryRow> = facts.trajectory.iter().collect();
    for (p, name, scale) in guided(facts, &rows) {
        let loc = st.components.get(p)?;
        // Location uncertainty: threshold x se / curvature, the curvature 1 / scale^2.
        let width = st.gradient_threshold * loc.gradient_se * scale * scale;
        if width > RESOLUTION * scale {
            return Some(format!(
                "the gradient is too noisy to locate `{name}`: its mean over the last fifth is known to {} only, which leaves the location undecided within {} (the guide's scale is {}; within {RESOLUTION} of it is needed)",
                fmt(loc.gradient_se),
                fmt(width),
                fmt(scale)
            ));
        }
        // The scale: `scale = softplus(rho)`, and at the guide's optimum the ELBO's curvature
        // in the scale is `-2 / scale^2`, so in `rho` it is `-2 sigmoid(rho)^2 / scale^2`;
        // the scale is undecided within `threshold * se_rho * scale^2 / (2 sigmoid(rho))`.
        let Some(rho) = st.components.get(p + 1) else {
            continue;
        };
        // sigmoid(rho) = d softplus / d rho = 1 - e^-scale.
        let slope = 1.0 - crate::elementary::exp(-scale);
        let width = st.gradient_threshold * rho.gradient_se * scale * scale / (2.0 * slope);
        if width > RESOLUTION * scale {
            return Some(format!(
                "the gradient is too noisy to settle the scale of `{name}`: it leaves the scale undecided within {} (the guide's scale is {}; within {RESOLUTION} of it is needed)",
                fmt(width),
                fmt(scale)
            ));
        }
    }
    None
}

/// Which way to change the step for a component that is not stationary: along its mean
/// gradient it is still on its way (unless Adam crawls), against it the values wander or
/// overshoot.
fn direction(facts: &RunFacts, st: &Stationarity, c: &ComponentTest) -> String {
    let moved = if c.drift != 0.0 { c.drift } else { c.moved };
    if moved * c.gradient_mean <= 0.0 {
        return format!(
            "the values move against their mean gradient (net {} along a path of {}: they wander or overshoot); {SMALLER}, or a larger batch",
            fmt(c.moved),
            fmt(c.path)
        );
    }
    if let Some(lr) = facts.adam_lr {
        // Adam's step is about lr x mean / rms of the gradient; far below that, it still
        // divides by the large gradients of earlier jumps.
        let speed = c.path / st.steps.max(1) as f64;
        let expected = lr * c.gradient_mean.abs() / c.gradient_rms.max(f64::MIN_POSITIVE);
        if speed < CRAWL * expected {
            return format!(
                "the values crawl along a steady gradient at {} per step, far below the step size {} (Adam still divides by the large gradients of earlier jumps); {SMALLER}",
                fmt(speed),
                fmt(lr)
            );
        }
    }
    format!(
        "the values still move along the gradient (by {} over the last fifth); {LARGER}",
        fmt(c.moved)
    )
}

/// Four significant digits (in scientific notation below 0.001 and from 10^6 on).
fn fmt(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    if !(1e-3..1e6).contains(&x.abs()) {
        return format!("{x:.3e}");
    }
    let digits = (3 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.digits$}")
}

/// A least-squares line through `(t_i, y_i)` and its change over the span of `t`.
struct Line {
    /// The slope times `t_last - t_first`.
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
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::stationarity::Window;
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

    /// Pseudo-random noise of a fixed sequence (no randomness in tests of the rule): a hash's
    /// uniforms, centred, with unit variance. The stationarity tests use it too.
    pub(in crate::experiment) fn noise(k: u64) -> f64 {
        // splitmix64's finaliser: consecutive `k` give unrelated words.
        let mut z = k.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 3.46
    }

    /// A run of 10,000 steps of one parameter whose step `k` has gradient `g(k)` and leaves
    /// the value `v(k)`, measured every 100 steps with objective `obj(k)`.
    struct Fake {
        rows: Vec<TrajectoryRow>,
        window: Window,
    }

    fn fake(g: impl Fn(u64) -> f64, v: impl Fn(u64) -> f64, obj: impl Fn(u64) -> f64) -> Fake {
        let n = 10_000;
        let mut window = Window::new(n, 1);
        for k in 0..n {
            let before = if k == 0 { v(0) } else { v(k - 1) };
            window.record(k, &[before], &[g(k)], &[v(k)]);
        }
        let rows = (0..=n / 100)
            .map(|j| row(j * 100, obj(j * 100), 0.1, v(j * 100)))
            .collect();
        Fake { rows, window }
    }

    fn judge(f: &Fake, lr: Option<f64>, bias: Option<&str>) -> Verdict {
        let names = ["theta".to_string()];
        let st = f.window.assess();
        assess(&RunFacts {
            kind: ObjectiveKind::Objective,
            stop: StopReason::Completed,
            stop_message: None,
            done: 10_000,
            skipped: 0,
            trajectory: &f.rows,
            param_names: &names,
            latent_names: &[],
            stationarity: st.as_ref(),
            theta_names: &names,
            adam_lr: lr,
            bias,
            maximise: true,
        })
    }

    fn flat(k: u64) -> f64 {
        -10.0 + 0.1 * noise(k + 11)
    }

    #[test]
    fn a_stationary_run_converges_and_a_biased_one_says_whose_answer() {
        let f = fake(noise, |k| 0.37 + 1e-3 * noise(k + 3), flat);
        let v = judge(&f, Some(0.0015), None);
        assert!(v.converged, "{}", v.reason);
        assert!(v.reason.starts_with("converged: "), "{}", v.reason);
        let v = judge(&f, Some(0.0015), Some("it misses the boundary"));
        assert!(v.converged);
        assert!(
            v.reason
                .starts_with("converged, but to the estimator's biased answer")
                && v.reason.contains("misses the boundary"),
            "{}",
            v.reason
        );
    }

    #[test]
    fn a_steady_climb_wants_a_larger_step_even_when_the_objective_barely_moves() {
        // The case of a tiny step: the value creeps along a clearly non-zero gradient at
        // about the step size per step, the objective flat within its noise.
        let f = fake(|k| 0.76 + 0.2 * noise(k), |k| 1.0 + 1e-5 * k as f64, flat);
        let v = judge(&f, Some(1e-5), None);
        assert!(!v.converged);
        assert!(
            v.reason.contains("mean gradient in `theta`"),
            "{}",
            v.reason
        );
        assert!(v.reason.contains("larger step size"), "{}", v.reason);
    }

    #[test]
    fn a_crawl_far_below_the_step_size_wants_a_smaller_step() {
        // Adam at step 5 moving 1e-4 per step along a steady gradient: it still divides by
        // the huge gradients of earlier jumps.
        let f = fake(|k| 1.0 + 0.01 * noise(k), |k| 1e-4 * k as f64, flat);
        let v = judge(&f, Some(5.0), None);
        assert!(!v.converged);
        assert!(v.reason.contains("crawl"), "{}", v.reason);
        assert!(v.reason.contains("smaller step size"), "{}", v.reason);
    }

    #[test]
    fn an_objective_that_gets_worse_wants_a_smaller_step() {
        let f = fake(noise, |k| 0.37 + 1e-3 * noise(k + 3), |k| -0.01 * k as f64);
        let v = judge(&f, Some(1000.0), None);
        assert!(!v.converged);
        assert!(v.reason.contains("got worse"), "{}", v.reason);
        assert!(v.reason.contains("smaller step size"), "{}", v.reason);
    }

    #[test]
    fn values_moving_against_their_gradient_want_a_smaller_step() {
        let f = fake(|k| -0.3 + noise(k), |k| 0.37 + 2e-5 * k as f64, flat);
        let v = judge(&f, Some(0.0015), None);
        assert!(!v.converged);
        assert!(
            v.reason.contains("against their mean gradient"),
            "{}",
            v.reason
        );
        assert!(v.reason.contains("smaller step size"), "{}", v.reason);
    }

    /// A variational run of one guided latent `z` whose location and `rho` follow `loc(k)`
    /// and `rho(k)` with the guide scale `scale`, the location's gradient `g(k)`. (`loc` and
    /// `g` must draw on other noise: step `k`'s gradient is taken at `loc(k - 1)`, and a
    /// gradient noise equal to the iterate's would read as curvature.)
    fn guided(g: impl Fn(u64) -> f64, loc: impl Fn(u64) -> f64, scale: f64) -> Verdict {
        guided_rho(g, loc, scale, 0.1)
    }

    /// [`guided`] with `rho`'s gradient noise `rho_noise` per step.
    fn guided_rho(
        g: impl Fn(u64) -> f64,
        loc: impl Fn(u64) -> f64,
        scale: f64,
        rho_noise: f64,
    ) -> Verdict {
        let n = 10_000;
        let mut window = Window::new(n, 2);
        for k in 0..n {
            let b = if k == 0 { 0 } else { k - 1 };
            window.record(
                k,
                &[loc(b), 0.0],
                &[g(k), rho_noise * noise(k + 5)],
                &[loc(k), 0.01 * noise(k + 9)],
            );
        }
        let rows: Vec<TrajectoryRow> = (0..=n / 100)
            .map(|j| TrajectoryRow {
                latent_loc: vec![loc(j * 100)],
                latent_scale: vec![scale],
                params: vec![],
                ..row(j * 100, flat(j * 100), 0.1, 0.0)
            })
            .collect();
        let names = ["mu[z]".to_string(), "rho[z]".to_string()];
        let st = window.assess();
        assess(&RunFacts {
            kind: ObjectiveKind::Elbo,
            stop: StopReason::Completed,
            stop_message: None,
            done: n,
            skipped: 0,
            trajectory: &rows,
            param_names: &[],
            latent_names: &["z".to_string()],
            stationarity: st.as_ref(),
            theta_names: &names,
            adam_lr: Some(0.0015),
            bias: None,
            maximise: true,
        })
    }

    #[test]
    fn a_guided_latent_converges_when_its_gradient_resolves_it() {
        // Gradient noise 0.1 per step: the mean is known to about 0.1 / sqrt(2000), which at
        // scale 0.4 locates the optimum far within a quarter of the scale.
        let v = guided(|k| 0.1 * noise(k), |k| 1.0 + 0.002 * noise(k + 1001), 0.4);
        assert!(v.converged, "{}", v.reason);
    }

    #[test]
    fn a_gradient_too_noisy_to_locate_the_optimum_does_not_vouch_for_it() {
        // Score-like noise: 30 per step, so the mean is known to about 0.67, and
        // 3.2 x 0.67 x 0.64^2 is far more than a quarter of the scale 0.64.
        let v = guided(|k| 30.0 * noise(k), |k| 1.4 + 0.002 * noise(k + 1001), 0.64);
        assert!(!v.converged);
        assert!(v.reason.contains("too noisy to locate `z`"), "{}", v.reason);
    }

    #[test]
    fn a_scale_gradient_too_noisy_to_settle_the_scale_does_not_vouch_for_it() {
        // rho's gradient noise 30 per step: its mean known to about 0.67, which at scale 0.6
        // (sigmoid(rho) = 0.45) leaves the scale undecided within 3.2 x 0.67 x 0.36 / 0.9.
        let v = guided_rho(
            |k| 0.1 * noise(k),
            |k| 1.0 + 0.002 * noise(k + 1001),
            0.6,
            30.0,
        );
        assert!(!v.converged);
        assert!(v.reason.contains("settle the scale of `z`"), "{}", v.reason);
    }

    #[test]
    fn a_location_that_jumps_by_more_than_half_a_scale_wants_a_smaller_step() {
        let v = guided(|k| 0.1 * noise(k), |k| 1.0 + 5.0 * noise(k + 1001), 0.35);
        assert!(!v.converged, "{}", v.reason);
        assert!(v.reason.contains("the values jump"), "{}", v.reason);
        assert!(v.reason.contains("smaller step size"), "{}", v.reason);
    }

    fn plain(rows: &[TrajectoryRow], stop: StopReason, skipped: u64) -> Verdict {
        let names = ["theta".to_string()];
        let mut window = Window::new(10_000, 1);
        for k in 0..10_000 {
            window.record(k, &[0.3], &[noise(k)], &[0.3]);
        }
        let st = window.assess();
        assess(&RunFacts {
            kind: ObjectiveKind::Objective,
            stop,
            stop_message: None,
            done: rows.last().map_or(0, |r| r.iter),
            skipped,
            trajectory: rows,
            param_names: &names,
            latent_names: &[],
            stationarity: st.as_ref(),
            theta_names: &names,
            adam_lr: None,
            bias: None,
            maximise: true,
        })
    }

    #[test]
    fn early_stop_skips_and_short_runs_are_not_converged() {
        let rows: Vec<_> = (0..=100).map(|k| row(k * 100, -10.0, 0.1, 0.3)).collect();
        assert!(!plain(&rows, StopReason::NonFinite, 0).converged);
        let v = plain(&rows, StopReason::Completed, 10_000);
        assert!(v.reason.contains("every step was skipped"), "{}", v.reason);
        assert!(!plain(&rows, StopReason::Completed, 3).converged);
        assert!(plain(&rows, StopReason::Completed, 0).converged);
        let short: Vec<_> = (0..=3).map(|k| row(k * 100, -10.0, 0.1, 0.3)).collect();
        let v = plain(&short, StopReason::Completed, 0);
        assert!(
            !v.converged && v.reason.starts_with("not judged"),
            "{}",
            v.reason
        );
    }

    /// Iterates bouncing by 1 about the optimum 2 of `-(x - 2)^2 / 2` (gradient `2 - x` plus
    /// noise), the last one at 3.5: judged as the answer, it is off by 1.5 where the gradient
    /// resolves hundredths; the average of the iterates, judged as the answer, is at the
    /// optimum. The mean gradient over the window is zero in both.
    fn bouncing(averaged: bool) -> Verdict {
        let n = 10_000;
        let x = |k: u64| if k == n - 1 { 3.5 } else { 2.0 + noise(k + 17) };
        let mut window = Window::new(n, 1);
        let mut avg = 2.0;
        for k in 0..n {
            let before = if k == 0 { 2.0 } else { x(k - 1) };
            let g = 2.0 - before + 0.5 * noise(k);
            avg += (x(k) - avg) / (k + 1) as f64;
            let answer = if averaged { avg } else { x(k) };
            window.record_answer(k, &[before], &[g], &[x(k)], &[answer]);
        }
        let rows: Vec<_> = (0..=n / 100)
            .map(|j| row(j * 100, flat(j * 100), 0.1, 2.0))
            .collect();
        let names = ["theta".to_string()];
        let st = window.assess();
        assert_eq!(st.as_ref().unwrap().averaged, averaged);
        assess(&RunFacts {
            kind: ObjectiveKind::Objective,
            stop: StopReason::Completed,
            stop_message: None,
            done: n,
            skipped: 0,
            trajectory: &rows,
            param_names: &names,
            latent_names: &[],
            stationarity: st.as_ref(),
            theta_names: &names,
            adam_lr: Some(1.0),
            bias: None,
            maximise: true,
        })
    }

    #[test]
    fn the_answer_is_judged_a_bouncing_last_iterate_is_not_an_average_is() {
        let last = bouncing(false);
        assert!(!last.converged, "{}", last.reason);
        assert!(
            last.reason.contains("at the answer is -1.5"),
            "{}",
            last.reason
        );
        assert!(last.reason.contains("smaller step size"), "{}", last.reason);
        let avg = bouncing(true);
        assert!(avg.converged, "{}", avg.reason);
    }

    #[test]
    fn a_run_stopped_on_an_infinite_objective_is_told_the_model_not_the_step() {
        let rows: Vec<_> = (0..=1).map(|k| row(k * 100, -10.0, 0.1, 0.3)).collect();
        let names = ["theta".to_string()];
        let judge = |msg: &str| {
            assess(&RunFacts {
                kind: ObjectiveKind::Elbo,
                stop: StopReason::NonFinite,
                stop_message: Some(msg),
                done: 100,
                skipped: 0,
                trajectory: &rows,
                param_names: &[],
                latent_names: &[],
                stationarity: None,
                theta_names: &names,
                adam_lr: None,
                bias: None,
                maximise: true,
            })
        };
        let v = judge(
            "at iteration 100: the objective estimate is -inf (f = -inf at measurement sample \
             688); factor log(normal_cdf((mu - limit) / sigma)) at m.dsgd:13:5 gives \
             log-density -inf: log(0) is -inf",
        );
        assert!(!v.converged);
        assert!(!v.reason.contains("smaller step"), "{}", v.reason);
        assert!(
            v.reason.contains("not finite")
                && v.reason.contains("init(")
                && v.reason.contains("log_normal_cdf"),
            "{}",
            v.reason
        );
        let v = judge("at iteration 100: the log-density log p(x, z) is NaN at gradient sample 3");
        assert!(!v.reason.contains("smaller step"), "{}", v.reason);
        let v = judge("at iteration 7: the gradient with respect to mu[z] is inf");
        assert!(v.reason.contains("smaller step size"), "{}", v.reason);
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
    }
}
