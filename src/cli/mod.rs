//! One module per subcommand; each turns its arguments into library calls and prints.

mod check;
mod diagnose;
mod load;
mod models;
mod run;

use std::process::ExitCode;

use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Counts, nesting depth, safety, affine guards and applicable estimators of a model.
    Check(check::CheckArgs),
    /// List the built-in models.
    Models,
    /// Optimise a model with one estimator; print or save the trajectory.
    Run(run::RunArgs),
    /// Check automatic gradients against central finite differences.
    Diagnose(diagnose::DiagnoseArgs),
}

/// Runs one subcommand.
pub fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Check(args) => check::run(args),
        Command::Models => models::run(),
        Command::Run(args) => run::run(args),
        Command::Diagnose(args) => diagnose::diagnose(args),
    }
}
