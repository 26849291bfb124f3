//! Whether a gradient estimator is biased for a program, from the static analysis alone: the
//! one warning that `dsgd run`, `dsgd advise` and the convergence verdict share.
//!
//! A *jump* is an if-statement whose branches may differ on its boundary (continuous ones,
//! `min`, `max`, `abs`, `relu` and any whose branches provably agree where the guard is
//! zero, are not: see `ir::analysis`). The crisp gradients miss what a jump does at its
//! boundary:
//!
//! - **Reparam** differentiates the crisp program at fixed noise, so it misses the mass that
//!   crosses a jump whose guard reads a latent, and the motion of one whose guard reads a
//!   parameter.
//! - **Score** and **RLOO** differentiate the density of the noise, which accounts for
//!   latents crossing boundaries, but not for a boundary that a parameter moves.
//! - **LYY18** adds the boundary term of every affine jump; it is refused where a jump is not
//!   affine (a parameter in its guard included).
//! - **DSGD** and **Fixed** are biased by the smoothing at a given eta only, which the run's
//!   smoothing gap measures; no static warning.

use crate::estimate::EstimatorKind;
use crate::ir::{Analysis, GuardInfo, Program};

/// Why `kind` is biased for the program of `analysis`, or `None` when it is not (or only by
/// smoothing). The first offending if-statement is located in `program`'s source.
pub fn estimator_bias(
    kind: EstimatorKind,
    analysis: &Analysis,
    program: &Program,
) -> Option<String> {
    use EstimatorKind::*;
    let first = |mut it: Box<dyn Iterator<Item = &GuardInfo> + '_>| {
        let g = it.next()?;
        Some((1 + it.count(), location(program, g)))
    };
    let moving = first(Box::new(analysis.param_dependent()));
    let crossing = first(Box::new(analysis.latent_dependent()));
    match kind {
        Reparam | Score | Rloo if moving.is_some() => {
            let (n, at) = moving?;
            Some(format!(
                "{kind} is biased for this program: {n} if-statement(s) whose branches differ on \
                 the boundary depend on a parameter directly (first at {at}); the crisp gradient \
                 misses the motion of that boundary, only smoothing (dsgd, fixed) accounts for it"
            ))
        }
        Reparam => {
            let (n, at) = crossing?;
            Some(format!(
                "reparam is biased for this program: {n} if-statement(s) whose branches differ \
                 on the boundary depend on a latent (first at {at}); the reparameterisation \
                 gradient misses the mass crossing that boundary (use dsgd, lyy18, score or rloo)"
            ))
        }
        _ => None,
    }
}

/// `file:line:col` of an if-statement, or `if-statement #k` without source text.
pub fn location(program: &Program, g: &GuardInfo) -> String {
    match (program.source(), g.span) {
        (Some(source), Some(span)) => {
            let at = crate::lang::locate(&source.text, span);
            format!("{}:{}:{}", source.file, at.line, at.column)
        }
        _ => format!("if-statement #{}", g.index),
    }
}
