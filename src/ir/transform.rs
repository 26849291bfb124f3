//! How a constrained latent lives on the whole real line: `z = T(u)`.
//!
//! The program's latent `Latent(i)` is the unconstrained `u`; the Gaussian guide is on `u`,
//! and the model sees `z = T(u)` with `log |T'(u)|` added to `log p`, as Stan and Pyro do.
//! A latent's own support boundary is then no if-statement. Every transform here is strictly
//! increasing, so a comparison `z < c` is exactly `u < T^{-1}(c)` and quantiles of `u` map to
//! quantiles of `z`; other layers use this to report latents in their natural units.

use std::fmt;

use crate::elementary;
use crate::special::{sigmoid, softplus};

/// A strictly increasing map from the real line onto a latent's support.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Transform {
    /// `z = u`, support the real line.
    Identity,
    /// `z = lower + exp(u)`, support `(lower, inf)`.
    Exp { lower: f64 },
    /// `z = lower + (upper - lower) sigmoid(u)`, support `(lower, upper)`.
    Logit { lower: f64, upper: f64 },
}

impl Transform {
    /// `z = T(u)`.
    pub fn to_constrained(&self, u: f64) -> f64 {
        match *self {
            Transform::Identity => u,
            Transform::Exp { lower } => lower + elementary::exp(u),
            Transform::Logit { lower, upper } => lower + (upper - lower) * sigmoid(u),
        }
    }

    /// `u = T^{-1}(z)`: `-inf`/`+inf` at and beyond the lower/upper end of the support,
    /// NaN for NaN.
    pub fn to_unconstrained(&self, z: f64) -> f64 {
        match *self {
            Transform::Identity => z,
            Transform::Exp { lower } => {
                if z <= lower {
                    f64::NEG_INFINITY
                } else {
                    elementary::ln(z - lower)
                }
            }
            Transform::Logit { lower, upper } => {
                if z <= lower {
                    f64::NEG_INFINITY
                } else if z >= upper {
                    f64::INFINITY
                } else {
                    // ln(p / (1 - p)) with p = (z - lower) / (upper - lower), written with
                    // both distances so that neither end loses digits.
                    elementary::ln((z - lower) / (upper - z))
                }
            }
        }
    }

    /// `log |T'(u)|`, the term added to `log p` for a latent on this transform.
    pub fn log_abs_det_jacobian(&self, u: f64) -> f64 {
        match *self {
            Transform::Identity => 0.0,
            Transform::Exp { .. } => u,
            Transform::Logit { lower, upper } => {
                elementary::ln(upper - lower) - softplus(-u) - softplus(u)
            }
        }
    }

    /// The support `(low, high)` of `z` (infinite ends where unbounded).
    pub fn support(&self) -> (f64, f64) {
        match *self {
            Transform::Identity => (f64::NEG_INFINITY, f64::INFINITY),
            Transform::Exp { lower } => (lower, f64::INFINITY),
            Transform::Logit { lower, upper } => (lower, upper),
        }
    }

    /// The transform's short name: `identity`, `exp`, `logit`.
    pub fn name(&self) -> &'static str {
        match self {
            Transform::Identity => "identity",
            Transform::Exp { .. } => "exp",
            Transform::Logit { .. } => "logit",
        }
    }

    /// `z = T(u)` written out with the given names, e.g. `s = exp(u)`.
    pub fn formula(&self, z: &str, u: &str) -> String {
        match *self {
            Transform::Identity => format!("{z} = {u}"),
            Transform::Exp { lower: 0.0 } => format!("{z} = exp({u})"),
            Transform::Exp { lower } => format!("{z} = {lower} + exp({u})"),
            Transform::Logit {
                lower: 0.0,
                upper: 1.0,
            } => format!("{z} = sigmoid({u})"),
            Transform::Logit { lower, upper } => {
                format!("{z} = {lower} + {} sigmoid({u})", upper - lower)
            }
        }
    }

    /// The support as an interval: `real`, `(0, inf)`, `(0, 1)`.
    pub fn support_text(&self) -> String {
        match *self {
            Transform::Identity => "real".to_string(),
            Transform::Exp { lower } => format!("({lower}, inf)"),
            Transform::Logit { lower, upper } => format!("({lower}, {upper})"),
        }
    }
}

/// The formula and the support, e.g. `z = 0 + exp(u) (z > 0)`.
impl fmt::Display for Transform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Transform::Identity => f.write_str("identity (real line)"),
            Transform::Exp { lower } => write!(f, "z = {lower} + exp(u) (z > {lower})"),
            Transform::Logit { lower, upper } => write!(
                f,
                "z = {lower} + {} sigmoid(u) ({lower} < z < {upper})",
                upper - lower
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Transform; 4] = [
        Transform::Identity,
        Transform::Exp { lower: 0.0 },
        Transform::Exp { lower: -2.0 },
        Transform::Logit {
            lower: -1.0,
            upper: 3.0,
        },
    ];

    #[test]
    fn inverse_undoes_the_transform() {
        for t in ALL {
            for k in -40..=40 {
                let u = f64::from(k) * 0.25;
                let back = t.to_unconstrained(t.to_constrained(u));
                assert!(
                    (back - u).abs() <= 1e-12 * (1.0 + u.abs()),
                    "{t:?} {u} {back}"
                );
            }
        }
    }

    #[test]
    fn jacobian_is_the_derivative_of_the_transform() {
        for t in ALL {
            for k in -20..=20 {
                let u = f64::from(k) * 0.3;
                let h = 1e-5;
                let fd = (t.to_constrained(u + h) - t.to_constrained(u - h)) / (2.0 * h);
                let j = t.log_abs_det_jacobian(u).exp();
                assert!((fd - j).abs() <= 1e-7 * (1.0 + j), "{t:?} {u}: {fd} vs {j}");
            }
        }
    }

    #[test]
    fn outside_the_support_the_inverse_is_infinite() {
        let t = Transform::Logit {
            lower: 0.0,
            upper: 1.0,
        };
        assert_eq!(t.to_unconstrained(0.0), f64::NEG_INFINITY);
        assert_eq!(t.to_unconstrained(1.5), f64::INFINITY);
        assert_eq!(
            Transform::Exp { lower: 0.0 }.to_unconstrained(-1.0),
            f64::NEG_INFINITY
        );
        assert!(Transform::Identity.to_unconstrained(f64::NAN).is_nan());
    }
}
