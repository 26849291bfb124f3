//! The `check` and `models` subcommands, run as a user would run them.

use std::process::{Command, Output};

fn dsgd(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dsgd"))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn check_example_human() {
    let o = dsgd(&["check", "example"]);
    assert!(o.status.success());
    insta::assert_snapshot!("check_example", stdout(&o));
}

#[test]
fn check_xornet_human_groups_unsafe_guards() {
    let o = dsgd(&["check", "xornet"]);
    assert!(o.status.success());
    insta::assert_snapshot!("check_xornet", stdout(&o));
}

#[test]
fn check_json_has_the_design_keys() {
    let o = dsgd(&["check", "xornet", "--json"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    for key in [
        "latents",
        "params",
        "if_statements",
        "nesting_depth",
        "safe",
        "affine_guards",
        "lyy18_applicable",
        "default_eta_decay",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["latents"], 25);
    assert_eq!(v["if_statements"], 28);
    assert_eq!(v["nesting_depth"], 3);
    assert_eq!(v["lyy18_applicable"], false);
    // The blocking guard is named by its place in the source.
    let at = v["lyy18_blocked_by"]["location"].as_str().unwrap();
    assert!(at.starts_with("xornet.dsgd:"), "{at}");
}

#[test]
fn check_a_file_names_unsafe_guards_by_location() {
    let dir = std::env::temp_dir().join(format!("dsgd-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("m.dsgd");
    std::fs::write(
        &file,
        "param t = 0;\nlet z = sample Normal(t, 1);\nmaximize if t < 0 { z } else { 0 };\n",
    )
    .unwrap();
    let o = dsgd(&["check", file.to_str().unwrap(), "--json"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["safe"], false);
    let g = &v["unsafe_guards"][0];
    assert!(
        g["location"].as_str().unwrap().ends_with("m.dsgd:3:10"),
        "{g}"
    );
    assert_eq!(g["reason"], "it does not depend on any latent variable");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn check_reports_compile_errors_with_the_diagnostic() {
    let dir = std::env::temp_dir().join(format!("dsgd-cli-err-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.dsgd");
    std::fs::write(&file, "let z = sample Normal(0, 1);\nfactor zz;\n").unwrap();
    let o = dsgd(&["check", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("unknown name `zz`"), "{err}");
    assert!(err.contains("bad.dsgd:2:8"), "{err}");
    assert!(err.contains("factor zz;"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn check_unknown_model_is_one_clear_line() {
    let o = dsgd(&["check", "no-such-model"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("no model `no-such-model`") && err.contains("temperature"),
        "{err}"
    );
}

#[test]
fn models_lists_every_builtin() {
    let o = dsgd(&["models"]);
    assert!(o.status.success());
    let out = stdout(&o);
    assert_eq!(out.lines().count(), dsgd::models::builtin_names().len());
    for name in dsgd::models::builtin_names() {
        assert!(
            out.lines().any(|l| l.starts_with(name)),
            "{name} missing:\n{out}"
        );
    }
}
