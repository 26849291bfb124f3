//! LYY18's forced sweeps: the output for a batch in which every sample forces one
//! if-statement to a branch of its own (crisp at every other), and may move one latent.
//!
//! Right after a crisp sweep of the same chunk, [`Tape::forward_forced_moved`] redoes only
//! the cones of what changed: the steps downstream of a moved latent or of a forced
//! if-statement (this call's or the last one's), found by walking the readers of each step
//! (`forced_plan.rs`), so the work follows the cones, not the program. What a cone reads from
//! outside itself is either held in the forced layout (a place of its own, still holding
//! what the crisp sweep computed) or computed again, with what it reads in turn, by the same
//! steps in the same order: every lane gets the bits of one [`Tape::forward`] per sample. A
//! latent read by many steps (the survey's `c`, in every student's guard) has a cone nearly as
//! large as the program, which most chunks move: the scratch keeps the cones of a few such
//! seeds as bit sets, so the walk is done once.
//!
//! Not here: the ordinary batch entry points (`evaluate.rs`), the sweeps (`sweep.rs`), and
//! which values the forced layout holds (`forced_plan.rs`).

use crate::ir::{Branch, Semantics};

use super::forced_plan::ForcedPlan;
use super::input::Latents;
use super::instr::{CHUNK, Lanes, NONE, Op, Step};
use super::layout::Layout;
use super::sweep;
use super::tape::Tape;
use super::workspace::Workspace;

/// Steps handed to the sweep at a time: a short buffer, reused, that stays in cache.
const BATCH_STEPS: usize = 256;

/// A seed (moved latent, forced if-statement) read by at least this many steps has a cone
/// worth keeping: a latent in many guards (`c` of the survey, moved by most chunks) has one
/// as large as the program, which a bit set gives in a fraction of the walk's time.
const WIDE_SEED: usize = 64;

/// Cones kept per scratch (each a bit per step of the tape).
const CACHED_CONES: usize = 8;

/// Scratch memory of the forced sweeps, beside a [`Workspace`] (only LYY18 needs it; it is
/// sized at the first forced sweep, and keeps nothing between calls but the cones of a few
/// wide seeds, a pure function of the tape).
#[derive(Clone, Debug, Default)]
pub struct ForcedScratch {
    /// Per lane step, whether this sweep runs it (a bit set over the forced plan's steps).
    run: Vec<u64>,
    /// Steps to run next, in order.
    partial: Vec<Step>,
    /// Per latent, its entry in `moves` (`NONE`: not moved by this call).
    moved_at: Vec<u32>,
    /// The latents this call moves, each with the lanes it takes.
    moves: Vec<(u32, Lanes)>,
    /// One sample's latents, for forcing one sample at a time.
    point: Vec<f64>,
    /// The steps whose values changed: moved latents and forced if-statements.
    seeds: Vec<u32>,
    /// The cones (with what they recompute) of wide seeds of tape `cones_of`, by seed step,
    /// and those this call uses.
    cones: Vec<(u32, Vec<u64>)>,
    cones_of: u64,
    used: Vec<usize>,
}

impl ForcedScratch {
    /// Sizes the scratch for `plan` and `latents` latents (allocates at the first call only).
    fn fit(&mut self, plan: &ForcedPlan, latents: usize) {
        self.run.resize(plan.len().div_ceil(64), 0);
        self.moved_at.resize(latents, NONE);
        self.partial.reserve(BATCH_STEPS);
        self.moves.reserve(CHUNK);
        self.seeds.reserve(4 * CHUNK);
        self.used.reserve(4 * CHUNK);
    }
}

/// The cones of the steps set in `bits` (the steps downstream of them), and what those read
/// that no place holds any more (computed again, with what it reads in turn).
fn close_cones(plan: &ForcedPlan, bits: &mut [u64]) {
    spread(plan, bits, |_| {});
    if !plan.holds_all {
        recompute(plan, bits);
    }
}

/// Sets bit `i`.
#[inline]
fn set(bits: &mut [u64], i: u32) {
    bits[i as usize / 64] |= 1 << (i % 64);
}

/// Sets the bits of the steps downstream of those set in `bits` (their readers, and theirs,
/// ...), calling `visit` on every set step in increasing order. The bits of the word at hand
/// and of the next are kept in registers: most readers are near the step they read, and
/// setting them in memory would chain each read-modify-write to the one before.
#[inline(always)]
fn spread(plan: &ForcedPlan, bits: &mut [u64], mut visit: impl FnMut(usize)) {
    let mut next = 0u64;
    for w in 0..bits.len() {
        let mut cur = bits[w] | next;
        next = 0;
        let mut done = 0u64;
        loop {
            let todo = cur & !done;
            if todo == 0 {
                break;
            }
            let b = todo.trailing_zeros();
            done |= 1 << b;
            let i = w * 64 + b as usize;
            for &r in plan.readers(i) {
                let (rw, bit) = (r as usize / 64, 1 << (r % 64));
                if rw == w {
                    cur |= bit;
                } else if rw == w + 1 {
                    next |= bit;
                } else {
                    bits[rw] |= bit;
                }
            }
            visit(i);
        }
        bits[w] = cur;
    }
}

/// Adds to the steps set in `bits` what they read that the forced layout does not hold (and
/// in turn what those read): a pass down the steps, with the word at hand and the one before
/// in registers as in [`spread`].
fn recompute(plan: &ForcedPlan, bits: &mut [u64]) {
    let mut prev = 0u64;
    for w in (0..bits.len()).rev() {
        let mut cur = bits[w] | prev;
        prev = 0;
        let mut done = 0u64;
        loop {
            let todo = cur & !done;
            if todo == 0 {
                break;
            }
            let b = 63 - todo.leading_zeros();
            done |= 1 << b;
            for &d in plan.deps(w * 64 + b as usize) {
                if plan.held(d as usize) {
                    continue;
                }
                let (dw, bit) = (d as usize / 64, 1 << (d % 64));
                if dw == w {
                    cur |= bit;
                } else if dw + 1 == w {
                    prev |= bit;
                } else {
                    bits[dw] |= bit;
                }
            }
        }
        bits[w] = cur;
    }
}

/// Calls `f` on the set bits of `bits`, in increasing order.
#[inline(always)]
fn each_set(bits: &[u64], mut f: impl FnMut(usize)) {
    for (w, &word) in bits.iter().enumerate() {
        let mut todo = word;
        while todo != 0 {
            let b = todo.trailing_zeros() as usize;
            todo &= todo - 1;
            f(w * 64 + b);
        }
    }
}

fn same_bits(a: &Lanes, b: &Lanes) -> bool {
    a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// Lane `l` takes branch `forced[l].1` at if-statement `forced[l].0`; the lanes past the
/// batch repeat its last sample.
fn lane_force(forced: &[(u32, Branch)]) -> sweep::LaneForce {
    let mut force = sweep::LaneForce {
        index: [u32::MAX; CHUNK],
        then: [false; CHUNK],
    };
    for l in 0..CHUNK {
        let (k, b) = forced[l.min(forced.len() - 1)];
        force.index[l] = k;
        force.then[l] = b == Branch::Then;
    }
    force
}

/// Runs chosen steps of a forced sweep in order, a few at a time, writing a moved latent's
/// lanes where its step would load it.
struct Runner<'a> {
    layout: &'a Layout,
    partial: &'a mut Vec<Step>,
    moves: &'a [(u32, Lanes)],
    moved_at: &'a [u32],
    input: &'a sweep::Input<'a>,
}

impl Runner<'_> {
    /// Runs step `i` (after those given before).
    #[inline(always)]
    fn step(&mut self, ws: &mut Workspace, i: usize) {
        let st = &self.layout.steps[i];
        if let Op::Latent { i: j } = st.op
            && self.moved_at[j as usize] != NONE
        {
            self.flush(ws);
            ws.values[st.out as usize] = self.moves[self.moved_at[j as usize] as usize].1;
            return;
        }
        // A copy of the whole step (a field-wise push goes through the stack).
        self.partial.extend_from_slice(std::slice::from_ref(st));
        if self.partial.len() == BATCH_STEPS {
            self.flush(ws);
        }
    }

    /// Runs the steps given so far.
    fn flush(&mut self, ws: &mut Workspace) {
        sweep::forward_steps(self.partial, &self.layout.chains, ws, self.input);
        self.partial.clear();
    }
}

impl Tape {
    /// Scratch memory for [`Tape::forward_forced`] and [`Tape::forward_forced_moved`] on this
    /// tape (empty until the first forced sweep).
    pub fn forced_scratch(&self) -> ForcedScratch {
        ForcedScratch::default()
    }

    /// Values of the output for `batch` samples, each under its own forcing: sample `l` is
    /// evaluated under `Semantics::Forced { index: forced[l].0, branch: forced[l].1 }`. Gives
    /// the bits of one [`Tape::forward`] call per sample, at the cost of one batch.
    pub fn forward_forced(
        &self,
        ws: &mut Workspace,
        scratch: &mut ForcedScratch,
        params: &[f64],
        latents: &[f64],
        forced: &[(u32, Branch)],
        out: &mut [f64],
    ) {
        let batch = out.len();
        assert_eq!(forced.len(), batch, "one forcing per sample");
        self.check_inputs(ws, params, &latents.into(), batch);
        if self.forces_uniform(forced) {
            let point = &mut scratch.point;
            point.resize(self.latent_count(), 0.0);
            for (l, &(index, branch)) in forced.iter().enumerate() {
                for (i, p) in point.iter_mut().enumerate() {
                    *p = latents[i * batch + l];
                }
                let sem = Semantics::Forced { index, branch };
                self.forward(ws, sem, params, point, &mut out[l..l + 1]);
            }
            return;
        }
        self.prepare(ws);
        ws.crisp_chunk = false;
        sweep::uniform_pass(self, ws, Semantics::Crisp, params);
        let mut start = 0;
        while start < batch {
            let w = CHUNK.min(batch - start);
            let force = lane_force(&forced[start..start + w]);
            let input = sweep::Input {
                params,
                latents: latents.into(),
                batch,
                start,
                w,
                force: Some(&force),
                plain_weights: self.plain_weights,
            };
            sweep::forward_chunk(self, self.layout(ws), ws, Semantics::Crisp, &input);
            out[start..start + w].copy_from_slice(&ws.values[self.output as usize][..w]);
            start += w;
        }
    }

    /// Whether a sample forces an if-statement that is the same in every lane (its guard
    /// reads no latent): that one is evaluated once for all lanes, so forcing it in some
    /// lanes only takes the per-sample path.
    fn forces_uniform(&self, forced: &[(u32, Branch)]) -> bool {
        forced.iter().any(|(k, _)| self.uniform_ifs.contains(k))
    }

    /// Values of the output for `w = out.len()` samples (at most [`CHUNK`]): sample `l` at the
    /// latents `latents` gives, except that latent `moves[l].0` takes the value `moves[l].1`
    /// (none where `moves[l].0` is past the last latent), evaluated under
    /// `Semantics::Forced { index: forced[l].0, branch: forced[l].1 }`. Gives the bits of
    /// one [`Tape::forward`] call per sample.
    ///
    /// Made for LYY18, which moves one coordinate of each sample onto a boundary and forces
    /// one if-statement: when the last sweep on `ws` was a crisp one of the same `w` samples
    /// at the same parameters (or a call of this), the caller vouches that `latents` are
    /// that sweep's, and only what the moves and the forcings (this call's and the last
    /// one's) reach is redone. Otherwise every step is.
    #[allow(clippy::too_many_arguments)]
    pub fn forward_forced_moved(
        &self,
        ws: &mut Workspace,
        scratch: &mut ForcedScratch,
        params: &[f64],
        latents: Latents<'_>,
        moves: &[(u32, f64)],
        forced: &[(u32, Branch)],
        out: &mut [f64],
    ) {
        let w = out.len();
        assert!((1..=CHUNK).contains(&w), "one chunk of samples");
        assert!(
            forced.len() == w && moves.len() == w,
            "one forcing and one move per sample"
        );
        self.check_inputs(ws, params, &latents, w);
        let n = self.latent_count();
        if self.forces_uniform(forced) {
            let point = &mut scratch.point;
            point.resize(n, 0.0);
            for (l, &(index, branch)) in forced.iter().enumerate() {
                for (i, p) in point.iter_mut().enumerate() {
                    *p = latents.load(i, w, 0, w)[l];
                }
                if let Some(p) = point.get_mut(moves[l].0 as usize) {
                    *p = moves[l].1;
                }
                let sem = Semantics::Forced { index, branch };
                self.forward(ws, sem, params, point, &mut out[l..l + 1]);
            }
            return;
        }
        let plan = self.forced_plan();
        self.use_forced_layout(ws);
        scratch.fit(plan, n);
        // Each moved latent with all its lanes, as a sweep would load them (the lanes past
        // `w` repeat the last sample's).
        let (moves_now, moved_at) = (&mut scratch.moves, &mut scratch.moved_at);
        moves_now.clear();
        for (l, &(j, z)) in moves.iter().enumerate() {
            let Some(at) = moved_at.get_mut(j as usize) else {
                continue;
            };
            if *at == NONE {
                *at = moves_now.len() as u32;
                moves_now.push((j, latents.load(j as usize, w, 0, w)));
            }
            moves_now[*at as usize].1[l] = z;
        }
        for (_, lanes) in moves_now.iter_mut() {
            let last = lanes[w - 1];
            lanes[w..].fill(last);
        }
        let run = &mut scratch.run;
        run.fill(0);
        let force = lane_force(forced);
        let input = sweep::Input {
            params,
            latents,
            batch: w,
            start: 0,
            w,
            force: Some(&force),
            plain_weights: self.plain_weights,
        };
        let mut runner = Runner {
            layout: &plan.layout,
            partial: &mut scratch.partial,
            moves: moves_now,
            moved_at,
            input: &input,
        };
        let params_held = self
            .param_slots
            .iter()
            .zip(params)
            .all(|(s, p)| s.is_none_or(|s| ws.values[s as usize][0].to_bits() == p.to_bits()));
        if ws.tape_id == self.id && ws.crisp_chunk && ws.lanes == w && params_held {
            // The seeds: latents whose lanes differ from those the workspace holds, and the
            // if-statements forced now or last time.
            let seeds = &mut scratch.seeds;
            seeds.clear();
            let mut seed_latent = |j: u32| {
                let s = plan.latent_step[j as usize];
                if s != NONE {
                    seeds.push(s);
                }
            };
            for (j, lanes) in &ws.moved {
                let now = runner.moved_at[*j as usize];
                if now == NONE || !same_bits(lanes, &runner.moves[now as usize].1) {
                    seed_latent(*j);
                }
            }
            for (j, _) in runner.moves.iter() {
                if !ws.moved.iter().any(|(k, _)| k == j) {
                    seed_latent(*j);
                }
            }
            for &k in ws.forced.iter().chain(forced.iter().map(|(k, _)| k)) {
                if let Some(&s) = plan.if_step.get(k as usize)
                    && s != NONE
                {
                    seeds.push(s);
                }
            }
            // A seed read by many steps (a latent in many guards) takes its cone from the
            // cache, computed alone the first time; the others' cones are found together.
            let (cones, used) = (&mut scratch.cones, &mut scratch.used);
            if scratch.cones_of != self.id {
                cones.clear();
                scratch.cones_of = self.id;
            }
            used.clear();
            for &s in seeds.iter() {
                if plan.readers(s as usize).len() >= WIDE_SEED {
                    let at = cones.iter().position(|(t, _)| *t == s);
                    let at = at.or_else(|| {
                        (cones.len() < CACHED_CONES).then(|| {
                            let mut bits = vec![0u64; run.len()];
                            set(&mut bits, s);
                            close_cones(plan, &mut bits);
                            cones.push((s, bits));
                            cones.len() - 1
                        })
                    });
                    if let Some(at) = at {
                        used.push(at);
                        continue;
                    }
                }
                set(run, s);
            }
            if plan.holds_all && used.is_empty() {
                // Every value the cones read is in its place: run them as they are found.
                spread(plan, run, |i| runner.step(ws, i));
            } else {
                close_cones(plan, run);
                for &at in used.iter() {
                    run.iter_mut().zip(&cones[at].1).for_each(|(r, c)| *r |= c);
                }
                each_set(run, |i| runner.step(ws, i));
            }
        } else {
            self.prepare(ws);
            sweep::uniform_pass(self, ws, Semantics::Crisp, params);
            (0..plan.len()).for_each(|i| runner.step(ws, i));
        }
        runner.flush(ws);
        out.copy_from_slice(&ws.values[self.output as usize][..w]);
        ws.crisp_chunk = true;
        ws.lanes = w;
        ws.forced.clear();
        ws.forced.extend(
            forced
                .iter()
                .map(|&(k, _)| k)
                .filter(|&k| (k as usize) < self.if_count),
        );
        ws.moved.clear();
        ws.moved.extend_from_slice(moves_now);
        for (j, _) in moves_now.iter() {
            moved_at[*j as usize] = NONE;
        }
    }
}
