//! What the tests that run the `dsgd` binary share.

// Each test binary that includes this module uses only some of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `dsgd ARGS` run in `dir`, with backtraces off so messages read as a user sees them.
pub fn dsgd_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dsgd"))
        .args(args)
        .current_dir(dir)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("runs")
}

/// What a command printed on stderr.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A fresh, empty directory `dsgd-PREFIX-NAME-PID` under the system's temporary directory.
pub fn tempdir(prefix: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dsgd-{prefix}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The JSON a successful command printed (the command's stderr if it failed).
pub fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
