//! Continuous if-statements are not jumps: the analysis recognises `min`, `max`, `abs`,
//! `relu` and any if-statement whose branches agree on the guard's zero set; no estimator is
//! called biased by them, and LYY18 applies to them with a zero boundary term, its gradient
//! matching quadrature within its standard error.

mod infer_common;

use std::path::Path;

use dsgd::estimate::{self, Engine, EstimatorKind, Problem};
use dsgd::experiment::bias::estimator_bias;
use dsgd::experiment::check::CheckReport;
use dsgd::ir::{Model, analyse};
use dsgd::lang::{CompileOptions, compile_source};
use dsgd::special::normal_pdf;
use infer_common::gradient_mean;

fn compile(src: &str) -> Model {
    compile_source("m", src, Path::new("."), &CompileOptions::default()).unwrap()
}

/// Whether each if-statement of `body` (after `z ~ Normal(theta, 1)`) is continuous.
fn continuity(body: &str) -> Vec<bool> {
    let src = format!("param theta = 0.3;\nlet z = sample Normal(theta, 1);\n{body}");
    analyse(&compile(&src).program)
        .guards
        .iter()
        .map(|g| g.continuous)
        .collect()
}

#[test]
fn built_in_kinks_and_agreeing_branches_are_continuous_and_jumps_are_not() {
    for body in [
        "maximize min(z, 1);",
        "maximize max(z, 0.5 * z + 1);",
        "maximize abs(z - 2);",
        "maximize relu(3 * z - 1);",
        "maximize if z < 0 { 0 } else { z };",
        "maximize if z < 1 { 2 * z } else { 3 * z - 1 };",
        // Not affine in the latents, yet continuous: LYY18 needs no boundary term.
        "maximize min(z * z, 1);",
        "maximize min(max(z, 0), 1);",
    ] {
        let c = continuity(body);
        assert!(!c.is_empty() && c.iter().all(|&x| x), "{body}: {c:?}");
    }
    for body in [
        "maximize if z < 0 { 0 } else { 1 };",
        "maximize if z < 0 { z } else { z + 1 };",
        "maximize if z < 1 { 2 * z } else { 3 * z };",
        "maximize step(z);",
    ] {
        let c = continuity(body);
        assert!(!c.is_empty() && c.iter().all(|&x| !x), "{body}: {c:?}");
    }
}

/// A newsvendor: order `q`, demand `d ~ Normal(100, 20)`, profit `5 min(q, d) - 3 q`.
pub const NEWSVENDOR: &str = "param q = 60;
let d = sample Normal(100, 20) fixed;
maximize 5 * min(q, d) - 3 * q;
";

#[test]
fn a_parameter_in_a_continuous_guard_biases_nothing() {
    let model = compile(NEWSVENDOR);
    let check = CheckReport::new(&model, &|_| "here".into());
    assert!(check.param_dependent_guards.is_empty(), "{check:?}");
    assert_eq!(check.continuous_guards, 1);
    assert!(check.lyy18_applicable);
    assert!(!check.to_string().contains("warning"), "{check}");
    let a = analyse(&model.program);
    for kind in EstimatorKind::ALL {
        assert_eq!(estimator_bias(kind, &a, &model.program), None, "{kind}");
    }
    // The same guard with a jump does bias the crisp estimators.
    let jump = compile(
        "param q = 60;\nlet d = sample Normal(100, 20) fixed;\nmaximize (if d < q { 0 } else { 5 }) - 3 * q;",
    );
    let a = analyse(&jump.program);
    for kind in [
        EstimatorKind::Reparam,
        EstimatorKind::Score,
        EstimatorKind::Rloo,
    ] {
        let w = estimator_bias(kind, &a, &jump.program).expect("biased");
        assert!(w.contains("depend on a parameter"), "{w}");
    }
    assert_eq!(estimator_bias(EstimatorKind::Dsgd, &a, &jump.program), None);
}

#[test]
fn reparam_is_biased_by_a_latent_jump_only() {
    let example = dsgd::models::builtin("example").unwrap().unwrap();
    let a = analyse(&example.program);
    let w = estimator_bias(EstimatorKind::Reparam, &a, &example.program).expect("biased");
    assert!(w.contains("depend on a latent"), "{w}");
    for kind in [
        EstimatorKind::Score,
        EstimatorKind::Rloo,
        EstimatorKind::Lyy18,
        EstimatorKind::Dsgd,
    ] {
        assert_eq!(estimator_bias(kind, &a, &example.program), None, "{kind}");
    }
    let kink = compile("param theta = 1;\nlet z = sample Normal(theta, 1);\nmaximize relu(z);");
    let a = analyse(&kink.program);
    assert_eq!(
        estimator_bias(EstimatorKind::Reparam, &a, &kink.program),
        None
    );
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

fn lyy18_gradient(model: &Model, theta: f64) -> (f64, f64) {
    let problem = Problem::new(model).unwrap();
    let est = estimate::build(EstimatorKind::Lyy18, &problem, 0.1, None)
        .expect("LYY18 applies to continuous guards");
    let mut e = Engine::new(problem, est);
    let (m, se) = gradient_mean(&mut e, &[theta], 100, 10_000);
    (m[0], se[0])
}

#[test]
fn lyy18_with_a_zero_boundary_term_matches_quadrature() {
    // f(z) = min(z^2, 1) + [z >= 0.5], z ~ N(theta, 1): the first guard, z^2 - 1, is not
    // affine but continuous (no boundary term); the second is an affine jump at 0.5.
    // d/dtheta E f = int f(z) (z - theta) N(z | theta, 1) dz, the jump's part being
    // N(0.5 | theta, 1).
    let theta = 0.3;
    let model = compile(
        "param theta = 0.3;\nlet z = sample Normal(theta, 1);\n\
         maximize min(z * z, 1) + (if z < 0.5 { 0 } else { 1 });",
    );
    let a = analyse(&model.program);
    assert!(a.guards.iter().any(|g| g.continuous && g.affine.is_err()));
    assert!(a.all_affine(), "only the jump's guard needs to be affine");
    let kink = |z: f64| (z * z).min(1.0) * (z - theta) * normal_pdf(z - theta);
    let truth = simpson(kink, theta - 12.0, theta + 12.0, 48_000) + normal_pdf(0.5 - theta);
    let (m, se) = lyy18_gradient(&model, theta);
    assert!(
        (m - truth).abs() <= 4.0 * se,
        "LYY18 {m} vs quadrature {truth} (se {se})"
    );
    // Without the jump's boundary term the answer would be off by N(0.2 | 0, 1).
    assert!(normal_pdf(0.5 - theta) > 50.0 * se);
}

#[test]
fn lyy18_on_a_non_affine_kink_alone_is_the_crisp_gradient() {
    // f(z) = max(z^3, z): then - else = z^3 - z (or its negative) is the guard itself.
    let theta = -0.4;
    let model = compile(
        "param theta = -0.4;\nlet z = sample Normal(theta, 1);\nmaximize max(z * z * z, z);",
    );
    let kink = |z: f64| (z * z * z).max(z) * (z - theta) * normal_pdf(z - theta);
    let truth = simpson(kink, theta - 12.0, theta + 12.0, 48_000);
    let (m, se) = lyy18_gradient(&model, theta);
    assert!(
        (m - truth).abs() <= 4.0 * se,
        "LYY18 {m} vs quadrature {truth} (se {se})"
    );
}
