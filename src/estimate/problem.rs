//! A model made ready for estimation: its family, the compiled objective and its analysis,
//! plus the per-thread scratch memory and the pathwise gradient assembly all estimators share.

use std::ops::Deref;
use std::sync::{Arc, Mutex};

use super::plates::{Outer, PlateRun, PlateScratch, Target};
use super::rng::{Channel, StreamKey};
use super::subsample::Subsample;
use crate::eval::{BatchGradient, CHUNK, ForcedScratch, Tape, Values, Workspace};
use crate::family::{Family, FamilyError, FamilyState};
use crate::ir::{
    Analysis, GuardScaled, Mode, Model, Plate, PlateFactors, Program, analyse, scale_guards,
    scale_plate_guards,
};

/// The outer program's analysis with each plate body's guards after its own (renumbered),
/// and the deepest nesting of all.
fn analysis_with_plates(model: &Model) -> Analysis {
    let mut a = analyse(&model.program);
    for plate in &model.plates {
        let view = super::plates::analysis_view(plate, model.program.param_names());
        let b = analyse(&view);
        a.nesting_depth = a.nesting_depth.max(b.nesting_depth);
        for mut g in b.guards {
            g.index = a.guards.len();
            a.guards.push(g);
        }
    }
    a
}

/// Scratch slots per problem: one per thread of the current pool, and at least one per core.
fn scratch_slots() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    rayon::current_num_threads().max(cores).max(1)
}

/// One chunk's lanes of one row.
type Lanes = [f64; CHUNK];

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
    /// One scratch per thread index, made at that thread's first chunk and shared by every
    /// engine of the problem ([`ProblemData::with_scratch`]).
    scratches: Vec<Mutex<Option<Scratch>>>,
}

/// Which gradient components the pathwise assembly writes first and which it never
/// touches, from the family's Jacobian pattern (the same at every `theta`): a component's
/// first contribution is written as `0.0 + c` (what adding it to a zeroed component gives,
/// bit for bit) and only the untouched components are zeroed, instead of zeroing every
/// component of every chunk and adding to it.
#[derive(Debug, Default)]
struct PathwisePlan {
    /// Per Jacobian entry of the moved latents, in the order the assembly visits them:
    /// whether it is the first contribution to its component.
    first: Vec<bool>,
    /// Family components (beyond the model's parameters) no moved latent's Jacobian has.
    untouched: Vec<u32>,
}

impl PathwisePlan {
    fn new(family: &Family, moved: &[u32]) -> PathwisePlan {
        let m = family.model_param_count();
        let state = family.state();
        // The model's parameters start from the tape's direct derivatives.
        let mut touched: Vec<bool> = (0..family.dim()).map(|p| p < m).collect();
        let mut first = Vec::new();
        for &i in moved {
            for (p, _, _) in state.jacobian(i as usize) {
                first.push(!touched[p]);
                touched[p] = true;
            }
        }
        let untouched = (0..family.dim() as u32)
            .filter(|&p| !touched[p as usize])
            .collect();
        PathwisePlan { first, untouched }
    }
}

impl Problem {
    /// Compiles `model` for the estimators.
    pub fn new(model: &Model) -> Result<Problem, FamilyError> {
        Problem::build(model, None, None)
    }

    /// The problem whose smoothed sweeps read each guard linear in the latents in units of
    /// its spread under the guide (`ir::scale_guards`): DSGD's relative smoothing. Its crisp
    /// values are those of [`Problem::new`]; only the estimators that run the tape through
    /// [`ProblemData::sweep_gradient`] and [`ProblemData::crisp_values`] may use it.
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
        let plates = plates
            .into_iter()
            .map(|(p, factors)| PlateRun::new(&p, &wanted, &moved_row, &mut written, factors))
            .collect();
        Ok(Problem(Arc::new(ProblemData {
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
            analysis: analysis_with_plates(model),
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
    /// per plate, in the model's terms: see `plates::analysis_view`); for the count of
    /// if-statements per row, [`ProblemData::if_statements`].
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
            params: Vec::new(),
            w: 0,
        }
    }

    /// Draws the noise of lanes `first..first + w` into `scratch`; the sweeps form the
    /// latents `z = phi_theta(s)` from it as they load them.
    pub fn draw(&self, key: StreamKey, first: usize, w: usize, scratch: &mut Scratch) {
        self.draw_noise(key, first, w, &mut scratch.s);
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
        let o = self.outer(state, &theta[..m], &scratch.s[..n * w], w);
        for (p, (plate, ps)) in self.plates.iter().zip(&mut scratch.plates).enumerate() {
            let rows = Subsample::rows(sub, p);
            plate.add_gradient(ps, &o, semantics, values, rows, &mut scratch.grad);
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

    /// `f` for the drawn lanes from the program's values `logp`: adds `-log q(z)` in
    /// variational mode.
    pub(crate) fn f_values(
        &self,
        state: &FamilyState,
        scratch: &Scratch,
        logp: &[f64],
        out: &mut [f64],
        sub: Option<&Subsample>,
    ) {
        if let Some(weights) = Subsample::weights(sub) {
            let c = sub.map_or(0.0, |s| s.entropy_const);
            self.f_values_weighted(c, weights, scratch, logp, out);
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::avx2_fma() {
            // SAFETY: the CPU has AVX2 and FMA (checked just above).
            unsafe { self.f_values_avx2(state, scratch, logp, out) };
            return;
        }
        self.f_values_body(state, scratch, logp, out);
    }

    /// `f_S` of a subsample whose row latents' `-log q` are weighted ([`Subsample`]): latent
    /// `i`'s `0.5 s^2` counts `weights[i]` times, and not at all where the weight is 0.
    fn f_values_weighted(
        &self,
        c: f64,
        weights: &[f64],
        scratch: &Scratch,
        logp: &[f64],
        out: &mut [f64],
    ) {
        let w = scratch.w;
        let mut sq = [0.0; CHUNK];
        for &i in &self.moved {
            let i = i as usize;
            let wt = weights[i];
            if !self.family.in_entropy[i] || wt == 0.0 {
                continue;
            }
            for (q, &s) in sq[..w].iter_mut().zip(&scratch.s[i * w..(i + 1) * w]) {
                *q += wt * (s * s);
            }
        }
        let any = self.family.in_entropy.iter().any(|&e| e);
        for l in 0..w {
            out[l] = if any {
                logp[l] + (c + 0.5 * sq[l])
            } else {
                logp[l]
            };
        }
    }

    /// [`Problem::f_values`] compiled for AVX2 (no fused multiply-adds, so the same bits).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn f_values_avx2(&self, state: &FamilyState, scratch: &Scratch, logp: &[f64], out: &mut [f64]) {
        self.f_values_body(state, scratch, logp, out);
    }

    #[inline(always)]
    fn f_values_body(&self, state: &FamilyState, scratch: &Scratch, logp: &[f64], out: &mut [f64]) {
        // A full chunk with its width known at compile time: straight-line lane loops.
        if scratch.w == CHUNK {
            self.f_values_lanes(CHUNK, state, scratch, logp, out);
        } else {
            self.f_values_lanes(scratch.w, state, scratch, logp, out);
        }
    }

    #[inline(always)]
    fn f_values_lanes(
        &self,
        w: usize,
        state: &FamilyState,
        scratch: &Scratch,
        logp: &[f64],
        out: &mut [f64],
    ) {
        let c = state.entropy_const();
        for (l, o) in out[..w].iter_mut().enumerate() {
            *o = logp[l];
        }
        if self.family.in_entropy.iter().any(|&e| e) {
            // Latent-major, so the lanes advance together; each lane still sums its squares
            // in latent order (the same additions as a per-lane loop). Only moved latents
            // are in the entropy.
            let mut sq = [0.0; CHUNK];
            let sq = &mut sq[..w];
            for &i in &self.moved {
                let i = i as usize;
                if !self.family.in_entropy[i] {
                    continue;
                }
                for (q, &s) in sq.iter_mut().zip(&scratch.s[i * w..(i + 1) * w]) {
                    *q += s * s;
                }
            }
            for (o, q) in out[..w].iter_mut().zip(sq.iter()) {
                *o += c + 0.5 * q;
            }
        }
    }

    /// Crisp `f` at the drawn lanes (into `out[..w]`), every row of the plates read.
    pub fn crisp_values(
        &self,
        state: &FamilyState,
        theta: &[f64],
        scratch: &mut Scratch,
        out: &mut [f64],
    ) {
        self.crisp_values_of(state, theta, scratch, out, None);
    }

    /// [`Problem::crisp_values`] of the subsample's rows, if one is given.
    pub(crate) fn crisp_values_of(
        &self,
        state: &FamilyState,
        theta: &[f64],
        scratch: &mut Scratch,
        out: &mut [f64],
        sub: Option<&Subsample>,
    ) {
        let mut logp = std::mem::take(&mut scratch.out);
        self.forward_values(
            state,
            theta,
            crate::ir::Semantics::Crisp,
            scratch,
            &mut logp,
            sub,
        );
        scratch.out = logp;
        let logp = std::mem::take(&mut scratch.out);
        self.f_values(state, scratch, &logp, out, sub);
        scratch.out = logp;
    }

    /// The pathwise (reparameterisation) gradient of `f(theta, phi_theta(s))` per lane from
    /// the tape's per-sample gradient in `scratch.grad`: direct parameter derivatives, plus
    /// `df/dz_i * (d loc_i + s_i d scale_i)`, plus `d ln scale_i` for latents in the entropy.
    /// Component-major, as every estimator's chunk: `grads[p * w + l]`, so the lane loops
    /// are contiguous; each `(l, p)` gets its start value, then latent by latent (the moved
    /// ones: a fixed latent's Jacobian is empty).
    ///
    /// With a subsample whose row latents are weighted ([`Subsample`]), a latent's entropy
    /// term counts its weight's times.
    pub(crate) fn pathwise_block(
        &self,
        state: &FamilyState,
        scratch: &Scratch,
        grads: &mut [f64],
        sub: Option<&Subsample>,
    ) {
        let weights = Subsample::weights(sub);
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::avx2_fma() {
            // SAFETY: the CPU has AVX2 and FMA (checked just above).
            unsafe { self.pathwise_avx2(state, scratch, grads, weights) };
            return;
        }
        self.pathwise_body(state, scratch, grads, weights);
    }

    /// [`Problem::pathwise_block`] compiled for AVX2 (4 lanes a vector instead of 2; no
    /// fused multiply-adds, so the same bits).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn pathwise_avx2(
        &self,
        state: &FamilyState,
        scratch: &Scratch,
        grads: &mut [f64],
        weights: Option<&[f64]>,
    ) {
        self.pathwise_body(state, scratch, grads, weights);
    }

    #[inline(always)]
    fn pathwise_body(
        &self,
        state: &FamilyState,
        scratch: &Scratch,
        grads: &mut [f64],
        weights: Option<&[f64]>,
    ) {
        // A full chunk with its width known at compile time: straight-line lane loops.
        if scratch.w == CHUNK {
            self.pathwise_lanes(CHUNK, state, scratch, grads, weights);
        } else {
            self.pathwise_lanes(scratch.w, state, scratch, grads, weights);
        }
    }

    #[inline(always)]
    fn pathwise_lanes(
        &self,
        w: usize,
        state: &FamilyState,
        scratch: &Scratch,
        grads: &mut [f64],
        weights: Option<&[f64]>,
    ) {
        let d = self.dim();
        let m = self.family.model_param_count();
        let g = &scratch.grad;
        let acc = &mut grads[..d * w];
        acc[..m * w].copy_from_slice(&g.params[..m * w]);
        for &p in &self.pathwise.untouched {
            let p = p as usize;
            acc[p * w..(p + 1) * w].fill(0.0);
        }
        let mut first = self.pathwise.first.iter();
        for (row, &i) in self.moved.iter().enumerate() {
            let i = i as usize;
            let entropy = self.family.in_entropy[i];
            let inv_scale = 1.0 / state.scale(i);
            let dz = &g.latents[row * w..(row + 1) * w];
            let s = &scratch.s[i * w..(i + 1) * w];
            for ((p, dl, ds), &first) in state.jacobian(i).zip(&mut first) {
                let a = &mut acc[p * w..(p + 1) * w];
                // `v + ds / scale` for latents in the entropy, `v` itself otherwise.
                let add = match (entropy, weights) {
                    (false, _) => 0.0,
                    (true, None) => ds * inv_scale,
                    (true, Some(wt)) => wt[i] * (ds * inv_scale),
                };
                let k = Contribution {
                    dl,
                    ds,
                    entropy,
                    add,
                    first,
                };
                match (
                    <&mut Lanes>::try_from(a),
                    <&Lanes>::try_from(dz),
                    <&Lanes>::try_from(s),
                ) {
                    (Ok(a), Ok(dz), Ok(s)) => k.chunk(a, dz, s),
                    _ => k.short(&mut acc[p * w..(p + 1) * w], dz, s),
                }
            }
        }
    }
}

/// One Jacobian entry's contribution to one gradient component, lane by lane:
/// `dz * (dl + s * ds)` (exactly zero where `dz` is), plus `ds / scale` for a latent in the
/// entropy, written (`first`) or added.
#[derive(Clone, Copy)]
struct Contribution {
    dl: f64,
    ds: f64,
    entropy: bool,
    /// `ds / scale` (the entropy's part).
    add: f64,
    first: bool,
}

impl Contribution {
    /// Over a full chunk: the contributions are formed in a local array first, so that
    /// LLVM, free of any question of aliasing with the gradient block, makes vector code.
    #[inline(always)]
    fn chunk(self, a: &mut Lanes, dz: &Lanes, s: &Lanes) {
        let mut c: Lanes = [0.0; CHUNK];
        for ((c, &dz), &s) in c.iter_mut().zip(dz).zip(s) {
            *c = self.lane(dz, s);
        }
        self.put(a, &c);
    }

    /// Over the `a.len()` (fewer than [`CHUNK`]) lanes of a short chunk.
    #[inline(always)]
    fn short(self, a: &mut [f64], dz: &[f64], s: &[f64]) {
        let mut c = [0.0; CHUNK];
        for (l, c) in c[..a.len()].iter_mut().enumerate() {
            *c = self.lane(dz[l], s[l]);
        }
        self.put(a, &c[..a.len()]);
    }

    #[inline(always)]
    fn lane(self, dz: f64, s: f64) -> f64 {
        let v = dz * (self.dl + s * self.ds);
        let v = if dz == 0.0 { 0.0 } else { v };
        if self.entropy { v + self.add } else { v }
    }

    #[inline(always)]
    fn put(self, a: &mut [f64], c: &[f64]) {
        if self.first {
            for (a, &c) in a.iter_mut().zip(c) {
                *a = 0.0 + c;
            }
        } else {
            for (a, &c) in a.iter_mut().zip(c) {
                *a += c;
            }
        }
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
    /// The tape's parameters when they extend the model's (relative smoothing).
    pub(crate) params: Vec<f64>,
    /// Lanes currently drawn.
    pub(crate) w: usize,
}
