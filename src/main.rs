//! The `dsgd` command line: parses arguments, calls the library, prints, sets the exit code.
//!
//! Only this file and `src/cli/` know about clap, terminals and exit codes. Exit codes: 0 on
//! success, 1 when a model or run fails, 2 for usage errors (clap's own). Results go to
//! stdout; progress and warnings go to stderr. A closed pipe ends the program quietly.

// Every `unsafe` block says why it is sound, next to it (none here today).
#![deny(clippy::undocumented_unsafe_blocks)]

mod cli;

use std::process::ExitCode;

use clap::Parser;

/// Diagonalisation SGD: gradient-based optimisation and variational inference for programs
/// that branch.
#[derive(Parser, Debug)]
#[command(name = "dsgd", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: cli::Command,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli::dispatch(cli.command) {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {err:#}");
            if err.downcast_ref::<cli::UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
