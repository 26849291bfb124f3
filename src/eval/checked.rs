//! The checked layout: the compact layout with every logarithm (`ln`, `log1p`, `softplus`)
//! whose value no gradient reads replaced by a stand-in finite exactly where it is
//! ([`ln_stand_in`](crate::elementary::ln_stand_in), `log1p_stand_in`, `softplus_stand_in`),
//! for the gradient sweeps of optimisation steps
//! ([`Values::Checked`](super::Values::Checked)).
//!
//! Why: a training step needs each sample's gradient, and its log-density only to find the
//! samples where that is not finite (to skip or stop the step and say where). The reverse
//! sweep reads the argument of a logarithm, not its value, so a logarithm that feeds only the
//! output through sums and constant factors (a Poisson term's `ln(rate)`, a normal density's
//! `ln(scale)`) is computed for nothing but that check: on textmsg, the logarithms of 36 of
//! its 37 Poisson terms (one count is 0) were a third of a gradient sample's time (the logit
//! transform's softplus terms and a Cauchy's `log1p` are the same case). A stand-in is finite
//! exactly where its function is and within about `ln 2` of it, so the output is finite
//! exactly where the exact one is, unless a sum or product past a logarithm overflows in one
//! and not the other (terms near `1e308`).
//!
//! A step keeps its exact value when the reverse sweeps read it (its place is pinned and
//! listed by `instr::reverse_reads`), when it is the guard of an if-statement (the smoothing
//! weights are kept for the reverse sweep, and a crisp guard chooses the branch), or when it is
//! an operand of such a step: the gradients keep their bits, and nothing changes but the
//! output's value.

use super::instr::{NONE, Op, Plan, each_read, reverse_reads};
use super::layout::{Layout, LayoutKind};

/// Lane steps per stand-in above which a tape gets no checked layout. The layout costs a
/// second compiled forward sweep (compile time, and code of about 40 bytes a step) and a copy
/// of the steps: the 10,000-student survey, whose 2 logarithms sit among 120,000 steps, ran
/// 8 MB larger (98 MB at its peak) and no faster with one.
const STEPS_PER_STAND_IN: usize = 100;

/// The checked layout of `compact` with reverse plans `plans` (smoothed, then crisp), or
/// `None` where it would have fewer than one stand-in per [`STEPS_PER_STAND_IN`] steps (the
/// compact layout then serves both).
pub(super) fn build(compact: &Layout, plans: [&Plan; 2]) -> Option<Layout> {
    let steps = &compact.steps;
    let mut read_back = vec![false; compact.values];
    for (plan, smooth) in plans.into_iter().zip([true, false]) {
        for rs in &plan.steps {
            let (reads, k) = reverse_reads(rs, smooth);
            reads[..k]
                .iter()
                .for_each(|&p| read_back[p as usize] = true);
        }
    }
    // The step whose value each operand reads (`NONE`: no step of this layout wrote it, as
    // for constants, parameters and values the same in every lane).
    let mut writer = vec![NONE; compact.values];
    let mut operand_writers: Vec<Vec<u32>> = Vec::with_capacity(steps.len());
    for (k, st) in steps.iter().enumerate() {
        let mut w = Vec::new();
        each_read(st, &compact.chains, |p| w.push(writer[p as usize]));
        operand_writers.push(w);
        writer[st.out as usize] = k as u32;
    }
    let mut exact = vec![false; steps.len()];
    for k in (0..steps.len()).rev() {
        exact[k] |= read_back[steps[k].out as usize];
        // What the step reads must be exact if its value must; an if-statement's guard (its
        // first operand, `instr::operands`) always.
        let ws = &operand_writers[k];
        let needed = match steps[k].op {
            _ if exact[k] => &ws[..],
            Op::If { .. } => &ws[..1],
            _ => &[],
        };
        for &w in needed {
            if w != NONE {
                exact[w as usize] = true;
            }
        }
    }
    let stand_in = |k: usize| {
        !exact[k]
            && match steps[k].op {
                Op::Unary { op, .. } => op.info().stand_in,
                Op::PoissonTerm { .. } => true,
                _ => false,
            }
    };
    let stand_ins = (0..steps.len()).filter(|&k| stand_in(k)).count();
    if stand_ins == 0 || stand_ins * STEPS_PER_STAND_IN < steps.len() {
        return None;
    }
    let mut checked = Layout {
        kind: LayoutKind::Checked,
        ..compact.clone()
    };
    for (k, st) in checked.steps.iter_mut().enumerate() {
        if !stand_in(k) {
            continue;
        }
        match &mut st.op {
            Op::Unary { op, a } => st.op = Op::StandIn { op: *op, a: *a },
            Op::PoissonTerm { stand_in, .. } => *stand_in = true,
            _ => unreachable!("a stand-in is a logarithm or a Poisson term"),
        }
    }
    Some(checked)
}
