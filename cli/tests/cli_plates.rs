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

/// Bodies whose guards take every verdict `dsgd check` gives: an affine jump on data, a
/// continuous `max`, an if-statement in a branch of another, a guard that multiplies a row's
/// latent (not affine: LYY18 is blocked), and in an objective a guard on a parameter and
/// data alone (unsafe, parameter-dependent) and one that reads an if-statement (nesting
/// depth 2, unsafe).
const JUDGED: [&str; 3] = [
    "data x = [0.5, -1.25, 2.0, 0.75, -0.3];
let a = sample Normal(0, 5);
let b = sample Normal(0, 5);
for i in 0..len(x) {
  let u = sample Normal(0, 1);
  let m = if a + b * x[i] < 0 { -1 } else { 1 };
  let r = max(0, a - x[i]);
  let s = if u + b * x[i] < 0 { if a < x[i] { 0 } else { 2 } } else { 1 };
  observe x[i] ~ Normal(m + r + s + u, 1);
}
",
    "data x = [0.5, -1.25, 2.0, 0.75, -0.3];
let b = sample Normal(0, 5);
for i in 0..len(x) {
  let u = sample Normal(0, 1);
  observe x[i] ~ Normal(if b * u < 0 { -1 } else { 1 }, 1);
}
",
    "param theta = 0.5;
data x = [0.5, -1.25, 2.0, 0.75, -0.3];
let z = sample Normal(theta, 1);
for i in 0..len(x) {
  maximize -(z - x[i])^2 + (if theta * x[i] < 0 { 0 } else { 1 })
    + (if max(z, x[i]) < 1 { 0 } else { 1 });
}
",
];

/// `dsgd check` reads a plate's guards as its unrolled loop's rows: a plated model and its
/// unrolled twin give the same verdicts (safety, affine and continuous counts, LYY18, the
/// parameter-dependent jumps, nesting depth), in words and in JSON, the plate's guards
/// counted once per row. Catches a report that analyses only the program outside the
/// plates (a plated model once read "affine guards 0 of 0", LYY18 "applicable" whatever its
/// body), a body's guard counted once instead of once per row, and a data column read as a
/// latent (a guard on a parameter and data then looked safe).
#[test]
fn check_judges_a_plates_guards_as_its_unrolled_loop() {
    let dir = tempdir("plates", "judged");
    for (m, source) in JUDGED.iter().enumerate() {
        let file = format!("m{m}.dsgd");
        std::fs::write(dir.join(&file), source).unwrap();
        let run = |plates: &str, as_json: bool| {
            let mut args = vec!["check", file.as_str(), "--plates", plates];
            if as_json {
                args.push("--json");
            }
            let o = dsgd_in(&dir, &args);
            assert!(o.status.success(), "{}", stderr(&o));
            o
        };
        let (plated, unrolled) = (json(&run("on", true)), json(&run("off", true)));
        assert_eq!(plated["plates"].as_array().unwrap().len(), 1, "model {m}");
        assert_eq!(unrolled["plates"].as_array().unwrap().len(), 0, "model {m}");
        let count = |j: &serde_json::Value, key: &str| -> u64 {
            j[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|g| g["rows"].as_u64().unwrap())
                .sum()
        };
        for key in ["unsafe_guards", "param_dependent_guards"] {
            assert_eq!(
                count(&plated, key),
                count(&unrolled, key),
                "model {m}: {key}"
            );
        }
        let total = |j: &serde_json::Value| {
            j["if_statements"].as_u64().unwrap() + j["plate_if_statements"].as_u64().unwrap()
        };
        assert_eq!(total(&plated), total(&unrolled), "model {m}");
        for key in [
            "safe",
            "affine_guards",
            "continuous_guards",
            "lyy18_applicable",
            "nesting_depth",
            "default_eta_decay",
        ] {
            assert_eq!(plated[key], unrolled[key], "model {m}: {key}");
        }
        let reason = |j: &serde_json::Value| j["lyy18_blocked_by"]["reason"].clone();
        assert_eq!(reason(&plated), reason(&unrolled), "model {m}");
        // The same verdicts in words, the locations included.
        let verdicts = |o: std::process::Output| -> Vec<String> {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| {
                    [
                        "  safe",
                        "    m",
                        "  warning",
                        "  affine",
                        "  continuous",
                        "  LYY18",
                    ]
                    .iter()
                    .any(|p| l.starts_with(p))
                })
                .map(str::to_string)
                .collect()
        };
        assert_eq!(
            verdicts(run("on", false)),
            verdicts(run("off", false)),
            "model {m}"
        );
    }
    // What the models exercise: each verdict both ways.
    let j = |m: usize, plates: &str| {
        let file = format!("m{m}.dsgd");
        json(&dsgd_in(
            &dir,
            &["check", &file, "--plates", plates, "--json"],
        ))
    };
    let (first, second, third) = (j(0, "on"), j(1, "on"), j(2, "on"));
    // Four guards a row, `max` among them, every one affine.
    assert_eq!(first["affine_guards"], 20);
    assert_eq!(first["continuous_guards"], 5);
    assert_eq!(first["nesting_depth"], 1);
    assert_eq!(third["nesting_depth"], 2);
    assert_eq!(first["lyy18_applicable"], true);
    assert_eq!(second["lyy18_applicable"], false);
    assert_eq!(third["safe"], false);
    assert_eq!(third["param_dependent_guards"][0]["rows"], 5);
}
