//! `dsgd reproduce`, `dsgd compare` and `dsgd bench` as a user runs them: the files they
//! write, their JSON, and one clear line with a non-zero exit on bad input.

mod cli_common;

use std::path::Path;
use std::process::{Command, Output};

use cli_common::json;

fn dsgd(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dsgd"))
        .args(args)
        .output()
        .expect("the dsgd binary runs")
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("dsgd-harness-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// No temporary file (hidden name) is left anywhere under `dir`.
fn no_leftovers(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        assert!(!name.starts_with('.'), "left over: {}", path.display());
        if path.is_dir() {
            no_leftovers(&path);
        }
    }
}

fn one_error_line(out: &Output, needle: &str) {
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(needle), "stderr: {err}");
    assert!(!err.contains("panicked"), "stderr: {err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn quick_reproduce_writes_the_whole_report() {
    let dir = temp_dir("reproduce");
    let out = dsgd(&[
        "reproduce",
        "--quick",
        "--seeds",
        "1",
        "--models",
        "textmsg",
        "example",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // stderr is not a terminal here: no progress bar.
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for f in [
        "REPORT.md",
        "summary.json",
        "figures/figure1a.png",
        "figures/figure1a.svg",
        "figures/figure1a.pdf",
        "figures/textmsg.png",
        "figures/textmsg.pdf",
        "figures/textmsg.svg",
        "figures/example.svg",
        "runs/textmsg/dsgd-eta0.1/seed0/run.json",
        "runs/textmsg/fixed-eta0.14/seed0/trajectory.csv",
        "runs/textmsg/lyy18/seed0/run.json",
        "runs/example/score/seed0/run.json",
    ] {
        let p = dir.join(f);
        assert!(
            p.metadata().map(|m| m.len() > 0).unwrap_or(false),
            "missing or empty: {f}"
        );
    }
    no_leftovers(&dir);
    let report = std::fs::read_to_string(dir.join("REPORT.md")).unwrap();
    assert!(report.starts_with("# dsgd reproduction — QUICK MODE"));
    assert!(report.contains("not comparable to the paper"));
    for section in [
        "## Settings",
        "**Wall time**",
        "## Table 1",
        "## Tolerance band check",
        "## Table 2",
        "## The paper's claims",
        "## Where we differ",
        "![Figure 1a](figures/figure1a.png)",
    ] {
        assert!(report.contains(section), "REPORT.md lacks {section}");
    }
    // Quick settings: no band or claim verdicts, each labelled not evaluated.
    assert!(report.contains("**Not evaluated**"), "{report}");
    assert!(!report.contains("cells within"), "{report}");
    assert!(
        !report.contains("- **holds** —") && !report.contains("- **FAILS** —"),
        "{report}"
    );
    assert!(report.contains("- **not evaluated** —"), "{report}");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    // DSGD and Fixed at two etas, DSGD with eta auto, Score, RLOO, Reparam, LYY18.
    assert_eq!(summary["runs"], 2 * (2 * 2 + 5));
    assert_eq!(summary["config"]["quick"], true);
    let run: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("runs/textmsg/dsgd-eta0.1/seed0/run.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(run["iterations"], 1000);
    assert_eq!(run["log_samples"], 200);
    assert_eq!(run["eta"], 0.1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compare_prints_json_and_writes_table_and_figure() {
    let dir = temp_dir("compare");
    let out = dsgd(&[
        "compare",
        "xornet",
        "--etas",
        "0.1",
        "0.2",
        "--seeds",
        "2",
        "--iters",
        "40",
        "--log-every",
        "20",
        "--log-samples",
        "20",
        "--out",
        dir.to_str().unwrap(),
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cells = v["cells"].as_array().unwrap();
    // DSGD and Fixed at two etas, DSGD with eta auto, Score, RLOO, Reparam; no LYY18 on
    // xornet.
    assert_eq!(cells.len(), 8);
    assert!(v["lyy18_note"].as_str().unwrap().contains("not affine"));
    assert_eq!(cells[0]["arm"]["estimator"], "dsgd");
    assert_eq!(cells[0]["final_elbo"].as_array().unwrap().len(), 2);
    for f in [
        "trajectories.svg",
        "trajectories.png",
        "trajectories.pdf",
        "table.md",
        "comparison.json",
        "dsgd-eta0.2/seed1/run.json",
    ] {
        assert!(dir.join(f).is_file(), "missing {f}");
    }
    no_leftovers(&dir);
    let svg = std::fs::read_to_string(dir.join("trajectories.svg")).unwrap();
    assert!(svg.contains("symlog"), "the figure states its y-scale");
    assert!(svg.contains("mean over 2 seeds"));
    assert!(svg.contains("Gradient variance") && svg.contains("Smoothing gap"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bench_reports_samples_per_second_per_estimator() {
    let out = dsgd(&[
        "bench",
        "textmsg",
        "--json",
        "--batch",
        "16",
        "64",
        "--repeats",
        "3",
        "--seconds",
        "0.01",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = v["results"].as_array().unwrap();
    // Six estimators (RLOO beside Score) at two batch sizes.
    assert_eq!(results.len(), 6 * 2);
    for r in results {
        let sps = r["samples_per_second"].as_f64().unwrap();
        let (lo, hi) = (r["min"].as_f64().unwrap(), r["max"].as_f64().unwrap());
        assert!(sps > 0.0 && lo <= sps && sps <= hi, "{r}");
        assert_eq!(r["repeats"].as_array().unwrap().len(), 3);
        // The JAX figure is given for batch 16 only.
        assert_eq!(r["jax_samples_per_second"].is_null(), r["batch"] != 16);
    }
    // The JAX reference figures sit beside the right estimator.
    let jax = |name: &str| {
        results
            .iter()
            .find(|r| r["estimator"] == name && r["batch"] == 16)
            .unwrap()["jax_samples_per_second"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(
        [
            jax("dsgd"),
            jax("fixed"),
            jax("score"),
            jax("reparam"),
            jax("lyy18")
        ],
        [2.9e6, 3.1e6, 3.5e6, 4.3e6, 1.2e6]
    );
    let xornet = dsgd(&[
        "bench",
        "xornet",
        "--json",
        "--batch",
        "16",
        "--repeats",
        "1",
        "--seconds",
        "0.01",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&xornet.stdout).unwrap();
    // Every estimator but LYY18 (xornet's guards are not affine), RLOO beside Score.
    assert_eq!(v["results"].as_array().unwrap().len(), 5);
    assert_eq!(v["threads"], 1);
}

/// The run files are written while the sweep goes on, on a thread of their own: a file that
/// cannot be written still ends the reproduction with one error naming it, and no report.
#[test]
fn an_unwritable_run_directory_is_one_clear_error() {
    let dir = temp_dir("unwritable");
    std::fs::create_dir_all(&dir).unwrap();
    // `runs` is a file, so no run's directory can be made.
    std::fs::write(dir.join("runs"), b"").unwrap();
    let out = dsgd(&[
        "reproduce",
        "--quick",
        "--seeds",
        "1",
        "--models",
        "example",
        "--out",
        dir.to_str().unwrap(),
    ]);
    one_error_line(&out, "runs/example/");
    assert!(!dir.join("REPORT.md").exists());
    assert!(!dir.join("manifest.json").exists());
    no_leftovers(&dir);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_options_give_one_clear_error() {
    let dir = temp_dir("bad");
    let d = dir.to_str().unwrap();
    one_error_line(
        &dsgd(&["reproduce", "--quick", "--models", "nosuch", "--out", d]),
        "no built-in model `nosuch`",
    );
    assert!(!dir.exists(), "nothing is written for a bad model");
    one_error_line(&dsgd(&["reproduce", "--seeds", "0", "--out", d]), "--seeds");
    one_error_line(
        &dsgd(&["compare", "textmsg", "--etas", "-1", "--out", d]),
        "--etas",
    );
    one_error_line(&dsgd(&["compare", "nosuch.dsgd"]), "no model `nosuch.dsgd`");
    one_error_line(&dsgd(&["bench", "textmsg", "--batch", "0"]), "--batch");
    one_error_line(
        &dsgd(&["bench", "textmsg", "--seconds", "nan"]),
        "--seconds",
    );
}

/// `dsgd bench example --json` with one short repeat, and `extra` flags.
fn quick_bench(extra: &[&str]) -> Output {
    let args = [
        "bench",
        "example",
        "--json",
        "--repeats",
        "1",
        "--seconds",
        "0.01",
    ];
    dsgd(&[&args[..], extra].concat())
}

/// A refused command, and its one line on stderr.
fn refused(out: &Output) -> String {
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `--threads` times the batches on that many workers and says so; zero is refused.
#[test]
fn bench_on_two_threads_says_so() {
    let v = json(&quick_bench(&["--batch", "64", "--threads", "2"]));
    assert_eq!(v["threads"], 2);
    assert!(v["results"][0]["samples_per_second"].as_f64().unwrap() > 0.0);
    let stderr = refused(&quick_bench(&["--threads", "0"]));
    assert!(
        stderr.contains("--threads") && stderr.contains("at least 1"),
        "{stderr}"
    );
}

/// `dsgd bench --eta` takes what `dsgd run --eta` takes: any positive number (it was held to
/// the range of `--seconds`, at most 60), and a negative one is named as such.
#[test]
fn bench_eta_is_any_positive_number() {
    let v = json(&quick_bench(&["--batch", "16", "--eta", "100"]));
    assert_eq!(v["results"][0]["eta"], 100.0);
    let stderr = refused(&quick_bench(&["--eta", "-1"]));
    assert!(
        stderr.contains("--eta") && stderr.contains("positive"),
        "{stderr}"
    );
}
