//! Many runs at once: a list of (model, settings) jobs executed in parallel across runs.
//!
//! Each run is a pure function of its model and settings (seed included), so executing the
//! jobs with rayon gives the same reports as executing them one after another; only the
//! order in which they finish (and `seconds`) differs. Results come back in job order.
//! Holds no reporting or file code.

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use super::report::RunReport;
use super::run::{RunConfig, RunError, run};
use crate::ir::Model;

/// One run of a sweep: which model (an index into the sweep's model list) with which settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    pub model: usize,
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
pub fn run_parallel_each(
    models: &[Model],
    jobs: &[Job],
    progress: &(dyn Fn(usize, usize) + Sync),
    finished: &(dyn Fn(usize, &Result<RunReport, RunError>) + Sync),
) -> Vec<Result<RunReport, RunError>> {
    let done = AtomicUsize::new(0);
    let total = jobs.len();
    jobs.par_iter()
        .enumerate()
        .with_max_len(1)
        .map(|(i, job)| {
            let r = run_job(models, job);
            finished(i, &r);
            progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
            r
        })
        .collect()
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
