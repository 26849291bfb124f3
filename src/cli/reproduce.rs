//! `dsgd reproduce`: the paper's evaluation on the built-in models, written under `--out`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use dsgd::experiment::reproduce::{ReproduceConfig, reproduce};

use super::progress::SweepProgress;

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
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    threads: Option<u64>,
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
    let progress = SweepProgress::new(if args.quick { "quick" } else { "reproduction" });
    let go = || reproduce(&config, &args.out, &|d, t| progress.update(d, t));
    let result = match args.threads {
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n as usize)
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
