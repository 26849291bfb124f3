//! Special functions with the numerical care the smoothing needs.
//!
//! Smoothing evaluates `sigma(F / eta)` for `|F / eta|` in the thousands, and the models take
//! logarithms of densities far in their tails, so the textbook forms (`1 / (1 + exp(-x))`,
//! `ln(1 + exp(x))`) overflow or cancel. Everything here is finite wherever the true value is
//! representable. The elementary functions underneath are [`crate::elementary`]'s, the same
//! the tape evaluates; the error function is the portable `libm` crate's. Nothing here calls
//! the platform's C library, whose last bits differ between systems.

use std::f64::consts::{PI, SQRT_2};

use crate::elementary;

/// `ln(2 pi) / 2`, the normalising constant of the standard normal log-density.
pub const HALF_LN_2PI: f64 = 0.918_938_533_204_672_8;

/// The logistic function, stable for any `x` ([`elementary::sigmoid`]).
#[inline]
pub fn sigmoid(x: f64) -> f64 {
    elementary::sigmoid(x)
}

/// `(sigmoid(x), sigmoid(-x))` from one `exp`, bit for bit equal to two [`sigmoid`] calls:
/// the two weights of a smoothed if-statement.
#[inline]
pub fn sigmoid_pair(x: f64) -> (f64, f64) {
    sigmoid_pair_from_exp(x, elementary::exp(-x.abs()))
}

pub use crate::elementary::sigmoid_pair_from_exp;

/// `ln(1 + exp(x))` without overflow for large `x` or loss of precision for very negative `x`
/// ([`elementary::softplus`]).
#[inline]
pub fn softplus(x: f64) -> f64 {
    elementary::softplus(x)
}

/// `(sigmoid(x), softplus(x))` from one `exp`, bit for bit equal to the two calls (both take
/// `exp(-|x|)`): a guide's scale and its derivative.
#[inline(always)]
pub fn sigmoid_softplus(x: f64) -> (f64, f64) {
    let e = elementary::exp(-x.abs());
    (
        sigmoid_pair_from_exp(x, e).0,
        elementary::softplus_from_exp(x, e),
    )
}

/// The inverse of [`softplus`]: `ln(exp(y) - 1)`, used to store a guide's standard deviation.
pub fn softplus_inv(y: f64) -> f64 {
    if y > 30.0 {
        y + elementary::log1p(-elementary::exp(-y))
    } else {
        elementary::ln(libm::expm1(y))
    }
}

/// `ln(sigmoid(x))`, stable for any `x`.
#[inline]
pub fn log_sigmoid(x: f64) -> f64 {
    -softplus(-x)
}

/// The standard normal CDF `Phi(x)`, accurate to about 1e-16 relative.
#[inline]
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x / SQRT_2)
}

/// Below this, [`log_normal_cdf`] uses the asymptotic series (`erfc` is still a normal
/// number here: about 1e-268).
const LOG_CDF_ASYMPTOTIC: f64 = -35.0;

/// `1 - 1/x^2 + 3/x^4 - 15/x^6 + ...` to eight terms: `Phi(x) = phi(x) / (-x)` times this,
/// for `x <= -35` (the ninth term is below 1e-19 there).
fn mills_series(x: f64) -> f64 {
    let u = 1.0 / (x * x);
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..8 {
        term *= -f64::from(2 * k - 1) * u;
        sum += term;
    }
    sum
}

/// `ln Phi(x)`, finite for every finite `x` (where `ln(normal_cdf(x))` is minus infinity
/// below about -38.5): `ln` of `erfc` down to -35, the asymptotic series `-x^2/2 - ln(-x) -
/// ln(2 pi)/2 + ln(1 - 1/x^2 + 3/x^4 - ...)` below, and `log1p(-Phi(-x))` above 0, where
/// `Phi(x)` is near 1.
#[inline]
pub fn log_normal_cdf(x: f64) -> f64 {
    if x > 0.0 {
        elementary::log1p(-0.5 * libm::erfc(x / SQRT_2))
    } else if x >= LOG_CDF_ASYMPTOTIC {
        elementary::ln(0.5 * libm::erfc(-x / SQRT_2))
    } else {
        -0.5 * x * x - elementary::ln(-x) - HALF_LN_2PI + elementary::ln(mills_series(x))
    }
}

/// The derivative of [`log_normal_cdf`], `phi(x) / Phi(x)`, given its value `v`:
/// `exp(ln phi(x) - v)`, and below -35 `-x / (1 - 1/x^2 + ...)`, free of the cancellation
/// of two numbers near `x^2 / 2`.
#[inline]
pub fn log_normal_cdf_derivative(x: f64, v: f64) -> f64 {
    if x >= LOG_CDF_ASYMPTOTIC {
        elementary::exp(-0.5 * x * x - HALF_LN_2PI - v)
    } else {
        -x / mills_series(x)
    }
}

/// The standard normal density `phi(x)`.
#[inline]
pub fn normal_pdf(x: f64) -> f64 {
    elementary::exp(-0.5 * x * x - HALF_LN_2PI)
}

/// The normal quantile `Phi^{-1}(p)`: NaN outside `[0, 1]`, infinite at the ends.
///
/// A rational first guess (Acklam's, about 1e-9 relative) refined by two Halley steps on
/// `Phi(x) = p` with `libm`'s `erf`/`erfc` and our `exp`: portable code only, so a model's
/// quantile constants are the same on every machine (the platform's `ln` and `exp`, which
/// other implementations call, are not). The residual keeps its relative accuracy: `erf(x /
/// sqrt 2) / 2 - (p - 1/2)` in the middle, where `p - 1/2` is exact, `erfc` in the lower tail,
/// and the upper half by symmetry from `1 - p`, which is exact there.
pub fn probit(p: f64) -> f64 {
    if !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    if p > 0.75 {
        -probit_lower(1.0 - p)
    } else if p >= 0.25 {
        let q = p - 0.5;
        halley(rational_guess(p), |x| 0.5 * libm::erf(x / SQRT_2) - q)
    } else {
        probit_lower(p)
    }
}

/// [`probit`] for `0 < p < 0.25`.
fn probit_lower(p: f64) -> f64 {
    halley(rational_guess(p), |x| 0.5 * libm::erfc(-x / SQRT_2) - p)
}

/// Two Halley steps on `f(x) = Phi(x) - p` (given as `residual`): from a guess within 1e-8,
/// the error after them is far below the rounding of the result.
fn halley(mut x: f64, residual: impl Fn(f64) -> f64) -> f64 {
    for _ in 0..2 {
        let u = residual(x) / normal_pdf(x);
        if !u.is_finite() {
            break;
        }
        x -= u / (1.0 + 0.5 * x * u);
    }
    x
}

/// Acklam's rational approximation of the normal quantile for `0 < p <= 0.75`: about 1e-9
/// relative, the starting point of [`halley`].
fn rational_guess(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let poly = |c: &[f64], x: f64| c.iter().fold(0.0, |acc, &ci| acc * x + ci);
    if p < 0.024_25 {
        let q = (-2.0 * elementary::ln(p)).sqrt();
        poly(&C, q) / (poly(&D, q) * q + 1.0)
    } else {
        let q = p - 0.5;
        let r = q * q;
        poly(&A, r) * q / (poly(&B, r) * r + 1.0)
    }
}

/// `ln |Gamma(x)|`.
#[inline]
pub fn lgamma(x: f64) -> f64 {
    libm::lgamma_r(x).0
}

/// The digamma function, the derivative of [`lgamma`].
pub fn digamma(x: f64) -> f64 {
    if x.is_nan() || x == f64::NEG_INFINITY {
        return f64::NAN;
    }
    if x <= 0.0 && x == x.floor() {
        return f64::NAN;
    }
    if x < 0.0 {
        // Reflection: psi(1 - x) - psi(x) = pi cot(pi x).
        return digamma(1.0 - x) - PI / (PI * x).tan();
    }
    let mut x = x;
    let mut acc = 0.0;
    while x < 10.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    // Asymptotic series sum B_2k / (2k x^2k); with x >= 10 the first omitted term is < 1e-17.
    const COEFFS: [f64; 7] = [
        1.0 / 12.0,
        -1.0 / 120.0,
        1.0 / 252.0,
        -1.0 / 240.0,
        1.0 / 132.0,
        -691.0 / 32760.0,
        1.0 / 12.0,
    ];
    let series = COEFFS.iter().rev().fold(0.0, |acc, &c| acc * inv2 + c) * inv2;
    acc + elementary::ln(x) - 0.5 * inv - series
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sigmoid_is_finite_and_exact_at_extremes() {
        assert_eq!(sigmoid(1000.0), 1.0);
        assert_eq!(sigmoid(-1000.0), 0.0);
        assert!((sigmoid(0.0) - 0.5).abs() < 1e-16);
        assert!((sigmoid(-40.0) - 4.248354255291589e-18).abs() < 1e-30);
    }

    #[test]
    fn sigmoid_pair_equals_two_sigmoids_bit_for_bit() {
        let xs = [
            0.0,
            -0.0,
            1e-300,
            -1e-300,
            0.3,
            -0.3,
            2.5,
            -7.0,
            36.0,
            -745.5,
            800.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        for x in xs {
            let (a, b) = sigmoid_pair(x);
            assert_eq!(
                (a.to_bits(), b.to_bits()),
                (sigmoid(x).to_bits(), sigmoid(-x).to_bits()),
                "x = {x}"
            );
        }
        assert!(sigmoid_pair(f64::NAN).0.is_nan() && sigmoid_pair(f64::NAN).1.is_nan());
    }

    #[test]
    fn sigmoid_softplus_equals_the_two_calls_bit_for_bit() {
        let mut xs = vec![
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1e-300,
            -1e-300,
        ];
        xs.extend((0..2000).map(|i| (i as f64 - 1000.0) * 0.0371));
        xs.extend([-745.5, -40.0, 36.0, 710.0, 800.0]);
        for x in xs {
            let (s, p) = sigmoid_softplus(x);
            assert_eq!(s.to_bits(), sigmoid(x).to_bits(), "sigmoid {x}");
            assert_eq!(p.to_bits(), softplus(x).to_bits(), "softplus {x}");
        }
    }

    #[test]
    fn softplus_and_log_sigmoid_are_stable() {
        assert_eq!(softplus(800.0), 800.0);
        assert!((softplus(-800.0)).abs() < 1e-300);
        assert!((log_sigmoid(-800.0) + 800.0).abs() < 1e-12);
        assert!((softplus_inv(softplus(0.3)) - 0.3).abs() < 1e-14);
        assert!((softplus_inv(softplus(40.0)) - 40.0).abs() < 1e-12);
    }

    #[test]
    fn smoothing_weights_are_stable_for_huge_guard_over_eta() {
        // sigma(F / eta) for F = +-1 and eta down to 1e-300 (and beyond: F / eta = +-inf).
        for eta in [1.0, 1e-3, 1e-10, 1e-300, 0.0] {
            let (hi, lo) = (sigmoid(1.0 / eta), sigmoid(-1.0 / eta));
            assert!(
                hi.is_finite() && lo.is_finite() && hi + lo == 1.0,
                "eta {eta}: {hi} {lo}"
            );
            assert!(softplus(1.0 / eta) >= 1.0 / eta && softplus(-1.0 / eta) >= 0.0);
            assert!(log_sigmoid(-1.0 / eta) <= -1.0 / eta);
        }
        assert_eq!(sigmoid(f64::INFINITY), 1.0);
        assert_eq!(sigmoid(f64::NEG_INFINITY), 0.0);
        assert_eq!(softplus(f64::NEG_INFINITY), 0.0);
        assert_eq!(log_sigmoid(f64::INFINITY), 0.0);
        // Deep tails keep full relative accuracy: sigma(-x) = exp(-x) / (1 + exp(-x)).
        for x in [40.0f64, 300.0, 700.0] {
            let tail = (-x).exp();
            assert!((sigmoid(-x) / tail - 1.0).abs() < 1e-15, "sigmoid(-{x})");
            assert!((softplus(-x) / tail - 1.0).abs() < 1e-15, "softplus(-{x})");
            assert!(
                (log_sigmoid(x) / -tail - 1.0).abs() < 1e-15,
                "log_sigmoid({x})"
            );
            assert_eq!(log_sigmoid(-x), -x - tail);
        }
        // softplus(x) - softplus(-x) = x across the range.
        for x in [-50.0, -3.0, -1e-8, 0.0, 0.7, 20.0, 37.0] {
            assert!(
                (softplus(x) - softplus(-x) - x).abs() < 1e-15 * x.abs().max(1.0),
                "x {x}"
            );
        }
    }

    #[test]
    fn probit_agrees_with_an_independent_implementation() {
        // statrs's inverse erfc (a different algorithm) to within a few ulp everywhere, and
        // exact symmetry.
        let mut worst: f64 = 0.0;
        let mut p = 1e-300f64;
        while p < 1.0 {
            for q in [p, 1.0 - p, 0.5 + p.min(0.49)] {
                let ours = probit(q);
                let theirs = -SQRT_2 * statrs::function::erf::erfc_inv(2.0 * q);
                worst = worst.max((ours - theirs).abs() / theirs.abs().max(1e-300));
                if q >= 0.5 {
                    // 1 - q is exact here.
                    assert_eq!(probit(q), -probit(1.0 - q), "p = {q}");
                }
            }
            p *= 1.37;
        }
        eprintln!("probit: worst relative difference from statrs {worst:e}");
        assert!(worst < 1e-14, "worst relative difference {worst:e}");
    }

    #[test]
    fn probit_inverts_normal_cdf() {
        for &p in &[1e-300, 1e-10, 0.025, 0.3, 0.5, 0.9, 1.0 - 1e-10] {
            let x = probit(p);
            assert!(((normal_cdf(x) - p) / p).abs() < 1e-12, "p = {p}");
        }
        assert!((probit(0.975) - 1.959_963_984_540_054).abs() < 1e-14);
        assert!(probit(1.5).is_nan());
    }

    #[test]
    fn digamma_matches_known_values() {
        // psi(1) = -gamma (Euler-Mascheroni), psi(0.5) = -gamma - 2 ln 2.
        let euler = 0.577_215_664_901_532_9;
        assert!((digamma(1.0) + euler).abs() < 4e-15);
        assert!((digamma(0.5) + euler + 2.0 * 2f64.ln()).abs() < 4e-15);
        assert!((digamma(100.0) - 4.600_161_852_738_087).abs() < 1e-14);
        assert!((digamma(-0.5) - 0.036_489_973_978_576_52).abs() < 1e-13);
        // Central difference of lgamma.
        let h = 1e-6;
        let fd = (lgamma(3.7 + h) - lgamma(3.7 - h)) / (2.0 * h);
        assert!((digamma(3.7) - fd).abs() < 1e-8);
    }
}
