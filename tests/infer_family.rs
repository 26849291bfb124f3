//! Families: the layout and initialisation of `theta`, user families of objective mode,
//! fixed latents, and the pathwise gradient against finite differences (`diagnose`).

mod infer_common;

use dsgd::experiment::diagnose::{DiagnoseConfig, diagnose};
use dsgd::family::{Block, Family, FamilyError};
use dsgd::ir::{Builder, Dist, LatentKind, LatentSpec, Mode, Model, ParamSpec};
use dsgd::special::{softplus, softplus_inv};
use infer_common::{example, vi_step};

/// Objective mode with a non-trivial family: `z1 ~ Normal(a * b, softplus(b))`,
/// `z2 ~ Normal(0, 2)` fixed; `maximize a * z1 - z1^2 + relu(z1 + z2) + b`.
fn user_family() -> Model {
    let bld = Builder::new();
    let a = bld.param("a");
    let b = bld.param("b");
    let z1 = bld.latent("z1");
    let z2 = bld.latent("z2");
    let f = a * z1 - z1.powi(2) + bld.relu(z1 + z2) + b;
    let loc = a * b;
    let scale = b.softplus();
    let program = bld.finish(&[f, loc, scale]).unwrap();
    let (loc, scale) = (program.outputs()[1], program.outputs()[2]);
    Model {
        name: "user".into(),
        mode: Mode::Objective { minimize: false },
        program: program.into(),
        latents: vec![
            LatentSpec {
                name: "z1".into(),
                kind: LatentKind::Family { loc, scale },
                span: None,
            },
            LatentSpec {
                name: "z2".into(),
                kind: LatentKind::Fixed {
                    loc: 0.0,
                    scale: 2.0,
                },
                span: None,
            },
        ],
        params: vec![
            ParamSpec {
                name: "a".into(),
                init: 0.7,
            },
            ParamSpec {
                name: "b".into(),
                init: -0.3,
            },
        ],
        plates: Vec::new(),
        loops: Vec::new(),
    }
}

#[test]
fn variational_theta_is_mu_rho_per_guided_latent() {
    let fam = Family::new(&vi_step([1.0, 0.0], 0.0)).unwrap();
    assert_eq!(fam.dim(), 4);
    assert_eq!(fam.names(), ["mu[z1]", "rho[z1]", "mu[z2]", "rho[z2]"]);
    assert_eq!(fam.blocks(), [Block::Mu, Block::Rho, Block::Mu, Block::Rho]);
    let init = fam.init();
    // Guide init mean 0.3, std 0.8 and mean -0.2, std 1.3 (stored as softplus^-1(std)).
    assert_eq!(init[0], 0.3);
    assert!((softplus(init[1]) - 0.8).abs() < 1e-14);
    assert_eq!(init[3], softplus_inv(1.3));
    let mut st = fam.state();
    st.update(&fam, &init).unwrap();
    assert!((st.scale(1) - 1.3).abs() < 1e-14);
    // d scale / d rho = sigmoid(rho): the Jacobian entry of rho[z1].
    let jac: Vec<_> = st.jacobian(0).collect();
    assert_eq!(jac.len(), 2);
    assert_eq!((jac[0].0, jac[0].1, jac[0].2), (0, 1.0, 0.0));
    assert!((jac[1].2 - dsgd::special::sigmoid(init[1])).abs() < 1e-15);
    // -log q at z = loc is ln scale + ln(2 pi)/2 per latent.
    let expected = 0.8f64.ln() + 1.3f64.ln() + 2.0 * dsgd::special::HALF_LN_2PI;
    assert!((st.entropy_const() - expected).abs() < 1e-14);
}

#[test]
fn user_family_reads_loc_and_scale_from_program_outputs() {
    let fam = Family::new(&user_family()).unwrap();
    assert_eq!(fam.names(), ["a", "b"]);
    assert!(!fam.in_entropy(0) && !fam.in_entropy(1));
    let mut st = fam.state();
    let theta = [0.7, -0.3];
    st.update(&fam, &theta).unwrap();
    assert!((st.loc(0) - 0.7 * -0.3).abs() < 1e-15);
    assert!((st.scale(0) - softplus(-0.3)).abs() < 1e-15);
    assert_eq!((st.loc(1), st.scale(1)), (0.0, 2.0));
    // d(a b)/da = b, d(a b)/db = a; d softplus(b)/db = sigmoid(b).
    let jac: Vec<_> = st.jacobian(0).collect();
    assert_eq!(jac.len(), 2);
    assert!((jac[0].1 - -0.3).abs() < 1e-15 && jac[0].2 == 0.0);
    assert!((jac[1].1 - 0.7).abs() < 1e-15);
    assert!((jac[1].2 - dsgd::special::sigmoid(-0.3)).abs() < 1e-15);
    assert_eq!(st.jacobian(1).count(), 0);
}

#[test]
fn a_non_positive_scale_is_an_error_naming_the_latent() {
    // Example 1.1 with scale = theta: theta = -1 gives a negative scale.
    let b = Builder::new();
    let theta = b.param("theta");
    let z = b.latent("z");
    let program = b.finish(&[z * 1.5, theta]).unwrap();
    let out = program.outputs()[1];
    let model = Model {
        name: "bad".into(),
        mode: Mode::Objective { minimize: false },
        program: program.into(),
        latents: vec![LatentSpec {
            name: "z".into(),
            kind: LatentKind::Family {
                loc: out,
                scale: out,
            },
            span: None,
        }],
        params: vec![ParamSpec {
            name: "theta".into(),
            init: -1.0,
        }],
        plates: Vec::new(),
        loops: Vec::new(),
    };
    let fam = Family::new(&model).unwrap();
    let mut st = fam.state();
    let err = st.update(&fam, &[-1.0]).unwrap_err();
    assert_eq!(
        err,
        FamilyError::BadScale {
            latent: "z".into(),
            value: -1.0
        }
    );
    assert!(st.update(&fam, &[2.0]).is_ok());
}

#[test]
fn the_first_invalid_latent_is_named_whether_fixed_or_not() {
    // `z` has scale theta (invalid for theta <= 0) and `w`, fixed, a scale of zero; in
    // either order the error names the first invalid one, at every update.
    for fixed_first in [false, true] {
        let b = Builder::new();
        let theta = b.param("theta");
        let (z, w) = if fixed_first {
            let w = b.latent("w");
            (b.latent("z"), w)
        } else {
            let z = b.latent("z");
            (z, b.latent("w"))
        };
        let program = b.finish(&[z * 1.5 + w, theta]).unwrap();
        let out = program.outputs()[1];
        let user = LatentSpec {
            name: "z".into(),
            kind: LatentKind::Family {
                loc: out,
                scale: out,
            },
            span: None,
        };
        let fixed = LatentSpec {
            name: "w".into(),
            kind: LatentKind::Fixed {
                loc: 0.0,
                scale: 0.0,
            },
            span: None,
        };
        let latents = if fixed_first {
            vec![fixed, user]
        } else {
            vec![user, fixed]
        };
        let model = Model {
            name: "bad".into(),
            mode: Mode::Objective { minimize: false },
            program: program.into(),
            latents,
            params: vec![ParamSpec {
                name: "theta".into(),
                init: -1.0,
            }],
            plates: Vec::new(),
            loops: Vec::new(),
        };
        let fam = Family::new(&model).unwrap();
        let mut st = fam.state();
        let bad = |latent: &str, value: f64| FamilyError::BadScale {
            latent: latent.into(),
            value,
        };
        for _ in 0..2 {
            let first = if fixed_first {
                bad("w", 0.0)
            } else {
                bad("z", -1.0)
            };
            assert_eq!(st.update(&fam, &[-1.0]).unwrap_err(), first);
            assert_eq!(st.update(&fam, &[2.0]).unwrap_err(), bad("w", 0.0));
        }
    }
}

#[test]
fn a_location_that_reads_a_latent_is_refused() {
    let b = Builder::new();
    let z1 = b.latent("z1");
    let z2 = b.latent("z2");
    let one = b.constant(1.0);
    let f = b.log_density(Dist::Normal, z2, &[z1, one]).unwrap();
    let program = b.finish(&[f, z1, one]).unwrap();
    let (loc, scale) = (program.outputs()[1], program.outputs()[2]);
    let model = Model {
        name: "hier".into(),
        mode: Mode::Objective { minimize: false },
        program: program.into(),
        latents: vec![
            LatentSpec {
                name: "z1".into(),
                kind: LatentKind::Fixed {
                    loc: 0.0,
                    scale: 1.0,
                },
                span: None,
            },
            LatentSpec {
                name: "z2".into(),
                kind: LatentKind::Family { loc, scale },
                span: None,
            },
        ],
        params: vec![],
        plates: Vec::new(),
        loops: Vec::new(),
    };
    let err = Family::new(&model).unwrap_err();
    assert_eq!(
        err,
        FamilyError::DependsOnLatent {
            latent: "z2".into(),
            what: "location"
        }
    );
}

#[test]
fn pathwise_gradients_match_finite_differences() {
    // Objective mode (user family and a fixed latent), variational mode with the entropy.
    for model in [example(), user_family(), vi_step([1.0, -2.0], 0.5)] {
        let report = diagnose(
            &model,
            &DiagnoseConfig {
                points: 4,
                ..DiagnoseConfig::default()
            },
        )
        .unwrap();
        assert!(report.passed, "{}: {report:?}", model.name);
        assert_eq!(report.points, 4);
        for b in &report.blocks {
            assert!(b.compared > 0, "{}: {b:?}", model.name);
            assert!(b.worst_relative_error < 1e-6, "{}: {b:?}", model.name);
        }
    }
}

#[test]
fn diagnose_catches_a_wrong_gradient() {
    // A tolerance below rounding error must fail: the comparison really compares.
    let cfg = DiagnoseConfig {
        tolerance: 1e-30,
        ..DiagnoseConfig::default()
    };
    let report = diagnose(&vi_step([1.0, -2.0], 0.5), &cfg).unwrap();
    assert!(!report.passed);
    let blocks: Vec<_> = report
        .blocks
        .iter()
        .map(|b| (b.semantics.as_str(), b.block.as_str()))
        .collect();
    assert_eq!(
        blocks,
        [
            ("crisp", "mu"),
            ("crisp", "rho"),
            ("smoothed", "mu"),
            ("smoothed", "rho")
        ]
    );
}

/// `E[a z1 - z1^2 + relu(z1 + z2) + b]` for the user family, in closed form:
/// `z1 + z2 ~ N(m, s1^2 + 4)` and `E relu(X) = mu Phi(mu / s) + s phi(mu / s)`.
fn user_family_objective(a: f64, b: f64) -> f64 {
    let (m, s1) = (a * b, softplus(b));
    let s = (s1 * s1 + 4.0).sqrt();
    let relu = m * dsgd::special::normal_cdf(m / s) + s * dsgd::special::normal_pdf(m / s);
    a * m - (m * m + s1 * s1) + relu + b
}

#[test]
fn every_estimator_is_unbiased_on_a_continuous_user_family() {
    use dsgd::estimate::{self, Engine, EstimatorKind, Problem};
    let theta = [0.7, -0.3];
    let h = 1e-5;
    let truth = [
        (user_family_objective(theta[0] + h, theta[1])
            - user_family_objective(theta[0] - h, theta[1]))
            / (2.0 * h),
        (user_family_objective(theta[0], theta[1] + h)
            - user_family_objective(theta[0], theta[1] - h))
            / (2.0 * h),
    ];
    for kind in [
        EstimatorKind::Reparam,
        EstimatorKind::Score,
        EstimatorKind::Lyy18,
    ] {
        let problem = Problem::new(&user_family()).unwrap();
        let est = estimate::build(kind, &problem, 0.1, None).unwrap();
        let mut engine = Engine::new(problem, est);
        let (m, se) = infer_common::gradient_mean(&mut engine, &theta, 20, 10_000);
        for p in 0..2 {
            assert!(
                (m[p] - truth[p]).abs() < 4.0 * se[p],
                "{kind} component {p}: {} vs {} (se {})",
                m[p],
                truth[p],
                se[p]
            );
        }
    }
}
