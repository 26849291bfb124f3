//! Plates in the estimators: each plate's body compiled to tapes of its own and run over the
//! rows, its value and gradients added to the outer program's per sample.
//!
//! For one sample (a lane of the chunk) the body's parameters are the shared values of that
//! sample (the model's parameters, and global latents `loc + scale * s` formed as the outer
//! sweep forms them). The rows go through the *group* tape: the body repeated for
//! [`GROUP_ROWS`] consecutive rows, their outputs added in row order, so that one lane of the
//! tape's batch is a group of rows and the per-chunk work of a sweep (a few hundred cycles,
//! more than a small body's own) is paid once per sixteen groups instead of once per sixteen
//! rows. The last `rows % GROUP_ROWS` rows go through the body's own tape. A call of a tape
//! runs [`BLOCK_ROWS`] rows; their inputs are handed over as reparameterised noise of
//! location `-0.0` and scale `1` (`-0.0 + 1 * x` is `x`, bit for bit, signed zeros
//! included), so that the compiled forward sweep, which reads only that form, runs.
//!
//! Each lane's groups are summed in row order, the lanes' chains side by side: the sums are
//! the same whatever the number of threads or the kernel set.
//!
//! Subsampled ([`Subsample`](super::Subsample)): the rows are the drawn ones, in increasing order, and the sums
//! are scaled by `n / M`; a row's own latents get a gradient only when the row is drawn.
//!
//! The modules, by job: `tapes` (the body repeated for a group of rows, compiled, and each
//! thread's scratch for it), `inputs` (which rows a call runs and its inputs: the columns
//! laid out once, the row latents per call), `run` (the sweeps over the rows and where
//! their sums go), `sums` (the sums over rows in row order), `analysis` (the body in the
//! model's terms, for the analyses).

mod analysis;
#[cfg(test)]
pub(crate) mod fixture;
mod inputs;
mod rows;
mod run;
mod sums;
mod tapes;

pub(crate) use analysis::analysis_view;
pub(crate) use rows::{Outer, Rows};

use crate::eval::CHUNK;
use crate::ir::{Plate, Shared};

use tapes::{RowsTape, TapeScratch};

/// Rows per call of a tape: large enough that the per-call work (the shared part of the
/// body, run once per call) is negligible, small enough that a block's inputs and per-group
/// gradients of all sixteen lanes stay in the L2 cache. A multiple of [`GROUP_ROWS`]. On the
/// threshold regression 256, 1,024, 4,096 and 16,384 rows per call ran alike: the sweeps
/// themselves are the cost.
pub(crate) const BLOCK_ROWS: usize = 1024;

/// Rows per lane of the group tape (see the module doc).
pub(crate) const GROUP_ROWS: usize = 16;

/// Where the summed gradient of one body parameter goes in the outer per-sample gradient.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Target {
    /// Row `k` of the parameters' gradient (the model's parameter `theta_k`).
    Param(usize),
    /// Row `r` of the latents' gradient (a moved latent sampled outside the loop).
    Latent(usize),
    /// Nowhere: a fixed latent, whose gradient is never read.
    Nowhere,
}

/// One plate made ready to run.
#[derive(Debug)]
pub(crate) struct PlateRun {
    pub(crate) plate: Plate,
    /// The body for [`GROUP_ROWS`] rows, and for one.
    group: RowsTape,
    single: RowsTape,
    /// Per body parameter: where its gradient goes, and whether it is the first to write
    /// that row at a call (the outer sweep leaves a row it has no adjoint for as zeros written
    /// once, so the first writer overwrites it instead of adding).
    targets: Vec<(Target, bool)>,
    /// The row latents with a gradient, by their index `q` among the plate's.
    active: Vec<usize>,
    /// Per guard factor of a body smoothed relative to its guards' spread
    /// ([`Shared::GuardFactor`]): the model latents it reads with their mean-square
    /// coefficients (`ir::scale_plate_guards`).
    factors: crate::ir::PlateFactors,
    /// The columns of a full-data sweep's calls, each call's laid out as its inputs
    /// (see [`PlateRun::fill_columns`]), one call after another: a full-data call reads its
    /// inputs from here, as they are where the plate has no row latents, instead of
    /// gathering them from the columns at every call of every sweep.
    laid: Vec<f64>,
}

/// One thread's scratch for one plate.
#[derive(Clone, Debug)]
pub(crate) struct PlateScratch {
    group: TapeScratch,
    single: TapeScratch,
    /// Per lane of the chunk, a call's inputs, input-major (`[j * lanes + g]` for a call of
    /// `lanes` lanes); lane 0's serves every lane of a plate without row latents.
    inputs: Vec<Vec<f64>>,
    /// One lane's shared values (the body's parameters).
    shared: Vec<f64>,
    /// The identity as a location-scale map: `-0.0` and `1` per input.
    zero: Vec<f64>,
    one: Vec<f64>,
    /// Per parameter and lane (`[k * CHUNK + l]`), the gradient summed so far.
    acc: Vec<f64>,
}

impl PlateScratch {
    /// Runs every sweep of this plate's tapes in the build `set` (for tests).
    #[cfg(test)]
    pub(crate) fn set_kernels(&mut self, set: crate::eval::vmath::KernelSet) {
        self.group.ws.set_kernels(set);
        self.single.ws.set_kernels(set);
    }
}

impl PlateRun {
    /// `plate` compiled; `wanted[i]` says whether model latent `i` has a gradient,
    /// `moved_row` is its row, `written` which outer rows are already written at every call
    /// (updated with the rows this plate writes first).
    pub(crate) fn new(
        plate: &Plate,
        wanted: &[bool],
        moved_row: &[u32],
        written: &mut std::collections::HashSet<Target>,
        factors: crate::ir::PlateFactors,
    ) -> PlateRun {
        let body = &plate.body;
        let c = plate.columns.len();
        assert_eq!(
            body.param_count(),
            plate.shared.len(),
            "one shared value per body parameter"
        );
        assert_eq!(
            body.latent_count(),
            c + plate.row_latents.len(),
            "the body's latents are the columns, then the row latents"
        );
        let active: Vec<usize> = (0..plate.row_latents.len())
            .filter(|&q| wanted[plate.row_latents[q].first as usize])
            .collect();
        let mut active_inputs = vec![false; body.latent_count()];
        for &q in &active {
            active_inputs[c + q] = true;
        }
        let targets = plate
            .shared
            .iter()
            .map(|s| {
                let t = match *s {
                    Shared::Param(k) => Target::Param(k as usize),
                    Shared::Latent(i) => match moved_row[i as usize] {
                        u32::MAX => Target::Nowhere,
                        r => Target::Latent(r as usize),
                    },
                    // A schedule value: its derivative is never read.
                    Shared::GuardFactor(_) => Target::Nowhere,
                };
                let first = t != Target::Nowhere && written.insert(t);
                (t, first)
            })
            .collect();
        let mut run = PlateRun {
            plate: plate.clone(),
            group: RowsTape::new(body, GROUP_ROWS, &active_inputs),
            single: RowsTape::new(body, 1, &active_inputs),
            targets,
            active,
            factors,
            laid: Vec::new(),
        };
        run.laid = run.lay_out_columns();
        run
    }

    /// The body's own tape (one row per lane): LYY18's forced sweeps run it.
    pub(crate) fn body_tape(&self) -> &crate::eval::Tape {
        &self.single.tape
    }

    /// Scratch for one thread.
    pub(crate) fn scratch(&self) -> PlateScratch {
        let inputs = self.plate.body.latent_count();
        PlateScratch {
            group: TapeScratch::new(&self.group),
            single: TapeScratch::new(&self.single),
            inputs: {
                let lanes = if self.plate.row_latents.is_empty() {
                    1
                } else {
                    CHUNK
                };
                vec![vec![0.0; inputs * (BLOCK_ROWS + CHUNK)]; lanes]
            },
            shared: vec![0.0; self.plate.shared.len()],
            zero: vec![-0.0; inputs * GROUP_ROWS],
            one: vec![1.0; inputs * GROUP_ROWS],
            acc: vec![0.0; self.plate.shared.len() * CHUNK],
        }
    }
}

/// The runner's own tests: its results do not depend on the kernel set.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::{Purpose, StreamKey};
    use crate::eval::Values;
    use crate::ir::Semantics;

    /// A plate with a row latent, rows enough for two blocks and a remainder.
    fn plated() -> crate::ir::Model {
        super::fixture::plated(1100, false)
    }

    /// Every kernel set gives the plate's values and gradients the same bits (the compiled
    /// sweeps included), smoothed and crisp, full and short chunks.
    #[test]
    fn a_plates_results_do_not_depend_on_the_kernel_set() {
        use crate::estimate::Problem;
        use crate::eval::vmath::KernelSet;
        let problem = Problem::new(&plated()).unwrap();
        let theta = problem.family().init();
        let mut state = problem.family().state();
        state.update(problem.family(), &theta).unwrap();
        let key = StreamKey::new(4, 9, Purpose::Step);
        let run = |set: KernelSet, w: usize, sem: Semantics| {
            let mut sc = problem.scratch();
            sc.ws.set_kernels(set);
            for ps in &mut sc.plates {
                ps.set_kernels(set);
            }
            problem.draw(key, 0, w, &mut sc);
            let mut bits = Vec::new();
            // Twice: a workspace's second sweep (its kernel chosen) must agree with the first.
            for _ in 0..2 {
                problem.sweep_gradient(&state, &theta, sem, &mut sc, Values::Exact, None);
                bits.extend(sc.grad.value.iter().chain(sc.grad.latents.iter()));
                let mut out = vec![0.0; w];
                problem.forward_values(&state, &theta, sem, &mut sc, &mut out, None);
                bits.extend(out);
            }
            bits.into_iter().map(f64::to_bits).collect::<Vec<_>>()
        };
        for sem in [Semantics::Smoothed { eta: 0.3 }, Semantics::Crisp] {
            for w in [CHUNK, 5] {
                let want = run(KernelSet::Portable, w, sem);
                for set in KernelSet::available() {
                    assert!(run(set, w, sem) == want, "{set:?} {sem:?} w {w}");
                }
            }
        }
    }
}
