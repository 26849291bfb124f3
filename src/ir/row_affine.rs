//! The guards of a plate's body as LYY18 needs them: affine in the model's latents row by
//! row, with coefficients read from the row's data.
//!
//! In the unrolled loop, row `r`'s copy of a guard `a + b * x[i]` reads `x[r]` as a constant,
//! so it is affine in the latents `a` and `b`. In the body the column `x` is an input, so the
//! model's analysis (which reads a column as a latent, to stay on the safe side) finds a
//! product of two inputs. Here a column is data: a guard is affine for every row when it is
//! built from data (columns, constants) and the latents (the shared latents, the row's own)
//! by sums, differences, negations, products with data and quotients by data. Row by row,
//! the form is then computed by the model's own analysis rules ([`affine_step`]) with the
//! row's column values as constants and the inputs named by the model's latent indices, so
//! it is the form the unrolled row's guard has (the same coefficients, in the same order).

use super::analysis::{Affine, AffineGuard, NotAffine, affine_step};
use super::{Binary, Node, NodeId, Plate, Shared, Transform, Unary};

/// What a node of a guard's cone is, for every row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    /// Computed from columns and constants alone.
    Data,
    /// Affine in the latents, with coefficients from the data.
    Linear,
}

/// One if-statement of a plate's body whose guard is affine in the latents in every row.
#[derive(Clone, Debug)]
pub struct RowGuard {
    /// The nodes the guard reads, the guard last, in arena order.
    cone: Vec<NodeId>,
}

impl RowGuard {
    /// The guard of the body's if-statement `index`, or why it is not affine in every row.
    pub fn new(plate: &Plate, index: usize) -> Result<RowGuard, NotAffine> {
        let body = &plate.body;
        let Node::If { guard, .. } = body.node(body.if_node(index)) else {
            unreachable!("if_node always names an If node")
        };
        let reached = body.reachable_from(&[guard]);
        let cone: Vec<NodeId> = (0..body.node_count())
            .filter(|&i| reached[i])
            .map(|i| NodeId(i as u32))
            .collect();
        let mut class = vec![Class::Data; body.node_count()];
        let c = plate.columns.len();
        for &id in &cone {
            let of = |x: NodeId| class[x.index()];
            let constrained = |x: NodeId| match body.node(x) {
                Node::Latent(j) => body.latent_transform(j as usize) != Transform::Identity,
                _ => false,
            };
            class[id.index()] = match body.node(id) {
                Node::Const(_) => Class::Data,
                Node::Latent(j) if (j as usize) < c => Class::Data,
                Node::Latent(_) => Class::Linear,
                Node::Param(k) => match plate.shared[k as usize] {
                    Shared::Latent(_) => Class::Linear,
                    Shared::Param(_) => return Err(NotAffine::DependsOnParam),
                    // A positive factor of the guard: see `Self::at_row`.
                    Shared::GuardFactor(_) => Class::Data,
                },
                Node::If { .. } => return Err(NotAffine::ContainsIf),
                Node::Unary(Unary::Neg, x) => of(x),
                Node::Unary(_, x) => match of(x) {
                    Class::Data => Class::Data,
                    Class::Linear if constrained(x) => {
                        return Err(NotAffine::ConstrainedLatent);
                    }
                    Class::Linear => return Err(NotAffine::Nonlinear),
                },
                Node::Binary(op, x, y) => match (op, of(x), of(y)) {
                    (_, Class::Data, Class::Data) => Class::Data,
                    (Binary::Add | Binary::Sub, ..) => Class::Linear,
                    (Binary::Mul, Class::Data, _) | (Binary::Mul, _, Class::Data) => Class::Linear,
                    (Binary::Div, Class::Linear, Class::Data) => Class::Linear,
                    _ => return Err(NotAffine::Nonlinear),
                },
            };
        }
        Ok(RowGuard { cone })
    }

    /// The guard at row `r` as `c + a . z` over the model's latents. A relative problem's
    /// guard factor (a positive number) is taken as 1: the boundary is the same, and LYY18
    /// reads only the ratios of the coefficients.
    pub fn at_row(&self, plate: &Plate, r: usize) -> AffineGuard {
        let body = &plate.body;
        let c = plate.columns.len();
        let mut memo: Vec<Option<Result<Affine, NotAffine>>> = vec![None; body.node_count()];
        let constrained = |x: NodeId| match body.node(x) {
            Node::Latent(j) => body.latent_transform(j as usize) != Transform::Identity,
            _ => false,
        };
        for &id in &self.cone {
            let form = match body.node(id) {
                Node::Latent(j) if (j as usize) < c => {
                    Ok(Affine::constant(plate.columns[j as usize][r]))
                }
                Node::Latent(j) => Ok(Affine::latent(plate.row_latents[j as usize - c].of_row(r))),
                Node::Param(k) => match plate.shared[k as usize] {
                    Shared::Latent(i) => Ok(Affine::latent(i)),
                    Shared::GuardFactor(_) => Ok(Affine::constant(1.0)),
                    Shared::Param(_) => Err(NotAffine::DependsOnParam),
                },
                node => affine_step(node, &memo, &constrained),
            };
            memo[id.index()] = Some(form);
        }
        let last = self.cone.last().expect("a guard is in its own cone");
        match memo[last.index()].take() {
            Some(Ok(form)) => form.finish(),
            _ => unreachable!("a guard affine for every row has a form at each"),
        }
    }
}

/// The first jump of `plate`'s body whose guard is not affine in every row, with its
/// if-statement index and why (a continuous if-statement's boundary term is zero whatever its
/// guard: `continuous[k]` says which are).
pub fn first_non_affine_row_guard(
    plate: &Plate,
    continuous: &[bool],
) -> Option<(usize, NotAffine)> {
    (0..plate.body.if_count())
        .filter(|&k| !continuous[k])
        .find_map(|k| RowGuard::new(plate, k).err().map(|e| (k, e)))
}
