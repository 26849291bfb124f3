//! The machine code of one reverse sweep, at either width ([`ReverseVector`]): each step of a
//! reverse plan becomes instructions on the chunk's two halves (AVX-512) or on each of its
//! quarters in turn (AVX2, a loop over a segment of steps), reading its own adjoint, the
//! values and the smoothing weights it needs from their places and adding each contribution
//! into its target's place; steps with no inline form (the local derivatives that need a function:
//! `sin`, `lgamma`, powers, ... and steps whose operands are the same in every lane) become
//! one call back into the interpreter per run of such steps.
//!
//! Why: the interpreter's reverse sweep runs in its AVX2 build (its AVX-512 build was slower
//! on every model measured), with a dispatch per step and its contributions through the
//! stack; on textmsg it was a quarter of a DSGD sample's time. The code here keeps nothing in
//! registers from one step to the next but the adjoints it adds to (an adjoint many steps add
//! to stays in a register, [`AdjCache`]); values and weights are read from their places.
//!
//! Every inline form is `reverse_body`'s operations (`sweep.rs`, `kernels.rs`) in the same
//! order on the same operands, every product by a local derivative `masked` (exactly zero
//! where the adjoint is zero) as a zeroing-masked multiplication, so the code gives the
//! interpreter's bits (AVX2 masks a product with `vandpd`, which gives the same `+0.0`).
//!
//! Register use: `rbx` the frame, `r12` the values, `r13` the adjoints, `r14` the smoothing
//! weights, `rbp` the code's constants (`ReverseVector::CONSTS` first, then the `c` of fused
//! density and Poisson terms); the vector registers' roles are the width's (`avx512.rs`,
//! `avx2/reverse.rs`). A repeated block of steps (`repeat.rs`, AVX-512 only) runs as a loop
//! whose iterations each start and end with every adjoint in memory, `rdx` and `r8`-`r11`
//! advancing its moving places (`looping.rs`); an AVX2 segment's loop moves `r12`, `r13` and
//! `r14` by a quarter per iteration.

use iced_x86::IcedError;
use iced_x86::code_asm::*;

use crate::ir::CompiledForm;

use super::super::instr::{
    CHUNK, NONE, Op, Plan, RevStep, Target, forward_only_op, non_primitive_op, reverse_reads,
};
use super::emit::SEGMENT_STEPS;
use super::indicators::Indicators;
use super::looping::{self, Looping};
use super::repeat::{self, Repeat, Unit};
use super::sweep::Coverage;
use super::vector::{Arith, ReverseVector, Src};
use super::{Parts, entry, frame};

mod partials;
mod steps;

/// Bytes of one place (all its lanes).
const SLOT_BYTES: i32 = (CHUNK * 8) as i32;

/// Where the constants every reverse code reads are in its table
/// (`ReverseVector::CONSTS`).
const C_ONE: usize = 0;
const C_MINUS_ONE: usize = 3;
const C_TWO: usize = 1;
const C_HALF: usize = 2;

/// Steps assembled at a time (see `sweep::PART_STEPS`).
const PART_STEPS: usize = 1_024;

/// Which adjoint part (half or quarter) each of the width's cache registers
/// (`ReverseVector::ACC`) holds, whether it differs from its place in memory, and when it was
/// last used: a least-recently-used write-back cache, so that an adjoint that many steps add
/// to (a shared operand's: textmsg's rates and change point take a contribution from each of
/// its 37 if-statements) stays in a register between them.
struct AdjCache {
    holds: Vec<Option<(u32, usize)>>,
    dirty: Vec<bool>,
    used: Vec<u64>,
    clock: u64,
}

impl AdjCache {
    fn new(registers: usize) -> Self {
        AdjCache {
            holds: vec![None; registers],
            dirty: vec![false; registers],
            used: vec![0; registers],
            clock: 0,
        }
    }

    fn find(&mut self, adj: u32, h: usize) -> Option<usize> {
        let i = self.holds.iter().position(|&x| x == Some((adj, h)))?;
        self.clock += 1;
        self.used[i] = self.clock;
        Some(i)
    }
}

/// Whether reverse step `rs` has an inline form under smoothed (`smooth`) or crisp semantics
/// (forced sweeps are never compiled): a primitive where its descriptor says so (and its
/// operand is not uniform), every other step.
pub(super) fn inline(rs: &RevStep) -> bool {
    match rs.step.op {
        Op::Unary { op, .. } => !rs.uniform && op.info().reverse == CompiledForm::Inline,
        Op::Binary { op, .. } => op.info().reverse == CompiledForm::Inline,
        non_primitive_op!() => true,
        forward_only_op!() => unreachable!("only forward-only layouts have this step"),
    }
}

/// Runs of consecutive steps without an inline form: the calls back the code would make.
pub(super) fn call_backs(plan: &Plan) -> usize {
    entry::runs(plan.steps.iter().map(|rs| !inline(rs)))
}

/// The code of `plan`'s steps at width `W` under smoothed (`smooth`) or crisp semantics, with
/// its constants: it starts at offset 0 and returns when the sweep is done. The adjoints the
/// plan zeroes and the output's are set before it runs (by the caller).
pub(super) fn reverse<W: ReverseVector>(
    plan: &Plan,
    smooth: bool,
    constants: &[(u32, f64)],
) -> Result<(Parts, Vec<f64>, Coverage), IcedError> {
    let indicators = Indicators::of(constants);
    let mut consts = Vec::new();
    for &c in W::CONSTS {
        W::constant(&mut consts, c);
    }
    let mut e = Emitter::<W> {
        indicators: &indicators,
        a: CodeAssembler::new(64)?,
        cache: AdjCache::new(W::ACC.len()),
        own_mask: false,
        consts,
        chain_targets: &plan.chain_targets,
        smooth,
        looping: None,
        reads: ([0; 3], 0),
        width: std::marker::PhantomData,
    };
    let mut bytes = Parts::default();
    let mut coverage = Coverage::default();
    e.prologue()?;
    let steps = &plan.steps;
    let repeats = if loops_over_quarters::<W>() {
        Vec::new()
    } else {
        loops(steps, &indicators)
    };
    let mut repeats = repeats.iter().peekable();
    let (mut i, mut part_from) = (0, 0);
    while i < steps.len() {
        if i - part_from >= PART_STEPS {
            e.assemble_part(&mut bytes)?;
            part_from = i;
        }
        if let Some((run, looping)) = repeats.next_if(|(run, _)| run.start == i) {
            e.repeat(steps, run, looping)?;
            coverage.inline += run.len();
            coverage.looped += run.len();
            i += run.len();
        } else if inline(&steps[i]) && loops_over_quarters::<W>() {
            let from = i;
            while i < steps.len() && i - from < SEGMENT_STEPS && inline(&steps[i]) {
                i += 1;
            }
            e.segment(&steps[from..i])?;
            coverage.inline += i - from;
        } else if inline(&steps[i]) {
            e.step(&steps[i])?;
            coverage.inline += 1;
            i += 1;
        } else {
            let from = i;
            while i < steps.len() && !inline(&steps[i]) {
                i += 1;
            }
            e.call_back(from, i)?;
            coverage.called += i - from;
        }
    }
    e.epilogue()?;
    e.assemble_part(&mut bytes)?;
    Ok((bytes, e.consts, coverage))
}

/// Whether a step's pass covers less than the whole chunk, so that each segment of steps
/// runs as a loop over the chunk's parts (AVX2's quarters).
fn loops_over_quarters<W: ReverseVector>() -> bool {
    (W::PARTS as i32) * W::BYTES < SLOT_BYTES
}

struct Emitter<'a, W: ReverseVector> {
    a: CodeAssembler,
    cache: AdjCache,
    /// Whether the width holds the lanes where the step's own adjoint (this part) is not zero
    /// (`ReverseVector::own_nonzero`): set at its first use in a step's part.
    own_mask: bool,
    consts: Vec<f64>,
    chain_targets: &'a [Target],
    smooth: bool,
    indicators: &'a Indicators,
    /// Inside a loop over a repeated block: where its moving operands are.
    looping: Option<Looping>,
    /// The value places the step being emitted may read (`instr::reverse_reads`: those the
    /// layout kept for it; any other holds another value by then).
    reads: ([u32; 3], usize),
    width: std::marker::PhantomData<W>,
}

/// The runs of repeated blocks of `steps` the code runs as loops, with their registers (see
/// `emit::loops`): none in a plan of fewer than [`looping::LOOP_FROM_STEPS`] steps.
fn loops(steps: &[RevStep], indicators: &Indicators) -> Vec<(Repeat, Looping)> {
    looping::plan_loops(steps, |rs| {
        let decision = match rs.step.op {
            Op::If { t, e, .. } => indicators.decision(t, e),
            _ => 0,
        };
        inline(rs)
            .then(|| repeat::reverse_item(rs, decision))
            .flatten()
    })
}

impl<W: ReverseVector> Emitter<'_, W> {
    /// The steps of `run` as a loop whose body is its first iteration. Each iteration starts
    /// and ends with every adjoint in memory (the cache written back at its end, with the
    /// iteration's addresses), so that all find their adjoints where the first does.
    fn repeat(
        &mut self,
        steps: &[RevStep],
        run: &Repeat,
        looping: &Looping,
    ) -> Result<(), IcedError> {
        self.flush()?;
        let top = looping.enter(&mut self.a)?;
        self.looping = Some(looping.clone());
        for rs in &steps[run.start..run.start + run.period] {
            self.step(rs)?;
        }
        self.flush()?;
        self.looping = None;
        looping.back_edge(&mut self.a, top)
    }

    /// Part `h` of place `x` of kind `unit` at `base` (inside a loop over a repeated block, `x`
    /// as its first iteration has it; inside a segment's loop, the current quarter's), `after`
    /// places after it.
    fn place(
        &self,
        base: AsmRegister64,
        unit: Unit,
        x: u32,
        after: u32,
        h: usize,
    ) -> AsmMemoryOperand {
        let disp = (x + after) as i32 * SLOT_BYTES + h as i32 * W::BYTES;
        match self.looping.as_ref().and_then(|l| l.place(unit, x)) {
            Some((reg, scale)) => W::ptr(base + reg * scale + disp),
            None => W::ptr(base + disp),
        }
    }

    /// Part `h` of value place `s`, which the step being emitted must be one to read.
    fn value(&self, s: u32, h: usize) -> AsmMemoryOperand {
        let (reads, k) = self.reads;
        assert!(
            reads[..k].contains(&s),
            "a reverse step reads value place {s}, which instr::reverse_reads does not keep"
        );
        self.place(r12, Unit::Slot, s, 0, h)
    }

    fn adjoint(&self, a: u32, h: usize) -> AsmMemoryOperand {
        self.place(r13, Unit::Adjoint, a, 0, h)
    }

    fn weight(&self, c: u32, h: usize) -> AsmMemoryOperand {
        self.place(r14, Unit::Weight, c, 0, h)
    }

    /// Part `h` of the weight place after `c` (the then weights, where `c` holds the else
    /// ones): it moves as `c` does.
    fn weight_after(&self, c: u32, h: usize) -> AsmMemoryOperand {
        self.place(r14, Unit::Weight, c, 1, h)
    }

    fn prologue(&mut self) -> Result<(), IcedError> {
        entry::enter(
            &mut self.a,
            &[(r13, frame::ADJOINTS), (r14, frame::WEIGHTS)],
            W::reverse_constants,
        )
    }

    /// Steps `run` (all with an inline form) as a loop over the chunk's quarters, each
    /// iteration starting and ending with every adjoint in memory.
    fn segment(&mut self, run: &[RevStep]) -> Result<(), IcedError> {
        let mut top = self.a.create_label();
        self.a.set_label(&mut top)?;
        for rs in run {
            self.step(rs)?;
        }
        self.flush()?;
        let a = &mut self.a;
        for r in [r12, r13, r14] {
            a.add(r, W::BYTES)?;
        }
        a.mov(rax, qword_ptr(rbx + frame::VALUES))?;
        a.add(rax, SLOT_BYTES)?;
        a.cmp(r12, rax)?;
        a.jne(top)?;
        for r in [r12, r13, r14] {
            a.sub(r, SLOT_BYTES)?;
        }
        Ok(())
    }

    /// Writes every changed cached adjoint back to its place and empties the cache (before a
    /// call back, which reads and writes adjoints in memory, and at the end).
    fn flush(&mut self) -> Result<(), IcedError> {
        for (i, &r) in W::ACC.iter().enumerate() {
            if let (Some((adj, h)), true) = (self.cache.holds[i], self.cache.dirty[i]) {
                let at = self.adjoint(adj, h);
                W::store(&mut self.a, at, r)?;
            }
        }
        self.cache = AdjCache::new(W::ACC.len());
        Ok(())
    }

    /// A cache register for part `h` of adjoint `adj` (not cached): an empty one or the least
    /// recently used, written back first if changed.
    fn take(&mut self, adj: u32, h: usize) -> Result<usize, IcedError> {
        let c = &mut self.cache;
        let i = match c.holds.iter().position(Option::is_none) {
            Some(i) => i,
            None => (0..W::ACC.len())
                .min_by_key(|&i| c.used[i])
                .expect("registers"),
        };
        if let (Some((old, oh)), true) = (c.holds[i], c.dirty[i]) {
            let at = self.adjoint(old, oh);
            W::store(&mut self.a, at, W::ACC[i])?;
        }
        let c = &mut self.cache;
        c.holds[i] = Some((adj, h));
        c.dirty[i] = false;
        c.clock += 1;
        c.used[i] = c.clock;
        Ok(i)
    }

    fn epilogue(&mut self) -> Result<(), IcedError> {
        self.flush()?;
        entry::leave(&mut self.a)
    }

    /// Runs reverse steps `from..to` in the interpreter, with every adjoint in memory.
    fn call_back(&mut self, from: usize, to: usize) -> Result<(), IcedError> {
        self.flush()?;
        entry::call_back(&mut self.a, from, to, W::reverse_constants)
    }

    fn assemble_part(&mut self, bytes: &mut Parts) -> Result<(), IcedError> {
        let mut part = std::mem::replace(&mut self.a, CodeAssembler::new(64)?);
        let at = bytes.len() as u64;
        bytes.push(part.assemble(at)?);
        Ok(())
    }

    /// The index of a new constant `c` in the table.
    fn constant(&mut self, c: f64) -> usize {
        W::constant(&mut self.consts, c)
    }

    /// `r = masked(d, local)` lane by lane: `d * local`, exactly zero where `d` is zero.
    fn masked(
        &mut self,
        r: W::Reg,
        d: W::Reg,
        local: impl Into<Src<W::Reg>>,
    ) -> Result<(), IcedError> {
        let own = d == W::OWN;
        if own {
            self.own_nonzero()?;
        }
        W::masked(&mut self.a, r, d, local.into(), own)
    }

    /// Keeps the lanes where the own adjoint is not zero unless this part of the step has
    /// already: most steps mask several products by their own adjoint.
    fn own_nonzero(&mut self) -> Result<(), IcedError> {
        if !self.own_mask {
            W::own_nonzero(&mut self.a)?;
            self.own_mask = true;
        }
        Ok(())
    }

    /// The contributions of a sum or difference with adjoint `d` (never `-0.0`) to its
    /// operands' targets `ta` and `tb` (either may be absent): `d` and `d` or `-d`.
    ///
    /// The interpreter sends one operand's alone as `masked(d, 1.0)` or `masked(d, -1.0)`.
    /// As `d` is never `-0.0` (an adjoint's first contribution is written as `0.0 + c`) nor
    /// a signalling NaN, the first is `d` itself and the second `0.0 - d`; adding `0.0 - d`
    /// (or writing `0.0 + (0.0 - d)`) gives the bits of subtracting `d` (of writing
    /// `0.0 - d`). So every case is the plain addition and subtraction of `d`.
    fn sum_contributions(
        &mut self,
        d: W::Reg,
        ta: Target,
        tb: Target,
        subtract_b: bool,
        h: usize,
    ) -> Result<(), IcedError> {
        if ta.adj != NONE {
            self.accumulate(ta, d, h, false)?;
        }
        if tb.adj != NONE {
            self.accumulate(tb, d, h, subtract_b)?;
        }
        Ok(())
    }

    /// `add_into` (or `sub_into`, `subtract`) of contribution `c` into target `t`'s adjoint,
    /// part `h`: `0.0 + c` (`0.0 - c`) for its first contribution.
    fn accumulate(
        &mut self,
        t: Target,
        c: W::Reg,
        h: usize,
        subtract: bool,
    ) -> Result<(), IcedError> {
        let i = match self.cache.find(t.adj, h) {
            Some(i) => i,
            None => {
                let i = self.take(t.adj, h)?;
                if !t.first {
                    let at = self.adjoint(t.adj, h);
                    W::mov(&mut self.a, W::ACC[i], Src::Mem(at))?;
                }
                i
            }
        };
        let r = W::ACC[i];
        let from = if t.first { W::ZERO } else { r };
        let op = if subtract { Arith::Sub } else { Arith::Add };
        W::arith(&mut self.a, op, r, from, Src::Reg(c))?;
        self.cache.dirty[i] = true;
        Ok(())
    }

    /// `put`: [`Self::accumulate`] where the target has an adjoint.
    fn put(&mut self, t: Target, c: W::Reg, h: usize) -> Result<(), IcedError> {
        if t.adj == NONE {
            return Ok(());
        }
        self.accumulate(t, c, h, false)
    }

    fn step(&mut self, rs: &RevStep) -> Result<(), IcedError> {
        self.reads = reverse_reads(rs, self.smooth);
        for h in 0..W::PARTS {
            self.own_mask = false;
            let own = match self.cache.find(rs.ad, h) {
                Some(i) => Src::Reg(W::ACC[i]),
                None => Src::Mem(self.adjoint(rs.ad, h)),
            };
            W::mov(&mut self.a, W::OWN, own)?;
            self.step_part(rs, h)?;
        }
        Ok(())
    }
}
