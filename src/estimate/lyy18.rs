//! LYY18 (Lee, Yu and Yang, NeurIPS 2018): the crisp reparameterisation gradient plus a
//! Monte Carlo estimate of the surface integral over the branch boundaries.
//!
//! Applies to mean-field location-scale families and affine guards `F_k = a_k . z + c_k`,
//! whose coefficients come from `ir::analyse` (never written by hand). A continuous
//! if-statement (its branches agree on its boundary, `ir::GuardInfo::continuous`) has a zero
//! boundary term whatever its guard: it is kept among the `K` (so the choice of `k` is the
//! same) but a lane that picks it adds nothing when its guard is not affine. Per sample: pick an
//! if-statement `k` uniformly, a coordinate `j` with `a_kj != 0` uniformly, move `z_j` onto
//! the boundary to get `z*`, and add
//! `K (f_+(z*) - f_-(z*)) q_j(z*_j) (V n)` with `n_i = sign(-a_kj) a_ki scale_i / a_kj` and
//! `V[p, i] = d s_i / d theta_p` at fixed `z`, evaluated on the boundary point `z*`
//! (the point the surface integral is over). That product simplifies to
//! `(1 / |a_kj|) sum_i a_ki (d loc_i / d theta_p + s*_i d scale_i / d theta_p)`.

use super::pathwise::pathwise_chunk_parts;
use super::plates_lyy18::{PlateGuards, PlatePick, Point, row_jump};
use super::{Channel, Context, EstimateError, Estimator, EstimatorKind, Problem, Scratch};
use crate::cpu::feature_builds;
use crate::eval::Values;
use crate::ir::{AffineGuard, Branch, Semantics};

/// The LYY18 estimator for a program whose guards are all affine.
#[derive(Clone, Debug)]
pub struct Lyy18 {
    /// Per if-statement of the outer program its affine guard; `None` for a continuous one
    /// that is not affine (its boundary term is zero).
    guards: Vec<Option<AffineGuard>>,
    /// The if-statements of the plates' bodies, one per row (`plates_lyy18`).
    plates: PlateGuards,
    /// When set, each lane's jump `f_+ - f_-` is replaced by this per-guard value (the
    /// boundary weights alone, for measuring a control variate; see [`Lyy18::with_jumps`]).
    jumps: Option<Vec<f64>>,
}

impl Lyy18 {
    /// Refuses a program with a jump whose guard is not affine, naming the first one (in a
    /// plate's body: not affine in the latents at every row, its columns read as data).
    pub fn new(problem: &Problem) -> Result<Lyy18, EstimateError> {
        let analysis = problem.analysis();
        let in_plates: usize = problem.plates().map(|p| p.body.if_count()).sum();
        let (outer, bodies) = analysis.guards.split_at(analysis.guards.len() - in_plates);
        if let Some((g, why)) = outer
            .iter()
            .filter(|g| g.jump())
            .find_map(|g| g.affine.clone().err().map(|e| (g, e)))
        {
            return Err(EstimateError::NotAffine {
                index: g.index,
                span: g.span,
                reason: why,
            });
        }
        let plates = PlateGuards::new(problem, bodies)?;
        let guards = outer.iter().map(|g| g.affine.clone().ok()).collect();
        Ok(Lyy18 {
            guards,
            plates,
            jumps: None,
        })
    }

    /// LYY18 with the jump at guard `k`'s boundary replaced by `jumps[k]` in every lane (the
    /// crisp pathwise part unchanged). With unit jumps the boundary part of a sample is the
    /// weight `K w_kj(z*)` a control variate `delta_k K w_kj(z*)` multiplies: a diagnostic,
    /// not an estimator of the gradient. Panics unless there is one jump per if-statement.
    #[doc(hidden)]
    pub fn with_jumps(problem: &Problem, jumps: Vec<f64>) -> Result<Lyy18, EstimateError> {
        let mut e = Lyy18::new(problem)?;
        assert_eq!(jumps.len(), e.guards.len(), "one jump per if-statement");
        e.jumps = Some(jumps);
        Ok(e)
    }

    /// The number of if-statements the analysis lists (a plate's body's once).
    #[doc(hidden)]
    pub fn guard_count(&self) -> usize {
        self.guards.len() + self.plates.analysis_count()
    }
}

impl Estimator for Lyy18 {
    fn kind(&self) -> EstimatorKind {
        EstimatorKind::Lyy18
    }

    fn chunk(
        &self,
        cx: &Context<'_>,
        scratch: &mut Scratch,
        grads: &mut [f64],
        values: &mut [f64],
    ) {
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::avx2_fma() {
            // SAFETY: the CPU has AVX2 and FMA (checked just above).
            unsafe { self.chunk_fma(cx, scratch, grads, values) };
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::fma() {
            // SAFETY: the CPU has FMA (checked just above).
            unsafe { self.chunk_portable_fma(cx, scratch, grads, values) };
            return;
        }
        self.chunk_body(cx, scratch, grads, values);
    }
}

impl Lyy18 {
    feature_builds! {
        {
            #[cfg(target_arch = "x86_64")]
            [fn] (
                &self,
                cx: &Context<'_>,
                scratch: &mut Scratch,
                grads: &mut [f64],
                values: &mut [f64],
            ) {
                self.chunk_body(cx, scratch, grads, values);
            }
        }
        /// [`Estimator::chunk`] compiled with FMA: the boundary points' densities (`exp`, a
        /// chain of `mul_add`s) are scalar code, where the baseline build calls libm's `fma`
        /// for each `mul_add` (about 6 % of textmsg's LYY18 time). Same operations, same bits.
        chunk_fma = "avx2,fma";
        /// [`Lyy18::chunk_fma`] in the portable build (128-bit, with FMA).
        chunk_portable_fma = "fma";
    }

    #[inline(always)]
    fn chunk_body(
        &self,
        cx: &Context<'_>,
        scratch: &mut Scratch,
        grads: &mut [f64],
        values: &mut [f64],
    ) {
        // The outer program's values exact (its forced sweeps reuse them); the plates' as
        // the engine wants them: a row's jump is evaluated afresh (`plates_lyy18`), and an
        // optimisation step's plate sweeps with checked values cost about half as much.
        let wanted = [Values::Exact, cx.values];
        pathwise_chunk_parts(cx, Semantics::Crisp, wanted, scratch, grads, values);
        let p = cx.problem;
        let outer_k = self.guards.len();
        let big_k = outer_k + self.plates.count(p, cx.subsample);
        if big_k == 0 {
            return;
        }
        let st = cx.state;
        let w = scratch.w;
        let m = p.family.model_param_count();
        let n = p.family.latent_count();
        let mut rng = cx.key.rng(Channel::Choice);
        scratch.forced.clear();
        scratch.lanes.clear();
        scratch.moves.clear();
        // Latent `i` of lane `l` at `z`, as the sweeps form it from the noise.
        let s = &scratch.s[..n * w];
        let z = |i: usize, l: usize| st.loc(i) + st.scale(i) * s[i * w + l];
        // Lanes that picked an if-statement of a plate's body: the pick, its guard at the
        // row, the moved coordinate, its value, `a_kj` and `q_j(z*_j)`.
        let mut in_plates: Vec<(usize, PlatePick, AffineGuard, u32, f64, f64, f64)> = Vec::new();
        // Each lane's boundary point, evaluated forced to else and then forced to then by
        // two batched forwards (the same bits as one call per point); right after the crisp
        // sweep at `z`, they redo only what the moved coordinate and forced if reach.
        for l in 0..w {
            let r = rng.lane(cx.first + l);
            let k = r.index(big_k);
            if k >= outer_k {
                scratch.lanes.push(None);
                scratch.forced.push((u32::MAX, Branch::Else));
                scratch.moves.push((u32::MAX, 0.0));
                let pick = self.plates.locate(p, cx.subsample, k - outer_k);
                let Some(guard) = self
                    .plates
                    .form(p, pick)
                    .filter(|g| !g.coefficients.is_empty())
                else {
                    continue;
                };
                let (j, a_j, zj) = boundary_point(&guard, r, |i| z(i, l));
                let q = st.marginal_density(j as usize, zj);
                if q != 0.0 {
                    in_plates.push((l, pick, guard, j, zj, a_j, q));
                }
                continue;
            }
            let Some(guard) = self.guards[k]
                .as_ref()
                .filter(|g| !g.coefficients.is_empty())
            else {
                scratch.lanes.push(None);
                scratch.forced.push((u32::MAX, Branch::Else));
                scratch.moves.push((u32::MAX, 0.0));
                continue;
            };
            let (j, a_j, zj) = boundary_point(guard, r, |i| z(i, l));
            scratch.moves.push((j, zj));
            let q = st.marginal_density(j as usize, zj);
            scratch
                .lanes
                .push((q != 0.0).then_some((k, j as usize, a_j, q)));
            scratch.forced.push((k as u32, Branch::Else));
        }
        if scratch.lanes.iter().any(Option::is_some) {
            for l in 0..w {
                let (k, _) = scratch.forced[l];
                scratch.forced.push((k, Branch::Then));
            }
            let (else_out, then_out) = scratch.out[..2 * w].split_at_mut(w);
            let (forced_else, forced_then) = scratch.forced.split_at(w);
            let (ws, fs, moves) = (&mut scratch.ws, &mut scratch.forcing, &scratch.moves[..]);
            let latents = st.latents(s);
            let params = p.tape_params(st, &cx.theta[..m], &mut scratch.params);
            p.tape
                .forward_forced_moved(ws, fs, params, latents, moves, forced_else, else_out);
            p.tape
                .forward_forced_moved(ws, fs, params, latents, moves, forced_then, then_out);
        }
        for l in 0..w {
            let Some((k, j, a_j, q)) = scratch.lanes[l] else {
                continue;
            };
            let diff = match &self.jumps {
                Some(j) => j[k],
                None => scratch.out[l] - scratch.out[w + l],
            };
            if diff == 0.0 {
                continue;
            }
            let Some(guard) = &self.guards[k] else {
                continue;
            };
            let factor = big_k as f64 * diff * q / a_j.abs();
            let zj = scratch.moves[l].1;
            add_boundary_term(guard, factor, j as u32, zj, st, |i| z(i, l), grads, w, l);
        }
        for (l, pick, guard, j, zj, a_j, q) in in_plates {
            let diff = match &self.jumps {
                Some(jumps) => pick.scale * jumps[self.plates.analysis_index(pick)],
                None => {
                    let point = Point {
                        theta: &cx.theta[..m],
                        state: st,
                        s,
                        w,
                        l,
                        moved: (j, zj),
                    };
                    let pr = &p.plates[pick.plate];
                    pick.scale * row_jump(pr, &mut scratch.boundary[pick.plate], pick, &point)
                }
            };
            if diff == 0.0 {
                continue;
            }
            let factor = big_k as f64 * diff * q / a_j.abs();
            add_boundary_term(&guard, factor, j, zj, st, |i| z(i, l), grads, w, l);
        }
    }
}

/// The boundary point of `guard` a lane moves to: the coordinate `j` it picks (uniformly
/// among those with `a_j != 0`, from its choice stream `r`), `a_j`, and `z*_j` solving
/// `a . z* + c = 0` with the other coordinates at `z`.
#[inline(always)]
fn boundary_point(
    guard: &AffineGuard,
    r: &mut super::SampleRng,
    z: impl Fn(usize) -> f64,
) -> (u32, f64, f64) {
    let (j, a_j) = guard.coefficients[r.index(guard.coefficients.len())];
    let rest: f64 = guard
        .coefficients
        .iter()
        .filter(|&&(i, _)| i != j)
        .map(|&(i, a)| a * z(i as usize))
        .sum();
    (j, a_j, -(guard.constant + rest) / a_j)
}

/// Adds lane `l`'s boundary term `factor sum_i a_i (d loc_i + s*_i d scale_i)` to `grads`,
/// `s*` the noise of the boundary point (`z` with `z_j` moved to `zj`).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn add_boundary_term(
    guard: &AffineGuard,
    factor: f64,
    j: u32,
    zj: f64,
    st: &crate::family::FamilyState,
    z: impl Fn(usize) -> f64,
    grads: &mut [f64],
    w: usize,
    l: usize,
) {
    for &(i, a_i) in &guard.coefficients {
        let z_i = if i == j { zj } else { z(i as usize) };
        let i = i as usize;
        let s_star = (z_i - st.loc(i)) / st.scale(i);
        for (q_idx, dl, ds) in st.jacobian(i) {
            grads[q_idx * w + l] += factor * a_i * (dl + s_star * ds);
        }
    }
}
