//! The run loop end to end on Example 1.1 and a variational model: convergence to the
//! known stationary points, thread-count independence, non-finite handling, reports.

mod infer_common;

use dsgd::estimate::EstimatorKind;
use dsgd::experiment::report::StopReason;
use dsgd::experiment::run::{OnNonFinite, RunConfig, run};
use dsgd::ir::{Builder, Dist, LatentKind, LatentSpec, Mode, Model};
use dsgd::optim::{OptimizerConfig, SgdConfig};
use infer_common::{example, vi_step};

/// Example 1.1's stationary point: the root of `theta = N(theta | 0, 1)`.
const STATIONARY: f64 = 0.3722;

fn sgd_config(kind: EstimatorKind, seed: u64) -> RunConfig {
    RunConfig {
        estimator: kind,
        // At eta = 0.1 the schedule starts so smooth (eta_0 = 6.3) that with steps 0.5 / k
        // the iterate still lags the moving smoothed optimum at 20,000 steps (0.355 +- 0.003
        // over ten seeds); at 0.02 it reaches 0.372.
        eta: 0.02,
        iterations: 20_000,
        batch: 16,
        optimizer: OptimizerConfig::Sgd(SgdConfig {
            lr: 0.5,
            power: 1.0,
        }),
        seed,
        log_every: 5_000,
        log_samples: 1000,
        ..RunConfig::default()
    }
}

#[test]
fn example_converges_where_the_paper_says() {
    let cases = [
        (EstimatorKind::Dsgd, STATIONARY, 0.02),
        (EstimatorKind::Lyy18, STATIONARY, 0.02),
        (EstimatorKind::Score, STATIONARY, 0.05),
        // Reparam ignores the jump and converges to the maximiser of -z^2/2: 0.
        (EstimatorKind::Reparam, 0.0, 0.02),
    ];
    for (kind, target, tol) in cases {
        for seed in [0, 1, 2] {
            let report = run(&example(), &sgd_config(kind, seed), &mut []).unwrap();
            let theta = report.theta[0];
            assert!(
                (theta - target).abs() < tol,
                "{kind} seed {seed}: theta = {theta}, want {target}"
            );
            assert_eq!(report.stop_reason, StopReason::Completed);
            assert_eq!(report.iterations, 20_000);
        }
    }
}

#[test]
fn trajectory_rows_are_logged_every_n_and_at_the_end() {
    let cfg = RunConfig {
        iterations: 250,
        log_every: 100,
        log_samples: 200,
        eta: 0.1,
        ..sgd_config(EstimatorKind::Dsgd, 0)
    };
    let r = run(&example(), &cfg, &mut []).unwrap();
    let iters: Vec<u64> = r.trajectory.iter().map(|row| row.iter).collect();
    assert_eq!(iters, [0, 100, 200, 250]);
    // At theta = 1 the objective is E[-z^2/2 + [z >= 0]] = -(1 + 1)/2 + Phi(1) = -0.1587.
    let first = &r.trajectory[0];
    assert!(
        (first.value - (-1.0 + dsgd::special::normal_cdf(1.0))).abs() < 0.1,
        "{}",
        first.value
    );
    assert!(first.var_component > 0.0 && first.var_norm > 0.0);
    // DSGD logs the accuracy it used: eta_0 = 0.1 * sqrt(4000).
    assert!((first.eta.unwrap() - 0.1 * 4000f64.sqrt()).abs() < 1e-9);
    assert_eq!(r.final_value, r.trajectory.last().unwrap().value);
    assert_eq!(r.eta_decay, Some(0.5));
}

#[test]
fn one_dimensional_variance_measures_agree() {
    // With a single component, var_component is the variance of g and var_norm that of |g|.
    let cfg = RunConfig {
        iterations: 1,
        log_every: 1,
        log_samples: 5000,
        ..sgd_config(EstimatorKind::Reparam, 3)
    };
    let r = run(&example(), &cfg, &mut []).unwrap();
    // Reparam's sample is -z with z ~ N(1, 1): variance 1.
    let v = r.trajectory[0].var_component;
    assert!((v - 1.0).abs() < 0.1, "{v}");
    assert!(r.trajectory[0].var_norm < v);
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let model = vi_step([1.0, -2.0], 0.5);
    let base = RunConfig {
        estimator: EstimatorKind::Lyy18,
        iterations: 300,
        batch: 100,
        log_every: 100,
        log_samples: 300,
        ..RunConfig::default()
    };
    let one = run(
        &model,
        &RunConfig {
            threads: Some(1),
            ..base.clone()
        },
        &mut [],
    )
    .unwrap();
    let two = run(
        &model,
        &RunConfig {
            threads: Some(2),
            ..base.clone()
        },
        &mut [],
    )
    .unwrap();
    assert_eq!(one.theta, two.theta);
    assert_eq!(one.trajectory, two.trajectory);
    let other_seed = run(
        &model,
        &RunConfig {
            seed: 1,
            threads: Some(2),
            ..base
        },
        &mut [],
    )
    .unwrap();
    assert_ne!(one.theta, other_seed.theta);
}

#[test]
fn vi_dsgd_improves_the_elbo() {
    let model = vi_step([1.0, -2.0], 0.5);
    let cfg = RunConfig {
        iterations: 2000,
        log_every: 1000,
        optimizer: OptimizerConfig::Adam(dsgd::optim::AdamConfig {
            lr: 0.01,
            ..Default::default()
        }),
        ..RunConfig::default()
    };
    let r = run(&model, &cfg, &mut []).unwrap();
    let first = r.trajectory.first().unwrap().value;
    assert!(r.final_value > first + 0.1, "{first} -> {}", r.final_value);
    assert_eq!(r.final_elbo, Some(r.final_value));
    // The latents in natural units are the guide's mean and softplus(rho).
    assert_eq!(r.latents.len(), 2);
    assert_eq!(r.latents[0].mean, r.theta[0]);
    let sd = dsgd::special::softplus(r.theta[1]);
    assert!((r.latents[0].sd - sd).abs() < 1e-15);
    assert!(r.params.0.is_empty());
    assert_eq!(r.theta.len(), 4);
    assert_eq!(r.theta_names, ["mu[z1]", "rho[z1]", "mu[z2]", "rho[z2]"]);
}

/// `log p = log Exponential(z | 1)`: `-inf` for `z < 0`, which any Gaussian guide reaches.
fn exponential_prior() -> Model {
    let b = Builder::new();
    let z = b.latent("z");
    let f = b
        .log_density(Dist::Exponential, z, &[b.constant(1.0)])
        .unwrap();
    let program = b.finish(&[f]).unwrap();
    Model {
        name: "expo".into(),
        mode: Mode::Variational,
        program: program.into(),
        latents: vec![LatentSpec {
            name: "z".into(),
            kind: LatentKind::Guided {
                init_mean: 1.0,
                init_std: 1.0,
            },
            span: None,
        }],
        params: vec![],
        plates: Vec::new(),
        loops: Vec::new(),
    }
}

#[test]
fn a_non_finite_objective_stops_the_run_naming_the_iteration() {
    let cfg = RunConfig {
        estimator: EstimatorKind::Reparam,
        iterations: 500,
        log_every: 100,
        log_samples: 100,
        ..RunConfig::default()
    };
    let r = run(&exponential_prior(), &cfg, &mut []).unwrap();
    assert_eq!(r.stop_reason, StopReason::NonFinite);
    let msg = r.stop_message.clone().unwrap();
    assert!(msg.contains("iteration 0") && msg.contains("-inf"), "{msg}");
    // The trajectory up to that point is kept, and the JSON writes -inf as null.
    assert_eq!(r.trajectory.len(), 1);
    assert!(r.to_json().contains("\"final_elbo\": null"));
    assert!(r.to_json().contains("\"final_value\": null"));
    assert!(!r.converged && r.convergence.contains("stopped early"));

    let cont = RunConfig {
        on_nonfinite: OnNonFinite::Continue,
        ..cfg
    };
    let r = run(&exponential_prior(), &cont, &mut []).unwrap();
    assert_eq!(r.stop_reason, StopReason::Completed);
    assert_eq!(r.iterations, 500);
    assert!(r.skipped_steps > 0 && r.stop_message.is_some());
    assert!(
        !r.converged && r.convergence.contains("skipped"),
        "{}",
        r.convergence
    );
    assert_eq!(r.trajectory.len(), 6);
}

#[test]
fn invalid_settings_are_refused() {
    for cfg in [
        RunConfig {
            eta: -1.0,
            ..RunConfig::default()
        },
        RunConfig {
            iterations: 0,
            ..RunConfig::default()
        },
        RunConfig {
            batch: 0,
            ..RunConfig::default()
        },
        RunConfig {
            log_samples: 1,
            ..RunConfig::default()
        },
        RunConfig {
            eta_decay: Some(f64::NAN),
            ..RunConfig::default()
        },
    ] {
        let err = run(&example(), &cfg, &mut []).unwrap_err();
        assert!(err.to_string().starts_with("invalid setting"), "{err}");
    }
    let cfg = RunConfig {
        estimator: EstimatorKind::Lyy18,
        ..RunConfig::default()
    };
    let err = run(&infer_common::vi_nonaffine(), &cfg, &mut []).unwrap_err();
    assert!(err.to_string().contains("not affine"), "{err}");
}

#[test]
fn reports_are_written_atomically_as_json_and_csv() {
    let cfg = RunConfig {
        iterations: 200,
        log_every: 100,
        log_samples: 50,
        ..RunConfig::default()
    };
    let r = run(&example(), &cfg, &mut []).unwrap();
    let dir = std::env::temp_dir().join(format!("dsgd-infer-run-{}", std::process::id()));
    let files = r.write_to(&dir).unwrap();
    assert_eq!(files.len(), 2);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    for key in [
        "model",
        "estimator",
        "eta",
        "seed",
        "iterations",
        "kind",
        "final_value",
        "final_value_se",
        "params",
        "latents",
        "converged",
        "convergence",
        "theta",
        "trajectory",
        "seconds",
    ] {
        assert!(json.get(key).is_some(), "missing {key}");
    }
    // An objective program: no `final_elbo`, labelled objective everywhere.
    assert!(json.get("final_elbo").is_none());
    assert_eq!(json["kind"], "objective");
    assert_eq!(json["params"]["theta"], json["theta"][0]);
    assert_eq!(json["latents"][0]["name"], "z");
    let csv = std::fs::read_to_string(dir.join("trajectory.csv")).unwrap();
    assert!(
        csv.starts_with(
            "iter,value,value_se,var_component,var_norm,eta,smoothed,gap,gap_se,theta,u_loc[z],u_scale[z]\n"
        ),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 1 + 3);
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}
