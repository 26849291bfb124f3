//! `dsgd compare`: every applicable estimator on one model, DSGD and Fixed for each eta, over
//! several seeds; a table on stdout, runs, table and figure under `--out`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use dsgd::experiment::atomic::write_atomic;
use dsgd::experiment::compare::{CompareOptions, run_comparison};
use dsgd::experiment::paper::ETAS;
use dsgd::experiment::report::RunReport;
use dsgd::experiment::tables;
use dsgd::settings::RunConfig;
use dsgd_report::compare_figure::{FIGURE_SIZE, trajectory_figure};
use dsgd_report::plot::write_figure;

use crate::args::{UsageError, count, eta, eta_decay, positive};
use crate::load::{SourceArgs, load_with_data};
use crate::progress::SweepProgress;

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// A model file (`.dsgd`) or the name of a built-in model.
    model: String,
    #[command(flatten)]
    source: SourceArgs,
    /// A JSON object binding the model's `data` declarations by name (replacing their values).
    #[arg(long, value_name = "FILE.json")]
    pub data: Option<std::path::PathBuf>,
    /// Accuracy coefficients for DSGD and Fixed.
    #[arg(long, num_args = 1.., allow_negative_numbers = true, value_parser = eta, default_values_t = ETAS.to_vec())]
    etas: Vec<f64>,
    /// Seeds per cell (0..N).
    #[arg(long, default_value_t = CompareOptions::DEFAULT_SEEDS, value_parser = clap::value_parser!(u64).range(1..))]
    seeds: u64,
    /// Optimisation steps per run.
    #[arg(long, default_value_t = RunConfig::default().iterations, value_parser = clap::value_parser!(u64).range(1..))]
    iters: u64,
    /// Adam's step [default: a built-in model's paper step, 0.01 for xornet, else 0.0015; a
    /// model file runs DoG, which needs none, unless this is given].
    #[arg(long, allow_negative_numbers = true, value_parser = positive)]
    lr: Option<f64>,
    /// DSGD's decay [default: the paper's, 0.2 for xornet, else 1 / (2 * nesting depth)].
    #[arg(long, allow_negative_numbers = true, value_parser = eta_decay)]
    eta_decay: Option<f64>,
    /// Measure every N iterations.
    #[arg(long, default_value_t = RunConfig::default().log_every, value_parser = clap::value_parser!(u64).range(1..))]
    log_every: u64,
    /// Fresh samples per measurement.
    #[arg(long, default_value_t = RunConfig::default().log_samples, value_parser = count::<2>)]
    log_samples: usize,
    /// Output directory [default: results/compare-<model>].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print the comparison as JSON on stdout instead of the table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let loaded = load_with_data(&args.model, &args.source, args.data.as_deref())?;
    let model = &loaded.model;
    let options = CompareOptions {
        etas: Some(args.etas.clone()),
        seeds: Some(args.seeds),
        iters: Some(args.iters),
        lr: args.lr,
        eta_decay: args.eta_decay,
        log_every: Some(args.log_every),
        log_samples: Some(args.log_samples),
    };
    // Runs go in parallel, one per thread, and every run's report is kept until the end:
    // the base settings are refused when they cannot fit.
    let base = options
        .base(model, loaded.builtin)
        .map_err(UsageError::from)?;
    let with_paper = loaded.builtin && dsgd::experiment::paper::final_elbo(&model.name).is_some();
    let out = args
        .out
        .unwrap_or_else(|| PathBuf::from(format!("results/compare-{}", model.name)));
    // Before the runs, not after all of them.
    dsgd::experiment::outfiles::check_out_writable(&out)?;
    let progress = SweepProgress::new(&model.name);
    let result = run_comparison(model, &args.etas, args.seeds, &base, &|d, t| {
        progress.update(d, t)
    });
    progress.finish();
    let (cmp, arms, reports) = result?;
    for (r, arm) in reports.iter().zip(
        arms.iter()
            .flat_map(|a| std::iter::repeat_n(a, args.seeds as usize)),
    ) {
        let dir = out.join(arm.slug()).join(format!("seed{}", r.seed));
        r.write_to(&dir)
            .with_context(|| format!("writing {}", dir.display()))?;
    }
    let refs: Vec<&RunReport> = reports.iter().collect();
    let figure = trajectory_figure(&model.name, &arms, &refs, args.seeds);
    let (w, h) = FIGURE_SIZE;
    let files = write_figure(&figure, &out.join("trajectories"), w, h)?;
    let label = cmp.kind.label();
    let mut table = tables::comparison_table(&cmp);
    if with_paper {
        table += &format!(
            "\nBeside the paper's published numbers (its settings: 10,000 iterations, 5 seeds; the band is judged only at 10,000 iterations):\n\n{}",
            tables::table1_with(&cmp, &[], args.iters == 10_000)
        );
    }
    let problems: Vec<&String> = cmp.cells.iter().flat_map(|c| c.problems.iter()).collect();
    if !problems.is_empty() {
        table += "\nRuns that stopped early or skipped steps:\n\n";
        for p in problems {
            table += &format!("- {p}\n");
        }
    }
    let md = out.join("table.md");
    write_atomic(
        &md,
        format!("# {}: final {label}\n\n{table}", model.name).as_bytes(),
    )
    .with_context(|| format!("writing {}", md.display()))?;
    let js = out.join("comparison.json");
    let json = serde_json::to_string_pretty(&cmp)?;
    write_atomic(&js, json.as_bytes()).with_context(|| format!("writing {}", js.display()))?;
    let mut stdout = std::io::stdout().lock();
    if args.json {
        writeln!(stdout, "{json}")?;
    } else {
        writeln!(
            stdout,
            "{}: final {label}, mean ± std over the seeds' runs that took every step ({} seed(s), {} iterations)\n",
            model.name, args.seeds, args.iters
        )?;
        if let Some(note) = &cmp.lyy18_note {
            writeln!(stdout, "LYY18 skipped: {note}\n")?;
        }
        write!(stdout, "{table}")?;
        for p in [&files.svg, &files.png, &files.pdf, &md, &js] {
            writeln!(stdout, "wrote {}", p.display())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
