//! Fusing common instruction sequences into one instruction, at compile time, without
//! changing a bit: the fused instruction performs the same scalar operations in the same
//! order, and its reverse rule makes the same contributions to the same adjoints in the same
//! order as the sequence it replaces. Intermediate results nobody else reads stay in
//! registers instead of making a round trip through the workspace.
//!
//! Not here: the fused instructions' lane rules (`kernels.rs`) and how they are swept.

use crate::ir::{Binary, Unary};

use super::instr::{Op, Step, operands};

/// Not a slot.
const NONE_SLOT: u32 = u32::MAX;

/// Which steps read each slot (the output counts as a reader at `u32::MAX`).
fn readers(steps: &[Step], uniform_steps: &[Step], n: usize, output: u32) -> Vec<Vec<u32>> {
    let mut r = vec![Vec::new(); n];
    r[output as usize].push(u32::MAX);
    for st in steps.iter().chain(uniform_steps) {
        let (ops, k) = operands(&st.op);
        for &o in &ops[..k] {
            r[o as usize].push(st.out);
        }
    }
    r
}

/// Where each lane step sits in `steps`, by slot (`usize::MAX` for other slots).
fn positions(steps: &[Step], n: usize) -> Vec<usize> {
    let mut at = vec![usize::MAX; n];
    for (i, st) in steps.iter().enumerate() {
        at[st.out as usize] = i;
    }
    at
}

/// Drops the steps marked in `gone`.
fn remove(steps: &mut Vec<Step>, gone: &[bool]) {
    let mut k = 0;
    steps.retain(|_| {
        k += 1;
        !gone[k - 1]
    });
}

/// Fuses `c * ((x - m) / s)^2` (four lane steps `sub`, `div`, `powi 2`, `mul` by a constant,
/// either side) into one [`Op::NormalSquare`] where the three intermediate results have no
/// other reader and nothing but constants lies between the first and the last of the four
/// in slot order (so no other step's contribution to `x`, `m` or `s` falls between theirs,
/// and the reverse sweep adds into every adjoint in the same order as unfused). Returns the
/// slots fused away.
pub(super) fn fuse_normal_square(
    steps: &mut Vec<Step>,
    uniform_steps: &[Step],
    constant: &[Option<f64>],
    output: u32,
) -> Vec<u32> {
    let n = constant.len();
    let readers = readers(steps, uniform_steps, n, output);
    let at = positions(steps, n);
    let lane = |slot: u32| at[slot as usize] != usize::MAX;
    let mut gone = vec![false; steps.len()];
    let mut fused = Vec::new();
    for i in 0..steps.len() {
        let Op::Binary {
            op: Binary::Mul,
            a,
            b,
        } = steps[i].op
        else {
            continue;
        };
        let (c, p) = match (constant[a as usize], constant[b as usize]) {
            (Some(c), None) => (c, b),
            (None, Some(c)) => (c, a),
            _ => continue,
        };
        let single = |slot: u32| lane(slot) && readers[slot as usize].len() == 1;
        if !single(p) {
            continue;
        }
        let Op::Unary {
            op: Unary::Powi(2),
            a: u,
        } = steps[at[p as usize]].op
        else {
            continue;
        };
        if !single(u) {
            continue;
        }
        let Op::Binary {
            op: Binary::Div,
            a: d,
            b: s,
        } = steps[at[u as usize]].op
        else {
            continue;
        };
        if !single(d) {
            continue;
        }
        let Op::Binary {
            op: Binary::Sub,
            a: x,
            b: m,
        } = steps[at[d as usize]].op
        else {
            continue;
        };
        let out = steps[i].out;
        let only_consts_between =
            (d + 1..out).all(|k| k == u || k == p || constant[k as usize].is_some());
        if x == m || s == x || s == m || d == s || !only_consts_between {
            continue;
        }
        steps[i].op = Op::NormalSquare { x, m, s, c };
        for k in [d, u, p] {
            gone[at[k as usize]] = true;
        }
        fused.extend([d, u, p]);
    }
    remove(steps, &gone);
    fused
}

/// Fuses chains of additions `((base + t1) + t2) + ... + tn` (either operand order), where
/// every partial sum is read only by the next addition, into one [`Op::SumChain`] whose terms
/// go to `chains` as `(term, whether the partial sum is the right operand)`. A term (or the
/// base) read by some other step between its addition and the end of the chain would get
/// that step's contribution in a different order once fused, so the chain starts after the
/// last such term. Returns the slots fused away (the partial sums).
pub(super) fn fuse_sum_chains(
    steps: &mut Vec<Step>,
    uniform_steps: &[Step],
    n: usize,
    output: u32,
    chains: &mut Vec<(u32, bool)>,
) -> Vec<u32> {
    let readers = readers(steps, uniform_steps, n, output);
    let at = positions(steps, n);
    // The partial sum an addition extends: an operand that is itself a lane addition read
    // by nothing else (the later one if both are).
    let acc_of = |st: &Step| -> Option<(u32, u32, bool)> {
        let Op::Binary {
            op: Binary::Add,
            a,
            b,
        } = st.op
        else {
            return None;
        };
        if a == b {
            return None;
        }
        let extends = |o: u32| {
            at[o as usize] != usize::MAX
                && readers[o as usize].len() == 1
                && matches!(
                    steps[at[o as usize]].op,
                    Op::Binary { op: Binary::Add, a, b } if a != b
                )
        };
        match (extends(a), extends(b)) {
            (_, true) if b > a || !extends(a) => Some((b, a, true)),
            (true, _) => Some((a, b, false)),
            _ => None,
        }
    };
    let mut extended = vec![false; n];
    for st in steps.iter() {
        if let Some((acc, _, _)) = acc_of(st) {
            extended[acc as usize] = true;
        }
    }
    // A reader of `slot` strictly between `lo` and `hi` other than the chain's additions.
    let read_between = |slot: u32, lo: u32, hi: u32, in_chain: &[bool]| {
        readers[slot as usize]
            .iter()
            .any(|&r| r > lo && r < hi && !in_chain[r as usize])
    };
    let mut in_chain = vec![false; n];
    let mut gone = vec![false; steps.len()];
    let mut fused = Vec::new();
    let mut replaced = Vec::new();
    for st in steps.iter() {
        let is_add = matches!(
            st.op,
            Op::Binary {
                op: Binary::Add,
                ..
            }
        );
        if !is_add || extended[st.out as usize] {
            continue;
        }
        // `st` ends a chain: walk back while the partial sums extend it.
        let end = st.out;
        let mut links = vec![end];
        let mut cur = *st;
        while let Some((acc, _, _)) = acc_of(&cur) {
            links.push(acc);
            cur = steps[at[acc as usize]];
        }
        links.reverse();
        for &l in &links {
            in_chain[l as usize] = true;
        }
        // The chain starts after the last addition whose term is read in between.
        let mut start = 0;
        for k in (1..links.len()).rev() {
            let (_, term, _) = acc_of(&steps[at[links[k] as usize]]).expect("a link");
            if read_between(term, links[k], end, &in_chain) {
                start = k + 1;
                break;
            }
        }
        let (a, b) = match steps[at[links[0] as usize]].op {
            Op::Binary { a, b, .. } => (a, b),
            _ => (NONE_SLOT, NONE_SLOT),
        };
        if start == 0
            && (a == NONE_SLOT
                || read_between(a, links[0], end, &in_chain)
                || read_between(b, links[0], end, &in_chain))
        {
            start = 1;
        }
        for &l in &links {
            in_chain[l as usize] = false;
        }
        let chain = &links[start..];
        if chain.len() < 2 {
            continue;
        }
        let from = chains.len() as u32;
        let base = if start == 0 {
            chains.push((b, false));
            a
        } else {
            links[start - 1]
        };
        let rest = if start == 0 { &chain[1..] } else { chain };
        for &l in rest {
            let (_, term, right) = acc_of(&steps[at[l as usize]]).expect("a link");
            chains.push((term, right));
        }
        let to = chains.len() as u32;
        for &l in &chain[..chain.len() - 1] {
            gone[at[l as usize]] = true;
            fused.push(l);
        }
        replaced.push((at[end as usize], Op::SumChain { base, from, to }));
    }
    for (i, op) in replaced {
        steps[i].op = op;
    }
    remove(steps, &gone);
    fused
}
