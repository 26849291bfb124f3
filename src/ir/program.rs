//! A finished program: the live nodes in topological order, its outputs and its metadata.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use super::node::{Binary, Branch, Node, NodeId};
use super::ops::{binary_value, unary_value};
use super::source::{SourceText, Span};
use super::term::{Term, TermNode};
use super::transform::Transform;
use crate::special::sigmoid;

/// How if-statements are interpreted (docs/design.md section 1).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Semantics {
    /// The branch is chosen by the sign of the guard.
    Crisp,
    /// `sigma(-F/eta) G + sigma(F/eta) H`.
    Smoothed {
        /// The accuracy coefficient: smaller is closer to crisp.
        eta: f64,
    },
    /// Crisp, except that if-statement `index` takes `branch` whatever its guard.
    Forced {
        /// Which if-statement, in program order.
        index: u32,
        /// The branch it takes.
        branch: Branch,
    },
}

/// How an if-statement weighs its branches at one guard value: the reference interpreter's
/// rule for each [`Semantics`], shared by its value and derivative sweeps.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) enum IfRule {
    /// One branch is taken.
    Taken(Branch),
    /// `wt * then + we * else`, with `wt = sigma(-g / eta)`, `we = sigma(g / eta)`, and
    /// `1 / eta` for the guard's derivative.
    Smoothed { wt: f64, we: f64, inv_eta: f64 },
}

impl Semantics {
    /// How if-statement `index` weighs its branches where its guard is `g`.
    pub(crate) fn if_rule(self, index: u32, g: f64) -> IfRule {
        match self {
            Semantics::Forced { index: k, branch } if k == index => IfRule::Taken(branch),
            Semantics::Crisp | Semantics::Forced { .. } => {
                IfRule::Taken(if g < 0.0 { Branch::Then } else { Branch::Else })
            }
            Semantics::Smoothed { eta } => {
                // `g * (1 / eta)`: the engine's scaling (one division per chunk of lanes, not
                // one per lane).
                let inv_eta = 1.0 / eta;
                let x = g * inv_eta;
                IfRule::Smoothed {
                    wt: sigmoid(-x),
                    we: sigmoid(x),
                    inv_eta,
                }
            }
        }
    }
}

/// A DAG of the paper's calculus, in topological order, with no dead nodes. Only the
/// builder makes one (`Graph::into_program`, the dead-code elimination), hence the fields
/// visible inside `ir`.
#[derive(Clone, Debug)]
pub struct Program {
    pub(super) nodes: Vec<Node>,
    pub(super) outputs: Vec<NodeId>,
    pub(super) param_names: Vec<String>,
    pub(super) latent_names: Vec<String>,
    /// `z = T(u)` of each latent, by latent index (`Latent(i)` is `u`).
    pub(super) latent_transforms: Vec<Transform>,
    /// The node of each if-statement, by if-index.
    pub(super) if_nodes: Vec<NodeId>,
    /// The source span of each if-statement, by if-index.
    pub(super) if_spans: Vec<Option<Span>>,
    /// The log-density terms the front end recorded, in the order it added them.
    pub(super) terms: Vec<Term>,
    pub(super) term_inputs: Vec<TermNode>,
    /// The constant operations hoisted out of terms (see [`Program::term_value`]).
    pub(super) term_hoisted: Vec<(Binary, f64)>,
    pub(super) source: Option<Arc<SourceText>>,
}

impl Program {
    /// Renumbers the latents: new latent `k` is old latent `order[k]`. Old latents not in
    /// `order` are dropped, so none of them may be read by a node.
    ///
    /// # Panics
    /// If a node reads a latent that `order` drops.
    pub(crate) fn renumber_latents(&mut self, order: &[u32]) {
        let mut new_of = vec![u32::MAX; self.latent_names.len()];
        for (k, &old) in order.iter().enumerate() {
            new_of[old as usize] = k as u32;
        }
        for n in &mut self.nodes {
            if let Node::Latent(i) = n {
                let k = new_of[*i as usize];
                assert!(k != u32::MAX, "a dropped latent is read");
                *i = k;
            }
        }
        self.latent_names = order
            .iter()
            .map(|&o| self.latent_names[o as usize].clone())
            .collect();
        self.latent_transforms = order
            .iter()
            .map(|&o| self.latent_transforms[o as usize])
            .collect();
    }

    /// Which latents some node reads, by latent index.
    pub(crate) fn latents_read(&self) -> Vec<bool> {
        let mut read = vec![false; self.latent_names.len()];
        for n in &self.nodes {
            if let Node::Latent(i) = n {
                read[*i as usize] = true;
            }
        }
        read
    }

    /// The source text, if the program was compiled from one.
    pub fn source(&self) -> Option<&SourceText> {
        self.source.as_deref()
    }

    /// Records the text the program was compiled from (spans index into it).
    pub(crate) fn set_source(&mut self, source: Arc<SourceText>) {
        self.source = Some(source);
    }

    /// The log-density terms recorded while building, in the order they were added (the
    /// source order of the unrolled program); empty for programs built without them.
    pub fn terms(&self) -> &[Term] {
        &self.terms
    }

    /// The inputs of `term` (named by [`TermKind::input_names`](super::TermKind::input_names)).
    pub fn term_inputs(&self, term: &Term) -> &[TermNode] {
        &self.term_inputs[term.inputs.0 as usize..term.inputs.1 as usize]
    }

    /// The value of `term` given the value of every node (`vals`, as from
    /// [`Program::evaluate_all`]): its node's value with the constants hoisted out of it put
    /// back, in the order the statement had them; NaN for a term whose node is gone.
    pub fn term_value(&self, term: &Term, vals: &[f64]) -> f64 {
        let v = match term.node {
            TermNode::Node(id) => vals[id.index()],
            TermNode::Const(c) => c,
            TermNode::Gone => return f64::NAN,
        };
        self.term_hoisted[term.hoisted.0 as usize..term.hoisted.1 as usize]
            .iter()
            .fold(v, |acc, &(op, c)| binary_value(op, acc, c))
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    pub fn node(&self, id: NodeId) -> Node {
        self.nodes[id.index()]
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The outputs given to `finish`; `outputs()[0]` is the objective.
    pub fn outputs(&self) -> &[NodeId] {
        &self.outputs
    }

    pub fn output(&self) -> NodeId {
        self.outputs[0]
    }

    pub fn param_count(&self) -> usize {
        self.param_names.len()
    }

    pub fn latent_count(&self) -> usize {
        self.latent_names.len()
    }

    pub fn param_names(&self) -> &[String] {
        &self.param_names
    }

    pub fn latent_names(&self) -> &[String] {
        &self.latent_names
    }

    /// How latent `i`'s value is made from the program's `Latent(i)`, the unconstrained `u`
    /// (`Identity` for an out-of-range index, which has no transform to report).
    pub fn latent_transform(&self, i: usize) -> Transform {
        self.latent_transforms
            .get(i)
            .copied()
            .unwrap_or(Transform::Identity)
    }

    /// [`Program::latent_transform`] of every latent, by index.
    pub fn latent_transforms(&self) -> &[Transform] {
        &self.latent_transforms
    }

    /// Number of if-statements (after unrolling and simplification).
    pub fn if_count(&self) -> usize {
        self.if_nodes.len()
    }

    /// The node of if-statement `index`.
    pub fn if_node(&self, index: usize) -> NodeId {
        self.if_nodes[index]
    }

    /// Where if-statement `index` came from in the source, if known.
    pub fn if_span(&self, index: usize) -> Option<Span> {
        self.if_spans[index]
    }

    /// Which nodes each node depends on transitively is expensive to store; this answers the
    /// cheaper question of which nodes are reachable from `roots`.
    pub fn reachable_from(&self, roots: &[NodeId]) -> Vec<bool> {
        let mut live = vec![false; self.nodes.len()];
        for &r in roots {
            live[r.index()] = true;
        }
        for i in (0..self.nodes.len()).rev() {
            if live[i] {
                for op in self.nodes[i].operands() {
                    live[op.index()] = true;
                }
            }
        }
        live
    }

    /// Reference interpreter: the value of every node for one sample. Slow and simple, it is
    /// the oracle the tape is tested against.
    pub fn evaluate_all(&self, semantics: Semantics, params: &[f64], latents: &[f64]) -> Vec<f64> {
        let mut v = Vec::with_capacity(self.nodes.len());
        for node in &self.nodes {
            let x = match *node {
                Node::Const(c) => c,
                Node::Param(k) => params[k as usize],
                Node::Latent(i) => latents[i as usize],
                Node::Unary(op, a) => unary_value(op, v[a.index()]),
                Node::Binary(op, a, b) => binary_value(op, v[a.index()], v[b.index()]),
                Node::If {
                    guard,
                    then_,
                    else_,
                    index,
                } => {
                    let (t, e) = (v[then_.index()], v[else_.index()]);
                    match semantics.if_rule(index, v[guard.index()]) {
                        IfRule::Taken(branch) => branch.pick(t, e),
                        IfRule::Smoothed { wt, we, .. } => {
                            let tt = if wt == 0.0 { 0.0 } else { wt * t };
                            let ee = if we == 0.0 { 0.0 } else { we * e };
                            tt + ee
                        }
                    }
                }
            };
            v.push(x);
        }
        v
    }

    /// The value of output `k` for one sample (reference interpreter).
    pub fn evaluate(&self, semantics: Semantics, params: &[f64], latents: &[f64]) -> f64 {
        self.evaluate_all(semantics, params, latents)[self.output().index()]
    }

    /// Index of a parameter by name.
    pub fn param_index(&self, name: &str) -> Option<usize> {
        self.param_names.iter().position(|n| n == name)
    }

    /// Index of a latent by name.
    pub fn latent_index(&self, name: &str) -> Option<usize> {
        self.latent_names.iter().position(|n| n == name)
    }

    /// Count of node kinds, for summaries (`const`, `if`, ...).
    pub fn kind_counts(&self) -> HashMap<&'static str, usize> {
        let mut m = HashMap::new();
        for n in &self.nodes {
            let k = match n {
                Node::Const(_) => "const",
                Node::Param(_) => "param",
                Node::Latent(_) => "latent",
                Node::Unary(..) => "unary",
                Node::Binary(..) => "binary",
                Node::If { .. } => "if",
            };
            *m.entry(k).or_insert(0) += 1;
        }
        m
    }
}

/// The textual IR: one node a line, `%3 = add %1, %2`, outputs last.
impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, node) in self.nodes.iter().enumerate() {
            writeln!(f, "%{i} = {node}")?;
        }
        let outs: Vec<String> = self.outputs.iter().map(|o| o.to_string()).collect();
        write!(f, "output {}", outs.join(", "))
    }
}
