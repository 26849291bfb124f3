//! `dsgd bench`: gradient samples per second per estimator, one thread (or `--threads`),
//! after warm-up, median of several repeats with the spread (the same measurement as Table
//! 2's cost). The estimators' repeats are interleaved so that a change in load affects them
//! alike.

use std::io::Write;
use std::process::ExitCode;

use clap::Args;
use dsgd::estimate::{EstimatorKind, Problem};
use dsgd::experiment::compare::lyy18_refusal;
use dsgd::experiment::cost::{Cost, CostConfig, measure_interleaved};
use dsgd::experiment::paper::JAX_SAMPLES_PER_SECOND;
use dsgd::experiment::protocol::paper_settings;
use dsgd::experiment::run::RunError;
use serde::Serialize;

use dsgd::settings::{DEFAULT_ETA, Footprint, check_memory};

use crate::args::{UsageError, count, eta, threads};
use crate::load::{SourceArgs, load_with_data};

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// A model file (`.dsgd`) or the name of a built-in model.
    model: String,
    #[command(flatten)]
    source: SourceArgs,
    /// A JSON object binding the model's `data` declarations by name (replacing their values).
    #[arg(long, value_name = "FILE.json")]
    pub data: Option<std::path::PathBuf>,
    /// Print JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Batch sizes to time.
    #[arg(long, num_args = 1.., default_values_t = vec![16usize, 1000], value_parser = count::<1>)]
    batch: Vec<usize>,
    /// Timed repeats per estimator and batch (the median is reported).
    #[arg(long, default_value_t = 7, value_parser = repeats)]
    repeats: usize,
    /// Seconds per repeat (and of warm-up).
    #[arg(long, default_value_t = 0.2, value_parser = seconds)]
    seconds: f64,
    /// Worker threads the batches run on (one chunk of 16 samples is one thread's work, so
    /// more than one pays from batches of a few chunks on).
    #[arg(long, default_value_t = 1, value_parser = threads)]
    threads: usize,
    /// Eta for DSGD (at iteration 4000) and Fixed.
    #[arg(long, default_value_t = DEFAULT_ETA, allow_negative_numbers = true, value_parser = eta)]
    eta: f64,
}

fn seconds(s: &str) -> Result<f64, String> {
    let x: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if x > 0.0 && x <= 60.0 {
        Ok(x)
    } else {
        Err(format!("must be positive and at most 60, got {s}"))
    }
}

#[derive(Serialize)]
struct Entry {
    #[serde(flatten)]
    cost: Cost,
    /// The JAX reference's figure (batch 16 only).
    jax_samples_per_second: Option<f64>,
}

#[derive(Serialize)]
struct BenchReport {
    model: String,
    threads: usize,
    /// The widest builds of the sweeps this CPU (and `DSGD_KERNELS`) let the engine choose
    /// from: `baseline`, `portable`, `avx2` or `avx512` (which includes the compiled sweeps).
    kernels: &'static str,
    lyy18_note: Option<String>,
    results: Vec<Entry>,
}

pub fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let model = load_with_data(&args.model, &args.source, args.data.as_deref())?.model;
    let footprint = Footprint::of(&model);
    for &batch in &args.batch {
        check_memory(
            vec![("batch", batch.to_string())],
            footprint.run_bytes(batch, 0, args.threads),
        )
        .map_err(UsageError::from)?;
    }
    let note = lyy18_refusal(&model);
    let (_, decay) = paper_settings(&model.name);
    let jax = JAX_SAMPLES_PER_SECOND
        .iter()
        .find(|(m, _)| *m == model.name)
        .map(|(_, v)| *v);
    let kinds: Vec<EstimatorKind> = EstimatorKind::ALL
        .into_iter()
        .filter(|&k| k != EstimatorKind::Lyy18 || note.is_none())
        .collect();
    // Compiled once for every batch size and estimator.
    let problem = Problem::new(&model).map_err(RunError::from)?;
    let mut results = Vec::new();
    for &batch in &args.batch {
        let config = CostConfig {
            batch,
            warmup_seconds: args.seconds,
            repeats: args.repeats,
            repeat_seconds: args.seconds,
            threads: args.threads,
        };
        for cost in measure_interleaved(&problem, &kinds, args.eta, decay, &config)? {
            // JAX_SAMPLES_PER_SECOND's columns: DSGD, Fixed, Score, Reparam, LYY18.
            let i = ["dsgd", "fixed", "score", "reparam", "lyy18"]
                .iter()
                .position(|k| *k == cost.estimator)
                .unwrap_or(0);
            results.push(Entry {
                jax_samples_per_second: jax.and_then(|j| j[i]).filter(|_| batch == 16),
                cost,
            });
        }
    }
    let report = BenchReport {
        model: model.name.clone(),
        threads: args.threads,
        kernels: dsgd::experiment::cost::kernels(),
        lyy18_note: note,
        results,
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{}: gradient samples per second, {} thread{}, kernels up to {}, median of {} repeats of {} s (min – max)",
        report.model,
        report.threads,
        if report.threads == 1 { "" } else { "s" },
        report.kernels,
        args.repeats,
        args.seconds
    )?;
    if let Some(n) = &report.lyy18_note {
        writeln!(out, "LYY18 skipped: {n}")?;
    }
    writeln!(
        out,
        "{:<9} {:>6} {:>12} {:>25} {:>10} {:>8}",
        "estimator", "batch", "samples/s", "spread", "JAX", "ours/JAX"
    )?;
    for e in &report.results {
        let c = &e.cost;
        writeln!(
            out,
            "{:<9} {:>6} {:>12.3e} {:>25} {:>10} {:>8}",
            c.estimator,
            c.batch,
            c.samples_per_second,
            format!("{:.3e} – {:.3e}", c.min, c.max),
            e.jax_samples_per_second
                .map_or("–".into(), |j| format!("{j:.1e}")),
            e.jax_samples_per_second
                .map_or("–".into(), |j| format!("{:.1}", c.samples_per_second / j)),
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Most timed repeats: each takes `--seconds` (up to a minute), so more would never finish.
const MAX_REPEATS: usize = 1000;

fn repeats(s: &str) -> Result<usize, String> {
    let n = count::<1>(s)?;
    if n > MAX_REPEATS {
        return Err(format!("at most {MAX_REPEATS} repeats, got {s}"));
    }
    Ok(n)
}
