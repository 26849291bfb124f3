//! `dsgd advise <model> [--json]`: which estimator to use on a model, and why.

use std::io::Write;
use std::process::ExitCode;

use clap::Args;
use dsgd::experiment::advise::{AdviseConfig, advise};
use dsgd::lang::locate;

use dsgd::settings::DEFAULT_ETA;

use crate::args::eta;
use crate::load::{SourceArgs, load_with_data};

/// The static analysis and a short pilot at the initial parameters: which estimators apply,
/// which are biased, and their work-normalised variances.
#[derive(Args, Debug)]
pub struct AdviseArgs {
    /// A `.dsgd` file or the name of a built-in model (see `dsgd models`).
    pub model: String,
    #[command(flatten)]
    pub source: SourceArgs,
    /// Batches of 16 gradient samples per estimator in the pilot.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(2..))]
    pub batches: u64,
    /// The pilot's random seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// DSGD's smoothing accuracy in the pilot (its eta at iteration 4000).
    #[arg(long, default_value_t = DEFAULT_ETA, allow_negative_numbers = true, value_parser = eta)]
    pub eta: f64,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// A JSON object binding the model's `data` declarations by name (replacing their values).
    #[arg(long, value_name = "FILE.json")]
    pub data: Option<std::path::PathBuf>,
}

pub fn run(args: AdviseArgs) -> anyhow::Result<ExitCode> {
    let loaded = load_with_data(&args.model, &args.source, args.data.as_deref())?;
    let locate_span = |s| {
        let l = locate(&loaded.source, s);
        format!("{}:{}:{}", loaded.file, l.line, l.column)
    };
    let config = AdviseConfig {
        batches: args.batches,
        seed: args.seed,
        eta: args.eta,
        ..AdviseConfig::default()
    };
    let report = advise(&loaded.model, &config, &locate_span)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        write!(out, "{report}")?;
    }
    Ok(ExitCode::SUCCESS)
}
