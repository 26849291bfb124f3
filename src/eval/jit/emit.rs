//! The machine code of one forward sweep: each lane step of a layout becomes AVX-512
//! instructions on the chunk's two halves (eight lanes each), with the values it just computed
//! kept in registers for the steps that read them next; steps with no inline form (the
//! elementary functions but `ln` and `sqrt`, and powers) become one call back into the
//! interpreter per run of such steps.
//!
//! Every inline form is the interpreter's own operations on the same operands in the same
//! order (IEEE addition, subtraction, multiplication, division and square root are correctly
//! rounded, a fused multiply-add rounds once as `mul_add` does, a select is a bitwise blend),
//! so the code gives the interpreter's bits. The long ones are routines emitted once before
//! the sweep and called with their operand and results in scratch registers: a smoothed
//! if-statement's weights (`kernels::smooth_weights`: `elementary::exp_of_nonpositive`, then
//! `sigmoid_big_small` and `sigmoid_pair_order`) and `elementary::ln` (the logarithm and the
//! Poisson term), each called once for both halves. Inlined in every step, they made
//! textmsg's code larger than the instruction cache.
//!
//! Register use: `rbx` the frame, `r12` the values, `r13` the parameters, `r14` the noise of
//! the chunk's first lane, `r15` the distance between two latents' noise, `rbp` the code's
//! constants (`routines::CONSTS` first, then the `c` of fused density terms); `zmm0..zmm19` hold
//! cached values (pair `p` is `zmm2p`, `zmm2p+1`), `zmm20..zmm29` are scratch, `zmm30` holds
//! `-0.0` in every lane and `zmm31` zero. A routine uses `zmm10..zmm29` and so loses the cache
//! pairs 5 to 9 (it borrows `zmm30` and `zmm31` and sets them again). Inside a loop over a
//! repeated block (`repeat.rs`), `rdx` and `r8`-`r11` advance the moving operands'
//! addresses (`looping.rs`).

use std::cell::RefCell;

use iced_x86::IcedError;
use iced_x86::code_asm::*;

use crate::ir::{Binary, CompiledForm, Unary};

use super::super::instr::{CHUNK, NONE, Op, Step, UNREAD, each_read};
use super::indicators::{Indicator, Indicators};
use super::looping::{self, Looping};
use super::regs::*;
use super::repeat::{self, Repeat, Unit};
use super::routines::{self, k};
use super::{Parts, entry, frame};

/// Register pairs that cache values.
const PAIRS: usize = 10;

/// The cache pairs whose registers (`zmm10..zmm19`) the routines use as scratch: a call to
/// one loses them.
const ROUTINE_PAIRS: std::ops::Range<usize> = 5..10;

/// The routines' registers for half `h` of a chunk.
fn set(h: usize) -> routines::Set {
    if h == 0 {
        routines::SET_A
    } else {
        routines::SET_B
    }
}

/// Bytes of one slot (all its lanes) and of one half.
const SLOT_BYTES: i32 = (CHUNK * 8) as i32;
const HALF_BYTES: i32 = SLOT_BYTES / 2;

/// How many steps the code runs itself and how many it hands back (for tests and reports).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    pub inline: usize,
    pub called: usize,
    /// Of the steps run inline, those in loops over repeated blocks (`repeat.rs`).
    pub looped: usize,
}

/// Where a value is: in register pair `p`, or only in its slot.
#[derive(Clone, Copy)]
enum Operand {
    Pair(usize),
    Slot(u32),
}

/// Which slot each register pair holds, and the next pair to reuse; and the slots looked
/// up and not found since the emitter last asked ([`Cache::take_missed`]), which the code
/// reads from memory.
struct Cache {
    holds: [u32; PAIRS],
    next: usize,
    missed: RefCell<Vec<u32>>,
}

impl Cache {
    fn new() -> Self {
        Cache {
            holds: [NONE; PAIRS],
            next: 0,
            missed: RefCell::new(Vec::new()),
        }
    }

    /// The slots looked up and not found since the last call.
    fn take_missed(&self) -> Vec<u32> {
        std::mem::take(&mut *self.missed.borrow_mut())
    }

    fn clear(&mut self) {
        self.holds = [NONE; PAIRS];
    }

    /// Empty, and taking pairs from the first: the state each iteration of a loop starts
    /// in, so that all of them, run in one body, find their values where the first does.
    fn reset(&mut self) {
        self.clear();
        self.next = 0;
    }

    /// Forgets the pairs a routine uses as scratch ([`ROUTINE_PAIRS`]).
    fn lose_routine_pairs(&mut self) {
        for p in ROUTINE_PAIRS {
            self.holds[p] = NONE;
        }
    }

    fn find(&self, slot: u32) -> Operand {
        match self.holds.iter().position(|&s| s == slot) {
            Some(p) => Operand::Pair(p),
            None => {
                self.missed.borrow_mut().push(slot);
                Operand::Slot(slot)
            }
        }
    }

    /// A pair for a new value, none of `keep` (the pairs of the step's operands), if one is:
    /// a sum chain's terms may fill every pair.
    fn free(&mut self, keep: &[Operand]) -> Option<usize> {
        for _ in 0..PAIRS {
            let p = self.next;
            self.next = (self.next + 1) % PAIRS;
            if !keep
                .iter()
                .any(|o| matches!(o, Operand::Pair(q) if *q == p))
            {
                return Some(p);
            }
        }
        None
    }

    /// [`Cache::free`] for a step of at most four operands, which leaves one.
    fn take(&mut self, keep: &[Operand]) -> usize {
        debug_assert!(keep.len() < PAIRS);
        self.free(keep)
            .expect("a step of few operands leaves a pair free")
    }

    /// Records that pair `p` now holds `slot` (the only pair that does).
    fn set(&mut self, p: usize, slot: u32) {
        for s in &mut self.holds {
            if *s == slot {
                *s = NONE;
            }
        }
        self.holds[p] = slot;
    }
}

/// Runs of consecutive steps without an inline form: the calls back the code would make.
pub(super) fn call_backs(steps: &[Step]) -> usize {
    let mut runs = 0;
    let mut in_run = false;
    for step in steps {
        let called = !inline(&step.op);
        runs += usize::from(called && !in_run);
        in_run = called;
    }
    runs
}

/// Whether `op` has an inline form (under smoothed and crisp semantics alike: forced sweeps
/// and per-lane forcing are never compiled): a primitive where its descriptor says so
/// (`exp`, `ln`, `sqrt`, negation and the arithmetic), every other step.
fn inline(op: &Op) -> bool {
    match *op {
        Op::Binary { op, .. } => op.info().forward == CompiledForm::Inline,
        Op::Unary { op, .. } => op.info().forward == CompiledForm::Inline,
        Op::Param { .. }
        | Op::Latent { .. }
        | Op::NormalSquare { .. }
        | Op::SquareDiff { .. }
        | Op::Square { .. }
        | Op::PoissonTerm { .. }
        | Op::StandIn { .. }
        | Op::SumChain { .. }
        | Op::If { .. }
        | Op::Select { .. }
        | Op::SelectLess { .. }
        | Op::SelectSum { .. }
        | Op::SelectChain { .. }
        | Op::SelectLatent { .. }
        | Op::SquareDiffSub { .. }
        | Op::SquareSub { .. }
        | Op::SelectNeg { .. }
        | Op::SelectLessLatent { .. } => true,
    }
}

/// Steps assembled at a time. The assembler keeps every instruction of its part until it
/// encodes them (about 40 bytes each, some twenty a step): a 100,000-step layout in one part
/// took 100 MB; in parts, memory stays a few megabytes beside the code.
const PART_STEPS: usize = 2_048;

/// The code of `steps` (the layout's lane steps) for the semantics `crisp` or smoothed,
/// reading latents as noise reparameterised on load, with the offset of its entry point.
/// The routines come first, then the sweep, assembled in parts of [`PART_STEPS`] steps, each
/// at its final offset (calls to the routines are relative, so the code runs wherever it is
/// mapped).
pub(super) fn forward(
    steps: &[Step],
    chains: &[(u32, bool)],
    constants: &[(u32, f64)],
    pinned: usize,
    crisp: bool,
) -> Result<(Parts, usize, Vec<f64>, Coverage), IcedError> {
    let indicators = Indicators::of(constants);
    let mut bytes = Parts::default();
    let mut routine_at = [0; 3];
    for (at, body) in routine_at.iter_mut().zip([
        routines::weights as fn(&mut CodeAssembler) -> Result<(), IcedError>,
        routines::ln,
        routines::exp,
    ]) {
        *at = bytes.len() as u64;
        let mut a = CodeAssembler::new(64)?;
        body(&mut a)?;
        bytes.push(a.assemble(*at)?);
    }
    let entry = bytes.len();
    let repeats = loops(steps, &indicators, crisp);
    // A first pass finds the values some later step or call reads from memory; the second
    // stores only those and the pinned ones.
    let mut stores = Stores::Finding {
        writer: Vec::new(),
        needed: vec![false; steps.len()],
    };
    for _pass in 0..2 {
        let mut e = Emitter {
            a: CodeAssembler::new(64)?,
            routine_at,
            cache: Cache::new(),
            chains,
            consts: routines::CONSTS.to_vec(),
            crisp,
            coverage: Coverage::default(),
            stores,
            pinned: pinned as u32,
            indicators: &indicators,
            latent_pointers: false,
            looping: None,
        };
        let finding = matches!(e.stores, Stores::Finding { .. });
        let mut code = Parts {
            len: bytes.len(),
            ..Default::default()
        };
        e.prologue()?;
        let mut k = 0;
        let mut part_from = 0;
        let mut repeats = repeats.iter().peekable();
        while k < steps.len() {
            if k - part_from >= PART_STEPS {
                e.assemble_part(&mut code, finding)?;
                part_from = k;
            }
            if let Some((run, looping)) = repeats.next_if(|(run, _)| run.start == k) {
                e.repeat(steps, run, looping)?;
                e.coverage.inline += run.len();
                e.coverage.looped += run.len();
                k += run.len();
            } else if inline(&steps[k].op) {
                e.step(k, &steps[k])?;
                e.coverage.inline += 1;
                k += 1;
            } else {
                let from = k;
                while k < steps.len() && !inline(&steps[k].op) {
                    k += 1;
                }
                e.note_reads()?;
                e.called(&steps[from..k]);
                e.call_back(from, k)?;
                e.coverage.called += k - from;
            }
        }
        e.epilogue()?;
        e.assemble_part(&mut code, finding)?;
        stores = match e.stores {
            Stores::Finding { needed, .. } => Stores::Only(needed),
            Stores::Only(_) => {
                bytes.append(code);
                return Ok((bytes, entry, e.consts, e.coverage));
            }
        };
    }
    unreachable!("the second pass returns")
}

/// The runs of repeated blocks of `steps` the code runs as loops, with their registers: runs
/// of steps with an inline form whose if-statements are indicators in every iteration or in
/// none (`crisp` semantics, or smoothed). None in a layout of fewer than
/// [`looping::LOOP_FROM_STEPS`] steps.
fn loops(steps: &[Step], indicators: &Indicators, crisp: bool) -> Vec<(Repeat, Looping)> {
    looping::plan_loops(steps, |step| {
        let decision = match step.op {
            Op::If { t, e, .. } if !crisp => indicators.decision(t, e),
            _ => 0,
        };
        inline(&step.op)
            .then(|| repeat::forward_item(step, decision))
            .flatten()
    })
}

/// Which steps' values the code stores in their places.
enum Stores {
    /// First pass: finding out. `writer[p]` is the step whose value place `p` holds (`NONE`:
    /// none of this code's, or a call's), `needed[k]` whether step `k`'s value is read from
    /// memory.
    Finding { writer: Vec<u32>, needed: Vec<bool> },
    /// Second pass: the pinned values and those `needed`.
    Only(Vec<bool>),
}

/// Which routine: indices into `Emitter::routine_at`.
const WEIGHTS: usize = 0;
const LN: usize = 1;
const EXP: usize = 2;

struct Emitter<'a> {
    a: CodeAssembler,
    /// Where the routines start (offsets in the code, which starts with them).
    routine_at: [u64; 3],
    cache: Cache,
    chains: &'a [(u32, bool)],
    /// The constants the code reads from `rbp`.
    consts: Vec<f64>,
    /// Crisp semantics (else smoothed).
    crisp: bool,
    coverage: Coverage,
    stores: Stores,
    /// Places below this hold values read after the sweep (`Layout::pinned`): always stored.
    pinned: u32,
    indicators: &'a Indicators,
    /// Whether [`SCALE_AT`] and [`LOC_AT`] hold the frame's scale and location pointers
    /// (loaded at the first latent, and again after a call back).
    latent_pointers: bool,
    /// Inside a loop over a repeated block: where its moving operands are.
    looping: Option<Looping>,
}

/// The latents' scales and locations, kept in caller-saved registers between latent loads:
/// each load read both pointers from the frame again, 8 bytes of code a latent (3 % of the
/// survey's code per student, which on the 10,000-student survey streams from L3). The
/// routines touch no general register.
const SCALE_AT: AsmRegister64 = rsi;
const LOC_AT: AsmRegister64 = rdi;

impl Emitter<'_> {
    /// Half `half` of value place `slot` (as the first iteration has it, inside a loop).
    fn slot_at(&self, slot: u32, half: usize) -> AsmMemoryOperand {
        let disp = slot as i32 * SLOT_BYTES + half as i32 * HALF_BYTES;
        match self.moving(|l| l.place(Unit::Slot, slot)) {
            Some((reg, scale)) => zmmword_ptr(r12 + reg * scale + disp),
            None => zmmword_ptr(r12 + disp),
        }
    }

    /// Half `half` of weight place `cache` (and `next` after it), at `rcx`.
    fn weight_at(&self, cache: u32, next: u32, half: usize) -> AsmMemoryOperand {
        let disp = (cache + next) as i32 * SLOT_BYTES + half as i32 * HALF_BYTES;
        match self.moving(|l| l.place(Unit::Weight, cache)) {
            Some((reg, scale)) => zmmword_ptr(rcx + reg * scale + disp),
            None => zmmword_ptr(rcx + disp),
        }
    }

    /// Inside a loop, the register and scale `find` gives for a moving index.
    fn moving(
        &self,
        find: impl Fn(&Looping) -> Option<(AsmRegister64, i32)>,
    ) -> Option<(AsmRegister64, i32)> {
        self.looping.as_ref().and_then(find)
    }

    fn prologue(&mut self) -> Result<(), IcedError> {
        entry::enter(
            &mut self.a,
            &[
                (r12, frame::VALUES),
                (r13, frame::PARAMS),
                (r14, frame::NOISE),
                (r15, frame::STRIDE),
                (rbp, frame::CONSTS),
            ],
        )
    }

    fn epilogue(&mut self) -> Result<(), IcedError> {
        entry::leave(&mut self.a)
    }

    /// The steps of `run`: as a loop whose body is its first iteration (the second pass), or,
    /// while finding which values are read from memory (the first), every iteration in turn,
    /// each starting with the cache empty as the loop's do. A body step stores its value where
    /// any iteration's must be stored.
    fn repeat(&mut self, steps: &[Step], run: &Repeat, looping: &Looping) -> Result<(), IcedError> {
        let body = run.start..run.start + run.period;
        match &mut self.stores {
            Stores::Finding { .. } => {
                for r in 0..run.reps {
                    self.cache.reset();
                    for k in body.clone() {
                        let k = k + r * run.period;
                        self.step(k, &steps[k])?;
                    }
                }
            }
            Stores::Only(needed) => {
                for k in body.clone() {
                    needed[k] = (0..run.reps).any(|r| {
                        let k = k + r * run.period;
                        needed[k] || steps[k].out < self.pinned
                    });
                }
                self.cache.reset();
                looping.enter(&mut self.a)?;
                let mut top = self.a.create_label();
                self.a.set_label(&mut top)?;
                self.looping = Some(looping.clone());
                for k in body {
                    self.step(k, &steps[k])?;
                }
                self.looping = None;
                looping.back_edge(&mut self.a, top)?;
            }
        }
        // The registers hold the last iteration's values, not the first's.
        self.cache.reset();
        Ok(())
    }

    /// Runs steps `from..to` in the interpreter, which empties the register cache.
    fn call_back(&mut self, from: usize, to: usize) -> Result<(), IcedError> {
        entry::call_back(&mut self.a, from, to)?;
        self.cache.clear();
        // The call may change any caller-saved register.
        self.latent_pointers = false;
        Ok(())
    }

    /// Half `h` of an operand as a register: its cached register, or `scratch` loaded.
    fn reg(
        &mut self,
        o: Operand,
        h: usize,
        scratch: AsmRegisterZmm,
    ) -> Result<AsmRegisterZmm, IcedError> {
        Ok(match o {
            Operand::Pair(p) => ZMM[2 * p + h],
            Operand::Slot(s) => {
                self.a.vmovupd(scratch, self.slot_at(s, h))?;
                scratch
            }
        })
    }

    /// First pass: marks the values of the places looked up and not found since the last call
    /// as needed in memory.
    fn note_reads(&mut self) -> Result<(), IcedError> {
        let missed = self.cache.take_missed();
        if let Stores::Finding { writer, needed } = &mut self.stores {
            for s in missed {
                if let Some(&w) = writer.get(s as usize)
                    && w != NONE
                {
                    needed[w as usize] = true;
                }
            }
        }
        Ok(())
    }

    /// First pass: the steps `called` hand back read their operands from memory and leave
    /// their values there.
    fn called(&mut self, called: &[Step]) {
        let chains = self.chains;
        if let Stores::Finding { writer, needed } = &mut self.stores {
            for st in called {
                each_read(st, chains, |s| {
                    if let Some(&w) = writer.get(s as usize)
                        && w != NONE
                    {
                        needed[w as usize] = true;
                    }
                });
                if let Some(w) = writer.get_mut(st.out as usize) {
                    *w = NONE;
                }
            }
        }
    }

    /// Step `index` of the layout: its value into a register pair (which the cache then says
    /// holds it), and into its place where something reads it from memory.
    fn step(&mut self, index: usize, step: &Step) -> Result<(), IcedError> {
        let d = match step.op {
            Op::Param { k } => self.param(k)?,
            Op::Latent { i } => self.latent_value(i)?,
            Op::Unary { op, a } => self.unary(op, a)?,
            Op::Binary { op, a, b } => {
                let (x, y) = (self.cache.find(a), self.cache.find(b));
                let d = self.cache.take(&[x, y]);
                for h in 0..2 {
                    let r = ZMM[2 * d + h];
                    let xa = self.reg(x, h, r)?;
                    self.binary(op, r, xa, y, h)?;
                }
                d
            }
            Op::SumChain { base, from, to } => self.sum_chain(base, from, to)?,
            Op::If {
                g,
                t,
                e,
                cache,
                product,
                reuse,
                ..
            } if !self.crisp => self.smoothed_if(g, t, e, cache, product, reuse)?,
            Op::If { g, t, e, .. } | Op::Select { g, t, e } => self.select(g, t, e)?,
            Op::SelectLess { a, b, t, e } => self.select_by(Binary::Sub, a, b, t, e)?,
            Op::SelectSum { a, b, t, e } => self.select_by(Binary::Add, a, b, t, e)?,
            Op::StandIn { op, a } => self.stand_in(op, a)?,
            Op::PoissonTerm { r, c, stand_in, .. } => self.poisson_term(r, c, stand_in)?,
            Op::NormalSquare { x, m, s, c } => self.square(x, Some(m), Some(s), c, None)?,
            Op::SquareDiff { x, m, c } => self.square(x, Some(m), None, c, None)?,
            Op::Square { x, s, c } => self.square(x, None, (s != NONE).then_some(s), c, None)?,
            Op::SquareDiffSub { x, m, k, c } => self.square(x, Some(m), None, c, Some(k))?,
            Op::SquareSub { x, k, c } => self.square(x, None, None, c, Some(k))?,
            Op::SelectNeg { g, a, e } => self.select_neg(g, a, e)?,
            Op::SelectLatent { i, t, e } => self.select_latent(i, None, t, e)?,
            Op::SelectLessLatent { i, b, t, e } => self.select_latent(i, Some(b), t, e)?,
            Op::SelectChain {
                base,
                from,
                to,
                t,
                e,
            } => self.select_chain(base, from, to, t, e)?,
        };
        self.cache.set(d, step.out);
        self.note_reads()?;
        self.store(index, step.out, d)
    }

    /// Stores pair `d`, the value of step `index`, in its place `out` where something reads
    /// it from memory (first pass: always, noting who wrote the place).
    fn store(&mut self, index: usize, out: u32, d: usize) -> Result<(), IcedError> {
        let store = match &mut self.stores {
            Stores::Finding { writer, .. } => {
                let p = out as usize;
                if writer.len() <= p {
                    writer.resize(p + 1, NONE);
                }
                writer[p] = index as u32;
                true
            }
            Stores::Only(needed) => needed[index] || out < self.pinned,
        };
        if store {
            for h in 0..2 {
                self.a.vmovupd(self.slot_at(out, h), ZMM[2 * d + h])?;
            }
        }
        Ok(())
    }

    /// Parameter `k` broadcast into a new pair.
    fn param(&mut self, k: u32) -> Result<usize, IcedError> {
        let d = self.cache.take(&[]);
        let at = match self.moving(|l| l.word(Unit::Param, k)) {
            Some((reg, scale)) => qword_ptr(r13 + reg * scale + 8 * k as i32),
            None => qword_ptr(r13 + 8 * k as i32),
        };
        for h in 0..2 {
            self.a.vbroadcastsd(ZMM[2 * d + h], at)?;
        }
        Ok(d)
    }

    /// Latent `i` (its noise reparameterised) into a new pair.
    fn latent_value(&mut self, i: u32) -> Result<usize, IcedError> {
        let d = self.cache.take(&[]);
        self.latent_factors(i)?;
        for h in 0..2 {
            self.latent(ZMM[2 * d + h], h)?;
        }
        Ok(d)
    }

    /// `op(a)` into a new pair: a routine's call (`exp`, `ln`) or an instruction.
    fn unary(&mut self, op: Unary, a: u32) -> Result<usize, IcedError> {
        let x = self.cache.find(a);
        match op {
            Unary::Log => self.by_routine(LN, x),
            Unary::Exp => self.by_routine(EXP, x),
            Unary::Neg | Unary::Sqrt => self.by_instruction(op == Unary::Neg, x),
            Unary::Log1p
            | Unary::Expm1
            | Unary::Softplus
            | Unary::Sigmoid
            | Unary::Tanh
            | Unary::Sin
            | Unary::Cos
            | Unary::Lgamma
            | Unary::Probit
            | Unary::NormalCdf
            | Unary::Powi(_) => unreachable!("no inline form of {op} here"),
        }
    }

    /// Routine `routine` (`LN` or `EXP`) of `x` into a new pair.
    fn by_routine(&mut self, routine: usize, x: Operand) -> Result<usize, IcedError> {
        self.elementary(routine, x)?;
        let d = self.cache.take(&[]);
        for h in 0..2 {
            self.a.vmovapd(ZMM[2 * d + h], set(h).x[1])?;
        }
        Ok(d)
    }

    /// `-x` (`neg`) or `sqrt(x)` into a new pair.
    fn by_instruction(&mut self, neg: bool, x: Operand) -> Result<usize, IcedError> {
        let d = self.cache.take(&[x]);
        for h in 0..2 {
            let r = ZMM[2 * d + h];
            match (neg, x) {
                (true, Operand::Pair(p)) => self.a.vxorpd(r, ZMM[2 * p + h], SIGN)?,
                (true, Operand::Slot(s)) => self.a.vxorpd(r, SIGN, self.slot_at(s, h))?,
                (false, Operand::Pair(p)) => self.a.vsqrtpd(r, ZMM[2 * p + h])?,
                (false, Operand::Slot(s)) => self.a.vsqrtpd(r, self.slot_at(s, h))?,
            }
        }
        Ok(d)
    }

    /// The sum chain `((base + t1) + t2) + ...` of the terms `from..to` into a new pair.
    fn sum_chain(&mut self, base: u32, from: u32, to: u32) -> Result<usize, IcedError> {
        let x = self.cache.find(base);
        let terms = self.terms(from, to);
        let mut keep = terms.clone();
        keep.push(x);
        Ok(match self.cache.free(&keep) {
            Some(d) => {
                for h in 0..2 {
                    self.chain(ZMM[2 * d + h], x, from, to, &terms, h)?;
                }
                d
            }
            // Every pair holds an operand: each half is summed in a scratch register and
            // then written over its half of a pair, whose term that half of the sum has read.
            None => {
                let d = self.cache.take(&[]);
                for h in 0..2 {
                    self.chain(X[4], x, from, to, &terms, h)?;
                    self.a.vmovapd(ZMM[2 * d + h], X[4])?;
                }
                d
            }
        })
    }

    /// A smoothed if-statement into a new pair: its weights computed (or read back, with
    /// `reuse`), kept at `cache` where read later, and the branches weighted.
    fn smoothed_if(
        &mut self,
        g: u32,
        t: u32,
        e: u32,
        cache: u32,
        product: bool,
        reuse: bool,
    ) -> Result<usize, IcedError> {
        if !reuse {
            // Both halves' weights in one call, which loses the routines' pairs.
            self.smooth_weights(self.cache.find(g))?;
            self.cache.lose_routine_pairs();
        }
        let (y, z) = (self.cache.find(t), self.cache.find(e));
        let d = self.cache.take(&[y, z]);
        let keep = cache != UNREAD;
        if reuse || keep {
            self.a.mov(rcx, qword_ptr(rbx + frame::WEIGHTS))?;
        }
        for h in 0..2 {
            let (we, wt) = if reuse {
                self.a.vmovupd(X[1], self.weight_at(cache, 0, h))?;
                self.a.vmovupd(X[2], self.weight_at(cache, 1, h))?;
                (X[1], X[2])
            } else {
                let (we, wt) = (set(h).x[1], set(h).x[2]);
                if keep {
                    self.keep_weights(cache, product, h, we, wt)?;
                }
                (we, wt)
            };
            match self.indicators.between(t, e) {
                Some(which) => self.indicator(d, h, which, we, wt)?,
                None => self.smooth_forward(d, h, y, z, we, wt)?,
            }
        }
        Ok(d)
    }

    /// `t` where `g < 0`, else `e`, into a new pair (a crisp if-statement).
    fn select(&mut self, g: u32, t: u32, e: u32) -> Result<usize, IcedError> {
        let (x, y, z) = (self.cache.find(g), self.cache.find(t), self.cache.find(e));
        let d = self.cache.take(&[x, y, z]);
        for h in 0..2 {
            self.negative(x, h)?;
            self.blend(d, h, y, z)?;
        }
        Ok(d)
    }

    /// `t` where `a op b < 0` (`op` a sum or difference), else `e`, into a new pair.
    fn select_by(
        &mut self,
        op: Binary,
        a: u32,
        b: u32,
        t: u32,
        e: u32,
    ) -> Result<usize, IcedError> {
        let (p, q) = (self.cache.find(a), self.cache.find(b));
        let (y, z) = (self.cache.find(t), self.cache.find(e));
        let d = self.cache.take(&[p, q, y, z]);
        for h in 0..2 {
            let pa = self.reg(p, h, X[4])?;
            self.binary(op, X[4], pa, q, h)?;
            self.a.vcmppd(k1, X[4], ZERO, LT_OQ)?;
            self.blend(d, h, y, z)?;
        }
        Ok(d)
    }

    /// The stand-in of `op(a)` (`checked.rs`) into a new pair, inline.
    fn stand_in(&mut self, op: Unary, a: u32) -> Result<usize, IcedError> {
        let x = self.cache.find(a);
        let d = self.cache.take(&[x]);
        for h in 0..2 {
            let xa = self.reg(x, h, X[4])?;
            match op {
                Unary::Log => self.ln_stand_in(X[5], xa)?,
                Unary::Log1p => {
                    // `ln_stand_in(1 + x)`.
                    self.a.vaddpd(X[6], xa, k(routines::C_ONE))?;
                    self.ln_stand_in(X[5], X[6])?;
                }
                Unary::Softplus => {
                    // `max(x, 0)` (zero where `x` is zero or below, the second operand where
                    // either is NaN), then `x + x` where `x` is NaN.
                    self.a.vmaxpd(X[5], xa, ZERO)?;
                    self.a.vcmppd(k1, xa, xa, UNORD_Q)?;
                    self.a.vaddpd(X[5].k1(), xa, xa)?;
                }
                Unary::Neg
                | Unary::Exp
                | Unary::Expm1
                | Unary::Sqrt
                | Unary::Sigmoid
                | Unary::Tanh
                | Unary::Sin
                | Unary::Cos
                | Unary::Lgamma
                | Unary::Probit
                | Unary::NormalCdf
                | Unary::Powi(_) => unreachable!("no stand-in for {op:?}"),
            }
            self.a.vmovapd(ZMM[2 * d + h], X[5])?;
        }
        Ok(d)
    }

    /// The Poisson term `c ln(r) - r` into a new pair (the product's operand order cannot
    /// change its bits: `c` is a finite count): the logarithm by the routine, or its stand-in
    /// inline.
    fn poisson_term(&mut self, r: u32, c: f64, stand_in: bool) -> Result<usize, IcedError> {
        let x = self.cache.find(r);
        if stand_in {
            let d = self.cache.take(&[x]);
            let ci = self.constant(c);
            for h in 0..2 {
                let xa = self.reg(x, h, X[4])?;
                self.ln_stand_in(X[5], xa)?;
                self.a.vmulpd(X[5], X[5], k(ci))?;
                self.a.vsubpd(ZMM[2 * d + h], X[5], xa)?;
            }
            return Ok(d);
        }
        // The routine leaves `r` where it took it.
        self.elementary(LN, x)?;
        let d = self.cache.take(&[]);
        let ci = self.constant(c);
        for h in 0..2 {
            // Through a scratch register: `d` may be the pair that held `r`.
            self.a.vmulpd(X[4], set(h).x[1], k(ci))?;
            self.a.vsubpd(ZMM[2 * d + h], X[4], set(h).x[0])?;
        }
        Ok(d)
    }

    /// `-a` where `g < 0`, else `e`, into a new pair.
    fn select_neg(&mut self, g: u32, a: u32, e: u32) -> Result<usize, IcedError> {
        let (x, y, z) = (self.cache.find(g), self.cache.find(a), self.cache.find(e));
        let d = self.cache.take(&[x, y, z]);
        for h in 0..2 {
            self.negative(x, h)?;
            match y {
                Operand::Pair(p) => self.a.vxorpd(X[4], ZMM[2 * p + h], SIGN)?,
                Operand::Slot(s) => self.a.vxorpd(X[4], SIGN, self.slot_at(s, h))?,
            }
            let r = ZMM[2 * d + h];
            let ea = self.reg(z, h, r)?;
            self.a.vblendmpd(r.k1(), ea, X[4])?;
        }
        Ok(d)
    }

    /// `t` where latent `i` (minus `b`, where given) is negative, else `e`, into a new pair.
    fn select_latent(
        &mut self,
        i: u32,
        b: Option<u32>,
        t: u32,
        e: u32,
    ) -> Result<usize, IcedError> {
        let b = b.map(|b| self.cache.find(b));
        let (y, z) = (self.cache.find(t), self.cache.find(e));
        let d = self.cache.take(&[y, z, b.unwrap_or(Operand::Slot(NONE))]);
        self.latent_factors(i)?;
        for h in 0..2 {
            self.latent(X[4], h)?;
            if let Some(b) = b {
                self.binary(Binary::Sub, X[4], X[4], b, h)?;
            }
            self.a.vcmppd(k1, X[4], ZERO, LT_OQ)?;
            self.blend(d, h, y, z)?;
        }
        Ok(d)
    }

    /// `t` where the sum chain of `base` and the terms `from..to` is negative, else `e`, into
    /// a new pair.
    fn select_chain(
        &mut self,
        base: u32,
        from: u32,
        to: u32,
        t: u32,
        e: u32,
    ) -> Result<usize, IcedError> {
        let x = self.cache.find(base);
        let terms = self.terms(from, to);
        let (y, z) = (self.cache.find(t), self.cache.find(e));
        let mut keep = terms.clone();
        keep.extend([x, y, z]);
        // The sum goes through a scratch register, so with every pair holding an operand only
        // the branches' pairs must survive (each half's guard is summed before the blend
        // writes that half).
        let d = match self.cache.free(&keep) {
            Some(d) => d,
            None => self.cache.take(&[y, z]),
        };
        for h in 0..2 {
            self.chain(X[4], x, from, to, &terms, h)?;
            self.a.vcmppd(k1, X[4], ZERO, LT_OQ)?;
            self.blend(d, h, y, z)?;
        }
        Ok(d)
    }

    /// The operands of the sum-chain terms `from..to`.
    fn terms(&self, from: u32, to: u32) -> Vec<Operand> {
        self.chains[from as usize..to as usize]
            .iter()
            .map(|&(t, _)| self.cache.find(t))
            .collect()
    }

    /// Half `h` of the sum chain `((base + t1) + t2) + ...` of the terms `from..` (operands
    /// `terms`) into `r`, which holds none of them; each addition in its own operand order,
    /// as `kernels::sum_step`.
    fn chain(
        &mut self,
        r: AsmRegisterZmm,
        base: Operand,
        from: u32,
        to: u32,
        terms: &[Operand],
        h: usize,
    ) -> Result<(), IcedError> {
        let mut acc = self.reg(base, h, r)?;
        for (&(_, right), &t) in self.chains[from as usize..to as usize].iter().zip(terms) {
            if right {
                // `t + acc`: the term is the first operand.
                let ta = self.reg(t, h, X[5])?;
                self.a.vaddpd(r, ta, acc)?;
            } else {
                self.binary(Binary::Add, r, acc, t, h)?;
            }
            acc = r;
        }
        if acc != r {
            self.a.vmovapd(r, acc)?;
        }
        Ok(())
    }

    /// Broadcasts latent `i`'s scale into `X[0]` and location into `X[1]`, and puts its
    /// noise's offset in `rax`.
    /// Inside a loop, a moving latent's are its first iteration's plus the loop's registers.
    fn latent_factors(&mut self, i: u32) -> Result<(), IcedError> {
        let word = self.moving(|l| l.word(Unit::Latent, i));
        let noise = self.moving(|l| l.noise(i));
        let a = &mut self.a;
        if !self.latent_pointers {
            a.mov(SCALE_AT, qword_ptr(rbx + frame::SCALE))?;
            a.mov(LOC_AT, qword_ptr(rbx + frame::LOC))?;
            self.latent_pointers = true;
        }
        a.imul_3(rax, r15, i as i32)?;
        match noise {
            Some((reg, 1)) => a.add(rax, reg)?,
            Some((reg, scale)) => a.lea(rax, qword_ptr(rax + reg * scale))?,
            None => {}
        }
        let disp = 8 * i as i32;
        match word {
            Some((reg, scale)) => {
                a.vbroadcastsd(X[0], qword_ptr(SCALE_AT + reg * scale + disp))?;
                a.vbroadcastsd(X[1], qword_ptr(LOC_AT + reg * scale + disp))
            }
            None => {
                a.vbroadcastsd(X[0], qword_ptr(SCALE_AT + disp))?;
                a.vbroadcastsd(X[1], qword_ptr(LOC_AT + disp))
            }
        }
    }

    /// Half `h` of the latent whose factors [`Self::latent_factors`] loaded, into `r`:
    /// `loc + scale * s`, multiplied then added (never fused), as `Latents::load`.
    fn latent(&mut self, r: AsmRegisterZmm, h: usize) -> Result<(), IcedError> {
        let noise = zmmword_ptr(r14 + rax + (h as i32 * HALF_BYTES));
        self.a.vmulpd(r, X[0], noise)?;
        self.a.vaddpd(r, X[1], r)
    }

    /// A fused density term, `c * u^2` with `u = (x - m) / s` (either part left out where
    /// absent), minus `k` where given: each operation as the unfused instruction's (the
    /// square as `u * u`, what `powi(2)` computes). Returns the result's pair.
    fn square(
        &mut self,
        x: u32,
        m: Option<u32>,
        s: Option<u32>,
        c: f64,
        k: Option<u32>,
    ) -> Result<usize, IcedError> {
        let none = Operand::Slot(NONE);
        let find = |o: Option<u32>| o.map_or(none, |o| self.cache.find(o));
        let (xo, mo, so, ko) = (self.cache.find(x), find(m), find(s), find(k));
        let d = self.cache.take(&[xo, mo, so, ko]);
        let ci = self.constant(c) as i32;
        for h in 0..2 {
            let r = ZMM[2 * d + h];
            let mut u = self.reg(xo, h, r)?;
            if m.is_some() {
                self.binary(Binary::Sub, r, u, mo, h)?;
                u = r;
            }
            if s.is_some() {
                self.binary(Binary::Div, r, u, so, h)?;
                u = r;
            }
            self.a.vmulpd(r, u, u)?;
            self.a.vmulpd(r, r, qword_bcst(rbp + 8 * ci))?;
            if k.is_some() {
                self.binary(Binary::Sub, r, r, ko, h)?;
            }
        }
        Ok(d)
    }

    /// `elementary::ln_stand_in` of `x` into `to` (not `x`): the exponent as a double
    /// (`vgetexppd`: `-inf` at zero, `+inf` at `+inf`, NaN quieted), times `ln 2`, and NaN
    /// where `x < 0` (`-inf` included), as the scalar function computes them.
    fn ln_stand_in(&mut self, to: AsmRegisterZmm, x: AsmRegisterZmm) -> Result<(), IcedError> {
        self.a.vgetexppd(to, x)?;
        self.a.vmulpd(to, to, k(routines::C_LN_2))?;
        self.a.vcmppd(k1, x, ZERO, LT_OQ)?;
        self.a
            .vbroadcastsd(to.k1(), qword_ptr(rbp + 8 * routines::C_NAN as i32))
    }

    /// The index of a new constant `c` in the table.
    fn constant(&mut self, c: f64) -> usize {
        self.consts.push(c);
        self.consts.len() - 1
    }

    /// Both halves of operand `x` into the routines' operand registers (`x[0]` of each set).
    fn routine_operand(&mut self, x: Operand) -> Result<(), IcedError> {
        for h in 0..2 {
            let to = set(h).x[0];
            match x {
                Operand::Pair(p) if ZMM[2 * p + h] == to => {}
                Operand::Pair(p) => self.a.vmovapd(to, ZMM[2 * p + h])?,
                Operand::Slot(s) => self.a.vmovupd(to, self.slot_at(s, h))?,
            }
        }
        Ok(())
    }

    /// Routine `routine` (`LN` or `EXP`: `elementary::ln` or `exp`) of both halves of `x`,
    /// into `x[1]` of each set; the cache loses the routines' pairs.
    fn elementary(&mut self, routine: usize, x: Operand) -> Result<(), IcedError> {
        self.routine_operand(x)?;
        self.a.call(self.routine_at[routine])?;
        self.cache.lose_routine_pairs();
        Ok(())
    }

    /// Encodes the instructions written since the last part, after `bytes` (drops them in
    /// the first pass, `finding`).
    fn assemble_part(&mut self, bytes: &mut Parts, finding: bool) -> Result<(), IcedError> {
        let mut part = std::mem::replace(&mut self.a, CodeAssembler::new(64)?);
        if finding {
            return Ok(());
        }
        let at = bytes.len() as u64;
        bytes.push(part.assemble(at)?);
        Ok(())
    }

    /// `kernels::smooth_weights` of both halves of the guard `g`: the else weights into
    /// `x[1]` and the then weights into `x[2]` of each set.
    fn smooth_weights(&mut self, g: Operand) -> Result<(), IcedError> {
        // x = g * (1 / eta), then the shared routine.
        for h in 0..2 {
            let x = set(h).x[0];
            match g {
                Operand::Pair(p) => {
                    self.a
                        .vmulpd(x, ZMM[2 * p + h], qword_bcst(rbx + frame::INV_ETA))?
                }
                Operand::Slot(s) => {
                    self.a.vmovupd(x, self.slot_at(s, h))?;
                    self.a.vmulpd(x, x, qword_bcst(rbx + frame::INV_ETA))?;
                }
            }
        }
        self.a.call(self.routine_at[WEIGHTS])
    }

    /// `keep_weights` of half `h` (the weights' places at `rcx`), from the else and then
    /// weights in `we` and `wt`.
    fn keep_weights(
        &mut self,
        cache: u32,
        product: bool,
        h: usize,
        we: AsmRegisterZmm,
        wt: AsmRegisterZmm,
    ) -> Result<(), IcedError> {
        if product {
            self.a.vmulpd(X[3], wt, we)?; // wt * we
            self.a.vmovupd(self.weight_at(cache, 0, h), X[3])
        } else {
            self.a.vmovupd(self.weight_at(cache, 0, h), we)?;
            self.a.vmovupd(self.weight_at(cache, 1, h), wt)
        }
    }

    /// `kernels::smooth_forward` of half `h` into pair `d` where the branches are the
    /// constants 1 and 0 (`which`): `masked(w1, 1) + masked(w0, 0)` is `w1` itself. Weights
    /// are never `-0.0` (`0 + 0` keeps `+0.0`), `w1 * 1` is `w1`, and where the guard is NaN
    /// both weights are the same NaN, which the sum returns.
    fn indicator(
        &mut self,
        d: usize,
        h: usize,
        which: Indicator,
        we: AsmRegisterZmm,
        wt: AsmRegisterZmm,
    ) -> Result<(), IcedError> {
        let w = match which {
            Indicator::Then => wt,
            Indicator::Else => we,
        };
        self.a.vmovapd(ZMM[2 * d + h], w)
    }

    /// `kernels::smooth_forward` of half `h` into pair `d`, with the else and then weights in
    /// `we` and `wt`: `wt t + we e`, a product whose weight is zero replaced by zero.
    fn smooth_forward(
        &mut self,
        d: usize,
        h: usize,
        t: Operand,
        e: Operand,
        we: AsmRegisterZmm,
        wt: AsmRegisterZmm,
    ) -> Result<(), IcedError> {
        let r = ZMM[2 * d + h];
        self.a.vcmppd(k4, wt, ZERO, NEQ_UQ)?;
        match t {
            Operand::Pair(p) => self.a.vmulpd(r.k4().z(), wt, ZMM[2 * p + h])?,
            Operand::Slot(s) => self.a.vmulpd(r.k4().z(), wt, self.slot_at(s, h))?,
        }
        self.a.vcmppd(k5, we, ZERO, NEQ_UQ)?;
        match e {
            Operand::Pair(p) => self.a.vmulpd(X[4].k5().z(), we, ZMM[2 * p + h])?,
            Operand::Slot(s) => self.a.vmulpd(X[4].k5().z(), we, self.slot_at(s, h))?,
        }
        self.a.vaddpd(r, r, X[4])
    }

    /// `r = x op y` on half `h`.
    fn binary(
        &mut self,
        op: Binary,
        r: AsmRegisterZmm,
        x: AsmRegisterZmm,
        y: Operand,
        h: usize,
    ) -> Result<(), IcedError> {
        macro_rules! emit {
            ($f:ident) => {
                match y {
                    Operand::Pair(p) => self.a.$f(r, x, ZMM[2 * p + h]),
                    Operand::Slot(s) => self.a.$f(r, x, self.slot_at(s, h)),
                }
            };
        }
        match op {
            Binary::Add => emit!(vaddpd),
            Binary::Sub => emit!(vsubpd),
            Binary::Mul => emit!(vmulpd),
            Binary::Div => emit!(vdivpd),
            Binary::Pow => unreachable!("no inline form"),
        }
    }

    /// `k1` = half `h` of the guard `g < 0`.
    fn negative(&mut self, g: Operand, h: usize) -> Result<(), IcedError> {
        match g {
            Operand::Pair(p) => self.a.vcmppd(k1, ZMM[2 * p + h], ZERO, LT_OQ),
            Operand::Slot(s) => self.a.vcmppd(k1, ZERO, self.slot_at(s, h), GT_OQ),
        }
    }

    /// Half `h` of pair `d` = `t` where `k1`, else `e`.
    fn blend(&mut self, d: usize, h: usize, t: Operand, e: Operand) -> Result<(), IcedError> {
        let r = ZMM[2 * d + h];
        let ea = self.reg(e, h, r)?;
        match t {
            Operand::Pair(p) => self.a.vblendmpd(r.k1(), ea, ZMM[2 * p + h]),
            Operand::Slot(s) => self.a.vblendmpd(r.k1(), ea, self.slot_at(s, h)),
        }
    }
}
