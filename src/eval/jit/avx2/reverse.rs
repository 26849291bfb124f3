//! The reverse sweep compiled for CPUs with AVX2 and FMA but not AVX-512: the AVX-512
//! reverse code's steps (`jit/reverse.rs`, `reverse/steps.rs`, `reverse/partials.rs`) on
//! vectors of four lanes, none of its instructions AVX-512's.
//!
//! Why a loop, as in the AVX2 forward code (`avx2/mod.rs`): AVX2 has 16 vector registers
//! where AVX-512 has 32, and a step's reverse needs up to a dozen at once (the fused density
//! terms'), so a value cannot take a register per quarter of the chunk. Each run of steps
//! with an inline form (a segment, between two calls back into the interpreter, of at most
//! [`SEGMENT_STEPS`] steps) is one loop over the chunk's four quarters, one register a value.
//! Lanes never mix (every reverse step is per lane), so running a segment quarter by quarter
//! gives each lane the operations the interpreter gives it, in the same order: the same bits.
//! A quarter is addressed by moving the values' (`r12`), the adjoints' (`r13`) and the
//! weights' (`r14`) bases by 32 bytes per iteration; the calls back run after a segment's
//! last quarter, on whole chunks, with every adjoint in memory.
//!
//! What differs from the AVX-512 code besides the width: no mask registers (a comparison
//! gives a vector of all-ones lanes; a zeroing-masked product is the product and `vandpd`,
//! which gives `+0.0` where the mask is clear, as the masked multiplication does), no
//! broadcast operands (the constant table holds each constant four times), `-0.0` read from
//! the table. Repeated blocks are not looped over (`repeat.rs`): each step is emitted once.
//!
//! Register use: `rbx` the frame, `r12` the values, `r13` the adjoints, `r14` the smoothing
//! weights, `rbp` the constants; `ymm0` the step's own adjoint, `ymm1` the lanes where it is
//! not zero, `ymm2` a second mask, `ymm3..ymm11` scratch, `ymm12..ymm14` cached adjoints,
//! `ymm15` zero.

use iced_x86::IcedError;
use iced_x86::code_asm::*;

use crate::ir::CompiledForm;

use super::super::super::instr::{
    CHUNK, Op, Plan, RevStep, Target, forward_only_op, non_primitive_op, reverse_reads,
};
use super::super::emit::Coverage;
use super::super::indicators::Indicators;
use super::super::{Parts, entry, frame};

mod partials;
mod steps;

/// Bytes of one place (all its lanes) and of the quarter a loop's iteration runs.
const SLOT_BYTES: i32 = (CHUNK * 8) as i32;
const QUARTER_BYTES: i32 = 32;

/// Steps of one segment at most (as the forward code's `SEGMENT_STEPS`): its body runs four
/// times and stays in the instruction cache between its iterations.
const SEGMENT_STEPS: usize = 256;

/// Steps assembled at a time (see `emit::PART_STEPS`).
const PART_STEPS: usize = 1_024;

/// The constants every reverse code reads, first in its table (each [`WIDTH`] times).
const CONSTS: [f64; 5] = [1.0, 2.0, 0.5, -1.0, -0.0];
const C_ONE: usize = 0;
const C_TWO: usize = 1;
const C_HALF: usize = 2;
const C_MINUS_ONE: usize = 3;
const C_SIGN: usize = 4;

/// Copies of each constant in the table: the lanes of one vector.
const WIDTH: usize = 4;

/// Constant `i` of the code's table as a whole vector.
fn k(i: usize) -> AsmMemoryOperand {
    ymmword_ptr(rbp + (8 * WIDTH * i) as i32)
}

/// The step's own adjoint (quarter).
const OWN: AsmRegisterYmm = ymm0;

/// The lanes where [`OWN`] is not zero (all ones), set at its first use in a step.
const OWN_NONZERO: AsmRegisterYmm = ymm1;

/// A second mask.
const MASK: AsmRegisterYmm = ymm2;

/// Zero in every lane.
const ZERO: AsmRegisterYmm = ymm15;

/// Scratch registers.
const R: [AsmRegisterYmm; 9] = [ymm3, ymm4, ymm5, ymm6, ymm7, ymm8, ymm9, ymm10, ymm11];

/// The registers that cache adjoints, written back when evicted.
const ACC: [AsmRegisterYmm; 3] = [ymm12, ymm13, ymm14];

/// `x != 0` (true on NaN) and `0 > g` (false on NaN) as `vcmppd` predicates.
const NEQ_UQ: i32 = 0x04;
const GT_OQ: i32 = 0x1e;

/// Which adjoint each of [`ACC`] holds, whether it differs from its place in memory, and
/// when it was last used: a least-recently-used write-back cache, as the AVX-512 code's.
struct AdjCache {
    holds: [Option<u32>; ACC.len()],
    dirty: [bool; ACC.len()],
    used: [u64; ACC.len()],
    clock: u64,
}

impl AdjCache {
    fn new() -> Self {
        AdjCache {
            holds: [None; ACC.len()],
            dirty: [false; ACC.len()],
            used: [0; ACC.len()],
            clock: 0,
        }
    }

    fn find(&mut self, adj: u32) -> Option<usize> {
        let i = self.holds.iter().position(|&x| x == Some(adj))?;
        self.clock += 1;
        self.used[i] = self.clock;
        Some(i)
    }
}

/// Whether reverse step `rs` has an inline form (as in the AVX-512 code).
pub(in super::super) fn inline(rs: &RevStep) -> bool {
    match rs.step.op {
        Op::Unary { op, .. } => !rs.uniform && op.info().reverse == CompiledForm::Inline,
        Op::Binary { op, .. } => op.info().reverse == CompiledForm::Inline,
        non_primitive_op!() => true,
        forward_only_op!() => unreachable!("only forward-only layouts have this step"),
    }
}

/// The AVX2 code of `plan`'s steps under smoothed (`smooth`) or crisp semantics, as
/// `reverse::reverse` gives the AVX-512 code: it starts at offset 0 and returns when the
/// sweep is done.
pub(in super::super) fn reverse(
    plan: &Plan,
    smooth: bool,
    constants: &[(u32, f64)],
) -> Result<(Parts, Vec<f64>, Coverage), IcedError> {
    let indicators = Indicators::of(constants);
    let mut e = Emitter {
        indicators: &indicators,
        a: CodeAssembler::new(64)?,
        cache: AdjCache::new(),
        own_mask: false,
        consts: CONSTS.iter().flat_map(|&c| [c; WIDTH]).collect(),
        chain_targets: &plan.chain_targets,
        smooth,
        reads: ([0; 3], 0),
    };
    let mut bytes = Parts::default();
    let mut coverage = Coverage::default();
    e.prologue()?;
    let steps = &plan.steps;
    let (mut i, mut part_from) = (0, 0);
    while i < steps.len() {
        if i - part_from >= PART_STEPS {
            e.assemble_part(&mut bytes)?;
            part_from = i;
        }
        let from = i;
        if inline(&steps[i]) {
            while i < steps.len() && i - from < SEGMENT_STEPS && inline(&steps[i]) {
                i += 1;
            }
            e.segment(&steps[from..i])?;
            coverage.inline += i - from;
        } else {
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

struct Emitter<'a> {
    a: CodeAssembler,
    cache: AdjCache,
    /// Whether [`OWN_NONZERO`] holds the lanes where the step's own adjoint is not zero.
    own_mask: bool,
    consts: Vec<f64>,
    chain_targets: &'a [Target],
    smooth: bool,
    indicators: &'a Indicators,
    /// The value places the step being emitted may read (`instr::reverse_reads`).
    reads: ([u32; 3], usize),
}

impl Emitter<'_> {
    /// The current quarter of place `x` (`after` places after it) at `base`.
    fn place(&self, base: AsmRegister64, x: u32, after: u32) -> AsmMemoryOperand {
        ymmword_ptr(base + (x + after) as i32 * SLOT_BYTES)
    }

    /// The current quarter of value place `s`, which the step being emitted must be one to
    /// read.
    fn value(&self, s: u32) -> AsmMemoryOperand {
        let (reads, k) = self.reads;
        assert!(
            reads[..k].contains(&s),
            "a reverse step reads value place {s}, which instr::reverse_reads does not keep"
        );
        self.place(r12, s, 0)
    }

    fn adjoint(&self, a: u32) -> AsmMemoryOperand {
        self.place(r13, a, 0)
    }

    fn weight(&self, c: u32) -> AsmMemoryOperand {
        self.place(r14, c, 0)
    }

    /// The weight place after `c` (the then weights, where `c` holds the else ones).
    fn weight_after(&self, c: u32) -> AsmMemoryOperand {
        self.place(r14, c, 1)
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
            (r13, frame::ADJOINTS),
            (r14, frame::WEIGHTS),
            (rbp, frame::CONSTS),
        ] {
            a.mov(r, qword_ptr(rbx + field))?;
        }
        a.vxorpd(ZERO, ZERO, ZERO)
    }

    fn epilogue(&mut self) -> Result<(), IcedError> {
        entry::leave(&mut self.a)
    }

    /// Steps `run` (all with an inline form) as a loop over the chunk's four quarters, each
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
            a.add(r, QUARTER_BYTES)?;
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

    /// Writes every changed cached adjoint back to its place and empties the cache.
    fn flush(&mut self) -> Result<(), IcedError> {
        for (i, &r) in ACC.iter().enumerate() {
            if let (Some(adj), true) = (self.cache.holds[i], self.cache.dirty[i]) {
                self.a.vmovupd(self.adjoint(adj), r)?;
            }
        }
        self.cache = AdjCache::new();
        Ok(())
    }

    /// A cache register for adjoint `adj` (not cached): an empty one or the least recently
    /// used, written back first if changed.
    fn take(&mut self, adj: u32) -> Result<usize, IcedError> {
        let c = &mut self.cache;
        let i = match c.holds.iter().position(Option::is_none) {
            Some(i) => i,
            None => (0..ACC.len())
                .min_by_key(|&i| c.used[i])
                .expect("registers"),
        };
        if let (Some(old), true) = (c.holds[i], c.dirty[i]) {
            self.a.vmovupd(self.adjoint(old), ACC[i])?;
        }
        let c = &mut self.cache;
        c.holds[i] = Some(adj);
        c.dirty[i] = false;
        c.clock += 1;
        c.used[i] = c.clock;
        Ok(i)
    }

    /// Runs reverse steps `from..to` in the interpreter (every adjoint is in memory between
    /// segments), then sets [`ZERO`] again.
    fn call_back(&mut self, from: usize, to: usize) -> Result<(), IcedError> {
        let a = &mut self.a;
        a.mov(rdi, rbx)?;
        a.mov(esi, from as u32)?;
        a.mov(edx, to as u32)?;
        a.call(qword_ptr(rbx + frame::CALL_BACK))?;
        a.vxorpd(ZERO, ZERO, ZERO)
    }

    fn assemble_part(&mut self, bytes: &mut Parts) -> Result<(), IcedError> {
        let mut part = std::mem::replace(&mut self.a, CodeAssembler::new(64)?);
        let at = bytes.len() as u64;
        bytes.push(part.assemble(at)?);
        Ok(())
    }

    /// The index of a new constant `c` in the table (stored four times).
    fn constant(&mut self, c: f64) -> usize {
        self.consts.extend([c; WIDTH]);
        self.consts.len() / WIDTH - 1
    }

    /// `r = masked(d, local)` lane by lane: `d * local`, `+0.0` where `d` is zero.
    fn masked(
        &mut self,
        r: AsmRegisterYmm,
        d: AsmRegisterYmm,
        local: impl Into<Local>,
    ) -> Result<(), IcedError> {
        // The mask first: `r` may be `d`.
        let mask = if d == OWN {
            self.own_nonzero()?;
            OWN_NONZERO
        } else {
            self.a.vcmppd(MASK, d, ZERO, NEQ_UQ)?;
            MASK
        };
        match local.into() {
            Local::Reg(l) => self.a.vmulpd(r, d, l)?,
            Local::Mem(l) => self.a.vmulpd(r, d, l)?,
        }
        self.a.vandpd(r, r, mask)
    }

    /// Sets [`OWN_NONZERO`] unless this step has set it already.
    fn own_nonzero(&mut self) -> Result<(), IcedError> {
        if !self.own_mask {
            self.a.vcmppd(OWN_NONZERO, OWN, ZERO, NEQ_UQ)?;
            self.own_mask = true;
        }
        Ok(())
    }

    /// The contributions of a sum or difference with adjoint `d` (never `-0.0`) to its
    /// operands' targets (see the AVX-512 code's `sum_contributions`).
    fn sum_contributions(
        &mut self,
        d: AsmRegisterYmm,
        ta: Target,
        tb: Target,
        subtract_b: bool,
    ) -> Result<(), IcedError> {
        if ta.adj != super::super::super::instr::NONE {
            self.accumulate(ta, d, false)?;
        }
        if tb.adj != super::super::super::instr::NONE {
            self.accumulate(tb, d, subtract_b)?;
        }
        Ok(())
    }

    /// `add_into` (or `sub_into`) of contribution `c` into target `t`'s adjoint: `0.0 + c`
    /// (`0.0 - c`) for its first contribution.
    fn accumulate(
        &mut self,
        t: Target,
        c: AsmRegisterYmm,
        subtract: bool,
    ) -> Result<(), IcedError> {
        let i = match self.cache.find(t.adj) {
            Some(i) => i,
            None => {
                let i = self.take(t.adj)?;
                if !t.first {
                    self.a.vmovupd(ACC[i], self.adjoint(t.adj))?;
                }
                i
            }
        };
        let r = ACC[i];
        let from = if t.first { ZERO } else { r };
        if subtract {
            self.a.vsubpd(r, from, c)?;
        } else {
            self.a.vaddpd(r, from, c)?;
        }
        self.cache.dirty[i] = true;
        Ok(())
    }

    /// [`Self::accumulate`] where the target has an adjoint.
    fn put(&mut self, t: Target, c: AsmRegisterYmm) -> Result<(), IcedError> {
        if t.adj == super::super::super::instr::NONE {
            return Ok(());
        }
        self.accumulate(t, c, false)
    }

    fn step(&mut self, rs: &RevStep) -> Result<(), IcedError> {
        self.reads = reverse_reads(rs, self.smooth);
        self.own_mask = false;
        match self.cache.find(rs.ad) {
            Some(i) => self.a.vmovapd(OWN, ACC[i])?,
            None => self.a.vmovupd(OWN, self.adjoint(rs.ad))?,
        }
        self.step_quarter(rs)
    }
}

/// A local derivative: a register or a vector in memory.
enum Local {
    Reg(AsmRegisterYmm),
    Mem(AsmMemoryOperand),
}

impl From<AsmRegisterYmm> for Local {
    fn from(r: AsmRegisterYmm) -> Self {
        Local::Reg(r)
    }
}

impl From<AsmMemoryOperand> for Local {
    fn from(m: AsmMemoryOperand) -> Self {
        Local::Mem(m)
    }
}
