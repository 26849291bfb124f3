//! What the compiled sweeps need of a vector width, so that one emitter serves both: the
//! AVX-512 build (`avx512.rs`: `zmm` registers of eight lanes, mask registers, broadcast
//! operands) and the AVX2 build (`avx2/`: `ymm` registers of four lanes, selects by
//! `vblendvpd`, every constant a whole vector in the table).
//!
//! Why a trait: the two builds ran the same steps in the same order and differed only in the
//! instructions of a few operations (a comparison, a select, a zeroing-masked product, a
//! constant's operand, a logarithm's stand-in) and in how many registers they have. Written
//! twice, a fix to one build's step was a fix the other could miss; here the steps are
//! written once (`emit/steps.rs`) and each width says how it does what differs.
//!
//! In the forward code a value takes a pair of registers (`pair(p, h)`, `h` 0 or 1): the
//! chunk's two halves in AVX-512, the two vectors of the half chunk a loop's iteration runs in
//! AVX2 ([`Vector::LOOPS_OVER_HALVES`]).

use iced_x86::IcedError;
use iced_x86::code_asm::*;

use super::sweep::Routine;

/// The assembler the methods below write to, and what they return.
pub(super) type Asm = CodeAssembler;
pub(super) type Done = Result<(), IcedError>;

/// A vector operand that may come from memory: a register, or a memory operand (a place, or
/// a constant: a broadcast in AVX-512, a whole vector in AVX2).
#[derive(Clone, Copy)]
pub(super) enum Src<R> {
    Reg(R),
    Mem(AsmMemoryOperand),
}

impl<R> From<AsmMemoryOperand> for Src<R> {
    fn from(m: AsmMemoryOperand) -> Self {
        Src::Mem(m)
    }
}

impl From<AsmRegisterZmm> for Src<AsmRegisterZmm> {
    fn from(r: AsmRegisterZmm) -> Self {
        Src::Reg(r)
    }
}

impl From<AsmRegisterYmm> for Src<AsmRegisterYmm> {
    fn from(r: AsmRegisterYmm) -> Self {
        Src::Reg(r)
    }
}

/// The lane-wise arithmetic every width has as one instruction with a register or memory
/// second operand.
#[derive(Clone, Copy)]
pub(super) enum Arith {
    Add,
    Sub,
    Mul,
    Div,
}

/// A vector width, as the forward emitter uses it.
pub(super) trait Vector {
    type Reg: Copy + PartialEq + Into<Src<Self::Reg>> + 'static;

    /// Whether the forward code runs each segment of inline steps as a loop over the chunk's
    /// two halves (a value pair holds a half; AVX2) rather than once (a pair holds the whole
    /// chunk; AVX-512, which then loops over repeated blocks instead).
    const LOOPS_OVER_HALVES: bool;
    /// Register pairs that cache values, and those a routine's call loses.
    const PAIRS: usize;
    const ROUTINE_PAIRS: std::ops::Range<usize>;
    /// Whether the cache has pairs to spare for the operands a step reads only before it
    /// first writes its result: AVX-512's ten keep them (they stay cached for later steps);
    /// with AVX2's four a step keeps only the operands it reads after that write (a sum or
    /// difference guard, a latent's offset), and a fused density term is computed in a
    /// scratch register.
    const SPARE_PAIRS: bool;
    /// Bytes of one register's lanes.
    const BYTES: i32;
    /// Scratch registers (at least eight), none of them a cache pair's.
    const X: &'static [Self::Reg];
    /// The scratch register a stand-in's value is computed in (free of the width's
    /// comparison results and of its stand-in's temporaries).
    const STAND_IN: Self::Reg;

    /// Register `h` of cache pair `p`.
    fn pair(p: usize, h: usize) -> Self::Reg;
    /// Register `i` of the routines' set for register `h` of a pair (`0` takes their
    /// operand, `1` and `2` hold their results).
    fn routine(h: usize, i: usize) -> Self::Reg;
    /// The routines: a smoothed if-statement's weights (with their corrections, or the plain
    /// weights), the logarithm and the exponential.
    const WEIGHTS: Routine;
    const WEIGHTS_PLAIN: Routine;
    const LN: Routine;
    const EXP: Routine;
    /// The routines a code starts with, in the order the emitter calls them by (the plain
    /// weights where `plain`).
    fn routines(plain: bool) -> [Routine; 3] {
        let weights = if plain {
            Self::WEIGHTS_PLAIN
        } else {
            Self::WEIGHTS
        };
        [weights, Self::LN, Self::EXP]
    }
    /// The start of the code's constant table (the routines' constants).
    fn table() -> Vec<f64>;
    /// Appends constant `c` to `table`, returning its index for [`Vector::k`].
    fn constant(table: &mut Vec<f64>, c: f64) -> usize;
    /// Constant `i` of the table as an operand.
    fn k(i: usize) -> AsmMemoryOperand;
    /// `m` as a memory operand of one register's width.
    fn ptr(m: AsmMemoryOperand) -> AsmMemoryOperand;
    /// Sets the registers the width keeps constants in (at entry and after every call back).
    fn constants(a: &mut Asm) -> Done;

    fn arith(a: &mut Asm, op: Arith, r: Self::Reg, x: Self::Reg, y: Src<Self::Reg>) -> Done;
    fn sqrt(a: &mut Asm, r: Self::Reg, x: Src<Self::Reg>) -> Done;
    /// `r = x` (a register copy or a load).
    fn mov(a: &mut Asm, r: Self::Reg, x: Src<Self::Reg>) -> Done;
    fn store(a: &mut Asm, m: AsmMemoryOperand, x: Self::Reg) -> Done;
    /// `r` = the double at `m` in every lane.
    fn broadcast(a: &mut Asm, r: Self::Reg, m: AsmMemoryOperand) -> Done;

    /// `r = -x` (the sign bit flipped).
    fn neg(a: &mut Asm, r: Self::Reg, x: Src<Self::Reg>) -> Done;
    /// The condition [`Vector::blend`] reads = `g < 0` lane by lane (false on NaN).
    fn negative(a: &mut Asm, g: Src<Self::Reg>) -> Done;
    /// `r` = `t` where the condition [`Vector::negative`] set holds, else `e`.
    fn blend(a: &mut Asm, r: Self::Reg, e: Self::Reg, t: Src<Self::Reg>) -> Done;
    /// The factor `1 / eta` for a product with a guard (a broadcast operand, or a register
    /// it is loaded into).
    fn inv_eta(a: &mut Asm) -> Result<Src<Self::Reg>, IcedError>;
    /// `kernels::smooth_forward` into `r`, with the else and then weights in `we` and `wt`:
    /// `wt t + we e`, a product whose weight is zero replaced by zero.
    fn smooth_forward(
        a: &mut Asm,
        r: Self::Reg,
        t: Src<Self::Reg>,
        e: Src<Self::Reg>,
        we: Self::Reg,
        wt: Self::Reg,
    ) -> Done;
    /// `elementary::ln_stand_in` of `x` into `to` (not `x`).
    fn ln_stand_in(a: &mut Asm, to: Self::Reg, x: Self::Reg) -> Done;
    /// The stand-in of `softplus(x)` into `to` (not `x`): `max(x, 0)` (zero where `x` is zero
    /// or below, the second operand where either is NaN), then `x + x` where `x` is NaN.
    fn softplus(a: &mut Asm, to: Self::Reg, x: Self::Reg) -> Done;
}

/// The methods of [`Vector`] that are the same instructions at every width (`vaddpd`,
/// `vmovupd`, ...), for a width's `impl` (the register type is the `impl`'s).
macro_rules! same_at_every_width {
    () => {
        fn arith(
            a: &mut CodeAssembler,
            op: Arith,
            r: Self::Reg,
            x: Self::Reg,
            y: Src<Self::Reg>,
        ) -> Result<(), IcedError> {
            macro_rules! emit {
                ($f:ident) => {
                    match y {
                        Src::Reg(y) => a.$f(r, x, y),
                        Src::Mem(m) => a.$f(r, x, m),
                    }
                };
            }
            match op {
                Arith::Add => emit!(vaddpd),
                Arith::Sub => emit!(vsubpd),
                Arith::Mul => emit!(vmulpd),
                Arith::Div => emit!(vdivpd),
            }
        }

        fn sqrt(a: &mut CodeAssembler, r: Self::Reg, x: Src<Self::Reg>) -> Result<(), IcedError> {
            match x {
                Src::Reg(x) => a.vsqrtpd(r, x),
                Src::Mem(m) => a.vsqrtpd(r, m),
            }
        }

        fn mov(a: &mut CodeAssembler, r: Self::Reg, x: Src<Self::Reg>) -> Result<(), IcedError> {
            match x {
                Src::Reg(x) => a.vmovapd(r, x),
                Src::Mem(m) => a.vmovupd(r, m),
            }
        }

        fn store(
            a: &mut CodeAssembler,
            m: AsmMemoryOperand,
            x: Self::Reg,
        ) -> Result<(), IcedError> {
            a.vmovupd(m, x)
        }

        fn broadcast(
            a: &mut CodeAssembler,
            r: Self::Reg,
            m: AsmMemoryOperand,
        ) -> Result<(), IcedError> {
            a.vbroadcastsd(r, m)
        }
    };
}
pub(super) use same_at_every_width;

/// A vector width, as the reverse emitter (`reverse.rs`) uses it: its registers' roles, its
/// constants, and the operations it does its own way (a masked product, a select by the
/// guard, a negation, a constant's load).
pub(super) trait ReverseVector: Vector {
    /// Registers of a value a step works on in one pass: the chunk's two halves (AVX-512),
    /// or one quarter, with each segment of steps run as a loop over the four (AVX2).
    const PARTS: usize;
    /// The constants every reverse code reads, first in its table (each stored as
    /// [`Vector::constant`] stores it).
    const CONSTS: &'static [f64];
    /// The step's own adjoint, and zero in every lane.
    const OWN: Self::Reg;
    const ZERO: Self::Reg;
    /// Scratch registers (at least nine).
    const R: &'static [Self::Reg];
    /// The registers that cache adjoints, written back when evicted.
    const ACC: &'static [Self::Reg];
    /// The scratch registers of a smoothed guard's contribution (its factor and its branches'
    /// difference), and of a folded guard's.
    const GUARD: [Self::Reg; 2];
    const FOLD: Self::Reg;

    /// Sets the registers the reverse code keeps constants in (at entry and after every call
    /// back).
    fn reverse_constants(a: &mut Asm) -> Done;
    /// `r` = constant `i` of the table in every lane.
    fn load_constant(a: &mut Asm, r: Self::Reg, i: usize) -> Done;
    /// `r = -x`.
    fn negate(a: &mut Asm, r: Self::Reg, x: Self::Reg) -> Done;
    /// `r` = minus the value at `m`.
    fn negate_value(a: &mut Asm, r: Self::Reg, m: AsmMemoryOperand) -> Done;
    /// `r = x * (1 / eta)`.
    fn times_inv_eta(a: &mut Asm, r: Self::Reg, x: Self::Reg) -> Done;
    /// Keeps the lanes where [`ReverseVector::OWN`] is not zero (for `masked` with `own`).
    fn own_nonzero(a: &mut Asm) -> Done;
    /// `r = masked(d, local)`: `d * local`, `+0.0` where `d` is zero (`own`: `d` is the own
    /// adjoint, whose lanes [`ReverseVector::own_nonzero`] kept).
    fn masked(a: &mut Asm, r: Self::Reg, d: Self::Reg, local: Src<Self::Reg>, own: bool) -> Done;
    /// `r = x * y`, `+0.0` where the own adjoint (its lanes kept) or `w` is zero.
    fn masked_by_weight(
        a: &mut Asm,
        r: Self::Reg,
        x: Self::Reg,
        y: Src<Self::Reg>,
        w: Self::Reg,
    ) -> Done;
    /// A crisp if-statement's contributions: the own adjoint into `then` where `0 > g` (`g`
    /// at `m`), into `other` elsewhere (NaN too), `+0.0` in the other lanes.
    fn split_by_guard(a: &mut Asm, then: Self::Reg, other: Self::Reg, m: AsmMemoryOperand) -> Done;
}
