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
    let (program, scaled) = with_factors(program, |guard| match &memo[guard.index()] {
        Some(Form::Linear(coefficients)) => {
            Some(coefficients.iter().map(|(&i, &a)| (i, a)).collect())
        }
        _ => None,
    })?;
    Some(GuardScaled { program, scaled })
}

/// `program` with each guard `pick` says something of multiplied by a new parameter after the
/// program's own, and per such guard, in the order of its parameter, its if-statement's index
/// and what `pick` said; `None` when `pick` picks none.
fn with_factors<T>(
    program: &Program,
    mut pick: impl FnMut(NodeId) -> Option<T>,
) -> Option<(Program, Vec<(u32, T)>)> {
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
                let guard = match pick(guard) {
                    Some(what) => {
                        let p = push(&mut out, Node::Param(m + scaled.len() as u32));
                        scaled.push((index, what));
                        push(&mut out, Node::Binary(Binary::Mul, map[guard.index()], p))
                    }
                    None => map[guard.index()],
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
    p.param_names.extend(
        scaled
            .iter()
            .map(|(index, _)| format!("guard factor {index}")),
    );
    Some((p, scaled))
}

/// Per guard factor of a plate body, the model latents its guard reads with the mean over rows
/// of their coefficients' squares (`scale_plate_guards`).
pub type PlateFactors = Vec<Vec<(u32, f64)>>;

/// How many rows, evenly spaced, a plate's guard coefficients are averaged over.
const COEFFICIENT_ROWS: usize = 1024;

/// What the plate analysis knows of a body node.
#[derive(Clone, Debug)]
enum RowForm {
    /// Reads no shared latent; `params` says whether it reads a model parameter (a
    /// coefficient must not: it is measured once, from the data).
    Free {
        params: bool,
    },
    /// Linear in these body parameters (shared latents), each with a coefficient made of
    /// columns and constants only, plus a free offset.
    Linear(std::collections::BTreeSet<u32>),
    Other,
}

/// A plate's body with each guard linear in the shared latents (coefficients from the row's
/// data) multiplied by a factor of its own, a new body parameter read as
/// [`Shared::GuardFactor`](super::Shared::GuardFactor); and per factor, the model latents
/// the guard reads with the mean over rows of their coefficient's square, `(latent, m)`, so
/// that `1 / sqrt(sum m scale^2)` is the guard's root-mean-square spread over rows under the
/// guide. Guards reading a row's own latents keep the absolute `eta`. `None` when no guard
/// is scaled.
pub fn scale_plate_guards(plate: &super::Plate) -> Option<(super::Plate, PlateFactors)> {
    use super::Shared;
    use std::collections::BTreeSet;
    let body = &plate.body;
    let columns = plate.columns.len() as u32;
    let mut memo: Vec<RowForm> = Vec::with_capacity(body.node_count());
    for &node in body.nodes() {
        let form = |id: NodeId| memo[id.index()].clone();
        let f = match node {
            Node::Const(_) => RowForm::Free { params: false },
            Node::Param(k) => match plate.shared[k as usize] {
                Shared::Latent(_) => RowForm::Linear(BTreeSet::from([k])),
                Shared::Param(_) => RowForm::Free { params: true },
                Shared::GuardFactor(_) => RowForm::Other,
            },
            Node::Latent(j) if j < columns => RowForm::Free { params: false },
            Node::Latent(_) => RowForm::Other,
            Node::Unary(Unary::Neg, a) => form(a),
            Node::Unary(_, a) => match form(a) {
                f @ RowForm::Free { .. } => f,
                _ => RowForm::Other,
            },
            Node::Binary(op, a, b) => match (op, form(a), form(b)) {
                (_, RowForm::Free { params: p }, RowForm::Free { params: q }) => {
                    RowForm::Free { params: p || q }
                }
                (Binary::Add | Binary::Sub, RowForm::Linear(x), RowForm::Linear(y)) => {
                    RowForm::Linear(x.union(&y).copied().collect())
                }
                (Binary::Add | Binary::Sub, RowForm::Linear(x), RowForm::Free { .. })
                | (Binary::Add | Binary::Sub, RowForm::Free { .. }, RowForm::Linear(x)) => {
                    RowForm::Linear(x)
                }
                (Binary::Mul, RowForm::Linear(x), RowForm::Free { params: false })
                | (Binary::Mul, RowForm::Free { params: false }, RowForm::Linear(x))
                | (Binary::Div, RowForm::Linear(x), RowForm::Free { params: false }) => {
                    RowForm::Linear(x)
                }
                _ => RowForm::Other,
            },
            Node::If { .. } => {
                let free = node
                    .operands()
                    .all(|a| matches!(form(a), RowForm::Free { .. }));
                if free {
                    RowForm::Free {
                        params: node
                            .operands()
                            .any(|a| matches!(form(a), RowForm::Free { params: true })),
                    }
                } else {
                    RowForm::Other
                }
            }
        };
        memo.push(f);
    }
    // The coefficients, row by row, as differences of the guard at unit steps of each shared
    // latent from zero (exact for a linear form up to rounding), the parameters at 1.
    let candidates: Vec<(NodeId, Vec<u32>)> = (0..body.if_count())
        .filter_map(|k| match body.node(body.if_node(k)) {
            Node::If { guard, .. } => match &memo[guard.index()] {
                RowForm::Linear(vars) => Some((guard, vars.iter().copied().collect())),
                _ => None,
            },
            _ => None,
        })
        .collect();
    if candidates.is_empty() || plate.rows == 0 {
        return None;
    }
    let mut vars: Vec<u32> = candidates.iter().flat_map(|(_, v)| v.clone()).collect();
    vars.sort_unstable();
    vars.dedup();
    let base: Vec<f64> = plate
        .shared
        .iter()
        .map(|s| match s {
            Shared::Param(_) => 1.0,
            _ => 0.0,
        })
        .collect();
    let rows = plate.rows.min(COEFFICIENT_ROWS);
    let mut sums: Vec<Vec<f64>> = candidates.iter().map(|(_, v)| vec![0.0; v.len()]).collect();
    let mut finite = vec![true; candidates.len()];
    let semantics = super::Semantics::Crisp;
    for t in 0..rows {
        let r = t * plate.rows / rows;
        let mut inputs: Vec<f64> = plate.columns.iter().map(|c| c[r]).collect();
        inputs.resize(body.latent_count(), 0.0);
        let at_base = body.evaluate_all(semantics, &base, &inputs);
        let mut stepped = Vec::with_capacity(vars.len());
        for &v in &vars {
            let mut params = base.clone();
            params[v as usize] = 1.0;
            stepped.push(body.evaluate_all(semantics, &params, &inputs));
        }
        for (c, (guard, gvars)) in candidates.iter().enumerate() {
            for (slot, v) in gvars.iter().enumerate() {
                let at = vars.binary_search(v).expect("collected above");
                let a = stepped[at][guard.index()] - at_base[guard.index()];
                if !a.is_finite() {
                    finite[c] = false;
                }
                sums[c][slot] += a * a;
            }
        }
    }
    let picked: Vec<Option<Vec<(u32, f64)>>> = candidates
        .iter()
        .enumerate()
        .map(|(c, (_, gvars))| {
            finite[c].then(|| {
                gvars
                    .iter()
                    .zip(&sums[c])
                    .map(|(&k, &s)| match plate.shared[k as usize] {
                        Shared::Latent(i) => (i, s / rows as f64),
                        _ => unreachable!("a linear form's variables are shared latents"),
                    })
                    .collect()
            })
        })
        .collect();
    let mut next = 0;
    let mut by_guard = std::collections::HashMap::new();
    for ((guard, _), p) in candidates.iter().zip(picked) {
        if let Some(p) = p {
            by_guard.insert(*guard, p);
        }
    }
    let (new_body, scaled) = with_factors(body, |guard| by_guard.get(&guard).cloned())?;
    let mut scaled_plate = plate.clone();
    scaled_plate.body = std::sync::Arc::new(new_body);
    let mut factors = Vec::with_capacity(scaled.len());
    for (_, what) in scaled {
        scaled_plate.shared.push(Shared::GuardFactor(next));
        next += 1;
        factors.push(what);
    }
    Some((scaled_plate, factors))
}

/// The factor `1 / sqrt(sum_i m_i scale(i)^2)` of a plate guard from its latents' mean-square
/// coefficients ([`scale_plate_guards`]) and the guide's scales, or 1 (the absolute `eta`) where
/// that spread is zero or not finite.
pub fn plate_guard_factor(coefficients: &[(u32, f64)], scale: impl Fn(usize) -> f64) -> f64 {
    let var: f64 = coefficients
        .iter()
        .map(|&(i, m)| {
            let s = scale(i as usize);
            m * s * s
        })
        .sum();
    let sd = var.sqrt();
    if sd > 0.0 && sd.is_finite() && (1.0 / sd).is_finite() {
        1.0 / sd
    } else {
        1.0
    }
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
