//! The `dsgd` command line: parses arguments, calls the library, prints, sets the exit code.
//!
//! Only this crate knows about clap, terminals and exit codes; it has one module per
//! subcommand, each turning its arguments into library calls and printing. Exit codes: 0 on
//! success, 1 when a model or run fails, 2 for usage errors (clap's own). Results go to
//! stdout; progress and warnings go to stderr. A closed pipe ends the program quietly.

// Every `unsafe` block says why it is sound, next to it (none here today).
#![deny(clippy::undocumented_unsafe_blocks)]

mod advise;
mod args;
mod bench;
mod check;
mod compare;
mod diagnose;
mod load;
mod models;
mod progress;
mod reproduce;
mod run;
mod sample;

use std::process::ExitCode;

use args::UsageError;
use clap::{Parser, Subcommand};

/// Diagonalisation SGD: gradient-based optimisation and variational inference for programs
/// that branch.
#[derive(Parser, Debug)]
#[command(name = "dsgd", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Counts, nesting depth, safety, affine guards and applicable estimators of a model.
    Check(check::CheckArgs),
    /// Which estimator to use, and why: the analysis and a short pilot (work-normalised
    /// variances, biases).
    Advise(advise::AdviseArgs),
    /// List the built-in models.
    Models,
    /// Optimise a model with one estimator; print or save the fitted values and trajectory.
    Run(run::RunArgs),
    /// Posterior draws of every fitted latent from a run's run.json, as CSV.
    Sample(sample::SampleArgs),
    /// Check automatic gradients against central finite differences.
    Diagnose(diagnose::DiagnoseArgs),
    /// Every applicable estimator (DSGD and Fixed per eta) over several seeds: table + figure.
    Compare(compare::CompareArgs),
    /// The paper's evaluation on the built-in models: runs, figures, tables, REPORT.md.
    Reproduce(reproduce::ReproduceArgs),
    /// Gradient samples per second per estimator, one thread.
    Bench(bench::BenchArgs),
}

/// Runs one subcommand.
fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Check(args) => check::run(args),
        Command::Advise(args) => advise::run(args),
        Command::Models => models::run(),
        Command::Run(args) => run::run(args),
        Command::Sample(args) => sample::run(args),
        Command::Diagnose(args) => diagnose::diagnose(args),
        Command::Compare(args) => compare::run(args),
        Command::Reproduce(args) => reproduce::run(args),
        Command::Bench(args) => bench::run(args),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli.command) {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {err:#}");
            if err.downcast_ref::<UsageError>().is_some() {
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
