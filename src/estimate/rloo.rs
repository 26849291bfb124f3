//! The score-function estimator with a leave-one-out baseline (RLOO, Kool et al. 2019):
//! each lane's `f` is centred by the mean `f` of the other lanes of its chunk before it
//! multiplies the score, `(f_l - mean_{j != l} f_j) * grad_theta log q(z_l) + grad_theta f`.
//!
//! The baseline of lane `l` is a function of the other lanes' independent noise only, so it
//! is independent of `z_l`, and `E[b * grad log q(z_l)] = E[b] E[grad log q] = 0`: the estimator
//! stays unbiased whatever the discontinuities, as plain Score is, while the centred `f` cuts
//! the variance that grows with `|f|`. The lanes share baselines within a chunk of up to
//! [`CHUNK`] lanes (the whole batch at the default batch 16), so the result does not depend
//! on the number of threads; a chunk of one lane has no other lane and no baseline.

use super::score::{add_scores_with, direct_and_values};
use super::{Context, Estimator, EstimatorKind, Scratch};
use crate::eval::CHUNK;

/// Score with a leave-one-out baseline over the chunk's lanes.
#[derive(Clone, Debug)]
pub struct Rloo;

impl Estimator for Rloo {
    fn kind(&self) -> EstimatorKind {
        EstimatorKind::Rloo
    }

    fn chunk(
        &self,
        cx: &Context<'_>,
        scratch: &mut Scratch,
        grads: &mut [f64],
        values: &mut [f64],
    ) {
        direct_and_values(cx, scratch, grads, values);
        let w = scratch.w;
        let mut centred = [0.0; CHUNK];
        leave_one_out(&values[..w], &mut centred[..w]);
        add_scores_with(cx, scratch, grads, &centred[..w]);
    }
}

/// `out[l] = values[l] - mean_{j != l} values[j]` (the values themselves when there is only
/// one). The others' sum is formed directly, not as the total minus `values[l]`, so that a
/// huge `f` in one lane cannot cancel the others' digits away.
fn leave_one_out(values: &[f64], out: &mut [f64]) {
    let w = values.len();
    if w < 2 {
        out.copy_from_slice(values);
        return;
    }
    let inv = 1.0 / (w - 1) as f64;
    for (l, o) in out.iter_mut().enumerate() {
        let others: f64 = values
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != l)
            .map(|(_, v)| v)
            .sum();
        *o = values[l] - others * inv;
    }
}

#[cfg(test)]
mod tests {
    use super::leave_one_out;

    #[test]
    fn each_lane_is_centred_by_the_others_mean() {
        let v = [1.0, 2.0, 6.0];
        let mut out = [0.0; 3];
        leave_one_out(&v, &mut out);
        assert_eq!(out, [1.0 - 4.0, 2.0 - 3.5, 6.0 - 1.5]);
        let mut one = [0.0];
        leave_one_out(&[5.0], &mut one);
        assert_eq!(one, [5.0]);
    }
}
