//! Hardening of the command line: flags that used to panic, abort or grow without bound,
//! messages that misled, and output directories shared with someone else.

use std::path::{Path, PathBuf};
mod cli_common;

use cli_common::{dsgd_in, stderr};
use std::process::Output;

fn dsgd(args: &[&str]) -> Output {
    dsgd_in(Path::new("."), args)
}

fn tempdir(name: &str) -> PathBuf {
    cli_common::tempdir("harden-cli", name)
}

/// A usage error: exit status 2, no panic, and the message contains `want`.
fn refused(args: &[&str], want: &str) {
    let o = dsgd(args);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}\n{e}");
    assert!(!e.contains("panicked"), "{args:?}\n{e}");
    assert!(e.contains(want), "{args:?}: wanted `{want}` in\n{e}");
}

#[test]
fn counts_that_cannot_fit_in_memory_are_refused_before_allocating() {
    let max = "18446744073709551615";
    refused(&["run", "example", "--batch", max], "would need about");
    refused(
        &["run", "example", "--log-samples", max],
        "would need about",
    );
    refused(
        &["run", "example", "--log-samples", "1000000000000"],
        "--log-samples 1000000000000",
    );
    refused(
        &["run", "example", "--batch", "1000000000000"],
        "more than the",
    );
    refused(
        &["compare", "example", "--log-samples", max],
        "would need about",
    );
    refused(&["compare", "example", "--seeds", max], "would need about");
    refused(
        &["bench", "example", "--batch", "1000000000000"],
        "--batch 1000000000000",
    );
    refused(
        &["bench", "example", "--repeats", max],
        "at most 1000 repeats",
    );
    refused(
        &[
            "reproduce",
            "--quick",
            "--seeds",
            "100000000000",
            "--out",
            "/nonexistent/x",
        ],
        "--seeds 100000000000 would need about",
    );
    // Not a number at all, or one beyond 64 bits.
    refused(
        &["run", "example", "--batch", "18446744073709551616"],
        "not a whole number",
    );
}

#[test]
fn a_trajectory_that_cannot_fit_is_refused_up_front_naming_its_flags() {
    refused(
        &[
            "run",
            "example",
            "--iters",
            "18446744073709551615",
            "--log-every",
            "1",
        ],
        "--iters 18446744073709551615 with --log-every 1 would need about",
    );
}

#[test]
fn an_absurd_eta_decay_is_refused() {
    refused(
        &["run", "example", "--eta-decay", "1e308"],
        "and at most 10",
    );
    refused(
        &["compare", "example", "--eta-decay", "1e308"],
        "and at most 10",
    );
    // Within the cap, but eta_0 = 1e300 * 4000^10 overflows.
    refused(
        &["run", "example", "--eta", "1e300", "--eta-decay", "10"],
        "--eta-decay 10 with eta 1e300 makes eta_k overflow",
    );
}

#[test]
fn threads_are_capped() {
    refused(
        &["run", "example", "--threads", "10000"],
        "never more than 256",
    );
    refused(&["reproduce", "--threads", "10000"], "at most");
    refused(&["run", "example", "--threads", "0"], "at least 1");
}

#[test]
fn an_unknown_reproduce_model_is_a_usage_error() {
    refused(
        &[
            "reproduce",
            "--quick",
            "--models",
            "nosuch",
            "--out",
            "/nonexistent/x",
        ],
        "no built-in model `nosuch`",
    );
}

#[test]
fn flags_that_do_not_apply_are_reported() {
    let o = dsgd(&[
        "run",
        "example",
        "--estimator",
        "score",
        "--eta",
        "0.3",
        "--eta-decay",
        "0.5",
        "--optimizer",
        "adam",
        "--sgd-power",
        "2",
        "--iters",
        "5",
        "--log-every",
        "5",
        "--log-samples",
        "10",
    ]);
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    assert!(
        e.contains("warning: --eta does not apply to --estimator score"),
        "{e}"
    );
    assert!(
        e.contains("warning: --eta-decay does not apply to --estimator score"),
        "{e}"
    );
    assert!(
        e.contains("warning: --sgd-power does not apply to --optimizer adam"),
        "{e}"
    );
    // Flags that apply are not warned about (other warnings, such as the run's note that the
    // smoothed objective still differs from the original, may remain).
    for eta in ["0.3", "auto"] {
        let o = dsgd(&[
            "run",
            "example",
            "--eta",
            eta,
            "--iters",
            "5",
            "--log-every",
            "5",
            "--log-samples",
            "10",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(!stderr(&o).contains("does not apply"), "{}", stderr(&o));
    }
}

#[test]
fn a_local_file_named_like_a_built_in_says_which_is_used() {
    let dir = tempdir("shadow");
    std::fs::write(dir.join("walk"), "param t = 1;\nmaximize -t^2;").unwrap();
    let o = dsgd_in(&dir, &["check", "walk"]);
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    assert!(
        e.contains("`walk` is a file here and also a built-in model; using the file"),
        "{e}"
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("latents        0"), "{out}");
    // `builtin:` names the built-in.
    let o = dsgd_in(&dir, &["check", "builtin:walk"]);
    assert!(o.status.success());
    assert!(!stderr(&o).contains("warning"));
}

#[test]
fn a_nan_initial_mean_is_blamed_on_the_mean() {
    let dir = tempdir("nanmean");
    let m = dir.join("m.dsgd");
    std::fs::write(
        &m,
        "let z = sample Normal(0, 1) init(mean = log(-1), std = 1);\nobserve 1 ~ Normal(z, 1);",
    )
    .unwrap();
    let o = dsgd(&["run", m.to_str().unwrap(), "--iters", "2"]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    // Blamed on the mean (at its place in the source), not on the std.
    assert!(e.contains("initial mean NaN"), "{e}");
    assert!(!e.contains("initial std"), "{e}");
}

#[test]
fn data_outside_the_model_directory_needs_a_flag() {
    let dir = tempdir("outside");
    let models = dir.join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::write(dir.join("d.csv"), "x\n1\n2\n").unwrap();
    std::fs::write(
        models.join("m.dsgd"),
        "data xs = csv(\"../d.csv\", \"x\");\nlet z = sample Normal(mean(xs), 1);\nobserve 1 ~ Normal(z, 1);",
    )
    .unwrap();
    let m = models.join("m.dsgd");
    let m = m.to_str().unwrap();
    let o = dsgd(&["check", m]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("--allow-data-outside"),
        "{}",
        stderr(&o)
    );
    assert!(dsgd(&["check", m, "--allow-data-outside"]).status.success());
    let data_dir = dir.display().to_string();
    assert!(
        dsgd(&["check", m, "--data-dir", &data_dir])
            .status
            .success()
    );
}

#[test]
fn limits_are_raised_from_the_command_line() {
    let dir = tempdir("limits");
    let m = dir.join("m.dsgd");
    std::fs::write(
        &m,
        "let z = sample Normal(0, 1);\nfor i in 0..3000000 { }\nobserve z ~ Normal(0, 1);",
    )
    .unwrap();
    let m = m.to_str().unwrap();
    // Unrolled (kept as a plate, the loop is counted far more cheaply).
    let o = dsgd(&["check", m, "--plates", "off"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--max-steps"), "{}", stderr(&o));
    let o = dsgd(&["check", m, "--max-steps", "1000"]);
    assert!(
        stderr(&o).contains("more than 1000 steps"),
        "{}",
        stderr(&o)
    );
    let o = dsgd(&[
        "check",
        m,
        "--plates",
        "off",
        "--max-steps",
        "8000000",
        "--max-nodes",
        "4000000",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn reproduce_refuses_a_file_as_out_before_any_work() {
    let dir = tempdir("outfile");
    let file = dir.join("f");
    std::fs::write(&file, "x").unwrap();
    let o = dsgd(&[
        "reproduce",
        "--quick",
        "--models",
        "example",
        "--out",
        file.to_str().unwrap(),
    ]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("exists and is not a directory"), "{e}");
    assert!(!e.contains("os error 17): File exists"), "{e}");
}

#[test]
fn reproduce_refuses_a_directory_another_run_holds() {
    let dir = tempdir("locked");
    // A live process (this test) holds the lock.
    std::fs::write(
        dir.join(".dsgd-reproduce.lock"),
        format!("{}\n", std::process::id()),
    )
    .unwrap();
    let o = dsgd(&[
        "reproduce",
        "--quick",
        "--models",
        "example",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("another `dsgd reproduce`"), "{e}");
    assert!(!dir.join("REPORT.md").exists());
}

#[test]
fn atomic_writes_never_follow_a_planted_symlink() {
    // A symlink planted under every name a writer could pick is not followed: the temporary
    // file is created new under an unpredictable name.
    let dir = tempdir("symlink");
    let victim = dir.join("victim");
    std::fs::write(&victim, "keep").unwrap();
    #[cfg(unix)]
    for pid in 0..64 {
        let _ = std::os::unix::fs::symlink(&victim, dir.join(format!(".run.json.tmp{pid}")));
    }
    let target = dir.join("run.json");
    dsgd::experiment::atomic::write_atomic(&target, b"{}").unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "{}");
    // No temporary file is left behind.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(dsgd::experiment::atomic::TEMP_MARKER))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn leftover_temporary_files_are_removed() {
    let dir = tempdir("leftover");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join(".a.png.tmp-0123.png"), "x").unwrap();
    std::fs::write(dir.join("sub/.run.json.tmp-ff"), "x").unwrap();
    std::fs::write(dir.join("keep.json"), "x").unwrap();
    let n = dsgd::experiment::atomic::remove_leftover_temps(&dir).unwrap();
    assert_eq!(n, 2);
    assert!(dir.join("keep.json").exists());
}

#[test]
fn a_reproduction_writes_a_manifest_of_its_files_and_releases_its_lock() {
    use dsgd::experiment::outdir::{LOCK_FILE, MANIFEST_FILE, OutDir};
    let dir = tempdir("manifest");
    std::fs::write(dir.join("stale.json"), "from an earlier sweep").unwrap();
    {
        let mut out = OutDir::acquire(&dir).unwrap();
        assert!(dir.join(LOCK_FILE).exists());
        // A second writer is refused while the first holds the directory.
        let second = OutDir::acquire(&dir).unwrap_err().to_string();
        assert!(second.contains("another `dsgd reproduce`"), "{second}");
        let f = dir.join("runs/a/run.json");
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, "{}").unwrap();
        out.wrote([f]);
        out.write_manifest().unwrap();
    }
    assert!(!dir.join(LOCK_FILE).exists());
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(MANIFEST_FILE)).unwrap()).unwrap();
    let files: Vec<&str> = manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(files, ["runs/a/run.json"]);
    // A lock whose process has ended is taken over.
    std::fs::write(dir.join(LOCK_FILE), "4294967295\n").unwrap();
    if Path::new("/proc/self").exists() {
        OutDir::acquire(&dir).unwrap();
    }
}

#[test]
fn a_failed_figure_write_names_the_file() {
    let dir = tempdir("plotfail");
    let missing = dir.join("no/such/dir/fig");
    let plot = dsgd_report::figure1a::figure1a_plot();
    let err = dsgd_report::plot::write_svg_and_png(&plot, &missing, 300, 200).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("fig.svg"), "{text}");
}

#[test]
fn run_time_data_goes_with_the_limit_flags() {
    let dir = tempdir("bind");
    std::fs::write(
        dir.join("m.dsgd"),
        "data y = [1, 2];\nparam t = 1;\nmaximize -(t - y[1])^2;",
    )
    .unwrap();
    std::fs::write(dir.join("d.json"), r#"{"y": [3, 4, 5]}"#).unwrap();
    let ok = dsgd_in(
        &dir,
        &["check", "m.dsgd", "--data", "d.json", "--max-nodes", "1000"],
    );
    assert!(ok.status.success(), "{}", stderr(&ok));
    let big = dsgd_in(
        &dir,
        &[
            "check",
            "m.dsgd",
            "--data",
            "d.json",
            "--max-data-bytes",
            "4",
        ],
    );
    assert!(!big.status.success());
    assert!(
        stderr(&big).contains("--max-data-bytes"),
        "{}",
        stderr(&big)
    );
}

/// `compare --out` is checked before its runs, as `run --out` is: a regular file, a path
/// through a regular file and a directory that takes no file are refused at once (far more
/// iterations than a test could wait for: refused before the first), and nothing is written.
#[test]
fn compare_refuses_an_unusable_out_before_its_runs() {
    let dir = tempdir("compare-out");
    let file = dir.join("taken");
    std::fs::write(&file, "x").unwrap();
    let through = file.join("sub");
    let mut outs = vec![
        (file.clone(), "is not a directory"),
        (through, "is not a directory"),
    ];
    // `/proc` takes no new file, even for root.
    if cfg!(target_os = "linux") && Path::new("/proc/self").exists() {
        outs.push((PathBuf::from("/proc/dsgd-out"), "cannot write into `/proc`"));
    }
    for (out, want) in outs {
        let o = dsgd(&[
            "compare",
            "example",
            "--iters",
            "1000000000",
            "--seeds",
            "1",
            "--etas",
            "0.1",
            "--out",
            out.to_str().unwrap(),
        ]);
        let e = stderr(&o);
        assert!(!o.status.success(), "{out:?}: {e}");
        assert!(e.contains(want), "{out:?}: wanted `{want}` in\n{e}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
}

/// `run --out` below a regular file is refused before the run too (the path's existing part
/// is checked, not only its last name).
#[test]
fn run_refuses_an_out_below_a_file_before_the_run() {
    let dir = tempdir("run-out-below");
    let file = dir.join("taken");
    std::fs::write(&file, "x").unwrap();
    let out = file.join("sub");
    let o = dsgd(&[
        "run",
        "example",
        "--iters",
        "1000000000",
        "--out",
        out.to_str().unwrap(),
    ]);
    let e = stderr(&o);
    assert!(!o.status.success(), "{e}");
    assert!(e.contains("is not a directory"), "{e}");
}
