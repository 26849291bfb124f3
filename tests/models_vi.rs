//! Variational inference on constrained latents against the optimum of the guide family,
//! computed here independently: conjugate models (a Poisson rate under Exponential and Gamma
//! priors, a Normal scale under a HalfNormal prior, a Bernoulli probability under a Beta
//! prior) and one model with a constrained latent in an if-statement's guard.
//!
//! The guide is `N(mu, s)` on the unconstrained `u`, `z = T(u)`. Its ELBO is
//! `int N(u; mu, s) f(u) du + ln s + const`, with `f(u) = log p(x, T(u)) + log |T'(u)|`
//! written out by hand below; its gradient comes from the score identity (so jumps of `f` are
//! exact), by Simpson's rule split at the jump, and Newton's method finds its root `theta*`.
//! Then (1) each estimator's mean gradient at `theta*` is zero, and at a displaced point equal
//! to the quadrature gradient, within 4 standard errors; (2) runs of each estimator from the
//! default start end, averaged over seeds, within 4 standard errors of `theta*`.

mod infer_common;

use dsgd::estimate::{self, Engine, EstimatorKind, Problem};
use dsgd::experiment::run::{RunConfig, run};
use dsgd::ir::{Model, Transform};
use dsgd::lang::{CompileOptions, compile_source};
use dsgd::optim::{AdamConfig, OptimizerConfig};
use infer_common::gradient_mean;

const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;

/// `ln sigmoid(x) = -softplus(-x)`.
fn ln_sigmoid(x: f64) -> f64 {
    -softplus(-x)
}

fn softplus(x: f64) -> f64 {
    x.max(0.0) + (-x.abs()).exp().ln_1p()
}

fn softplus_inv(y: f64) -> f64 {
    y + (-(-y).exp_m1()).ln()
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// One test model: its source, `f(u)` on the unconstrained scale (up to a constant), where
/// `f` jumps (if anywhere), and the transform its latent must get.
struct Case {
    name: &'static str,
    source: &'static str,
    f: fn(f64) -> f64,
    jump: Option<f64>,
    transform: Transform,
}

/// `log N(0.3 | 0, 1)` and `log N(0.3 | 2, 0.5)`: the two branches of the guard model.
fn branch_a() -> f64 {
    -0.5 * 0.3f64.powi(2) - LN_SQRT_2PI
}
fn branch_b() -> f64 {
    -0.5 * ((0.3 - 2.0) / 0.5f64).powi(2) - 0.5f64.ln() - LN_SQRT_2PI
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            // Gamma(1 + 8, 1 + 3) posterior: f(u) = 9u - 4e^u.
            name: "exponential-poisson",
            source: "data k = [3, 1, 4];\nlet r = sample Exponential(1);\n\
                     for i in 0..3 { observe k[i] ~ Poisson(r); }",
            f: |u| 9.0 * u - 4.0 * u.exp(),
            jump: None,
            transform: Transform::Exp { lower: 0.0 },
        },
        Case {
            // Gamma(2 + 5, 1 + 3) posterior: f(u) = 7u - 4e^u.
            name: "gamma-poisson",
            source: "data k = [2, 0, 3];\nlet r = sample Gamma(2, 1);\n\
                     for i in 0..3 { observe k[i] ~ Poisson(r); }",
            f: |u| 7.0 * u - 4.0 * u.exp(),
            jump: None,
            transform: Transform::Exp { lower: 0.0 },
        },
        Case {
            // sigma = e^u: -sigma^2/2 - sum y^2 / (2 sigma^2) - 3 ln sigma + u.
            name: "halfnormal-scale",
            source: "data y = [0.5, -1.2, 0.8];\nlet s = sample HalfNormal(1);\n\
                     for i in 0..3 { observe y[i] ~ Normal(0, s); }",
            f: |u| -0.5 * (2.0 * u).exp() - 2.33 / (2.0 * (2.0 * u).exp()) - 2.0 * u,
            jump: None,
            transform: Transform::Exp { lower: 0.0 },
        },
        Case {
            // Beta(2 + 3, 2 + 1) posterior; p = sigmoid(u): 5 ln p + 3 ln(1 - p) with the
            // log-Jacobian ln p + ln(1 - p) included.
            name: "beta-bernoulli",
            source: "data x = [1, 0, 1, 1];\nlet p = sample Beta(2, 2);\n\
                     for i in 0..4 { observe x[i] ~ Bernoulli(p); }",
            f: |u| 5.0 * ln_sigmoid(u) + 3.0 * ln_sigmoid(-u),
            jump: None,
            transform: Transform::Logit {
                lower: 0.0,
                upper: 1.0,
            },
        },
        Case {
            // s ~ Exponential(1), and the branch taken depends on s < 1, i.e. u < 0.
            name: "guard",
            source: "let s = sample Exponential(1);\n\
                     if s < 1 { observe 0.3 ~ Normal(0, 1); } else { observe 0.3 ~ Normal(2, 0.5); }",
            f: |u| -u.exp() + u + if u < 0.0 { branch_a() } else { branch_b() },
            jump: Some(0.0),
            transform: Transform::Exp { lower: 0.0 },
        },
    ]
}

/// The guard model's `f` smoothed as the Fixed estimator does at accuracy `eta`:
/// `sigma(-u/eta) a + sigma(u/eta) b`.
fn guard_smoothed(u: f64, eta: f64) -> f64 {
    -u.exp() + u + sigmoid(-u / eta) * branch_a() + sigmoid(u / eta) * branch_b()
}

/// Composite Simpson's rule of `g` on `[a, b]` with `n` (even) intervals.
fn simpson(g: &dyn Fn(f64) -> f64, a: f64, b: f64, n: usize) -> f64 {
    let h = (b - a) / n as f64;
    let mut s = g(a) + g(b);
    for i in 1..n {
        s += g(a + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    s * h / 3.0
}

/// `int N(u; mu, s) g(u) du` over `mu +- 14 s`, split at `jump`.
fn expect(g: &dyn Fn(f64) -> f64, mu: f64, s: f64, jump: Option<f64>) -> f64 {
    let density = |u: f64| {
        let t = (u - mu) / s;
        (-0.5 * t * t - LN_SQRT_2PI).exp() / s
    };
    let h = |u: f64| density(u) * g(u);
    let (a, b) = (mu - 14.0 * s, mu + 14.0 * s);
    match jump {
        // The left piece ends just below the jump, so that its last node sees the left
        // branch (1e-13 of the interval is dropped, far below the rule's error).
        Some(j) if a < j && j < b => simpson(&h, a, j - 1e-13, 4000) + simpson(&h, j, b, 4000),
        _ => simpson(&h, a, b, 8000),
    }
}

/// The ELBO's gradient in `(mu, rho)`, `s = softplus(rho)`, by the score identity.
fn elbo_gradient(f: &dyn Fn(f64) -> f64, jump: Option<f64>, theta: [f64; 2]) -> [f64; 2] {
    let (mu, rho) = (theta[0], theta[1]);
    let s = softplus(rho);
    let d_mu = expect(&|u| f(u) * (u - mu) / (s * s), mu, s, jump);
    let d_s = expect(&|u| f(u) * (((u - mu) / s).powi(2) - 1.0) / s, mu, s, jump) + 1.0 / s;
    [d_mu, d_s * sigmoid(rho)]
}

/// The root of the ELBO's gradient by Newton's method (finite-difference Jacobian).
fn optimum(f: &dyn Fn(f64) -> f64, jump: Option<f64>, start: [f64; 2]) -> [f64; 2] {
    let mut t = start;
    for _ in 0..60 {
        let g = elbo_gradient(f, jump, t);
        let h = 1e-5;
        let mut jac = [[0.0; 2]; 2];
        for k in 0..2 {
            let (mut up, mut down) = (t, t);
            up[k] += h;
            down[k] -= h;
            let (gu, gd) = (elbo_gradient(f, jump, up), elbo_gradient(f, jump, down));
            for r in 0..2 {
                jac[r][k] = (gu[r] - gd[r]) / (2.0 * h);
            }
        }
        let det = jac[0][0] * jac[1][1] - jac[0][1] * jac[1][0];
        let step = [
            (jac[1][1] * g[0] - jac[0][1] * g[1]) / det,
            (-jac[1][0] * g[0] + jac[0][0] * g[1]) / det,
        ];
        // Damped so that a poor start cannot jump out of the basin.
        let scale = 1.0f64.min(0.5 / step[0].abs().max(step[1].abs()));
        t = [t[0] - scale * step[0], t[1] - scale * step[1]];
        if step[0].abs().max(step[1].abs()) < 1e-11 {
            break;
        }
    }
    let g = elbo_gradient(f, jump, t);
    assert!(
        g[0].abs().max(g[1].abs()) < 1e-8,
        "Newton did not converge: {g:?}"
    );
    t
}

fn compile(src: &str) -> Model {
    compile_source(
        "t.dsgd",
        src,
        std::path::Path::new("."),
        &CompileOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn engine(model: &Model, kind: EstimatorKind, eta: f64) -> Engine {
    let problem = Problem::new(model).unwrap();
    let est = estimate::build(kind, &problem, eta, None).unwrap();
    Engine::new(problem, est)
}

fn assert_within(what: &str, mean: f64, se: f64, expected: f64) {
    assert!(se > 0.0, "{what}: zero standard error");
    assert!(
        (mean - expected).abs() <= 4.0 * se,
        "{what}: {mean} vs {expected} (se {se}, {:.1} se)",
        (mean - expected) / se
    );
}

/// Estimators whose expected gradient is the crisp ELBO's on this case. On a model without
/// if-statements, DSGD and Fixed are Reparam; with one, Reparam misses the jump and the
/// smoothed ones target the smoothed ELBO (checked separately).
fn crisp_estimators(case: &Case) -> Vec<EstimatorKind> {
    if case.jump.is_some() {
        vec![EstimatorKind::Score, EstimatorKind::Lyy18]
    } else {
        vec![
            EstimatorKind::Dsgd,
            EstimatorKind::Fixed,
            EstimatorKind::Reparam,
            EstimatorKind::Score,
            EstimatorKind::Lyy18,
        ]
    }
}

#[test]
fn the_models_compile_to_their_transforms_without_support_if_statements() {
    for case in cases() {
        let m = compile(case.source);
        assert_eq!(m.latent_transform(0), case.transform, "{}", case.name);
        let ifs = usize::from(case.jump.is_some());
        assert_eq!(m.program.if_count(), ifs, "{}", case.name);
    }
}

#[test]
fn every_estimator_is_unbiased_at_and_near_the_optimum_of_the_guide_family() {
    for case in cases() {
        let m = compile(case.source);
        let star = optimum(&case.f, case.jump, [0.0, 0.0]);
        let away = [star[0] + 0.4, star[1] - 0.3];
        let g_away = elbo_gradient(&case.f, case.jump, away);
        assert!(g_away[0].abs() > 0.1, "{}: {g_away:?}", case.name);
        for kind in crisp_estimators(&case) {
            let mut e = engine(&m, kind, 0.1);
            for (theta, truth) in [(star, [0.0, 0.0]), (away, g_away)] {
                let (mean, se) = gradient_mean(&mut e, &theta, 40, 5000);
                for k in 0..2 {
                    let what = format!("{} {} d{k} at {theta:?}", case.name, kind.name());
                    assert_within(&what, mean[k], se[k], truth[k]);
                }
            }
        }
    }
}

#[test]
fn on_a_constrained_guard_fixed_targets_the_smoothed_elbo_and_reparam_misses_the_jump() {
    let case = cases().pop().unwrap();
    assert_eq!(case.name, "guard");
    let m = compile(case.source);
    let eta = 0.1;
    let smooth = |u: f64| guard_smoothed(u, eta);
    let star = optimum(&smooth, None, [0.0, 0.0]);
    let mut fixed = engine(&m, EstimatorKind::Fixed, eta);
    let (mean, se) = gradient_mean(&mut fixed, &star, 40, 5000);
    for k in 0..2 {
        assert_within(&format!("fixed d{k}"), mean[k], se[k], 0.0);
    }
    // Reparam sees only the smooth part of f: its mean is the gradient of E[-e^u + u].
    let crisp = optimum(&case.f, case.jump, [0.0, 0.0]);
    let smooth_part = |u: f64| -u.exp() + u;
    let truth = elbo_gradient(&smooth_part, None, crisp);
    let mut reparam = engine(&m, EstimatorKind::Reparam, eta);
    let (mean, se) = gradient_mean(&mut reparam, &crisp, 40, 5000);
    assert_within("reparam d0", mean[0], se[0], truth[0]);
    assert!(
        truth[0].abs() > 100.0 * se[0],
        "the jump matters: {truth:?}"
    );
}

/// Final `theta` of `seeds` runs: their mean and its standard error, per component.
fn runs(m: &Model, kind: EstimatorKind, seeds: u64) -> ([f64; 2], [f64; 2]) {
    let mut finals = Vec::new();
    for seed in 0..seeds {
        let cfg = RunConfig {
            estimator: kind,
            iterations: 4000,
            batch: 16,
            optimizer: OptimizerConfig::Adam(AdamConfig {
                lr: 0.01,
                ..AdamConfig::default()
            }),
            seed,
            log_every: 4000,
            log_samples: 100,
            threads: Some(1),
            ..RunConfig::default()
        };
        let r = run(m, &cfg, &mut []).unwrap();
        finals.push([r.theta[0], r.theta[1]]);
    }
    let n = finals.len() as f64;
    let mut mean = [0.0; 2];
    let mut se = [0.0; 2];
    for k in 0..2 {
        mean[k] = finals.iter().map(|t| t[k]).sum::<f64>() / n;
        let var = finals.iter().map(|t| (t[k] - mean[k]).powi(2)).sum::<f64>() / (n - 1.0);
        se[k] = (var / n).sqrt();
    }
    (mean, se)
}

#[test]
fn runs_of_every_estimator_end_at_the_optimum_of_the_guide_family() {
    for case in cases() {
        let m = compile(case.source);
        let star = optimum(&case.f, case.jump, [0.0, 0.0]);
        let smoothed_star = optimum(&|u| guard_smoothed(u, 0.1), None, [0.0, 0.0]);
        for kind in [
            EstimatorKind::Dsgd,
            EstimatorKind::Fixed,
            EstimatorKind::Reparam,
            EstimatorKind::Score,
            EstimatorKind::Lyy18,
        ] {
            // With the guard, DSGD (at eta 0.1 by iteration 4000) and Fixed end at the
            // smoothed optimum; Reparam, which misses the jump, is not expected anywhere.
            let target = match (case.jump, kind) {
                (None, _) | (_, EstimatorKind::Score | EstimatorKind::Lyy18) => star,
                (Some(_), EstimatorKind::Dsgd | EstimatorKind::Fixed) => smoothed_star,
                _ => continue,
            };
            let (mean, se) = runs(&m, kind, 8);
            for k in 0..2 {
                let what = format!("{} {} theta[{k}]", case.name, kind.name());
                assert_within(&what, mean[k], se[k], target[k]);
            }
        }
    }
}

#[test]
fn quadrature_reproduces_the_gamma_posterior_moments() {
    // For f(u) = 9u - 4e^u (a Gamma(9, 4) posterior of e^u), the exact posterior of u has
    // mean digamma(9) - ln 4; the Gaussian guide's optimal mean is close to it.
    let star = optimum(&|u| 9.0 * u - 4.0 * u.exp(), None, [0.0, 0.0]);
    let digamma_9 =
        1.0 + 1.0 / 2.0 + 1.0 / 3.0 + 1.0 / 4.0 + 1.0 / 5.0 + 1.0 / 6.0 + 1.0 / 7.0 + 1.0 / 8.0
            - 0.577_215_664_901_532_9;
    let exact_mean = digamma_9 - 4f64.ln();
    assert!(
        (star[0] - exact_mean).abs() < 0.05,
        "{star:?} vs {exact_mean}"
    );
    // The guide's s is near the posterior sd of u, sqrt(trigamma(9)) = 0.3464.
    assert!((softplus(star[1]) - 0.3464).abs() < 0.03, "{star:?}");
    assert!((softplus_inv(softplus(0.7)) - 0.7).abs() < 1e-12);
}

#[test]
fn quadrature_matches_the_closed_form_gradient_of_the_guard_model() {
    // E[-e^u + u + a [u < 0] + b [u >= 0]] = -e^(mu + s^2/2) + mu + a Phi(-mu/s) + b Phi(mu/s).
    let case = cases().pop().unwrap();
    let (mu, rho) = (-0.87, -0.21);
    let s = softplus(rho);
    let phi = |x: f64| (-0.5 * x * x - LN_SQRT_2PI).exp();
    let jump = branch_b() - branch_a();
    let d_mu = -(mu + s * s / 2.0).exp() + 1.0 + jump * phi(mu / s) / s;
    let d_s = -(mu + s * s / 2.0).exp() * s - jump * phi(mu / s) * mu / (s * s) + 1.0 / s;
    let g = elbo_gradient(&case.f, case.jump, [mu, rho]);
    assert!((g[0] - d_mu).abs() < 1e-9, "{g:?} vs {d_mu}");
    assert!(
        (g[1] - d_s * sigmoid(rho)).abs() < 1e-9,
        "{g:?} vs {}",
        d_s * sigmoid(rho)
    );
}
