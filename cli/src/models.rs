//! `dsgd models`: the built-in models, one line each.

use std::io::Write;
use std::process::ExitCode;

pub fn run() -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    for m in dsgd::models::builtins() {
        writeln!(out, "{:<12} {}", m.name, m.description)?;
    }
    Ok(ExitCode::SUCCESS)
}
