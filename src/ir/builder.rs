//! The builder: the one way nodes come into being, for Rust users and for the language alike.
//!
//! Every node passes through [`Graph::add`], which folds constants, applies algebraic
//! identities that cannot change a finite result, resolves if-statements whose guard is a
//! compile-time constant, and interns the node so that a repeated subexpression is stored
//! once. Dead nodes are dropped by [`Builder::finish`].

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops;

use super::error::IrError;
use super::hash::{FastBuild, hash32, spread};
use super::node::{Binary, Node, NodeId, Unary};
use super::ops::{binary_value, unary_value};
use super::program::Program;
use super::rows::RowData;
use super::source::Span;
use super::term::{PendingTerm, Term, TermKind, TermNode};
use super::transform::Transform;

/// Default bound on the number of nodes a builder accepts (see [`Builder::with_node_limit`]).
pub const DEFAULT_NODE_LIMIT: usize = 10_000_000;

/// Terms to point elsewhere: from a node to another and the constant operations (innermost
/// first) that turn the other's value into the term's ([`Builder::retarget_terms`]).
pub(crate) type Retargets = HashMap<NodeId, (NodeId, Vec<(Binary, f64)>), FastBuild>;

/// The growing DAG behind a [`Builder`].
#[derive(Debug, Default)]
pub(crate) struct Graph {
    pub(crate) nodes: Vec<Node>,
    /// Every node once, by its structure: a table of ids (with each node's hash) whose keys
    /// are read from `nodes`, so a million-node program costs 8 bytes a slot here instead of
    /// a copy of each node, and growing the table never rereads the nodes.
    interned: hashbrown::HashTable<(NodeId, u32)>,
    pub(crate) param_names: Vec<String>,
    pub(crate) latent_names: Vec<String>,
    /// How each latent's constrained value is made from the unconstrained one (by index).
    pub(crate) latent_transforms: Vec<Transform>,
    /// Source span of each `If` node (by node id), where the front end gave one.
    pub(crate) if_spans: HashMap<NodeId, Span, FastBuild>,
    current_span: Option<Span>,
    /// The terms the front end recorded ([`Builder::record_term`]) and their inputs.
    pub(crate) terms: Vec<PendingTerm>,
    pub(crate) term_inputs: Vec<NodeId>,
    /// The constant operations hoisted out of terms (ranges in [`PendingTerm::hoisted`]).
    pub(crate) term_hoisted: Vec<(Binary, f64)>,
    /// The first handle used here that belongs to another builder (or to this one before
    /// `finish` emptied it); `finish` reports it instead of building a wrong program.
    foreign: Option<NodeId>,
    next_if: u32,
    limit: usize,
    overflowed: bool,
    /// A plate body's columns ([`Builder::for_rows`]); `None` for an ordinary program.
    rows: Option<Box<RowData>>,
}

impl Graph {
    /// The program of a finished graph: dead-code elimination and renumbering in
    /// topological order, each if-statement numbered and its span kept, each recorded term
    /// pointed at its live node (or its folded constant).
    fn into_program(self, outputs: &[NodeId]) -> Program {
        let g = self;
        let mut live = vec![false; g.nodes.len()];
        for &o in outputs {
            live[o.index()] = true;
        }
        for i in (0..g.nodes.len()).rev() {
            if live[i] {
                for op in g.nodes[i].operands() {
                    live[op.index()] = true;
                }
            }
        }
        let mut new_id = vec![NodeId(u32::MAX); g.nodes.len()];
        let mut nodes = Vec::with_capacity(live.iter().filter(|&&l| l).count());
        let mut if_nodes = Vec::new();
        let mut if_spans = Vec::new();
        for (i, node) in g.nodes.iter().enumerate() {
            if !live[i] {
                continue;
            }
            let id = NodeId(nodes.len() as u32);
            new_id[i] = id;
            let mut node = node.map_operands(|op| new_id[op.index()]);
            if let Node::If { ref mut index, .. } = node {
                *index = if_nodes.len() as u32;
                if_nodes.push(id);
                if_spans.push(g.if_spans.get(&NodeId(i as u32)).copied());
            }
            nodes.push(node);
        }
        // A term's node (or input) that is dead was folded into a constant or not needed.
        let term_node = |id: NodeId| match (new_id[id.index()], g.nodes[id.index()]) {
            (k, _) if k.0 != u32::MAX => TermNode::Node(k),
            (_, Node::Const(c)) => TermNode::Const(c),
            _ => TermNode::Gone,
        };
        let term_inputs: Vec<TermNode> = g.term_inputs.iter().map(|&i| term_node(i)).collect();
        let terms = g
            .terms
            .iter()
            .map(|t| Term {
                kind: t.kind,
                span: t.span,
                node: term_node(t.node),
                inputs: t.inputs,
                hoisted: t.hoisted,
            })
            .collect();
        Program {
            nodes,
            outputs: outputs.iter().map(|o| new_id[o.index()]).collect(),
            param_names: g.param_names,
            latent_names: g.latent_names,
            latent_transforms: g.latent_transforms,
            if_nodes,
            if_spans,
            terms,
            term_inputs,
            term_hoisted: g.term_hoisted,
            source: None,
        }
    }

    /// The column latent of a body ([`Builder::for_rows`]) holding `values` (an existing one
    /// if one holds them).
    fn column(&mut self, values: std::sync::Arc<[f64]>) -> NodeId {
        let found = self.rows.as_deref().and_then(|r| r.find_column(&values));
        let k = match found {
            Some(k) => k,
            None => {
                let k = self.latent_names.len() as u32;
                self.latent_names.push(format!("column{k}"));
                self.latent_transforms.push(Transform::Identity);
                if let Some(rows) = self.rows.as_deref_mut() {
                    rows.add_column(k, values);
                }
                k
            }
        };
        self.add(Node::Latent(k))
    }

    fn node(&self, id: NodeId) -> Node {
        self.nodes[id.index()]
    }

    fn constant_of(&self, id: NodeId) -> Option<f64> {
        self.node(id).as_const()
    }

    /// The node already interned that equals `node`, if any.
    fn find(&self, node: &Node, hash: u32) -> Option<NodeId> {
        let nodes = &self.nodes;
        self.interned
            .find(spread(hash), |&(id, h)| {
                h == hash && nodes[id.index()] == *node
            })
            .map(|&(id, _)| id)
    }

    fn intern(&mut self, node: Node) -> NodeId {
        let hash = hash32(&node);
        if let Some(id) = self.find(&node, hash) {
            return id;
        }
        if self.nodes.len() >= self.limit {
            // Keep going without growing: the error is reported by `finish`, and the caller
            // (e.g. a runaway loop in the language) stops at its next check of `overflowed`.
            self.overflowed = true;
            // The placeholder must exist, or folding would index an empty arena (limit 0).
            if !self.nodes.is_empty() {
                return NodeId(0);
            }
        }
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(node);
        self.interned
            .insert_unique(spread(hash), (id, hash), |&(_, h)| spread(h));
        id
    }

    fn constant(&mut self, c: f64) -> NodeId {
        self.intern(Node::Const(c))
    }

    /// Adds a node after simplifying it; returns the id of an equivalent node.
    pub(crate) fn add(&mut self, node: Node) -> NodeId {
        match node {
            Node::Unary(op, a) => {
                if let Some(x) = self.constant_of(a) {
                    return self.constant(unary_value(op, x));
                }
                match (op, self.node(a)) {
                    (Unary::Neg, Node::Unary(Unary::Neg, inner)) => return inner,
                    (Unary::Powi(1), _) => return a,
                    (Unary::Powi(0), _) => return self.constant(1.0),
                    _ => {}
                }
                self.intern(node)
            }
            Node::Binary(op, a, b) => self.add_binary(op, a, b),
            Node::If {
                guard,
                then_,
                else_,
                ..
            } => {
                if let Some(g) = self.constant_of(guard) {
                    return if g < 0.0 { then_ } else { else_ };
                }
                if then_ == else_ {
                    return then_;
                }
                if let Some(rows) = self.rows.as_deref_mut()
                    && rows.row_constant(&self.nodes, guard)
                {
                    // Unrolled, each row's guard is a constant: fold when the rows agree.
                    let g = rows.values(&self.nodes, guard);
                    // The crisp choice: `then_` when `g < 0` (so a NaN guard takes `else_`).
                    let takes_then: Vec<bool> = g.iter().map(|&g| g < 0.0).collect();
                    if takes_then.iter().all(|&t| t) {
                        return then_;
                    }
                    if takes_then.iter().all(|&t| !t) {
                        return else_;
                    }
                    if rows.row_constant(&self.nodes, then_)
                        && rows.row_constant(&self.nodes, else_)
                    {
                        // A choice between data values (`abs(x[i])`): a column of its own.
                        let (t, e) = (
                            rows.values(&self.nodes, then_),
                            rows.values(&self.nodes, else_),
                        );
                        let values: std::sync::Arc<[f64]> = takes_then
                            .iter()
                            .zip(t.iter().zip(&e))
                            .map(|(&then, (&t, &e))| if then { t } else { e })
                            .collect();
                        return self.column(values);
                    }
                    rows.flag(
                        "an if-statement whose condition reads only data takes different branches in different rows",
                        self.current_span,
                    );
                }
                let probe = Node::If {
                    guard,
                    then_,
                    else_,
                    index: 0,
                };
                if let Some(id) = self.find(&probe, hash32(&probe)) {
                    return id;
                }
                let index = self.next_if;
                let id = self.intern(Node::If {
                    guard,
                    then_,
                    else_,
                    index,
                });
                if !self.overflowed {
                    self.next_if += 1;
                    if let Some(span) = self.current_span {
                        self.if_spans.insert(id, span);
                    }
                }
                id
            }
            _ => self.intern(node),
        }
    }

    fn add_binary(&mut self, op: Binary, a: NodeId, b: NodeId) -> NodeId {
        let (ca, cb) = (self.constant_of(a), self.constant_of(b));
        if let (Some(x), Some(y)) = (ca, cb) {
            return self.constant(binary_value(op, x, y));
        }
        // Identities that hold for every finite value of the other operand. Multiplying by a
        // constant zero gives zero even if the other side is infinite: a branch weighted by
        // zero contributes nothing, which is the meaning the language wants.
        match (op, ca, cb) {
            (Binary::Add, Some(0.0), _) => return b,
            (Binary::Add | Binary::Sub, _, Some(0.0)) => return a,
            (Binary::Sub, Some(0.0), _) => return self.add(Node::Unary(Unary::Neg, b)),
            (Binary::Mul, Some(1.0), _) => return b,
            (Binary::Mul | Binary::Div, _, Some(1.0)) => return a,
            (Binary::Mul, Some(0.0), _) | (Binary::Mul, _, Some(0.0)) => {
                return self.constant(0.0);
            }
            (Binary::Mul, Some(-1.0), _) => return self.add(Node::Unary(Unary::Neg, b)),
            (Binary::Mul, _, Some(-1.0)) => return self.add(Node::Unary(Unary::Neg, a)),
            _ => {}
        }
        // Addition and multiplication commute exactly in IEEE arithmetic, so a canonical
        // operand order lets `a + b` and `b + a` share one node.
        let (a, b) = if matches!(op, Binary::Add | Binary::Mul) && b < a {
            (b, a)
        } else {
            (a, b)
        };
        self.intern(Node::Binary(op, a, b))
    }
}

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

impl<'b> Var<'b> {
    /// The node this handle refers to.
    pub fn id(self) -> NodeId {
        self.id
    }

    /// The builder this handle belongs to.
    pub fn builder(self) -> &'b Builder {
        self.builder
    }

    /// The constant value of this node, if it folded to a constant.
    pub fn as_const(self) -> Option<f64> {
        self.builder.g.borrow().constant_of(self.id)
    }

    fn unary(self, op: Unary) -> Var<'b> {
        self.builder.unary(op, self)
    }

    pub fn exp(self) -> Var<'b> {
        self.unary(Unary::Exp)
    }
    pub fn ln(self) -> Var<'b> {
        self.unary(Unary::Log)
    }
    pub fn ln_1p(self) -> Var<'b> {
        self.unary(Unary::Log1p)
    }
    pub fn exp_m1(self) -> Var<'b> {
        self.unary(Unary::Expm1)
    }
    pub fn sqrt(self) -> Var<'b> {
        self.unary(Unary::Sqrt)
    }
    pub fn softplus(self) -> Var<'b> {
        self.unary(Unary::Softplus)
    }
    pub fn sigmoid(self) -> Var<'b> {
        self.unary(Unary::Sigmoid)
    }
    pub fn tanh(self) -> Var<'b> {
        self.unary(Unary::Tanh)
    }
    pub fn sin(self) -> Var<'b> {
        self.unary(Unary::Sin)
    }
    pub fn cos(self) -> Var<'b> {
        self.unary(Unary::Cos)
    }
    pub fn lgamma(self) -> Var<'b> {
        self.unary(Unary::Lgamma)
    }
    pub fn probit(self) -> Var<'b> {
        self.unary(Unary::Probit)
    }
    pub fn normal_cdf(self) -> Var<'b> {
        self.unary(Unary::NormalCdf)
    }
    pub fn log_normal_cdf(self) -> Var<'b> {
        self.unary(Unary::LogNormalCdf)
    }
    pub fn powi(self, n: i32) -> Var<'b> {
        self.unary(Unary::Powi(n))
    }
    /// `self^e`; an exponent that is a compile-time integer becomes `powi`.
    pub fn pow(self, e: Var<'b>) -> Var<'b> {
        self.builder.pow(self, e)
    }
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

macro_rules! binary_operator {
    ($trait:ident, $method:ident, $op:expr) => {
        impl<'b> ops::$trait<Var<'b>> for Var<'b> {
            type Output = Var<'b>;
            fn $method(self, rhs: Var<'b>) -> Var<'b> {
                self.builder.binary($op, self, rhs)
            }
        }
        impl<'b> ops::$trait<f64> for Var<'b> {
            type Output = Var<'b>;
            fn $method(self, rhs: f64) -> Var<'b> {
                let c = self.builder.constant(rhs);
                self.builder.binary($op, self, c)
            }
        }
        impl<'b> ops::$trait<Var<'b>> for f64 {
            type Output = Var<'b>;
            fn $method(self, rhs: Var<'b>) -> Var<'b> {
                let c = rhs.builder.constant(self);
                rhs.builder.binary($op, c, rhs)
            }
        }
    };
}

binary_operator!(Add, add, Binary::Add);
binary_operator!(Sub, sub, Binary::Sub);
binary_operator!(Mul, mul, Binary::Mul);
binary_operator!(Div, div, Binary::Div);

impl<'b> ops::Neg for Var<'b> {
    type Output = Var<'b>;
    fn neg(self) -> Var<'b> {
        self.unary(Unary::Neg)
    }
}
