//! `dsgd reproduce`: the paper's evaluation on the built-in models, written under `--out`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use dsgd::experiment::reproduction::ReproduceConfig;
use dsgd_report::reproduce::reproduce;

use dsgd::settings::{Footprint, check_memory, default_threads};

use crate::args::{UsageError, threads};
use crate::progress::SweepProgress;

#[derive(Args, Debug)]
pub struct ReproduceArgs {
    /// Fewer iterations, seeds and etas (about a minute; not comparable to the paper).
    #[arg(long)]
    quick: bool,
    /// Output directory.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Seeds per cell [default: 5, or 2 with --quick].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    seeds: Option<u64>,
    /// Built-in models to run [default: the paper's six].
    #[arg(long, num_args = 1..)]
    models: Option<Vec<String>>,
    /// Worker threads for the sweep [default: all cores]; results do not depend on it.
    #[arg(long, value_parser = threads)]
    threads: Option<usize>,
    /// Skip the precise final measurement of each run (the 1,000-sample values remain).
    #[arg(long)]
    no_precise: bool,
}

pub fn run(args: ReproduceArgs) -> anyhow::Result<ExitCode> {
    let mut config = if args.quick {
        ReproduceConfig::quick()
    } else {
        ReproduceConfig::full()
    };
    if let Some(n) = args.seeds {
        config.seeds = n;
    }
    if let Some(m) = args.models {
        config.models = m;
    }
    if args.no_precise {
        config.precise = None;
    }
    check_setting(&config, args.threads.unwrap_or_else(default_threads))?;
    let progress = SweepProgress::new(if args.quick { "quick" } else { "reproduction" });
    let go = || reproduce(&config, &args.out, &|d, t| progress.update(d, t));
    let result = match args.threads {
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|e| anyhow::anyhow!("cannot start worker threads: {e}"))?
            .install(go),
        None => go(),
    };
    progress.finish();
    let rep = result?;
    println!(
        "{} runs of {} model(s) in {:.1} s; wrote {}",
        rep.runs,
        rep.models.len(),
        rep.wall_seconds,
        args.out.join("REPORT.md").display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Refuses unknown models (a usage error) and a number of seeds whose runs cannot fit in
/// memory, before any work.
fn check_setting(config: &ReproduceConfig, threads: usize) -> anyhow::Result<()> {
    let mut per_seed = 0u128;
    let mut working = 0u128;
    for name in &config.models {
        let Some(Ok(model)) = dsgd::models::builtin(name) else {
            return Err(UsageError(format!(
                "--models: no built-in model `{name}` (built-ins: {})",
                dsgd::models::builtin_names().join(", ")
            ))
            .into());
        };
        let f = Footprint::of(&model);
        let arms = 2 * config.etas.len() as u128 + 3;
        per_seed += arms * f.report_bytes(config.iterations, config.log_every);
        working = working.max(f.run_bytes(config.batch, config.log_samples, 1));
    }
    check_memory(
        vec![("seeds", config.seeds.to_string())],
        u128::from(config.seeds) * per_seed + threads as u128 * working,
    )
    .map_err(UsageError::from)?;
    Ok(())
}
