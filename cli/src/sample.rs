//! `dsgd sample`: posterior draws of every fitted latent from a run's `run.json`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use dsgd::LatentSummary;
use dsgd::experiment::atomic::write_atomic;
use dsgd::experiment::draws::draw;

#[derive(Args, Debug)]
pub struct SampleArgs {
    /// A `run.json` written by `dsgd run --out DIR` (or `dsgd run --json`).
    run: PathBuf,
    /// Number of draws.
    #[arg(short = 'n', long = "draws", value_parser = clap::value_parser!(u64).range(1..))]
    n: u64,
    /// Random seed; the draws are a pure function of it and the fitted family.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write the CSV here (written whole or not at all) instead of stdout.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// The most values (draws x latents) one call makes, so memory stays bounded (~1 GB of CSV).
const MAX_CELLS: u64 = 50_000_000;

/// The largest `run.json` read (a run of 10,000 latents logging 300 measurements writes about
/// 150 MB).
const MAX_RUN_BYTES: u64 = 1 << 30;

/// The part of `run.json` that sampling reads.
#[derive(serde::Deserialize)]
struct FittedRun {
    latents: Vec<LatentSummary>,
}

pub fn run(args: SampleArgs) -> anyhow::Result<ExitCode> {
    if let Some(path) = &args.out
        && path.is_dir()
    {
        bail!(
            "`{}` is a directory: --out names the CSV file to write",
            path.display()
        );
    }
    let shown = args.run.display();
    let text = dsgd::input::read_text(&args.run, dsgd::input::Links::Follow, MAX_RUN_BYTES)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let fitted: FittedRun = serde_json::from_str(&text).map_err(|e| {
        let full = e.to_string();
        let what = full
            .rsplit_once(" at line ")
            .map_or(full.as_str(), |(w, _)| w);
        anyhow::anyhow!(
            "{shown}:{}:{}: not a run.json with fitted latents ({what})",
            e.line(),
            e.column()
        )
    })?;
    if fitted.latents.is_empty() {
        bail!("{shown}: the run has no fitted latents to draw");
    }
    let cells = args.n.saturating_mul(fitted.latents.len() as u64);
    if cells > MAX_CELLS {
        bail!(
            "{} draws of {} latents are {cells} values, more than the {MAX_CELLS} one call makes; ask for fewer draws and use several seeds",
            args.n,
            fitted.latents.len()
        );
    }
    let draws = draw(&fitted.latents, args.n as usize, args.seed)
        .with_context(|| format!("cannot draw from `{shown}`"))?;
    let csv = draws.to_csv()?;
    match &args.out {
        Some(path) => {
            // Temporary files of an interrupted earlier write go first.
            let _ = dsgd::experiment::outfiles::remove_dead_temps(path);
            write_atomic(path, csv.as_bytes())
                .with_context(|| format!("writing draws to {}", path.display()))?;
            eprintln!("wrote {} draws to {}", args.n, path.display());
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(csv.as_bytes())?;
            out.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
