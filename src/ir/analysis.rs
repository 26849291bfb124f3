//! Static analyses of a program: nesting depth, safety of guards, affine guards, and which
//! if-statements are continuous (their branches agree on the guard's zero set, so the
//! program does not jump there).
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
    /// The branches provably agree where the guard is zero (`then - else` is a constant
    /// multiple of the guard as linear forms over the program's nodes: `min`, `max`, `abs`,
    /// `relu`, `if x < 0 { 0 } else { x }`). The program is then continuous across this
    /// boundary: it is not a jump, the crisp gradients miss nothing there, and LYY18's
    /// boundary term for it is zero.
    pub continuous: bool,
}

impl GuardInfo {
    /// A discontinuity of the program: an if-statement whose branches may differ on its
    /// boundary.
    pub fn jump(&self) -> bool {
        !self.continuous
    }
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

    /// True when every jump's guard is affine: LYY18 applies (a continuous if-statement's
    /// boundary term is zero, whatever its guard).
    pub fn all_affine(&self) -> bool {
        self.first_non_affine().is_none()
    }

    /// The first jump whose guard is not affine, with the reason.
    pub fn first_non_affine(&self) -> Option<(&GuardInfo, NotAffine)> {
        self.guards
            .iter()
            .filter(|g| g.jump())
            .find_map(|g| g.affine.clone().err().map(|e| (g, e)))
    }

    /// The jumps whose guard reads a parameter directly: their boundary moves with theta, and
    /// the crisp gradients (Reparam, Score, RLOO) miss that motion.
    pub fn param_dependent(&self) -> impl Iterator<Item = &GuardInfo> {
        self.guards
            .iter()
            .filter(|g| g.jump() && g.depends_on_param)
    }

    /// The jumps whose guard reads a latent: the reparameterisation gradient misses the
    /// mass that crosses their boundary.
    pub fn latent_dependent(&self) -> impl Iterator<Item = &GuardInfo> {
        self.guards
            .iter()
            .filter(|g| g.jump() && g.unsafe_reason != Some(UnsafeReason::NoLatent))
    }

    /// The if-statements recognised as continuous.
    pub fn continuous(&self) -> impl Iterator<Item = &GuardInfo> {
        self.guards.iter().filter(|g| g.continuous)
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
    let continuous = continuity(program);
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
                continuous: continuous[index],
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

/// An affine form over latents during the analysis (and, row by row, of a plate's guards:
/// `ir::row_affine`).
#[derive(Clone, Debug)]
pub(crate) struct Affine {
    coefficients: BTreeMap<u32, f64>,
    constant: f64,
}

impl Affine {
    pub(crate) fn constant(c: f64) -> Affine {
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

    /// The form `z_j`.
    pub(crate) fn latent(j: u32) -> Affine {
        Affine {
            coefficients: BTreeMap::from([(j, 1.0)]),
            constant: 0.0,
        }
    }

    pub(crate) fn finish(self) -> AffineGuard {
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
pub(crate) fn affine_step(
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
        Node::Latent(j) => Ok(Affine::latent(j)),
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

/// The most nodes a linear form keeps before the node it describes becomes an atom of its
/// own (so that a long sum does not cost quadratic memory; the analysis stays sound, only
/// coarser).
const MAX_FORM_TERMS: usize = 64;

/// `constant + sum_a coefficient_a * node_a` over opaque nodes (atoms): sums, differences,
/// negations and products or quotients by constants are expanded, anything else is an atom.
#[derive(Clone, Debug, Default)]
struct Linear {
    terms: BTreeMap<u32, f64>,
    constant: f64,
}

impl Linear {
    fn atom(id: NodeId) -> Linear {
        Linear {
            terms: BTreeMap::from([(id.index() as u32, 1.0)]),
            constant: 0.0,
        }
    }

    fn constant(c: f64) -> Linear {
        Linear {
            terms: BTreeMap::new(),
            constant: c,
        }
    }

    fn as_constant(&self) -> Option<f64> {
        self.terms.is_empty().then_some(self.constant)
    }

    fn scaled(&self, s: f64) -> Linear {
        Linear {
            terms: self.terms.iter().map(|(&a, &c)| (a, c * s)).collect(),
            constant: self.constant * s,
        }
    }

    fn plus(&self, other: &Linear, sign: f64) -> Linear {
        let mut terms = self.terms.clone();
        for (&a, &c) in &other.terms {
            let t = terms.entry(a).or_insert(0.0);
            *t += sign * c;
            if *t == 0.0 {
                terms.remove(&a);
            }
        }
        Linear {
            terms,
            constant: self.constant + sign * other.constant,
        }
    }

    /// Whether `self = c * guard` for some constant `c` (zero included), up to rounding.
    fn multiple_of(&self, guard: &Linear) -> bool {
        let scale = self
            .terms
            .values()
            .chain(std::iter::once(&self.constant))
            .fold(0.0f64, |m, c| m.max(c.abs()));
        if scale == 0.0 {
            return true;
        }
        let Some((&atom, &g)) = guard.terms.iter().find(|(_, g)| **g != 0.0) else {
            return false;
        };
        let c = self.terms.get(&atom).copied().unwrap_or(0.0) / g;
        let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * scale;
        close(self.constant, c * guard.constant)
            && self.terms.keys().chain(guard.terms.keys()).all(|a| {
                close(
                    self.terms.get(a).copied().unwrap_or(0.0),
                    c * guard.terms.get(a).copied().unwrap_or(0.0),
                )
            })
    }
}

/// Per if-statement (by index): whether `then - else` is a constant multiple of the guard as
/// linear forms over nodes, so that the branches agree wherever the guard is zero. Forms are
/// built bottom-up in arena order (no recursion) for the nodes the if-statements read.
fn continuity(program: &Program) -> Vec<bool> {
    let nodes = program.nodes();
    let ifs: Vec<NodeId> = (0..program.if_count())
        .map(|k| program.if_node(k))
        .collect();
    let mut roots = Vec::with_capacity(3 * ifs.len());
    for &id in &ifs {
        if let Node::If {
            guard,
            then_,
            else_,
            ..
        } = program.node(id)
        {
            roots.extend([guard, then_, else_]);
        }
    }
    let needed = program.reachable_from(&roots);
    let mut memo: Vec<Option<Linear>> = vec![None; nodes.len()];
    for (i, &node) in nodes.iter().enumerate() {
        if !needed[i] {
            continue;
        }
        let id = NodeId(i as u32);
        let form = |x: NodeId| memo[x.index()].clone().unwrap_or_else(|| Linear::atom(x));
        let f = match node {
            Node::Const(c) => Linear::constant(c),
            Node::Unary(Unary::Neg, a) => form(a).scaled(-1.0),
            Node::Binary(Binary::Add, a, b) => form(a).plus(&form(b), 1.0),
            Node::Binary(Binary::Sub, a, b) => form(a).plus(&form(b), -1.0),
            Node::Binary(Binary::Mul, a, b) => {
                let (x, y) = (form(a), form(b));
                match (x.as_constant(), y.as_constant()) {
                    (Some(c), _) => y.scaled(c),
                    (_, Some(c)) => x.scaled(c),
                    _ => Linear::atom(id),
                }
            }
            Node::Binary(Binary::Div, a, b) => match form(b).as_constant() {
                Some(c) if c != 0.0 => form(a).scaled(1.0 / c),
                _ => Linear::atom(id),
            },
            _ => Linear::atom(id),
        };
        memo[i] = Some(if f.terms.len() > MAX_FORM_TERMS {
            Linear::atom(id)
        } else {
            f
        });
    }
    ifs.iter()
        .map(|&id| match program.node(id) {
            Node::If {
                guard,
                then_,
                else_,
                ..
            } => {
                let form = |x: NodeId| memo[x.index()].clone().unwrap_or_else(|| Linear::atom(x));
                let g = form(guard);
                g.as_constant().is_none() && form(then_).plus(&form(else_), -1.0).multiple_of(&g)
            }
            _ => false,
        })
        .collect()
}
