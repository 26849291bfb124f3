//! The builder: the one way nodes come into being, for Rust users and for the language alike.
//!
//! Every node passes through [`Graph::add`], which folds constants, applies algebraic
//! identities that cannot change a finite result, resolves if-statements whose guard is a
//! compile-time constant, and interns the node so that a repeated subexpression is stored
//! once. Dead nodes are dropped by [`Builder::finish`].

use std::cell::RefCell;
use std::collections::HashMap;

mod graph;

pub(crate) use graph::{Graph, Retargets};
mod var;

use super::error::IrError;
use super::hash::FastBuild;
use super::node::{Binary, Node, NodeId, Unary};
use super::program::Program;
use super::rows::RowData;
use super::source::Span;
use super::term::{PendingTerm, TermKind};
use super::transform::Transform;

/// Default bound on the number of nodes a builder accepts (see [`Builder::with_node_limit`]).
pub const DEFAULT_NODE_LIMIT: usize = 10_000_000;

/// Builds a program node by node. Nodes are handed out as [`Var`]s, which support the usual
/// arithmetic operators, so a model reads like the formula it implements:
///
/// ```
/// use dsgd::ir::Builder;
/// let b = Builder::new();
/// let theta = b.param("theta");
/// let z = b.latent("z");
/// let f = -0.5 * z.powi(2) + b.if_lt(z, b.constant(0.0), b.constant(0.0), b.constant(1.0));
/// let program = b.finish(&[f]).unwrap();
/// assert_eq!(program.if_count(), 1);
/// # let _ = theta;
/// ```
#[derive(Debug)]
pub struct Builder {
    g: RefCell<Graph>,
}

/// A node handle tied to its builder; `Copy`, and combined with operators.
#[derive(Copy, Clone, Debug)]
pub struct Var<'b> {
    builder: &'b Builder,
    id: NodeId,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

impl Builder {
    pub fn new() -> Builder {
        Self::with_node_limit(DEFAULT_NODE_LIMIT)
    }

    /// A builder that refuses programs of more than `limit` nodes (after simplification).
    pub fn with_node_limit(limit: usize) -> Builder {
        Builder {
            g: RefCell::new(Graph {
                limit,
                ..Graph::default()
            }),
        }
    }

    /// A builder for a plate's body over `rows` rows: its columns ([`Builder::column`]) are
    /// known row by row, and it folds what depends only on them as unrolling would (see
    /// `rows.rs`).
    pub fn for_rows(limit: usize, rows: usize) -> Builder {
        Builder {
            g: RefCell::new(Graph {
                limit,
                rows: Some(Box::new(RowData::new(rows))),
                ..Graph::default()
            }),
        }
    }

    /// A column of a body ([`Builder::for_rows`]): a latent whose value at row `r` is
    /// `values[r]`. Equal columns are one latent.
    ///
    /// # Panics
    /// If the builder was not made by [`Builder::for_rows`] or `values` has another length.
    pub fn column(&self, name: &str, values: std::sync::Arc<[f64]>) -> Var<'_> {
        let mut g = self.g.borrow_mut();
        let rows = g.rows.as_deref().expect("a body builder");
        assert_eq!(values.len(), rows.rows, "a column has a value per row");
        let id = g.column(values);
        if let Node::Latent(k) = g.node(id)
            && let Some(slot) = g.latent_names.get_mut(k as usize)
            && slot.starts_with("column")
        {
            *slot = name.to_string();
        }
        drop(g);
        self.wrap(id)
    }

    /// Whether `v` depends only on a body's columns and constants.
    pub fn is_row_constant(&self, v: Var<'_>) -> bool {
        let mut g = self.g.borrow_mut();
        let g = &mut *g;
        match g.rows.as_deref_mut() {
            Some(rows) => rows.row_constant(&g.nodes, v.id),
            None => false,
        }
    }

    /// The value of `v` at every row, when it depends only on columns and constants.
    pub fn row_values(&self, v: Var<'_>) -> Option<Vec<f64>> {
        if !self.is_row_constant(v) {
            return None;
        }
        let mut g = self.g.borrow_mut();
        let g = &mut *g;
        g.rows
            .as_deref_mut()
            .map(|rows| rows.values(&g.nodes, v.id))
    }

    /// How many units of `per_unit` values a body has computed row by row since the last
    /// call (the rest carries over): the front end counts them as work.
    pub fn take_row_work(&self, per_unit: u64) -> u64 {
        let mut g = self.g.borrow_mut();
        match g.rows.as_deref_mut() {
            Some(rows) if per_unit > 0 => {
                let units = rows.work / per_unit;
                rows.work %= per_unit;
                units
            }
            _ => 0,
        }
    }

    /// The first place where a body cannot stand for its unrolled rows, and why.
    pub fn row_problem(&self) -> Option<(String, Option<Span>)> {
        let g = self.g.borrow();
        g.rows.as_deref().and_then(|r| r.problem.clone())
    }

    /// Records a place where a body cannot stand for its unrolled rows (the first is kept).
    pub fn flag_rows(&self, why: &str, span: Option<Span>) {
        if let Some(rows) = self.g.borrow_mut().rows.as_deref_mut() {
            rows.flag(why, span);
        }
    }

    /// The columns of a body, by its latent index (call before [`Builder::finish`]).
    pub fn columns(&self) -> Vec<(u32, std::sync::Arc<[f64]>)> {
        let g = self.g.borrow();
        let mut out: Vec<_> = g
            .rows
            .as_deref()
            .map(|r| r.columns().map(|(k, v)| (k, v.clone())).collect())
            .unwrap_or_default();
        out.sort_by_key(|c| c.0);
        out
    }

    /// Declares the next latent without a node: a latent of the model that this program does
    /// not read (a plate's row latent, read by the plate's body). Returns its index.
    pub fn declare_latent(&self, name: &str, transform: Transform) -> u32 {
        let mut g = self.g.borrow_mut();
        g.latent_names.push(name.to_string());
        g.latent_transforms.push(transform);
        g.latent_names.len() as u32 - 1
    }

    /// Copies the cone of `root`, a node of `from`, into this builder: inputs (`Param`,
    /// `Latent`) become what `input` returns, if-statements keep their spans. `copied` maps
    /// nodes of `from` already copied (kept between calls, so shared parts are copied once).
    pub fn import(
        &self,
        from: &Builder,
        root: NodeId,
        copied: &mut HashMap<NodeId, NodeId, FastBuild>,
        input: &mut dyn FnMut(Node) -> NodeId,
    ) -> NodeId {
        let mut stack = vec![(root, false)];
        while let Some((id, ready)) = stack.pop() {
            if copied.contains_key(&id) {
                continue;
            }
            let (node, span) = {
                let f = from.g.borrow();
                (f.node(id), f.if_spans.get(&id).copied())
            };
            if !ready {
                stack.push((id, true));
                for op in node.operands() {
                    if !copied.contains_key(&op) {
                        stack.push((op, false));
                    }
                }
                continue;
            }
            let new = match node {
                Node::Param(_) | Node::Latent(_) => input(node),
                Node::Const(c) => self.g.borrow_mut().constant(c),
                other => {
                    let mapped = other.map_operands(|o| copied[&o]);
                    let mut g = self.g.borrow_mut();
                    let saved = g.current_span;
                    if span.is_some() {
                        g.current_span = span;
                    }
                    let id = g.add(mapped);
                    g.current_span = saved;
                    id
                }
            };
            copied.insert(id, new);
        }
        copied[&root]
    }

    /// A handle to node `id` of this builder, unchecked (for ids this builder handed out).
    pub fn handle(&self, id: NodeId) -> Var<'_> {
        self.wrap(id)
    }

    pub(super) fn wrap(&self, id: NodeId) -> Var<'_> {
        Var { builder: self, id }
    }

    /// Declares the next parameter theta_k.
    pub fn param(&self, name: &str) -> Var<'_> {
        let mut g = self.g.borrow_mut();
        let k = g.param_names.len() as u32;
        g.param_names.push(name.to_string());
        let id = g.add(Node::Param(k));
        drop(g);
        self.wrap(id)
    }

    /// Declares the next latent variable z_i (on the whole real line).
    pub fn latent(&self, name: &str) -> Var<'_> {
        self.latent_on(name, Transform::Identity)
    }

    /// Declares the next latent variable, the unconstrained `u_i` of a latent whose value is
    /// `transform(u_i)`. The program's latent is `u_i`: the caller builds `z = T(u)` and adds
    /// `log |T'(u)|` to the log-density (see [`Builder::constrained_latent`], which does
    /// both); the transform is recorded so that results can be reported in `z`'s units.
    pub fn latent_on(&self, name: &str, transform: Transform) -> Var<'_> {
        let mut g = self.g.borrow_mut();
        let i = g.latent_names.len() as u32;
        g.latent_names.push(name.to_string());
        g.latent_transforms.push(transform);
        let id = g.add(Node::Latent(i));
        drop(g);
        self.wrap(id)
    }

    /// The already declared parameter number `index`.
    pub fn param_at(&self, index: usize) -> Result<Var<'_>, IrError> {
        let count = self.param_count();
        if index >= count {
            return Err(IrError::ParamOutOfRange { index, count });
        }
        let id = self.g.borrow_mut().add(Node::Param(index as u32));
        Ok(self.wrap(id))
    }

    /// The already declared latent number `index`.
    pub fn latent_at(&self, index: usize) -> Result<Var<'_>, IrError> {
        let count = self.latent_count();
        if index >= count {
            return Err(IrError::LatentOutOfRange { index, count });
        }
        let id = self.g.borrow_mut().add(Node::Latent(index as u32));
        Ok(self.wrap(id))
    }

    /// A handle for a raw node id, checked to belong to this builder.
    pub fn var(&self, id: NodeId) -> Result<Var<'_>, IrError> {
        let count = self.node_count();
        if id.index() >= count {
            return Err(IrError::NodeOutOfRange {
                node: id.to_string(),
                count,
            });
        }
        Ok(self.wrap(id))
    }

    pub fn param_count(&self) -> usize {
        self.g.borrow().param_names.len()
    }

    pub fn latent_count(&self) -> usize {
        self.g.borrow().latent_names.len()
    }

    /// Nodes created so far (including ones that may turn out dead).
    pub fn node_count(&self) -> usize {
        self.g.borrow().nodes.len()
    }

    /// Whether the node limit was hit; the builder then hands out placeholder nodes and
    /// [`Builder::finish`] fails. Long-running front ends poll this to stop early.
    pub fn overflowed(&self) -> bool {
        self.g.borrow().overflowed
    }

    /// The source span recorded on if-statements created from now on (`None` for none).
    pub fn set_span(&self, span: Option<Span>) {
        self.g.borrow_mut().current_span = span;
    }

    /// Records `term` as one statement's contribution to the objective (of `kind`, at `span`
    /// in the source), with the values it was made from (`inputs`: the observed or sampled
    /// value and the distribution's arguments). This changes nothing in the program; it lets
    /// a run that turns NaN or infinite name the statement ([`crate::ir::blame`]).
    pub fn record_term(&self, kind: TermKind, span: Span, term: Var<'_>, inputs: &[Var<'_>]) {
        let node = self.own(term);
        let inputs: Vec<NodeId> = inputs.iter().map(|&v| self.own(v)).collect();
        let mut g = self.g.borrow_mut();
        if g.overflowed {
            return;
        }
        let start = g.term_inputs.len() as u32;
        g.term_inputs.extend(inputs);
        let end = g.term_inputs.len() as u32;
        g.terms.push(PendingTerm {
            kind,
            span,
            node,
            inputs: (start, end),
            hoisted: (0, 0),
        });
    }

    /// The node behind `v` (for passes over the graph being built, such as
    /// [`Builder::sum_hoisting_constants`]).
    pub(crate) fn node_of(&self, v: Var<'_>) -> Node {
        let id = self.own(v);
        self.g.borrow().node(id)
    }

    /// Points every recorded term whose node is a key of `moved` at the node it maps to,
    /// with the constant operations that turn that node's value into the term's.
    pub(crate) fn retarget_terms(&self, moved: &Retargets) {
        let mut g = self.g.borrow_mut();
        let g = &mut *g;
        for t in &mut g.terms {
            if let Some((to, ops)) = moved.get(&t.node) {
                let start = g.term_hoisted.len() as u32;
                g.term_hoisted.extend_from_slice(ops);
                t.node = *to;
                t.hoisted = (start, g.term_hoisted.len() as u32);
            }
        }
    }

    pub fn constant(&self, c: f64) -> Var<'_> {
        let id = self.g.borrow_mut().constant(c);
        self.wrap(id)
    }

    /// The node of `v`, checked to belong to this builder. A foreign handle is recorded for
    /// [`Builder::finish`] to report and replaced by a placeholder, since the operators that
    /// get here cannot return an error.
    fn own(&self, v: Var<'_>) -> NodeId {
        let mut g = self.g.borrow_mut();
        if std::ptr::eq(v.builder, self) && v.id.index() < g.nodes.len() {
            return v.id;
        }
        g.foreign.get_or_insert(v.id);
        g.constant(f64::NAN)
    }

    pub fn unary<'b>(&'b self, op: Unary, a: Var<'b>) -> Var<'b> {
        let a = self.own(a);
        let id = self.g.borrow_mut().add(Node::Unary(op, a));
        self.wrap(id)
    }

    pub fn binary<'b>(&'b self, op: Binary, a: Var<'b>, b: Var<'b>) -> Var<'b> {
        let (a, b) = (self.own(a), self.own(b));
        let id = self.g.borrow_mut().add(Node::Binary(op, a, b));
        self.wrap(id)
    }

    /// `a^e`; a compile-time integer exponent becomes `powi`, which is defined for `a < 0`.
    pub fn pow<'b>(&'b self, a: Var<'b>, e: Var<'b>) -> Var<'b> {
        if e.as_const().is_none() && self.is_row_constant(e) {
            // Unrolled, an integer exponent from data would be `powi`, defined for `a < 0`.
            let mut g = self.g.borrow_mut();
            let span = g.current_span;
            if let Some(rows) = g.rows.as_deref_mut() {
                rows.flag("an exponent read from data", span);
            }
        }
        match e.as_const() {
            Some(n) if n == n.trunc() && n.abs() <= 64.0 => self.unary(Unary::Powi(n as i32), a),
            _ => self.binary(Binary::Pow, a, e),
        }
    }

    /// The if-statement `if guard < 0 then then_ else else_`.
    pub fn if_neg<'b>(&'b self, guard: Var<'b>, then_: Var<'b>, else_: Var<'b>) -> Var<'b> {
        let (guard, then_, else_) = (self.own(guard), self.own(then_), self.own(else_));
        let id = self.g.borrow_mut().add(Node::If {
            guard,
            then_,
            else_,
            index: 0,
        });
        self.wrap(id)
    }

    /// `if a < b then t else e` (guard `a - b`).
    pub fn if_lt<'b>(&'b self, a: Var<'b>, b: Var<'b>, t: Var<'b>, e: Var<'b>) -> Var<'b> {
        self.if_neg(a - b, t, e)
    }

    /// `if a > b then t else e` (guard `b - a`).
    pub fn if_gt<'b>(&'b self, a: Var<'b>, b: Var<'b>, t: Var<'b>, e: Var<'b>) -> Var<'b> {
        self.if_neg(b - a, t, e)
    }

    /// `|x| = if x < 0 then -x else x` (derivative +1 at 0).
    pub fn abs<'b>(&'b self, x: Var<'b>) -> Var<'b> {
        self.if_neg(x, -x, x)
    }

    /// `max(a, b) = if a < b then b else a`.
    pub fn max<'b>(&'b self, a: Var<'b>, b: Var<'b>) -> Var<'b> {
        self.if_lt(a, b, b, a)
    }

    /// `min(a, b) = if a < b then a else b`.
    pub fn min<'b>(&'b self, a: Var<'b>, b: Var<'b>) -> Var<'b> {
        self.if_lt(a, b, a, b)
    }

    /// `relu(x) = if x < 0 then 0 else x`.
    pub fn relu<'b>(&'b self, x: Var<'b>) -> Var<'b> {
        self.if_neg(x, self.constant(0.0), x)
    }

    /// `step(x) = if x < 0 then 0 else 1` (so `step(0) = 1`).
    pub fn step<'b>(&'b self, x: Var<'b>) -> Var<'b> {
        self.if_neg(x, self.constant(0.0), self.constant(1.0))
    }

    /// The sum of `terms` (0 for none), added left to right.
    pub fn sum<'b>(&'b self, terms: &[Var<'b>]) -> Var<'b> {
        let mut total = self.constant(0.0);
        for &t in terms {
            total = total + t;
        }
        total
    }

    /// Ends building: keeps the nodes the outputs depend on, numbers the if-statements
    /// densely in arena order, and returns the finished program. `outputs[0]` is the
    /// program's objective; further outputs are kept alive for whoever needs them (e.g. the
    /// location and scale expressions of a user family).
    ///
    /// The builder is left empty afterwards (handles into it become invalid).
    pub fn finish(&self, outputs: &[Var<'_>]) -> Result<Program, IrError> {
        let ids: Vec<NodeId> = outputs.iter().map(|&v| self.own(v)).collect();
        self.finish_ids(&ids)
    }

    /// [`Builder::finish`] with raw node ids (checked).
    pub fn finish_ids(&self, outputs: &[NodeId]) -> Result<Program, IrError> {
        let limit = self.g.borrow().limit;
        let g = self.g.replace(Graph {
            limit,
            ..Graph::default()
        });
        if g.overflowed {
            return Err(IrError::TooLarge { limit: g.limit });
        }
        if let Some(node) = g.foreign {
            return Err(IrError::NodeOutOfRange {
                node: node.to_string(),
                count: g.nodes.len(),
            });
        }
        if outputs.is_empty() {
            return Err(IrError::NoOutput);
        }
        if let Some(bad) = outputs.iter().find(|id| id.index() >= g.nodes.len()) {
            return Err(IrError::NodeOutOfRange {
                node: bad.to_string(),
                count: g.nodes.len(),
            });
        }
        Ok(g.into_program(outputs))
    }
}

pub(crate) fn check_arity(
    name: &str,
    expected: &str,
    ok: bool,
    found: usize,
) -> Result<(), IrError> {
    if ok {
        Ok(())
    } else {
        Err(IrError::Arity {
            name: name.to_string(),
            expected: expected.to_string(),
            found,
        })
    }
}
