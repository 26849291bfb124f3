//! Lowering of `sample`: which distribution, whether the latent is fixed, observed or
//! guided, and the guide's starting mean and spread from `init(..)`.

use super::super::ast::{Expr, Ident, InitKey};
use super::super::diagnostic::Diag;
use super::{Lowerer, PendingKind, PendingLatent, Value};
use crate::ir::{Dist, LatentKind, Span, TermKind, Transform, Var};
use crate::special::softplus;

impl<'b, 'r> Lowerer<'b, 'r> {
    pub(super) fn sample(
        &mut self,
        dist: &Ident,
        args: &[Expr],
        fixed: Option<Span>,
        init: &[(InitKey, Span, Expr)],
        span: Span,
    ) -> Result<Value<'b>, Diag> {
        let d = self.sample_distribution(dist, args.len())?;
        let a = self.num_args(args)?;
        if self.in_body() {
            if self.objective && fixed.is_none() {
                return Err(self.refuse("samples a latent in an objective program", span));
            }
            if let Some(k) = a.iter().position(|v| self.row_dependent(*v)) {
                return Err(self.refuse(
                    "a latent's distribution reads data (its guide would start differently \
                     in each row)",
                    args[k].span,
                ));
            }
        }
        if let Some(d) = d {
            self.check_constant_arguments(d, &a, args)?;
        }
        let name = self.latent_name();
        let guide = self.guide_settings(init)?;
        let kind = if let Some(fixed_span) = fixed {
            fixed_kind(d, &a, init, fixed_span)?
        } else if self.objective {
            objective_kind(d, dist, &a, init)?
        } else {
            return self.guided_latent(d, dist, &a, guide, name, span);
        };
        let z = self.b.latent(&name);
        self.latents.push(PendingLatent { name, kind, span });
        Ok(Value::Num(z))
    }

    /// The distribution of a `sample` (`None` for `Flat()`); a discrete one is refused.
    fn sample_distribution(&self, dist: &Ident, n_args: usize) -> Result<Option<Dist>, Diag> {
        if dist.name == "Flat" {
            if n_args != 0 {
                return Err(Diag::new(
                    dist.span,
                    "`Flat` takes no arguments",
                    "`sample Flat()`",
                ));
            }
            return Ok(None);
        }
        let d = self.distribution(dist, n_args)?;
        if d.is_discrete() {
            return Err(Diag::new(
                dist.span,
                format!("a latent cannot be drawn from `{d}`: it is discrete"),
                "a continuous distribution after `sample`",
            )
            .with_note(format!(
                "a discrete quantity is observed data (`observe k ~ {d}(..)`); for an unknown \
                 one, write the mixture out: sum its values' weights with `factor` (or use a \
                 continuous relaxation)"
            )));
        }
        Ok(Some(d))
    }

    /// Refuses constant arguments the distribution cannot take (a scale of 0, `Uniform(1, 0)`).
    pub(super) fn check_constant_arguments(
        &self,
        d: Dist,
        a: &[Var<'b>],
        args: &[Expr],
    ) -> Result<(), Diag> {
        // Over the node limit, the builder hands out stand-ins: report the limit, not
        // what the stand-ins look like.
        let first = args.first().map_or(Span::default(), |e| e.span);
        self.check_node_limit(first)?;
        let consts: Vec<Option<f64>> = a.iter().map(|v| v.as_const()).collect();
        d.check_arguments(&consts).map_err(|p| {
            let at = p
                .argument
                .and_then(|k| args.get(k))
                .map_or(Span::default(), |e| e.span);
            Diag::new(at, p.message, p.expected)
        })
    }

    /// The `init(mean = .., std = .. | rho = ..)` of a `sample`: the mean (with its span) and
    /// the standard deviation, each if given.
    fn guide_settings(&mut self, init: &[(InitKey, Span, Expr)]) -> Result<GuideInit, Diag> {
        let mut guide = GuideInit::default();
        for (key, key_span, value) in init {
            let x = self.const_number(value, "a guide setting")?;
            let given = match key {
                InitKey::Mean => guide.mean.is_some(),
                InitKey::Std | InitKey::Rho => guide.std.is_some(),
            };
            if given {
                return Err(Diag::new(
                    *key_span,
                    "this guide setting is given twice",
                    "each of `mean` and `std`/`rho` at most once",
                ));
            }
            let x = if *key == InitKey::Rho { softplus(x) } else { x };
            if *key != InitKey::Mean && !(x > 0.0 && x.is_finite()) {
                return Err(Diag::new(
                    value.span,
                    format!("the guide's standard deviation would be {x}"),
                    "a positive std",
                ));
            }
            if *key == InitKey::Mean {
                guide.mean = Some((x, value.span));
            } else {
                guide.std = Some(x);
            }
        }
        Ok(guide)
    }

    /// A latent of a variational program: on the transform its support needs, with a
    /// Gaussian guide on the unconstrained `u` and `log p(z) + log |T'(u)|` added to `log p`.
    fn guided_latent(
        &mut self,
        d: Option<Dist>,
        dist: &Ident,
        a: &[Var<'b>],
        guide: GuideInit,
        name: String,
        span: Span,
    ) -> Result<Value<'b>, Diag> {
        let b = self.b;
        let consts: Vec<Option<f64>> = a.iter().map(|v| v.as_const()).collect();
        let transform = match d {
            None => Transform::Identity,
            Some(d) => d.latent_transform(&consts).map_err(|why| {
                Diag::new(
                    dist.span,
                    format!("a latent cannot be drawn from `{d}` here: {why}"),
                    "constant bounds, e.g. `sample Uniform(0, 1)`",
                )
            })?,
        };
        let init_mean = match guide.mean {
            Some((m, at)) => {
                let u = transform.to_unconstrained(m);
                if !u.is_finite() {
                    let (lo, hi) = transform.support();
                    return Err(Diag::new(
                        at,
                        format!("the guide's initial mean {m} is outside the latent's support"),
                        format!("a mean strictly between {lo} and {hi}"),
                    ));
                }
                u
            }
            None => d.map_or(0.0, |d| default_init_mean(d, &consts, transform)),
        };
        let kind = LatentKind::Guided {
            init_mean,
            init_std: guide.std.unwrap_or(1.0),
        };
        b.set_span(Some(span));
        let z = match d {
            None => b.latent(&name),
            Some(d) => {
                let s = b
                    .sample_latent(&name, d, a)
                    .map_err(|e| Diag::new(dist.span, e.to_string(), "matching arguments"))?;
                let inputs: Vec<_> = std::iter::once(s.latent.z)
                    .chain(a.iter().copied())
                    .collect();
                b.record_term(TermKind::Sample(d), span, s.log_density, &inputs);
                self.terms.push(s.log_density);
                if transform != Transform::Identity {
                    self.constrained
                        .insert(s.latent.z.id(), (s.latent.u, transform));
                }
                s.latent.z
            }
        };
        self.latents.push(PendingLatent {
            name,
            kind: PendingKind::Done(kind),
            span,
        });
        Ok(Value::Num(z))
    }
}

/// The guide settings written in `init(..)`.
#[derive(Copy, Clone, Debug, Default)]
struct GuideInit {
    /// The mean in the latent's own units, and where it was written.
    mean: Option<(f64, Span)>,
    /// The standard deviation of the guide on the unconstrained scale.
    std: Option<f64>,
}

/// A `fixed` latent: `Normal` with constant arguments, no guide.
fn fixed_kind<'b>(
    d: Option<Dist>,
    a: &[Var<'b>],
    init: &[(InitKey, Span, Expr)],
    fixed_span: Span,
) -> Result<PendingKind<'b>, Diag> {
    let consts: Option<Vec<f64>> = a.iter().map(|v| v.as_const()).collect();
    match (d, consts.as_deref()) {
        (Some(Dist::Normal), Some(&[loc, scale])) if scale > 0.0 => {
            if !init.is_empty() {
                return Err(Diag::new(
                    init[0].1,
                    "a fixed latent has no guide to initialise",
                    "no `init(..)` after `fixed`",
                ));
            }
            Ok(PendingKind::Done(LatentKind::Fixed { loc, scale }))
        }
        _ => Err(Diag::new(
            fixed_span,
            "only `Normal` latents with constant arguments can be `fixed`",
            "`sample Normal(loc, scale) fixed` with constant loc and positive scale",
        )),
    }
}

/// A latent of an objective program: `Normal(loc, scale)`, reparameterised.
fn objective_kind<'b>(
    d: Option<Dist>,
    dist: &Ident,
    a: &[Var<'b>],
    init: &[(InitKey, Span, Expr)],
) -> Result<PendingKind<'b>, Diag> {
    match d {
        Some(Dist::Normal) if init.is_empty() => Ok(PendingKind::Family {
            loc: a[0],
            scale: a[1],
        }),
        Some(Dist::Normal) => Err(Diag::new(
            init[0].1,
            "`init` sets a variational guide, but this is an objective program",
            "no `init(..)`: the family is what `sample` says",
        )),
        _ => Err(Diag::new(
            dist.span,
            format!(
                "latents of an objective program must be `Normal`, not `{}`",
                dist.name
            ),
            "`Normal(loc, scale)` (latents are reparameterised location-scale)",
        )),
    }
}

/// Where the guide of `u` starts when `init` does not say: a typical value of the prior when
/// its arguments are constants (its location, scale, or mean on the transformed scale),
/// else the middle of the unconstrained line.
fn default_init_mean(d: Dist, consts: &[Option<f64>], transform: Transform) -> f64 {
    let typical = match (d, consts) {
        (Dist::Normal | Dist::Logistic | Dist::Cauchy, [Some(loc), _]) => Some(*loc),
        (Dist::StudentT, [_, Some(loc), _]) => Some(*loc),
        (Dist::Exponential, [Some(rate)]) => Some(1.0 / rate),
        (Dist::HalfNormal | Dist::HalfCauchy, [Some(scale)]) => Some(*scale),
        (Dist::Gamma, [Some(shape), Some(rate)]) => Some(shape / rate),
        (Dist::Beta, [Some(a), Some(b)]) => Some(a / (a + b)),
        (Dist::LogNormal, [Some(mu), _]) => Some(crate::elementary::exp(*mu)),
        _ => None,
    };
    typical
        .map(|z| transform.to_unconstrained(z))
        .filter(|u| u.is_finite())
        .unwrap_or(0.0)
}
