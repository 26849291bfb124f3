//! The if-statements of the plates' bodies as `dsgd check` judges them: once per plate, each
//! standing for its rows' if-statements, with the verdicts the unrolled loop's rows get.
//!
//! The body is analysed in the model's terms (`estimate::plates::analysis_view`), which reads
//! a data column as a latent to stay on the safe side. Two verdicts need the data read as
//! data, as the unrolled rows read their numbers: a guard is affine (LYY18 applies) when it is
//! affine in the latents at every row (`ir::RowGuard`), and a guard that reads only columns,
//! constants and parameters depends on no latent (unsafe, as each unrolled row's is).

use crate::estimate::analysis_view;
use crate::ir::{
    AffineGuard, GuardInfo, Model, Node, NotAffine, Plate, RowGuard, Shared, UnsafeReason, analyse,
};

/// One if-statement of a plate's body.
pub(super) struct BodyGuard {
    /// The analysis of the body in the model's terms (its safety corrected for data).
    pub info: GuardInfo,
    /// The if-statement's number in the body.
    pub k: usize,
    /// The plate's rows: how many if-statements of the unrolled loop it stands for.
    pub rows: usize,
    /// Its form at row 0 when it is affine at every row, else why not.
    pub affine: Result<AffineGuard, NotAffine>,
}

/// The guards of every plate's body, plate by plate, and the deepest nesting of the bodies.
pub(super) fn body_guards(model: &Model) -> (Vec<BodyGuard>, u32) {
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
        .any(|(i, _)| match body.node(crate::ir::NodeId(i as u32)) {
            Node::Latent(j) => j as usize >= c,
            Node::Param(p) => matches!(plate.shared[p as usize], Shared::Latent(_)),
            _ => false,
        })
}
