//! `dsgd diagnose`: automatic gradients versus central finite differences.

use std::io::Write;
use std::process::ExitCode;

use clap::Args;
use dsgd::experiment::diagnose::{DiagnoseConfig, diagnose as check};

use dsgd::settings::DEFAULT_ETA;

use crate::args::{eta, positive};
use crate::load::{SourceArgs, load_with_data};

#[derive(Args, Debug)]
pub struct DiagnoseArgs {
    /// A model file (`.dsgd`) or the name of a built-in model.
    model: String,
    #[command(flatten)]
    source: SourceArgs,
    /// A JSON object binding the model's `data` declarations by name (replacing their values).
    #[arg(long, value_name = "FILE.json")]
    pub data: Option<std::path::PathBuf>,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Random points to check at.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..1000))]
    points: u64,
    /// Seed of the random points.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Accuracy coefficient of the smoothed check.
    #[arg(long, default_value_t = DEFAULT_ETA, allow_negative_numbers = true, value_parser = eta)]
    eta: f64,
    /// Largest acceptable relative error.
    #[arg(long, default_value_t = 1e-4, allow_negative_numbers = true, value_parser = positive)]
    tolerance: f64,
}

/// Exit status 1 when a block fails the tolerance.
pub fn diagnose(args: DiagnoseArgs) -> anyhow::Result<ExitCode> {
    let model = load_with_data(&args.model, &args.source, args.data.as_deref())?.model;
    let config = DiagnoseConfig {
        points: args.points as usize,
        seed: args.seed,
        eta: args.eta,
        tolerance: args.tolerance,
        ..DiagnoseConfig::default()
    };
    let report = check(&model, &config)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        writeln!(
            out,
            "{}: {} points, smoothed at eta {}, tolerance {:e}",
            report.model, report.points, report.eta, report.tolerance
        )?;
        writeln!(
            out,
            "{:<9} {:<7} {:>8} {:>8} {:>12}  {:<20} result",
            "semantics", "block", "compared", "skipped", "worst error", "component"
        )?;
        for b in &report.blocks {
            writeln!(
                out,
                "{:<9} {:<7} {:>8} {:>8} {:>12.3e}  {:<20} {}",
                b.semantics,
                b.block,
                b.compared,
                b.skipped,
                b.worst_relative_error,
                b.worst_component.as_deref().unwrap_or("-"),
                if b.passed { "ok" } else { "FAIL" }
            )?;
        }
        writeln!(out, "{}", if report.passed { "passed" } else { "FAILED" })?;
    }
    out.flush()?;
    Ok(if report.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
