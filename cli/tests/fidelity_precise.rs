//! The precise final value: against a closed form, the same whatever the thread count,
//! its stopping rule (floor, goal, cap), in `run.json` only when asked for, and `dsgd run
//! --precise` on the command line.

use std::path::Path;
use std::process::Command;

use dsgd::estimate::Problem;
use dsgd::experiment::precise::{BLOCK, PreciseConfig, measure};
use dsgd::experiment::run::{RunConfig, run};
use dsgd::lang::{CompileOptions, compile_source};
use dsgd::special::normal_cdf;

/// Example 1.1: `E[-z^2/2 + [z >= 0]]` with `z ~ N(theta, 1)` is `-(theta^2 + 1)/2 + Phi(theta)`.
const EXAMPLE: &str = "
param theta = 1.0;
let z = sample Normal(theta, 1);
maximize -0.5 * z^2 + (if z < 0 { 0 } else { 1 });
";

/// A rare, costly event: `z < -3` (probability 1.35e-3) costs 10,000.
const RARE: &str = "
param theta = 0.0;
let z = sample Normal(theta, 1);
maximize -0.5 * z^2 + (if z < -3 { -10000 } else { 0 });
";

fn problem(source: &str) -> Problem {
    let model = compile_source("t.dsgd", source, Path::new("."), &CompileOptions::default())
        .expect("the test model compiles");
    Problem::new(&model).unwrap()
}

fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

#[test]
fn matches_the_closed_form_within_its_standard_error() {
    let p = problem(EXAMPLE);
    let theta = 1.0;
    let truth = -(theta * theta + 1.0) / 2.0 + normal_cdf(theta);
    let cfg = PreciseConfig {
        rel_se: 1e-2,
        min_samples: 100_000,
        max_samples: 1_000_000,
    };
    let v = measure(&p, &[theta], 0, 10_000, &cfg).unwrap();
    assert!(
        (v.value - truth).abs() <= 4.0 * v.se,
        "{} ± {} vs {truth}",
        v.value,
        v.se
    );
    // The goal (se <= 1 % of |value| = 1.6e-3 with a sample sd of about 1.3) needs about
    // 7e5 samples, more than the floor: the rule drew until it was met.
    assert!(v.se <= cfg.rel_se * v.value.abs(), "{v:?}");
    assert!(
        v.samples > cfg.min_samples && v.samples <= cfg.max_samples,
        "{v:?}"
    );
    assert_eq!(v.samples % BLOCK, 0);
}

#[test]
fn the_thread_count_changes_nothing() {
    let p = problem(RARE);
    let cfg = PreciseConfig {
        rel_se: 1e-3,
        min_samples: 50_000,
        max_samples: 200_000,
    };
    let one = in_pool(1, || measure(&p, &[0.3], 7, 42, &cfg).unwrap());
    let three = in_pool(3, || measure(&p, &[0.3], 7, 42, &cfg).unwrap());
    assert_eq!(one, three);
    // Another seed or iteration draws other samples.
    let other = in_pool(3, || measure(&p, &[0.3], 8, 42, &cfg).unwrap());
    assert_ne!(one.value, other.value);
}

#[test]
fn a_rare_costly_event_is_seen_and_priced() {
    // E = -(theta^2 + 1)/2 - 10000 Phi(-3 - theta): the event is about one sample in 740.
    let p = problem(RARE);
    let truth = -0.5 - 10_000.0 * normal_cdf(-3.0);
    let cfg = PreciseConfig {
        rel_se: 1e-3,
        min_samples: 20_000,
        max_samples: 300_000,
    };
    let v = measure(&p, &[0.0], 1, 0, &cfg).unwrap();
    assert!((v.value - truth).abs() <= 4.0 * v.se, "{v:?} vs {truth}");
    // The sample sd (about 370) keeps the goal (se <= 0.014) out of reach: the cap ends it.
    assert_eq!(v.samples, cfg.max_samples.div_ceil(BLOCK) * BLOCK);
    assert!(v.se > cfg.rel_se * v.value.abs());
    assert!(
        (v.sample_sd() / 367.0 - 1.0).abs() < 0.1,
        "{}",
        v.sample_sd()
    );
}

#[test]
fn an_easy_value_stops_at_the_floor() {
    // Far from the jump the objective is smooth and its se small: the floor is enough.
    let p = problem(EXAMPLE);
    let cfg = PreciseConfig {
        rel_se: 1e-2,
        min_samples: 10_000,
        max_samples: 1_000_000,
    };
    let v = measure(&p, &[6.0], 0, 0, &cfg).unwrap();
    assert_eq!(v.samples, 10_000usize.div_ceil(BLOCK) * BLOCK);
}

#[test]
fn run_reports_it_only_when_asked() {
    let model = compile_source(
        "t.dsgd",
        EXAMPLE,
        Path::new("."),
        &CompileOptions::default(),
    )
    .unwrap();
    let base = RunConfig {
        iterations: 200,
        log_every: 100,
        ..RunConfig::default()
    };
    let plain = run(&model, &base, &mut []).unwrap();
    assert!(plain.final_precise.is_none());
    assert!(!plain.to_json().contains("final_precise"));
    let cfg = PreciseConfig {
        min_samples: 8192,
        max_samples: 16_384,
        ..PreciseConfig::default()
    };
    let with = run(
        &model,
        &RunConfig {
            precise: Some(cfg),
            ..base.clone()
        },
        &mut [],
    )
    .unwrap();
    let p = with.final_precise.expect("asked for");
    // The steps and the 1,000-sample measurements are untouched.
    assert_eq!(with.theta, plain.theta);
    assert_eq!(with.final_elbo, plain.final_elbo);
    let direct = measure(
        &Problem::new(&model).unwrap(),
        &with.theta,
        base.seed,
        with.iterations,
        &cfg,
    )
    .unwrap();
    assert_eq!(p, direct);
    assert!(with.to_json().contains("\"final_precise\""));
    // Bad settings are refused by name.
    let bad = RunConfig {
        precise: Some(PreciseConfig {
            min_samples: 100,
            max_samples: 10,
            ..cfg
        }),
        ..base
    };
    let err = run(&model, &bad, &mut []).unwrap_err().to_string();
    assert!(
        err.contains("precise_max_samples (10) must be at least precise_min_samples"),
        "{err}"
    );
}

#[test]
fn the_command_line_reports_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_dsgd"))
        .args(["run", "example", "--iters", "100", "--json", "--precise"])
        .args([
            "--precise-min-samples",
            "4096",
            "--precise-max-samples",
            "8192",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let p = &json["final_precise"];
    assert!(p["value"].as_f64().unwrap().is_finite());
    assert!(p["se"].as_f64().unwrap() > 0.0);
    let n = p["samples"].as_u64().unwrap();
    assert!((4096..=8192).contains(&n), "{n}");
    // The options belong to --precise.
    let out = Command::new(env!("CARGO_BIN_EXE_dsgd"))
        .args(["run", "example", "--precise-max-samples", "8192"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--precise"));
}
