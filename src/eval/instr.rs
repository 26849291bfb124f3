//! The tape's instruction set: the forward steps and reverse steps the compiler emits and the
//! sweeps follow, the lane width, the reverse plans, and which slots each instruction reads
//! (forward, [`each_read`], and reverse, [`reverse_reads`]). Shared by the compiler
//! (`compile.rs`, `fuse.rs`, `plan.rs`, `layout.rs`), the runtime (`sweep.rs`, `kernels.rs`)
//! and the compiled sweeps (`jit`); depends on nothing in `eval` itself, so none of them
//! imports another through it.

use crate::ir::{Binary, Reads, Unary};

/// Lanes processed together, as one fixed-width array per node: the lane loops compile to
/// straight-line vector code. The batch result does not depend on how the batch is split
/// (every lane is computed alone); a short last chunk is padded with copies of its last
/// sample, whose results are dropped.
pub const CHUNK: usize = 16;

/// The lanes of one node in one chunk.
pub type Lanes = [f64; CHUNK];

/// No adjoint: the operand does not depend on a latent or a parameter.
pub(super) const NONE: u32 = u32::MAX;

/// The `cache` of an [`Op::If`] whose smoothing weights no sweep reads after its own step
/// (the reverse sweep sends nothing through it and no later if-statement reuses them): the
/// forward sweep does not keep them.
pub(super) const UNREAD: u32 = u32::MAX;

/// One forward instruction writing slot `out`; operands are earlier slots (checked when
/// compiling, so `operand < out` always holds).
#[derive(Copy, Clone, Debug)]
pub(super) struct Step {
    pub out: u32,
    pub op: Op,
}

/// What an instruction computes. Constants are not instructions: they are written into a
/// workspace once and never overwritten.
#[derive(Copy, Clone, Debug)]
pub(super) enum Op {
    Param {
        k: u32,
    },
    Latent {
        i: u32,
    },
    Unary {
        op: Unary,
        a: u32,
    },
    Binary {
        op: Binary,
        a: u32,
        b: u32,
    },
    /// `c * ((x - m) / s)^2` for a constant `c`: the quadratic term of a normal log-density,
    /// four instructions whose intermediate results nobody else reads, fused so that they
    /// stay in registers (see [`Pattern::NormalSquare`](super::fuse::Pattern::NormalSquare)). Same operations, same bits.
    NormalSquare {
        x: u32,
        m: u32,
        s: u32,
        c: f64,
    },
    /// `c * (x - m)^2` for a constant `c`: [`Op::NormalSquare`] of a scale the builder
    /// folded away (a normal density of scale 1), three instructions fused. Same operations,
    /// same bits.
    SquareDiff {
        x: u32,
        m: u32,
        c: f64,
    },
    /// `c * (x / s)^2`, or `c * x^2` where `s` is no slot (`u32::MAX`), for a constant `c`:
    /// [`Op::NormalSquare`] of a location the builder folded away (a normal density of
    /// location 0, such as a standard normal prior), three or two instructions fused. Same
    /// operations, same bits.
    Square {
        x: u32,
        s: u32,
        c: f64,
    },
    /// `c * ln(r) - r` for a constant `c` (`ln(r) * c` unless `c_left`): what a Poisson
    /// log-density of an observed count `c` keeps once its constant is hoisted, three
    /// instructions whose intermediate results nobody else reads (see
    /// [`Pattern::PoissonTerm`](super::fuse::Pattern::PoissonTerm)). Same operations, same bits.
    PoissonTerm {
        r: u32,
        c: f64,
        c_left: bool,
        /// The logarithm is [`ln_stand_in`](crate::elementary::ln_stand_in): only in the
        /// checked layout (`checked.rs`), where nothing but a finiteness check reads the term.
        stand_in: bool,
    },
    /// The stand-in of `op` (`Log`, `Log1p` or `Softplus`: `elementary::ln_stand_in`,
    /// `log1p_stand_in`, `softplus_stand_in`) of `a`: a function whose value only the
    /// finiteness check of a gradient sweep with checked values reads. Only in the checked
    /// layout (`checked.rs`).
    StandIn {
        op: Unary,
        a: u32,
    },
    /// `((base + t1) + t2) + ...`, the terms `chains[from..to]` of the tape (see
    /// [`fuse_sum_chains`](super::fuse::fuse_sum_chains)).
    SumChain {
        base: u32,
        from: u32,
        to: u32,
    },
    /// `cache` is where the smoothing weights of the forward sweep are kept for the reverse
    /// one ([`UNREAD`] for an if-statement whose weights no sweep reads: none are kept): the
    /// else and then weights in places `cache` and `cache + 1`, or, with `product`, only their
    /// product in `cache` (all the reverse sweep needs when it sends nothing to the branches,
    /// as for a guard choosing between constants). With `reuse`, an earlier if-statement on
    /// the same guard has already put both weights in `cache` (one source `if` assigning
    /// several variables becomes one such step per variable): the smoothed forward sweep
    /// reads them instead of computing the same sigmoids again.
    If {
        g: u32,
        t: u32,
        e: u32,
        index: u32,
        cache: u32,
        product: bool,
        reuse: bool,
    },
    /// `t` where `g < 0`, else `e`: a crisp if-statement in the crisp forward-only plan
    /// (`crisp.rs`), which never forces one and keeps no weights. Only in that plan.
    Select {
        g: u32,
        t: u32,
        e: u32,
    },
    /// `t` where `a - b < 0`, else `e`: a [`Op::Select`] whose guard is a subtraction read only
    /// as a guard, fused so that it stays in registers (same operations, same bits). Only in
    /// the crisp forward-only plan.
    SelectLess {
        a: u32,
        b: u32,
        t: u32,
        e: u32,
    },
    /// `t` where `a + b < 0`, else `e`: [`Op::SelectLess`] of a sum. Only in the crisp
    /// forward-only plan.
    SelectSum {
        a: u32,
        b: u32,
        t: u32,
        e: u32,
    },
    /// `t` where the sum chain `((base + t1) + t2) + ...` (the terms `chains[from..to]`) is
    /// negative, else `e`: a [`Op::Select`] whose guard is a sum chain only it reads. Only in
    /// the crisp forward-only plan.
    SelectChain {
        base: u32,
        from: u32,
        to: u32,
        t: u32,
        e: u32,
    },
    /// `t` where latent `i` is negative, else `e`: a [`Op::Select`] whose guard is a latent
    /// read only as a guard, loaded here. Only in the crisp forward-only plan.
    SelectLatent {
        i: u32,
        t: u32,
        e: u32,
    },
    /// `c * (x - m)^2 - k` for a uniform `k`: [`Op::SquareDiff`] and a subtraction only it
    /// feeds (a normal density's hoisted constant, kept where the density is in a branch),
    /// subtracted here. Only in the crisp forward-only plan.
    SquareDiffSub {
        x: u32,
        m: u32,
        k: u32,
        c: f64,
    },
    /// `c * x^2 - k` for a uniform `k`: [`Op::SquareDiffSub`] of [`Op::Square`] without a
    /// scale. Only in the crisp forward-only plan.
    SquareSub {
        x: u32,
        k: u32,
        c: f64,
    },
    /// `-a` where `g < 0`, else `e`: a [`Op::Select`] whose then-branch is a negation only it
    /// reads (as `abs` expands: `if x < 0 then -x else x`), negated here. Only in the crisp
    /// forward-only plan.
    SelectNeg {
        g: u32,
        a: u32,
        e: u32,
    },
    /// `t` where latent `i` minus `b` is negative, else `e`: [`Op::SelectLess`] of a latent
    /// read only there, loaded here. Only in the crisp forward-only plan.
    SelectLessLatent {
        i: u32,
        b: u32,
        t: u32,
        e: u32,
    },
}

/// Where a reverse step sends one contribution: an adjoint index, and whether this is the
/// first contribution that adjoint receives in the sweep (then it is written, not added, and
/// the adjoint needs no zeroing).
#[derive(Copy, Clone, Debug)]
pub(super) struct Target {
    pub adj: u32,
    pub first: bool,
}

/// Where a [`RevStep`] of a smoothed `If` keeps the targets of its folded guard's operands.
pub(super) const FOLD_A: usize = 3;
pub(super) const FOLD_B: usize = 4;

pub(super) const NO_TARGET: Target = Target {
    adj: NONE,
    first: false,
};

/// One reverse instruction: the forward step, its own adjoint index, and the targets of its
/// operands (guard, then, else for an `If`; `a`, `b` for a binary op, only `to[0]` when
/// `a == b`), and for a smoothed `If` whose guard's sum or difference was folded into it
/// ([`RevStep::folded_guard`]) that sum's operands' at [`FOLD_A`] and [`FOLD_B`].
#[derive(Copy, Clone, Debug)]
pub(super) struct RevStep {
    pub step: Step,
    pub ad: u32,
    pub to: [Target; 5],
    /// The guard is `a + b` or `a - b` read by nothing else (a threshold test `x >= c`):
    /// the if-statement sends the guard's contribution on to `a` and `b` itself, after its
    /// branches' contributions, in the operations the sum's own reverse step would have used
    /// with the guard's adjoint `0.0 + c`, which the plan then leaves out. Same bits, one
    /// step and one adjoint's round trip through memory fewer.
    pub folded_guard: Option<Binary>,
    /// The step's operands hold the same value in every lane (they depend on parameters
    /// and constants only), so its local derivatives are computed once, not per lane.
    pub uniform: bool,
}

/// The reverse sweep for one family of semantics (whether guards carry adjoints).
#[derive(Clone, Debug, Default)]
pub(super) struct Plan {
    pub steps: Vec<RevStep>,
    /// Adjoints of latents and parameters no step writes (e.g. a latent read only by crisp
    /// guards): zeroed every chunk, as the gradient reads them.
    pub zero: Vec<u32>,
    /// The target of each sum-chain term (parallel to the tape's `chains`).
    pub chain_targets: Vec<Target>,
}

/// The slots an instruction reads (a sum chain's terms are in the tape's side table; only
/// its base is listed, see [`each_read`]).
pub(super) fn operands(op: &Op) -> ([u32; 4], usize) {
    match *op {
        Op::Param { .. } | Op::Latent { .. } => ([0; 4], 0),
        Op::Unary { a, .. } | Op::StandIn { a, .. } => ([a, 0, 0, 0], 1),
        Op::Binary { a, b, .. } => ([a, b, 0, 0], 2),
        Op::NormalSquare { x, m, s, .. } => ([x, m, s, 0], 3),
        Op::SquareDiff { x, m, .. } => ([x, m, 0, 0], 2),
        Op::Square { x, s, .. } if s == NONE => ([x, 0, 0, 0], 1),
        Op::Square { x, s, .. } => ([x, s, 0, 0], 2),
        Op::PoissonTerm { r, .. } => ([r, 0, 0, 0], 1),
        Op::SumChain { base, .. } => ([base, 0, 0, 0], 1),
        Op::If { g, t, e, .. } | Op::Select { g, t, e } => ([g, t, e, 0], 3),
        Op::SelectNeg { g, a, e } => ([g, a, e, 0], 3),
        Op::SquareDiffSub { x, m, k, .. } => ([x, m, k, 0], 3),
        Op::SquareSub { x, k, .. } => ([x, k, 0, 0], 2),
        Op::SelectLess { a, b, t, e } | Op::SelectSum { a, b, t, e } => ([a, b, t, e], 4),
        Op::SelectChain { base, t, e, .. } => ([base, t, e, 0], 3),
        Op::SelectLatent { t, e, .. } => ([t, e, 0, 0], 2),
        Op::SelectLessLatent { b, t, e, .. } => ([b, t, e, 0], 3),
    }
}

/// The pattern of the steps that only the crisp forward-only plan (`crisp.rs`) and the checked
/// layout (`checked.rs`) contain, for the passes over the reverse plans and the uniform steps,
/// which never meet them: one list instead of a copy in each pass.
macro_rules! forward_only_op {
    () => {
        Op::Select { .. }
            | Op::SelectLess { .. }
            | Op::SelectSum { .. }
            | Op::SelectChain { .. }
            | Op::SelectLatent { .. }
            | Op::SelectLessLatent { .. }
            | Op::SelectNeg { .. }
            | Op::SquareDiffSub { .. }
            | Op::SquareSub { .. }
            | Op::StandIn { .. }
    };
}
pub(super) use forward_only_op;

/// The pattern of the steps besides the primitives that every plan may contain (the inputs,
/// the fused steps, the sums and the if-statements), for the compiled sweeps, which run
/// each of them inline: one list instead of a copy in each.
#[cfg(all(feature = "jit", target_arch = "x86_64"))]
macro_rules! non_primitive_op {
    () => {
        Op::Param { .. }
            | Op::Latent { .. }
            | Op::NormalSquare { .. }
            | Op::SquareDiff { .. }
            | Op::Square { .. }
            | Op::PoissonTerm { .. }
            | Op::SumChain { .. }
            | Op::If { .. }
    };
}
#[cfg(all(feature = "jit", target_arch = "x86_64"))]
pub(super) use non_primitive_op;

/// The slots the reverse sweep reads the value of at step `rs`: those its local derivatives
/// use for the operands it sends contributions to (a primitive's as its descriptor declares,
/// `crate::ir::Unary::info`; the fused steps' and the if-statement's rules here). Reading a
/// slot not listed here would read another value's lanes; listing more than needed only
/// costs places.
pub(super) fn reverse_reads(rs: &RevStep, smooth: bool) -> ([u32; 3], usize) {
    let out = rs.step.out;
    let (want_a, want_b) = (rs.to[0].adj != NONE, rs.to[1].adj != NONE);
    match rs.step.op {
        Op::Param { .. } | Op::Latent { .. } | Op::SumChain { .. } => ([0; 3], 0),
        // Uniform operands are pinned anyway.
        Op::Unary { a, .. } if rs.uniform => ([a, out, 0], 2),
        Op::Unary { op, a } => read_slots(op.info().reads, [a, a, out]),
        // Both partials of `op(a, a)` at once.
        Op::Binary { op, a, b } if a == b => {
            let [da, db] = op.info().reads;
            let r = da.and(db);
            let r = Reads {
                a: r.a || r.b,
                b: false,
                ..r
            };
            read_slots(r, [a, b, out])
        }
        Op::Binary { op, a, b } => {
            // The sweeps compute the partial in `b` unless only `a` takes a contribution.
            let [da, db] = op.info().reads;
            let r = match (want_a, want_b) {
                (true, false) => da,
                (true, true) => da.and(db),
                (false, _) => db,
            };
            read_slots(r, [a, b, out])
        }
        Op::NormalSquare { x, m, s, .. } => ([x, m, s], 3),
        Op::SquareDiff { x, m, .. } => ([x, m, 0], 2),
        Op::Square { x, s, .. } if s == NONE => ([x, 0, 0], 1),
        Op::Square { x, s, .. } => ([x, s, 0], 2),
        Op::PoissonTerm { r, .. } => ([r, 0, 0], 1),
        Op::If { t, e, .. } if smooth => ([t, e, 0], 2),
        Op::If { g, .. } => ([g, 0, 0], 1),
        forward_only_op!() => unreachable!("only forward-only layouts have this step"),
    }
}

/// The slots of `[a, b, value]` that `r` reads.
fn read_slots(r: Reads, [a, b, value]: [u32; 3]) -> ([u32; 3], usize) {
    let mut slots = [0; 3];
    let mut k = 0;
    for (read, slot) in [(r.a, a), (r.b, b), (r.value, value)] {
        if read {
            slots[k] = slot;
            k += 1;
        }
    }
    (slots, k)
}

/// Calls `f` on every slot step `st` reads in the forward sweep (a sum chain's terms too).
pub(super) fn each_read(st: &Step, chains: &[(u32, bool)], mut f: impl FnMut(u32)) {
    let (ops, k) = operands(&st.op);
    ops[..k].iter().for_each(|&o| f(o));
    if let Op::SumChain { from, to, .. } | Op::SelectChain { from, to, .. } = st.op {
        chains[from as usize..to as usize]
            .iter()
            .for_each(|&(t, _)| f(t));
    }
}
