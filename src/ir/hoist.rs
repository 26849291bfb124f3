//! The objective as a sum of terms with their constant parts hoisted out: one constant added
//! once instead of a subtraction per term per sample.
//!
//! Most log-densities end in constants: `- ln(2 pi) / 2` of every normal, `- ln(scale)` where
//! the scale is a constant, `- lgamma(x + 1)` of a Poisson observation of data. Left in place,
//! each is one more instruction of the tape for every sample, though it never changes a
//! gradient. [`Builder::sum_hoisting_constants`] adds the terms without them and adds their
//! total, computed once when the program is built, at the end. The program *is* that sum, so
//! the tape and the reference interpreter compute the same bits; the objective's value may
//! differ from the term-by-term sum in its last bits (the additions are done in another
//! order), its gradient does not change at all (a constant's adjoint is never read).
//!
//! Recorded terms are pointed at the part left in the sum, with the hoisted operations, so a
//! message about a term still shows the statement's own value ([`Program::term_value`]).
//!
//! [`Program::term_value`]: super::Program::term_value

use super::builder::{Builder, Retargets, Var};
use super::node::{Binary, Node, NodeId};
use super::ops::binary_value;

impl Builder {
    /// `terms[0] + terms[1] + ...` (left to right, 0 for none) with every finite constant
    /// added to or subtracted from a term at its top (`(e - c1) - c2`, `c + e`) taken out,
    /// and a term that is a finite constant left out: the remaining terms are added left to
    /// right and the constants' total (folded in term order, each term's constants in the
    /// order the term applied them) is added last.
    pub fn sum_hoisting_constants<'b>(&'b self, terms: &[Var<'b>]) -> Var<'b> {
        let mut total = self.constant(0.0);
        let mut hoisted = 0.0;
        let mut any = false;
        let mut moved = Retargets::default();
        for &t in terms {
            if let Some(c) = t.as_const().filter(|c| c.is_finite()) {
                hoisted += c;
                any = true;
                continue;
            }
            let (rest, ops) = self.peel_constants(t);
            for &(op, c) in &ops {
                hoisted = binary_value(op, hoisted, c);
            }
            if !ops.is_empty() {
                any = true;
                moved.insert(t.id(), (rest.id(), ops));
            }
            total = total + rest;
        }
        self.retarget_terms(&moved);
        if any { total + hoisted } else { total }
    }

    /// `t` without the finite constants added or subtracted at its top, and those operations
    /// in the order `t` applies them (innermost first).
    fn peel_constants<'b>(&'b self, t: Var<'b>) -> (Var<'b>, Vec<(Binary, f64)>) {
        let finite = |v: NodeId| self.wrap(v).as_const().filter(|c| c.is_finite());
        let mut ops = Vec::new();
        let mut at = t;
        loop {
            let next = match self.node_of(at) {
                Node::Binary(op @ (Binary::Add | Binary::Sub), a, b) => match finite(b) {
                    Some(c) => Some((a, op, c)),
                    // `c + e` is `e + c` bit for bit: addition commutes exactly.
                    None if op == Binary::Add => finite(a).map(|c| (b, op, c)),
                    None => None,
                },
                _ => None,
            };
            let Some((rest, op, c)) = next else { break };
            ops.push((op, c));
            at = self.wrap(rest);
        }
        ops.reverse();
        (at, ops)
    }
}
