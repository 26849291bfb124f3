//! The growing graph behind a [`Builder`]: where each node is folded
//! (constants, identities that cannot change a finite result, if-statements with a constant
//! guard) and interned, so that a repeated subexpression is stored once.

use super::super::hash::{FastBuild, hash32, spread};
use super::super::node::{Binary, Node, NodeId, Unary};
use super::super::ops::{binary_value, unary_value};
use super::super::program::Program;
use super::super::rows::RowData;
use super::super::source::Span;
use super::super::term::{PendingTerm, Term, TermNode};
use super::super::transform::Transform;
use std::collections::HashMap;

#[cfg(doc)]
use super::Builder;

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
    pub(super) interned: hashbrown::HashTable<(NodeId, u32)>,
    pub(crate) param_names: Vec<String>,
    pub(crate) latent_names: Vec<String>,
    /// How each latent's constrained value is made from the unconstrained one (by index).
    pub(crate) latent_transforms: Vec<Transform>,
    /// Source span of each `If` node (by node id), where the front end gave one.
    pub(crate) if_spans: HashMap<NodeId, Span, FastBuild>,
    pub(super) current_span: Option<Span>,
    /// The terms the front end recorded ([`Builder::record_term`]) and their inputs.
    pub(crate) terms: Vec<PendingTerm>,
    pub(crate) term_inputs: Vec<NodeId>,
    /// The constant operations hoisted out of terms (ranges in [`PendingTerm::hoisted`]).
    pub(crate) term_hoisted: Vec<(Binary, f64)>,
    /// The first handle used here that belongs to another builder (or to this one before
    /// `finish` emptied it); `finish` reports it instead of building a wrong program.
    pub(super) foreign: Option<NodeId>,
    pub(super) next_if: u32,
    pub(super) limit: usize,
    pub(super) overflowed: bool,
    /// A plate body's columns ([`Builder::for_rows`]); `None` for an ordinary program.
    pub(super) rows: Option<Box<RowData>>,
}

impl Graph {
    /// The program of a finished graph: dead-code elimination and renumbering in
    /// topological order, each if-statement numbered and its span kept, each recorded term
    /// pointed at its live node (or its folded constant).
    pub(super) fn into_program(self, outputs: &[NodeId]) -> Program {
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
    pub(super) fn column(&mut self, values: std::sync::Arc<[f64]>) -> NodeId {
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

    pub(super) fn node(&self, id: NodeId) -> Node {
        self.nodes[id.index()]
    }

    pub(super) fn constant_of(&self, id: NodeId) -> Option<f64> {
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

    pub(super) fn constant(&mut self, c: f64) -> NodeId {
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
