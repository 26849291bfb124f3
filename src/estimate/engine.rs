//! The batch driver: draws noise, runs an estimator over fixed-size chunks of lanes (shared
//! out to the pool's threads by `share.rs` when there are several), and averages.
//!
//! Chunks are [`CHUNK`] lanes whatever the number of threads, each lane's noise comes from
//! its own stream, and the mean is each chunk's sum (its lanes in lane order, by the thread
//! that made the chunk) summed in chunk order, so results are identical bit for bit with one
//! thread or many. (Summing all lanes in one pass after the batch, as before, read every
//! other thread's gradients across cores and left the adding to one thread: on two cores,
//! with batches of 1,000, temperature ran 1.75x one thread's rate that way and 1.89x this
//! way.) After the first batch of a given size nothing is
//! allocated. The noise of the next batch can be drawn ahead on another thread
//! ([`Engine::step_then_draw`]): it is a function of its key alone.
//!
//! A batch can also be computed part by part ([`Engine::evaluate_part`]): the lanes from a
//! whole chunk on, with the noise and chunk boundaries they have in the whole batch, so the
//! parts give the whole batch's samples bit for bit. [`Engine::sample_all`] does that for
//! a caller's `n` samples (Python's `gradients(n)`), looking at a cancel flag between parts.

use std::sync::atomic::{AtomicBool, Ordering};

mod all_samples;
pub use all_samples::AllSamples;
mod results;

use super::share::{Rows, for_each_row};
use super::{Context, Estimator, Problem, StreamKey};
use crate::aligned::F64Buf;
use crate::eval::{CHUNK, Values};
use crate::family::{FamilyError, FamilyState};

/// `f()` run on a thread of the current rayon pool (the global one when called from outside
/// any pool): where a loop of [`Engine::evaluate`] calls belongs.
///
/// Why: a parallel loop started from a thread outside the pool hands its work to the pool
/// and sleeps until a worker wakes it, at every batch; started on a worker, the caller takes
/// part in the loop and the other workers steal from it. With batches of 1,000 samples on
/// two cores (textmsg, `examples/engine_work`, whole process, best of five) that was 1.62x
/// against 1.79x of one thread's rate: on a VM a wake-up across cores costs tens of
/// microseconds.
pub fn on_a_worker<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() {
        f()
    } else {
        // `join` called outside the pool runs both closures on its workers.
        rayon::join(f, || ()).0
    }
}

/// An estimator bound to a problem, with the buffers for its batches.
#[derive(Debug)]
pub struct Engine {
    problem: Problem,
    estimator: Box<dyn Estimator>,
    state: FamilyState,
    /// The batch's gradient samples, values and crisp values, on cache-line boundaries
    /// (`crate::aligned`: the threads' chunks then share no line).
    grads: F64Buf,
    values: F64Buf,
    crisp: F64Buf,
    /// Each chunk's gradient summed over its lanes, by the thread that made the chunk: a
    /// row of [`Engine::sums_stride`] per chunk, so that no two chunks' sums share a line.
    sums: F64Buf,
    mean: Vec<f64>,
    batch: usize,
    want_crisp: bool,
    /// Noise drawn ahead (by [`Engine::step_then_draw`]) for this key and batch size.
    ahead: Option<(StreamKey, usize)>,
    ahead_s: Vec<f64>,
    spare_s: Vec<f64>,
    /// Rows a plate reads per batch (`--subsample`): `None` reads every row.
    subsample: Option<usize>,
    /// The last batch's subsample.
    drawn: Option<super::Subsample>,
    /// Each chunk draws its own rows ([`Engine::set_rows_per_chunk`]).
    rows_per_chunk: bool,
    /// The components `mean` holds non-zero values at, when the last batch was a sparse
    /// step's (`None`: possibly every component).
    mean_support: Option<Vec<u32>>,
    /// A dense subsampled step's (Score, RLOO, LYY18 over row latents) touched components:
    /// its gradient is zero at the undrawn rows' guides, which the optimiser then leaves.
    dense_touched: Option<Vec<u32>>,
    /// Plate rows read so far, summed over samples ([`Engine::rows_read`]).
    rows_read: std::sync::atomic::AtomicU64,
}

/// Drawing the next batch's noise beside the current one pays off from about this many
/// normals (a few microseconds of work, against the cost of handing it to another thread).
const AHEAD_MIN_NORMALS: usize = 2048;

/// The first non-finite quantity of a batch, for error messages.
#[derive(Clone, Debug, PartialEq)]
pub enum NonFinite {
    /// `f` itself (e.g. a log-density of `-inf`) at sample `lane`.
    Value {
        /// The sample.
        lane: usize,
        /// Its value.
        value: f64,
    },
    /// Component `component` of the mean gradient.
    Gradient {
        /// The component.
        component: usize,
        /// Its value.
        value: f64,
    },
}

/// What one evaluation computes: where its lanes start in the batch, how many, which values,
/// and when it stops. Each of [`Engine`]'s evaluations sets a few of these.
#[derive(Clone, Copy, Debug)]
struct Request<'c> {
    /// The batch's chunk the first lane is in (lanes from `first_chunk * CHUNK`).
    first_chunk: usize,
    /// How many lanes.
    batch: usize,
    /// Whether the crisp `f` is computed too.
    want_crisp: bool,
    /// How the `f` values are computed.
    wanted: Values,
    /// Read before each chunk: the evaluation stops once it has risen.
    cancel: Option<&'c AtomicBool>,
}

impl Request<'_> {
    /// `batch` lanes from the first, exact values, no crisp ones, no cancel.
    fn lanes(batch: usize) -> Request<'static> {
        Request {
            first_chunk: 0,
            batch,
            want_crisp: false,
            wanted: Values::Exact,
            cancel: None,
        }
    }
}

impl Engine {
    /// An engine; its chunks run on the problem's per-thread scratches.
    pub fn new(problem: Problem, estimator: Box<dyn Estimator>) -> Engine {
        Engine {
            state: problem.family().state(),
            mean: vec![0.0; problem.dim()],
            problem,
            estimator,
            grads: F64Buf::default(),
            values: F64Buf::default(),
            crisp: F64Buf::default(),
            sums: F64Buf::default(),
            batch: 0,
            want_crisp: false,
            ahead: None,
            ahead_s: Vec::new(),
            spare_s: Vec::new(),
            subsample: None,
            rows_per_chunk: false,
            drawn: None,
            mean_support: None,
            dense_touched: None,
            rows_read: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Whether a subsampled batch reads and moves only what it needs
    /// (`super::subsample::Sparse`): a step engine (one subsample for the batch) of a
    /// problem with row latents, under a pathwise estimator (DSGD, Fixed, Reparam; the
    /// others' per-latent loops read every latent).
    pub fn sparse_steps(&self) -> bool {
        self.subsample.is_some()
            && !self.rows_per_chunk
            && self.problem.has_row_latents()
            && matches!(
                self.estimator.kind(),
                super::EstimatorKind::Dsgd
                    | super::EstimatorKind::Fixed
                    | super::EstimatorKind::Reparam
            )
    }

    /// The components of `theta` the last batch's gradient can be non-zero at, when it read
    /// only what it needed (a sparse step, [`Engine::sparse_steps`]): the optimiser steps
    /// those alone ([`crate::optim::Optimizer::step_touched`]). `None`: every component.
    pub fn touched(&self) -> Option<&[u32]> {
        self.drawn
            .as_ref()
            .and_then(|s| s.sparse.as_ref())
            .map(|sp| &sp.components[..])
            .or(self.dense_touched.as_deref())
    }

    /// Each batch's plates read `m` rows drawn afresh (the same for every sample of the
    /// batch, a function of its key), their sums scaled by `n / m` ([`super::Subsample`]):
    /// an unbiased gradient of the full-data objective. `None` reads every row.
    pub fn set_subsample(&mut self, m: Option<usize>) {
        self.subsample = m.filter(|&m| m > 0);
    }

    /// With a subsample, each chunk of [`CHUNK`] samples reads rows of its own, drawn
    /// independently (stream = the chunk's index in the batch), instead of one draw for the
    /// whole batch: the chunks' means are then independent estimates of the full-data value,
    /// so a standard error over chunks includes the rows' sampling (the measurements).
    pub fn set_rows_per_chunk(&mut self, yes: bool) {
        self.rows_per_chunk = yes;
    }

    /// Whether each chunk reads rows of its own (a subsampled measurement engine).
    pub fn rows_per_chunk(&self) -> bool {
        self.rows_per_chunk && self.subsample.is_some() && self.problem.has_plates()
    }

    /// The subsample of the last batch (`None` when every row was read, or when each chunk
    /// drew its own).
    pub fn subsample(&self) -> Option<&super::Subsample> {
        self.drawn.as_ref()
    }

    /// The plate rows the engine's batches have read, summed over their samples: a measure
    /// of work that, under a subsample, does not grow with the data.
    pub fn rows_read(&self) -> u64 {
        self.rows_read.load(Ordering::Relaxed)
    }

    /// The compiled model the engine samples.
    pub fn problem(&self) -> &Problem {
        &self.problem
    }

    /// The estimator the engine runs.
    pub fn estimator(&self) -> &dyn Estimator {
        self.estimator.as_ref()
    }

    /// Replaces the estimator (for a schedule chosen while the run goes, `--eta auto`); the
    /// buffers stay, and so does noise drawn ahead, which does not depend on the estimator.
    pub fn set_estimator(&mut self, estimator: Box<dyn Estimator>) {
        self.estimator = estimator;
    }

    /// The family evaluated at the last `theta`.
    pub fn family_state(&self) -> &FamilyState {
        &self.state
    }

    /// Draws `batch` samples of `key`'s streams at `theta` and computes their gradient
    /// samples and `f` values (and the crisp `f` if `want_crisp`). The estimator's semantics
    /// is the one of `key.iteration`.
    pub fn evaluate(
        &mut self,
        theta: &[f64],
        key: StreamKey,
        batch: usize,
        want_crisp: bool,
    ) -> Result<(), FamilyError> {
        let request = Request {
            want_crisp,
            ..Request::lanes(batch)
        };
        self.evaluate_with(theta, key, request).map(|_| ())
    }

    /// [`Engine::evaluate`] that stops early when `cancel` rises, checked before each chunk:
    /// `Ok(false)` when it stopped (the batch's results are then incomplete), `Ok(true)` with
    /// the bits of [`Engine::evaluate`] otherwise. A measurement over a plate of many rows
    /// takes seconds; this keeps Ctrl-C prompt there.
    pub fn evaluate_or_cancel(
        &mut self,
        theta: &[f64],
        key: StreamKey,
        batch: usize,
        want_crisp: bool,
        cancel: &AtomicBool,
    ) -> Result<bool, FamilyError> {
        let request = Request {
            want_crisp,
            cancel: Some(cancel),
            ..Request::lanes(batch)
        };
        self.evaluate_with(theta, key, request)
    }

    /// Lanes `first_chunk * CHUNK .. first_chunk * CHUNK + batch` of a batch of `key`: what
    /// [`Engine::evaluate`] of a batch reaching past them computes there, bit for bit (each
    /// lane's noise is its own, and the part's chunks are the whole batch's, so estimators
    /// that share within a chunk, RLOO, share the same lanes). [`Engine::sample_gradient`],
    /// [`Engine::values`] and the others then give the part's lanes, from 0; the mean
    /// gradient is the part's.
    pub fn evaluate_part(
        &mut self,
        theta: &[f64],
        key: StreamKey,
        first_chunk: usize,
        batch: usize,
        want_crisp: bool,
    ) -> Result<(), FamilyError> {
        let request = Request {
            first_chunk,
            want_crisp,
            ..Request::lanes(batch)
        };
        self.evaluate_with(theta, key, request).map(|_| ())
    }

    /// An optimisation step's [`Engine::evaluate`]: the same gradient samples, bit for bit,
    /// with `f` values only checked ([`Values::Checked`]: finite exactly where `f` is, which
    /// is all a step reads them for), and no crisp values. Logarithms (`ln`, `log1p`,
    /// `softplus`) that only `f` reads are not computed (a third of a textmsg sample).
    pub fn step(&mut self, theta: &[f64], key: StreamKey, batch: usize) -> Result<(), FamilyError> {
        let request = Request {
            wanted: Values::Checked,
            ..Request::lanes(batch)
        };
        self.evaluate_with(theta, key, request).map(|_| ())
    }

    /// The evaluation of `request` at `theta` with `key`'s streams: `Ok(false)` when its
    /// cancel flag rose before the last chunk.
    fn evaluate_with(
        &mut self,
        theta: &[f64],
        key: StreamKey,
        request: Request<'_>,
    ) -> Result<bool, FamilyError> {
        let Request {
            first_chunk,
            batch,
            want_crisp,
            wanted,
            cancel,
        } = request;
        let iteration = key.iteration;
        let stopped = || cancel.is_some_and(|c| c.load(Ordering::Relaxed));
        let per_chunk = self.rows_per_chunk.then_some(self.subsample).flatten();
        let sparse = match self.subsample {
            Some(m) if self.sparse_steps() => {
                self.problem
                    .sparse_subsample(key, m, &mut self.state, theta)?
            }
            _ => None,
        };
        self.dense_touched = None;
        if sparse.is_some() {
            self.drawn = sparse;
        } else {
            self.state.update(self.problem.family(), theta)?;
            self.drawn = match per_chunk {
                Some(_) => None,
                None => self
                    .subsample
                    .and_then(|m| self.problem.subsample(key, m, &self.state)),
            };
            if let Some(sub) = &self.drawn {
                self.dense_touched = self.problem.touched_by(sub);
            }
        }
        let touched: Option<&[u32]> = self
            .drawn
            .as_ref()
            .and_then(|s| s.sparse.as_ref())
            .map(|sp| &sp.components[..]);
        let read: Option<&[u32]> = self
            .drawn
            .as_ref()
            .and_then(|s| s.sparse.as_ref())
            .map(|sp| &sp.latents[..]);
        let d = self.problem.dim();
        self.batch = batch;
        self.grads.resize(batch * d);
        self.values.resize(batch);
        self.crisp.resize(batch);
        let stride = self.sums_stride();
        self.want_crisp = want_crisp;
        let chunks = batch.div_ceil(CHUNK);
        self.sums.resize(chunks * stride);
        // Noise drawn ahead for this batch becomes the one chunk's noise by a swap of
        // buffers (no copy: for a large program that is megabytes), the chunk's old buffer
        // the spare for the next draw ahead.
        let mut ahead = match self.ahead.take() {
            Some((k, b))
                if k == key && b == batch && chunks == 1 && first_chunk == 0 && read.is_none() =>
            {
                Some(std::mem::take(&mut self.ahead_s))
            }
            _ => None,
        };
        let (problem, estimator, state) = (&self.problem, self.estimator.as_ref(), &self.state);
        let batch_subsample = self.drawn.as_ref();
        let semantics = estimator.semantics(iteration);
        let crisp_differs = semantics != crate::ir::Semantics::Crisp;
        let rows_read = &self.rows_read;
        let run = |c: usize,
                   grads: &mut [f64],
                   values: &mut [f64],
                   crisp: &mut [f64],
                   sums: &mut [f64],
                   ahead: Option<&mut Vec<f64>>| {
            if stopped() {
                return;
            }
            let own =
                per_chunk.and_then(|m| problem.subsample_stream(key, m, state, first_chunk + c));
            let subsample = own.as_ref().or(batch_subsample);
            let rows: usize = (problem.plates.iter().enumerate())
                .map(
                    |(p, pr)| match subsample.and_then(|s| s.plates[p].as_ref()) {
                        Some((drawn, _)) => drawn.len(),
                        None => pr.plate.rows,
                    },
                )
                .sum();
            problem.with_scratch(|sc| {
                rows_read.fetch_add((rows * values.len()) as u64, Ordering::Relaxed);
                let first = (first_chunk + c) * CHUNK;
                let w = values.len();
                match ahead {
                    Some(s) => {
                        std::mem::swap(&mut sc.s, s);
                        sc.w = w;
                    }
                    None => match read {
                        Some(latents) => problem.draw_latents(key, first, w, sc, latents),
                        None => problem.draw(key, first, w, sc),
                    },
                }
                let cx = Context {
                    problem,
                    state,
                    theta,
                    iteration,
                    semantics,
                    key,
                    first,
                    values: wanted,
                    subsample,
                };
                estimator.chunk(&cx, sc, grads, values);
                // Each component's lanes summed in lane order: one dependent chain of additions
                // per component, the chains of different components overlapping in the CPU.
                if let Some(touched) = touched {
                    for &p in touched {
                        let p = p as usize;
                        sums[p] = grads[p * w..(p + 1) * w].iter().fold(0.0, |acc, g| acc + g);
                    }
                } else if w == CHUNK {
                    // A full chunk's lanes as an array: the fold becomes straight-line code.
                    for (m, lanes) in sums.iter_mut().zip(grads.as_chunks::<CHUNK>().0) {
                        *m = lanes.iter().fold(0.0, |acc, g| acc + g);
                    }
                } else {
                    for (m, lanes) in sums.iter_mut().zip(grads.chunks_exact(w)) {
                        *m = lanes.iter().fold(0.0, |acc, g| acc + g);
                    }
                }
                if want_crisp {
                    if crisp_differs {
                        problem.crisp_values_of(state, theta, sc, crisp, subsample);
                    } else {
                        crisp.copy_from_slice(values);
                    }
                }
            })
        };
        if chunks <= 1 || d == 0 || rayon::current_num_threads() <= 1 {
            for c in 0..chunks {
                let r = c * CHUNK..((c + 1) * CHUNK).min(batch);
                run(
                    c,
                    &mut self.grads[r.start * d..r.end * d],
                    &mut self.values[r.clone()],
                    &mut self.crisp[r],
                    &mut self.sums[c * stride..c * stride + d],
                    ahead.as_mut(),
                );
            }
        } else {
            let rows = Rows::new(
                [
                    &mut self.grads,
                    &mut self.values,
                    &mut self.crisp,
                    &mut self.sums,
                ],
                [CHUNK * d, CHUNK, CHUNK, stride],
                chunks,
            );
            for_each_row(rows, |c, [g, v, cr, sums]| {
                run(c, g, v, cr, &mut sums[..d], None)
            });
        }
        // The chunks' sums added in chunk order: the mean's bits do not depend on which
        // thread made which chunk. (For one chunk this is the lanes' sum in lane order.)
        let mut mean = std::mem::take(&mut self.mean);
        let inv = if batch == 0 { 0.0 } else { 1.0 / batch as f64 };
        if let Some(touched) = touched {
            // A sparse step: the mean is zero but at the touched components (the same sums
            // in the same order at those).
            match self.mean_support.take() {
                Some(before) => before.iter().for_each(|&p| mean[p as usize] = 0.0),
                None => mean.fill(0.0),
            }
            for &p in touched {
                let p = p as usize;
                let mut m = 0.0;
                for row in self.sums.chunks_exact(stride) {
                    m += row[p];
                }
                mean[p] = m * inv;
            }
            self.mean_support = Some(touched.to_vec());
        } else {
            mean.fill(0.0);
            for row in self.sums.chunks_exact(stride) {
                for (m, s) in mean.iter_mut().zip(row) {
                    *m += s;
                }
            }
            for m in &mut mean {
                *m *= inv;
            }
            self.mean_support = None;
        }
        self.mean = mean;
        if let Some(s) = ahead {
            self.spare_s = s;
        }
        Ok(!stopped())
    }

    /// [`Engine::step`], while another thread (when the pool has one) draws the noise of
    /// `next` for a following call with the same batch size: the noise does not depend on
    /// `theta`, so the results are those of drawing it then. Worth it for one chunk of many
    /// latents (the optimisation steps of a model like `cheating`).
    pub fn step_then_draw(
        &mut self,
        theta: &[f64],
        key: StreamKey,
        batch: usize,
        next: StreamKey,
    ) -> Result<(), FamilyError> {
        let n = self.problem.family().latent_count();
        if batch > CHUNK
            || n * batch < AHEAD_MIN_NORMALS
            || rayon::current_num_threads() <= 1
            || self.sparse_steps()
        {
            return self.step(theta, key, batch);
        }
        // As long as a scratch's own noise buffer, which it replaces (see `evaluate`).
        let mut buf = std::mem::take(&mut self.spare_s);
        buf.resize(n * CHUNK, 0.0);
        let problem = self.problem.clone();
        let (result, ()) = rayon::join(
            || self.step(theta, key, batch),
            || problem.draw_noise(next, 0, batch, &mut buf[..n * batch]),
        );
        self.ahead_s = buf;
        self.ahead = Some((next, batch));
        result
    }
}

#[cfg(test)]
mod tests;
