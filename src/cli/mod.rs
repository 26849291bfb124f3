//! One module per subcommand; each turns its arguments into library calls and prints.

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

use clap::Subcommand;

pub use args::UsageError;

#[derive(Subcommand, Debug)]
pub enum Command {
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
pub fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
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
