//! What a verdict that is not "converged" tells the user to change: the step's direction
//! (smaller when the values overshoot, wander, jump or crawl; larger when they still move
//! steadily along the gradient) and what to do about a non-finite value; and the numbers'
//! wording.

use super::super::stationarity::{ComponentTest, Stationarity};
use super::objective_trend::Scatter;
use super::{CRAWL, RunFacts};

pub(super) const LARGER: &str = "run more iterations or take a larger step size";
pub(super) const SMALLER: &str = "take a smaller step size";

/// "Take a smaller step" in words the user can act on. With Adam or SGD, the step size.
/// DoG has no step size to set: it sets its own, `r_t / sqrt(G_t)`, which shrinks like
/// `1 / sqrt(t)` once gradient noise dominates, so four times the iterations halve it (the
/// random walk at seed 3: ELBO 20.4 after 10^4 steps, 27.7 after 4 x 10^4). The other way
/// is a step of the user's own: Adam with a step size of the distance DoG's iterates moved
/// per step over the last fifth (Adam moves by about a quarter of its step size where the
/// gradient is noise, so its steps are smaller), which starts afresh and may need more
/// iterations to arrive (the random walk at Adam 0.0002: ELBO -484 after 10^4 steps).
pub(super) fn smaller(facts: &RunFacts, st: &Stationarity) -> String {
    if !facts.own_step {
        return SMALLER.into();
    }
    let more = format!(
        "DoG sets its own step, which shrinks like 1/sqrt(t): run four times the iterations (`--iters {}`) to halve it",
        4 * facts.done.max(1)
    );
    let per_step = st
        .components
        .iter()
        .map(|c| c.path / st.steps.max(1) as f64)
        .fold(0.0, f64::max);
    match one_digit(per_step) {
        Some(lr) => format!(
            "{more}; or choose the step yourself, `--optimizer adam --lr {lr}` (DoG's iterates moved {} per step), which starts afresh and may need more iterations to arrive",
            fmt(per_step)
        ),
        None => more,
    }
}

/// `x` to one significant digit, written as `--lr` reads it; `None` for zero or a
/// non-finite value.
fn one_digit(x: f64) -> Option<String> {
    if !(x.is_finite() && x > 0.0) {
        return None;
    }
    let rounded: f64 = format!("{x:.0e}").parse().ok()?;
    Some(format!("{rounded}"))
}

/// What to do about a run that stopped on a non-finite value, from what went non-finite: an
/// objective or log-density that is itself infinite or NaN at some samples is the model's
/// (a term that is minus infinity where the samples reach, from the start), not the step's;
/// a gradient that overflows where the value is finite may be the step's.
pub(super) fn nonfinite_advice(message: Option<&str>) -> &'static str {
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

/// Which way to change the step for a component that is not stationary: along its mean
/// gradient it is still on its way (unless Adam crawls), against it the values wander or
/// overshoot.
pub(super) fn direction(facts: &RunFacts, st: &Stationarity, c: &ComponentTest) -> String {
    let moved = if c.drift != 0.0 { c.drift } else { c.moved };
    if moved * c.gradient_mean <= 0.0 {
        return format!(
            "the values move against their mean gradient (net {} along a path of {}: they wander or overshoot); {}, or a larger batch",
            fmt(c.moved),
            fmt(c.path),
            smaller(facts, st)
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

/// The advice when the objective's measurements scatter about their trend far beyond their
/// Monte Carlo noise, uncorrelated from one to the next: the values jump between
/// measurements, whatever the line through them says. Read only when no component's test
/// says which way the values go (a resolved drift along the gradient is a run on its way,
/// whose objective may scatter for other reasons: heavy-tailed samples whose standard error
/// understates them). Only for an optimiser with a step size
/// of its own: DoG picks its own step and answers with the iterates' average, which jumping
/// iterates do not move off the optimum.
pub(super) fn oscillates(facts: &RunFacts, scatter: &Scatter) -> String {
    format!(
        "the {} oscillates, its measurements scatter about their trend by {} times their Monte Carlo standard errors, uncorrelated from one to the next (autocorrelation {}), so the values jump between measurements; {SMALLER}",
        facts.kind.label(),
        fmt(scatter.dispersion.sqrt()),
        fmt(scatter.lag1)
    )
}

/// Four significant digits (in scientific notation below 0.001 and from 10^6 on).
pub(super) fn fmt(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    if !(1e-3..1e6).contains(&x.abs()) {
        return format!("{x:.3e}");
    }
    let digits = (3 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.digits$}")
}
