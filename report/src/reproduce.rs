//! `dsgd reproduce`: the paper's evaluation on the built-in models, from scratch — the sweep
//! of runs (parallel across runs), the per-run files, the figures, the cost measurements
//! and REPORT.md.
//!
//! The Markdown is composed in [`crate::report_md`]; the tables and claims come from
//! [`dsgd::experiment::tables`] and [`crate::claims`]. Every file is written whole or not at all.

use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;

use thiserror::Error;

use dsgd::experiment::reproduction::{ModelOutcome, ReproduceConfig, Reproduction};

use crate::compare_figure::{FIGURE_SIZE, trajectory_figure};
use crate::figure1a::write_figure1a;
use crate::plot::{PlotError, write_figure};
use dsgd::Model;
use dsgd::estimate::{EstimatorKind, Problem};
use dsgd::experiment::atomic::write_atomic;
use dsgd::experiment::compare;
use dsgd::experiment::cost;
use dsgd::experiment::outdir::{OutDir, OutDirError};
use dsgd::experiment::report::RunReport;
use dsgd::experiment::run::{RunConfig, RunError};
use dsgd::experiment::sweep::{self, Job};
use dsgd::experiment::tables;

/// Why a reproduction failed.
#[derive(Debug, Error)]
pub enum ReproduceError {
    /// The configuration or a built-in model cannot be used (the message says why).
    #[error("{0}")]
    Setup(String),
    /// A run of the sweep failed.
    #[error("run failed ({what}): {source}")]
    Run {
        /// Which run (model, estimator, eta, seed).
        what: String,
        /// Why.
        #[source]
        source: RunError,
    },
    /// A file could not be written.
    #[error("cannot write {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A figure could not be drawn or written.
    #[error(transparent)]
    Plot(#[from] PlotError),
    /// REPORT.md's template could not be rendered.
    #[error("cannot compose REPORT.md: {0}")]
    Report(String),
    /// The output directory cannot be used.
    #[error(transparent)]
    OutDir(#[from] OutDirError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ReproduceError + '_ {
    move |source| ReproduceError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Compiles a built-in model by name.
pub fn builtin_model(name: &str) -> Result<Model, ReproduceError> {
    match dsgd::models::builtin(name) {
        Some(Ok(m)) => Ok(m),
        Some(Err(e)) => Err(ReproduceError::Setup(format!(
            "cannot compile built-in model `{name}`: {e}"
        ))),
        None => Err(ReproduceError::Setup(format!(
            "no built-in model `{name}` (built-ins: {})",
            dsgd::models::builtin_names().join(", ")
        ))),
    }
}

/// The decay of DSGD's eta on `model`: the configured one, else the model's default.
fn eta_decay(config: &ReproduceConfig, name: &str, model: &Model) -> f64 {
    dsgd::estimate::decay_for(config.base_run(name).eta_decay, model)
}

/// Times every applicable estimator on each model (Table 2's costs): one model at a time,
/// its estimators interleaved on one thread, with the other cores idle.
///
/// Not two models at once, one per core, although that would save a few seconds of wall
/// time: on the 2-core development VM two one-thread processes side by side each ran at
/// 0.74-1.08 of the rate of one alone, so Table 2's absolute costs would depend on the
/// neighbour. (Timed from rayon workers, each waiting for its own one-thread pool, it was
/// worse: a worker waiting on another pool keeps its core busy, and the rates fell 2-4x.)
fn time_costs(
    config: &ReproduceConfig,
    models: &[Model],
) -> Result<Vec<Vec<cost::Cost>>, ReproduceError> {
    models
        .iter()
        .zip(&config.models)
        .map(|(model, name)| {
            let lyy18 = compare::lyy18_refusal(model).is_none();
            let kinds: Vec<EstimatorKind> = EstimatorKind::ALL
                .into_iter()
                .filter(|&k| k != EstimatorKind::Lyy18 || lyy18)
                .collect();
            Problem::new(model)
                .map_err(RunError::from)
                .and_then(|problem| {
                    cost::measure_interleaved(
                        &problem,
                        &kinds,
                        config.variance_eta,
                        Some(eta_decay(config, name, model)),
                        &config.cost,
                    )
                })
                .map_err(|source| ReproduceError::Run {
                    what: format!("timing {name}"),
                    source,
                })
        })
        .collect()
}

/// One model's share of the sweep: its table's arms and runs, and the extra seeds of the
/// arms whose band is judged by the median.
struct ModelPlan {
    arms: Vec<compare::Arm>,
    /// Why LYY18 does not apply, if it does not.
    note: Option<String>,
    /// The table's runs (every arm, `config.seeds` seeds), as indices into the jobs.
    runs: std::ops::Range<usize>,
    /// The arms with extra seeds, and where those runs are.
    extra: Vec<compare::Arm>,
    extra_runs: std::ops::Range<usize>,
}

/// Every run of the reproduction, model by model: first each model's table runs, then the
/// median rule's extra seeds (so a sweep cut short has the tables' runs first).
fn plan_jobs(config: &ReproduceConfig, models: &[Model]) -> (Vec<ModelPlan>, Vec<Job>) {
    let mut plans = Vec::new();
    let mut jobs: Vec<Job> = Vec::new();
    for (i, model) in models.iter().enumerate() {
        let name = &config.models[i];
        let note = compare::lyy18_refusal(model);
        let arms = compare::arms(&config.etas, note.is_none());
        let base = config.base_run(name);
        let runs = jobs.len()..jobs.len() + arms.len() * config.seeds as usize;
        jobs.extend(compare::jobs(i, &arms, config.seeds, &base));
        let extra: Vec<compare::Arm> = if tables::judged_by_median(name) {
            arms.iter()
                .copied()
                .filter(|a| tables::in_band_scope(name, a))
                .collect()
        } else {
            Vec::new()
        };
        plans.push(ModelPlan {
            arms,
            note,
            runs,
            extra,
            extra_runs: 0..0,
        });
    }
    for (i, plan) in plans.iter_mut().enumerate() {
        let start = jobs.len();
        let base = config.base_run(&config.models[i]);
        for arm in &plan.extra {
            for seed in config.seeds..config.band_median_seeds {
                jobs.push(Job {
                    model: i,
                    config: RunConfig {
                        estimator: arm.estimator,
                        eta: arm.eta.unwrap_or(base.eta),
                        seed,
                        ..base.clone()
                    },
                });
            }
        }
        plan.extra_runs = start..jobs.len();
    }
    (plans, jobs)
}

/// The sweep's reports, in the order of its jobs.
struct Finished<'a> {
    reports: &'a [RunReport],
}

/// Every job's report or why its run failed, in job order.
type RunResults = Vec<Result<RunReport, RunError>>;

/// Where a job's `run.json` and `trajectory.csv` go: `runs/MODEL/ARM/seedN`.
fn run_dir(out: &Path, config: &ReproduceConfig, job: &Job) -> PathBuf {
    out.join("runs")
        .join(&config.models[job.model])
        .join(compare::Arm::of(&job.config).slug())
        .join(format!("seed{}", job.config.seed))
}

/// Runs the sweep and writes each finished run's files on a thread of its own while the
/// other runs go on. Writing a file waits for the disk (each is synced before it is renamed
/// into place), about 1.6 s for the reproduction's thousand files when they were written
/// after the sweep, with the cores idle; here the waits overlap the runs. Returns the
/// results in job order and the files written, or the first write that failed.
fn sweep_writing_runs(
    config: &ReproduceConfig,
    out: &Path,
    models: &[Model],
    jobs: &[Job],
    progress: &(dyn Fn(usize, usize) + Sync),
) -> (RunResults, Result<Vec<PathBuf>, ReproduceError>) {
    std::thread::scope(|scope| {
        let (send, receive) = std::sync::mpsc::channel::<(PathBuf, RunReport)>();
        let writer = scope.spawn(move || {
            let mut written = Vec::new();
            let mut failure = None;
            for (dir, report) in receive {
                // After a failure the rest is only received: the sweep cannot be stopped.
                if failure.is_none() {
                    match report.write_to(&dir) {
                        Ok(files) => written.extend(files),
                        Err(e) => failure = Some(io(&dir)(e)),
                    }
                }
            }
            failure.map_or(Ok(written), Err)
        });
        let results = {
            let finished = move |i: usize, r: &Result<RunReport, RunError>| {
                if let Ok(report) = r {
                    // A closed channel means the writer ended; its error is reported below.
                    let _ = send.send((run_dir(out, config, &jobs[i]), report.clone()));
                }
            };
            sweep::run_parallel_each(models, jobs, progress, &finished)
        };
        let written = writer.join().unwrap_or_else(|_| {
            Err(ReproduceError::Setup(
                "the thread writing the run files stopped".into(),
            ))
        });
        (results, written)
    })
}

/// Draws figure 1a and every model's trajectory figure into `figures`, side by side on the
/// pool's threads (between the sweep and the cost timing the cores would otherwise idle).
fn write_figures(
    config: &ReproduceConfig,
    plans: &[ModelPlan],
    sweep: &Finished,
    figures: &Path,
) -> Result<Vec<PathBuf>, ReproduceError> {
    let model_figure = |(i, plan): (usize, &ModelPlan)| {
        let name = &config.models[i];
        let runs: Vec<&RunReport> = sweep.reports[plan.runs.clone()].iter().collect();
        let figure = trajectory_figure(name, &plan.arms, &runs, config.seeds);
        write_figure(&figure, &figures.join(name), FIGURE_SIZE.0, FIGURE_SIZE.1)
    };
    let (first, rest) = rayon::join(
        || write_figure1a(figures),
        || {
            plans
                .par_iter()
                .enumerate()
                .map(model_figure)
                .collect::<Result<Vec<_>, _>>()
        },
    );
    Ok(std::iter::once(first?)
        .chain(rest?)
        .flat_map(|files| files.paths())
        .collect())
}

/// Assembles model `i`'s outcome from its runs and costs.
fn model_outcome(
    config: &ReproduceConfig,
    (i, model): (usize, &Model),
    plan: ModelPlan,
    sweep: &Finished,
    costs: Vec<cost::Cost>,
) -> Result<ModelOutcome, ReproduceError> {
    let reports = sweep.reports;
    let name = &config.models[i];
    let runs: Vec<&RunReport> = reports[plan.runs.clone()].iter().collect();
    let extra_runs: Vec<&RunReport> = reports[plan.extra_runs.clone()].iter().collect();
    let comparison = compare::aggregate(name, &plan.arms, &runs, plan.note);
    let median_cells = plan
        .extra
        .iter()
        .map(|arm| tables::MedianCell {
            arm: arm.label(),
            final_elbo: runs
                .iter()
                .chain(&extra_runs)
                .filter(|r| arm.matches(r))
                .map(|r| r.final_value)
                .collect(),
        })
        .collect();
    let variance = tables::variance_rows(&comparison, &costs, config.variance_eta);
    Ok(ModelOutcome {
        comparison,
        lr: config.base_run(name).optimizer.lr().unwrap_or(f64::NAN),
        eta_decay: eta_decay(config, name, model),
        costs,
        variance,
        median_cells,
        figure: format!("figures/{name}"),
    })
}

/// Runs the reproduction and writes everything under `out`. `progress(done, total)` reports
/// finished runs of the sweep. `out` is checked and locked before any work (a second
/// reproduction into the same directory is refused), and `manifest.json` lists the files
/// this run wrote.
pub fn reproduce(
    config: &ReproduceConfig,
    out: &Path,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Reproduction, ReproduceError> {
    let clock = Instant::now();
    if config.seeds == 0 || config.etas.is_empty() || config.models.is_empty() {
        return Err(ReproduceError::Setup(
            "need at least one model, one seed and one eta".into(),
        ));
    }
    let models = config
        .models
        .iter()
        .map(|m| builtin_model(m))
        .collect::<Result<Vec<_>, _>>()?;
    let mut out_dir = OutDir::acquire(out)?;
    let (plans, jobs) = plan_jobs(config, &models);
    for job in &jobs {
        job.config
            .validate()
            .map_err(|e| ReproduceError::Setup(e.to_string()))?;
    }
    let sweep_clock = Instant::now();
    let (results, written) = sweep_writing_runs(config, out_dir.path(), &models, &jobs, progress);
    let sweep_seconds = sweep_clock.elapsed().as_secs_f64();
    let mut reports: Vec<RunReport> = Vec::with_capacity(results.len());
    for (job, r) in jobs.iter().zip(results) {
        reports.push(r.map_err(|source| ReproduceError::Run {
            what: format!(
                "{} {} eta {} seed {}",
                config.models[job.model], job.config.estimator, job.config.eta, job.config.seed
            ),
            source,
        })?);
    }
    out_dir.wrote(written?);
    let finished = Finished { reports: &reports };
    let figures = out.join("figures");
    std::fs::create_dir_all(&figures).map_err(io(&figures))?;
    out_dir.wrote(write_figures(config, &plans, &finished, &figures)?);
    let cost_clock = Instant::now();
    let costs = time_costs(config, &models)?;
    let mut outcomes = Vec::new();
    for (i, (plan, costs)) in plans.into_iter().zip(costs).enumerate() {
        outcomes.push(model_outcome(
            config,
            (i, &models[i]),
            plan,
            &finished,
            costs,
        )?);
    }
    let cost_seconds = cost_clock.elapsed().as_secs_f64();
    let mut rep = Reproduction {
        config: config.clone(),
        models: outcomes,
        runs: jobs.len(),
        threads: rayon::current_num_threads(),
        sweep_seconds,
        cost_seconds,
        wall_seconds: 0.0,
    };
    rep.wall_seconds = clock.elapsed().as_secs_f64();
    let summary = out.join("summary.json");
    let json =
        serde_json::to_string_pretty(&rep).map_err(|e| io(&summary)(std::io::Error::other(e)))?;
    write_atomic(&summary, json.as_bytes()).map_err(io(&summary))?;
    let report = out.join("REPORT.md");
    let markdown =
        crate::report_md::render(&rep).map_err(|e| ReproduceError::Report(format!("{e:#}")))?;
    write_atomic(&report, markdown.as_bytes()).map_err(io(&report))?;
    out_dir.wrote([summary, report]);
    out_dir.write_manifest()?;
    Ok(rep)
}
