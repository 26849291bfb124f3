//! Many runs at once: a list of (model, settings) jobs executed in parallel across runs.
//!
//! Each run is a pure function of its model and settings (seed included), so executing the
//! jobs with rayon gives the same reports as executing them one after another; only the
//! order in which they finish (and `seconds`) differs. Results come back in job order.
//! Holds no reporting or file code.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::report::RunReport;
use super::run::{RunConfig, RunError, run};
use crate::estimate::EstimatorKind;
use crate::ir::Model;

/// One run of a sweep: which model (an index into the sweep's model list) with which settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// The model, as an index into the sweep's model list.
    pub model: usize,
    /// The run's settings.
    pub config: RunConfig,
}

/// Runs every job, in parallel across jobs on rayon's current pool. `progress(done, total)` is
/// called (from worker threads) each time a run ends.
pub fn run_parallel(
    models: &[Model],
    jobs: &[Job],
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Vec<Result<RunReport, RunError>> {
    run_parallel_each(models, jobs, progress, &|_, _| {})
}

/// [`run_parallel`], also handing each result to `finished(job index, result)` as soon as
/// its run ends (from the worker thread, before `progress`), so that a caller can write a
/// run's files while the other runs go on.
///
/// The workers take the jobs longest first (by `expected_work`) from one shared queue, so
/// that the sweep ends on short runs: split in halves the way a parallel iterator splits,
/// the reproduction's heaviest runs (`cheating`'s, in the middle of its job list) came
/// last, and one core idled while the other finished them.
pub fn run_parallel_each(
    models: &[Model],
    jobs: &[Job],
    progress: &(dyn Fn(usize, usize) + Sync),
    finished: &(dyn Fn(usize, &Result<RunReport, RunError>) + Sync),
) -> Vec<Result<RunReport, RunError>> {
    let total = jobs.len();
    let work: Vec<f64> = jobs.iter().map(|j| expected_work(models, j)).collect();
    let mut order: Vec<usize> = (0..total).collect();
    // Stable: equal estimates keep the job order.
    order.sort_by(|&a, &b| work[b].total_cmp(&work[a]));
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<Result<RunReport, RunError>>>> =
        (0..total).map(|_| Mutex::new(None)).collect();
    let worker = || {
        while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
            let r = run_job(models, &jobs[i]);
            finished(i, &r);
            progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
            *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
        }
    };
    rayon::scope(|s| {
        for _ in 1..rayon::current_num_threads().min(total) {
            s.spawn(|_| worker());
        }
        worker();
    });
    results
        .into_iter()
        .map(|r| {
            r.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .unwrap_or_else(|| Err(RunError::Config("the run never started".into())))
        })
        .collect()
}

/// A rough measure of a job's work, only to order the jobs: the model's node count times
/// the samples its steps, measurements and precise measurement evaluate, weighted by what a
/// sample costs each estimator (no reverse sweep for Score and RLOO; `--eta auto`'s race
/// takes about 1.8 runs' steps).
fn expected_work(models: &[Model], job: &Job) -> f64 {
    let nodes = models.get(job.model).map_or(1, |m| m.program.node_count()) as f64;
    let c = &job.config;
    let per_step_sample = match c.estimator {
        EstimatorKind::Score | EstimatorKind::Rloo => 0.5,
        EstimatorKind::Reparam => 0.6,
        _ => 1.0,
    } * if c.eta_auto { 1.8 } else { 1.0 };
    let steps = c.iterations as f64 * c.batch as f64 * per_step_sample;
    let measurements = (c.iterations / c.log_every.max(1) + 1) as f64 * c.log_samples as f64;
    let precise = c.precise.map_or(0.0, |p| 0.3 * p.min_samples as f64);
    nodes * (steps + measurements + precise)
}

/// Runs every job one after another, in order (the reference for [`run_parallel`]).
pub fn run_serial(
    models: &[Model],
    jobs: &[Job],
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Vec<Result<RunReport, RunError>> {
    let total = jobs.len();
    jobs.iter()
        .enumerate()
        .map(|(i, job)| {
            let r = run_job(models, job);
            progress(i + 1, total);
            r
        })
        .collect()
}

fn run_job(models: &[Model], job: &Job) -> Result<RunReport, RunError> {
    let model = models
        .get(job.model)
        .ok_or_else(|| RunError::Config(format!("no model number {}", job.model)))?;
    run(model, &job.config, &mut [])
}
