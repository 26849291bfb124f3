//! Fitted values in natural units: each latent's mean, standard deviation and quantiles under
//! the fitted family, and the model's parameters by name.
//!
//! The family is Gaussian on an unconstrained variable `u ~ N(loc, scale)`, and a latent is
//! `z = T(u)` for a monotone increasing map `T` (the identity for an unconstrained latent).
//! Quantiles of `z` are `T` of the Gaussian quantiles; the mean and standard deviation of `z`
//! are the Gaussian expectations of `T(u)` and `T(u)^2`, computed by Gauss-Hermite quadrature
//! when `T` is not the identity. [`summarise_latent`] is the one place that does this.

use serde::{Deserialize, Serialize};

use crate::family::{Family, FamilyError};
use crate::ir::{Program, Transform};
use crate::special::probit;

/// A latent's fitted distribution in its own units.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatentSummary {
    /// The latent's name in the model.
    pub name: String,
    /// Mean of the latent under the fitted family.
    pub mean: f64,
    /// Standard deviation of the latent under the fitted family.
    pub sd: f64,
    /// 5 % quantile.
    pub q05: f64,
    /// Median.
    pub q50: f64,
    /// 95 % quantile.
    pub q95: f64,
    /// Mean of the Gaussian on the unconstrained variable `u` (equal to `mean` when
    /// `transform` is `identity`).
    pub guide_loc: f64,
    /// Standard deviation of that Gaussian.
    pub guide_scale: f64,
    /// The map `T` with `z = T(u)`: `identity`, `exp` (`z = lower + exp(u)`) or `logit`
    /// (`z = lower + (upper - lower) sigmoid(u)`).
    pub transform: String,
    /// The lower end of the latent's support; null when unbounded.
    pub lower: Option<f64>,
    /// The upper end of the latent's support; null when unbounded.
    pub upper: Option<f64>,
}

impl LatentSummary {
    /// The transform this summary names, rebuilt from `transform`, `lower` and `upper`
    /// (`None` when they do not describe one this version knows).
    pub fn transform_map(&self) -> Option<Transform> {
        match (self.transform.as_str(), self.lower, self.upper) {
            ("identity", None, None) => Some(Transform::Identity),
            ("exp", Some(lower), None) if lower.is_finite() => Some(Transform::Exp { lower }),
            ("logit", Some(lower), Some(upper))
                if lower.is_finite() && upper.is_finite() && lower < upper =>
            {
                Some(Transform::Logit { lower, upper })
            }
            _ => None,
        }
    }
}

/// A monotone increasing map from the unconstrained variable to the latent's support.
pub trait ToConstrained {
    /// The map's name as written to `run.json` (`identity`, ...).
    fn name(&self) -> String;
    /// `T(u)`.
    fn to_constrained(&self, u: f64) -> f64;
    /// Whether `T` is the identity (then no quadrature is needed).
    fn is_identity(&self) -> bool {
        false
    }
    /// The support `(low, high)`, infinite where unbounded.
    fn support(&self) -> (f64, f64) {
        (f64::NEG_INFINITY, f64::INFINITY)
    }
}

impl ToConstrained for Transform {
    fn name(&self) -> String {
        Transform::name(self).to_string()
    }
    fn to_constrained(&self, u: f64) -> f64 {
        Transform::to_constrained(self, u)
    }
    fn is_identity(&self) -> bool {
        *self == Transform::Identity
    }
    fn support(&self) -> (f64, f64) {
        Transform::support(self)
    }
}

/// The identity map: an unconstrained latent.
#[derive(Copy, Clone, Debug, Default)]
pub struct Identity;

impl ToConstrained for Identity {
    fn name(&self) -> String {
        "identity".to_string()
    }
    fn to_constrained(&self, u: f64) -> f64 {
        u
    }
    fn is_identity(&self) -> bool {
        true
    }
}

/// Nodes of the Gauss-Hermite rule used for the mean and sd of a transformed latent.
const HERMITE_NODES: usize = 64;

/// The summary of latent `name` whose unconstrained variable is `N(loc, scale)` and whose
/// value is `transform(u)`.
pub fn summarise_latent(
    name: &str,
    loc: f64,
    scale: f64,
    transform: &dyn ToConstrained,
) -> LatentSummary {
    let quantile = |p: f64| transform.to_constrained(loc + scale * probit(p));
    let (mean, sd) = if transform.is_identity() {
        (loc, scale)
    } else {
        let rule = gauss_hermite_normal(HERMITE_NODES);
        let values: Vec<(f64, f64)> = rule
            .iter()
            .map(|&(x, w)| (transform.to_constrained(loc + scale * x), w))
            .collect();
        let mean: f64 = values.iter().map(|(z, w)| w * z).sum();
        // The central second moment directly, to avoid cancellation in E[z^2] - E[z]^2.
        let var: f64 = values
            .iter()
            .map(|(z, w)| w * (z - mean) * (z - mean))
            .sum();
        (mean, var.max(0.0).sqrt())
    };
    let (low, high) = transform.support();
    LatentSummary {
        name: name.to_string(),
        mean,
        sd,
        q05: quantile(0.05),
        q50: quantile(0.5),
        q95: quantile(0.95),
        guide_loc: loc,
        guide_scale: scale,
        transform: transform.name(),
        lower: low.is_finite().then_some(low),
        upper: high.is_finite().then_some(high),
    }
}

/// Nodes `x_i` and weights `w_i` with `sum_i w_i g(x_i) ~ E[g(X)]`, `X ~ N(0, 1)`: the
/// Gauss-Hermite rule (weight `exp(-t^2)`) rescaled by `x = sqrt(2) t`, `w = w_t / sqrt(pi)`.
/// Roots by Newton's method on the orthonormal Hermite recurrence, started from the usual
/// asymptotic guesses.
pub fn gauss_hermite_normal(n: usize) -> Vec<(f64, f64)> {
    let mut nodes = vec![(0.0, 0.0); n];
    let pim4 = libm::pow(std::f64::consts::PI, -0.25);
    let nf = n as f64;
    let mut z = 0.0f64;
    for i in 0..n.div_ceil(2) {
        z = match i {
            0 => (2.0 * nf + 1.0).sqrt() - 1.85575 * libm::pow(2.0 * nf + 1.0, -1.0 / 6.0),
            1 => z - 1.14 * libm::pow(nf, 0.426) / z,
            2 => 1.86 * z - 0.86 * nodes[0].0,
            3 => 1.91 * z - 0.91 * nodes[1].0,
            _ => 2.0 * z - nodes[i - 2].0,
        };
        let mut pp = 0.0;
        for _ in 0..100 {
            let mut p1 = pim4;
            let mut p2 = 0.0;
            for j in 0..n {
                let p3 = p2;
                p2 = p1;
                let jf = j as f64;
                p1 = z * (2.0 / (jf + 1.0)).sqrt() * p2 - (jf / (jf + 1.0)).sqrt() * p3;
            }
            pp = (2.0 * nf).sqrt() * p2;
            let z1 = z;
            z = z1 - p1 / pp;
            if (z - z1).abs() <= 3e-14 * z.abs().max(1.0) {
                break;
            }
        }
        let w = 2.0 / (pp * pp);
        nodes[i] = (z, w);
        nodes[n - 1 - i] = (-z, w);
    }
    let scale = std::f64::consts::PI.sqrt();
    nodes
        .into_iter()
        .map(|(t, w)| (std::f64::consts::SQRT_2 * t, w / scale))
        .collect()
}

/// The fitted latents of `family` at `theta`, in the model's latent order, each through its
/// transform in `program`. Fixed latents (constant distributions, nothing fitted) are left
/// out.
pub fn latent_summaries(
    program: &Program,
    family: &Family,
    theta: &[f64],
) -> Result<Vec<LatentSummary>, FamilyError> {
    let mut state = family.state();
    state.update(family, theta)?;
    Ok(fitted_latents(family)
        .map(|i| {
            summarise_latent(
                &family.latent_names()[i],
                state.loc(i),
                state.scale(i),
                &program.latent_transform(i),
            )
        })
        .collect())
}

/// The guide's location and scale of every fitted latent at `theta` (the order of
/// [`latent_summaries`]); empty when the family cannot be evaluated there.
pub fn guide_moments(family: &Family, theta: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let mut state = family.state();
    if state.update(family, theta).is_err() {
        return (Vec::new(), Vec::new());
    }
    fitted_latents(family)
        .map(|i| (state.loc(i), state.scale(i)))
        .unzip()
}

/// The indices of the latents some parameter moves (all but the fixed ones).
fn fitted_latents(family: &Family) -> impl Iterator<Item = usize> {
    family
        .gradient_wanted()
        .into_iter()
        .enumerate()
        .filter_map(|(i, fitted)| fitted.then_some(i))
}

/// The model's own parameters (`param` declarations), by name, at `theta`.
pub fn param_values(family: &Family, theta: &[f64]) -> Vec<(String, f64)> {
    family.names()[..family.model_param_count()]
        .iter()
        .cloned()
        .zip(theta.iter().copied())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Exp;
    impl ToConstrained for Exp {
        fn name(&self) -> String {
            "exp".into()
        }
        fn to_constrained(&self, u: f64) -> f64 {
            u.exp()
        }
    }

    #[test]
    fn hermite_rule_integrates_normal_moments() {
        let rule = gauss_hermite_normal(HERMITE_NODES);
        let moment = |k: i32| rule.iter().map(|(x, w)| w * x.powi(k)).sum::<f64>();
        assert!((moment(0) - 1.0).abs() < 1e-13);
        assert!(moment(1).abs() < 1e-13);
        assert!((moment(2) - 1.0).abs() < 1e-12);
        assert!((moment(4) - 3.0).abs() < 1e-11);
        assert!((moment(6) - 15.0).abs() < 1e-10);
    }

    #[test]
    fn identity_summary_is_the_gaussian() {
        let s = summarise_latent("x", 1.5, 2.0, &Identity);
        assert_eq!((s.mean, s.sd, s.q50), (1.5, 2.0, 1.5));
        assert!((s.q05 - (1.5 - 2.0 * 1.6448536269514722)).abs() < 1e-12);
        assert!((s.q95 - (1.5 + 2.0 * 1.6448536269514722)).abs() < 1e-12);
    }

    #[test]
    fn log_normal_summary_matches_closed_form() {
        let (m, s) = (0.3, 0.7);
        let sum = summarise_latent("sigma", m, s, &Exp);
        let mean = (m + s * s / 2.0).exp();
        let sd = ((s * s).exp_m1() * (2.0 * m + s * s).exp()).sqrt();
        assert!(
            (sum.mean - mean).abs() < 1e-12 * mean,
            "{} vs {mean}",
            sum.mean
        );
        assert!((sum.sd - sd).abs() < 1e-10 * sd, "{} vs {sd}", sum.sd);
        assert!((sum.q50 - m.exp()).abs() < 1e-14);
        assert!((sum.q05 - (m - 1.6448536269514722 * s).exp()).abs() < 1e-12);
        assert_eq!(sum.transform, "exp");
    }
}
