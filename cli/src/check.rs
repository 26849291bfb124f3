//! `dsgd check <model> [--json]`: the static facts about a model.

use std::io::Write;
use std::process::ExitCode;

use clap::Args;
use dsgd::experiment::check::CheckReport;
use dsgd::lang::LineIndex;

use crate::load::{SourceArgs, load_with_data};

/// Counts, nesting depth, safety, affine guards and applicable estimators of a model.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// A `.dsgd` file or the name of a built-in model (see `dsgd models`).
    pub model: String,
    #[command(flatten)]
    pub source: SourceArgs,
    /// A JSON object binding the model's `data` declarations by name (replacing their values).
    #[arg(long, value_name = "FILE.json")]
    pub data: Option<std::path::PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let loaded = load_with_data(&args.model, &args.source, args.data.as_deref())?;
    let lines = LineIndex::new(&loaded.source);
    let locate_span = |s| {
        let (line, column) = lines.line_column(s);
        format!("{}:{line}:{column}", loaded.file)
    };
    let report = CheckReport::new(&loaded.model, &locate_span);
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        writeln!(out, "{report}")?;
    }
    Ok(ExitCode::SUCCESS)
}
