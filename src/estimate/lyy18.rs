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

use super::pathwise::pathwise_chunk;
use super::{Channel, Context, EstimateError, Estimator, EstimatorKind, Problem, Scratch};
use crate::eval::Values;
use crate::ir::{AffineGuard, Branch, Semantics};

/// The LYY18 estimator for a program whose guards are all affine.
#[derive(Clone, Debug)]
pub struct Lyy18 {
    /// Per if-statement its affine guard; `None` for a continuous one that is not affine
    /// (its boundary term is zero).
    guards: Vec<Option<AffineGuard>>,
    /// When set, each lane's jump `f_+ - f_-` is replaced by this per-guard value (the
    /// boundary weights alone, for measuring a control variate; see [`Lyy18::with_jumps`]).
    jumps: Option<Vec<f64>>,
}

impl Lyy18 {
    /// Refuses a program with a jump whose guard is not affine, naming the first one.
    /// Refuses a model with plates too: its forced sweeps run the outer program only.
    pub fn new(problem: &Problem) -> Result<Lyy18, EstimateError> {
        if let Some(plate) = problem.plates.first() {
            return Err(EstimateError::Plates {
                var: plate.plate.var.clone(),
                span: plate.plate.span,
            });
        }
        let analysis = problem.analysis();
        if let Some((g, why)) = analysis.first_non_affine() {
            return Err(EstimateError::NotAffine {
                index: g.index,
                span: g.span,
                reason: why,
            });
        }
        let guards = analysis
            .guards
            .iter()
            .map(|g| g.affine.clone().ok())
            .collect();
        Ok(Lyy18 {
            guards,
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

    /// The number of if-statements (`K`).
    #[doc(hidden)]
    pub fn guard_count(&self) -> usize {
        self.guards.len()
    }
}

impl Estimator for Lyy18 {
    fn kind(&self) -> EstimatorKind {
        EstimatorKind::Lyy18
    }

    fn semantics(&self, _k: u64) -> Semantics {
        Semantics::Crisp
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
    /// [`Estimator::chunk`] compiled with FMA: the boundary points' densities (`exp`, a chain
    /// of `mul_add`s) are scalar code, where the baseline build calls libm's `fma` for each
    /// `mul_add` (about 6 % of textmsg's LYY18 time). Same operations, same bits.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn chunk_fma(
        &self,
        cx: &Context<'_>,
        scratch: &mut Scratch,
        grads: &mut [f64],
        values: &mut [f64],
    ) {
        self.chunk_body(cx, scratch, grads, values);
    }

    /// [`Lyy18::chunk_fma`] in the portable build (128-bit, with FMA).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "fma")]
    fn chunk_portable_fma(
        &self,
        cx: &Context<'_>,
        scratch: &mut Scratch,
        grads: &mut [f64],
        values: &mut [f64],
    ) {
        self.chunk_body(cx, scratch, grads, values);
    }

    #[inline(always)]
    fn chunk_body(
        &self,
        cx: &Context<'_>,
        scratch: &mut Scratch,
        grads: &mut [f64],
        values: &mut [f64],
    ) {
        pathwise_chunk(cx, Semantics::Crisp, Values::Exact, scratch, grads, values);
        let big_k = self.guards.len();
        if big_k == 0 {
            return;
        }
        let p = cx.problem;
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
        // Each lane's boundary point, evaluated forced to else and then forced to then by
        // two batched forwards (the same bits as one call per point); right after the crisp
        // sweep at `z`, they redo only what the moved coordinate and forced if reach.
        for l in 0..w {
            let r = rng.lane(cx.first + l);
            let k = r.index(big_k);
            let Some(guard) = self.guards[k]
                .as_ref()
                .filter(|g| !g.coefficients.is_empty())
            else {
                scratch.lanes.push(None);
                scratch.forced.push((u32::MAX, Branch::Else));
                scratch.moves.push((u32::MAX, 0.0));
                continue;
            };
            let (j, a_j) = guard.coefficients[r.index(guard.coefficients.len())];
            // Solve a . z* + c = 0 for z*_j.
            let rest: f64 = guard
                .coefficients
                .iter()
                .filter(|&&(i, _)| i != j)
                .map(|&(i, a)| a * z(i as usize, l))
                .sum();
            let zj = -(guard.constant + rest) / a_j;
            scratch.moves.push((j, zj));
            let q = st.marginal_density(j as usize, zj);
            scratch
                .lanes
                .push((q != 0.0).then_some((k, j as usize, a_j, q)));
            scratch.forced.push((k as u32, Branch::Else));
        }
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
            for &(i, a_i) in &guard.coefficients {
                let i = i as usize;
                let z_i = if i == j { scratch.moves[l].1 } else { z(i, l) };
                let s_star = (z_i - st.loc(i)) / st.scale(i);
                for (q_idx, dl, ds) in st.jacobian(i) {
                    grads[q_idx * w + l] += factor * a_i * (dl + s_star * ds);
                }
            }
        }
    }
}
