//! One module per subcommand; each turns its arguments into library calls and prints.

use std::process::ExitCode;

use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum Command {}

/// Runs one subcommand.
pub fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {}
}
