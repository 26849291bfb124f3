//! Runs of a repeated block of steps: the steps a loop in the model unrolled into, which the
//! forward code runs as one machine-code loop instead of a copy per iteration.
//!
//! Why: a large model's straight-line code outgrows the caches. The 10,000-student survey's
//! forward code took 551 bytes a student, 5.5 MB in all, streamed from a shared L3 at every
//! chunk; its per-sample cost grew faster than its size. Its steps are the same few per
//! student, each index either fixed (a constant's place, the latent every student reads) or
//! moved by the same amount from one student to the next (temporaries, kept values, the
//! student's latents, the weights' places). Such a block runs as a loop whose operands are
//! addressed through registers that advance per iteration: the same operations on the same
//! places in the same order, so the same bits.
//!
//! A run qualifies when every step of its block has, in each iteration, the same kind,
//! operation, flags and constants, and every index is affine in the iteration, and when the
//! register cache would see the same pattern in every iteration: two indices of the same
//! kind that are equal in the first iteration are equal in all, and two that differ in the
//! first never meet (the emitter looks values up by index, and empties its cache at the
//! start of each iteration).

use std::mem::Discriminant;

use crate::ir::{Binary, Unary};

use super::super::instr::{NONE, Op, RevStep, Step};

/// What an index counts: value places, weight places, adjoint places (all 128-byte slots),
/// parameters, or latents (their noise, location and scale).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Unit {
    Slot,
    Weight,
    Adjoint,
    Param,
    Latent,
}

/// The most indices a step has: a reverse step's value, its operands' values (up to four),
/// its weights' place, its own adjoint and five targets.
const MAX_FIELDS: usize = 12;

/// Indices of one step, in a fixed order per kind of step (the output first).
#[derive(Clone, Copy, Debug)]
pub(super) struct Fields {
    at: [(Unit, u32); MAX_FIELDS],
    n: usize,
}

impl Fields {
    fn new(out: u32) -> Self {
        Fields {
            at: [(Unit::Slot, out); MAX_FIELDS],
            n: 1,
        }
    }

    fn push(&mut self, unit: Unit, value: u32) {
        self.at[self.n] = (unit, value);
        self.n += 1;
    }

    fn slots(&mut self, slots: &[u32]) {
        for &s in slots {
            self.push(Unit::Slot, s);
        }
    }

    fn list(&self) -> &[(Unit, u32)] {
        &self.at[..self.n]
    }
}

/// What must be equal in every iteration: the kind of step, its operation, flags, constant
/// (as bits), and which of its indices are the "none" marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Shape {
    kind: Discriminant<Op>,
    unary: Option<Unary>,
    binary: Option<Binary>,
    flags: [bool; 3],
    constant: u64,
    /// A caller's decision on the step, and for a reverse step its flags (see [`Item`]).
    decision: u64,
    /// Bit `f`: index `f` is [`NONE`].
    none: u16,
}

/// A step as the search sees it: its shape and its indices.
pub(super) type Item = (Shape, Fields);

/// Forward step `step` as an [`Item`], `decision` being a caller's choice on it that must be
/// the same in every iteration (such as whether an if-statement's branches are an
/// indicator's constants); `None` for a step a loop may not contain: a sum chain (its terms
/// sit in a side table).
pub(super) fn forward_item(step: &Step, decision: u8) -> Option<Item> {
    let (mut shape, f) = split(step, true)?;
    shape.decision = u64::from(decision);
    mark_none(&mut shape, &f);
    Some((shape, f))
}

/// Reverse step `rs` as an [`Item`] (see [`forward_item`]): besides the forward step's
/// indices (but the parameter's and latent's, which a reverse step does not read), its own
/// adjoint and its targets, and in the shape which targets take their first contribution,
/// the folded guard's operation and whether the step is uniform.
pub(super) fn reverse_item(rs: &RevStep, decision: u8) -> Option<Item> {
    let (mut shape, mut f) = split(&rs.step, false)?;
    f.push(Unit::Adjoint, rs.ad);
    let mut flags = u64::from(decision);
    for (b, t) in rs.to.iter().enumerate() {
        f.push(Unit::Adjoint, t.adj);
        flags |= u64::from(t.first) << (8 + b);
    }
    flags |= u64::from(rs.uniform) << 16;
    flags |= match rs.folded_guard {
        None => 0,
        Some(op) => (op as u64 + 1) << 24,
    };
    shape.decision = flags;
    mark_none(&mut shape, &f);
    Some((shape, f))
}

/// Marks in `shape` which indices are the "none" marker.
fn mark_none(shape: &mut Shape, f: &Fields) {
    for (b, &(_, v)) in f.list().iter().enumerate() {
        if v == NONE {
            shape.none |= 1 << b;
        }
    }
}

/// The shape and indices of `step`, the parameter's or latent's only `with_inputs`; `None`
/// for a sum chain.
fn split(step: &Step, with_inputs: bool) -> Option<(Shape, Fields)> {
    let mut f = Fields::new(step.out);
    let mut shape = Shape {
        kind: std::mem::discriminant(&step.op),
        unary: None,
        binary: None,
        flags: [false; 3],
        constant: 0,
        decision: 0,
        none: 0,
    };
    match step.op {
        Op::Param { k } if with_inputs => f.push(Unit::Param, k),
        Op::Latent { i } if with_inputs => f.push(Unit::Latent, i),
        Op::Param { .. } | Op::Latent { .. } => {}
        Op::Unary { op, a } | Op::StandIn { op, a } => {
            shape.unary = Some(op);
            f.slots(&[a]);
        }
        Op::Binary { op, a, b } => {
            shape.binary = Some(op);
            f.slots(&[a, b]);
        }
        Op::NormalSquare { x, m, s, c } => {
            shape.constant = c.to_bits();
            f.slots(&[x, m, s]);
        }
        Op::SquareDiff { x, m, c } => {
            shape.constant = c.to_bits();
            f.slots(&[x, m]);
        }
        Op::Square { x, s, c } => {
            shape.constant = c.to_bits();
            f.slots(&[x, s]);
        }
        Op::PoissonTerm {
            r,
            c,
            c_left,
            stand_in,
        } => {
            shape.constant = c.to_bits();
            shape.flags = [c_left, stand_in, false];
            f.slots(&[r]);
        }
        Op::SumChain { .. } | Op::SelectChain { .. } => return None,
        Op::If {
            g,
            t,
            e,
            // Read only by forced sweeps, which are never compiled.
            index: _,
            cache,
            product,
            reuse,
        } => {
            shape.flags = [product, reuse, false];
            f.slots(&[g, t, e]);
            f.push(Unit::Weight, cache);
        }
        Op::Select { g, t, e } => f.slots(&[g, t, e]),
        Op::SelectLess { a, b, t, e } | Op::SelectSum { a, b, t, e } => f.slots(&[a, b, t, e]),
        Op::SelectLatent { i, t, e } => {
            f.push(Unit::Latent, i);
            f.slots(&[t, e]);
        }
        Op::SelectLessLatent { i, b, t, e } => {
            f.push(Unit::Latent, i);
            f.slots(&[b, t, e]);
        }
        Op::SquareDiffSub { x, m, k, c } => {
            shape.constant = c.to_bits();
            f.slots(&[x, m, k]);
        }
        Op::SquareSub { x, k, c } => {
            shape.constant = c.to_bits();
            f.slots(&[x, k]);
        }
        Op::SelectNeg { g, a, e } => f.slots(&[g, a, e]),
    }
    Some((shape, f))
}

/// A block of `period` steps from `start` on, run `reps` times: iteration `r`'s step `j` is
/// step `start + r * period + j`, whose indices are those of step `start + j` plus `r` times
/// their shifts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Repeat {
    pub start: usize,
    pub period: usize,
    pub reps: usize,
    /// Per kind of index, each index of the first iteration that moves and how much it moves
    /// per iteration (an index of the first iteration moves by one amount wherever it is
    /// read: see the module's doc). Indices not listed stay put.
    pub shifts: Vec<(Unit, u32, i64)>,
}

impl Repeat {
    /// The steps the loop covers.
    pub fn len(&self) -> usize {
        self.period * self.reps
    }

    /// How much index `value` of kind `unit` (as the first iteration has it) moves per
    /// iteration.
    #[cfg(test)]
    pub fn shift(&self, unit: Unit, value: u32) -> i64 {
        self.shifts
            .iter()
            .find(|&&(u, v, _)| u == unit && v == value)
            .map_or(0, |&(.., d)| d)
    }
}

/// Blocks of more steps than this are not looked for: a model's loop body is a few steps
/// after fusion (the survey's is 10), and the search costs `MAX_PERIOD` comparisons a step
/// where nothing repeats.
const MAX_PERIOD: usize = 48;

/// A run must repeat its block at least this often, and cover this many steps: a loop's
/// set-up and back edge cost a few instructions, and each iteration starts with the register
/// cache empty.
const MIN_REPS: usize = 4;
const MIN_STEPS: usize = 24;

/// The runs of repeated blocks in `items` (the steps, `None` for one a loop may not contain),
/// in order and disjoint, found greedily from the first step on (at each step, the run
/// covering most steps).
pub(super) fn find(items: &[Option<Item>]) -> Vec<Repeat> {
    let mut found = Vec::new();
    let mut k = 0;
    while k < items.len() {
        let mut best: Option<Repeat> = None;
        for period in 1..=MAX_PERIOD.min((items.len() - k) / MIN_REPS) {
            // A multiple of a period that repeats covers no more than it does.
            if best.as_ref().is_some_and(|b| period % b.period == 0) {
                continue;
            }
            if let Some(run) = run_at(items, k, period)
                && best.as_ref().is_none_or(|b| run.len() > b.len())
            {
                best = Some(run);
            }
        }
        match best {
            Some(run) => {
                k += run.len();
                found.push(run);
            }
            None => k += 1,
        }
    }
    found
}

/// Whether the block of `period` steps at `start` repeats at least [`MIN_REPS`] times with
/// the same shapes and every index on a line: a test that allocates nothing, so that where
/// every step has one shape (a long product of random operands: every candidate passes the
/// shape test) the search stays a few comparisons a candidate. Such a program of 118,000
/// steps compiled its forward code in 4.8 s when candidates allocated first, and takes
/// 0.16 s now (0.085 s with no search at all).
fn on_lines(items: &[Option<Item>], start: usize, period: usize) -> bool {
    if start + MIN_REPS * period > items.len() {
        return false;
    }
    (start..start + period).all(|k| {
        let Some((s0, f0)) = &items[k] else {
            return false;
        };
        let Some((s1, f1)) = &items[k + period] else {
            return false;
        };
        s1 == s0
            && (2..MIN_REPS).all(|r| {
                let Some((s, f)) = &items[k + r * period] else {
                    return false;
                };
                s == s0
                    && f0.list().iter().zip(f1.list()).zip(f.list()).all(
                        |((&(_, x0), &(_, x1)), &(_, x))| {
                            let d = i64::from(x1) - i64::from(x0);
                            i64::from(x) == i64::from(x0) + r as i64 * d
                        },
                    )
            })
    })
}

/// The longest run of the block of `period` steps at `start` (at least [`MIN_REPS`]
/// iterations), or `None`.
fn run_at(items: &[Option<Item>], start: usize, period: usize) -> Option<Repeat> {
    let body = &items[start..start + period];
    let next = &items[start + period..start + 2 * period];
    // Most candidates fail here, at their first step: before anything is allocated.
    if !on_lines(items, start, period) {
        return None;
    }
    // Each index's shift, from the first iteration to the second.
    let mut shifts: Vec<Vec<i64>> = Vec::with_capacity(period);
    for (a, b) in body.iter().zip(next) {
        let (Some((sa, fa)), Some((sb, fb))) = (a, b) else {
            return None;
        };
        if sa != sb {
            return None;
        }
        let d: Vec<i64> = fa
            .list()
            .iter()
            .zip(fb.list())
            .map(|(&(_, x), &(_, y))| i64::from(y) - i64::from(x))
            .collect();
        shifts.push(d);
    }
    // Iterations while every step keeps its shape and every index its line.
    let mut reps = 2;
    'iterations: while start + (reps + 1) * period <= items.len() {
        let at = start + reps * period;
        for (j, (first, d)) in body.iter().zip(&shifts).enumerate() {
            let (Some((s0, f0)), Some((s, f))) = (first, &items[at + j]) else {
                break 'iterations;
            };
            let line = f0
                .list()
                .iter()
                .zip(f.list())
                .zip(d)
                .all(|((&(_, x), &(_, y)), &d)| i64::from(y) == i64::from(x) + reps as i64 * d);
            if s0 != s || !line {
                break 'iterations;
            }
        }
        reps += 1;
    }
    if reps < MIN_REPS || reps * period < MIN_STEPS {
        return None;
    }
    // Indices that never meet or always agree: cut the run before the first meeting.
    let mut fields: Vec<(Unit, u32, i64)> = Vec::new();
    for ((_, f), d) in body.iter().flatten().zip(&shifts) {
        for (&(unit, x), &d) in f.list().iter().zip(d) {
            // The "none" marker never moves (the shape keeps where it is).
            if x == NONE && d != 0 {
                return None;
            }
            fields.push((unit, x, d));
        }
    }
    for (a, &(ua, xa, da)) in fields.iter().enumerate() {
        for &(ub, xb, db) in &fields[a + 1..] {
            if ua != ub {
                continue;
            }
            if xa == xb {
                if da != db {
                    return None;
                }
            } else if da != db {
                // xa + r da = xb + r db at r = (xb - xa) / (da - db).
                let (gap, rate) = (i64::from(xb) - i64::from(xa), da - db);
                if gap % rate == 0 && gap / rate > 0 {
                    reps = reps.min((gap / rate) as usize);
                }
            }
        }
    }
    if reps < MIN_REPS || reps * period < MIN_STEPS {
        return None;
    }
    // No index may reach the "none" marker or leave `u32`.
    for &(_, x, d) in &fields {
        let last = i64::from(x) + (reps as i64 - 1) * d;
        if x != NONE && !(0..i64::from(NONE)).contains(&last) {
            return None;
        }
    }
    let mut moving: Vec<(Unit, u32, i64)> = fields.into_iter().filter(|f| f.2 != 0).collect();
    moving.sort_unstable_by_key(|&(u, x, _)| (u as u8, x));
    moving.dedup();
    Some(Repeat {
        start,
        period,
        reps,
        shifts: moving,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn latent(out: u32, i: u32) -> Step {
        Step {
            out,
            op: Op::Latent { i },
        }
    }

    fn mul(out: u32, a: u32, b: u32) -> Step {
        Step {
            out,
            op: Op::Binary {
                op: Binary::Mul,
                a,
                b,
            },
        }
    }

    /// `reps` iterations of: load latent `i0 + r`, into `out0 + 2r`; times the fixed slot 1
    /// into `out0 + 2r + 1`.
    fn block(out0: u32, i0: u32, reps: u32, out_step: i64) -> Vec<Step> {
        (0..reps)
            .flat_map(|r| {
                let o = (i64::from(out0) + out_step * i64::from(r)) as u32;
                [latent(o, i0 + r), mul(o + 1, o, 1)]
            })
            .collect()
    }

    /// The runs of `steps` where `may_loop`, with `decision`.
    fn find(
        steps: &[Step],
        may_loop: impl Fn(&Step) -> bool,
        decision: impl Fn(&Step) -> u8,
    ) -> Vec<Repeat> {
        let items: Vec<Option<Item>> = steps
            .iter()
            .map(|s| forward_item(s, decision(s)).filter(|_| may_loop(s)))
            .collect();
        super::find(&items)
    }

    fn all(_: &Step) -> bool {
        true
    }

    fn none(_: &Step) -> u8 {
        0
    }

    #[test]
    fn a_block_repeated_with_affine_indices_is_one_run() {
        let mut steps = vec![latent(0, 0)];
        steps.extend(block(10, 3, 20, 2));
        steps.push(mul(2, 0, 0));
        let runs = find(&steps, all, none);
        assert_eq!(runs.len(), 1, "{runs:?}");
        let r = &runs[0];
        assert_eq!((r.start, r.period, r.reps), (1, 2, 20));
        assert_eq!(r.shift(Unit::Slot, 10), 2);
        assert_eq!(r.shift(Unit::Slot, 11), 2);
        assert_eq!(r.shift(Unit::Slot, 1), 0);
        assert_eq!(r.shift(Unit::Latent, 3), 1);
    }

    #[test]
    fn a_run_stops_where_a_moving_index_meets_a_fixed_one() {
        // Outputs moving down by 3 from 40 meet the fixed operand 1 at iteration 13.
        let runs = find(&block(40, 0, 20, -3), all, none);
        assert_eq!(runs.len(), 1, "{runs:?}");
        assert_eq!((runs[0].start, runs[0].period, runs[0].reps), (0, 2, 13));
    }

    #[test]
    fn a_step_of_another_shape_a_broken_line_or_a_decision_ends_the_run() {
        let mut steps = block(10, 0, 30, 2);
        steps[2 * 17 + 1] = mul(10 + 2 * 17 + 1, 10 + 2 * 17, 2);
        let runs = find(&steps, all, none);
        assert_eq!((runs[0].start, runs[0].reps), (0, 17), "{runs:?}");
        // Outputs above 60 decide otherwise: the product of iteration 25 is the first.
        let steps = block(10, 0, 40, 2);
        let runs = find(&steps, all, |s| u8::from(s.out > 60));
        assert_eq!((runs[0].start, runs[0].reps), (0, 25), "{runs:?}");
        // A step that may not be looped (the latent of iteration 3).
        let runs = find(&block(10, 0, 20, 2), |s| s.out != 16, none);
        assert_eq!(runs.len(), 1, "{runs:?}");
        assert_eq!((runs[0].start, runs[0].reps), (7, 16));
    }

    #[test]
    fn short_runs_are_not_loops() {
        assert!(find(&block(10, 0, 3, 2), all, none).is_empty());
        assert!(find(&block(10, 0, 11, 2), all, none).is_empty(), "22 steps");
        assert_eq!(find(&block(10, 0, 12, 2), all, none).len(), 1);
    }
}
