//! `--plates` on the command line: `dsgd check` says which loops became plates and why the
//! others did not, in words and in JSON; every estimator, LYY18 included, runs a plate as its
//! unrolled loop.

mod cli_common;

use cli_common::{dsgd_in, json, stderr, tempdir};

const MODEL: &str = "data n; data x; data y;
let a = sample Normal(0, 5);
let b = sample Normal(0, 5);
for i in 0..n {
  observe y[i] ~ Bernoulli(if a + b * x[i] < 0 { 0.1 } else { 0.9 });
}
let t = 0;
for k in 0..3 { t = t + a; }
factor -t^2;
";

fn setup(name: &str) -> std::path::PathBuf {
    let dir = tempdir("plates", name);
    std::fs::write(dir.join("m.dsgd"), MODEL).unwrap();
    let n = 5;
    let x: Vec<String> = (0..n).map(|i| format!("{}", i as f64 - 2.0)).collect();
    let y: Vec<String> = (0..n).map(|i| format!("{}", i % 2)).collect();
    std::fs::write(
        dir.join("d.json"),
        format!(
            r#"{{"n": {n}, "x": [{}], "y": [{}]}}"#,
            x.join(","),
            y.join(",")
        ),
    )
    .unwrap();
    dir
}

#[test]
fn check_names_plates_and_the_reasons_of_unrolled_loops() {
    let dir = setup("check");
    let args = ["check", "m.dsgd", "--data", "d.json", "--plates", "on"];
    let o = dsgd_in(&dir, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("m.dsgd:4:1: for i over 5 rows"), "{text}");
    assert!(
        text.contains(
            "m.dsgd:8:1: for k over 3 rows: assigns `t`, declared outside the loop (at m.dsgd:8:17)"
        ),
        "{text}"
    );
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let j = json(&dsgd_in(&dir, &json_args));
    assert_eq!(j["plates"][0]["rows"], 5);
    assert_eq!(j["plates"][0]["var"], "i");
    // `x`, and each lifted branch's log-density (through which the body reads `y`).
    assert_eq!(j["plates"][0]["columns"], 3);
    assert_eq!(j["plates"][0]["body_if_statements"], 1);
    // Counted once per row, beside the program's own.
    assert_eq!(j["plate_if_statements"], 5);
    assert!(
        text.contains("in plates (each body's once per row)"),
        "{text}"
    );
    assert_eq!(
        j["unrolled_loops"][0]["reason"],
        "assigns `t`, declared outside the loop"
    );
    // The default policy keeps a 5-row loop unrolled, and says why.
    let j = json(&dsgd_in(
        &dir,
        &["check", "m.dsgd", "--data", "d.json", "--json"],
    ));
    assert_eq!(j["plates"].as_array().unwrap().len(), 0);
    let reason = j["unrolled_loops"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("fewer than 1000"), "{reason}");
}

#[test]
fn runs_run_a_plate_as_its_unrolled_loop() {
    let dir = setup("run");
    // A plate runs, and its run is the unrolled loop's up to the order of additions (with the
    // paper's absolute smoothing: a plate body's guards are not yet rescaled to their spread).
    // LYY18 too, its boundary term taken row by row.
    let run = |plates: &str, estimator: &str| {
        json(&dsgd_in(
            &dir,
            &[
                "run",
                "m.dsgd",
                "--data",
                "d.json",
                "--plates",
                plates,
                "--estimator",
                estimator,
                "--iters",
                "200",
                "--eta-scale",
                "absolute",
                "--json",
            ],
        ))
    };
    for estimator in ["dsgd", "lyy18"] {
        let (on, off) = (run("on", estimator), run("off", estimator));
        let value = |j: &serde_json::Value| j["final_value"].as_f64().unwrap();
        let (a, b) = (value(&on), value(&off));
        assert!(
            (a - b).abs() <= 1e-9 * b.abs().max(1.0),
            "{estimator}: {a} against {b}"
        );
    }
    let o = dsgd_in(
        &dir,
        &["run", "m.dsgd", "--data", "d.json", "--plates", "maybe"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("`maybe` is not `auto`, `on` or `off`"),
        "{}",
        stderr(&o)
    );
}
