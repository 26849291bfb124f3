//! Static analyses of a program: nesting depth, safety of guards, affine guards.
//!
//! Each returns side tables and leaves the program alone. They look only at the part of the
//! program that the objective (output 0) depends on.

use std::collections::BTreeMap;

use serde::Serialize;

use super::node::{Binary, Node, NodeId, Unary};
use super::program::Program;
use super::source::Span;
use super::transform::Transform;

/// Everything `dsgd check` reports about a program's if-statements.
#[derive(Clone, Debug)]
pub struct Analysis {
    /// The paper's nesting depth `l` of the objective (its `Expr_l` class).
    pub nesting_depth: u32,
    /// One entry per if-statement, by index.
    pub guards: Vec<GuardInfo>,
}

/// What the analyses found out about one if-statement.
#[derive(Clone, Debug)]
pub struct GuardInfo {
    pub index: usize,
    pub node: NodeId,
    pub span: Option<Span>,
    /// Nesting depth of the guard expression itself.
    pub guard_depth: u32,
    /// `None` when the guard is safe (the paper's SGuard), else why not.
    pub unsafe_reason: Option<UnsafeReason>,
    /// The guard reads a parameter directly, so its boundary moves with theta: the crisp
    /// gradients (Reparam, Score) miss that motion and only smoothing accounts for it.
    pub depends_on_param: bool,
    /// The guard as `c + a . z`, or why it is not of that form.
    pub affine: Result<AffineGuard, NotAffine>,
}

/// Why a guard is not in the paper's class SGuard of safe guards.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnsafeReason {
    /// The guard depends on no latent variable (only on parameters).
    NoLatent,
    /// The guard applies a function to if-statements (e.g. `step(x) + step(y) < 1`).
    BuiltFromIfs,
}

impl std::fmt::Display for UnsafeReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            UnsafeReason::NoLatent => "it does not depend on any latent variable",
            UnsafeReason::BuiltFromIfs => {
                "it applies a function to the results of other if-statements"
            }
        })
    }
}

/// An affine guard `c + sum_j a_j z_j`; `coefficients` lists the non-zero `a_j` by latent.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AffineGuard {
    pub coefficients: Vec<(u32, f64)>,
    pub constant: f64,
}

impl AffineGuard {
    /// The guard's value at `z`.
    pub fn value(&self, z: &[f64]) -> f64 {
        self.constant
            + self
                .coefficients
                .iter()
                .map(|&(j, a)| a * z[j as usize])
                .sum::<f64>()
    }
}

/// Why a guard is not affine in the latents.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NotAffine {
    /// It multiplies or divides latent-dependent terms, or applies a non-linear function.
    Nonlinear,
    /// It is built from if-statements.
    ContainsIf,
    /// It depends on a parameter directly, so the boundary moves with theta.
    DependsOnParam,
    /// It applies a non-linear function to a constrained latent's unconstrained value
    /// (`z = exp(u)` in `z + w < 1`): only a comparison of the latent itself with a constant
    /// is rewritten into one of `u`.
    ConstrainedLatent,
}

impl std::fmt::Display for NotAffine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NotAffine::Nonlinear => "it is a non-linear function of the latents",
            NotAffine::ContainsIf => "it is built from other if-statements",
            NotAffine::DependsOnParam => "it depends on a parameter directly",
            NotAffine::ConstrainedLatent => {
                "it is non-linear in a constrained latent's unconstrained value u; only a \
                 comparison of the latent with a constant, z < c, becomes u < T^-1(c)"
            }
        })
    }
}

impl Analysis {
    pub fn if_count(&self) -> usize {
        self.guards.len()
    }

    /// True when every guard is safe: the convergence theorem applies.
    pub fn safe(&self) -> bool {
        self.guards.iter().all(|g| g.unsafe_reason.is_none())
    }

    /// True when every guard is affine: LYY18 applies.
    pub fn all_affine(&self) -> bool {
        self.guards.iter().all(|g| g.affine.is_ok())
    }

    /// The first guard that is not affine, with the reason.
    pub fn first_non_affine(&self) -> Option<(&GuardInfo, NotAffine)> {
        self.guards
            .iter()
            .find_map(|g| g.affine.clone().err().map(|e| (g, e)))
    }

    /// The if-statements whose guard reads a parameter directly.
    pub fn param_dependent(&self) -> impl Iterator<Item = &GuardInfo> {
        self.guards.iter().filter(|g| g.depends_on_param)
    }

    /// The accuracy decay the paper's theorem suggests: `1 / (2 l)` (0.5 when `l <= 1`).
    pub fn default_eta_decay(&self) -> f64 {
        1.0 / (2.0 * f64::from(self.nesting_depth.max(1)))
    }
}

/// Runs every analysis on `program`.
pub fn analyse(program: &Program) -> Analysis {
    let nodes = program.nodes();
    let depth = nesting_depths(nodes);
    let facts = node_facts(nodes);
    let safety = safety_table(nodes, &facts);
    let guard_ids: Vec<NodeId> = (0..program.if_count())
        .map(|index| match program.node(program.if_node(index)) {
            Node::If { guard, .. } => guard,
            _ => unreachable!("if_node always names an If node"),
        })
        .collect();
    let affine = affine_forms(program, &guard_ids);
    let guards = (0..program.if_count())
        .map(|index| {
            let node = program.if_node(index);
            let Node::If { guard, .. } = program.node(node) else {
                unreachable!("if_node always names an If node")
            };
            GuardInfo {
                index,
                node,
                span: program.if_span(index),
                guard_depth: depth[guard.index()],
                unsafe_reason: safety[guard.index()].clone(),
                depends_on_param: facts[guard.index()].param,
                affine: match &affine[guard.index()] {
                    Some(form) => form.clone().map(Affine::finish),
                    None => unreachable!("every guard's form is computed"),
                },
            }
        })
        .collect();
    Analysis {
        nesting_depth: depth[program.output().index()],
        guards,
    }
}

/// The paper's depth: `depth(z) = 0`, `depth(f(F..)) = max depth(F)`,
/// `depth(if F then G else H) = max(depth(F) + 1, depth(G), depth(H))`.
pub fn nesting_depths(nodes: &[Node]) -> Vec<u32> {
    let mut d = vec![0u32; nodes.len()];
    for (i, node) in nodes.iter().enumerate() {
        d[i] = match *node {
            Node::If {
                guard,
                then_,
                else_,
                ..
            } => (d[guard.index()] + 1)
                .max(d[then_.index()])
                .max(d[else_.index()]),
            _ => node.operands().map(|o| d[o.index()]).max().unwrap_or(0),
        };
    }
    d
}

/// Per node: does it depend on a latent, on a parameter, does it contain an if-statement.
#[derive(Copy, Clone, Default)]
struct Facts {
    latent: bool,
    param: bool,
    has_if: bool,
}

fn node_facts(nodes: &[Node]) -> Vec<Facts> {
    let mut f: Vec<Facts> = Vec::with_capacity(nodes.len());
    for node in nodes {
        let mut x = Facts::default();
        match *node {
            Node::Latent(_) => x.latent = true,
            Node::Param(_) => x.param = true,
            Node::If { .. } => x.has_if = true,
            _ => {}
        }
        for o in node.operands() {
            let y = f[o.index()];
            x.latent |= y.latent;
            x.param |= y.param;
            x.has_if |= y.has_if;
        }
        f.push(x);
    }
    f
}

/// SGuard: `G ::= f(z_i1, ..., z_ik) | if G then G else G`, `f` not zero almost everywhere.
/// An if-free expression is a function of the latents it reads; it is safe when it reads at
/// least one (a non-zero constant branch of a guard-if is safe too).
///
/// Computed for every node bottom-up, so deeply nested guards cannot overflow the stack.
fn safety_table(nodes: &[Node], facts: &[Facts]) -> Vec<Option<UnsafeReason>> {
    let mut table: Vec<Option<UnsafeReason>> = Vec::with_capacity(nodes.len());
    for (i, node) in nodes.iter().enumerate() {
        let reason = match *node {
            Node::If {
                guard,
                then_,
                else_,
                ..
            } => [guard, then_, else_]
                .into_iter()
                .find_map(|x| table[x.index()].clone()),
            Node::Const(c) if c != 0.0 => None,
            _ => {
                let f = facts[i];
                if f.has_if {
                    Some(UnsafeReason::BuiltFromIfs)
                } else if !f.latent {
                    Some(UnsafeReason::NoLatent)
                } else {
                    None
                }
            }
        };
        table.push(reason);
    }
    table
}

/// An affine form over latents during the analysis.
#[derive(Clone, Debug)]
struct Affine {
    coefficients: BTreeMap<u32, f64>,
    constant: f64,
}

impl Affine {
    fn constant(c: f64) -> Affine {
        Affine {
            coefficients: BTreeMap::new(),
            constant: c,
        }
    }

    fn scaled(&self, s: f64) -> Affine {
        Affine {
            coefficients: self
                .coefficients
                .iter()
                .map(|(&j, &a)| (j, a * s))
                .collect(),
            constant: self.constant * s,
        }
    }

    fn plus(&self, other: &Affine, sign: f64) -> Affine {
        let mut c = self.coefficients.clone();
        for (&j, &a) in &other.coefficients {
            *c.entry(j).or_insert(0.0) += sign * a;
        }
        Affine {
            coefficients: c,
            constant: self.constant + sign * other.constant,
        }
    }

    fn as_constant(&self) -> Option<f64> {
        self.coefficients
            .values()
            .all(|&a| a == 0.0)
            .then_some(self.constant)
    }

    fn finish(self) -> AffineGuard {
        AffineGuard {
            coefficients: self
                .coefficients
                .into_iter()
                .filter(|&(_, a)| a != 0.0)
                .collect(),
            constant: self.constant,
        }
    }
}

/// The affine form of every node the guards read (`None` for the others), bottom-up in
/// arena order: no recursion, so a guard summing thousands of terms cannot overflow the stack.
fn affine_forms(program: &Program, guards: &[NodeId]) -> Vec<Option<Result<Affine, NotAffine>>> {
    let nodes = program.nodes();
    let needed = program.reachable_from(guards);
    let mut memo: Vec<Option<Result<Affine, NotAffine>>> = vec![None; nodes.len()];
    // The unconstrained latent of a constrained one: a non-linear function of it is `z`.
    let constrained = |id: NodeId| match nodes[id.index()] {
        Node::Latent(j) => program.latent_transform(j as usize) != Transform::Identity,
        _ => false,
    };
    for (i, &node) in nodes.iter().enumerate() {
        if needed[i] {
            memo[i] = Some(affine_step(node, &memo, &constrained));
        }
    }
    memo
}

/// The affine form of `node` from those of its operands (already in `memo`).
fn affine_step(
    node: Node,
    memo: &[Option<Result<Affine, NotAffine>>],
    constrained: &dyn Fn(NodeId) -> bool,
) -> Result<Affine, NotAffine> {
    let form = |id: NodeId| match &memo[id.index()] {
        Some(r) => r.as_ref().map_err(|e| e.clone()),
        None => unreachable!("operands come before the nodes that read them"),
    };
    match node {
        Node::Const(c) => Ok(Affine::constant(c)),
        Node::Latent(j) => Ok(Affine {
            coefficients: BTreeMap::from([(j, 1.0)]),
            constant: 0.0,
        }),
        Node::Param(_) => Err(NotAffine::DependsOnParam),
        Node::If { .. } => Err(NotAffine::ContainsIf),
        Node::Unary(Unary::Neg, a) => form(a).map(|x| x.scaled(-1.0)),
        Node::Unary(op, a) => match form(a)?.as_constant() {
            Some(c) => Ok(Affine::constant(super::ops::unary_value(op, c))),
            None if constrained(a) => Err(NotAffine::ConstrainedLatent),
            None => Err(NotAffine::Nonlinear),
        },
        Node::Binary(op, a, b) => {
            let x = form(a)?;
            let y = form(b)?;
            match (op, x.as_constant(), y.as_constant()) {
                (Binary::Add, ..) => Ok(x.plus(y, 1.0)),
                (Binary::Sub, ..) => Ok(x.plus(y, -1.0)),
                (Binary::Mul, Some(c), _) => Ok(y.scaled(c)),
                (Binary::Mul, _, Some(c)) => Ok(x.scaled(c)),
                (Binary::Div, _, Some(c)) => Ok(x.scaled(1.0 / c)),
                (_, Some(c), Some(d)) => Ok(Affine::constant(super::ops::binary_value(op, c, d))),
                _ => Err(NotAffine::Nonlinear),
            }
        }
    }
}
