//! House rules checked on the source tree: every file under the `src/` of each crate of the
//! workspace (the core here, `cli/`, `report/`, `python/`) starts with a `//!` doc comment
//! saying what it holds.
//!
//! Not here: formatting and lints (`cargo fmt`, `cargo clippy` in `.ci/run`).

use std::fs;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .expect("readable source directory")
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The workspace's crates, by their directory relative to the core's.
const CRATES: [&str; 4] = [".", "cli", "report", "python"];

#[test]
fn every_source_file_starts_with_a_module_doc() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut missing = Vec::new();
    for krate in CRATES {
        let src = root.join(krate).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        assert!(
            !files.is_empty(),
            "found no source files under {}",
            src.display()
        );
        missing.extend(
            files
                .iter()
                .filter(|f| {
                    let text = fs::read_to_string(f).expect("readable source file");
                    !text.starts_with("//!")
                })
                .map(|f| f.strip_prefix(root).unwrap_or(f).display().to_string()),
        );
    }
    assert!(
        missing.is_empty(),
        "files without a leading `//!` doc comment: {missing:?}"
    );
}

/// The platform C library's transcendental functions (what `f64::exp`, `ln`, `powf`, ... call)
/// differ in their last bits between systems, and a run must give the same bits on every
/// machine: code that reaches a result uses `dsgd::elementary` or the portable `libm` crate.
/// Checked in the core and the report; tests (after `mod tests`), the command line's printing
/// and the plots' axes may use them;
/// `ir/density.rs` writes log-densities with the builder's `Var` methods of the same names,
/// which add nodes and compute nothing.
#[test]
fn results_use_no_platform_transcendental_functions() {
    const FORBIDDEN: [&str; 10] = [
        ".exp()",
        ".ln()",
        ".powf(",
        ".exp_m1()",
        ".ln_1p()",
        ".sin()",
        ".cos()",
        ".tanh()",
        ".log2()",
        ".cbrt()",
    ];
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("report/src"), &mut files);
    let mut found = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel.starts_with("report/src/plot") || rel == "src/ir/density.rs" {
            continue;
        }
        let text = fs::read_to_string(f).expect("readable source file");
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("mod tests") {
                break;
            }
            let code = line.split("//").next().unwrap_or("");
            for call in FORBIDDEN {
                if code.contains(call) {
                    found.push(format!("{rel}:{}: {}", i + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "platform libm calls:\n{}",
        found.join("\n")
    );
}
