//! Figure 1a's curves on Example 1.1: the quadrature for the smoothed gradient checked against
//! its small-eta and large-eta expansions, a finer rule and Monte Carlo; the stationary points.

use std::f64::consts::PI;

use dsgd::estimate::{Channel, Purpose, StreamKey};
use dsgd::special::normal_pdf;
use dsgd_report::figure1a::{
    POINTS, THETA_RANGE, boundary_density, figure1a_series, logistic_density, reparam_gradient,
    smoothed_gradient, stationary_point, true_gradient, write_figure1a,
};

const N: usize = dsgd_report::figure1a::SIMPSON_INTERVALS;
const THETAS: [f64; 5] = [-1.0, 0.0, 0.3722, 1.0, 1.5];

#[test]
fn smoothed_gradient_converges_to_true_gradient_as_eta_shrinks() {
    // E_s[k_eta(theta + s)] = E_L[phi(theta - eta L)], L standard logistic (E L^2 = pi^2/3,
    // E L^4 = 7 pi^4 / 15). Taylor: = phi(theta) + eta^2 pi^2/6 phi''(theta) + R with
    // |R| <= eta^4 E[L^4] max|phi''''| / 24 = eta^4 * 45.46 * 1.197 / 24 < 2.3 eta^4.
    for theta in THETAS {
        let mut previous_gap = f64::INFINITY;
        for eta in [0.2, 0.1, 0.05, 0.02] {
            let phi2 = (theta * theta - 1.0) * normal_pdf(theta);
            let expansion = normal_pdf(theta) + eta * eta * PI * PI / 6.0 * phi2;
            let got = boundary_density(theta, eta, N);
            let tol = 2.3 * eta.powi(4) + 1e-9;
            assert!(
                (got - expansion).abs() <= tol,
                "theta {theta} eta {eta}: {got} vs expansion {expansion} (tol {tol})"
            );
            let gap = (smoothed_gradient(theta, eta) - true_gradient(theta)).abs();
            assert!(
                gap <= previous_gap,
                "gap must shrink with eta at theta {theta}"
            );
            previous_gap = gap;
        }
        assert!(previous_gap < 1e-3);
    }
}

#[test]
fn smoothed_gradient_tends_to_reparams_as_eta_grows() {
    // E_s[k_eta(theta + s)] = k_eta(theta) + E[s^2 k_eta''(xi)] / 2 and
    // |k_eta''| = |k_1''| / eta^3 <= 0.125 / eta^3, so the gap to k_eta(theta) is <= 0.0625/eta^3;
    // and k_eta <= 1 / (4 eta), so the gradient tends to -theta.
    for theta in THETAS {
        for eta in [10.0, 100.0, 1000.0] {
            let got = smoothed_gradient(theta, eta) + theta;
            let lead = logistic_density(theta, eta);
            assert!(
                (got - lead).abs() <= 0.0625 / eta.powi(3) + 1e-15,
                "theta {theta} eta {eta}: {got} vs {lead}"
            );
            assert!(
                (smoothed_gradient(theta, eta) - reparam_gradient(theta)).abs()
                    <= 0.25 / eta + 1e-12
            );
        }
    }
}

#[test]
fn quadrature_is_converged_in_its_step() {
    for theta in THETAS {
        for eta in [0.02, 1.0 / 3.0, 1.0, 3.0] {
            let a = boundary_density(theta, eta, N);
            let b = boundary_density(theta, eta, 2 * N);
            assert!((a - b).abs() < 1e-13, "theta {theta} eta {eta}: {a} vs {b}");
        }
    }
}

#[test]
fn quadrature_matches_monte_carlo_within_four_standard_errors() {
    let n = 200_000;
    let mut rng = StreamKey::new(0x05ee_df1a, 0, Purpose::Other(0)).rng(Channel::Noise);
    let mut noise = vec![0.0; n];
    let mut lane = 0;
    for theta in [-1.0, 0.0, 0.5] {
        for eta in [1.0, 1.0 / 3.0] {
            rng.fill_normals(lane, &mut noise);
            lane += 1;
            let (mut sum, mut sum_sq) = (0.0, 0.0);
            for &s in &noise {
                let v = logistic_density(theta + s, eta);
                sum += v;
                sum_sq += v * v;
            }
            let mean = sum / n as f64;
            let var = (sum_sq - n as f64 * mean * mean) / (n as f64 - 1.0);
            let se = (var / n as f64).sqrt();
            let quad = boundary_density(theta, eta, N);
            assert!(
                (quad - mean).abs() <= 4.0 * se,
                "theta {theta} eta {eta}: quadrature {quad} vs MC {mean} (se {se})"
            );
        }
    }
}

#[test]
fn stationary_points_are_ordered_as_the_paper_describes() {
    let truth = stationary_point(true_gradient, -1.0, 1.0).expect("bracketed");
    assert!((truth - 0.3722).abs() < 1e-4, "{truth}");
    assert!((truth - normal_pdf(truth)).abs() < 1e-12);
    let biased = stationary_point(reparam_gradient, -1.0, 1.0).expect("bracketed");
    assert!(biased.abs() < 1e-12);
    let loose = stationary_point(|t| smoothed_gradient(t, 1.0), -1.0, 1.0).expect("bracketed");
    let tight =
        stationary_point(|t| smoothed_gradient(t, 1.0 / 3.0), -1.0, 1.0).expect("bracketed");
    // Smoothing with low accuracy lands between the biased and the true stationary point.
    assert!(
        0.0 < loose && loose < tight && tight < truth,
        "{loose} {tight} {truth}"
    );
    assert!(stationary_point(true_gradient, 2.0, 3.0).is_none());
}

#[test]
fn invalid_eta_gives_nan_not_a_panic() {
    for eta in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(smoothed_gradient(0.5, eta).is_nan());
    }
}

#[test]
fn figure1a_has_the_papers_four_curves() {
    let series = figure1a_series();
    assert_eq!(series.len(), 4);
    for s in &series {
        assert_eq!(s.points.len(), POINTS);
        assert_eq!(s.points[0].0, THETA_RANGE.0);
        assert_eq!(s.points[POINTS - 1].0, THETA_RANGE.1);
        assert!(s.points.iter().all(|p| p.1.is_finite()));
    }
    let at = |i: usize, theta: f64| {
        let k = ((theta - THETA_RANGE.0) / (THETA_RANGE.1 - THETA_RANGE.0) * (POINTS - 1) as f64)
            .round() as usize;
        series[i].points[k].1
    };
    assert!((at(0, 0.0) - normal_pdf(0.0)).abs() < 1e-15);
    assert!(at(1, 0.5) == -0.5);
    // At theta = 0 the smoothed gradients sit between Reparam's and the true one.
    assert!(at(1, 0.0) < at(2, 0.0) && at(2, 0.0) < at(3, 0.0) && at(3, 0.0) < at(0, 0.0));
}

#[test]
fn write_figure1a_writes_all_three_images() {
    let dir = std::env::temp_dir().join(format!("dsgd-plot-fig1a-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let result = write_figure1a(&dir);
    let checks = result.as_ref().map(|files| {
        let svg_text = std::fs::read_to_string(&files.svg).unwrap_or_default();
        let png_bytes = std::fs::read(&files.png).unwrap_or_default();
        let pdf_bytes = std::fs::read(&files.pdf).unwrap_or_default();
        (svg_text, png_bytes, pdf_bytes)
    });
    let _ = std::fs::remove_dir_all(&dir);
    let (svg, png, pdf) = checks.expect("figure written");
    assert!(svg.contains("Figure 1a"));
    assert!(svg.contains("smoothed, η = 1/3"));
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert!(pdf.starts_with(b"%PDF-1.4"));
    assert!(pdf.ends_with(b"%%EOF\n"));
}
