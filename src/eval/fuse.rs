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

/// The most additions one `Op::SumChain` instruction makes: a longer chain becomes several,
/// each continuing from the partial sum of the one before (a slot of its own). Its terms then
/// need to live only until their segment's end, not until the end of a chain that may run
/// through the whole program, so a tape's lanes can share memory (`layout.rs`).
pub const CHAIN_SEGMENT: usize = 32;

/// Which steps read each slot, in slot order (the output counts as a reader at `u32::MAX`;
/// a step reading a slot twice is listed twice): one flat list with an offset per slot.
struct Readers {
    start: Vec<u32>,
    of: Vec<u32>,
}

impl Readers {
    fn new(steps: &[Step], uniform_steps: &[Step], n: usize, output: u32) -> Readers {
        let each = |f: &mut dyn FnMut(u32, u32)| {
            f(output, u32::MAX);
            for st in steps.iter().chain(uniform_steps) {
                let (ops, k) = operands(&st.op);
                for &o in &ops[..k] {
                    f(o, st.out);
                }
            }
        };
        let mut start = vec![0u32; n + 1];
        each(&mut |o, _| start[o as usize + 1] += 1);
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut of = vec![0u32; start[n] as usize];
        each(&mut |o, r| {
            of[fill[o as usize] as usize] = r;
            fill[o as usize] += 1;
        });
        for i in 0..n {
            of[start[i] as usize..start[i + 1] as usize].sort_unstable();
        }
        Readers { start, of }
    }

    fn of(&self, slot: u32) -> &[u32] {
        &self.of[self.start[slot as usize] as usize..self.start[slot as usize + 1] as usize]
    }

    /// How many readers of `slot` lie strictly between `lo` and `hi` (a binary search).
    fn between(&self, slot: u32, lo: u32, hi: u32) -> usize {
        let r = self.of(slot);
        r.partition_point(|&x| x < hi)
            .saturating_sub(r.partition_point(|&x| x <= lo))
    }
}

/// What every fusion pass asks of the steps before it rewrites them: who reads each slot,
/// and where each lane step sits in `steps`.
struct Scan {
    readers: Readers,
    /// By slot, the index of the lane step writing it (`usize::MAX` for other slots).
    at: Vec<usize>,
}

impl Scan {
    fn new(steps: &[Step], uniform_steps: &[Step], n: usize, output: u32) -> Scan {
        let mut at = vec![usize::MAX; n];
        for (i, st) in steps.iter().enumerate() {
            at[st.out as usize] = i;
        }
        Scan {
            readers: Readers::new(steps, uniform_steps, n, output),
            at,
        }
    }

    /// The index in `steps` of the lane step writing `slot` (only for lane slots).
    fn at(&self, slot: u32) -> usize {
        self.at[slot as usize]
    }

    /// Whether a lane step writes `slot` and exactly one reader reads it: an intermediate
    /// result a fusion may swallow.
    fn single(&self, slot: u32) -> bool {
        self.at[slot as usize] != usize::MAX && self.readers.of(slot).len() == 1
    }
}

/// Drops the steps marked in `gone`.
fn remove(steps: &mut Vec<Step>, gone: &[bool]) {
    let mut k = 0;
    steps.retain(|_| {
        k += 1;
        !gone[k - 1]
    });
}

/// The instruction that replaces a step and the slots of the steps it swallows.
type Fused = (Op, Vec<u32>);

/// The fusions [`fuse`] makes, each a function that gives, for step `i`, the instruction that
/// replaces it and the slots of the steps it swallows (or `None` to keep it).
#[derive(Clone, Copy, Debug)]
pub(super) enum Pattern {
    /// `c * ((x - m) / s)^2` and the forms without `m` or `s` (see [`normal_square`]).
    NormalSquare,
    /// `c * ln(r) - r` (see [`poisson_term`]).
    PoissonTerm,
}

/// One fusion pass: every step `pattern` fuses is replaced, and the steps it swallows are
/// dropped at the end (a later step sees the earlier ones already replaced). Returns the
/// slots fused away, in the order the fusions gave them.
pub(super) fn fuse(
    pattern: Pattern,
    steps: &mut Vec<Step>,
    uniform_steps: &[Step],
    constant: &[Option<f64>],
    output: u32,
) -> Vec<u32> {
    let fuse_at = match pattern {
        Pattern::NormalSquare => normal_square,
        Pattern::PoissonTerm => poisson_term,
    };
    let scan = Scan::new(steps, uniform_steps, constant.len(), output);
    let mut gone = vec![false; steps.len()];
    let mut fused = Vec::new();
    for i in 0..steps.len() {
        let Some((op, swallowed)) = fuse_at(steps, &scan, constant, i) else {
            continue;
        };
        steps[i].op = op;
        for &k in &swallowed {
            gone[scan.at(k)] = true;
        }
        fused.extend(swallowed);
    }
    remove(steps, &gone);
    fused
}

/// Fuses `c * ((x - m) / s)^2` (four lane steps `sub`, `div`, `powi 2`, `mul` by a constant,
/// either side) into one [`Op::NormalSquare`], and `c * (x - m)^2` (the same without the
/// division) into one [`Op::SquareDiff`], where the intermediate results have no other
/// reader and nothing but constants lies between the first and the last of the steps in
/// slot order (so no other step's contribution to `x`, `m` or `s` falls between theirs,
/// and the reverse sweep adds into every adjoint in the same order as unfused). Step `i`
/// is the product; gives the fused instruction and the slots it swallows.
fn normal_square(steps: &[Step], scan: &Scan, constant: &[Option<f64>], i: usize) -> Option<Fused> {
    let (a, b) = binary_operands(steps[i].op, Binary::Mul)?;
    let (c, p, _) = constant_operand(constant, a, b)?;
    if !scan.single(p) {
        return None;
    }
    let Op::Unary {
        op: Unary::Powi(2),
        a: u,
    } = steps[scan.at(p)].op
    else {
        return None;
    };
    let out = steps[i].out;
    // `c * (x / s)^2` or `c * x^2`: a square whose operand is no subtraction read by it
    // alone (a normal density of location 0).
    let op_of = |slot: u32| scan.single(slot).then(|| steps[scan.at(slot)].op);
    let sub_of = |slot: u32| match op_of(slot) {
        Some(Op::Binary {
            op: Binary::Sub,
            a,
            b,
        }) => Some((a, b)),
        _ => None,
    };
    let (d, s) = match op_of(u) {
        Some(Op::Binary {
            op: Binary::Div,
            a,
            b,
        }) => (a, Some(b)),
        _ => (u, None),
    };
    if sub_of(d).is_none() {
        let (x, s, first) = match s {
            Some(s) if d != s => (d, s, u),
            Some(_) => return None,
            None => (u, NONE_SLOT, p),
        };
        if !only_constants_between(constant, first, out, &[u, p]) {
            return None;
        }
        let gone_slots = if s == NONE_SLOT { vec![p] } else { vec![u, p] };
        return Some((Op::Square { x, s, c }, gone_slots));
    }
    let (x, m) = sub_of(d)?;
    if x == m || !only_constants_between(constant, d, out, &[u, p]) {
        return None;
    }
    let Some(s) = s else {
        return Some((Op::SquareDiff { x, m, c }, vec![u, p]));
    };
    if s == x || s == m || d == s {
        return None;
    }
    Some((Op::NormalSquare { x, m, s, c }, vec![d, u, p]))
}

/// Fuses `c * ln(r) - r` (three lane steps `log`, `mul` by a constant, either side, and
/// `sub`) into one [`Op::PoissonTerm`] where the two intermediate results have no other
/// reader and nothing but constants lies between the first and the last of the three in
/// slot order (so no other step's contribution to `r` falls between the subtraction's and
/// the logarithm's in the reverse sweep). Step `i` is the subtraction; gives the fused
/// instruction and the slots it swallows.
fn poisson_term(steps: &[Step], scan: &Scan, constant: &[Option<f64>], i: usize) -> Option<Fused> {
    let (p, r) = binary_operands(steps[i].op, Binary::Sub)?;
    if !scan.single(p) {
        return None;
    }
    let (a, b) = binary_operands(steps[scan.at(p)].op, Binary::Mul)?;
    let (c, l, c_left) = constant_operand(constant, a, b)?;
    if !scan.single(l) {
        return None;
    }
    let Op::Unary { op: Unary::Log, a } = steps[scan.at(l)].op else {
        return None;
    };
    if a != r || !only_constants_between(constant, l, steps[i].out, &[p]) {
        return None;
    }
    let op = Op::PoissonTerm {
        r,
        c,
        c_left,
        stand_in: false,
    };
    Some((op, vec![l, p]))
}

/// The operands of `op` if it is the binary `want`.
fn binary_operands(op: Op, want: Binary) -> Option<(u32, u32)> {
    match op {
        Op::Binary { op, a, b } if op == want => Some((a, b)),
        _ => None,
    }
}

/// Of a product's operands `a` and `b`, the constant one (`c`) and the other: `(c, other,
/// whether c is the left operand)`, or `None` unless exactly one is a constant.
fn constant_operand(constant: &[Option<f64>], a: u32, b: u32) -> Option<(f64, u32, bool)> {
    match (constant[a as usize], constant[b as usize]) {
        (Some(c), None) => Some((c, b, true)),
        (None, Some(c)) => Some((c, a, false)),
        _ => None,
    }
}

/// Whether every slot strictly between `from` and `to` holds a constant or is one of the
/// steps a fusion swallows (`fused`): then no other step's contribution to an operand falls
/// between the fused steps' in the reverse sweep.
fn only_constants_between(constant: &[Option<f64>], from: u32, to: u32, fused: &[u32]) -> bool {
    (from + 1..to).all(|k| fused.contains(&k) || constant[k as usize].is_some())
}

/// Fuses chains of additions `((base + t1) + t2) + ... + tn` (either operand order), where
/// every partial sum is read only by the next addition, into one [`Op::SumChain`] whose terms
/// go to `chains` as `(term, whether the partial sum is the right operand)`. A term (or the
/// base) read by some other step between its addition and the end of the chain would get
/// that step's contribution in a different order once fused, so the chain starts after the
/// last such term. A chain is cut into segments of at most [`CHAIN_SEGMENT`] additions.
/// Returns the slots fused away (the partial sums inside the segments).
///
/// O(n log n) in the number of slots: each addition is visited once as a link of one chain,
/// and whether a term has a reader outside the chain between two slots is a count (two
/// binary searches in its sorted readers, less the chain's own readers of it in between,
/// kept as running counts), not a walk over its readers: a node read by a million additions
/// costs no more than one read once.
pub(super) fn fuse_sum_chains(
    steps: &mut Vec<Step>,
    uniform_steps: &[Step],
    n: usize,
    output: u32,
    chains: &mut Vec<(u32, bool)>,
) -> Vec<u32> {
    let scan = Scan::new(steps, uniform_steps, n, output);
    // The partial sum an addition extends: an operand that is itself a lane addition read
    // by nothing else (the later one if both are).
    let acc_of = |st: &Step| -> Option<(u32, u32, bool)> {
        let (a, b) = binary_operands(st.op, Binary::Add)?;
        if a == b {
            return None;
        }
        let extends = |o: u32| {
            scan.single(o)
                && matches!(
                    steps[scan.at(o)].op,
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
    // Per slot, how many reads of it the chain's links strictly between the link being
    // looked at and the chain's end make (zero again after each chain).
    let mut chain_reads = vec![0u32; n];
    let mut links = Vec::new();
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
        links.clear();
        links.push(end);
        let mut cur = *st;
        while let Some((acc, _, _)) = acc_of(&cur) {
            links.push(acc);
            cur = steps[scan.at(acc)];
        }
        links.reverse();
        let last = links.len() - 1;
        let count_reads = |k: usize, chain_reads: &mut Vec<u32>, by: i64| {
            let (ops, m) = operands(&steps[scan.at(links[k])].op);
            for &o in &ops[..m] {
                chain_reads[o as usize] = (chain_reads[o as usize] as i64 + by) as u32;
            }
        };
        // A reader of `slot` strictly between link `k` and the end other than the links.
        let read_between = |slot: u32, k: usize, chain_reads: &[u32]| {
            scan.readers.between(slot, links[k], end) > chain_reads[slot as usize] as usize
        };
        // The chain starts after the last addition whose term is read in between.
        let mut start = 0;
        let mut counted = last; // links[counted..last] are in `chain_reads`
        for k in (1..links.len()).rev() {
            while counted > k + 1 {
                counted -= 1;
                count_reads(counted, &mut chain_reads, 1);
            }
            let (_, term, _) = acc_of(&steps[scan.at(links[k])]).expect("a link");
            if read_between(term, k, &chain_reads) {
                start = k + 1;
                break;
            }
        }
        let (a, b) = match steps[scan.at(links[0])].op {
            Op::Binary { a, b, .. } => (a, b),
            _ => (NONE_SLOT, NONE_SLOT),
        };
        if start == 0 {
            while counted > 1 {
                counted -= 1;
                count_reads(counted, &mut chain_reads, 1);
            }
            if a == NONE_SLOT
                || read_between(a, 0, &chain_reads)
                || read_between(b, 0, &chain_reads)
            {
                start = 1;
            }
        }
        for k in counted..last {
            count_reads(k, &mut chain_reads, -1);
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
            let (_, term, right) = acc_of(&steps[scan.at(l)]).expect("a link");
            chains.push((term, right));
        }
        // In segments of at most `CHAIN_SEGMENT` additions, each ending at its last link
        // and continuing from the one before: the same additions in the same order.
        let mut base = base;
        for (k, seg) in chain.chunks(CHAIN_SEGMENT).enumerate() {
            let end = seg[seg.len() - 1];
            let lo = from + (k * CHAIN_SEGMENT) as u32;
            if seg.len() > 1 {
                for &l in &seg[..seg.len() - 1] {
                    gone[scan.at(l)] = true;
                    fused.push(l);
                }
                let to = lo + seg.len() as u32;
                replaced.push((scan.at(end), Op::SumChain { base, from: lo, to }));
            }
            // A last segment of one addition stays that addition (of the previous end).
            base = end;
        }
    }
    for (i, op) in replaced {
        steps[i].op = op;
    }
    remove(steps, &gone);
    fused
}
