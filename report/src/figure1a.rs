//! The paper's Figure 1a: on Example 1.1, the true gradient, Reparam's biased gradient and the
//! gradients of the smoothed objective for eta = 1 and 1/3, as functions of theta.
//!
//! Example 1.1: `f(z) = -z^2/2 + [z >= 0]`, `z = theta + s`, `s ~ N(0, 1)`. Then
//! - true gradient: `d/dtheta E[f] = -theta + phi(theta)` (`phi` the standard normal density),
//! - Reparam's expectation: `E[d/dtheta f(theta + s)] = -theta` (the jump contributes nothing),
//! - smoothed objective `E[-z^2/2 + sigma(z / eta)]`, gradient `-theta + E_s[k_eta(theta + s)]`
//!   with `k_eta(u) = sigma'(u / eta) / eta`, the logistic density of scale `eta`.
//!
//! `E_s[k_eta(theta + s)]` is the density at `theta` of `N(0, 1) + Logistic(0, eta)` and has
//! no closed form; it is computed here by composite Simpson quadrature (accuracy argued at
//! [`boundary_density`]). No randomness and no estimator code: this is exact analysis.

use std::path::Path;

use crate::plot::{Figure, FigureFiles, Legend, LinePlot, LineStyle, PlotError, Series, YScale};
use dsgd::special::{normal_pdf, sigmoid};

/// The theta interval of the paper's figure.
pub const THETA_RANGE: (f64, f64) = (-1.0, 1.0);

/// The accuracy coefficients shown in the paper's figure, with their line styles there.
pub const ETAS: [(f64, &str, LineStyle); 2] = [
    (1.0, "1", LineStyle::Dotted),
    (1.0 / 3.0, "1/3", LineStyle::Dashed),
];

/// Simpson intervals (even). With the truncation and step of [`boundary_density`] the a-priori
/// error bound is about 2e-8; halving the step changes results by less than 1e-13 (tested).
pub const SIMPSON_INTERVALS: usize = 8192;

/// The gradient of the true objective `E[f(theta + s)]`: `-theta + phi(theta)`.
pub fn true_gradient(theta: f64) -> f64 {
    -theta + normal_pdf(theta)
}

/// What Reparam's gradient averages to: `-theta`, missing the jump's contribution.
pub fn reparam_gradient(theta: f64) -> f64 {
    -theta
}

/// The gradient of the smoothed objective at accuracy `eta`: `-theta + boundary_density`.
/// NaN when `eta` is not positive and finite (as `f64` functions do outside their domain).
pub fn smoothed_gradient(theta: f64, eta: f64) -> f64 {
    -theta + boundary_density(theta, eta, SIMPSON_INTERVALS)
}

/// `k_eta(u) = sigma'(u / eta) / eta`, the logistic density with scale `eta`, computed without
/// overflow as `sigma(v) sigma(-v) / eta`.
pub fn logistic_density(u: f64, eta: f64) -> f64 {
    let v = u / eta;
    sigmoid(v) * sigmoid(-v) / eta
}

/// `E_{s ~ N(0,1)}[k_eta(theta + s)]` by composite Simpson with `intervals` intervals (rounded
/// up to even, at least 2).
///
/// The variable is chosen so the integrand varies on a scale of at least 1:
/// - `eta <= 1`: substitute `theta + s = eta u`, giving `int k_1(u) phi(eta u - theta) du` over
///   `u in [-40, 40]`. The dropped tails weigh at most `2 e^-40 phi(0) < 4e-18`.
/// - `eta > 1`: integrate `phi(s) k_eta(theta + s)` over `s in [-12, 12]`; the dropped tails
///   weigh at most `2 Phi(-12) / (4 eta) < 1e-32`.
///
/// In both cases the integrand's fourth derivative is bounded by about 5 (products of
/// derivatives of `k_1` (<= 0.25) and of `phi` (<= 1.2), times 16 binomial terms, each
/// scaled by a power of `min(eta, 1/eta) <= 1`), so Simpson's error bound
/// `(b - a) h^4 max|f''''| / 180` is `80 * 0.0098^4 * 5 / 180 = 2e-8` with 8192 intervals.
/// The integrand is analytic and decays exponentially, for which Simpson's rule in fact
/// converges much faster than this bound; the tests compare against half the step (agreement
/// below 1e-13) and against Monte Carlo.
pub fn boundary_density(theta: f64, eta: f64, intervals: usize) -> f64 {
    if !(eta.is_finite() && eta > 0.0 && theta.is_finite()) {
        return f64::NAN;
    }
    if eta <= 1.0 {
        let g = |u: f64| logistic_density(u, 1.0) * normal_pdf(eta * u - theta);
        simpson(g, -40.0, 40.0, intervals)
    } else {
        let g = |s: f64| normal_pdf(s) * logistic_density(theta + s, eta);
        simpson(g, -12.0, 12.0, intervals)
    }
}

/// Composite Simpson's rule for `int_a^b f` with `n` intervals (made even, at least 2).
pub fn simpson(f: impl Fn(f64) -> f64, a: f64, b: f64, n: usize) -> f64 {
    let n = (n.max(2) + 1) & !1;
    let h = (b - a) / n as f64;
    let mut odd = 0.0;
    let mut even = 0.0;
    for i in 1..n {
        let v = f(a + i as f64 * h);
        if i % 2 == 1 {
            odd += v;
        } else {
            even += v;
        }
    }
    h / 3.0 * (f(a) + f(b) + 4.0 * odd + 2.0 * even)
}

/// The root of a decreasing gradient curve in `[lo, hi]` by bisection, or `None` when the
/// signs at the ends do not bracket a root. All four curves of the figure are decreasing.
pub fn stationary_point(grad: impl Fn(f64) -> f64, lo: f64, hi: f64) -> Option<f64> {
    let (mut a, mut b) = (lo, hi);
    let (ga, gb) = (grad(a), grad(b));
    if !(ga >= 0.0 && gb <= 0.0) {
        return None;
    }
    for _ in 0..100 {
        let mid = 0.5 * (a + b);
        if grad(mid) > 0.0 {
            a = mid;
        } else {
            b = mid;
        }
    }
    Some(0.5 * (a + b))
}

/// Number of theta values per curve.
pub const POINTS: usize = 201;

/// The four curves of Figure 1a over [`THETA_RANGE`], colour-keyed `true`, `reparam` and
/// `smoothed` (black, dotted for eta = 1 and dashed for eta = 1/3, as in the paper).
pub fn figure1a_series() -> Vec<Series> {
    let (lo, hi) = THETA_RANGE;
    let thetas: Vec<f64> = (0..POINTS)
        .map(|i| lo + (hi - lo) * i as f64 / (POINTS - 1) as f64)
        .collect();
    let curve = |g: &dyn Fn(f64) -> f64| thetas.iter().map(|&t| (t, g(t))).collect::<Vec<_>>();
    let mut series = vec![
        Series::new(
            "true gradient −θ + N(θ | 0, 1)",
            "true",
            "",
            curve(&true_gradient),
        ),
        Series::new(
            "Reparam (biased) −θ",
            "reparam",
            "",
            curve(&reparam_gradient),
        ),
    ];
    for (eta, name, style) in ETAS {
        series.push(
            Series::new(
                format!("smoothed, η = {name}"),
                "smoothed",
                name,
                curve(&|t| smoothed_gradient(t, eta)),
            )
            .with_style(style),
        );
    }
    series
}

/// Figure 1a as a plot description.
pub fn figure1a_plot() -> LinePlot {
    LinePlot {
        title: "Figure 1a: gradients on Example 1.1".to_string(),
        x_label: "θ".to_string(),
        y_label: "gradient".to_string(),
        series: figure1a_series(),
        y_scale: YScale::Linear,
        legend: Legend::PerSeries,
    }
}

/// Writes `figure1a.svg`, `figure1a.png` and `figure1a.pdf` into `dir` (which must exist).
pub fn write_figure1a(dir: &Path) -> Result<FigureFiles, PlotError> {
    let figure = Figure::single(&figure1a_plot());
    crate::plot::write_figure(&figure, &dir.join("figure1a"), 900, 560)
}
