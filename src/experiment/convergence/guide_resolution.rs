//! What a guided latent's scale says of the last fifth: whether its location or scale jumps
//! (spreads by more than a fraction of the guide's scale), whether the last iterate sits off
//! the optimum by more than the gradient allows, and whether the gradient is precise enough
//! to locate the optimum within a fraction of the guide's scale.

use super::super::report::TrajectoryRow;
use super::super::stationarity::{ComponentTest, Stationarity};
use super::advice::fmt;
use super::{JUMP, RESOLUTION, RunFacts};

/// The guided latent (by the index of its `mu` in the optimised vector) named `mu[name]`,
/// with its guide scale at the end.
fn guided<'a>(facts: &'a RunFacts, window: &[&TrajectoryRow]) -> Vec<(usize, &'a str, f64)> {
    let last = window[window.len() - 1];
    // Each name's first position, looked up by name: a search of the names per latent
    // would take quadratic time over a plate's row latents.
    let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (p, t) in facts.theta_names.iter().enumerate() {
        at.entry(t.as_str()).or_insert(p);
    }
    facts
        .latent_names
        .iter()
        .enumerate()
        .filter_map(|(i, n)| {
            let mu = format!("mu[{n}]");
            let p = *at.get(mu.as_str())?;
            Some((p, n.as_str(), last.latent_scale.get(i).copied()?))
        })
        .collect()
}

/// The component whose gradient at the answer is resolvably non-zero, with its `z`, when the
/// answer is the last iterate: a model parameter at any size (it has no scale of its own but
/// what the gradient resolves), a guided latent's location or scale only when the offset the
/// gradient implies (through the curvature at the guide's optimum, as [`unresolved`] reads
/// it) exceeds [`RESOLUTION`] of its guide scale.
pub(super) fn answer_off(
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
pub(super) fn jumps(
    facts: &RunFacts,
    st: &Stationarity,
    window: &[&TrajectoryRow],
) -> Option<String> {
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
pub(super) fn unresolved(facts: &RunFacts, st: &Stationarity) -> Option<String> {
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
