//! The reparameterisation estimator and its smoothed variants (Reparam, Fixed, DSGD): the
//! gradient of `f(theta, phi_theta(s))` under a schedule's semantics.

use super::{Context, Estimator, EstimatorKind, Schedule, Scratch};
use crate::eval::Values;
use crate::ir::Semantics;

/// `grad_theta f(theta, phi_theta(s))` under `schedule.semantics(k)`.
#[derive(Clone, Debug)]
pub struct Pathwise {
    kind: EstimatorKind,
    schedule: Schedule,
}

impl Pathwise {
    /// The pathwise estimator `kind` (Reparam, DSGD or Fixed) under `schedule`.
    pub fn new(kind: EstimatorKind, schedule: Schedule) -> Pathwise {
        Pathwise { kind, schedule }
    }

    /// How its accuracy coefficient evolves.
    pub fn schedule(&self) -> Schedule {
        self.schedule
    }
}

impl Estimator for Pathwise {
    fn kind(&self) -> EstimatorKind {
        self.kind
    }

    fn semantics(&self, k: u64) -> Semantics {
        self.schedule.semantics(k)
    }

    fn chunk(
        &self,
        cx: &Context<'_>,
        scratch: &mut Scratch,
        grads: &mut [f64],
        values: &mut [f64],
    ) {
        pathwise_chunk(cx, cx.semantics, cx.values, scratch, grads, values);
    }
}

/// The pathwise gradient samples under `semantics`, with `f` values exact or checked
/// (shared with LYY18, whose forced sweeps reuse an exact sweep's values).
pub(super) fn pathwise_chunk(
    cx: &Context<'_>,
    semantics: Semantics,
    wanted: Values,
    scratch: &mut Scratch,
    grads: &mut [f64],
    values: &mut [f64],
) {
    pathwise_chunk_parts(cx, semantics, [wanted; 2], scratch, grads, values);
}

/// [`pathwise_chunk`] with the outer program's values and the plates' wanted each exact or
/// checked (see `ProblemData::sweep_gradient_parts`).
pub(super) fn pathwise_chunk_parts(
    cx: &Context<'_>,
    semantics: Semantics,
    wanted: [Values; 2],
    scratch: &mut Scratch,
    grads: &mut [f64],
    values: &mut [f64],
) {
    let p = cx.problem;
    p.sweep_gradient_parts(cx.state, cx.theta, semantics, scratch, wanted, cx.subsample);
    let logp = std::mem::take(&mut scratch.grad.value);
    p.f_values(cx.state, scratch, &logp, values, cx.subsample);
    scratch.grad.value = logp;
    p.pathwise_block(cx.state, scratch, grads, cx.subsample);
}
