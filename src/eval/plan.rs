//! The reverse plans: which steps the reverse sweep visits under smoothed or under crisp and
//! forced semantics, which contribution comes first to each adjoint, which adjoints need
//! zeroing, and where each if-statement's smoothing weights are kept.
//!
//! Not here: the forward steps (`compile.rs`) and how a plan is swept (`sweep.rs`).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::collections::hash_map::Entry;

use crate::ir::Binary;

use super::instr::{
    FOLD_A, FOLD_B, NO_TARGET, NONE, Op, Plan, RevStep, Step, Target, UNREAD, forward_only_op,
};

/// Lets every if-statement whose guard is the same lane-varying slot as an earlier one's
/// (one source `if` assigning several variables becomes one if-statement per variable) read
/// the earlier one's smoothing weights instead of computing the same sigmoids again: it takes
/// the earlier one's weights place and `reuse`. Returns, per weights place, whether a later
/// step reads it again in the forward sweep: such a place keeps both weights and is never
/// shared. Same operations on the same values, so the same bits.
pub(super) fn share_guard_weights(
    steps: &mut [Step],
    uniform: &[bool],
    if_slots: usize,
) -> Vec<bool> {
    let mut first_on_guard = HashMap::new();
    let mut read_again = vec![false; if_slots];
    for step in steps.iter_mut() {
        if let Op::If {
            g, cache, reuse, ..
        } = &mut step.op
            && !uniform[*g as usize]
        {
            match first_on_guard.entry(*g) {
                Entry::Occupied(first) => {
                    *cache = *first.get();
                    *reuse = true;
                    read_again[*cache as usize] = true;
                }
                Entry::Vacant(slot) => {
                    slot.insert(*cache);
                }
            }
        }
    }
    read_again
}

/// Gives the smoothing weights the reverse sweep reads (those of the if-statements in the
/// smoothed plan) places of their own, in the order the reverse sweep reads them, and keeps
/// no others ([`UNREAD`]): the reverse sweep then streams through a dense array (for
/// `cheating`, a third of the size, without the coin tosses' weights in between) instead of
/// picking every third entry out of a large one, and the forward sweep stores a third of
/// them. An if-statement whose reverse step sends nothing to its branches keeps only the
/// product of its weights (one place, not two), unless a later if-statement on the same
/// guard reads its weights again (`read_again`, by place, from [`share_guard_weights`]):
/// that place keeps both. Returns the number of places.
pub(super) fn share_unread_weights(
    read_again: &[bool],
    step_lists: [&mut Vec<Step>; 2],
    plans: [&mut Plan; 2],
) -> usize {
    let [smooth, crisp] = plans;
    let mut place = vec![(u32::MAX, true); read_again.len()];
    let mut next = 0u32;
    for rs in smooth.steps.iter().rev() {
        if let Op::If { cache, .. } = rs.step.op
            && place[cache as usize].0 == u32::MAX
        {
            let product =
                !read_again[cache as usize] && rs.to[1].adj == NONE && rs.to[2].adj == NONE;
            place[cache as usize] = (next, product);
            next += if product { 1 } else { 2 };
        }
    }
    // Weights read again in the forward sweep but never in the reverse one: both weights,
    // in a place of their own.
    for (p, _) in place
        .iter_mut()
        .zip(read_again)
        .filter(|(p, again)| **again && p.0 == u32::MAX)
    {
        *p = (next, false);
        next += 2;
    }
    for p in place.iter_mut().filter(|p| p.0 == u32::MAX) {
        *p = (UNREAD, true);
    }
    let renumber = |step: &mut Step| {
        if let Op::If { cache, product, .. } = &mut step.op {
            (*cache, *product) = place[*cache as usize];
        }
    };
    for list in step_lists {
        list.iter_mut().for_each(renumber);
    }
    for plan in [smooth, crisp] {
        plan.steps.iter_mut().for_each(|rs| renumber(&mut rs.step));
    }
    next as usize
}

/// Per slot, whether adjoints flow from it to an active latent or parameter along the edges
/// the semantics differentiates (a crisp guard passes nothing).
fn reaches_inputs(steps: &[Step], adj: &[u32], chains: &[(u32, bool)], smooth: bool) -> Vec<bool> {
    let mut reach = vec![false; adj.len()];
    for step in steps {
        let r = |s: u32| reach[s as usize];
        let here = match step.op {
            Op::Param { .. } | Op::Latent { .. } => adj[step.out as usize] != NONE,
            Op::Unary { a, .. } => r(a),
            Op::Binary { a, b, .. } => r(a) || r(b),
            Op::NormalSquare { x, m, s, .. } => r(x) || r(m) || r(s),
            Op::SquareDiff { x, m, .. } => r(x) || r(m),
            Op::Square { x, s, .. } => r(x) || (s != NONE && r(s)),
            Op::PoissonTerm { r: rate, .. } => r(rate),
            Op::SumChain { base, from, to } => {
                r(base)
                    || chains[from as usize..to as usize]
                        .iter()
                        .any(|&(t, _)| r(t))
            }
            Op::If { g, t, e, .. } => (smooth && r(g)) || r(t) || r(e),
            forward_only_op!() => unreachable!("only forward-only layouts have this step"),
        };
        reach[step.out as usize] = here;
    }
    reach
}

/// What the reverse plans are built from: every step in slot order, the adjoint index and
/// uniformity of each slot, the slots fused away, the sum-chain terms, the output, and the
/// adjoints the gradient reads.
pub(super) struct Shape<'a> {
    pub steps: &'a [Step],
    pub adj: &'a [u32],
    pub uniform: &'a [bool],
    pub fused: &'a [u32],
    pub chains: &'a [(u32, bool)],
    pub output: u32,
    pub inputs: &'a [u32],
}

/// The reverse sweep for smoothed (`smooth`: guards carry adjoints) or crisp and forced
/// semantics: the steps with something to propagate, in reverse order, and which
/// contribution comes first to each adjoint. The order of contributions is the order in which
/// the sweep makes them (reverse instruction order; guard, then, else within an `If`), so
/// "first" here is first there.
pub(super) fn plan(shape: &Shape, smooth: bool) -> Plan {
    let Shape {
        steps,
        adj,
        uniform,
        fused,
        chains,
        output,
        inputs,
    } = *shape;
    let mut chain_targets = vec![NO_TARGET; chains.len()];
    let active_count = adj.iter().filter(|&&a| a != NONE).count();
    let mut seen = vec![false; active_count];
    // Slots fused away are never read: their adjoints need no zeroing.
    for &f in fused {
        if adj[f as usize] != NONE {
            seen[adj[f as usize] as usize] = true;
        }
    }
    if adj[output as usize] != NONE {
        seen[adj[output as usize] as usize] = true;
    }
    // Whether a slot's adjoint can receive anything but zeros: the output's does, and so do
    // the operands of a live step along the edges this semantics differentiates (crisp
    // guards pass nothing). Readers come after their operands, so the reversed walk knows a
    // step's liveness when it reaches it. A dead step would only add exact `+0.0`s (adjoints
    // are never `-0.0`: the first contribution is written as `0.0 + c`), so skipping it
    // changes no bit; it saves e.g. the crisp sweep through everything xornet's guards read.
    //
    // Symmetrically, a contribution is only worth making to a slot from which adjoints can
    // flow on to a latent or parameter (`reaches`, in slot order): under crisp semantics
    // nothing that only feeds guards does (the Reparam gradient of `cheating` is exactly
    // zero, so its reverse sweep becomes empty). Such a slot's adjoint never reaches an
    // input's, so the gradient keeps its bits.
    let reaches = reaches_inputs(steps, adj, chains, smooth);
    let live = RefCell::new(vec![false; adj.len()]);
    live.borrow_mut()[output as usize] = true;
    // Per adjoint, how many contributions it has had and where in `out` the last one was
    // made (for folding a guard's sum or difference into its if-statement).
    let contributions = RefCell::new(vec![(0u32, 0usize); active_count]);
    let at = Cell::new(0usize);
    let mut target = |slot: u32, wanted: bool| -> Target {
        let a = adj[slot as usize];
        if !wanted || a == NONE || !reaches[slot as usize] {
            return NO_TARGET;
        }
        live.borrow_mut()[slot as usize] = true;
        let first = !seen[a as usize];
        seen[a as usize] = true;
        let c = &mut contributions.borrow_mut()[a as usize];
        *c = (c.0 + 1, at.get());
        Target { adj: a, first }
    };
    let mut out: Vec<RevStep> = Vec::new();
    // By adjoint, the position in `out` of the smoothed if-statement whose guard it is.
    let mut guard_of = HashMap::new();
    for &step in steps.iter().rev() {
        let ad = adj[step.out as usize];
        if ad == NONE || !live.borrow()[step.out as usize] || !reaches[step.out as usize] {
            continue;
        }
        at.set(out.len());
        // A sum or difference read only as one smoothed if-statement's guard: its two
        // contributions are made by that if-statement's reverse step, after its own
        // (`RevStep::folded_guard`), when neither operand's adjoint has received anything
        // since, so that every adjoint receives its contributions in the same order.
        if let Op::Binary {
            op: op @ (Binary::Add | Binary::Sub),
            a,
            b,
        } = step.op
            && a != b
            && !uniform[step.out as usize]
            && let Some(&i) = guard_of.get(&ad)
            && contributions.borrow()[ad as usize].0 == 1
        {
            let since = |slot: u32| {
                let x = adj[slot as usize];
                x != NONE && {
                    let (count, last) = contributions.borrow()[x as usize];
                    count > 0 && last > i
                }
            };
            if !since(a) && !since(b) {
                // Made at the if-statement's place in the sweep.
                at.set(i);
                let (ta, tb) = (target(a, true), target(b, true));
                if ta.adj != NONE || tb.adj != NONE {
                    let rs: &mut RevStep = &mut out[i];
                    rs.to[FOLD_A] = ta;
                    rs.to[FOLD_B] = tb;
                    rs.folded_guard = Some(op);
                    rs.to[0] = NO_TARGET;
                }
                continue;
            }
        }
        let to = match step.op {
            Op::Param { .. } | Op::Latent { .. } => continue,
            Op::Unary { a, .. } => [target(a, true), NO_TARGET, NO_TARGET],
            Op::Binary { a, b, .. } if a == b => [target(a, true), NO_TARGET, NO_TARGET],
            Op::Binary { a, b, .. } => [target(a, true), target(b, true), NO_TARGET],
            // In the order of the unfused sweep: the division's `s`, then the
            // subtraction's `x` and `m`.
            Op::NormalSquare { x, m, s, .. } => {
                let ts = target(s, true);
                let tx = target(x, true);
                [ts, tx, target(m, true)]
            }
            Op::SquareDiff { x, m, .. } => {
                let tx = target(x, true);
                [NO_TARGET, tx, target(m, true)]
            }
            Op::Square { x, s, .. } => {
                let ts = if s == NONE {
                    NO_TARGET
                } else {
                    target(s, true)
                };
                [ts, target(x, true), NO_TARGET]
            }
            // Both of its contributions go to `r` (the first, if any, is the subtraction's).
            Op::PoissonTerm { r, .. } => [target(r, true), NO_TARGET, NO_TARGET],
            // The additions in reverse, each adding to its term; the base comes last.
            Op::SumChain { base, from, to } => {
                for j in (from..to).rev() {
                    chain_targets[j as usize] = target(chains[j as usize].0, true);
                }
                [target(base, true), NO_TARGET, NO_TARGET]
            }
            Op::If { g, t, e, .. } => {
                let tg = target(g, smooth);
                let tt = target(t, true);
                [tg, tt, target(e, true)]
            }
            forward_only_op!() => unreachable!("only forward-only layouts have this step"),
        };
        let chain = matches!(step.op, Op::SumChain { .. });
        if chain || to.iter().any(|t| t.adj != NONE) {
            if smooth
                && let Op::If { .. } = step.op
                && to[0].adj != NONE
                && to[0].first
                && !uniform[step.out as usize]
            {
                guard_of.insert(to[0].adj, out.len());
            }
            out.push(RevStep {
                step,
                ad,
                to: [to[0], to[1], to[2], NO_TARGET, NO_TARGET],
                uniform: uniform[step.out as usize],
                folded_guard: None,
            });
        }
    }
    // Every live step's own adjoint is written before it is read; of the others, only the
    // inputs' adjoints are read (as the gradient), so only they need zeroing.
    let zero = inputs
        .iter()
        .copied()
        .filter(|&a| !seen[a as usize])
        .collect();
    Plan {
        steps: out,
        zero,
        chain_targets,
    }
}
