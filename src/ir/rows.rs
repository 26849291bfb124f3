//! Values known per row: the data columns of a plate's body, and what the builder folds with
//! them.
//!
//! Unrolled, a loop's data values are constants, and the builder folds what depends only on
//! them: an if-statement on data takes one branch, a support check of an observed value
//! disappears. A plate's body reads the same values as columns (latents of the body), so the
//! builder of a body knows which of its latents are columns and their values row by row: a
//! node that depends only on columns and constants is *row-constant*, its value at each row
//! is computed here exactly as constant folding computes it (the same `ops` functions), and
//! an if-statement whose guard is row-constant is folded when every row takes the same
//! branch. Where folding per row would give the unrolled program another shape (rows taking
//! different branches, an exponent read from data), the first such place is recorded, and
//! the front end keeps the loop unrolled.

use std::collections::HashMap;
use std::sync::Arc;

use super::hash::FastBuild;
use super::node::{Node, NodeId};
use super::ops::{binary_value, unary_value};
use super::source::Span;

/// The columns of a body being built and what is known of its nodes.
#[derive(Debug, Default)]
pub(crate) struct RowData {
    /// How many rows every column has.
    pub(crate) rows: usize,
    /// Column values by the body's latent index.
    columns: HashMap<u32, Arc<[f64]>, FastBuild>,
    /// Column latents by a hash of their values (equal columns are one latent).
    by_hash: HashMap<u64, Vec<u32>, FastBuild>,
    /// Whether each node (by index) depends only on columns and constants; extended lazily.
    flags: Vec<bool>,
    /// The first place where the body cannot stand for the unrolled rows, and why.
    pub(crate) problem: Option<(String, Option<Span>)>,
    /// Values computed row by row and not yet counted by the front end.
    pub(crate) work: u64,
}

impl RowData {
    pub(crate) fn new(rows: usize) -> RowData {
        RowData {
            rows,
            ..RowData::default()
        }
    }

    /// Registers body latent `latent` as a column of these values.
    pub(crate) fn add_column(&mut self, latent: u32, values: Arc<[f64]>) {
        self.by_hash
            .entry(content_hash(&values))
            .or_default()
            .push(latent);
        self.columns.insert(latent, values);
    }

    /// The column latent that holds exactly these values, if any.
    pub(crate) fn find_column(&self, values: &[f64]) -> Option<u32> {
        self.by_hash
            .get(&content_hash(values))?
            .iter()
            .copied()
            .find(|k| {
                let c = &self.columns[k];
                c.len() == values.len()
                    && c.iter()
                        .zip(values)
                        .all(|(a, b)| a.to_bits() == b.to_bits())
            })
    }

    /// Every column, by body latent index.
    pub(crate) fn columns(&self) -> impl Iterator<Item = (u32, &Arc<[f64]>)> {
        self.columns.iter().map(|(&k, v)| (k, v))
    }

    /// Whether node `id` depends only on columns and constants.
    pub(crate) fn row_constant(&mut self, nodes: &[Node], id: NodeId) -> bool {
        while self.flags.len() <= id.index() && self.flags.len() < nodes.len() {
            let node = nodes[self.flags.len()];
            let flag = match node {
                Node::Const(_) => true,
                Node::Param(_) => false,
                Node::Latent(i) => self.columns.contains_key(&i),
                _ => node.operands().all(|o| self.flags[o.index()]),
            };
            self.flags.push(flag);
        }
        self.flags.get(id.index()).copied().unwrap_or(false)
    }

    /// Records the first problem (later ones are not needed: one reason is reported).
    pub(crate) fn flag(&mut self, why: &str, span: Option<Span>) {
        self.problem.get_or_insert_with(|| (why.to_string(), span));
    }

    /// The value of row-constant node `id` at every row, as constant folding would compute
    /// it (an if-statement takes the branch its guard's sign says).
    pub(crate) fn values(&mut self, nodes: &[Node], id: NodeId) -> Vec<f64> {
        // The cone, in arena (topological) order.
        let mut seen: HashMap<NodeId, usize, FastBuild> = HashMap::default();
        let mut stack = vec![id];
        let mut cone = Vec::new();
        while let Some(n) = stack.pop() {
            if seen.insert(n, 0).is_some() {
                continue;
            }
            cone.push(n);
            stack.extend(nodes[n.index()].operands());
        }
        cone.sort_unstable();
        for (k, n) in cone.iter().enumerate() {
            seen.insert(*n, k);
        }
        self.work = self
            .work
            .saturating_add((cone.len() as u64).saturating_mul(self.rows as u64));
        let at = |n: NodeId| seen[&n];
        let mut vals = vec![0.0; cone.len()];
        let mut out = Vec::with_capacity(self.rows);
        for r in 0..self.rows {
            for (k, n) in cone.iter().enumerate() {
                vals[k] = match nodes[n.index()] {
                    Node::Const(c) => c,
                    Node::Latent(i) => self.columns.get(&i).map_or(f64::NAN, |c| c[r]),
                    Node::Param(_) => f64::NAN,
                    Node::Unary(op, a) => unary_value(op, vals[at(a)]),
                    Node::Binary(op, a, b) => binary_value(op, vals[at(a)], vals[at(b)]),
                    Node::If {
                        guard,
                        then_,
                        else_,
                        ..
                    } => {
                        if vals[at(guard)] < 0.0 {
                            vals[at(then_)]
                        } else {
                            vals[at(else_)]
                        }
                    }
                };
            }
            out.push(vals[cone.len() - 1]);
        }
        out
    }
}

/// A hash of a column's bits.
fn content_hash(values: &[f64]) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = FastBuild::default().build_hasher();
    for v in values {
        h.write_u64(v.to_bits());
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Builder;

    #[test]
    fn an_if_on_data_folds_when_every_row_agrees_and_is_flagged_otherwise() {
        let b = Builder::for_rows(1000, 3);
        let z = b.latent("z");
        let x = b.column("x", Arc::from(vec![1.0, 2.0, 3.0]));
        let agree = b.if_neg(x, z, b.constant(5.0));
        assert_eq!(agree.as_const(), Some(5.0));
        assert!(b.row_problem().is_none());
        let y = b.column("y", Arc::from(vec![1.0, -2.0, 3.0]));
        assert_eq!(b.row_values(y * 2.0), Some(vec![2.0, -4.0, 6.0]));
        assert_eq!(b.row_values(y + z), None);
        let _mixed = b.if_neg(y, z, b.constant(5.0));
        assert!(b.row_problem().is_some());
    }

    #[test]
    fn equal_columns_are_one_latent() {
        let b = Builder::for_rows(1000, 2);
        let x = b.column("x", Arc::from(vec![1.0, 2.0]));
        let y = b.column("y", Arc::from(vec![1.0, 2.0]));
        assert_eq!(x.id(), y.id());
        assert_eq!(b.latent_count(), 1);
    }
}
