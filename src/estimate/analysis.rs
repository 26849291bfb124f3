//! The analysis of a model with plates, as the estimators, `dsgd run`'s bias warning, `dsgd
//! advise` and `dsgd check` read it: the outer program's if-statements, then each plate
//! body's once (standing for its rows'), with the verdicts the unrolled loop's rows get.
//!
//! A body is analysed in the model's terms ([`super::analysis_view`]), which reads a data
//! column as a latent. That is sound for the nesting depth and for continuity (a proof that
//! holds for every value of a column holds for the data), but two verdicts need the data
//! read as data, as the unrolled rows read their numbers: a guard depends on a latent only
//! when it reads a shared latent or the row's own (one that reads only columns, constants
//! and parameters depends on none, as each unrolled row's does), and it is affine (LYY18
//! applies) when it is affine in the latents at every row (`ir::RowGuard`).

use super::analysis_view;
use crate::ir::{
    AffineGuard, Analysis, GuardInfo, Model, Node, NodeId, NotAffine, Plate, RowGuard, Shared,
    UnsafeReason, analyse,
};

/// One if-statement of a plate's body.
pub(crate) struct BodyGuard {
    /// Its analysis, with the data read as data: its safety and affine form corrected as
    /// this module's documentation says (the affine form at row 0, over the model's latents).
    pub info: GuardInfo,
    /// The if-statement's number in the body.
    pub k: usize,
    /// The plate's rows: how many if-statements of the unrolled loop it stands for.
    pub rows: usize,
    /// Its form at row 0 when it is affine at every row, else why not.
    pub affine: Result<AffineGuard, NotAffine>,
}

/// The guards of every plate's body, plate by plate, and the deepest nesting of the bodies.
pub(crate) fn body_guards(model: &Model) -> (Vec<BodyGuard>, u32) {
    let mut out = Vec::new();
    let mut depth = 0;
    for plate in &model.plates {
        let view = analysis_view(plate, model.program.param_names());
        let a = analyse(&view);
        depth = depth.max(a.nesting_depth);
        for (k, mut info) in a.guards.into_iter().enumerate() {
            if info.unsafe_reason.is_none() && !reads_a_latent(plate, k) {
                info.unsafe_reason = Some(UnsafeReason::NoLatent);
            }
            let affine = RowGuard::new(plate, k).map(|g| g.at_row(plate, 0));
            info.affine = affine.clone();
            out.push(BodyGuard {
                info,
                k,
                rows: plate.rows,
                affine,
            });
        }
    }
    (out, depth)
}

/// The outer program's analysis with each plate body's guards after its own (renumbered,
/// judged as [`body_guards`] judges them), and the deepest nesting of all.
pub(crate) fn analysis_with_plates(model: &Model) -> Analysis {
    let mut a = analyse(&model.program);
    let (body, depth) = body_guards(model);
    a.nesting_depth = a.nesting_depth.max(depth);
    for g in body {
        let mut info = g.info;
        info.index = a.guards.len();
        a.guards.push(info);
    }
    a
}

/// Whether the guard of the body's if-statement `k` reads a latent (a shared one or the
/// row's own), not only data and parameters.
fn reads_a_latent(plate: &Plate, k: usize) -> bool {
    let body = &plate.body;
    let Node::If { guard, .. } = body.node(body.if_node(k)) else {
        unreachable!("if_node always names an If node")
    };
    let c = plate.columns.len();
    body.reachable_from(&[guard])
        .iter()
        .enumerate()
        .filter(|&(_, &live)| live)
        .any(|(i, _)| match body.node(NodeId(i as u32)) {
            Node::Latent(j) => j as usize >= c,
            Node::Param(p) => matches!(plate.shared[p as usize], Shared::Latent(_)),
            _ => false,
        })
}
