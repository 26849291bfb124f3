//! Log-densities of the distributions the language offers, expanded into primitives.
//!
//! Supports are if-statements (`x < 0` gives `-inf` for the half-line distributions), so the
//! smoothing treats a support boundary like any other branch. When `x` is data, those guards
//! are constants and vanish at build time.

use std::fmt;

use super::builder::{Builder, Var};
use crate::special::HALF_LN_2PI;

/// A distribution family, by its language name.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dist {
    /// `Normal(loc, scale)`, `scale` the standard deviation.
    Normal,
    /// `HalfNormal(scale)` on `x >= 0`.
    HalfNormal,
    /// `Exponential(rate)` on `x >= 0`.
    Exponential,
    /// `Logistic(loc, scale)`.
    Logistic,
    /// `Poisson(rate)`, mass at integer `x >= 0` (not checked: `x` is data).
    Poisson,
    /// `Bernoulli(p)`, mass at `x` in `{0, 1}`, written `x ln p + (1 - x) ln(1 - p)`.
    Bernoulli,
    /// `Binomial(n, p)`.
    Binomial,
    /// `Uniform(low, high)`.
    Uniform,
}

impl Dist {
    pub const ALL: [Dist; 8] = [
        Dist::Normal,
        Dist::HalfNormal,
        Dist::Exponential,
        Dist::Logistic,
        Dist::Poisson,
        Dist::Bernoulli,
        Dist::Binomial,
        Dist::Uniform,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Dist::Normal => "Normal",
            Dist::HalfNormal => "HalfNormal",
            Dist::Exponential => "Exponential",
            Dist::Logistic => "Logistic",
            Dist::Poisson => "Poisson",
            Dist::Bernoulli => "Bernoulli",
            Dist::Binomial => "Binomial",
            Dist::Uniform => "Uniform",
        }
    }

    /// The distribution with this language name.
    pub fn from_name(name: &str) -> Option<Dist> {
        Dist::ALL.into_iter().find(|d| d.name() == name)
    }

    /// Number of arguments (after the value).
    pub fn arity(self) -> usize {
        match self {
            Dist::HalfNormal | Dist::Exponential | Dist::Poisson | Dist::Bernoulli => 1,
            Dist::Normal | Dist::Logistic | Dist::Binomial | Dist::Uniform => 2,
        }
    }

    /// Names of the arguments, for error messages and documentation.
    pub fn parameter_names(self) -> &'static [&'static str] {
        match self {
            Dist::Normal | Dist::Logistic => &["loc", "scale"],
            Dist::HalfNormal => &["scale"],
            Dist::Exponential | Dist::Poisson => &["rate"],
            Dist::Bernoulli => &["p"],
            Dist::Binomial => &["n", "p"],
            Dist::Uniform => &["low", "high"],
        }
    }

    /// `log p(x | args)`; `args.len()` must equal [`Dist::arity`] (checked by the caller).
    pub(crate) fn log_density<'b>(self, b: &'b Builder, x: Var<'b>, args: &[Var<'b>]) -> Var<'b> {
        let neg_inf = b.constant(f64::NEG_INFINITY);
        match self {
            Dist::Normal => normal(x, args[0], args[1]),
            Dist::HalfNormal => {
                let zero = b.constant(0.0);
                let inside = normal(x, zero, args[0]) + std::f64::consts::LN_2;
                b.if_neg(x, neg_inf, inside)
            }
            Dist::Exponential => {
                let rate = args[0];
                b.if_neg(x, neg_inf, rate.ln() - rate * x)
            }
            Dist::Logistic => {
                let u = (x - args[0]) / args[1];
                -u - args[1].ln() - 2.0 * (-u).exp().ln_1p()
            }
            Dist::Poisson => {
                let rate = args[0];
                x * rate.ln() - rate - (x + 1.0).lgamma()
            }
            Dist::Bernoulli => {
                let p = args[0];
                x * p.ln() + (1.0 - x) * (1.0 - p).ln()
            }
            Dist::Binomial => {
                let (n, p) = (args[0], args[1]);
                (n + 1.0).lgamma() - (x + 1.0).lgamma() - (n - x + 1.0).lgamma()
                    + x * p.ln()
                    + (n - x) * (1.0 - p).ln()
            }
            Dist::Uniform => {
                let (low, high) = (args[0], args[1]);
                let inside = -(high - low).ln();
                let below_high = b.if_lt(high, x, neg_inf, inside);
                b.if_lt(x, low, neg_inf, below_high)
            }
        }
    }
}

/// `log N(x | loc, scale) = -((x - loc) / scale)^2 / 2 - ln scale - ln(2 pi) / 2`.
fn normal<'b>(x: Var<'b>, loc: Var<'b>, scale: Var<'b>) -> Var<'b> {
    let u = (x - loc) / scale;
    -0.5 * u.powi(2) - scale.ln() - HALF_LN_2PI
}

impl fmt::Display for Dist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
