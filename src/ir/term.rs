//! Log-density terms: which node of a program is one statement's contribution to the
//! objective (an `observe`, a `sample`'s prior, a `factor`, a `maximize` term), where that
//! statement is in the source, and the values it was given. Recorded by the front end as it
//! adds the term, kept through dead-code elimination, so that a value or gradient that turns
//! NaN or infinite can be traced back to the statement that produced it ([`super::blame`]).

use super::dist::Dist;
use super::node::NodeId;
use super::source::Span;

/// What kind of statement a term comes from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TermKind {
    /// `observe x ~ D(args)`: inputs are `x` and the arguments.
    Observe(Dist),
    /// A latent's prior `z ~ D(args)` (with its log-Jacobian): inputs are `z` and the
    /// arguments.
    Sample(Dist),
    /// `factor e`: the term is `e`, no inputs.
    Factor,
    /// A `maximize` or `minimize` term.
    Objective,
}

impl TermKind {
    /// The names of a term's inputs, in order: `value` and the distribution's parameters.
    pub fn input_names(self) -> impl Iterator<Item = &'static str> {
        let params: &[&str] = match self {
            TermKind::Observe(d) | TermKind::Sample(d) => d.parameter_names(),
            TermKind::Factor | TermKind::Objective => &[],
        };
        let value = matches!(self, TermKind::Observe(_) | TermKind::Sample(_));
        value
            .then_some("value")
            .into_iter()
            .chain(params.iter().copied())
    }

    /// What the term's value is called in messages.
    pub fn quantity(self) -> &'static str {
        match self {
            TermKind::Objective => "objective term",
            _ => "log-density",
        }
    }
}

/// A node of a term as the finished program knows it: live, folded away to a constant, or
/// dropped as dead (an input the term's expansion did not need).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum TermNode {
    Node(NodeId),
    Const(f64),
    Gone,
}

/// One recorded term of a finished program.
#[derive(Clone, Debug, PartialEq)]
pub struct Term {
    pub kind: TermKind,
    /// The statement (or `sample` expression) in the source.
    pub span: Span,
    /// The term's own value.
    pub node: TermNode,
    /// Range of its inputs in [`Program::term_inputs`](super::Program::term_inputs).
    pub(crate) inputs: (u32, u32),
    /// Range of the constant additions and subtractions hoisted out of it into the
    /// program's one constant ([`Builder::sum_hoisting_constants`](super::Builder::sum_hoisting_constants)):
    /// `node`'s value with them applied in order is the statement's value.
    pub(crate) hoisted: (u32, u32),
}

/// A term while the program is being built (node ids of the builder).
#[derive(Clone, Debug)]
pub(crate) struct PendingTerm {
    pub kind: TermKind,
    pub span: Span,
    pub node: NodeId,
    pub inputs: (u32, u32),
    pub hoisted: (u32, u32),
}
