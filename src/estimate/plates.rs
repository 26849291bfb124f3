//! Plates in the estimators: each plate's body compiled to a tape of its own and run over
//! the rows, its value and gradients added to the outer program's per sample.
//!
//! For one sample (a lane of the chunk) the body's parameters are the shared values of that
//! sample (the model's parameters, and global latents `loc + scale * s` formed as the outer
//! sweep forms them), and the rows of a block of [`BLOCK_ROWS`] are the body tape's batch:
//! its latent inputs are the columns at those rows and the rows' own latents. The block's
//! inputs are handed to the tape as reparameterised noise of location `-0.0` and scale `1`
//! (`-0.0 + 1 * x` is `x`, bit for bit, signed zeros included), so that the compiled
//! forward sweep, which reads only that form, runs.
//!
//! Each lane's per-row results are summed in row order, the lanes' sums advancing together
//! (sixteen independent chains of additions instead of one): the sums do not depend on the
//! number of threads, the kernel set or the block size.
//!
//! Subsampled ([`Subsample`]): the rows are the drawn ones, in increasing order, and the sums
//! are scaled by `n / M`; a row's own latents get a gradient only when the row is drawn.

use crate::elementary;
use crate::eval::{BatchGradient, CHUNK, Latents, Tape, Values, Workspace};
use crate::family::FamilyState;
use crate::ir::{Plate, Semantics, Shared};
use crate::special::HALF_LN_2PI;

use super::rng::{Channel, StreamKey};

/// Rows per call of a body's tape. Large enough that the per-call work (the shared part of
/// the body, run once per call) is negligible, small enough that a block's inputs and
/// per-row gradients of all sixteen lanes stay in the L2 cache.
pub(crate) const BLOCK_ROWS: usize = 512;

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
    tape: Tape,
    /// Per body parameter: where its gradient goes, and whether it is the first to write
    /// that row at a call (the outer sweep leaves a row it has no adjoint for as zeros written
    /// once, so the first writer overwrites it instead of adding).
    targets: Vec<(Target, bool)>,
    /// The row latents with a gradient: `(q, row of the body's latent gradient)`.
    active: Vec<(usize, usize)>,
}

/// One thread's scratch for one plate.
#[derive(Clone, Debug)]
pub(crate) struct PlateScratch {
    ws: Workspace,
    /// Per lane, the block's per-row values and gradients.
    grads: Vec<BatchGradient>,
    /// Per lane, the block's per-row values of a forward sweep.
    outs: Vec<f64>,
    /// The block's inputs, input-major (`[j * b + t]` for a block of `b` rows).
    inputs: Vec<f64>,
    /// One lane's shared values (the body's parameters).
    shared: Vec<f64>,
    /// The identity as a location-scale map: `-0.0` and `1` per input.
    zero: Vec<f64>,
    one: Vec<f64>,
    /// Per parameter and lane (`[k * CHUNK + l]`), the gradient summed so far.
    acc: Vec<f64>,
}

/// Which rows a call runs.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Rows<'a> {
    /// Every row, scale 1.
    All,
    /// The drawn rows (increasing), their sums scaled by `scale` (`n / M`).
    Drawn { rows: &'a [u32], scale: f64 },
}

/// The outer gradient rows a plate adds into, and the chunk's noise.
pub(crate) struct Outer<'a> {
    pub theta: &'a [f64],
    pub state: &'a FamilyState,
    /// The chunk's noise, latent-major (`s[i * w + l]`).
    pub s: &'a [f64],
    pub w: usize,
    /// The moved-latent row of each model latent (`u32::MAX` for a fixed one).
    pub moved_row: &'a [u32],
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
        let mut active_inputs = vec![false; body.latent_count()];
        let mut active = Vec::new();
        for (q, rl) in plate.row_latents.iter().enumerate() {
            if wanted[rl.first as usize] {
                active_inputs[c + q] = true;
            }
        }
        for (q, _) in plate.row_latents.iter().enumerate() {
            if active_inputs[c + q] {
                active.push((q, active.len()));
            }
        }
        let tape = Tape::compile_active(body, 0, Some(&active_inputs));
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
                };
                let first = t != Target::Nowhere && written.insert(t);
                (t, first)
            })
            .collect();
        PlateRun {
            plate: plate.clone(),
            tape,
            targets,
            active,
        }
    }

    /// Scratch for one thread.
    pub(crate) fn scratch(&self) -> PlateScratch {
        let inputs = self.plate.body.latent_count();
        let active = self
            .active
            .iter()
            .map(|&(q, _)| (self.plate.columns.len() + q) as u32);
        PlateScratch {
            ws: self.tape.workspace(),
            grads: (0..CHUNK)
                .map(|_| {
                    BatchGradient::for_latents(&self.tape, BLOCK_ROWS, active.clone().collect())
                })
                .collect(),
            outs: vec![0.0; CHUNK * BLOCK_ROWS],
            inputs: vec![0.0; inputs * BLOCK_ROWS],
            shared: vec![0.0; self.plate.shared.len()],
            zero: vec![-0.0; inputs],
            one: vec![1.0; inputs],
            acc: vec![0.0; self.plate.shared.len() * CHUNK],
        }
    }

    /// How many rows a call runs.
    fn count(&self, rows: Rows<'_>) -> usize {
        match rows {
            Rows::All => self.plate.rows,
            Rows::Drawn { rows, .. } => rows.len(),
        }
    }

    /// Fills lane `l`'s shared values.
    fn shared_values(&self, ps: &mut PlateScratch, o: &Outer<'_>, l: usize) {
        for (v, s) in ps.shared.iter_mut().zip(&self.plate.shared) {
            *v = match *s {
                Shared::Param(k) => o.theta[k as usize],
                Shared::Latent(i) => {
                    let i = i as usize;
                    // As `Latents::load` forms it: multiplied, then added.
                    o.state.loc(i) + o.state.scale(i) * o.s[i * o.w + l]
                }
            };
        }
    }

    /// Writes the block's columns (rows `row(0..b)`).
    fn fill_columns(&self, ps: &mut PlateScratch, b: usize, row: &impl Fn(usize) -> usize) {
        for (j, col) in self.plate.columns.iter().enumerate() {
            for (t, x) in ps.inputs[j * b..(j + 1) * b].iter_mut().enumerate() {
                *x = col[row(t)];
            }
        }
    }

    /// Writes lane `l`'s row latents of the block.
    fn fill_row_latents(
        &self,
        ps: &mut PlateScratch,
        o: &Outer<'_>,
        l: usize,
        b: usize,
        row: &impl Fn(usize) -> usize,
    ) {
        let c = self.plate.columns.len();
        for (q, rl) in self.plate.row_latents.iter().enumerate() {
            for (t, x) in ps.inputs[(c + q) * b..(c + q + 1) * b]
                .iter_mut()
                .enumerate()
            {
                let i = rl.of_row(row(t)) as usize;
                *x = o.state.loc(i) + o.state.scale(i) * o.s[i * o.w + l];
            }
        }
    }

    /// Adds the plate's value and gradients to the outer per-sample gradient `grad` (of the
    /// chunk's `o.w` lanes) under `semantics`.
    pub(crate) fn add_gradient(
        &self,
        ps: &mut PlateScratch,
        o: &Outer<'_>,
        semantics: Semantics,
        values: Values,
        rows: Rows<'_>,
        grad: &mut BatchGradient,
    ) {
        let w = o.w;
        let k_count = self.plate.shared.len();
        let count = self.count(rows);
        let inputs = self.plate.body.latent_count();
        let mut value = [0.0; CHUNK];
        ps.acc.fill(0.0);
        let scale = match rows {
            Rows::All => 1.0,
            Rows::Drawn { scale, .. } => scale,
        };
        // A row latent's gradient row is written by its plate alone: undrawn rows get zeros.
        if let Rows::Drawn { .. } = rows {
            for &(q, _) in &self.active {
                let rl = self.plate.row_latents[q];
                for r in 0..self.plate.rows {
                    let m = o.moved_row[rl.of_row(r) as usize] as usize;
                    grad.latents[m * w..(m + 1) * w].fill(0.0);
                }
            }
        }
        let mut start = 0;
        while start < count {
            let b = BLOCK_ROWS.min(count - start);
            let row = |t: usize| match rows {
                Rows::All => start + t,
                Rows::Drawn { rows, .. } => rows[start + t] as usize,
            };
            self.fill_columns(ps, b, &row);
            for l in 0..w {
                self.shared_values(ps, o, l);
                self.fill_row_latents(ps, o, l, b, &row);
                let g = &mut ps.grads[l];
                g.resize(&self.tape, b);
                self.tape.gradient_latents(
                    &mut ps.ws,
                    semantics,
                    &ps.shared,
                    Latents::Affine {
                        noise: &ps.inputs[..inputs * b],
                        loc: &ps.zero,
                        scale: &ps.one,
                    },
                    g,
                    values,
                );
            }
            // Row order within each lane; the lanes' chains side by side.
            let grads = &ps.grads[..w];
            for t in 0..b {
                for (v, g) in value.iter_mut().zip(grads) {
                    *v += g.value[t];
                }
            }
            for k in 0..k_count {
                let acc = &mut ps.acc[k * CHUNK..k * CHUNK + w];
                for t in 0..b {
                    for (a, g) in acc.iter_mut().zip(grads) {
                        *a += g.params[k * b + t];
                    }
                }
            }
            for &(q, a) in &self.active {
                let rl = self.plate.row_latents[q];
                for t in 0..b {
                    let m = o.moved_row[rl.of_row(row(t)) as usize] as usize;
                    for (l, g) in grads.iter().enumerate() {
                        grad.latents[m * w + l] = scale * g.latents[a * b + t];
                    }
                }
            }
            start += b;
        }
        for (v, x) in grad.value[..w].iter_mut().zip(&value) {
            *v += scale * x;
        }
        for (k, &(target, first)) in self.targets.iter().enumerate() {
            let dest = match target {
                Target::Param(p) => &mut grad.params[p * w..(p + 1) * w],
                Target::Latent(r) => &mut grad.latents[r * w..(r + 1) * w],
                Target::Nowhere => continue,
            };
            for (d, &a) in dest.iter_mut().zip(&ps.acc[k * CHUNK..k * CHUNK + w]) {
                *d = if first { scale * a } else { *d + scale * a };
            }
        }
    }

    /// Adds the plate's value to `out[..o.w]` (a forward sweep only) under `semantics`.
    pub(crate) fn add_values(
        &self,
        ps: &mut PlateScratch,
        o: &Outer<'_>,
        semantics: Semantics,
        rows: Rows<'_>,
        out: &mut [f64],
    ) {
        let w = o.w;
        let count = self.count(rows);
        let inputs = self.plate.body.latent_count();
        let mut value = [0.0; CHUNK];
        let scale = match rows {
            Rows::All => 1.0,
            Rows::Drawn { scale, .. } => scale,
        };
        let mut start = 0;
        while start < count {
            let b = BLOCK_ROWS.min(count - start);
            let row = |t: usize| match rows {
                Rows::All => start + t,
                Rows::Drawn { rows, .. } => rows[start + t] as usize,
            };
            self.fill_columns(ps, b, &row);
            for l in 0..w {
                self.shared_values(ps, o, l);
                self.fill_row_latents(ps, o, l, b, &row);
                self.tape.forward_latents(
                    &mut ps.ws,
                    semantics,
                    &ps.shared,
                    Latents::Affine {
                        noise: &ps.inputs[..inputs * b],
                        loc: &ps.zero,
                        scale: &ps.one,
                    },
                    &mut ps.outs[l * BLOCK_ROWS..l * BLOCK_ROWS + b],
                );
            }
            for t in 0..b {
                for (l, v) in value[..w].iter_mut().enumerate() {
                    *v += ps.outs[l * BLOCK_ROWS + t];
                }
            }
            start += b;
        }
        for (v, x) in out[..w].iter_mut().zip(&value) {
            *v += scale * x;
        }
    }
}

/// One iteration's subsample: for each plate the rows drawn (increasing) and `n / M`, and
/// what the row latents' part of `-log q` becomes.
///
/// Every estimator is then applied to `f_S`, the integrand with each plate's sum over rows
/// (its body and its rows' own `-log q`) replaced by `n / M` times the sum over the drawn rows
/// `S`. For every `z`, the mean of `f_S` over the draws is `f`: so the pathwise gradient of
/// `f_S` is unbiased for the ELBO's; so is the score estimator's, with the score of the
/// latents `f_S` reads (a row's latents when the row is drawn: an undrawn row's latents do
/// not enter `f_S`, and their score, independent of `f_S`, would add variance only). A
/// drawn row's latents thus get `n / M` times their pathwise gradient, their entropy's
/// included, as in Pyro's subsampled plates.
#[derive(Clone, Debug)]
pub struct Subsample {
    /// Per plate: the drawn rows and `n / M`; `None` where every row is read.
    pub(crate) plates: Vec<Option<(Vec<u32>, f64)>>,
    /// Per model latent, the weight of its `-log q` in `f_S`: 1, or for a row latent `n / M`
    /// when its row is drawn and 0 otherwise. Empty when no subsampled plate has row latents.
    pub(crate) weight: Vec<f64>,
    /// `sum_i weight_i (ln scale_i + ln(2 pi) / 2)` over the latents in the entropy.
    pub(crate) entropy_const: f64,
}

impl Subsample {
    /// The rows of plate `p`.
    pub(crate) fn rows(this: Option<&Subsample>, p: usize) -> Rows<'_> {
        match this.and_then(|s| s.plates[p].as_ref()) {
            Some((rows, scale)) => Rows::Drawn {
                rows,
                scale: *scale,
            },
            None => Rows::All,
        }
    }

    /// The weights of the latents' `-log q`, when some are not 1.
    pub(crate) fn weights(this: Option<&Subsample>) -> Option<&[f64]> {
        this.map(|s| &s.weight[..]).filter(|w| !w.is_empty())
    }

    /// The rows drawn of plate `p`, `None` where every row is read.
    pub fn drawn(&self, p: usize) -> Option<&[u32]> {
        self.plates[p].as_ref().map(|(r, _)| &r[..])
    }
}

/// `m` distinct rows of `0..n`, increasing, drawn by Floyd's algorithm from `key`'s rows
/// channel (a function of the seed, purpose and iteration alone: the same for every sample).
pub(crate) fn draw_rows(key: StreamKey, plate: usize, n: usize, m: usize) -> Vec<u32> {
    let mut rng = key.rng(Channel::Rows);
    // Each plate its own lane of the stream.
    rng.lane(plate);
    let mut chosen = std::collections::HashSet::with_capacity(m);
    for j in n - m..n {
        let t = rng.index(j + 1);
        if !chosen.insert(t) {
            chosen.insert(j);
        }
    }
    let mut rows: Vec<u32> = chosen.into_iter().map(|r| r as u32).collect();
    rows.sort_unstable();
    rows
}

/// The subsample of `m` rows a plate for iteration `key` (`None` when no plate has more than
/// `m` rows).
pub(crate) fn subsample(
    plates: &[PlateRun],
    in_entropy: &[bool],
    key: StreamKey,
    m: usize,
    state: &FamilyState,
) -> Option<Subsample> {
    let drawn: Vec<Option<(Vec<u32>, f64)>> = plates
        .iter()
        .enumerate()
        .map(|(p, pr)| {
            let n = pr.plate.rows;
            (m < n).then(|| (draw_rows(key, p, n, m), n as f64 / m as f64))
        })
        .collect();
    if drawn.iter().all(Option::is_none) {
        return None;
    }
    let with_latents = plates
        .iter()
        .zip(&drawn)
        .any(|(pr, d)| d.is_some() && !pr.plate.row_latents.is_empty());
    let mut weight = Vec::new();
    let mut entropy_const = state.entropy_const();
    if with_latents {
        weight = vec![1.0; in_entropy.len()];
        for (pr, d) in plates.iter().zip(&drawn) {
            let Some((rows, scale)) = d else { continue };
            for rl in &pr.plate.row_latents {
                for r in 0..pr.plate.rows {
                    weight[rl.of_row(r) as usize] = 0.0;
                }
                for &r in rows {
                    weight[rl.of_row(r as usize) as usize] = *scale;
                }
            }
        }
        entropy_const = 0.0;
        for (i, (&wt, &e)) in weight.iter().zip(in_entropy).enumerate() {
            if e && wt != 0.0 {
                entropy_const += wt * (elementary::ln(state.scale(i)) + HALF_LN_2PI);
            }
        }
    }
    Some(Subsample {
        plates: drawn,
        weight,
        entropy_const,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::Purpose;

    /// The rows are distinct, increasing, in range, the same for a key and different for
    /// another iteration; every row is drawn about equally often.
    #[test]
    fn drawn_rows_are_distinct_and_uniform() {
        let (n, m) = (20, 5);
        let mut counts = vec![0usize; n];
        let draws = 4000;
        for it in 0..draws {
            let key = StreamKey::new(7, it, Purpose::Step);
            let rows = draw_rows(key, 0, n, m);
            assert_eq!(rows.len(), m);
            assert!(rows.windows(2).all(|p| p[0] < p[1]));
            assert!(rows.iter().all(|&r| (r as usize) < n));
            assert_eq!(rows, draw_rows(key, 0, n, m));
            for r in rows {
                counts[r as usize] += 1;
            }
        }
        // Each row is drawn with probability m / n: binomial counts, 5 standard errors.
        let p = m as f64 / n as f64;
        let mean = draws as f64 * p;
        let se = (draws as f64 * p * (1.0 - p)).sqrt();
        for c in counts {
            assert!((c as f64 - mean).abs() < 5.0 * se, "{c} against {mean}");
        }
    }
}
