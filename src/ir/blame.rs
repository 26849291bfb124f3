//! Which log-density term made a sample's value or gradient NaN or infinite, found with the
//! reference interpreter at that one sample. Runs only after a run stopped on such a value:
//! one forward and one reverse sweep over the program, simple rather than fast.
//!
//! For a non-finite value, the path of non-finite values is followed down from the output
//! (through the branch an if-statement takes) to the first recorded term on it and on to
//! the primitive where it started (`log(-0.5)`). For a non-finite gradient, a reverse sweep
//! with the tape's rules (an adjoint of zero contributes nothing; only nodes that depend on
//! a latent or parameter carry adjoints) remembers where each adjoint first became
//! non-finite, and which term (the first in source order) each node's adjoint came through.

use super::node::{Node, NodeId};
use super::ops::{binary_derivatives, unary_derivative};
use super::program::{IfRule, Program, Semantics};
use super::term::TermNode;

/// What went non-finite, and in which term.
#[derive(Clone, Debug, PartialEq)]
pub struct Culprit {
    /// The term (an index into [`Program::terms`]); `None` when the problem is outside every
    /// recorded term.
    pub term: Option<usize>,
    /// The term's value at the sample.
    pub value: f64,
    /// The term's inputs at the sample (NaN for one the program does not keep).
    pub inputs: Vec<f64>,
    /// True when the value is not finite; false when only its derivative is not.
    pub value_not_finite: bool,
    /// The primitive where it started: `log(-0.5) is NaN`, `sqrt(0) has derivative inf`.
    pub origin: String,
}

const NONE: u32 = u32::MAX;

/// The culprit of a non-finite output value or gradient at one sample (`params`,
/// `latents`), under `semantics`; `None` when both are finite there.
pub fn find_culprit(
    program: &Program,
    semantics: Semantics,
    params: &[f64],
    latents: &[f64],
) -> Option<Culprit> {
    let vals = program.evaluate_all(semantics, params, latents);
    let mut term_of = vec![NONE; vals.len()];
    for (t, term) in program.terms().iter().enumerate() {
        if let TermNode::Node(id) = term.node
            && term_of[id.index()] == NONE
        {
            term_of[id.index()] = t as u32;
        }
    }
    let out = program.output();
    let (term, origin, value_not_finite) = if vals[out.index()].is_finite() {
        let (term, origin) = gradient_origin(program, semantics, &vals, &term_of)?;
        (term, origin, false)
    } else {
        let (term, origin) = value_origin(program, semantics, &vals, &term_of);
        (term, origin, true)
    };
    let term_value = |t: usize| program.term_value(&program.terms()[t], &vals);
    let (value, inputs) = match term {
        Some(t) => (
            term_value(t),
            program
                .term_inputs(&program.terms()[t])
                .iter()
                .map(|i| match *i {
                    TermNode::Node(id) => vals[id.index()],
                    TermNode::Const(c) => c,
                    TermNode::Gone => f64::NAN,
                })
                .collect(),
        ),
        None => (vals[out.index()], Vec::new()),
    };
    Some(Culprit {
        term,
        value,
        inputs,
        value_not_finite,
        origin,
    })
}

/// The operand through which node `at`'s non-finite value came, if any.
fn non_finite_operand(
    program: &Program,
    semantics: Semantics,
    vals: &[f64],
    at: NodeId,
) -> Option<NodeId> {
    let bad = |id: NodeId| !vals[id.index()].is_finite();
    match program.node(at) {
        Node::Const(_) | Node::Param(_) | Node::Latent(_) => None,
        Node::Unary(_, a) => bad(a).then_some(a),
        Node::Binary(_, a, b) => [a, b].into_iter().find(|&x| bad(x)),
        Node::If {
            guard,
            then_,
            else_,
            index,
        } => match semantics.if_rule(index, vals[guard.index()]) {
            IfRule::Smoothed { wt, we, .. } => {
                if wt != 0.0 && !(wt * vals[then_.index()]).is_finite() {
                    Some(then_)
                } else if we != 0.0 && !(we * vals[else_.index()]).is_finite() {
                    Some(else_)
                } else {
                    bad(guard).then_some(guard)
                }
            }
            IfRule::Taken(branch) => {
                let taken = branch.pick(then_, else_);
                bad(taken).then_some(taken)
            }
        },
    }
}

/// Follows the non-finite value down from the output: the first recorded term on the way
/// and a description of where it started.
fn value_origin(
    program: &Program,
    semantics: Semantics,
    vals: &[f64],
    term_of: &[u32],
) -> (Option<usize>, String) {
    let mut at = program.output();
    let mut term = None;
    loop {
        if term.is_none() && term_of[at.index()] != NONE {
            term = Some(term_of[at.index()] as usize);
        }
        match non_finite_operand(program, semantics, vals, at) {
            Some(next) => at = next,
            None => break,
        }
    }
    // A non-finite constant folded into the output is no node of any term: the first term
    // whose value is that constant is the one.
    let term = term.or_else(|| {
        program.terms().iter().position(|t| match t.node {
            TermNode::Const(c) => !c.is_finite(),
            _ => false,
        })
    });
    (term, describe_value(program, vals, at))
}

fn num(x: f64) -> String {
    short_number(x)
}

/// A number for messages: up to 6 significant digits, no trailing zeros.
pub fn short_number(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let a = x.abs();
    if !(1e-4..1e9).contains(&a) {
        return format!("{x:.5e}");
    }
    let digits = (5 - a.log10().floor() as i32).max(0) as usize;
    let s = format!("{x:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// `log(-0.5) is NaN`, `1 / 0 is inf`, or what a non-finite constant means.
fn describe_value(program: &Program, vals: &[f64], at: NodeId) -> String {
    let v = num(vals[at.index()]);
    let val = |id: NodeId| num(vals[id.index()]);
    match program.node(at) {
        Node::Const(c) if c == f64::NEG_INFINITY => {
            "the value is outside the distribution's support".to_string()
        }
        Node::Const(c) => format!("the constant {}", num(c)),
        Node::Param(k) => format!("parameter {} is {v}", program.param_names()[k as usize]),
        Node::Latent(i) => format!("latent {} is {v}", program.latent_names()[i as usize]),
        Node::Unary(op, a) => format!("{op}({}) is {v}", val(a)),
        Node::Binary(op, a, b) => match op.info().symbol {
            Some(s) => format!("{} {s} {} is {v}", val(a), val(b)),
            None => format!("pow({}, {}) is {v}", val(a), val(b)),
        },
        Node::If { .. } => format!("an if-statement's value is {v}"),
    }
}

/// The reverse sweep of a finite output: the term and primitive where the first non-finite
/// adjoint that reaches a latent or parameter started; `None` when every one is finite.
fn gradient_origin(
    program: &Program,
    semantics: Semantics,
    vals: &[f64],
    term_of: &[u32],
) -> Option<(Option<usize>, String)> {
    let n = vals.len();
    let nodes = program.nodes();
    let mut active = Vec::with_capacity(n);
    for node in nodes {
        let a = matches!(node, Node::Latent(_) | Node::Param(_))
            || node.operands().any(|o| active[o.index()]);
        active.push(a);
    }
    let mut adj = vec![0.0f64; n];
    // Where each adjoint first became non-finite, and the first term it came through.
    let mut source = vec![NONE; n];
    let mut owner = vec![NONE; n];
    let out = program.output();
    adj[out.index()] = 1.0;
    for i in (0..n).rev() {
        let a = adj[i];
        if a == 0.0 || !active[i] {
            continue;
        }
        owner[i] = owner[i].min(term_of[i]);
        let mut parts: [(NodeId, f64); 3] = [(NodeId(0), 0.0); 3];
        let mut count = 0;
        let mut push = |x: NodeId, d: f64| {
            parts[count] = (x, d);
            count += 1;
        };
        let v = |id: NodeId| vals[id.index()];
        match nodes[i] {
            Node::Const(_) | Node::Param(_) | Node::Latent(_) => {}
            Node::Unary(op, x) => push(x, unary_derivative(op, v(x), vals[i])),
            Node::Binary(op, x, y) => {
                let (dx, dy) = binary_derivatives(op, v(x), v(y), vals[i]);
                push(x, dx);
                push(y, dy);
            }
            Node::If {
                guard,
                then_,
                else_,
                index,
            } => match semantics.if_rule(index, v(guard)) {
                IfRule::Smoothed { wt, we, inv_eta } => {
                    if wt != 0.0 {
                        push(then_, wt);
                    }
                    if we != 0.0 {
                        push(else_, we);
                    }
                    if wt * we != 0.0 {
                        push(guard, wt * we * inv_eta * (v(else_) - v(then_)));
                    }
                }
                IfRule::Taken(branch) => push(branch.pick(then_, else_), 1.0),
            },
        }
        for &(x, d) in &parts[..count] {
            let xi = x.index();
            if !active[xi] {
                continue;
            }
            let c = a * d;
            if c == 0.0 {
                continue;
            }
            adj[xi] += c;
            owner[xi] = owner[xi].min(owner[i]);
            if !adj[xi].is_finite() && source[xi] == NONE {
                source[xi] = if a.is_finite() { i as u32 } else { source[i] };
            }
        }
    }
    let input = (0..n)
        .find(|&i| matches!(nodes[i], Node::Latent(_) | Node::Param(_)) && !adj[i].is_finite())?;
    let at = source[input];
    if at == NONE {
        return None;
    }
    let at = at as usize;
    let term = (owner[at] != NONE).then_some(owner[at] as usize);
    Some((
        term,
        describe_derivative(program, semantics, vals, NodeId(at as u32)),
    ))
}

/// `sqrt(0) has derivative inf`, and the like.
fn describe_derivative(
    program: &Program,
    semantics: Semantics,
    vals: &[f64],
    at: NodeId,
) -> String {
    let val = |id: NodeId| num(vals[id.index()]);
    match program.node(at) {
        Node::Unary(op, a) => format!(
            "{op}({}) has derivative {}",
            val(a),
            num(unary_derivative(op, vals[a.index()], vals[at.index()]))
        ),
        Node::Binary(op, a, b) => {
            let (da, db) =
                binary_derivatives(op, vals[a.index()], vals[b.index()], vals[at.index()]);
            let what = match op.info().symbol {
                Some(s) => format!("{} {s} {}", val(a), val(b)),
                None => format!("pow({}, {})", val(a), val(b)),
            };
            format!("{what} has derivatives {} and {}", num(da), num(db))
        }
        Node::If { .. } if matches!(semantics, Semantics::Smoothed { .. }) => {
            "a smoothed if-statement's derivative in its guard is not finite (a branch is \
             not finite)"
                .to_string()
        }
        _ => "the gradient overflows".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Builder, Dist, Span, TermKind};

    fn span(start: u32) -> Span {
        Span {
            start,
            end: start + 1,
        }
    }

    #[test]
    fn a_nan_log_density_is_traced_to_its_term_through_the_taken_branch() {
        let b = Builder::new();
        let z = b.latent("z");
        let w = b.latent("w");
        let one = b.constant(1.0);
        let first = b
            .log_density(Dist::Normal, z, &[b.constant(0.0), one])
            .unwrap();
        b.record_term(TermKind::Sample(Dist::Normal), span(0), first, &[z]);
        // log(w) is NaN for w < 0; only the then-branch (z < 0) reads it.
        let second = b.if_neg(z, w.ln(), b.constant(0.0));
        b.record_term(TermKind::Factor, span(10), second, &[]);
        let p = b.finish(&[first + second]).unwrap();
        let c = find_culprit(&p, Semantics::Crisp, &[], &[-1.0, -0.5]).unwrap();
        assert_eq!(c.term, Some(1));
        assert!(c.value_not_finite && c.value.is_nan());
        assert_eq!(c.origin, "log(-0.5) is NaN");
        // The else-branch is taken: nothing is wrong.
        assert_eq!(find_culprit(&p, Semantics::Crisp, &[], &[1.0, -0.5]), None);
    }

    #[test]
    fn an_infinite_derivative_is_traced_to_the_term_it_came_through() {
        let b = Builder::new();
        let z = b.latent("z");
        let fine = -0.5 * z * z;
        b.record_term(TermKind::Factor, span(0), fine, &[]);
        let d = z - z;
        let bad = d.sqrt();
        b.record_term(TermKind::Factor, span(5), bad, &[]);
        let p = b.finish(&[fine + bad]).unwrap();
        let c = find_culprit(&p, Semantics::Crisp, &[], &[0.3]).unwrap();
        assert_eq!(c.term, Some(1));
        assert!(!c.value_not_finite);
        assert_eq!(c.value, 0.0);
        assert_eq!(c.origin, "sqrt(0) has derivative inf");
    }

    #[test]
    fn an_infinite_adjoint_into_an_untaken_constant_branch_is_harmless() {
        // sqrt(relu(z)) at z < 0: the derivative of sqrt at 0 is infinite, but the taken
        // branch of relu is the constant 0, so no latent receives it.
        let b = Builder::new();
        let z = b.latent("z");
        let f = b.relu(z).sqrt();
        let p = b.finish(&[f]).unwrap();
        assert_eq!(find_culprit(&p, Semantics::Crisp, &[], &[-1.0]), None);
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(short_number(-0.53), "-0.53");
        assert_eq!(short_number(1.0), "1");
        assert_eq!(short_number(1.0 / 3.0), "0.333333");
        assert_eq!(short_number(123456.789), "123457");
        assert_eq!(short_number(1e-7), "1.00000e-7");
        assert_eq!(short_number(f64::NEG_INFINITY), "-inf");
    }
}
