//! The nodes of the IR: inputs, constants, primitive operations and if-statements.
//!
//! A node refers only to nodes created before it, so the arena order of a
//! [`Program`](super::Program) is a topological order; passes and the tape rely on that and
//! never sort. Non-smooth built-ins (`abs`, `max`, ...) and log-densities are not nodes: the
//! builder expands them into these primitives, so every kink is an `If` that smoothing sees.

use std::fmt;
use std::hash::{Hash, Hasher};

pub use super::primitive::{Binary, Unary};

/// A handle to a node of one program or builder. Printed as `%7`, the same in IR dumps,
/// error messages and tests.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    /// The position of the node in its arena.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.0)
    }
}

/// Which branch of an if-statement. `Then` is taken when the guard is negative.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Branch {
    Then,
    Else,
}

impl Branch {
    /// `then_` for [`Branch::Then`], `else_` for [`Branch::Else`].
    pub(crate) fn pick<T>(self, then_: T, else_: T) -> T {
        match self {
            Branch::Then => then_,
            Branch::Else => else_,
        }
    }
}

/// One node of the DAG.
#[derive(Copy, Clone, Debug)]
pub enum Node {
    Const(f64),
    /// The `k`-th parameter theta_k (shared by every sample of a batch).
    Param(u32),
    /// The `i`-th latent variable z_i (one value per sample).
    Latent(u32),
    Unary(Unary, NodeId),
    Binary(Binary, NodeId, NodeId),
    /// `if guard < 0 then then_ else else_`; `index` numbers the if-statements of a program
    /// densely from 0 in arena order.
    If {
        guard: NodeId,
        then_: NodeId,
        else_: NodeId,
        index: u32,
    },
}

impl Node {
    /// The nodes this node reads, in a fixed order (guard, then, else for `If`).
    pub fn operands(&self) -> impl Iterator<Item = NodeId> + '_ {
        let (arr, n): ([NodeId; 3], usize) = match *self {
            Node::Const(_) | Node::Param(_) | Node::Latent(_) => ([NodeId(0); 3], 0),
            Node::Unary(_, a) => ([a, a, a], 1),
            Node::Binary(_, a, b) => ([a, b, b], 2),
            Node::If {
                guard,
                then_,
                else_,
                ..
            } => ([guard, then_, else_], 3),
        };
        arr.into_iter().take(n)
    }

    /// The same node with every operand passed through `f` (used when renumbering).
    pub(crate) fn map_operands(self, mut f: impl FnMut(NodeId) -> NodeId) -> Node {
        match self {
            Node::Const(_) | Node::Param(_) | Node::Latent(_) => self,
            Node::Unary(op, a) => Node::Unary(op, f(a)),
            Node::Binary(op, a, b) => Node::Binary(op, f(a), f(b)),
            Node::If {
                guard,
                then_,
                else_,
                index,
            } => Node::If {
                guard: f(guard),
                then_: f(then_),
                else_: f(else_),
                index,
            },
        }
    }

    /// The constant value, if this node is a constant.
    pub fn as_const(&self) -> Option<f64> {
        match *self {
            Node::Const(c) => Some(c),
            _ => None,
        }
    }
}

/// Structural identity used for common-subexpression elimination: constants compare by bit
/// pattern, and if-statements ignore their index (the same `If` built twice is one node).
impl PartialEq for Node {
    fn eq(&self, other: &Self) -> bool {
        let same_head = match (*self, *other) {
            (Node::Const(a), Node::Const(b)) => a.to_bits() == b.to_bits(),
            (Node::Param(a), Node::Param(b)) | (Node::Latent(a), Node::Latent(b)) => a == b,
            (Node::Unary(o, _), Node::Unary(p, _)) => o == p,
            (Node::Binary(o, ..), Node::Binary(p, ..)) => o == p,
            (Node::If { .. }, Node::If { .. }) => true,
            _ => false,
        };
        same_head && self.operands().eq(other.operands())
    }
}

impl Eq for Node {}

/// Hashes what [`Node`]'s equality compares: the variant, its constant, input or operation,
/// then its operands.
impl Hash for Node {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match *self {
            Node::Const(c) => c.to_bits().hash(state),
            Node::Param(k) | Node::Latent(k) => k.hash(state),
            Node::Unary(op, _) => op.hash(state),
            Node::Binary(op, ..) => op.hash(state),
            Node::If { .. } => {}
        }
        self.operands().for_each(|o| o.hash(state));
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Node::Const(c) => write!(f, "const {c:?}"),
            Node::Param(k) => write!(f, "param {k}"),
            Node::Latent(i) => write!(f, "latent {i}"),
            Node::Unary(op, a) => write!(f, "{op} {a}"),
            Node::Binary(op, a, b) => write!(f, "{op} {a}, {b}"),
            Node::If {
                guard,
                then_,
                else_,
                index,
            } => {
                write!(f, "if#{index} {guard} < 0 then {then_} else {else_}")
            }
        }
    }
}
