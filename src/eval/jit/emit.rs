//! The machine code of one forward sweep, at either width (`vector.rs`): each lane step of a
//! layout becomes instructions on a register pair per value (the chunk's two halves of eight
//! lanes in AVX-512; two vectors of four lanes, for each half in turn, in AVX2), with the
//! values it just computed kept in registers for the steps that read them next; steps with
//! no inline form (the elementary functions but `ln` and `sqrt`, and powers) become one call
//! back into the interpreter per run of such steps.
//!
//! Every inline form is the interpreter's own operations on the same operands in the same
//! order (IEEE addition, subtraction, multiplication, division and square root are correctly
//! rounded, a fused multiply-add rounds once as `mul_add` does, a select is a bitwise blend),
//! so the code gives the interpreter's bits. The long ones are routines emitted once before
//! the sweep and called with their operand and results in scratch registers: a smoothed
//! if-statement's weights (`kernels::smooth_weights`: `elementary::exp_of_nonpositive`, then
//! `sigmoid_big_small` and `sigmoid_pair_order`; a plate body's plain weights take
//! `elementary::exp_of_nonpositive_tabled` and `sigmoid_big_small_plain`) and `elementary::ln`
//! (the logarithm and the Poisson term), each called once for both halves. Inlined in every step, they made
//! textmsg's code larger than the instruction cache.
//!
//! Register use (both widths; see `avx512.rs` and `avx2/mod.rs` for their registers): `rbx`
//! the frame, `r12` the values, `r13` the parameters, `r14` the noise of the chunk's (or the
//! half's) first lane, `r15` the distance between two latents' noise, `rbp` the code's
//! constants (the routines' first, then the `c` of fused density terms). Inside a loop over
//! a repeated block (`repeat.rs`, AVX-512 only), `rdx` and `r8`-`r11` advance the moving
//! operands' addresses (`looping.rs`); inside an AVX2 segment's loop over the chunk's two
//! halves, `r12`, `r14` and the frame's weights pointer move by a half per iteration.
//!
//! Here: the two passes over a layout, the calls back, the loops, and what every step shares
//! (places, the store of its value), generic over the width ([`Vector`]). The code of each
//! kind of step is in `emit/steps.rs`, the register cache in `emit/cache.rs`.

use iced_x86::IcedError;
use iced_x86::code_asm::*;

use crate::ir::Binary;

use super::super::instr::{CHUNK, NONE, Op, Step};
use super::indicators::Indicators;
use super::looping::{self, Looping};
use super::repeat::{self, Repeat, Unit};
use super::sweep::{self, Coverage, Stores, Sweep, inline};
use super::vector::{Src, Vector};
use super::{Parts, entry, frame};

pub(super) mod cache;
mod steps;

use cache::{Cache, Operand};

/// Bytes of one slot (all its lanes) and of one half.
const SLOT_BYTES: i32 = (CHUNK * 8) as i32;
const HALF_BYTES: i32 = SLOT_BYTES / 2;

/// Steps of one AVX2 segment at most ([`Vector::LOOPS_OVER_HALVES`]; the reverse code's too):
/// its loop body runs twice (four times in the reverse code), and a body of a few hundred
/// steps (some 15 KB) stays in the instruction cache between its iterations. A longer run of
/// inline steps is cut into several segments (its values crossing a cut go through memory).
pub(super) const SEGMENT_STEPS: usize = 256;

/// The code of `steps` (the layout's lane steps) at width `W` for the semantics `crisp` or
/// smoothed (with the plain weights where `plain`), reading latents as noise reparameterised
/// on load (or as the noise itself where `noise_latents`: see [`Emitter::noise_latents`]),
/// with the offset of its entry point.
/// The routines come first, then the sweep, assembled in parts of [`sweep::PART_STEPS`] steps, each
/// at its final offset (calls to the routines are relative, so the code runs wherever it is
/// mapped).
pub(super) fn forward<W: Vector>(
    steps: &[Step],
    chains: &[(u32, bool)],
    constants: &[(u32, f64)],
    pinned: usize,
    crisp: bool,
    plain: bool,
    noise_latents: bool,
) -> Result<(Parts, usize, Vec<f64>, Coverage), IcedError> {
    let indicators = Indicators::of(constants);
    let repeats = if W::LOOPS_OVER_HALVES {
        Vec::new()
    } else {
        loops(steps, &indicators, crisp)
    };
    sweep::forward(steps, chains, W::routines(plain), |stores, routine_at| {
        Ok(Emitter::<W> {
            a: CodeAssembler::new(64)?,
            routine_at,
            cache: Cache::with(W::PAIRS, W::ROUTINE_PAIRS),
            chains,
            consts: W::table(),
            crisp,
            coverage: Coverage::default(),
            stores,
            pinned: pinned as u32,
            indicators: &indicators,
            latent_pointers: false,
            noise_latents,
            looping: None,
            repeats: &repeats,
            next_repeat: 0,
            width: std::marker::PhantomData,
        })
    })
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

/// Which routine: indices into `Emitter::routine_at`.
const WEIGHTS: usize = 0;
const LN: usize = 1;
const EXP: usize = 2;

struct Emitter<'a, W: Vector> {
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
    /// Whether every latent is its noise itself (`Tape::with_noise_latents`: location `-0.0`
    /// and scale 1, checked before each run), so that a latent is its noise loaded, without
    /// the location and scale: `-0.0 + 1 * s` is `s`.
    noise_latents: bool,
    /// Inside a loop over a repeated block: where its moving operands are.
    looping: Option<Looping>,
    /// The runs of repeated blocks run as loops, with their registers, by their first step.
    repeats: &'a [(Repeat, Looping)],
    /// The first of `repeats` not yet emitted.
    next_repeat: usize,
    width: std::marker::PhantomData<W>,
}

impl<W: Vector> Sweep for Emitter<'_, W> {
    fn assembler(&mut self) -> &mut CodeAssembler {
        &mut self.a
    }

    fn cache(&self) -> &Cache {
        &self.cache
    }

    fn stores(&mut self) -> &mut Stores {
        &mut self.stores
    }

    fn coverage(&mut self) -> &mut Coverage {
        &mut self.coverage
    }

    fn prologue(&mut self) -> Result<(), IcedError> {
        entry::enter(
            &mut self.a,
            &[
                (r13, frame::PARAMS),
                (r14, frame::NOISE),
                (r15, frame::STRIDE),
            ],
            W::constants,
        )
    }

    fn epilogue(&mut self) -> Result<(), IcedError> {
        entry::leave(&mut self.a)
    }

    /// A repeated block's run as a loop where one starts at `k`, else step `k`; or, looping
    /// over the halves, the inline steps from `k` on, up to [`SEGMENT_STEPS`] of them, as
    /// one segment.
    fn inline_steps(&mut self, steps: &[Step], k: usize) -> Result<usize, IcedError> {
        if W::LOOPS_OVER_HALVES {
            let mut to = k;
            while to < steps.len() && to - k < SEGMENT_STEPS && inline(&steps[to].op) {
                to += 1;
            }
            self.segment(steps, k, to)?;
            self.coverage.inline += to - k;
            return Ok(to);
        }
        let repeats = self.repeats;
        match repeats
            .get(self.next_repeat)
            .filter(|(run, _)| run.start == k)
        {
            Some((run, looping)) => {
                self.next_repeat += 1;
                self.repeat(steps, run, looping)?;
                self.coverage.inline += run.len();
                self.coverage.looped += run.len();
                Ok(k + run.len())
            }
            None => {
                self.step(k, &steps[k])?;
                self.coverage.inline += 1;
                Ok(k + 1)
            }
        }
    }

    /// Runs steps `from..to` in the interpreter, which empties the register cache.
    fn call_back(&mut self, from: usize, to: usize) -> Result<(), IcedError> {
        entry::call_back(&mut self.a, from, to, W::constants)?;
        self.cache.clear();
        // The call may change any caller-saved register.
        self.latent_pointers = false;
        Ok(())
    }

    fn finish(self) -> (Vec<f64>, Coverage) {
        (self.consts, self.coverage)
    }
}

/// The latents' scales and locations, kept in caller-saved registers between latent loads:
/// each load read both pointers from the frame again, 8 bytes of code a latent (3 % of the
/// survey's code per student, which on the 10,000-student survey streams from L3). The
/// routines touch no general register.
const SCALE_AT: AsmRegister64 = rsi;
const LOC_AT: AsmRegister64 = rdi;

impl<W: Vector> Emitter<'_, W> {
    /// Register `h` of value place `slot` (as the first iteration has it, inside a loop
    /// over a repeated block; of the current half, inside a segment's loop over them).
    fn slot_at(&self, slot: u32, h: usize) -> AsmMemoryOperand {
        let disp = slot as i32 * SLOT_BYTES + h as i32 * W::BYTES;
        match self.moving(|l| l.place(Unit::Slot, slot)) {
            Some((reg, scale)) => W::ptr(r12 + reg * scale + disp),
            None => W::ptr(r12 + disp),
        }
    }

    /// Register `h` of weight place `cache` (and `next` after it), at `rcx`.
    fn weight_at(&self, cache: u32, next: u32, h: usize) -> AsmMemoryOperand {
        let disp = (cache + next) as i32 * SLOT_BYTES + h as i32 * W::BYTES;
        match self.moving(|l| l.place(Unit::Weight, cache)) {
            Some((reg, scale)) => W::ptr(rcx + reg * scale + disp),
            None => W::ptr(rcx + disp),
        }
    }

    /// Steps `from..to` (all with an inline form) as a loop over the chunk's two halves
    /// (AVX2: a pair holds a half), moving the values', the noise's and the weights' bases by
    /// a half per iteration. The cache starts empty, so a value read in a later segment is
    /// read from memory and the first pass stores it.
    fn segment(&mut self, steps: &[Step], from: usize, to: usize) -> Result<(), IcedError> {
        self.cache.reset();
        let mut top = self.a.create_label();
        self.a.set_label(&mut top)?;
        for (k, step) in steps.iter().enumerate().take(to).skip(from) {
            self.step(k, step)?;
        }
        let a = &mut self.a;
        a.add(r12, HALF_BYTES)?;
        a.add(r14, HALF_BYTES)?;
        a.add(qword_ptr(rbx + frame::WEIGHTS), HALF_BYTES)?;
        a.mov(rax, qword_ptr(rbx + frame::VALUES))?;
        a.add(rax, SLOT_BYTES)?;
        a.cmp(r12, rax)?;
        a.jne(top)?;
        a.sub(r12, SLOT_BYTES)?;
        a.sub(r14, SLOT_BYTES)?;
        a.sub(qword_ptr(rbx + frame::WEIGHTS), SLOT_BYTES)?;
        // The registers hold the last half's values.
        self.cache.reset();
        Ok(())
    }

    /// Inside a loop, the register and scale `find` gives for a moving index.
    fn moving(
        &self,
        find: impl Fn(&Looping) -> Option<(AsmRegister64, i32)>,
    ) -> Option<(AsmRegister64, i32)> {
        self.looping.as_ref().and_then(find)
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
                let top = looping.enter(&mut self.a)?;
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

    /// Register `h` of an operand as a register: its cached register, or `scratch` loaded.
    fn reg(&mut self, o: Operand, h: usize, scratch: W::Reg) -> Result<W::Reg, IcedError> {
        Ok(match o {
            Operand::Pair(p) => W::pair(p, h),
            Operand::Slot(s) => {
                let operand = Src::Mem(self.slot_at(s, h));
                W::mov(&mut self.a, scratch, operand)?;
                scratch
            }
        })
    }

    /// Register `h` of an operand as an instruction's operand: its cached register, or its
    /// place.
    fn src(&self, o: Operand, h: usize) -> Src<W::Reg> {
        match o {
            Operand::Pair(p) => Src::Reg(W::pair(p, h)),
            Operand::Slot(s) => Src::Mem(self.slot_at(s, h)),
        }
    }

    /// First pass: marks the values of the places looked up and not found since the last call
    /// as needed in memory.
    fn note_reads(&mut self) -> Result<(), IcedError> {
        self.stores.note_missed(self.cache.take_missed());
        Ok(())
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
                    let r = W::pair(d, h);
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
        let store = self.stores.store(index, out, self.pinned);
        if store {
            for h in 0..2 {
                let operand = self.slot_at(out, h);
                W::store(&mut self.a, operand, W::pair(d, h))?;
            }
        }
        Ok(())
    }

    /// The index of a new constant `c` in the table.
    fn constant(&mut self, c: f64) -> usize {
        W::constant(&mut self.consts, c)
    }

    /// Both halves of operand `x` into the routines' operand registers (`x[0]` of each set).
    fn routine_operand(&mut self, x: Operand) -> Result<(), IcedError> {
        for h in 0..2 {
            let to = W::routine(h, 0);
            match x {
                Operand::Pair(p) if W::pair(p, h) == to => {}
                _ => {
                    let operand = self.src(x, h);
                    W::mov(&mut self.a, to, operand)?
                }
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
}
