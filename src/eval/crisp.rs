//! The crisp forward-only plan: the lane steps a sweep runs when it wants crisp values and
//! no gradient (the precise final measurement, the trajectory's crisp values, Score). Built
//! at compile time beside the compact layout, with rewrites that only hold when nothing
//! is differentiated and no if-statement is forced:
//!
//! - A crisp if-statement is a select. Where both branches are constants, an operation of
//!   the select with constants (or with another select of the same guard) is the select of
//!   the operation's results, computed once here with the scalar rules the lane loops use
//!   (`crate::ir::unary_value`, `binary_value`): `ln(if g < 0 { c1 } else { c2 })` becomes a
//!   select between `ln c1` and `ln c2`, which is what every lane computed anyway.
//! - A guard read only as guards is computed inside each select that reads it where it is a
//!   subtraction, an addition, a latent (loaded there, as is a latent read only as the first
//!   operand of such a subtraction) or a sum chain only that select reads, instead of being
//!   written to the workspace and read back.
//! - A then-branch that is a negation only its select reads (`abs`) is negated inside the
//!   select.
//! - A square term of a density read only by a subtraction of a uniform value (the density's
//!   constant, kept where the density is in a branch) is computed by that subtraction.
//! - What nothing reads any more is dropped, and no value is kept for a reverse sweep, so
//!   the lane values share places by one linear scan (`layout::scan_places`).
//!
//! Every lane computes the same operations on the same values as under the compact layout, so
//! the crisp values keep their bits.
//!
//! Not here: how a sweep picks this plan (`evaluate.rs`) and runs it (`sweep.rs`).

use std::collections::HashMap;

use crate::ir::{Binary, Unary, binary_value, unary_value};

use super::instr::{Op, Step, each_read};
use super::layout::{self, Layout, LayoutKind};

/// The crisp forward-only plan of a tape.
#[derive(Clone, Debug, Default)]
pub(super) struct CrispPlan {
    /// Its lane steps and places. The pinned places (constants, uniform values, the output)
    /// are the compact layout's.
    pub layout: Layout,
    /// The constants its selects choose between that the tape had not, with their places:
    /// from the compact layout's last place on, so no other sweep overwrites them.
    pub consts: Vec<(u32, f64)>,
}

/// What the plan is built from: the tape's lane steps and sum-chain terms in slot numbering
/// (after fusion, before placing), the constant of each slot, the places of the pinned slots
/// (`u32::MAX` for the others), which slots are uniform, the output slot and the compact
/// layout.
pub(super) struct Source<'a> {
    pub steps: &'a [Step],
    pub chains: &'a [(u32, bool)],
    pub constant: &'a [Option<f64>],
    pub pinned_place: &'a [u32],
    /// Per slot, whether it is a constant or the same in every lane.
    pub uniform: &'a [bool],
    pub output: u32,
    pub compact: &'a Layout,
}

/// The constants of the plan's slots: the tape's, and those folding adds.
struct Consts {
    of: Vec<Option<f64>>,
    /// Slots of constants by their bits, so that a folded value the tape has already takes
    /// its place.
    by_bits: HashMap<u64, u32>,
    added: Vec<u32>,
}

impl Consts {
    fn get(&self, s: u32) -> Option<f64> {
        self.of[s as usize]
    }

    /// The slot holding `c`, a new one if no slot does.
    fn slot(&mut self, c: f64) -> u32 {
        let of = &mut self.of;
        let added = &mut self.added;
        *self.by_bits.entry(c.to_bits()).or_insert_with(|| {
            of.push(Some(c));
            added.push(of.len() as u32 - 1);
            of.len() as u32 - 1
        })
    }
}

/// Builds the crisp forward-only plan (see the module doc).
pub(super) fn build(src: &Source) -> CrispPlan {
    let mut consts = Consts {
        of: src.constant.to_vec(),
        by_bits: HashMap::new(),
        added: Vec::new(),
    };
    for (s, c) in src.constant.iter().enumerate() {
        if let Some(c) = c {
            consts.by_bits.entry(c.to_bits()).or_insert(s as u32);
        }
    }
    let mut steps = src.steps.to_vec();
    // Per slot, `(guard, then, else)` where it is a select between two constants.
    let mut choice: Vec<Option<(u32, f64, f64)>> = vec![None; src.constant.len()];
    for st in &mut steps {
        let c = |s: u32| consts.get(s);
        let ch = |s: u32| choice[s as usize];
        let folded = match st.op {
            Op::If { g, t, e, .. } => {
                st.op = Op::Select { g, t, e };
                if let (Some(tv), Some(ev)) = (c(t), c(e)) {
                    choice[st.out as usize] = Some((g, tv, ev));
                }
                None
            }
            Op::Unary { op, a } => {
                ch(a).map(|(g, t, e)| (g, unary_value(op, t), unary_value(op, e)))
            }
            Op::Binary { op, a, b } => match (ch(a), c(a), ch(b), c(b)) {
                (Some((g, t, e)), _, _, Some(k)) => {
                    Some((g, binary_value(op, t, k), binary_value(op, e, k)))
                }
                (_, Some(k), Some((g, t, e)), _) => {
                    Some((g, binary_value(op, k, t), binary_value(op, k, e)))
                }
                (Some((g, ta, ea)), _, Some((h, tb, eb)), _) if g == h => {
                    Some((g, binary_value(op, ta, tb), binary_value(op, ea, eb)))
                }
                _ => None,
            },
            _ => None,
        };
        if let Some((g, tv, ev)) = folded {
            st.op = Op::Select {
                g,
                t: consts.slot(tv),
                e: consts.slot(ev),
            };
            choice[st.out as usize] = Some((g, tv, ev));
        }
    }
    let n = consts.of.len();
    let steps = live_steps(steps, src.chains, src.output, n);
    let steps = fuse_guards(steps, src.chains, src.output, n);
    let steps = live_steps(steps, src.chains, src.output, n);
    let steps = fuse_latent_operands(steps, src.chains, src.output, n);
    let steps = fuse_negated_branches(steps, src.chains, src.output, n);
    let mut uniform = src.uniform.to_vec();
    uniform.resize(n, true);
    let steps = fuse_constant_terms(steps, src.chains, src.output, &uniform);
    let steps = live_steps(steps, src.chains, src.output, n);
    place(src, steps, &consts.of, &consts.added)
}

/// `steps` without those whose value nothing reads (the output is read).
fn live_steps(steps: Vec<Step>, chains: &[(u32, bool)], output: u32, slots: usize) -> Vec<Step> {
    let mut live = vec![false; slots];
    live[output as usize] = true;
    let mut keep = vec![false; steps.len()];
    for (i, st) in steps.iter().enumerate().rev() {
        if live[st.out as usize] {
            keep[i] = true;
            each_read(st, chains, |o| live[o as usize] = true);
        }
    }
    steps
        .into_iter()
        .zip(keep)
        .filter_map(|(st, k)| k.then_some(st))
        .collect()
}

/// `steps` with every select whose guard is read only as a guard of selects (not as a
/// branch, an operand, a sum-chain term or the output) computing the guard itself where it
/// is a subtraction ([`Op::SelectLess`]), an addition ([`Op::SelectSum`]), a latent
/// ([`Op::SelectLatent`]) or a sum chain only it reads ([`Op::SelectChain`]). What computed
/// the guard is then read by nothing.
fn fuse_guards(
    mut steps: Vec<Step>,
    chains: &[(u32, bool)],
    output: u32,
    slots: usize,
) -> Vec<Step> {
    let mut guard_reads = vec![0u32; slots];
    let other_read = read_besides(&steps, chains, output, slots, |st, read| {
        let Op::Select { g, t, e } = st.op else {
            return false;
        };
        guard_reads[g as usize] += 1;
        read[t as usize] = true;
        read[e as usize] = true;
        true
    });
    let mut writer: Vec<Option<Op>> = vec![None; slots];
    for st in &steps {
        if !other_read[st.out as usize] {
            writer[st.out as usize] = Some(st.op);
        }
    }
    for st in &mut steps {
        let Op::Select { g, t, e } = st.op else {
            continue;
        };
        st.op = match writer[g as usize] {
            Some(Op::Binary {
                op: Binary::Sub,
                a,
                b,
            }) => Op::SelectLess { a, b, t, e },
            Some(Op::Binary {
                op: Binary::Add,
                a,
                b,
            }) => Op::SelectSum { a, b, t, e },
            Some(Op::Latent { i }) => Op::SelectLatent { i, t, e },
            Some(Op::SumChain { base, from, to }) if guard_reads[g as usize] == 1 => {
                Op::SelectChain {
                    base,
                    from,
                    to,
                    t,
                    e,
                }
            }
            _ => continue,
        };
    }
    steps
}

/// `steps` (without dead steps) with every latent read only as the first operand of
/// [`Op::SelectLess`] loaded by them ([`Op::SelectLessLatent`]); the latent's step is then
/// read by nothing.
fn fuse_latent_operands(
    mut steps: Vec<Step>,
    chains: &[(u32, bool)],
    output: u32,
    slots: usize,
) -> Vec<Step> {
    let other_read = read_besides(&steps, chains, output, slots, |st, read| {
        let Op::SelectLess { b, t, e, .. } = st.op else {
            return false;
        };
        [b, t, e].iter().for_each(|&o| read[o as usize] = true);
        true
    });
    let mut latent = vec![None; slots];
    for st in &steps {
        if let Op::Latent { i } = st.op
            && !other_read[st.out as usize]
        {
            latent[st.out as usize] = Some(i);
        }
    }
    for st in &mut steps {
        if let Op::SelectLess { a, b, t, e } = st.op
            && let Some(i) = latent[a as usize]
        {
            st.op = Op::SelectLessLatent { i, b, t, e };
        }
    }
    steps
}

/// Per slot, whether the output is it or a step reads it, counting for the steps `own`
/// accepts (it returns true) only the reads it marks itself: a fusion pass's question of
/// which values something other than the reads it fuses needs.
fn read_besides(
    steps: &[Step],
    chains: &[(u32, bool)],
    output: u32,
    slots: usize,
    mut own: impl FnMut(&Step, &mut [bool]) -> bool,
) -> Vec<bool> {
    let mut read = vec![false; slots];
    read[output as usize] = true;
    for st in steps {
        if !own(st, &mut read) {
            each_read(st, chains, |o| read[o as usize] = true);
        }
    }
    read
}

/// Places the plan's slots: the constants, uniform values and the output where the compact
/// layout has them, the added constants from the compact layout's last place on (beyond
/// every lane place of either layout), and the lane values by one linear scan over the other
/// places (the compact layout's pinned places of values only its reverse sweeps read are
/// free here).
fn place(src: &Source, mut steps: Vec<Step>, constant: &[Option<f64>], added: &[u32]) -> CrispPlan {
    let n = constant.len();
    let first = src.compact.pinned as u32;
    let mut pinned = vec![false; n];
    let mut pinned_place = vec![u32::MAX; n];
    let mut taken = vec![false; first as usize];
    for (s, &p) in src.pinned_place.iter().enumerate() {
        if p != u32::MAX && (src.uniform[s] || s as u32 == src.output) {
            pinned[s] = true;
            pinned_place[s] = p;
            taken[p as usize] = true;
        }
    }
    for &s in added {
        pinned[s as usize] = true;
    }
    let free: Vec<u32> = (0..first).rev().filter(|&p| !taken[p as usize]).collect();
    let (mut place, lane_places) =
        layout::scan_places(&steps, src.chains, &pinned, &pinned_place, first, free);
    let base = lane_places.max(src.compact.values) as u32;
    let mut consts = Vec::with_capacity(added.len());
    for (k, &s) in added.iter().enumerate() {
        place[s as usize] = base + k as u32;
        consts.push((
            base + k as u32,
            constant[s as usize].expect("an added constant"),
        ));
    }
    steps
        .iter_mut()
        .for_each(|st| layout::rename(st, |s| place[s as usize]));
    let chains = src
        .chains
        .iter()
        .map(|&(t, r)| (place[t as usize], r))
        .collect();
    CrispPlan {
        layout: Layout {
            steps,
            chains,
            values: base as usize + added.len(),
            pinned: src.compact.pinned,
            constants: Vec::new(),
            kind: LayoutKind::ForwardOnly,
        },
        consts,
    }
}

/// `steps` with every select whose then-branch is a negation read only there negating it
/// itself ([`Op::SelectNeg`]); the negation is then read by nothing.
fn fuse_negated_branches(
    mut steps: Vec<Step>,
    chains: &[(u32, bool)],
    output: u32,
    slots: usize,
) -> Vec<Step> {
    let mut reads = vec![0u32; slots];
    reads[output as usize] += 1;
    for st in &steps {
        each_read(st, chains, |o| reads[o as usize] += 1);
    }
    let mut negated = vec![None; slots];
    for st in &steps {
        if let Op::Unary { op: Unary::Neg, a } = st.op
            && reads[st.out as usize] == 1
        {
            negated[st.out as usize] = Some(a);
        }
    }
    for st in &mut steps {
        if let Op::Select { g, t, e } = st.op
            && let Some(a) = negated[t as usize]
        {
            st.op = Op::SelectNeg { g, a, e };
        }
    }
    steps
}

/// `steps` with every subtraction of a uniform value from a square term
/// ([`Op::SquareDiff`], or [`Op::Square`] without a scale) read only there computing the
/// term itself ([`Op::SquareDiffSub`], [`Op::SquareSub`]); the term's step is then read by
/// nothing. `uniform` says which slots are the same in every lane.
fn fuse_constant_terms(
    mut steps: Vec<Step>,
    chains: &[(u32, bool)],
    output: u32,
    uniform: &[bool],
) -> Vec<Step> {
    let slots = uniform.len();
    let mut reads = vec![0u32; slots];
    reads[output as usize] += 1;
    for st in &steps {
        each_read(st, chains, |o| reads[o as usize] += 1);
    }
    let mut term = vec![None; slots];
    for st in &steps {
        if reads[st.out as usize] == 1
            && matches!(
                st.op,
                Op::SquareDiff { .. }
                    | Op::Square {
                        s: super::instr::NONE,
                        ..
                    }
            )
        {
            term[st.out as usize] = Some(st.op);
        }
    }
    for st in &mut steps {
        let Op::Binary {
            op: Binary::Sub,
            a,
            b: k,
        } = st.op
        else {
            continue;
        };
        if !uniform[k as usize] {
            continue;
        }
        st.op = match term[a as usize] {
            Some(Op::SquareDiff { x, m, c }) => Op::SquareDiffSub { x, m, k, c },
            Some(Op::Square { x, c, .. }) => Op::SquareSub { x, k, c },
            _ => continue,
        };
    }
    steps
}
