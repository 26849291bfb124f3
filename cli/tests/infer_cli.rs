//! `dsgd run` and `dsgd diagnose` through the built binary: results, reproducibility across
//! thread counts, and one clear line with a non-zero exit for every bad option.

mod cli_common;

use std::process::{Command, Output};

use cli_common::json;

fn dsgd(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dsgd"))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap()
}

fn json_without_timing(out: &Output) -> serde_json::Value {
    let mut v = json(out);
    v.as_object_mut()
        .unwrap()
        .remove("seconds")
        .expect("seconds field");
    v
}

#[test]
fn same_seed_same_json_with_one_and_two_threads() {
    let base = [
        "run",
        "example",
        "--json",
        "--iters",
        "300",
        "--batch",
        "70",
        "--log-every",
        "100",
        "--log-samples",
        "300",
    ];
    let one = dsgd(&[&base[..], &["--seed", "5", "--threads", "1"]].concat());
    let two = dsgd(&[&base[..], &["--seed", "5", "--threads", "2"]].concat());
    let (a, b) = (json_without_timing(&one), json_without_timing(&two));
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
    let other = json_without_timing(&dsgd(&[&base[..], &["--seed", "6"]].concat()));
    assert_ne!(a["theta"], other["theta"]);
    for key in [
        "model",
        "estimator",
        "eta",
        "seed",
        "iterations",
        "final_value",
        "theta",
        "trajectory",
    ] {
        assert!(a.get(key).is_some(), "missing {key}");
    }
    assert_eq!(a["trajectory"].as_array().unwrap().len(), 4);
}

/// `DSGD_KERNELS` caps the builds the binary picks (the baseline one, the portable one with
/// FMA, AVX2/FMA), and a run is the same whatever it picks: the smoothed cheating survey's 300
/// if-statements run through the weights routine of every build (the compiled code's where the
/// CPU has AVX-512). A value it does not know is ignored with a warning, not an error.
#[test]
fn same_json_whatever_kernel_set_the_environment_allows() {
    let args = [
        "run",
        "cheating",
        "--json",
        "--iters",
        "200",
        "--batch",
        "40",
        "--log-every",
        "100",
        "--log-samples",
        "100",
        "--seed",
        "3",
    ];
    let with = |cap: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_dsgd"));
        c.args(args)
            .env("RUST_BACKTRACE", "0")
            .env_remove("DSGD_KERNELS");
        if let Some(cap) = cap {
            c.env("DSGD_KERNELS", cap);
        }
        c.output().unwrap()
    };
    let best = json_without_timing(&with(None));
    for cap in ["baseline", "portable", "avx2", "avx512"] {
        let capped = json_without_timing(&with(Some(cap)));
        assert_eq!(
            serde_json::to_string(&best).unwrap(),
            serde_json::to_string(&capped).unwrap(),
            "DSGD_KERNELS={cap}"
        );
    }
    // The cap shows in `dsgd bench`'s report (on x86-64; other targets are portable anyway).
    let bench = |cap: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_dsgd"))
            .args([
                "bench",
                "example",
                "--json",
                "--batch",
                "16",
                "--repeats",
                "1",
            ])
            .args(["--seconds", "0.01"])
            .env("DSGD_KERNELS", cap)
            .output()
            .unwrap();
        json(&out)["kernels"].as_str().unwrap().to_string()
    };
    if cfg!(target_arch = "x86_64") {
        assert_eq!(bench("baseline"), "baseline");
    }
    assert!(["baseline", "portable"].contains(&bench("portable").as_str()));
    assert!(["portable", "avx2"].contains(&bench("avx2").as_str()));
    let odd = with(Some("sse9"));
    assert_eq!(json_without_timing(&odd), best);
    let stderr = String::from_utf8_lossy(&odd.stderr);
    assert!(
        stderr.contains("DSGD_KERNELS") && stderr.contains("ignored"),
        "{stderr}"
    );
}

#[test]
fn example_through_the_cli_reaches_the_stationary_point() {
    // The paper's SGD schedule gamma_k = 0.5 / k; DSGD at eta = 0.02 (see tests/infer_run.rs).
    for (est, target) in [("lyy18", 0.3722), ("dsgd", 0.3722), ("reparam", 0.0)] {
        let out = dsgd(&[
            "run",
            "example",
            "--estimator",
            est,
            "--eta",
            "0.02",
            "--optimizer",
            "sgd",
            "--lr",
            "0.5",
            "--iters",
            "20000",
            "--log-every",
            "20000",
            "--json",
        ]);
        let v = json_without_timing(&out);
        let theta = v["theta"][0].as_f64().unwrap();
        assert!((theta - target).abs() < 0.02, "{est}: {theta}");
        assert_eq!(v["optimizer"], "sgd");
        assert_eq!(v["lr"], 0.5);
    }
}

#[test]
fn run_writes_json_and_csv_and_a_summary() {
    let dir = std::env::temp_dir().join(format!("dsgd-infer-cli-{}", std::process::id()));
    let out = dsgd(&[
        "run",
        "example",
        "--iters",
        "200",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with(
            "example: dsgd (eta 0.1, decay 0.5, relative to each guard's spread), dog (no step \
             size, iterates averaged)"
        ),
        "{text}"
    );
    assert!(
        text.contains("theta") && text.contains("run.json"),
        "{text}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(json["iterations"], 200);
    assert!(
        std::fs::read_to_string(dir.join("trajectory.csv"))
            .unwrap()
            .lines()
            .count()
            == 4
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_options_give_one_clear_line_and_a_non_zero_exit() {
    let cases: [(&[&str], &str); 7] = [
        (&["run", "example", "--eta", "-1"], "--eta"),
        (&["run", "example", "--estimator", "foo"], "--estimator"),
        (&["run", "example", "--iters", "0"], "--iters"),
        (&["run", "example", "--batch", "0"], "--batch"),
        (&["run", "example", "--lr", "0"], "--lr"),
        (&["run", "no/such/model.dsgd"], "no/such/model.dsgd"),
        (&["diagnose", "no/such/model.dsgd"], "no/such/model.dsgd"),
    ];
    for (args, needle) in cases {
        let out = dsgd(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(
            matches!(out.status.code(), Some(1) | Some(2)),
            "{args:?}: {:?}",
            out.status
        );
        let first = err.lines().next().unwrap_or("");
        assert!(
            first.starts_with("error: ") && first.contains(needle),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn diagnose_passes_on_the_example() {
    let out = dsgd(&["diagnose", "example", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["passed"], true);
    let blocks = v["blocks"].as_array().unwrap();
    assert_eq!(blocks.len(), 2);
    for b in blocks {
        assert!(b["worst_relative_error"].as_f64().unwrap() < 1e-6, "{b}");
    }
}

#[test]
fn lyy18_on_a_non_affine_model_names_the_guard_and_its_position() {
    let out = dsgd(&["run", "xornet", "--estimator", "lyy18", "--iters", "10"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: LYY18 does not apply"), "{err}");
    assert!(
        err.contains("if-statement #")
            && err.contains("xornet.dsgd:")
            && err.contains("not affine"),
        "{err}"
    );
}

/// A model file whose log-density is `-inf` for `z < 0`, which its Gaussian guide reaches.
/// A model whose log-density is -inf for half of the guide's mass: an unconstrained latent
/// observed as an exponential variate (the support check of an observed value stays crisp).
fn exponential_model(dir: &std::path::Path) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("expo.dsgd");
    std::fs::write(
        &path,
        "let z = sample Normal(0, 1) init(mean = 1, std = 1);\nobserve z ~ Exponential(1);\n",
    )
    .unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn a_non_finite_run_stops_with_the_iteration_and_keeps_its_trajectory() {
    let dir = std::env::temp_dir().join(format!("dsgd-infer-nan-{}", std::process::id()));
    let model = exponential_model(&dir);
    let out_dir = dir.join("out");
    let out = dsgd(&[
        "run",
        &model,
        "--estimator",
        "reparam",
        "--iters",
        "300",
        "--log-samples",
        "50",
        "--json",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("error: run stopped at iteration 0") && err.contains("-inf"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["stop_reason"], "non_finite");
    assert_eq!(v["trajectory"].as_array().unwrap().len(), 1);
    assert!(out_dir.join("run.json").exists() && out_dir.join("trajectory.csv").exists());

    let out = dsgd(&[
        "run",
        &model,
        "--estimator",
        "reparam",
        "--iters",
        "300",
        "--log-samples",
        "50",
        "--json",
        "--on-nonfinite",
        "continue",
    ]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["stop_reason"], "completed");
    assert_eq!(v["iterations"], 300);
    assert!(v["skipped_steps"].as_u64().unwrap() > 0);
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("warning: "));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_estimator_runs_on_a_paper_model() {
    for est in ["dsgd", "fixed", "reparam", "score", "lyy18"] {
        let out = dsgd(&[
            "run",
            "textmsg",
            "--estimator",
            est,
            "--iters",
            "50",
            "--log-every",
            "25",
            "--log-samples",
            "20",
            "--json",
        ]);
        let v = json_without_timing(&out);
        assert_eq!(v["estimator"], est);
        assert_eq!(v["theta"].as_array().unwrap().len(), 6);
        assert!(v["final_elbo"].as_f64().unwrap() < 0.0);
        assert_eq!(v["final_elbo"], v["final_value"]);
        assert_eq!(v["kind"], "elbo");
    }
}

/// Regression: a model with nothing to optimise (an empty file) panicked on a zero-sized
/// chunk; every command that optimises or differentiates now refuses it with one line.
#[test]
fn empty_model_is_refused_not_a_panic() {
    let dir = std::env::temp_dir().join(format!("dsgd-empty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("empty.dsgd");
    std::fs::write(&path, "// nothing here\n").unwrap();
    let p = path.to_str().unwrap();
    let commands: [&[&str]; 4] = [
        &["run", p, "--iters", "10"],
        &["diagnose", p],
        &["bench", p],
        &["compare", p, "--iters", "10", "--seeds", "1"],
    ];
    for args in commands {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_dsgd"))
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains("nothing to optimise"), "{args:?}: {stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_optimiser_is_dog_unless_a_step_size_is_given() {
    let pick = |extra: &[&str]| {
        let mut args = vec!["run", "--iters", "100", "--json"];
        args.extend_from_slice(extra);
        let out = dsgd(&args);
        assert!(out.status.success(), "{extra:?}");
        let v = json_without_timing(&out);
        (
            v["optimizer"].as_str().unwrap().to_string(),
            v["lr"].as_f64(),
        )
    };
    assert_eq!(pick(&["example"]), ("dog".into(), None));
    // --lr alone means Adam at that step; a model's own step (temperature's) too.
    assert_eq!(
        pick(&["example", "--lr", "0.01"]),
        ("adam".into(), Some(0.01))
    );
    assert_eq!(pick(&["temperature"]), ("adam".into(), Some(0.0015)));
    assert_eq!(
        pick(&["temperature", "--optimizer", "dog"]),
        ("dog".into(), None)
    );
    assert_eq!(
        pick(&["example", "--optimizer", "sgd", "--lr", "0.2"]),
        ("sgd".into(), Some(0.2))
    );
    let out = dsgd(&[
        "run",
        "example",
        "--optimizer",
        "dog",
        "--lr",
        "0.1",
        "--iters",
        "10",
    ]);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--lr does not apply to --optimizer dog"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
