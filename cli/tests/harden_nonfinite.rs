//! A run that stops on a NaN or infinite value names the statement whose log-density term
//! went non-finite: its text, `file:line:col`, the values it was given and the primitive
//! where it started; for a value (found by the measurement) and for a gradient (found by a
//! step), in the report's message and on the command line.

use std::path::Path;
use std::process::Command;

use dsgd::experiment::report::StopReason;
use dsgd::experiment::run::{OnNonFinite, RunConfig, run};
use dsgd::lang::{CompileOptions, compile_source};

fn stop_message(src: &str, on_nonfinite: OnNonFinite) -> String {
    let model = compile_source("t.dsgd", src, Path::new("."), &CompileOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let config = RunConfig {
        iterations: 20,
        log_every: 10,
        log_samples: 200,
        threads: Some(1),
        on_nonfinite,
        ..RunConfig::default()
    };
    let report = run(&model, &config, &mut []).unwrap();
    if on_nonfinite == OnNonFinite::Stop {
        assert_eq!(report.stop_reason, StopReason::NonFinite);
    }
    report.stop_message.expect("a message")
}

#[test]
fn a_nan_observe_is_named_with_its_line_and_arguments() {
    // About half the guide's draws of z are negative: the rate of the Exponential is then
    // negative and its log-density NaN.
    let msg = stop_message(
        "let z = sample Normal(0, 1);\nobserve 1 ~ Exponential(z);\n",
        OnNonFinite::Stop,
    );
    assert!(
        msg.contains("observe 1 ~ Exponential(z) at t.dsgd:2:1"),
        "{msg}"
    );
    assert!(
        msg.contains("gives log-density NaN (value 1, rate -"),
        "{msg}"
    );
    assert!(msg.contains(": log(-"), "{msg}");
}

#[test]
fn a_term_inside_a_branch_is_named_not_the_if_statement() {
    let msg = stop_message(
        "let z = sample Normal(0, 1);\nif z < 0 {\n  observe 1 ~ Normal(0, 1);\n} else {\n  \
         observe 1 ~ Exponential(z - 1);\n}\n",
        OnNonFinite::Stop,
    );
    assert!(
        msg.contains("observe 1 ~ Exponential(z - 1) at t.dsgd:5:3"),
        "{msg}"
    );
}

#[test]
fn a_latent_prior_with_a_negative_scale_names_the_sample() {
    let msg = stop_message(
        "let z = sample Normal(0, 1);\nlet w = sample Normal(0, z);\nobserve 1 ~ Normal(w, 1);\n",
        OnNonFinite::Stop,
    );
    assert!(msg.contains("sample Normal(0, z) at t.dsgd:2:9"), "{msg}");
    assert!(msg.contains("(value "), "{msg}");
    assert!(msg.contains("loc 0, scale -"), "{msg}");
}

#[test]
fn a_nan_gradient_with_a_finite_value_names_the_term_and_the_primitive() {
    // sqrt(0) is 0, but its derivative is infinite, and d(z - z)/dz = 0 makes it NaN: the
    // measurement is finite, the first step's gradient is not.
    let src = "let z = sample Normal(0, 1);\nlet d = z - z;\nobserve 0 ~ Normal(z, 1);\n\
               factor sqrt(d);\n";
    let msg = stop_message(src, OnNonFinite::Stop);
    assert!(
        msg.starts_with("at iteration 0: the gradient with respect to mu[z] is NaN"),
        "{msg}"
    );
    assert!(
        msg.contains(
            "factor sqrt(d) at t.dsgd:4:1 gives log-density 0 whose derivative is not finite"
        ),
        "{msg}"
    );
    assert!(msg.ends_with("sqrt(0) has derivative inf"), "{msg}");
    // Skipping such steps reports the same statement.
    let msg = stop_message(src, OnNonFinite::Continue);
    assert!(msg.contains("factor sqrt(d) at t.dsgd:4:1"), "{msg}");
}

#[test]
fn a_long_statement_is_quoted_cut() {
    let chain = vec!["z"; 5_000].join(" + ");
    let msg = stop_message(
        &format!("let z = sample Normal(0, 1);\nobserve 1 ~ Exponential({chain});\n"),
        OnNonFinite::Stop,
    );
    assert!(msg.contains("observe 1 ~ Exponential(z + z + z"), "{msg}");
    assert!(msg.contains("... at t.dsgd:2:1"), "{msg}");
    assert!(msg.len() < 600, "{} bytes: {msg}", msg.len());
}

#[test]
fn the_command_line_names_the_statement_on_stderr_and_in_the_json() {
    let dir = std::env::temp_dir().join(format!("dsgd-nonfinite-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("m.dsgd"),
        "let z = sample Normal(0, 1);\n\nobserve 1 ~ Exponential(z);\n",
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_dsgd"))
        .args(["run", "m.dsgd", "--iters", "20", "--json"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(o.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("observe 1 ~ Exponential(z) at m.dsgd:3:1"),
        "{stderr}"
    );
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let msg = json["stop_message"].as_str().unwrap();
    assert!(
        msg.contains("observe 1 ~ Exponential(z) at m.dsgd:3:1 gives log-density NaN"),
        "{msg}"
    );
}

/// `--on-nonfinite continue` past a measurement that is not finite counts what it passed,
/// and does not call it a skipped step: censored readings without an `init`, whose first
/// guide is wide enough that among a measurement's 1,000 samples some `sigma` is tiny and
/// `normal_cdf((mu - 10) / sigma)` is 0 in floating point, while no step's 16 samples are.
#[test]
fn continuing_past_a_non_finite_measurement_says_so_and_counts_no_skipped_step() {
    let dir = std::env::temp_dir().join(format!("dsgd-nonfinite-m-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("m.dsgd"),
        "data y;\nlet mu = sample Normal(5, 10);\nlet sigma = sample HalfNormal(5);\n\
         for i in 0..len(y) {\n  if y[i] >= 10 {\n    factor log(normal_cdf((mu - 10) / sigma));\n\
         \x20 } else {\n    observe y[i] ~ Normal(mu, sigma);\n  }\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("y.json"),
        r#"{"y": [7.1, 8.4, 10, 6.2, 9.3, 10, 5.8, 8.9, 10, 7.7, 9.6, 10]}"#,
    )
    .unwrap();
    let args = ["run", "m.dsgd", "--data", "y.json", "--iters", "1000"];
    let o = Command::new(env!("CARGO_BIN_EXE_dsgd"))
        .args(args)
        .args(["--on-nonfinite", "continue", "--json"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["skipped_steps"], 0, "{stderr}");
    let bad = json["trajectory"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["value"].is_number())
        .count();
    assert!(bad > 0, "no non-finite measurement: {stderr}");
    let line = stderr
        .lines()
        .find(|l| l.starts_with("warning: "))
        .unwrap_or_else(|| panic!("no warning: {stderr}"));
    assert!(!line.contains("step(s) skipped"), "{line}");
    assert!(
        line.starts_with(&format!(
            "warning: {bad} measurement(s) not finite (no step was skipped); first at iteration"
        )),
        "{line}"
    );
}
