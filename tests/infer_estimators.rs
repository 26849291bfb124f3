//! The estimators against closed forms: unbiasedness (within 4 standard errors), the bias
//! of Reparam, LYY18 on several coefficients, and LYY18's refusal of non-affine guards.

mod infer_common;

use dsgd::estimate::{self, Engine, EstimateError, EstimatorKind, Problem};
use dsgd::special::{normal_pdf, sigmoid};
use infer_common::{example, gradient_mean, vi_nonaffine, vi_step, vi_step_gradient};

fn engine(model: &dsgd::ir::Model, kind: EstimatorKind, eta: f64) -> Engine {
    let problem = Problem::new(model).unwrap();
    let est = estimate::build(kind, &problem, eta, None).unwrap();
    Engine::new(problem, est)
}

/// Composite Simpson on `[a, b]` with `n` (even) intervals.
fn simpson(f: impl Fn(f64) -> f64, a: f64, b: f64, n: usize) -> f64 {
    let h = (b - a) / n as f64;
    let mut s = f(a) + f(b);
    for i in 1..n {
        s += f(a + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    s * h / 3.0
}

fn assert_within(name: &str, mean: f64, se: f64, expected: f64) {
    assert!(se > 0.0 || mean == expected, "{name}: zero standard error");
    assert!(
        (mean - expected).abs() <= 4.0 * se.max(1e-15),
        "{name}: mean {mean} vs expected {expected} (se {se})"
    );
}

const SAMPLES: u64 = 1_000_000;
const BATCH: usize = 10_000;

#[test]
fn example_score_and_lyy18_are_unbiased_at_theta_1() {
    // d/dtheta E[-z^2/2 + [z >= 0]] = -theta + N(theta | 0, 1) = -1 + 0.24197 = -0.758.
    let truth = -1.0 + normal_pdf(1.0);
    for kind in [EstimatorKind::Score, EstimatorKind::Lyy18] {
        let mut e = engine(&example(), kind, 0.1);
        let (m, se) = gradient_mean(&mut e, &[1.0], SAMPLES / BATCH as u64, BATCH);
        assert_within(kind.name(), m[0], se[0], truth);
    }
    assert!((truth + 0.758).abs() < 1e-3);
}

#[test]
fn example_reparam_is_biased_towards_minus_theta() {
    // The reparameterisation gradient is -z: it misses the jump and averages to -theta = -1.
    let mut e = engine(&example(), EstimatorKind::Reparam, 0.1);
    let (m, se) = gradient_mean(&mut e, &[1.0], SAMPLES / BATCH as u64, BATCH);
    assert_within("reparam", m[0], se[0], -1.0);
    assert!((m[0] - (-1.0 + normal_pdf(1.0))).abs() > 50.0 * se[0]);
}

#[test]
fn example_smoothed_estimator_matches_quadrature_at_eta_0_3() {
    // d/dtheta E[-z^2/2 + sigma(z / eta)] = -theta + int N(z | theta, 1) sigma'(z/eta)/eta dz.
    let (theta, eta) = (1.0, 0.3);
    let spike = |z: f64| normal_pdf(z - theta) * sigmoid(z / eta) * sigmoid(-z / eta) / eta;
    let truth = -theta + simpson(spike, theta - 12.0, theta + 12.0, 40_000);
    let mut e = engine(&example(), EstimatorKind::Fixed, eta);
    let (m, se) = gradient_mean(&mut e, &[theta], SAMPLES / BATCH as u64, BATCH);
    assert_within("fixed(0.3)", m[0], se[0], truth);
    // The smoothed target (-0.7622) is not the crisp one (-0.7580).
    assert!((truth - (-1.0 + normal_pdf(1.0))).abs() > 0.003, "{truth}");
}

#[test]
fn quadrature_is_accurate() {
    // int N(z | 0, 1) z^2 dz = 1.
    let v = simpson(|z| normal_pdf(z) * z * z, -12.0, 12.0, 4000);
    assert!((v - 1.0).abs() < 1e-12);
}

#[test]
fn vi_lyy18_and_score_match_the_closed_form_elbo_gradient() {
    // Guards with one and with two latents; LYY18 picks the coordinate at random.
    for (a, c) in [([1.0, 0.0], -0.2), ([1.0, -2.0], 0.5)] {
        let model = vi_step(a, c);
        let theta = [0.3, 0.5, -0.2, -0.4];
        let truth = vi_step_gradient(a, c, &theta);
        for kind in [EstimatorKind::Lyy18, EstimatorKind::Score] {
            let mut e = engine(&model, kind, 0.1);
            let (m, se) = gradient_mean(&mut e, &theta, 20, BATCH);
            for p in 0..4 {
                assert_within(
                    &format!("{kind} a={a:?} component {p}"),
                    m[p],
                    se[p],
                    truth[p],
                );
            }
        }
        // Reparam misses the jump in the mu direction.
        let mut e = engine(&model, EstimatorKind::Reparam, 0.1);
        let (m, se) = gradient_mean(&mut e, &theta, 10, BATCH);
        assert!(
            (m[0] - truth[0]).abs() > 10.0 * se[0],
            "reparam should be biased for a={a:?}"
        );
    }
}

#[test]
fn vi_small_eta_smoothing_is_nearly_unbiased() {
    let (a, c) = ([1.0, -2.0], 0.5);
    let theta = [0.3, 0.5, -0.2, -0.4];
    let truth = vi_step_gradient(a, c, &theta);
    let mut e = engine(&vi_step(a, c), EstimatorKind::Fixed, 0.01);
    let (m, se) = gradient_mean(&mut e, &theta, 20, BATCH);
    for p in 0..4 {
        assert!(
            (m[p] - truth[p]).abs() < 4.0 * se[p] + 0.01,
            "component {p}: {} vs {}",
            m[p],
            truth[p]
        );
    }
}

#[test]
fn lyy18_refuses_a_non_affine_guard_by_name() {
    let problem = Problem::new(&vi_nonaffine()).unwrap();
    let err = estimate::build(EstimatorKind::Lyy18, &problem, 0.1, None).unwrap_err();
    assert!(matches!(err, EstimateError::NotAffine { index: 0, .. }));
    let msg = err.to_string();
    assert!(msg.contains("#0") && msg.contains("non-linear"), "{msg}");
    // The other estimators accept it.
    for kind in [
        EstimatorKind::Dsgd,
        EstimatorKind::Score,
        EstimatorKind::Reparam,
    ] {
        assert!(estimate::build(kind, &problem, 0.1, None).is_ok());
    }
}

#[test]
fn bad_eta_and_names_are_rejected() {
    let problem = Problem::new(&example()).unwrap();
    assert_eq!(
        estimate::build(EstimatorKind::Dsgd, &problem, -1.0, None).unwrap_err(),
        EstimateError::BadEta(-1.0)
    );
    assert!("foo".parse::<EstimatorKind>().is_err());
    assert_eq!(
        "LYY18".parse::<EstimatorKind>().unwrap(),
        EstimatorKind::Lyy18
    );
}

#[test]
fn default_decay_comes_from_the_nesting_depth() {
    // Depth 1 gives 1 / (2 * 1) = 0.5: eta_0 = eta * sqrt(4000).
    let problem = Problem::new(&example()).unwrap();
    let est = estimate::build(EstimatorKind::Dsgd, &problem, 0.1, None).unwrap();
    match est.semantics(0) {
        dsgd::ir::Semantics::Smoothed { eta } => {
            assert!((eta - 0.1 * 4000f64.sqrt()).abs() < 1e-12)
        }
        other => panic!("dsgd should smooth, got {other:?}"),
    }
}
