//! In-suite fuzzing of what `lang_fuzz.rs` does not reach (the lowering has
//! `tests/harden_lowering.rs` in the core): the data binding (random CSV files read through
//! the real file-system resolver, and random or mutated JSON given as `--data`) and the
//! command line's option parsing (random flags and values on the real binary). Nothing may
//! panic, hang or print a file that is not data. Run longer with `PROPTEST_CASES=100000 cargo
//! test --release --test harden_fuzz`, or for a time budget with the ignored tests
//! (`DSGD_FUZZ_SECONDS=600 cargo test --release --test harden_fuzz -- --ignored --nocapture
//! json_data_for_a_time_budget`), which print how many cases ran.

use std::path::{Path, PathBuf};
use std::process::Command;

use dsgd::lang::{CompileOptions, DataSet, FsResolver, compile_file, compile_with_data};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

// The time-budget runner the core's fuzz tests use too.
#[path = "../../tests/fuzz_budget/mod.rs"]
mod fuzz_budget;
use fuzz_budget::fuzz_for_a_time_budget;

fn opts() -> CompileOptions {
    CompileOptions {
        node_limit: 20_000,
        step_limit: 200_000,
        max_call_depth: 100,
        ..CompileOptions::default()
    }
}

/// The binary under test: `DSGD_BIN` if set (a copy, so that a long fuzzing run is not
/// disturbed by a rebuild), else the one cargo built.
fn dsgd_binary() -> PathBuf {
    std::env::var_os("DSGD_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_dsgd")), PathBuf::from)
}

/// A directory for one fuzz case's files.
fn case_dir() -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "dsgd-fuzz-data-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Random CSV-ish bytes: headers, numbers, junk, quotes, long fields, invalid UTF-8.
fn csv_bytes() -> impl Strategy<Value = Vec<u8>> {
    let cell = prop_oneof![
        Just("x".to_string()),
        Just("y".to_string()),
        "-?[0-9]{1,4}(\\.[0-9]{1,3})?(e-?[0-9])?",
        Just("NaN".to_string()),
        Just("inf".to_string()),
        Just("".to_string()),
        Just("\"1,5\"".to_string()),
        Just("\"".to_string()),
        "[ -~]{0,60}",
        Just("SECRET-LINE-THAT-MUST-NOT-BE-ECHOED-0123456789".to_string()),
    ];
    let row = prop::collection::vec(cell, 0..4).prop_map(|c| c.join(","));
    (prop::collection::vec(row, 0..8), any::<bool>(), any::<u8>()).prop_map(|(rows, junk, b)| {
        let mut bytes = rows.join("\n").into_bytes();
        if junk {
            bytes.push(b | 0x80);
        }
        bytes
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Random data files through the real resolver: a model or an error, never a panic, and
    /// never the text of a long line back in the message.
    #[test]
    fn data_binding_never_panics_or_echoes(bytes in csv_bytes(), col in "[xyz]") {
        let dir = case_dir();
        std::fs::write(dir.join("d.csv"), &bytes).unwrap();
        let model = dir.join("m.dsgd");
        std::fs::write(
            &model,
            format!("data xs = csv(\"d.csv\", \"{col}\");\nlet z = sample Normal(0, 1);\nobserve len(xs) ~ Normal(z, 1);"),
        )
        .unwrap();
        let r = compile_file(&model, &opts());
        let _ = std::fs::remove_dir_all(&dir);
        if let Err(e) = r {
            let text = e.to_string();
            prop_assert!(text.starts_with("error: "), "{}", text);
            prop_assert!(!text.contains("SECRET-LINE"), "{}", text);
        }
    }
}

/// Numbers as JSON writes them and as it does not: huge, tiny, negative zero, integers past
/// 2^64, and the words some writers use for NaN and the infinities.
fn json_number() -> BoxedStrategy<String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|x| format!("{x:e}")),
        (-3.0f64..3.0).prop_map(|x| x.to_string()),
        prop::sample::select(vec![
            "0",
            "-0",
            "1e400",
            "-1e400",
            "1e-400",
            "18446744073709551616",
            "123456789012345678901234567890",
            "1E5",
            "0x10",
            "01",
            "+1",
            ".5",
            "5.",
            "NaN",
            "-Infinity",
            "Infinity",
            "nan",
            "-inf",
            "1e",
            "--1",
        ])
        .prop_map(str::to_string),
    ]
    .boxed()
}

/// Keys: the model's two names (often twice in one object), others, unicode and escapes.
fn json_key() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "\"xs\"",
        "\"xs\"",
        "\"n\"",
        "\"y\"",
        "\"\"",
        "\"x\\u0073\"",
        "\"é\"",
        "\"\\u0000\"",
        "\"😀\"",
        "\"n \"",
    ])
    .prop_map(str::to_string)
}

/// A random JSON value (not always valid JSON): numbers, strings, literals, arrays and
/// objects.
fn json_value() -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        4 => json_number(),
        1 => prop::sample::select(vec![
            "\"NaN\"", "\"1\"", "\"\"", "\"\\u00e9\\ud83d\\ude00\"", "\"\\ud800\"", "\"ÿ😀\"",
            "true", "false", "null", "\"\\\"", "'1'",
        ])
        .prop_map(str::to_string),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            4 => prop::collection::vec(inner.clone(), 0..6).prop_map(|v| format!("[{}]", v.join(", "))),
            1 => prop::collection::vec((json_key(), inner.clone()), 0..4).prop_map(|m| {
                let members: Vec<String> = m.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                format!("{{{}}}", members.join(", "))
            }),
        ]
    })
    .boxed()
}

/// A member's value: a random one, a long array (past the fuzz limits' node count) or deep
/// nesting (past any parser's recursion limit) of one.
fn json_member() -> BoxedStrategy<String> {
    prop_oneof![
        4 => json_value(),
        1 => (json_value(), 0usize..30_000).prop_map(|(v, n)| format!("[{}]", vec![v; n].join(","))),
        1 => (json_value(), 1usize..3_000, any::<bool>()).prop_map(|(v, d, obj)| {
            if obj {
                format!("{}{v}{}", "{\"xs\": ".repeat(d), "}".repeat(d))
            } else {
                format!("{}{v}{}", "[".repeat(d), "]".repeat(d))
            }
        }),
    ]
    .boxed()
}

/// A data file: an object of members (or something else), then perhaps damaged: cut short,
/// a byte changed, invalid UTF-8 inserted.
fn json_data() -> impl Strategy<Value = Vec<u8>> {
    let object = prop::collection::vec((json_key(), json_member()), 0..4).prop_map(|m| {
        let members: Vec<String> = m.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        format!("{{{}}}", members.join(", "))
    });
    let text = prop_oneof![6 => object, 1 => json_value()];
    (text, 0u8..6, any::<prop::sample::Index>(), any::<u8>()).prop_map(
        |(text, damage, at, byte)| {
            let mut bytes = text.into_bytes();
            let i = at.index(bytes.len() + 1);
            match damage {
                0 => bytes.truncate(i),
                1 if i < bytes.len() => bytes[i] = byte,
                2 => bytes.insert(i, byte | 0x80),
                _ => {}
            }
            bytes
        },
    )
}

/// The model the data binds to: `xs` must be an array of numbers and `n` a number.
const DATA_MODEL: &str = "data xs;\ndata n = 2;\nlet z = sample Normal(0, 1);\n\
    for i in 0..len(xs) { observe xs[i] ~ Normal(z, 1); }\nobserve n ~ Normal(z, 1);\n";

/// One JSON data file through the library (parse, bind, compile) and, for one case in 16,
/// through `dsgd check --data` too: a model or an error naming the file, never a panic, and
/// never a message that echoes a long stretch of the input.
fn check_json_case(bytes: &[u8]) -> Result<(), TestCaseError> {
    let text = String::from_utf8_lossy(bytes);
    match DataSet::from_json_str(&text, "d.json") {
        Ok(data) => {
            let resolver = FsResolver::new(Path::new("."), &opts());
            match compile_with_data("m.dsgd", DATA_MODEL, &resolver, &data, &opts()) {
                Ok(m) => prop_assert_eq!(m.latents.len(), 1),
                Err(e) => {
                    let msg = e.to_string();
                    prop_assert!(msg.starts_with("error: "), "{}", msg);
                    prop_assert!(msg.len() < 2_000, "{} bytes: {}", msg.len(), &msg[..300]);
                }
            }
        }
        Err(e) => {
            prop_assert!(e.0.starts_with("d.json"), "{}", e.0);
            prop_assert!(e.0.len() < 1_000, "{} bytes: {}", e.0.len(), &e.0[..300]);
        }
    }
    if bytes.len().is_multiple_of(16) {
        let dir = case_dir();
        std::fs::write(dir.join("d.json"), bytes).unwrap();
        std::fs::write(dir.join("m.dsgd"), DATA_MODEL).unwrap();
        let o = Command::new(dsgd_binary())
            .args([
                "check",
                "m.dsgd",
                "--data",
                "d.json",
                "--max-nodes",
                "20000",
            ])
            .current_dir(&dir)
            .env("RUST_BACKTRACE", "0")
            .output()
            .expect("runs");
        let _ = std::fs::remove_dir_all(&dir);
        let stderr = String::from_utf8_lossy(&o.stderr);
        prop_assert!(
            matches!(o.status.code(), Some(0..=2)),
            "{:?}\n{}",
            o.status,
            stderr
        );
        prop_assert!(!stderr.contains("panicked"), "{}", stderr);
        prop_assert!(stderr.len() < 4_000, "{} bytes of stderr", stderr.len());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Random and damaged JSON `--data`: bound or refused with the file's name, never a
    /// panic or an echo of the input.
    #[test]
    fn json_data_binding_never_panics(bytes in json_data()) {
        check_json_case(&bytes)?;
    }
}

/// Flags of the subcommands that take a model, with values that probe the edges.
const FLAGS: &[&str] = &[
    "--batch",
    "--log-samples",
    "--threads",
    "--iters",
    "--eta",
    "--eta-decay",
    "--lr",
    "--sgd-power",
    "--seed",
    "--log-every",
    "--estimator",
    "--optimizer",
    "--max-nodes",
    "--max-steps",
    "--max-data-bytes",
    "--seeds",
    "--repeats",
    "--seconds",
    "--etas",
    "--points",
    "--tolerance",
    "--on-nonfinite",
    "--bogus",
];

const VALUES: &[&str] = &[
    "0",
    "1",
    "2",
    "-1",
    "3",
    "18446744073709551615",
    "18446744073709551616",
    "1000000000000",
    "1e300",
    "NaN",
    "inf",
    "-inf",
    "0.1",
    "abc",
    "",
    "dsgd",
    "score",
    "sgd",
    "continue",
    "--json",
];

/// A subcommand and a few (flag, value) pairs.
fn cli_case() -> impl Strategy<Value = (&'static str, Vec<(&'static str, &'static str)>)> {
    (
        prop::sample::select(vec!["run", "check", "diagnose", "bench", "compare"]),
        prop::collection::vec(
            (prop::sample::select(FLAGS), prop::sample::select(VALUES)),
            0..4,
        ),
    )
}

/// Random flags on the real binary: it ends with status 0, 1 or 2 and never panics.
/// Iterations and repeats stay small so that an accepted command finishes quickly.
fn check_cli_case(sub: &str, flags: &[(&str, &str)]) -> Result<(), TestCaseError> {
    let mut args: Vec<String> = vec![sub.to_string(), "example".to_string()];
    for (f, v) in flags {
        args.push(f.to_string());
        args.push(v.to_string());
    }
    // Keep accepted work small: later flags override nothing, so these are appended
    // only where they are not fuzzed.
    let given = |f: &str| flags.iter().any(|(g, _)| *g == f);
    let cheap: &[(&str, &str, &[&str])] = &[
        ("--iters", "3", &["run", "compare"]),
        ("--log-every", "1", &["run", "compare"]),
        ("--seeds", "1", &["compare"]),
        ("--etas", "0.1", &["compare"]),
        ("--seconds", "0.001", &["bench"]),
        ("--repeats", "1", &["bench"]),
        ("--batch", "16", &["bench"]),
        ("--log-samples", "2", &["run", "compare"]),
        ("--points", "1", &["diagnose"]),
    ];
    for (f, v, subs) in cheap {
        if subs.contains(&sub) && !given(f) {
            args.push(f.to_string());
            args.push(v.to_string());
        }
    }
    // Values that make accepted work large are clamped to what the test can afford.
    for (f, v) in flags {
        let big = v.parse::<f64>().is_ok_and(|x| x > 3.0);
        let costly = [
            "--iters",
            "--log-samples",
            "--batch",
            "--seeds",
            "--repeats",
            "--seconds",
            "--points",
            "--etas",
        ];
        // Refused by the memory estimate or a range: cheap to test. Not so `--iters` or
        // `--etas`, where a huge value is a legitimately long run.
        let refused =
            v.starts_with("18446744073709551615") || *v == "1000000000000" || *v == "1e300";
        let long_if_accepted = ["--iters", "--etas", "--log-every"].contains(f);
        if big && costly.contains(f) && (!refused || long_if_accepted) {
            return Ok(());
        }
    }
    let out_dir = case_dir();
    if sub == "compare" {
        args.push("--out".to_string());
        args.push(out_dir.display().to_string());
    }
    let o = Command::new(dsgd_binary())
        .args(&args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("runs");
    let _ = std::fs::remove_dir_all(&out_dir);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let code = o.status.code();
    prop_assert!(
        matches!(code, Some(0..=2)),
        "{:?} {:?}\n{}",
        args,
        code,
        stderr
    );
    prop_assert!(!stderr.contains("panicked"), "{:?}\n{}", args, stderr);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn option_parsing_never_panics((sub, flags) in cli_case()) {
        check_cli_case(sub, &flags)?;
    }
}

#[test]
fn data_fuzz_cases_leave_no_directories_behind() {
    // The data fuzzer removes each case's directory; this checks the helper it relies on.
    let d = case_dir();
    assert!(d.is_dir());
    std::fs::remove_dir_all(&d).unwrap();
    assert!(!Path::new(&d).exists());
}

#[test]
#[ignore = "runs for DSGD_FUZZ_SECONDS (default 600)"]
fn json_data_for_a_time_budget() {
    fuzz_for_a_time_budget("json data", json_data(), |bytes| check_json_case(&bytes));
}

#[test]
#[ignore = "runs for DSGD_FUZZ_SECONDS (default 600)"]
fn cli_options_for_a_time_budget() {
    fuzz_for_a_time_budget("cli options", cli_case(), |(sub, flags)| {
        check_cli_case(sub, &flags)
    });
}
