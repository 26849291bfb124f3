//! One module per subcommand; each turns its arguments into library calls and prints.

mod check;
mod load;
mod models;

use std::process::ExitCode;

use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Counts, nesting depth, safety, affine guards and applicable estimators of a model.
    Check(check::CheckArgs),
    /// List the built-in models.
    Models,
}

/// Runs one subcommand.
pub fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Check(args) => check::run(args),
        Command::Models => models::run(),
    }
}
