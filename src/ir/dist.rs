//! The distributions the language offers: names, arguments, supports, and the checks a
//! compiler can make when arguments or values are constants.
//!
//! What a distribution *is* lives here; how its log-density becomes nodes lives in
//! `density.rs`, so that this file depends on nothing else in the IR.

use std::fmt;

use super::transform::Transform;

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
    /// `Poisson(rate)`, mass at the integers `x >= 0`.
    Poisson,
    /// `Bernoulli(p)`, mass at `x` in `{0, 1}`, written `x ln p + (1 - x) ln(1 - p)`.
    Bernoulli,
    /// `Binomial(n, p)`, mass at the integers `0 <= x <= n`.
    Binomial,
    /// `Uniform(low, high)` on `low <= x <= high`.
    Uniform,
    /// `Gamma(shape, rate)` on `x > 0`.
    Gamma,
    /// `Beta(a, b)` on `0 < x < 1`.
    Beta,
    /// `LogNormal(mu, sigma)` on `x > 0`: `ln x ~ Normal(mu, sigma)`.
    LogNormal,
    /// `StudentT(nu, mu, sigma)`, `nu` degrees of freedom.
    StudentT,
    /// `Cauchy(mu, sigma)`.
    Cauchy,
    /// `HalfCauchy(sigma)` on `x >= 0`.
    HalfCauchy,
}

/// Where a distribution puts its mass.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Support {
    /// The whole real line.
    Real,
    /// `x >= 0`.
    NonNegative,
    /// `x > 0`.
    Positive,
    /// `0 < x < 1`.
    UnitInterval,
    /// `low <= x <= high` (the arguments of `Uniform`).
    Interval,
    /// The integers `0, 1, 2, ...`.
    Counts,
    /// `0` and `1`.
    Binary,
    /// The integers `0..=n` (the first argument of `Binomial`).
    CountsUpTo,
}

/// What an argument of a distribution must be.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Real,
    Positive,
    Probability,
    Count,
}

/// A constant argument or value the distribution cannot take: which argument (`None` for
/// the value) and why.
#[derive(Clone, Debug, PartialEq)]
pub struct ConstantProblem {
    /// Index of the offending argument, or `None` when the value itself is the problem.
    pub argument: Option<usize>,
    pub message: String,
    pub expected: String,
}

impl Dist {
    pub const ALL: [Dist; 14] = [
        Dist::Normal,
        Dist::HalfNormal,
        Dist::Exponential,
        Dist::Logistic,
        Dist::Poisson,
        Dist::Bernoulli,
        Dist::Binomial,
        Dist::Uniform,
        Dist::Gamma,
        Dist::Beta,
        Dist::LogNormal,
        Dist::StudentT,
        Dist::Cauchy,
        Dist::HalfCauchy,
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
            Dist::Gamma => "Gamma",
            Dist::Beta => "Beta",
            Dist::LogNormal => "LogNormal",
            Dist::StudentT => "StudentT",
            Dist::Cauchy => "Cauchy",
            Dist::HalfCauchy => "HalfCauchy",
        }
    }

    /// The distribution with this language name.
    pub fn from_name(name: &str) -> Option<Dist> {
        Dist::ALL.into_iter().find(|d| d.name() == name)
    }

    /// Number of arguments (after the value).
    pub fn arity(self) -> usize {
        self.parameter_names().len()
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
            Dist::Gamma => &["shape", "rate"],
            Dist::Beta => &["a", "b"],
            Dist::LogNormal | Dist::Cauchy => &["mu", "sigma"],
            Dist::StudentT => &["nu", "mu", "sigma"],
            Dist::HalfCauchy => &["sigma"],
        }
    }

    fn requirements(self) -> &'static [Requirement] {
        use Requirement::*;
        match self {
            Dist::Normal | Dist::Logistic | Dist::LogNormal | Dist::Cauchy => &[Real, Positive],
            Dist::HalfNormal | Dist::Exponential | Dist::Poisson | Dist::HalfCauchy => &[Positive],
            Dist::Bernoulli => &[Probability],
            Dist::Binomial => &[Count, Probability],
            Dist::Uniform => &[Real, Real],
            Dist::Gamma | Dist::Beta => &[Positive, Positive],
            Dist::StudentT => &[Positive, Real, Positive],
        }
    }

    /// Where the distribution puts its mass.
    pub fn support(self) -> Support {
        match self {
            Dist::Normal | Dist::Logistic | Dist::StudentT | Dist::Cauchy => Support::Real,
            Dist::HalfNormal | Dist::Exponential | Dist::HalfCauchy => Support::NonNegative,
            Dist::Gamma | Dist::LogNormal => Support::Positive,
            Dist::Beta => Support::UnitInterval,
            Dist::Uniform => Support::Interval,
            Dist::Poisson => Support::Counts,
            Dist::Bernoulli => Support::Binary,
            Dist::Binomial => Support::CountsUpTo,
        }
    }

    /// Whether the distribution has mass at integers only (it cannot be a latent here: the
    /// guide and every estimator need a density).
    pub fn is_discrete(self) -> bool {
        matches!(
            self.support(),
            Support::Counts | Support::Binary | Support::CountsUpTo
        )
    }

    /// The transform that puts a latent of this distribution on the whole real line, given
    /// its arguments where they are constants. `Err` says why there is none (a discrete
    /// distribution, or `Uniform` bounds that are not constants).
    pub fn latent_transform(self, args: &[Option<f64>]) -> Result<Transform, String> {
        match self.support() {
            Support::Real => Ok(Transform::Identity),
            Support::NonNegative | Support::Positive => Ok(Transform::Exp { lower: 0.0 }),
            Support::UnitInterval => Ok(Transform::Logit {
                lower: 0.0,
                upper: 1.0,
            }),
            Support::Interval => match args {
                [Some(lower), Some(upper)] if lower < upper => Ok(Transform::Logit {
                    lower: *lower,
                    upper: *upper,
                }),
                _ => Err(format!(
                    "the bounds of a `{self}` latent must be constants with low < high"
                )),
            },
            Support::Counts | Support::Binary | Support::CountsUpTo => Err(format!(
                "`{self}` is discrete, and a latent must be continuous"
            )),
        }
    }

    /// Whether `x` lies strictly inside what argument `k` may be, so that the log-density at
    /// `x` is finite wherever the value is in the support: finite, a scale or rate above 0, a
    /// probability strictly between 0 and 1. Never for a count or a bound (they move the
    /// support itself).
    pub fn interior_argument(self, k: usize, x: f64) -> bool {
        if self == Dist::Uniform || !x.is_finite() {
            return false;
        }
        match self.requirements().get(k) {
            Some(Requirement::Real) => true,
            Some(Requirement::Positive) => x > 0.0,
            Some(Requirement::Probability) => x > 0.0 && x < 1.0,
            Some(Requirement::Count) | None => false,
        }
    }

    /// Checks the arguments that are constants (`None` for the others): a scale or rate must
    /// be positive, a probability in `[0, 1]`, a count a non-negative integer, Uniform's
    /// bounds ordered, and none of them NaN or infinite.
    pub fn check_arguments(self, args: &[Option<f64>]) -> Result<(), ConstantProblem> {
        for (k, (&req, arg)) in self.requirements().iter().zip(args).enumerate() {
            let Some(x) = *arg else { continue };
            let name = self.parameter_names()[k];
            let problem = |message: String, expected: &str| ConstantProblem {
                argument: Some(k),
                message,
                expected: expected.to_string(),
            };
            if !x.is_finite() {
                return Err(problem(
                    format!("`{name}` of `{self}` is {x}"),
                    "a finite number",
                ));
            }
            match req {
                Requirement::Real => {}
                Requirement::Positive if x <= 0.0 => {
                    return Err(problem(
                        format!("`{name}` of `{self}` is {x}, but it must be positive"),
                        "a number greater than 0",
                    ));
                }
                Requirement::Probability if !(0.0..=1.0).contains(&x) => {
                    return Err(problem(
                        format!("`{name}` of `{self}` is {x}, but it is a probability"),
                        "a number from 0 to 1",
                    ));
                }
                Requirement::Count if x < 0.0 || x != x.trunc() => {
                    return Err(problem(
                        format!("`{name}` of `{self}` is {x}, but it is a count"),
                        "a whole number, 0 or more",
                    ));
                }
                _ => {}
            }
        }
        if let (Dist::Uniform, [Some(low), Some(high)]) = (self, args)
            && low >= high
        {
            return Err(ConstantProblem {
                argument: Some(1),
                message: format!("`Uniform({low}, {high})` is empty: `high` must exceed `low`"),
                expected: format!("a number greater than {low}"),
            });
        }
        Ok(())
    }

    /// Checks a constant value (an observation) against the support, given the constant
    /// arguments (`None` for the others).
    pub fn check_value(self, x: f64, args: &[Option<f64>]) -> Result<(), ConstantProblem> {
        let outside = |expected: String| ConstantProblem {
            argument: None,
            message: format!("{x} is outside the support of `{self}`"),
            expected,
        };
        if !x.is_finite() {
            return Err(ConstantProblem {
                argument: None,
                message: format!("the observed value is {x}"),
                expected: "a finite number".to_string(),
            });
        }
        let whole = x == x.trunc();
        match self.support() {
            Support::Real => Ok(()),
            Support::NonNegative if x < 0.0 => Err(outside("a number 0 or greater".into())),
            Support::Positive if x <= 0.0 => Err(outside("a number greater than 0".into())),
            Support::UnitInterval if !(x > 0.0 && x < 1.0) => {
                Err(outside("a number strictly between 0 and 1".into()))
            }
            Support::Interval => match args {
                [Some(low), Some(high)] if x < *low || x > *high => {
                    Err(outside(format!("a number from {low} to {high}")))
                }
                _ => Ok(()),
            },
            Support::Counts if x < 0.0 || !whole => Err(outside("a count: 0, 1, 2, ...".into())),
            Support::Binary if x != 0.0 && x != 1.0 => Err(outside("0 or 1".into())),
            Support::CountsUpTo => match args.first() {
                _ if x < 0.0 || !whole => Err(outside("a whole number, 0 or more".into())),
                Some(Some(n)) if x > *n => Err(outside(format!("a whole number from 0 to {n}"))),
                _ => Ok(()),
            },
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Dist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_arities_match_the_requirements() {
        for d in Dist::ALL {
            assert_eq!(Dist::from_name(d.name()), Some(d));
            assert_eq!(d.requirements().len(), d.arity(), "{d}");
        }
    }

    #[test]
    fn constant_arguments_are_checked() {
        let c = |xs: &[f64]| xs.iter().map(|&x| Some(x)).collect::<Vec<_>>();
        assert!(Dist::Normal.check_arguments(&c(&[0.0, 1.0])).is_ok());
        assert_eq!(
            Dist::Normal
                .check_arguments(&c(&[0.0, 0.0]))
                .unwrap_err()
                .argument,
            Some(1)
        );
        assert!(Dist::Normal.check_arguments(&[Some(0.0), None]).is_ok());
        assert!(Dist::Uniform.check_arguments(&c(&[1.0, 0.0])).is_err());
        assert!(Dist::Bernoulli.check_arguments(&c(&[1.5])).is_err());
        assert!(Dist::Binomial.check_arguments(&c(&[2.5, 0.5])).is_err());
        assert!(Dist::Gamma.check_arguments(&c(&[f64::NAN, 1.0])).is_err());
    }

    #[test]
    fn constant_values_are_checked_against_the_support() {
        assert!(Dist::Bernoulli.check_value(2.0, &[Some(0.5)]).is_err());
        assert!(Dist::Bernoulli.check_value(1.0, &[Some(0.5)]).is_ok());
        assert!(Dist::Poisson.check_value(-1.0, &[Some(3.0)]).is_err());
        assert!(Dist::Poisson.check_value(0.5, &[Some(3.0)]).is_err());
        assert!(Dist::Binomial.check_value(6.0, &[Some(5.0), None]).is_err());
        assert!(Dist::Beta.check_value(1.0, &[None, None]).is_err());
        assert!(Dist::Exponential.check_value(0.0, &[None]).is_ok());
        assert!(
            Dist::Uniform
                .check_value(2.0, &[Some(0.0), Some(1.0)])
                .is_err()
        );
    }

    #[test]
    fn discrete_distributions_have_no_latent_transform() {
        for d in [Dist::Poisson, Dist::Bernoulli, Dist::Binomial] {
            assert!(d.is_discrete());
            assert!(d.latent_transform(&[None, None]).is_err());
        }
        assert_eq!(
            Dist::Gamma.latent_transform(&[None, None]),
            Ok(Transform::Exp { lower: 0.0 })
        );
        assert!(Dist::Uniform.latent_transform(&[Some(0.0), None]).is_err());
    }
}
