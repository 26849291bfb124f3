//! The forward sweep compiled for CPUs with AVX2 and FMA but not AVX-512: the AVX-512 code's
//! steps (`emit.rs`, `emit/steps.rs`) on vectors of four lanes, none of its instructions
//! AVX-512's.
//!
//! Why a loop: AVX2 has 16 vector registers where AVX-512 has 32. Holding a chunk's 16 lanes
//! as four registers per value would leave the register cache two values; instead each run
//! of steps with an inline form (a segment, between two calls back into the interpreter, of
//! at most [`SEGMENT_STEPS`] steps) is one loop over the chunk's two halves, each value a
//! pair of registers (four lanes each, as the AVX-512 code's halves). Why not one register
//! a value, over four quarters: a step's long routines (a smoothed if-statement's weights,
//! the logarithm) are each one dependency chain, and with one vector a step nothing
//! overlapped them (textmsg's smoothed sweep ran 0.67x the interpreter's AVX2 build); two
//! calls back to back overlap in the CPU's reordering window. Lanes never mix (every step is
//! per lane), so running a segment's steps half by half gives each lane the operations the
//! interpreter gives it, in the same order: the same bits. A half is addressed by moving
//! the values' (`r12`) and the noise's (`r14`) bases and the frame's weights pointer by 64
//! bytes per iteration; the calls back run after a segment's last half, on whole chunks.
//! The cache starts empty in every segment, so a value read in a later segment is read from
//! memory and the first pass stores it.
//!
//! What differs from the AVX-512 code besides the width: no mask registers (a comparison
//! gives a vector of all-ones lanes, selects are `vblendvpd`, zero-masking is `vandpd`), no
//! broadcast operands (the constant table holds each constant four times), and the
//! exponent arithmetic of `exp` and the logarithms' stand-ins in integer instructions
//! (`routines.rs`).
//!
//! Register use: `rbx` the frame, `r12` the values, `r13` the parameters, `r14` the noise of
//! the quarter's first lane, `r15` the distance between two latents' noise, `rbp` the
//! constants; `ymm0..ymm7` cache four values (pair `p` is `ymm2p`, `ymm2p+1`), `ymm8..ymm15`
//! are scratch; a routine uses all sixteen (a call loses every cached value). Repeated
//! blocks are not looped over (`repeat.rs`): each step is emitted once.

use iced_x86::IcedError;
use iced_x86::code_asm::*;

use super::super::instr::{CHUNK, Step};
use super::emit::cache::{Cache, Operand};
use super::emit::{Coverage, inline};
use super::indicators::Indicators;
use super::sweep::{self, Stores, Sweep};
use super::{Parts, frame};

pub(super) mod reverse;
mod routines;
mod steps;

/// Steps of one segment at most: its loop body runs four times, and a body of a few hundred
/// steps (some 15 KB) stays in the instruction cache between its iterations. A longer run of
/// inline steps is cut into several segments (its values crossing a cut go through memory).
const SEGMENT_STEPS: usize = 256;

/// Bytes of one slot (all its lanes), of the half a loop's iteration runs, and of one
/// register's lanes.
const SLOT_BYTES: i32 = (CHUNK * 8) as i32;
const HALF_BYTES: i32 = SLOT_BYTES / 2;
const VECTOR_BYTES: i32 = 32;

/// Registers a value takes (and vectors of a half).
const H: usize = 2;

/// Every vector register by number.
const YMM: [AsmRegisterYmm; 16] = [
    ymm0, ymm1, ymm2, ymm3, ymm4, ymm5, ymm6, ymm7, ymm8, ymm9, ymm10, ymm11, ymm12, ymm13, ymm14,
    ymm15,
];

/// Register pairs that cache values (`ymm0..ymm7`); a routine's call loses all of them.
const CACHED: usize = 4;
const ROUTINE_CACHED: std::ops::Range<usize> = 0..CACHED;

/// Scratch registers (the routines' second set).
const X: [AsmRegisterYmm; 8] = routines::SETS[1];

/// The routines' registers for vector `h` of a half (`x[0]` their operand).
fn set(h: usize) -> [AsmRegisterYmm; 8] {
    routines::SETS[h]
}

/// Register `h` of pair `p`.
fn pair(p: usize, h: usize) -> AsmRegisterYmm {
    YMM[H * p + h]
}

/// The latents' scales and locations, kept between latent loads (as in `emit.rs`).
const SCALE_AT: AsmRegister64 = rsi;
const LOC_AT: AsmRegister64 = rdi;

/// Which routine: indices into `Emitter::routine_at`.
const WEIGHTS: usize = 0;
const LN: usize = 1;
const EXP: usize = 2;

/// The AVX2 code of `steps`, as `emit::forward` gives the AVX-512 code (with the plain
/// weights where `plain`): routines first, then the sweep, with its entry's offset, its
/// constants and its coverage.
pub(super) fn forward(
    steps: &[Step],
    chains: &[(u32, bool)],
    constants: &[(u32, f64)],
    pinned: usize,
    crisp: bool,
    plain: bool,
) -> Result<(Parts, usize, Vec<f64>, Coverage), IcedError> {
    let indicators = Indicators::of(constants);
    let weights = if plain {
        routines::weights_plain
    } else {
        routines::weights
    };
    sweep::forward(
        steps,
        chains,
        [weights, routines::ln, routines::exp],
        |stores, routine_at| {
            Ok(Emitter {
                a: CodeAssembler::new(64)?,
                routine_at,
                cache: Cache::with(CACHED, ROUTINE_CACHED),
                chains,
                consts: routines::table(),
                crisp,
                coverage: Coverage::default(),
                stores,
                pinned: pinned as u32,
                indicators: &indicators,
                latent_pointers: false,
            })
        },
    )
}

struct Emitter<'a> {
    a: CodeAssembler,
    routine_at: [u64; 3],
    cache: Cache,
    chains: &'a [(u32, bool)],
    /// The constants the code reads from `rbp`, each four times.
    consts: Vec<f64>,
    crisp: bool,
    coverage: Coverage,
    stores: Stores,
    pinned: u32,
    indicators: &'a Indicators,
    /// Whether [`SCALE_AT`] and [`LOC_AT`] hold the frame's scale and location pointers.
    latent_pointers: bool,
}

impl Sweep for Emitter<'_> {
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

    /// Saves the callee-saved registers, puts the frame in `rbx` and loads the bases.
    fn prologue(&mut self) -> Result<(), IcedError> {
        let a = &mut self.a;
        for r in [rbx, rbp, r12, r13, r14, r15] {
            a.push(r)?;
        }
        // Six pushes and the return address: 56 bytes; calls need 16-byte alignment.
        a.sub(rsp, 8)?;
        a.mov(rbx, rdi)?;
        for (r, field) in [
            (r12, frame::VALUES),
            (r13, frame::PARAMS),
            (r14, frame::NOISE),
            (r15, frame::STRIDE),
            (rbp, frame::CONSTS),
        ] {
            a.mov(r, qword_ptr(rbx + field))?;
        }
        Ok(())
    }

    fn epilogue(&mut self) -> Result<(), IcedError> {
        let a = &mut self.a;
        a.vzeroupper()?;
        a.add(rsp, 8)?;
        for r in [r15, r14, r13, r12, rbp, rbx] {
            a.pop(r)?;
        }
        a.ret()
    }

    /// The inline steps from `k` on, up to [`SEGMENT_STEPS`] of them, as one segment.
    fn inline_steps(&mut self, steps: &[Step], k: usize) -> Result<usize, IcedError> {
        let mut to = k;
        while to < steps.len() && to - k < SEGMENT_STEPS && inline(&steps[to].op) {
            to += 1;
        }
        self.segment(steps, k, to)?;
        self.coverage.inline += to - k;
        Ok(to)
    }

    /// Runs steps `from..to` in the interpreter (on whole chunks).
    fn call_back(&mut self, from: usize, to: usize) -> Result<(), IcedError> {
        let a = &mut self.a;
        a.mov(rdi, rbx)?;
        a.mov(esi, from as u32)?;
        a.mov(edx, to as u32)?;
        a.call(qword_ptr(rbx + frame::CALL_BACK))?;
        self.cache.clear();
        self.latent_pointers = false;
        Ok(())
    }

    fn finish(self) -> (Vec<f64>, Coverage) {
        (self.consts, self.coverage)
    }
}

impl Emitter<'_> {
    /// Vector `h` of the current half of value place `slot`.
    fn slot_at(&self, slot: u32, h: usize) -> AsmMemoryOperand {
        ymmword_ptr(r12 + slot as i32 * SLOT_BYTES + h as i32 * VECTOR_BYTES)
    }

    /// Vector `h` of the current half of weight place `cache + next`, at `rcx`.
    fn weight_at(&self, cache: u32, next: u32, h: usize) -> AsmMemoryOperand {
        ymmword_ptr(rcx + (cache + next) as i32 * SLOT_BYTES + h as i32 * VECTOR_BYTES)
    }

    /// Steps `from..to` (all with an inline form) as a loop over the chunk's two halves.
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

    /// Vector `h` of an operand as a register: its cached register, or `scratch` loaded.
    fn reg(
        &mut self,
        o: Operand,
        h: usize,
        scratch: AsmRegisterYmm,
    ) -> Result<AsmRegisterYmm, IcedError> {
        Ok(match o {
            Operand::Pair(p) => pair(p, h),
            Operand::Slot(s) => {
                self.a.vmovupd(scratch, self.slot_at(s, h))?;
                scratch
            }
        })
    }

    /// First pass: marks the values of the places looked up and not found as needed.
    fn note_reads(&mut self) {
        self.stores.note_missed(self.cache.take_missed());
    }

    /// Step `index`: its value into a cache register, and into its place where something
    /// reads it from memory.
    fn step(&mut self, index: usize, step: &Step) -> Result<(), IcedError> {
        let d = self.step_value(step)?;
        self.cache.set(d, step.out);
        self.note_reads();
        let store = self.stores.store(index, step.out, self.pinned);
        if store {
            for h in 0..H {
                self.a.vmovupd(self.slot_at(step.out, h), pair(d, h))?;
            }
        }
        Ok(())
    }

    /// The index of a new constant `c` in the table (stored four times).
    fn constant(&mut self, c: f64) -> usize {
        self.consts.extend([c; routines::WIDTH]);
        self.consts.len() / routines::WIDTH - 1
    }

    /// Routine `routine` (`LN` or `EXP`) of both vectors of `x`, into `x[1]` of each of the
    /// routines' sets (`x[0]` holding the operand); the cache loses every pair.
    fn elementary(&mut self, routine: usize, x: Operand) -> Result<(), IcedError> {
        for h in 0..H {
            let to = set(h)[0];
            match x {
                Operand::Pair(p) if pair(p, h) == to => {}
                Operand::Pair(p) => self.a.vmovapd(to, pair(p, h))?,
                Operand::Slot(s) => self.a.vmovupd(to, self.slot_at(s, h))?,
            }
        }
        self.a.call(self.routine_at[routine])?;
        self.cache.lose_routine_pairs();
        Ok(())
    }
}
