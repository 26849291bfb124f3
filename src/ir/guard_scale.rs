//! Guards measured in their own units: the program with each if-statement's guard multiplied
//! by an input of its own, and the linear form in the latents that says what that input is.
//!
//! Smoothing an if-statement as `sigma(g / eta)` with one absolute `eta` reads the guard in
//! the units it happens to have. Where only the sign of a guard matters (a threshold
//! likelihood `if a + b x < 0`), the crisp problem cannot tell `(a, b)` from `(2a, 2b)`, but
//! the smoothed one can: `sigma((a + b x) / eta)` is a logistic regression in `(a, b) / eta`,
//! whose optimum scales with `eta`, so the smoothed answer differs from the crisp one by as
//! much as the latents' scale allows, at any practical `eta`. Smoothing each guard relative to
//! its own spread under the guide, `eta_j = eta * sd_q(g_j)`, gives the smoothed problem the
//! crisp one's invariance to that scale.
//!
//! The tape keeps one absolute `eta`: [`scale_guards`] rewrites `if g_j < 0` as
//! `if g_j * p_j < 0` with `p_j` a new parameter after the model's own, which the estimator
//! sets to `1 / sd_q(g_j)` before each sweep and whose derivative it never reads (a schedule
//! value, not a variable). A positive factor keeps the guard's sign, so the crisp semantics
//! (and LYY18's forced sweeps) are unchanged, and the sweeps, kernels and compiled code are
//! the same as for any program. Only guards linear in the latents with constant
//! coefficients get a factor (their spread is exact for the location-scale guide:
//! `sqrt(sum_i a_i^2 scale_i^2)`); the others keep the absolute `eta`.

use std::collections::BTreeMap;

use super::node::{Binary, Node, NodeId, Unary};
use super::ops::{binary_value, unary_value};
use super::program::Program;
use super::term::TermNode;

/// The most latents a guard's linear form keeps before the guard is treated as not linear
/// (so that a guard summing many latents cannot cost quadratic memory in the analysis).
const MAX_FORM_TERMS: usize = 4096;

/// A program whose linear guards read a factor of their own, and how to set the factors.
#[derive(Clone, Debug)]
pub struct GuardScaled {
    /// The rewritten program: the original's parameters, then one factor per scaled guard.
    pub program: Program,
    /// Per scaled guard, in the order of its factor: the if-statement's index and the
    /// guard's non-zero coefficients in the latents, `(latent, a)`.
    pub scaled: Vec<(u32, Vec<(u32, f64)>)>,
}

impl GuardScaled {
    /// How many factors the program reads after the model's parameters.
    pub fn factor_count(&self) -> usize {
        self.scaled.len()
    }

    /// The factors `1 / sd(g_j)` for latent scales `scale(i)` (the guide's standard
    /// deviations on the program's latents), appended to `out`. A guard whose spread is zero
    /// or not finite (every latent it reads has scale 0) keeps the factor 1: the absolute
    /// `eta`.
    pub fn factors(&self, scale: impl Fn(usize) -> f64, out: &mut Vec<f64>) {
        for (_, coefficients) in &self.scaled {
            let var: f64 = coefficients
                .iter()
                .map(|&(i, a)| {
                    let s = a * scale(i as usize);
                    s * s
                })
                .sum();
            let sd = var.sqrt();
            out.push(if sd > 0.0 && sd.is_finite() && (1.0 / sd).is_finite() {
                1.0 / sd
            } else {
                1.0
            });
        }
    }
}

/// What the analysis knows of a node the guards read.
#[derive(Clone, Debug)]
enum Form {
    /// A constant.
    Const(f64),
    /// Depends on parameters but on no latent: a constant within one iteration.
    Offset,
    /// An offset plus `sum_i a_i z_i` with constant `a_i` (at least one latent).
    Linear(BTreeMap<u32, f64>),
    /// Anything else.
    Other,
}

impl Form {
    fn latent_free(&self) -> bool {
        matches!(self, Form::Const(_) | Form::Offset)
    }

    fn scaled(&self, c: f64) -> Form {
        match self {
            Form::Const(x) => Form::Const(x * c),
            Form::Offset => Form::Offset,
            Form::Linear(m) => {
                let m: BTreeMap<u32, f64> = m
                    .iter()
                    .map(|(&i, &a)| (i, a * c))
                    .filter(|&(_, a)| a != 0.0)
                    .collect();
                if m.is_empty() {
                    Form::Offset
                } else {
                    Form::Linear(m)
                }
            }
            Form::Other => Form::Other,
        }
    }

    fn plus(&self, other: &Form, sign: f64, op: Binary, x: f64, y: f64) -> Form {
        match (self, other) {
            (Form::Other, _) | (_, Form::Other) => Form::Other,
            (Form::Const(_), Form::Const(_)) => Form::Const(binary_value(op, x, y)),
            (Form::Linear(a), Form::Linear(b)) => {
                let mut m = a.clone();
                for (&i, &c) in b {
                    *m.entry(i).or_insert(0.0) += sign * c;
                }
                m.retain(|_, a| *a != 0.0);
                if m.is_empty() {
                    Form::Offset
                } else if m.len() > MAX_FORM_TERMS {
                    Form::Other
                } else {
                    Form::Linear(m)
                }
            }
            (Form::Linear(a), _) => Form::Linear(a.clone()),
            (_, Form::Linear(_)) => other.scaled(sign),
            _ => Form::Offset,
        }
    }
}

/// The linear forms of every node the guards read (`None` for the others), bottom-up.
fn forms(program: &Program) -> Vec<Option<Form>> {
    let nodes = program.nodes();
    let guards: Vec<NodeId> = (0..program.if_count())
        .filter_map(|k| match program.node(program.if_node(k)) {
            Node::If { guard, .. } => Some(guard),
            _ => None,
        })
        .collect();
    let needed = program.reachable_from(&guards);
    let mut memo: Vec<Option<Form>> = vec![None; nodes.len()];
    for (i, &node) in nodes.iter().enumerate() {
        if !needed[i] {
            continue;
        }
        let form = |id: NodeId| memo[id.index()].clone().unwrap_or(Form::Other);
        let value = |id: NodeId| match memo[id.index()] {
            Some(Form::Const(c)) => c,
            _ => f64::NAN,
        };
        let f = match node {
            Node::Const(c) => Form::Const(c),
            Node::Param(_) => Form::Offset,
            Node::Latent(j) => Form::Linear(BTreeMap::from([(j, 1.0)])),
            Node::If { .. } => {
                if node.operands().all(|a| form(a).latent_free()) {
                    Form::Offset
                } else {
                    Form::Other
                }
            }
            Node::Unary(Unary::Neg, a) => form(a).scaled(-1.0),
            Node::Unary(op, a) => match form(a) {
                Form::Const(c) => Form::Const(unary_value(op, c)),
                Form::Offset => Form::Offset,
                _ => Form::Other,
            },
            Node::Binary(op, a, b) => {
                let (x, y) = (form(a), form(b));
                match (op, &x, &y) {
                    (Binary::Add, ..) => x.plus(&y, 1.0, op, value(a), value(b)),
                    (Binary::Sub, ..) => x.plus(&y, -1.0, op, value(a), value(b)),
                    (_, Form::Const(c), Form::Const(d)) => Form::Const(binary_value(op, *c, *d)),
                    (Binary::Mul, Form::Const(c), _) => y.scaled(*c),
                    (Binary::Mul, _, Form::Const(c)) => x.scaled(*c),
                    (Binary::Div, _, Form::Const(c)) => x.scaled(1.0 / c),
                    _ if x.latent_free() && y.latent_free() => Form::Offset,
                    _ => Form::Other,
                }
            }
        };
        memo[i] = Some(f);
    }
    memo
}

/// The program with each guard that is linear in the latents (constant coefficients, any
/// parameter-dependent offset) multiplied by a factor of its own, a new parameter after the
/// model's; `None` when no guard is.
pub fn scale_guards(program: &Program) -> Option<GuardScaled> {
    let memo = forms(program);
    let nodes = program.nodes();
    let m = program.param_count() as u32;
    let mut out: Vec<Node> = Vec::with_capacity(nodes.len() + 2 * program.if_count());
    let mut map: Vec<NodeId> = Vec::with_capacity(nodes.len());
    let mut if_nodes = Vec::with_capacity(program.if_count());
    let mut scaled = Vec::new();
    let push = |out: &mut Vec<Node>, n: Node| {
        out.push(n);
        NodeId((out.len() - 1) as u32)
    };
    for &node in nodes {
        let id = match node {
            Node::If {
                guard,
                then_,
                else_,
                index,
            } => {
                let guard = match &memo[guard.index()] {
                    Some(Form::Linear(coefficients)) => {
                        let p = push(&mut out, Node::Param(m + scaled.len() as u32));
                        scaled.push((index, coefficients.iter().map(|(&i, &a)| (i, a)).collect()));
                        push(&mut out, Node::Binary(Binary::Mul, map[guard.index()], p))
                    }
                    _ => map[guard.index()],
                };
                let id = push(
                    &mut out,
                    Node::If {
                        guard,
                        then_: map[then_.index()],
                        else_: map[else_.index()],
                        index,
                    },
                );
                if_nodes.push(id);
                id
            }
            other => push(&mut out, other.map_operands(|a| map[a.index()])),
        };
        map.push(id);
    }
    if scaled.is_empty() {
        return None;
    }
    let remap = |t: TermNode| match t {
        TermNode::Node(id) => TermNode::Node(map[id.index()]),
        other => other,
    };
    let mut p = program.clone();
    p.nodes = out;
    p.outputs = program.outputs.iter().map(|o| map[o.index()]).collect();
    p.if_nodes = if_nodes;
    for t in &mut p.terms {
        t.node = remap(t.node);
    }
    for t in &mut p.term_inputs {
        *t = remap(*t);
    }
    p.param_names
        .extend((0..scaled.len()).map(|j| format!("guard factor {}", scaled[j].0)));
    Some(GuardScaled { program: p, scaled })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Semantics;

    fn compile(src: &str) -> Program {
        crate::compile("t.dsgd", src)
            .unwrap()
            .program
            .as_ref()
            .clone()
    }

    #[test]
    fn linear_guards_get_a_factor_and_keep_their_crisp_values() {
        let p = compile(
            "param t = 0.3;\nlet a = sample Normal(0, 1);\nlet b = sample Normal(0, 1);\n\
             let u = if 2 * a - b / 4 + t < 0.5 { 1 } else { 3 };\n\
             let v = if a * b < 0 { 10 } else { 20 };\nmaximize u + v + a;\n",
        );
        let g = scale_guards(&p).expect("one linear guard");
        assert_eq!(g.factor_count(), 1);
        assert_eq!(g.program.param_count(), p.param_count() + 1);
        let mut coefficients = g.scaled[0].1.clone();
        coefficients.sort_by_key(|c| c.0);
        assert_eq!(coefficients, vec![(0, 2.0), (1, -0.25)]);
        // sd of 2a - b/4 under scales 0.5 and 2: sqrt(1 + 0.25).
        let mut f = Vec::new();
        g.factors(|i| [0.5, 2.0][i], &mut f);
        assert!((f[0] - 1.0 / 1.25f64.sqrt()).abs() < 1e-15);
        // Crisp values agree for any positive factor; smoothed ones read it as 1 / eta.
        for z in [[0.1, -0.3], [-0.7, 0.2], [1.2, 2.0]] {
            let crisp = p.evaluate(Semantics::Crisp, &[0.3], &z);
            assert_eq!(g.program.evaluate(Semantics::Crisp, &[0.3, 7.5], &z), crisp);
            let s = Semantics::Smoothed { eta: 0.4 };
            let relative = g.program.evaluate(s, &[0.3, 2.0], &z);
            let only_first = {
                let u = crate::special::sigmoid(-(2.0 * z[0] - z[1] / 4.0 + 0.3 - 0.5) * 2.0 / 0.4);
                let x = z[0] * z[1] / 0.4;
                u + 3.0 * (1.0 - u)
                    + 10.0 * crate::special::sigmoid(-x)
                    + 20.0 * crate::special::sigmoid(x)
                    + z[0]
            };
            assert!(
                (relative - only_first).abs() < 1e-9,
                "{relative} {only_first}"
            );
        }
    }

    #[test]
    fn a_guard_without_latents_or_a_factor_of_zero_spread_keeps_the_absolute_eta() {
        let p = compile(
            "param t = 0.3;\nlet a = sample Normal(t, 1);\nmaximize if t < 1 { a } else { 0 };\n",
        );
        // `t < 1` reads no latent; `a` is a latent with a fixed family, not in the guard.
        assert!(scale_guards(&p).is_none());
        let p = compile("let a = sample Normal(0, 1);\nmaximize if a < 1 { 1 } else { 0 };\n");
        let g = scale_guards(&p).unwrap();
        let mut f = Vec::new();
        g.factors(|_| 0.0, &mut f);
        assert_eq!(f, vec![1.0]);
    }
}
