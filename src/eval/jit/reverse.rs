//! The machine code of one reverse sweep: each step of a reverse plan becomes AVX-512
//! instructions on the chunk's two halves, reading its own adjoint, the values and the
//! smoothing weights it needs from their places and adding each contribution into its
//! target's place; steps with no inline form (the local derivatives that need a function:
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
//! interpreter's bits.
//!
//! Register use: `rbx` the frame, `r12` the values, `r13` the adjoints, `r14` the smoothing
//! weights, `rbp` the code's constants ([`CONSTS`] first, then the `c` of fused density and
//! Poisson terms); `zmm0` the step's own adjoint, `zmm1..zmm15` scratch, `zmm16..zmm29`
//! cached adjoints, `zmm30` `-0.0` and `zmm31` zero in every lane. A repeated block of
//! steps (`repeat.rs`) runs as a loop whose iterations each start and end with every adjoint
//! in memory, `rdx` and `r8`-`r11` advancing its moving places (`looping.rs`).

use iced_x86::IcedError;
use iced_x86::code_asm::asm_traits::CodeAsmVmulpd;
use iced_x86::code_asm::*;

use crate::ir::CompiledForm;

use super::super::instr::{
    CHUNK, NONE, Op, Plan, RevStep, Target, forward_only_op, non_primitive_op, reverse_reads,
};
use super::emit::Coverage;
use super::indicators::Indicators;
use super::looping::{self, Looping};
use super::regs::*;
use super::repeat::{self, Repeat, Unit};
use super::{Parts, entry, frame};

mod partials;
mod steps;

/// Bytes of one place (all its lanes) and of one half.
const SLOT_BYTES: i32 = (CHUNK * 8) as i32;
const HALF_BYTES: i32 = SLOT_BYTES / 2;

/// The constants every reverse code reads, first in its table.
const CONSTS: [f64; 4] = [1.0, 2.0, 0.5, -1.0];
const C_ONE: usize = 0;
const C_MINUS_ONE: usize = 3;
const C_TWO: usize = 1;
const C_HALF: usize = 2;

/// Steps assembled at a time (see `emit::PART_STEPS`).
const PART_STEPS: usize = 1_024;

/// The step's own adjoint (half).
const OWN: AsmRegisterZmm = zmm0;

/// The lanes where [`OWN`] is not zero (see `Emitter::own_nonzero`).
const OWN_NONZERO: AsmRegisterK = k6;

/// The registers that cache adjoints (halves), written back when evicted.
const ACC: [AsmRegisterZmm; 14] = [
    zmm16, zmm17, zmm18, zmm19, zmm20, zmm21, zmm22, zmm23, zmm24, zmm25, zmm26, zmm27, zmm28,
    zmm29,
];

/// Which adjoint half each of [`ACC`] holds, whether it differs from its place in memory, and
/// when it was last used: a least-recently-used write-back cache, so that an adjoint that
/// many steps add to (a shared operand's: textmsg's rates and change point take a
/// contribution from each of its 37 if-statements) stays in a register between them.
struct AdjCache {
    holds: [Option<(u32, usize)>; ACC.len()],
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

/// The code of `plan`'s steps under smoothed (`smooth`) or crisp semantics, with its
/// constants: it starts at offset 0 and returns when the sweep is done. The adjoints the plan
/// zeroes and the output's are set before it runs (by the caller).
pub(super) fn reverse(
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
        consts: CONSTS.to_vec(),
        chain_targets: &plan.chain_targets,
        smooth,
        looping: None,
        reads: ([0; 3], 0),
    };
    let mut bytes = Parts::default();
    let mut coverage = Coverage::default();
    e.prologue()?;
    let steps = &plan.steps;
    let repeats = loops(steps, &indicators);
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

/// Scratch registers.
const R: [AsmRegisterZmm; 15] = [
    zmm1, zmm2, zmm3, zmm4, zmm5, zmm6, zmm7, zmm8, zmm9, zmm10, zmm11, zmm12, zmm13, zmm14, zmm15,
];

struct Emitter<'a> {
    a: CodeAssembler,
    cache: AdjCache,
    /// Whether [`OWN_NONZERO`] holds the lanes where the step's own adjoint (this half) is
    /// not zero: set at its first use in a step's half.
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

impl Emitter<'_> {
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

    /// Half `h` of place `x` of kind `unit` at `base` (inside a loop, `x` as its first
    /// iteration has it).
    /// `after` places after it.
    fn place(
        &self,
        base: AsmRegister64,
        unit: Unit,
        x: u32,
        after: u32,
        h: usize,
    ) -> AsmMemoryOperand {
        let disp = (x + after) as i32 * SLOT_BYTES + h as i32 * HALF_BYTES;
        match self.looping.as_ref().and_then(|l| l.place(unit, x)) {
            Some((reg, scale)) => zmmword_ptr(base + reg * scale + disp),
            None => zmmword_ptr(base + disp),
        }
    }

    /// Half `h` of value place `s`, which the step being emitted must be one to read.
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

    /// Half `h` of the weight place after `c` (the then weights, where `c` holds the else
    /// ones): it moves as `c` does.
    fn weight_after(&self, c: u32, h: usize) -> AsmMemoryOperand {
        self.place(r14, Unit::Weight, c, 1, h)
    }

    fn prologue(&mut self) -> Result<(), IcedError> {
        entry::enter(
            &mut self.a,
            &[(r13, frame::ADJOINTS), (r14, frame::WEIGHTS)],
            entry::constants,
        )
    }

    /// Writes every changed cached adjoint back to its place and empties the cache (before a
    /// call back, which reads and writes adjoints in memory, and at the end).
    fn flush(&mut self) -> Result<(), IcedError> {
        for (i, &r) in ACC.iter().enumerate() {
            if let (Some((adj, h)), true) = (self.cache.holds[i], self.cache.dirty[i]) {
                self.a.vmovupd(self.adjoint(adj, h), r)?;
            }
        }
        self.cache = AdjCache::new();
        Ok(())
    }

    /// A cache register for half `h` of adjoint `adj` (not cached): an empty one or the least
    /// recently used, written back first if changed.
    fn take(&mut self, adj: u32, h: usize) -> Result<usize, IcedError> {
        let c = &mut self.cache;
        let i = match c.holds.iter().position(Option::is_none) {
            Some(i) => i,
            None => (0..ACC.len())
                .min_by_key(|&i| c.used[i])
                .expect("registers"),
        };
        if let (Some((old, oh)), true) = (c.holds[i], c.dirty[i]) {
            self.a.vmovupd(self.adjoint(old, oh), ACC[i])?;
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
        entry::call_back(&mut self.a, from, to, entry::constants)
    }

    fn assemble_part(&mut self, bytes: &mut Parts) -> Result<(), IcedError> {
        let mut part = std::mem::replace(&mut self.a, CodeAssembler::new(64)?);
        let at = bytes.len() as u64;
        bytes.push(part.assemble(at)?);
        Ok(())
    }

    /// The index of a new constant `c` in the table.
    fn constant(&mut self, c: f64) -> usize {
        self.consts.push(c);
        self.consts.len() - 1
    }

    /// `r = masked(d, local)` lane by lane: `d * local`, exactly zero where `d` is zero.
    fn masked<T>(&mut self, r: AsmRegisterZmm, d: AsmRegisterZmm, local: T) -> Result<(), IcedError>
    where
        CodeAssembler: CodeAsmVmulpd<AsmRegisterZmm, AsmRegisterZmm, T>,
    {
        if d == OWN {
            self.own_nonzero()?;
            return self.a.vmulpd(r.k6().z(), d, local);
        }
        self.a.vcmppd(k1, d, ZERO, NEQ_UQ)?;
        self.a.vmulpd(r.k1().z(), d, local)
    }

    /// Sets [`OWN_NONZERO`] unless this half of the step has set it already: most steps
    /// mask several products by their own adjoint.
    fn own_nonzero(&mut self) -> Result<(), IcedError> {
        if !self.own_mask {
            self.a.vcmppd(OWN_NONZERO, OWN, ZERO, NEQ_UQ)?;
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
        d: AsmRegisterZmm,
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
    /// half `h`: `0.0 + c` (`0.0 - c`) for its first contribution.
    fn accumulate(
        &mut self,
        t: Target,
        c: AsmRegisterZmm,
        h: usize,
        subtract: bool,
    ) -> Result<(), IcedError> {
        let i = match self.cache.find(t.adj, h) {
            Some(i) => i,
            None => {
                let i = self.take(t.adj, h)?;
                if !t.first {
                    self.a.vmovupd(ACC[i], self.adjoint(t.adj, h))?;
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

    /// `put`: [`Self::accumulate`] where the target has an adjoint.
    fn put(&mut self, t: Target, c: AsmRegisterZmm, h: usize) -> Result<(), IcedError> {
        if t.adj == NONE {
            return Ok(());
        }
        self.accumulate(t, c, h, false)
    }

    fn step(&mut self, rs: &RevStep) -> Result<(), IcedError> {
        self.reads = reverse_reads(rs, self.smooth);
        for h in 0..2 {
            self.own_mask = false;
            match self.cache.find(rs.ad, h) {
                Some(i) => self.a.vmovapd(OWN, ACC[i])?,
                None => self.a.vmovupd(OWN, self.adjoint(rs.ad, h))?,
            }
            self.step_half(rs, h)?;
        }
        Ok(())
    }
}
