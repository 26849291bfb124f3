//! A model made ready for estimation: its family, the compiled objective and its analysis,
//! plus the per-thread scratch memory and the pathwise gradient assembly all estimators share.

use std::ops::Deref;
use std::sync::{Arc, Mutex};

mod pathwise;
mod values;

use super::plates::{Outer, PlateRun, PlateScratch, Target};
use super::plates_lyy18::BoundaryScratch;
use super::rng::{Channel, StreamKey};
use super::subsample::{SharedPart, Subsample};
use crate::eval::{BatchGradient, CHUNK, ForcedScratch, Tape, Values, Workspace};
use crate::family::{Family, FamilyError, FamilyState};
use crate::ir::{
    Analysis, GuardScaled, Mode, Model, Plate, PlateFactors, Program, scale_guards,
    scale_plate_guards,
};
use pathwise::PathwisePlan;

/// Scratch slots per problem: one per thread of the current pool, and at least one per core.
fn scratch_slots() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    rayon::current_num_threads().max(cores).max(1)
}

/// A model compiled for estimation. `f(theta, z)` is output 0 of the program plus, in
/// variational mode, `-log q_theta(z)` of the non-fixed latents (the ELBO integrand).
///
/// Cloning it is cheap: clones share one [`ProblemData`] (a run's step and measurement
/// engines, a race's candidates), which for a program of a million nodes is hundreds of
/// megabytes of program, family and analysis.
#[derive(Clone, Debug)]
pub struct Problem(Arc<ProblemData>);

impl Deref for Problem {
    type Target = ProblemData;

    fn deref(&self) -> &ProblemData {
        &self.0
    }
}

/// What a [`Problem`] holds.
#[derive(Debug)]
pub struct ProblemData {
    name: String,
    mode: Mode,
    objective_sign: f64,
    program: std::sync::Arc<Program>,
    pub(crate) family: Family,
    pub(crate) tape: Tape,
    pub(crate) analysis: Analysis,
    /// If-statements the objective evaluates: the outer program's, and each plate's body's
    /// once per row.
    if_statements: usize,
    /// With guards smoothed relative to their spread ([`Problem::relative`]): the factors
    /// the tape's program reads after the model's parameters.
    guard_scaled: Option<GuardScaled>,
    /// Whether any guard, of the program or of a plate's body, is smoothed relative to its
    /// spread.
    relative: bool,
    /// The latents some parameter moves ([`Family::moved_latents`]): the rows of the
    /// tape's gradient and the latents the per-latent loops visit. A fixed latent has no
    /// parameters, so its gradient is never read and its Jacobian is empty.
    pub(crate) moved: Vec<u32>,
    /// The row of `moved` of each latent (`u32::MAX` for a fixed one).
    pub(crate) moved_row: Vec<u32>,
    /// The model's plates, each with its body's tape.
    pub(crate) plates: Vec<PlateRun>,
    /// The pathwise gradient's assembly plan ([`PathwisePlan`]).
    pathwise: PathwisePlan,
    /// With row latents in some plate: the latents and components every subsampled step
    /// reads ([`super::subsample::Sparse`]).
    shared: Option<SharedPart>,
    /// One scratch per thread index, made at that thread's first chunk and shared by every
    /// engine of the problem ([`ProblemData::with_scratch`]).
    scratches: Vec<Mutex<Option<Scratch>>>,
}

impl Problem {
    /// Compiles `model` for the estimators.
    pub fn new(model: &Model) -> Result<Problem, FamilyError> {
        Problem::build(model, None, None)
    }

    /// The problem whose smoothed sweeps read each guard linear in the latents in units of
    /// its spread under the guide (`ir::scale_guards`): DSGD's relative smoothing. Its crisp
    /// values are those of [`Problem::new`]; only the estimators that run the tape through
    /// `ProblemData::sweep_gradient` and [`ProblemData::crisp_values`] may use it.
    pub fn relative(model: &Model) -> Result<Problem, FamilyError> {
        let plates: Vec<(Plate, PlateFactors)> = model
            .plates
            .iter()
            .map(|p| scale_plate_guards(p).unwrap_or_else(|| (p.clone(), Vec::new())))
            .collect();
        Problem::build(model, scale_guards(&model.program), Some(plates))
    }

    /// The problem of `model`, its tape reading `guard_scaled`'s program when given, its
    /// plates run from `plates` (with their guard factors) when given, else the model's.
    fn build(
        model: &Model,
        guard_scaled: Option<GuardScaled>,
        plates: Option<Vec<(Plate, PlateFactors)>>,
    ) -> Result<Problem, FamilyError> {
        let plates = plates.unwrap_or_else(|| {
            model
                .plates
                .iter()
                .map(|p| (p.clone(), Vec::new()))
                .collect()
        });
        let relative = guard_scaled.is_some() || plates.iter().any(|(_, f)| !f.is_empty());
        let family = Family::new(model)?;
        let wanted = family.gradient_wanted();
        let tape_program = guard_scaled
            .as_ref()
            .map_or(&*model.program, |g| &g.program);
        let tape = Tape::compile_active(tape_program, 0, Some(&wanted));
        let moved = family.moved_latents();
        let mut moved_row = vec![u32::MAX; family.latent_count()];
        for (r, &i) in moved.iter().enumerate() {
            moved_row[i as usize] = r as u32;
        }
        // The outer rows the outer sweep writes at every call; each plate overwrites the
        // others the first time it writes them.
        let m = family.model_param_count();
        let mut written: std::collections::HashSet<Target> = (0..m)
            .filter(|&k| tape.writes_param_gradient(k))
            .map(Target::Param)
            .chain(
                moved
                    .iter()
                    .enumerate()
                    .filter(|&(_, &i)| tape.writes_latent_gradient(i as usize))
                    .map(|(r, _)| Target::Latent(r)),
            )
            .collect();
        let plates: Vec<PlateRun> = plates
            .into_iter()
            .map(|(p, factors)| PlateRun::new(&p, &wanted, &moved_row, &mut written, factors))
            .collect();
        let shared = plates
            .iter()
            .any(|p| !p.plate.row_latents.is_empty())
            .then(|| SharedPart::new(&family, &plates));
        Ok(Problem(Arc::new(ProblemData {
            shared,
            moved_row,
            plates,
            name: model.name.clone(),
            mode: model.mode,
            objective_sign: model.objective_sign(),
            program: model.program.clone(),
            // Fixed latents have no parameters: their gradient is never read, so the reverse
            // sweep skips what depends on them alone.
            tape,
            guard_scaled,
            relative,
            analysis: super::analysis::analysis_with_plates(model),
            if_statements: model.program.if_count()
                + model
                    .plates
                    .iter()
                    .map(|p| p.rows * p.body.if_count())
                    .sum::<usize>(),
            moved: family.moved_latents(),
            pathwise: PathwisePlan::new(&family, &family.moved_latents()),
            family,
            scratches: (0..scratch_slots()).map(|_| Mutex::new(None)).collect(),
        })))
    }
}

impl ProblemData {
    /// The model's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the model is variational or an objective.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// `-1` when the program said `minimize` (the maximised `f` is then `-E`).
    pub fn objective_sign(&self) -> f64 {
        self.objective_sign
    }

    /// The compiled program.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The guide family.
    pub fn family(&self) -> &Family {
        &self.family
    }

    /// The analysis of the outer program's if-statements, then of each plate's body's (once
    /// per plate, with the verdicts the unrolled loop's rows get: see `estimate::analysis`);
    /// for the count of if-statements per row, [`ProblemData::if_statements`].
    pub fn analysis(&self) -> &Analysis {
        &self.analysis
    }

    /// The if-statements the objective evaluates, a plate's body's once per row.
    pub fn if_statements(&self) -> usize {
        self.if_statements
    }

    /// The dimension of `theta`.
    pub fn dim(&self) -> usize {
        self.family.dim()
    }

    /// Why `theta` is not a point of this problem's family (its length is not the family's
    /// dimension), naming the components; `Ok` when it is one.
    pub(crate) fn check_theta(&self, theta: &[f64]) -> Result<(), String> {
        let d = self.dim();
        if theta.len() != d {
            return Err(format!(
                "theta has {} entries; this model's theta has {d} ({})",
                theta.len(),
                self.family.names().join(", ")
            ));
        }
        Ok(())
    }

    /// Whether the smoothed sweeps read guards relative to their spread ([`Problem::relative`]).
    pub fn relative_guards(&self) -> bool {
        self.relative
    }

    /// The tape's parameters: the model's, then (relative smoothing) each scaled guard's
    /// factor from the guide's scales in `state`, written into `buf`. Every sweep of the
    /// tape takes its parameters from here.
    pub(crate) fn tape_params<'a>(
        &self,
        state: &FamilyState,
        params: &'a [f64],
        buf: &'a mut Vec<f64>,
    ) -> &'a [f64] {
        match &self.guard_scaled {
            None => params,
            Some(g) => {
                buf.clear();
                buf.extend_from_slice(params);
                g.factors(|i| state.scale(i), buf);
                buf
            }
        }
    }

    /// `f` run with the scratch of the calling thread (by its index in its rayon pool; 0
    /// outside any pool), made at its first use.
    ///
    /// Why shared by the problem's engines and not one set per engine: a scratch is the
    /// program's values for a chunk, megabytes for a large program (7.7 MB for the
    /// 10,000-student survey), and a run has a step engine and a measurement engine, a
    /// race several candidates, `dsgd bench` and `dsgd advise` one engine per estimator.
    /// A thread runs one chunk at a time and a chunk calls no other engine, so a thread never
    /// waits for its own slot; two threads share a slot only in a pool of more threads than
    /// the machine has cores, which then wait for each other anyway. What a scratch holds
    /// between chunks changes no result (which thread runs which chunk never does).
    pub(crate) fn with_scratch<R>(&self, f: impl FnOnce(&mut Scratch) -> R) -> R {
        let slot = rayon::current_thread_index().unwrap_or(0) % self.scratches.len();
        let mut guard = self.scratches[slot]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        f(guard.get_or_insert_with(|| self.scratch()))
    }

    /// How many threads' scratches have been made (for tests).
    #[cfg(test)]
    pub(crate) fn scratches_made(&self) -> usize {
        self.scratches
            .iter()
            .filter(|s| s.lock().is_ok_and(|s| s.is_some()))
            .count()
    }

    /// Scratch memory for one thread.
    pub fn scratch(&self) -> Scratch {
        let n = self.family.latent_count();
        Scratch {
            ws: self.tape.workspace(),
            forcing: self.tape.forced_scratch(),
            grad: BatchGradient::for_latents(&self.tape, CHUNK, self.moved.clone()),
            s: vec![0.0; n * CHUNK],
            forced: Vec::with_capacity(2 * CHUNK),
            moves: Vec::with_capacity(CHUNK),
            lanes: Vec::with_capacity(CHUNK),
            out: vec![0.0; 2 * CHUNK],
            plates: self.plates.iter().map(PlateRun::scratch).collect(),
            boundary: self.plates.iter().map(BoundaryScratch::new).collect(),
            params: Vec::new(),
            sparse_s: Vec::new(),
            w: 0,
        }
    }

    /// Draws the noise of lanes `first..first + w` into `scratch`; the sweeps form the
    /// latents `z = phi_theta(s)` from it as they load them.
    pub fn draw(&self, key: StreamKey, first: usize, w: usize, scratch: &mut Scratch) {
        self.draw_noise(key, first, w, &mut scratch.s);
        scratch.w = w;
    }

    /// [`ProblemData::draw`] for a step that reads only `latents` (increasing): the `j`-th
    /// normal of each lane's stream goes to the `j`-th of them; the other latents' rows of
    /// `scratch.s` are left as they were (nothing reads them).
    pub(crate) fn draw_latents(
        &self,
        key: StreamKey,
        first: usize,
        w: usize,
        scratch: &mut Scratch,
        latents: &[u32],
    ) {
        let a = latents.len();
        let buf = &mut scratch.sparse_s;
        buf.resize(a * w, 0.0);
        key.rng(Channel::Noise).fill_lanes(first, w, a, buf);
        for (j, &i) in latents.iter().enumerate() {
            let i = i as usize;
            scratch.s[i * w..(i + 1) * w].copy_from_slice(&buf[j * w..(j + 1) * w]);
        }
        scratch.w = w;
    }

    /// The noise `s` of lanes `first..first + w` (latent-major, `s[i * w + l]`): it does not
    /// depend on `theta`, so it can be drawn ahead.
    pub(crate) fn draw_noise(&self, key: StreamKey, first: usize, w: usize, s: &mut [f64]) {
        let n = self.family.latent_count();
        key.rng(Channel::Noise).fill_lanes(first, w, n, s);
    }

    /// The values (exact or checked: see [`Values`]) and per-sample gradients of the program
    /// at the drawn lanes, under `semantics`, into `scratch.grad` (rows for the moved latents
    /// only).
    pub(crate) fn sweep_gradient(
        &self,
        state: &FamilyState,
        theta: &[f64],
        semantics: crate::ir::Semantics,
        scratch: &mut Scratch,
        values: Values,
        sub: Option<&Subsample>,
    ) {
        self.sweep_gradient_parts(state, theta, semantics, scratch, [values; 2], sub);
    }

    /// [`ProblemData::sweep_gradient`] with the outer program's values and the plates' each
    /// exact or checked (`values[0]`, `values[1]`): LYY18's forced sweeps reuse the outer
    /// sweep's exact values, never a plate's.
    pub(crate) fn sweep_gradient_parts(
        &self,
        state: &FamilyState,
        theta: &[f64],
        semantics: crate::ir::Semantics,
        scratch: &mut Scratch,
        [values, plate_values]: [Values; 2],
        sub: Option<&Subsample>,
    ) {
        let w = scratch.w;
        let m = self.family.model_param_count();
        let n = self.family.latent_count();
        scratch.grad.resize(&self.tape, w);
        let params = self.tape_params(state, &theta[..m], &mut scratch.params);
        self.tape.gradient_latents(
            &mut scratch.ws,
            semantics,
            params,
            state.latents(&scratch.s[..n * w]),
            &mut scratch.grad,
            values,
        );
        let mut o = self.outer(state, &theta[..m], &scratch.s[..n * w], w);
        // A sparse step reads no undrawn row's gradient: its rows need no zeros.
        o.zero_undrawn = Subsample::sparse(sub).is_none();
        for (p, (plate, ps)) in self.plates.iter().zip(&mut scratch.plates).enumerate() {
            let rows = Subsample::rows(sub, p);
            plate.add_gradient(ps, &o, semantics, plate_values, rows, &mut scratch.grad);
        }
    }

    /// What a plate reads of the outer program at the drawn lanes: `theta` (the model's
    /// parameters), the family's state and the chunk's noise `s` of `w` lanes.
    fn outer<'a>(
        &'a self,
        state: &'a FamilyState,
        theta: &'a [f64],
        s: &'a [f64],
        w: usize,
    ) -> Outer<'a> {
        Outer {
            theta,
            state,
            s,
            w,
            moved_row: &self.moved_row,
            zero_undrawn: true,
        }
    }

    /// The values of the program (output 0 plus the plates' sums) at the drawn lanes under
    /// `semantics`, by forward sweeps only, into `out[..w]`.
    pub(crate) fn forward_values(
        &self,
        state: &FamilyState,
        theta: &[f64],
        semantics: crate::ir::Semantics,
        scratch: &mut Scratch,
        out: &mut [f64],
        sub: Option<&Subsample>,
    ) {
        let w = scratch.w;
        let m = self.family.model_param_count();
        let n = self.family.latent_count();
        let params = self.tape_params(state, &theta[..m], &mut scratch.params);
        self.tape.forward_latents(
            &mut scratch.ws,
            semantics,
            params,
            state.latents(&scratch.s[..n * w]),
            &mut out[..w],
        );
        let o = self.outer(state, &theta[..m], &scratch.s[..n * w], w);
        for (p, (plate, ps)) in self.plates.iter().zip(&mut scratch.plates).enumerate() {
            plate.add_values(ps, &o, semantics, Subsample::rows(sub, p), out);
        }
    }

    /// The model's plates.
    pub fn plates(&self) -> impl Iterator<Item = &crate::ir::Plate> {
        self.plates.iter().map(|p| &p.plate)
    }

    /// Whether the model has plates.
    pub fn has_plates(&self) -> bool {
        !self.plates.is_empty()
    }

    /// Whether some plate has latents of its own per row (a subsampled step then reads and
    /// moves only the drawn rows': `super::subsample::Sparse`).
    pub fn has_row_latents(&self) -> bool {
        self.shared.is_some()
    }

    /// The components of `theta` every subsampled step touches (the model's parameters and
    /// the guides of the latents outside the plates' rows), when some plate has row latents.
    pub fn shared_components(&self) -> Option<&[u32]> {
        self.shared.as_ref().map(|s| &s.components[..])
    }

    /// The components of `theta` a subsampled batch's gradient can be non-zero at (the
    /// shared ones and the drawn rows' guides), when some plate has row latents.
    pub(crate) fn touched_by(&self, sub: &Subsample) -> Option<Vec<u32>> {
        let shared = self.shared.as_ref()?;
        let set = super::subsample::sparse_set(
            &self.family,
            &self.plates,
            shared,
            &sub.plates,
            &self.moved_row,
        );
        Some(set.components)
    }

    /// A step's subsample of `m` rows a plate for iteration `key` that reads only what it
    /// needs ([`super::subsample::Sparse`]), the family evaluated at `theta` for the latents
    /// it reads (into `state`); `None` when no plate has more than `m` rows (then nothing
    /// of `state` was updated). Only for problems with row latents.
    pub(crate) fn sparse_subsample(
        &self,
        key: StreamKey,
        m: usize,
        state: &mut FamilyState,
        theta: &[f64],
    ) -> Result<Option<Subsample>, FamilyError> {
        let Some(shared) = &self.shared else {
            return Ok(None);
        };
        let Some(drawn) = super::subsample::drawn_rows(&self.plates, key, m, 0) else {
            return Ok(None);
        };
        super::subsample::sparse_subsample(
            &self.family,
            &self.plates,
            shared,
            drawn,
            &self.moved_row,
            state,
            theta,
        )
        .map(Some)
    }

    /// The subsample of `m` rows a plate of iteration `key` reads, at the family's current
    /// state (`None` when no plate has more than `m` rows).
    pub fn subsample(&self, key: StreamKey, m: usize, state: &FamilyState) -> Option<Subsample> {
        if self.plates.is_empty() {
            return None;
        }
        self.subsample_stream(key, m, state, 0)
    }

    /// [`ProblemData::subsample`] from stream `stream` of the key's rows: independent rows
    /// for each stream (a measurement draws one per chunk; a step's is stream 0).
    pub fn subsample_stream(
        &self,
        key: StreamKey,
        m: usize,
        state: &FamilyState,
        stream: usize,
    ) -> Option<Subsample> {
        if self.plates.is_empty() {
            return None;
        }
        super::subsample::subsample(&self.plates, &self.family.in_entropy, key, m, state, stream)
    }
}

/// One thread's scratch memory: the tape workspace, per-sample tape gradients (rows for the
/// moved latents only), the noise `s` of up to [`CHUNK`] lanes (latent-major; the latents
/// themselves are formed by the sweeps as they load them) and LYY18's boundary moves.
#[derive(Clone, Debug)]
pub struct Scratch {
    pub(crate) ws: Workspace,
    /// LYY18's scratch for the tape's forced sweeps.
    pub(crate) forcing: ForcedScratch,
    pub(crate) grad: BatchGradient,
    pub(crate) s: Vec<f64>,
    pub(crate) forced: Vec<(u32, crate::ir::Branch)>,
    /// Per lane, the coordinate LYY18 moved to reach its boundary point and its value there
    /// (`u32::MAX` where none moved).
    pub(crate) moves: Vec<(u32, f64)>,
    /// Per lane, LYY18's choice: `(if-statement, coordinate, a_kj, q_j(z*_j))`.
    pub(crate) lanes: Vec<Option<(usize, usize, f64, f64)>>,
    pub(crate) out: Vec<f64>,
    /// Per plate, its body's scratch.
    pub(crate) plates: Vec<PlateScratch>,
    /// Per plate, LYY18's forced sweeps of its body.
    pub(crate) boundary: Vec<BoundaryScratch>,
    /// The tape's parameters when they extend the model's (relative smoothing).
    pub(crate) params: Vec<f64>,
    /// A sparse step's normals, in the order of the latents it reads.
    pub(crate) sparse_s: Vec<f64>,
    /// Lanes currently drawn.
    pub(crate) w: usize,
}
