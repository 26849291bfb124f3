//! LYY18's boundary term on plates: the if-statements of a plate's body, one per row, among
//! those LYY18 picks from, and the jump of a picked one evaluated on its row alone.
//!
//! Unrolled, a loop of `n` rows has `n` copies of each if-statement of its body, and LYY18
//! picks one of all the program's `K` uniformly. Here the if-statements are numbered as in
//! a loop that comes after the rest of the program: the outer program's first, then each
//! plate's rows in order, each row's in the body's order (under a subsample, the drawn rows
//! only, each jump scaled by `n / M`: LYY18 applied to the subsampled integrand `f_S`, as the
//! other estimators are; see [`Subsample`]).
//!
//! The jump `f_-(z*) - f_+(z*)` at the boundary point of row `r`'s if-statement is the
//! jump of row `r`'s body alone: the outer program and the other rows read the same `z*`
//! under the same crisp semantics in both terms, so they cancel exactly. So the forced
//! sweeps run one row of the body (its own tape, forced to each branch), not the plate: the
//! boundary part of a chunk costs a few sweeps of the body whatever the number of rows, and
//! the chunk's cost is that of its crisp pathwise gradient (the plate's vectorised sweeps).
//! The guard's affine form at the row, over the model's latents, comes from
//! [`RowGuard::at_row`]: the form the unrolled row's guard has.

use super::plates::PlateRun;
use super::subsample::Subsample;
use super::{EstimateError, Problem};
use crate::eval::{ForcedScratch, Workspace};
use crate::family::FamilyState;
use crate::ir::{AffineGuard, Branch, GuardInfo, RowGuard, Shared};

/// The if-statements of every plate's body, as LYY18 reads them.
#[derive(Clone, Debug, Default)]
pub(crate) struct PlateGuards {
    /// Per plate, per if-statement of its body: its guard, affine in every row; `None` for a
    /// continuous if-statement whose guard is not (its boundary term is zero).
    plates: Vec<Vec<Option<RowGuard>>>,
    /// The analysis's index of each plate's first body if-statement (the per-guard jumps of
    /// [`Lyy18::with_jumps`](super::Lyy18::with_jumps) are indexed so).
    first_index: Vec<usize>,
}

/// A lane's pick among the plates' if-statements.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PlatePick {
    pub plate: usize,
    /// The row (of the model's data, not its position in a subsample).
    pub row: usize,
    /// The if-statement within the body.
    pub guard: usize,
    /// What the row's jump counts for: 1, or `n / M` under a subsample.
    pub scale: f64,
}

impl PlateGuards {
    /// The plates' if-statements of `problem`; `guards` is the analysis's list after the outer
    /// program's (each body's once, in plate order). Refuses a jump whose guard is not affine
    /// in every row, naming it.
    pub(crate) fn new(
        problem: &Problem,
        guards: &[GuardInfo],
    ) -> Result<PlateGuards, EstimateError> {
        let mut out = PlateGuards::default();
        let outer = problem.analysis().guards.len() - guards.len();
        let mut at = 0;
        for pr in &problem.plates {
            let body_ifs = pr.plate.body.if_count();
            let info = &guards[at..at + body_ifs];
            let mut each = Vec::with_capacity(body_ifs);
            for (k, g) in info.iter().enumerate() {
                each.push(match RowGuard::new(&pr.plate, k) {
                    Ok(r) => Some(r),
                    Err(_) if g.continuous => None,
                    Err(reason) => {
                        return Err(EstimateError::NotAffine {
                            index: g.index,
                            span: g.span,
                            reason,
                        });
                    }
                });
            }
            out.plates.push(each);
            out.first_index.push(outer + at);
            at += body_ifs;
        }
        Ok(out)
    }

    /// How many rows plate `p` reads under `sub`, and what each counts for.
    fn rows(problem: &Problem, sub: Option<&Subsample>, p: usize) -> (usize, f64) {
        match sub.and_then(|s| s.plates[p].as_ref()) {
            Some((rows, scale)) => (rows.len(), *scale),
            None => (problem.plates[p].plate.rows, 1.0),
        }
    }

    /// The plates' if-statements an iteration's integrand evaluates: each body's once per row
    /// read.
    pub(crate) fn count(&self, problem: &Problem, sub: Option<&Subsample>) -> usize {
        (0..self.plates.len())
            .map(|p| Self::rows(problem, sub, p).0 * self.plates[p].len())
            .sum()
    }

    /// The `k`-th of the plates' if-statements (`k < count`).
    pub(crate) fn locate(
        &self,
        problem: &Problem,
        sub: Option<&Subsample>,
        mut k: usize,
    ) -> PlatePick {
        for (p, guards) in self.plates.iter().enumerate() {
            let (count, scale) = Self::rows(problem, sub, p);
            let here = count * guards.len();
            if k < here {
                let t = k / guards.len();
                let row = match sub.and_then(|s| s.drawn(p)) {
                    Some(rows) => rows[t] as usize,
                    None => t,
                };
                return PlatePick {
                    plate: p,
                    row,
                    guard: k % guards.len(),
                    scale,
                };
            }
            k -= here;
        }
        unreachable!("k is below the plates' count")
    }

    /// The picked if-statement's guard at its row, over the model's latents (`None` for a
    /// continuous one that is not affine).
    pub(crate) fn form(&self, problem: &Problem, pick: PlatePick) -> Option<AffineGuard> {
        let g = self.plates[pick.plate][pick.guard].as_ref()?;
        Some(g.at_row(&problem.plates[pick.plate].plate, pick.row))
    }

    /// The if-statements of the plates' bodies, each once.
    pub(crate) fn analysis_count(&self) -> usize {
        self.plates.iter().map(Vec::len).sum()
    }

    /// The analysis's index of the picked if-statement's body copy.
    pub(crate) fn analysis_index(&self, pick: PlatePick) -> usize {
        self.first_index[pick.plate] + pick.guard
    }
}

/// One thread's scratch for the forced sweeps of one plate's body.
#[derive(Clone, Debug)]
pub(crate) struct BoundaryScratch {
    ws: Workspace,
    forcing: ForcedScratch,
    /// The body's parameters (the shared values) at the boundary point.
    shared: Vec<f64>,
    /// The body's inputs of the row, for the two forced samples (`[j * 2 + b]`).
    inputs: Vec<f64>,
}

impl BoundaryScratch {
    pub(crate) fn new(plate: &PlateRun) -> BoundaryScratch {
        let tape = plate.body_tape();
        BoundaryScratch {
            ws: tape.workspace(),
            forcing: tape.forced_scratch(),
            shared: vec![0.0; plate.plate.shared.len()],
            inputs: vec![0.0; 2 * plate.plate.body.latent_count()],
        }
    }
}

/// The sample a boundary point is taken at: lane `l` of a chunk's `w` lanes of noise `s`.
pub(crate) struct Point<'a> {
    pub theta: &'a [f64],
    pub state: &'a FamilyState,
    pub s: &'a [f64],
    pub w: usize,
    pub l: usize,
    /// The moved latent and its value on the boundary.
    pub moved: (u32, f64),
}

impl Point<'_> {
    /// Latent `i` at the boundary point: moved, or formed from the noise as the sweeps form
    /// it (multiplied, then added).
    fn z(&self, i: usize) -> f64 {
        if i == self.moved.0 as usize {
            self.moved.1
        } else {
            self.state.loc(i) + self.state.scale(i) * self.s[i * self.w + self.l]
        }
    }
}

/// `f_-(z*) - f_+(z*)` of the picked if-statement: its row's body forced to the else branch
/// and to the then branch at the boundary point (every other if-statement crisp), unscaled.
pub(crate) fn row_jump(
    pr: &PlateRun,
    bs: &mut BoundaryScratch,
    pick: PlatePick,
    pt: &Point<'_>,
) -> f64 {
    let plate = &pr.plate;
    for (v, sh) in bs.shared.iter_mut().zip(&plate.shared) {
        *v = match *sh {
            Shared::Param(k) => pt.theta[k as usize],
            Shared::Latent(i) => pt.z(i as usize),
            // A positive factor of a guard: crisp and forced sweeps read only its sign.
            Shared::GuardFactor(_) => 1.0,
        };
    }
    let c = plate.columns.len();
    for (j, col) in plate.columns.iter().enumerate() {
        bs.inputs[2 * j] = col[pick.row];
        bs.inputs[2 * j + 1] = col[pick.row];
    }
    for (q, rl) in plate.row_latents.iter().enumerate() {
        let z = pt.z(rl.of_row(pick.row) as usize);
        bs.inputs[2 * (c + q)] = z;
        bs.inputs[2 * (c + q) + 1] = z;
    }
    let g = pick.guard as u32;
    let mut out = [0.0; 2];
    pr.body_tape().forward_forced(
        &mut bs.ws,
        &mut bs.forcing,
        &bs.shared,
        &bs.inputs,
        &[(g, Branch::Else), (g, Branch::Then)],
        &mut out,
    );
    out[0] - out[1]
}

impl BoundaryScratch {
    /// Runs the forced sweeps in the build `set` (for tests).
    #[cfg(test)]
    pub(crate) fn set_kernels(&mut self, set: crate::eval::vmath::KernelSet) {
        self.ws.set_kernels(set);
    }
}

#[cfg(test)]
mod tests {
    use crate::estimate::{Context, Estimator, Lyy18, Problem, Purpose, StreamKey, Subsample};
    use crate::eval::{CHUNK, Values};
    use crate::ir::Semantics;

    /// A plate over 50 rows with a row latent, two jumps per row (one reading the row
    /// latent), and one jump outside the loop.
    fn plated() -> crate::ir::Model {
        crate::estimate::plates::fixture::plated(50, true)
    }

    /// Every kernel set gives LYY18's gradient samples on a plate the same bits (the body's
    /// forced sweeps and the plate's crisp sweeps in that build), full and short chunks,
    /// every row and a subsample; and some samples have a boundary term from a row.
    #[test]
    fn lyy18_on_a_plate_does_not_depend_on_the_kernel_set() {
        use crate::eval::vmath::KernelSet;
        let problem = Problem::new(&plated()).unwrap();
        let est = Lyy18::new(&problem).unwrap();
        let theta = problem.family().init();
        let mut state = problem.family().state();
        state.update(problem.family(), &theta).unwrap();
        let key = StreamKey::new(4, 9, Purpose::Step);
        let sub = problem.subsample(key, 9, &state).unwrap();
        let run = |set: KernelSet, w: usize, sub: Option<&Subsample>| {
            let mut sc = problem.scratch();
            sc.ws.set_kernels(set);
            for ps in &mut sc.plates {
                ps.set_kernels(set);
            }
            for bs in &mut sc.boundary {
                bs.set_kernels(set);
            }
            let mut bits = Vec::new();
            for first in [0, CHUNK] {
                problem.draw(key, first, w, &mut sc);
                let cx = Context {
                    problem: &problem,
                    state: &state,
                    theta: &theta,
                    iteration: 0,
                    semantics: Semantics::Crisp,
                    key,
                    first,
                    values: Values::Exact,
                    subsample: sub,
                };
                let mut grads = vec![0.0; problem.dim() * w];
                let mut values = vec![0.0; w];
                est.chunk(&cx, &mut sc, &mut grads, &mut values);
                bits.extend(grads.iter().chain(&values).map(|v| v.to_bits()));
            }
            bits
        };
        for sub in [None, Some(&sub)] {
            for w in [CHUNK, 5] {
                let want = run(KernelSet::Portable, w, sub);
                for set in KernelSet::available() {
                    assert!(run(set, w, sub) == want, "{set:?} w {w}");
                }
            }
        }
    }
}
