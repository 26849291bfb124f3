//! Hardening of the compiler: inputs that used to crash it, run unbounded or read what they
//! should not. Each test is the regression test of one such input.

use std::path::Path;

use dsgd::lang::{CompileOptions, compile_file, compile_source, source_text};

fn compile(src: &str) -> Result<dsgd::ir::Model, String> {
    compile_source("t.dsgd", src, Path::new("."), &CompileOptions::default())
        .map_err(|e| e.to_string())
}

/// A flat left-associative chain of `n` terms of `term`, joined by `op`.
fn chain(term: &str, op: &str, n: usize) -> String {
    vec![term; n].join(op)
}

#[test]
fn a_million_term_sum_compiles_without_overflowing_the_stack() {
    // The parser makes `z + z + ... + z` a million boxes deep; lowering and dropping it used
    // to recurse once per term and overflow the stack (exit 134).
    let src = format!(
        "let z = sample Normal(0, 1);\nobserve {} ~ Normal(0, 1);",
        chain("1", " + ", 1_000_000)
    );
    // Folding makes a constant per partial sum, and each term is two steps: both limits are
    // raised.
    let opts = CompileOptions {
        node_limit: 3_000_000,
        step_limit: 5_000_000,
        ..CompileOptions::default()
    };
    let model =
        compile_source("t.dsgd", &src, Path::new("."), &opts).unwrap_or_else(|e| panic!("{e}"));
    // Dead-code elimination leaves the final sum only.
    assert!(
        model.program.node_count() < 50,
        "{}",
        model.program.node_count()
    );
}

#[test]
fn a_long_chain_over_the_node_limit_is_refused_with_an_error() {
    let src = format!(
        "let z = sample Normal(0, 1);\nobserve {} ~ Normal(0, 1);",
        chain("z", " + ", 1_100_000)
    );
    let err = compile(&src).unwrap_err();
    assert!(err.contains("more than 1000000 nodes"), "{err}");
    assert!(err.contains("--max-nodes"), "{err}");
}

#[test]
fn two_megabyte_chains_of_constants_over_the_node_limit_are_refused() {
    // The 2 MB sources of the hardening report: `1+1+...` folds to a new constant per partial
    // sum, `z+1+1+...` to a new addition per term; both pass the node limit and must be
    // refused naming it and its flag (they once took 7 s and 514 MB to get there).
    for src in [
        format!(
            "let z = sample Normal(0, 1);\nobserve {} ~ Normal(0, 1);",
            chain("1", "+", 1_000_001)
        ),
        format!(
            "let z = sample Normal(0, 1);\nobserve z+{} ~ Normal(0, 1);",
            chain("1", "+", 1_000_000)
        ),
    ] {
        assert!(src.len() > 2_000_000);
        let err = compile(&src).unwrap_err();
        assert!(err.contains("more than 1000000 nodes"), "{err}");
        assert!(err.contains("--max-nodes"), "{err}");
    }
}

#[test]
fn long_chains_of_conditions_and_indices_do_not_overflow_the_stack() {
    let conds = chain("z < 1", " && ", 200_000);
    let src = format!("let z = sample Normal(0, 1);\nif {conds} {{ factor z; }}");
    compile(&src).unwrap_or_else(|e| panic!("{e}"));
    let ors = chain("z < 1", " || ", 200_000);
    let src = format!("let z = sample Normal(0, 1);\nif {ors} {{ factor z; }}");
    compile(&src).unwrap_or_else(|e| panic!("{e}"));
    // Indexing 200,000 times into a number nested 1 deep fails at the second index.
    let src = format!("let a = [1];\nfactor a{};", "[0]".repeat(200_000));
    let err = compile(&src).unwrap_err();
    assert!(err.contains("cannot index into a number"), "{err}");
}

#[test]
fn a_chain_broken_by_a_syntax_error_is_dropped_without_overflow() {
    // The parser returns the error with a million-deep partial tree in hand.
    let src = format!("factor {} + ;", chain("1", " + ", 1_000_000));
    let err = compile(&src).unwrap_err();
    assert!(err.contains("unexpected `;`"), "{err}");
}

#[test]
fn loops_over_the_step_limit_are_refused_before_they_start() {
    for body in ["", "observe z ~ Normal(0, 1);"] {
        let src = format!(
            "let z = sample Normal(0, 1);\nfor i in 0..1000000000 {{ {body} }}\nobserve z ~ Normal(0, 1);"
        );
        let err = compile(&src).unwrap_err();
        // The step limit applies (an empty loop creates no node), named with its flag.
        assert!(err.contains("this loop runs 1000000000 times"), "{err}");
        assert!(err.contains("more than 2000000 steps"), "{err}");
        assert!(err.contains("--max-steps"), "{err}");
        assert!(err.contains("t.dsgd:2:1"), "{err}");
    }
    let err = compile("data xs = [i for i in 0..100000000];").unwrap_err();
    assert!(err.contains("this loop runs 100000000 times"), "{err}");
}

#[test]
fn raised_limits_accept_what_the_defaults_refuse() {
    // Unrolled (a loop kept as a plate counts its rows far more cheaply).
    let src = "let z = sample Normal(0, 1);\nlet s = 0;\nfor i in 0..1500000 { }\nobserve z ~ Normal(0, 1);";
    let unrolled = CompileOptions {
        plates: dsgd::lang::PlatePolicy::Off,
        ..CompileOptions::default()
    };
    assert!(compile_source("t.dsgd", src, Path::new("."), &unrolled).is_err());
    let opts = CompileOptions {
        step_limit: 4_000_000,
        node_limit: 2_000_000,
        ..unrolled
    };
    compile_source("t.dsgd", src, Path::new("."), &opts).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_loop_bound_beyond_1e15_says_so() {
    let err = compile("for i in 0..1e18 { }").unwrap_err();
    assert!(err.contains("1e18, beyond the largest loop bound"), "{err}");
    assert!(!err.contains("not an integer"), "{err}");
    let err = compile("for i in 0..1.5 { }").unwrap_err();
    assert!(err.contains("1.5, not an integer"), "{err}");
}

#[test]
fn non_utf8_source_is_refused_with_offset_line_and_column() {
    let mut bytes = b"let a = 1;\nlet b = 2; // caf".to_vec();
    bytes.extend([0xff, 0xfe]);
    bytes.extend(b"\nfactor a;\n");
    let err = source_text("m.dsgd", bytes).unwrap_err().to_string();
    assert!(
        err.contains("byte 28 (line 2, column 18) is not valid UTF-8"),
        "{err}"
    );
    assert!(err.contains("m.dsgd:2:18"), "{err}");
    // Through a file too.
    let dir = tempdir("utf8");
    let path = dir.join("m.dsgd");
    std::fs::write(&path, [b'f', b'a', 0xc3]).unwrap();
    let err = compile_file(&path, &CompileOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("byte 2 (line 1, column 3)"), "{err}");
}

/// A fresh directory for one test.
fn tempdir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("dsgd-harden-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn with_csv(dir: &Path, csv_call: &str) -> String {
    let model = dir.join("m.dsgd");
    std::fs::write(
        &model,
        format!(
            "data xs = {csv_call};\nlet z = sample Normal(mean(xs), 1);\nobserve 1 ~ Normal(z, 1);"
        ),
    )
    .unwrap();
    model.display().to_string()
}

fn compile_at(model: &str, opts: &CompileOptions) -> Result<dsgd::ir::Model, String> {
    compile_file(Path::new(model), opts).map_err(|e| e.to_string())
}

#[test]
fn csv_outside_the_model_directory_is_refused_unless_allowed() {
    let root = tempdir("outside");
    let models = root.join("models");
    let data = root.join("data");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("d.csv"), "x\n1\n2\n").unwrap();
    std::fs::write(models.join("in.csv"), "x\n1\n2\n").unwrap();
    let opts = CompileOptions::default();
    // Beside the model: fine.
    let m = with_csv(&models, "csv(\"in.csv\", \"x\")");
    compile_at(&m, &opts).unwrap_or_else(|e| panic!("{e}"));
    // `..`, an absolute path and a symbolic link out are all refused.
    #[cfg(unix)]
    std::os::unix::fs::symlink(data.join("d.csv"), models.join("link.csv")).unwrap();
    let abs = data.join("d.csv").display().to_string();
    let mut calls = vec![
        "csv(\"../data/d.csv\", \"x\")".to_string(),
        format!("csv(\"{abs}\", \"x\")"),
    ];
    if cfg!(unix) {
        calls.push("csv(\"link.csv\", \"x\")".to_string());
    }
    for call in &calls {
        let m = with_csv(&models, call);
        let err = compile_at(&m, &opts).unwrap_err();
        assert!(err.contains("outside the model's directory"), "{err}");
        assert!(err.contains("--allow-data-outside"), "{err}");
        // Allowed by a data directory, or everywhere.
        let named = CompileOptions {
            data_dirs: vec![data.clone()],
            ..CompileOptions::default()
        };
        compile_at(&m, &named).unwrap_or_else(|e| panic!("{e}"));
        let anywhere = CompileOptions {
            allow_data_outside: true,
            ..CompileOptions::default()
        };
        compile_at(&m, &anywhere).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[cfg(unix)]
#[test]
fn csv_reads_only_regular_files_and_never_echoes_other_files() {
    let dir = tempdir("special");
    let anywhere = CompileOptions {
        allow_data_outside: true,
        ..CompileOptions::default()
    };
    // A device and a directory are not regular files: refused before reading (no hang, no
    // growth without bound).
    for (call, what) in [
        ("csv(\"/dev/zero\", \"x\")", "is not a regular file"),
        ("csv(\".\", \"x\")", "is not a regular file"),
    ] {
        let m = with_csv(&dir, call);
        let err = compile_at(&m, &anywhere).unwrap_err();
        assert!(err.contains(what), "{err}");
    }
    // A FIFO would block forever on open: refused by its type.
    let fifo = dir.join("pipe.csv");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        let m = with_csv(&dir, "csv(\"pipe.csv\", \"x\")");
        let err = compile_at(&m, &anywhere).unwrap_err();
        assert!(err.contains("is not a regular file"), "{err}");
    }
    // A file that is not a CSV: its first line is not quoted back.
    let secret = "root:x:0:0:root:/root:/bin/bash";
    std::fs::write(dir.join("passwd"), format!("{secret}\nuser:x:1000\n")).unwrap();
    let m = with_csv(&dir, "csv(\"passwd\", \"root\")");
    let err = compile_at(&m, &anywhere).unwrap_err();
    assert!(err.contains("has no column `root`"), "{err}");
    assert!(
        !err.contains("/bin/bash") && !err.contains("root:x"),
        "{err}"
    );
    // A CSV header is listed to help.
    std::fs::write(dir.join("ok.csv"), "alpha,beta\n1,2\n").unwrap();
    let m = with_csv(&dir, "csv(\"ok.csv\", \"gamma\")");
    let err = compile_at(&m, &anywhere).unwrap_err();
    assert!(err.contains("one of its columns: alpha, beta"), "{err}");
}

#[test]
fn csv_size_is_capped_and_rows_are_not_nodes() {
    let dir = tempdir("size");
    std::fs::write(
        dir.join("big.csv"),
        format!("x\n{}", "1.5\n".repeat(300_000)),
    )
    .unwrap();
    let m = with_csv(&dir, "csv(\"big.csv\", \"x\")");
    let small = CompileOptions {
        max_data_bytes: 1000,
        ..CompileOptions::default()
    };
    let err = compile_at(&m, &small).unwrap_err();
    assert!(err.contains("larger than 1000 bytes"), "{err}");
    assert!(err.contains("--max-data-bytes"), "{err}");
    // The rows are held packed: a column of 300,000 rows and its mean fit in a hundred
    // nodes (the byte cap bounds the file, and so the column).
    let few_nodes = CompileOptions {
        node_limit: 100,
        ..CompileOptions::default()
    };
    compile_at(&m, &few_nodes).unwrap_or_else(|e| panic!("{e}"));
    compile_at(&m, &CompileOptions::default()).unwrap_or_else(|e| panic!("{e}"));
}
