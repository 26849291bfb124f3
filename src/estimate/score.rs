//! The score-function estimator: `f * grad_theta log q_theta(z) + grad_theta f(theta, z)` at
//! fixed `z`, crisp. Unbiased whatever the discontinuities, but its variance grows with `|f|`.

use super::{Context, Estimator, EstimatorKind, Scratch};
use crate::eval::Values;
use crate::ir::Semantics;

/// The score-function (REINFORCE) estimator, without a baseline as in the paper.
#[derive(Clone, Debug)]
pub struct Score;

impl Estimator for Score {
    fn kind(&self) -> EstimatorKind {
        EstimatorKind::Score
    }

    fn chunk(
        &self,
        cx: &Context<'_>,
        scratch: &mut Scratch,
        grads: &mut [f64],
        values: &mut [f64],
    ) {
        direct_and_values(cx, scratch, grads, values);
        add_scores_with(cx, scratch, grads, values);
    }
}

/// The crisp `f` of the drawn lanes into `values` and its direct derivative `grad_theta f` at
/// fixed `z` into `grads` (shared with the leave-one-out variant).
pub(super) fn direct_and_values(
    cx: &Context<'_>,
    scratch: &mut Scratch,
    grads: &mut [f64],
    values: &mut [f64],
) {
    let p = cx.problem;
    let fam = &p.family;
    let w = scratch.w;
    let d = p.dim();
    let m = fam.model_param_count();
    // Only the model's own parameters need the tape's reverse sweep; without them the
    // direct derivative of log p is zero and a forward pass suffices.
    if m > 0 {
        p.sweep_gradient(
            cx.state,
            cx.theta,
            Semantics::Crisp,
            scratch,
            Values::Exact,
            cx.subsample,
        );
        scratch.out[..w].copy_from_slice(&scratch.grad.value[..w]);
    } else {
        let mut out = std::mem::take(&mut scratch.out);
        p.forward_values(
            cx.state,
            cx.theta,
            Semantics::Crisp,
            scratch,
            &mut out,
            cx.subsample,
        );
        scratch.out = out;
    }
    let logp = std::mem::take(&mut scratch.out);
    p.f_values(cx.state, scratch, &logp, values, cx.subsample);
    scratch.out = logp;
    grads[..m * w].copy_from_slice(&scratch.grad.params[..m * w]);
    grads[m * w..d * w].fill(0.0);
}

/// Adds `coeff_l * d log q(z_l) / d theta` to each lane's gradient sample (`coeff = f` for
/// the plain estimator, `f` minus a baseline for the leave-one-out one).
pub(super) fn add_scores_with(
    cx: &Context<'_>,
    scratch: &Scratch,
    grads: &mut [f64],
    coeff: &[f64],
) {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::avx2_fma() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        unsafe { add_scores_avx2(cx, scratch, grads, coeff) };
        return;
    }
    add_scores(cx, scratch, grads, coeff);
}

/// [`add_scores`] compiled for AVX2 (no fused multiply-adds, so the same bits).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn add_scores_avx2(cx: &Context<'_>, scratch: &Scratch, grads: &mut [f64], values: &[f64]) {
    add_scores(cx, scratch, grads, values);
}

/// Adds `f * d log q(z) / d theta` to the chunk's gradient samples.
#[inline(always)]
fn add_scores(cx: &Context<'_>, scratch: &Scratch, grads: &mut [f64], values: &[f64]) {
    let fam = &cx.problem.family;
    let w = scratch.w;
    // d log N(z | loc, scale) = (s / scale) d loc + ((s^2 - 1) / scale) d scale at fixed z.
    // In variational mode f contains -log q(z), whose direct derivative is the negative.
    // A fixed latent's Jacobian is empty: only the moved latents contribute. Subsampled, the
    // `-log q` of a drawn row's latent counts `n / M` times, and an undrawn row's latents are
    // not in `f_S` (see `Subsample`): no score.
    let weights = super::Subsample::weights(cx.subsample);
    for &i in &cx.problem.moved {
        let i = i as usize;
        let inv = 1.0 / cx.state.scale(i);
        let weight = weights.map_or(1.0, |wt| wt[i]);
        if weight == 0.0 {
            continue;
        }
        let entropy = if fam.in_entropy(i) { weight } else { 0.0 };
        for (q, dl, ds) in cx.state.jacobian(i) {
            let s = &scratch.s[i * w..(i + 1) * w];
            for ((g, &s), &v) in grads[q * w..(q + 1) * w].iter_mut().zip(s).zip(values) {
                let score = inv * (s * dl + (s * s - 1.0) * ds);
                *g += (v - entropy) * score;
            }
        }
    }
}
