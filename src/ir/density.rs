//! Log-densities expanded into primitives, and constrained latents built on the builder.
//!
//! For a value that is not a latent's own (data, or an expression of latents), a support
//! boundary is an if-statement (`x < 0` gives `-inf` for the half-line distributions), so
//! smoothing treats it like any other branch; when `x` is data those guards are constants and
//! vanish at build time. A latent sampled from a distribution lives in its support by
//! construction (`z = T(u)`, see [`Transform`]): its log-density is the formula inside the
//! support plus `log |T'(u)|`, with no if-statement.

use super::builder::{Builder, Var, check_arity};
use super::dist::{Dist, Support};
use super::error::IrError;
use super::transform::Transform;
use crate::special::HALF_LN_2PI;

/// `ln(pi)`.
const LN_PI: f64 = 1.144_729_885_849_400_2;

/// A point at which a log-density is expanded: the value and, where the caller knows them
/// exactly, `ln x` and `ln(1 - x)` (a transformed latent does: `ln exp(u) = u`), which are
/// then used instead of the rounded `ln` of `x`.
#[derive(Copy, Clone, Debug)]
struct At<'b> {
    x: Var<'b>,
    ln_x: Option<Var<'b>>,
    ln_1mx: Option<Var<'b>>,
}

impl<'b> At<'b> {
    fn ln_x(self) -> Var<'b> {
        self.ln_x.unwrap_or_else(|| self.x.ln())
    }
    fn ln_1mx(self) -> Var<'b> {
        self.ln_1mx.unwrap_or_else(|| (1.0 - self.x).ln())
    }
}

/// A latent on its support: the program's unconstrained latent `u`, the value `z = T(u)` the
/// model uses, and `log |T'(u)|` (`None` for the identity, whose log-Jacobian is 0).
#[derive(Copy, Clone, Debug)]
pub struct Constrained<'b> {
    pub u: Var<'b>,
    pub z: Var<'b>,
    pub log_jacobian: Option<Var<'b>>,
    pub transform: Transform,
    ln_z: Option<Var<'b>>,
    ln_1mz: Option<Var<'b>>,
}

/// A latent drawn from a distribution: [`Constrained`] plus `log p(z) + log |T'(u)|`.
#[derive(Copy, Clone, Debug)]
pub struct Sampled<'b> {
    pub latent: Constrained<'b>,
    /// The log-density of `z` under the prior plus the log-Jacobian: the term this latent
    /// adds to `log p` on the unconstrained scale.
    pub log_density: Var<'b>,
}

impl Builder {
    /// The log-density of `dist` with arguments `args` at `x`, expanded into primitives, with
    /// its support boundary as if-statements.
    pub fn log_density<'b>(
        &'b self,
        dist: Dist,
        x: Var<'b>,
        args: &[Var<'b>],
    ) -> Result<Var<'b>, IrError> {
        arity(dist, args)?;
        let at = At {
            x,
            ln_x: None,
            ln_1mx: None,
        };
        // The constant first, as the expansion always made it: arena order stays the same.
        let neg_inf = self.constant(f64::NEG_INFINITY);
        let inside = inside_support(dist, at, args);
        Ok(match dist.support() {
            Support::NonNegative | Support::Positive => self.if_neg(x, neg_inf, inside),
            Support::Interval => {
                let below_high = self.if_lt(args[1], x, neg_inf, inside);
                self.if_lt(x, args[0], neg_inf, below_high)
            }
            Support::UnitInterval => {
                let one = self.constant(1.0);
                let below_one = self.if_lt(one, x, neg_inf, inside);
                self.if_neg(x, neg_inf, below_one)
            }
            Support::Real | Support::Counts | Support::Binary | Support::CountsUpTo => inside,
        })
    }

    /// `log p(x | p)` of a Bernoulli whose `x` is known to be 0 or 1 but is not a constant
    /// (a plate's data column): `ln(x p + (1 - x)(1 - p))`, which is exactly `ln p` at 1 and
    /// `ln(1 - p)` at 0, as [`Builder::log_density`] folds a constant `x` to; its
    /// `x ln p + (1 - x) ln(1 - p)` would give `0 * -inf = NaN` where `p` rounds to 0 or 1.
    pub fn bernoulli_of_binary<'b>(&'b self, x: Var<'b>, p: Var<'b>) -> Var<'b> {
        (x * p + (1.0 - x) * (1.0 - p)).ln()
    }

    /// Declares the next latent on `transform`: the program's latent is `u`, the model's value
    /// `z = T(u)`. The caller adds `log_jacobian` (if any) to the log-density.
    pub fn constrained_latent(&self, name: &str, transform: Transform) -> Constrained<'_> {
        let u = self.latent_on(name, transform);
        let (z, log_jacobian, ln_z, ln_1mz) = match transform {
            Transform::Identity => (u, None, None, None),
            Transform::Exp { lower } => {
                let e = u.exp();
                let ln_z = (lower == 0.0).then_some(u);
                (e + lower, Some(u), ln_z, None)
            }
            Transform::Logit { lower, upper } => {
                let width = upper - lower;
                // ln sigmoid(u) = -softplus(-u) and ln(1 - sigmoid(u)) = -softplus(u), exact
                // where sigmoid(u) rounds to 0 or 1.
                let ln_p = -(-u).softplus();
                let ln_q = -u.softplus();
                let z = u.sigmoid() * width + lower;
                let log_jacobian = ln_p + ln_q + crate::elementary::ln(width);
                let unit = lower == 0.0 && upper == 1.0;
                (
                    z,
                    Some(log_jacobian),
                    unit.then_some(ln_p),
                    unit.then_some(ln_q),
                )
            }
        };
        Constrained {
            u,
            z,
            log_jacobian,
            transform,
            ln_z,
            ln_1mz,
        }
    }

    /// Declares the next latent with prior `dist(args)`: on the transform its support needs
    /// (given the arguments that are constants), with `log p(z) + log |T'(u)|` and no
    /// if-statement for the support. A discrete distribution, or `Uniform` bounds that are
    /// not constants, is an error.
    pub fn sample_latent<'b>(
        &'b self,
        name: &str,
        dist: Dist,
        args: &[Var<'b>],
    ) -> Result<Sampled<'b>, IrError> {
        arity(dist, args)?;
        let consts: Vec<Option<f64>> = args.iter().map(|a| a.as_const()).collect();
        let transform =
            dist.latent_transform(&consts)
                .map_err(|why| IrError::NoLatentTransform {
                    dist: dist.name().to_string(),
                    why,
                })?;
        let latent = self.constrained_latent(name, transform);
        let at = At {
            x: latent.z,
            ln_x: latent.ln_z,
            ln_1mx: latent.ln_1mz,
        };
        let log_density = match latent.log_jacobian {
            Some(log_jacobian) => inside_support(dist, at, args) + log_jacobian,
            // On the real line there is no support to check: the plain expansion, node for
            // node as it always was (so models of such latents compile to the same program).
            None => self.log_density(dist, latent.z, args)?,
        };
        Ok(Sampled {
            latent,
            log_density,
        })
    }
}

fn arity(dist: Dist, args: &[Var<'_>]) -> Result<(), IrError> {
    check_arity(
        dist.name(),
        &dist.arity().to_string(),
        args.len() == dist.arity(),
        args.len(),
    )
}

/// `log p(x | args)` for `x` inside the support; `args.len()` equals [`Dist::arity`].
fn inside_support<'b>(dist: Dist, at: At<'b>, args: &[Var<'b>]) -> Var<'b> {
    let x = at.x;
    match dist {
        Dist::Normal => normal(x, args[0], args[1]),
        Dist::HalfNormal => {
            let zero = x.builder().constant(0.0);
            normal(x, zero, args[0]) + std::f64::consts::LN_2
        }
        Dist::Exponential => {
            let rate = args[0];
            rate.ln() - rate * x
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
        Dist::Uniform => -(args[1] - args[0]).ln(),
        Dist::Gamma => {
            let (shape, rate) = (args[0], args[1]);
            shape * rate.ln() - shape.lgamma() + (shape - 1.0) * at.ln_x() - rate * x
        }
        Dist::Beta => {
            let (a, b) = (args[0], args[1]);
            (a + b).lgamma() - a.lgamma() - b.lgamma()
                + (a - 1.0) * at.ln_x()
                + (b - 1.0) * at.ln_1mx()
        }
        Dist::LogNormal => {
            let ln_x = at.ln_x();
            normal(ln_x, args[0], args[1]) - ln_x
        }
        Dist::StudentT => {
            let (nu, mu, sigma) = (args[0], args[1], args[2]);
            let t = (x - mu) / sigma;
            let half_nu1 = (nu + 1.0) * 0.5;
            half_nu1.lgamma()
                - (nu * 0.5).lgamma()
                - 0.5 * (nu.ln() + LN_PI)
                - sigma.ln()
                - half_nu1 * (t.powi(2) / nu).ln_1p()
        }
        Dist::Cauchy => {
            let t = (x - args[0]) / args[1];
            -LN_PI - args[1].ln() - t.powi(2).ln_1p()
        }
        Dist::HalfCauchy => {
            let t = x / args[0];
            (std::f64::consts::LN_2 - LN_PI) - args[0].ln() - t.powi(2).ln_1p()
        }
    }
}

/// `log N(x | loc, scale) = -((x - loc) / scale)^2 / 2 - ln scale - ln(2 pi) / 2`.
fn normal<'b>(x: Var<'b>, loc: Var<'b>, scale: Var<'b>) -> Var<'b> {
    let u = (x - loc) / scale;
    -0.5 * u.powi(2) - scale.ln() - HALF_LN_2PI
}
