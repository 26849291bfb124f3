//! `log_normal_cdf` against a reference computed here by other means than the library's
//! (which uses `erfc` and an asymptotic series): the Taylor series of `Phi` about 0 for
//! `|x| <= 2`, Laplace's continued fraction for the Mills ratio beyond, and `log1p` of the
//! upper tail above 0. Its error bound: the reference is good to a few units in the last
//! place, so both agreeing within 1e-13 relative (about 450 ulp, far below what a wrong
//! branch, a dropped term or an underflow gives) checks the library's value; and the
//! derivative against `phi / Phi` from the same reference.

use dsgd::ir::Unary;
use dsgd::ir::{unary_derivative, unary_value};

const HALF_LN_2PI: f64 = 0.918_938_533_204_672_8;

/// `Phi(x)` for `|x| <= 2`: `1/2 + phi(x) (x + x^3/3 + x^5/(3 5) + ...)`.
fn phi_series(x: f64) -> f64 {
    let mut term = x;
    let mut sum = x;
    let mut k = 1.0;
    while term.abs() > 1e-18 * sum.abs() {
        k += 2.0;
        term *= x * x / k;
        sum += term;
    }
    0.5 + (-0.5 * x * x - HALF_LN_2PI).exp() * sum
}

/// The Mills ratio `(1 - Phi(t)) / phi(t)` for `t >= 2` by Laplace's continued fraction
/// `1 / (t + 1 / (t + 2 / (t + 3 / (t + ...))))`, evaluated from the tail.
fn mills(t: f64) -> f64 {
    let mut f = t;
    for k in (1..=400).rev() {
        f = t + f64::from(k) / f;
    }
    1.0 / f
}

/// `ln Phi(x)` by the means above.
fn reference(x: f64) -> f64 {
    if x.abs() <= 2.0 {
        phi_series(x).ln()
    } else if x < 0.0 {
        // ln(phi(t) R(t)) with t = -x: no underflow however far.
        let t = -x;
        -0.5 * t * t - HALF_LN_2PI + mills(t).ln()
    } else {
        (-(-0.5 * x * x - HALF_LN_2PI).exp() * mills(x)).ln_1p()
    }
}

/// -40 to 8 by 0.01, the branches' edges and the far lower tail (above 8 the reference's
/// `exp(-x^2 / 2)` loses more to its argument's rounding than the value's accuracy).
fn grid() -> Vec<f64> {
    let mut xs: Vec<f64> = (-4000..=800).map(|k| f64::from(k) * 0.01).collect();
    xs.extend([-1e3, -300.0, -100.0, -38.6, -35.0, -34.99, -35.01]);
    xs
}

#[test]
fn log_normal_cdf_agrees_with_an_independent_reference() {
    let mut worst = (0.0, 0.0);
    for x in grid() {
        let got = unary_value(Unary::LogNormalCdf, x);
        let want = reference(x);
        let rel = if want == 0.0 {
            got.abs()
        } else {
            ((got - want) / want).abs()
        };
        assert!(got.is_finite(), "x {x}: {got}");
        if rel > worst.0 {
            worst = (rel, x);
        }
    }
    assert!(
        worst.0 < 1e-13,
        "worst relative error {} at x = {}",
        worst.0,
        worst.1
    );
}

#[test]
fn its_derivative_is_phi_over_phi_and_finite_in_the_far_tail() {
    for x in grid() {
        let v = unary_value(Unary::LogNormalCdf, x);
        let got = unary_derivative(Unary::LogNormalCdf, x, v);
        // phi / Phi = exp(ln phi - ln Phi), with the reference's ln Phi; below -2, 1 / R(-x).
        let want = if x < -2.0 {
            1.0 / mills(-x)
        } else {
            (-0.5 * x * x - HALF_LN_2PI - reference(x)).exp()
        };
        assert!(
            ((got - want) / want).abs() < 1e-11,
            "x {x}: {got} against {want}"
        );
    }
    // Where `ln(normal_cdf(x))` is minus infinity, this is finite and about -x.
    assert_eq!(dsgd::special::normal_cdf(-40.0), 0.0);
    let v = unary_value(Unary::LogNormalCdf, -40.0);
    assert!(
        (v - (-800.0 - 40f64.ln() - HALF_LN_2PI)).abs() < 1e-3,
        "{v}"
    );
}
