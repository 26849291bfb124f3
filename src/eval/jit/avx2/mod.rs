//! The AVX2 width of the compiled sweeps, for CPUs with AVX2 and FMA but not AVX-512
//! ([`Vector`] for [`Avx2`]): the AVX-512 code's steps on vectors of four lanes, none of its
//! instructions AVX-512's.
//!
//! Why the forward code loops: AVX2 has 16 vector registers where AVX-512 has 32. Holding a
//! chunk's 16 lanes as four registers per value would leave the register cache two values;
//! instead each run of steps with an inline form (a segment, between two calls back into the
//! interpreter, of at most `emit::SEGMENT_STEPS` steps) is one loop over the chunk's two
//! halves, each value a pair of registers (four lanes each, as the AVX-512 code's halves).
//! Why not one register a value, over four quarters: a step's long routines (a smoothed
//! if-statement's weights, the logarithm) are each one dependency chain, and with one vector
//! a step nothing overlapped them (textmsg's smoothed sweep ran 0.67x the interpreter's AVX2
//! build); two calls back to back overlap in the CPU's reordering window. Lanes never mix
//! (every step is per lane), so running a segment's steps half by half gives each lane the
//! operations the interpreter gives it, in the same order: the same bits.
//!
//! What differs from the AVX-512 code besides the width: no mask registers (a comparison
//! gives a vector of all-ones lanes, selects are `vblendvpd`, zero-masking is `vandpd`), no
//! broadcast operands (the constant table holds each constant four times), and the
//! exponent arithmetic of `exp` and the logarithms' stand-ins in integer instructions
//! (`routines.rs`).
//!
//! Register use in the forward code: `ymm0..ymm7` cache four values (pair `p` is `ymm2p`,
//! `ymm2p+1`), `ymm8..ymm15` are scratch; a routine uses all sixteen (a call loses every
//! cached value). Repeated blocks are not looped over (`repeat.rs`): each step is emitted
//! once.

use iced_x86::IcedError;
use iced_x86::code_asm::*;

use super::frame;
use super::sweep::Routine;
use super::vector::{Arith, Src, Vector, same_at_every_width};

pub(super) mod reverse;
mod routines;

use routines::{C_ONE, C_SIGN, C_ZERO, GT_OQ, LT_OQ, NEQ_UQ, UNORD_Q, k};

/// Every vector register by number.
const YMM: [AsmRegisterYmm; 16] = [
    ymm0, ymm1, ymm2, ymm3, ymm4, ymm5, ymm6, ymm7, ymm8, ymm9, ymm10, ymm11, ymm12, ymm13, ymm14,
    ymm15,
];

/// Scratch registers (the routines' second set).
const X: [AsmRegisterYmm; 8] = routines::SETS[1];

/// The scratch register comparisons leave their lanes' masks in.
const MASK: AsmRegisterYmm = X[5];

/// The AVX2 width.
pub(super) struct Avx2;

impl Vector for Avx2 {
    type Reg = AsmRegisterYmm;

    const LOOPS_OVER_HALVES: bool = true;
    /// `ymm0..ymm7`; a routine's call loses all of them.
    const PAIRS: usize = 4;
    const ROUTINE_PAIRS: std::ops::Range<usize> = 0..4;
    const SPARE_PAIRS: bool = false;
    const BYTES: i32 = 32;
    const X: &'static [AsmRegisterYmm] = &X;
    const WEIGHTS: Routine = routines::weights;
    const WEIGHTS_PLAIN: Routine = routines::weights_plain;
    const LN: Routine = routines::ln;
    const EXP: Routine = routines::exp;
    const STAND_IN: AsmRegisterYmm = X[3];

    fn pair(p: usize, h: usize) -> AsmRegisterYmm {
        YMM[2 * p + h]
    }

    fn routine(h: usize, i: usize) -> AsmRegisterYmm {
        routines::SETS[h][i]
    }

    fn table() -> Vec<f64> {
        routines::table()
    }

    /// Stored four times.
    fn constant(table: &mut Vec<f64>, c: f64) -> usize {
        table.extend([c; routines::WIDTH]);
        table.len() / routines::WIDTH - 1
    }

    fn k(i: usize) -> AsmMemoryOperand {
        k(i)
    }

    fn ptr(m: AsmMemoryOperand) -> AsmMemoryOperand {
        ymmword_ptr(m)
    }

    /// None: the constants are read from the table.
    fn constants(_: &mut CodeAssembler) -> Result<(), IcedError> {
        Ok(())
    }

    same_at_every_width!();

    fn neg(
        a: &mut CodeAssembler,
        r: AsmRegisterYmm,
        x: Src<AsmRegisterYmm>,
    ) -> Result<(), IcedError> {
        let x = match x {
            Src::Reg(x) => x,
            Src::Mem(m) => {
                a.vmovupd(r, m)?;
                r
            }
        };
        a.vxorpd(r, x, k(C_SIGN))
    }

    /// [`MASK`] = `g < 0` (from memory as `0 > g`, the operand order `vcmppd` allows).
    fn negative(a: &mut CodeAssembler, g: Src<AsmRegisterYmm>) -> Result<(), IcedError> {
        match g {
            Src::Reg(g) => a.vcmppd(MASK, g, k(C_ZERO), LT_OQ),
            Src::Mem(m) => {
                a.vxorpd(MASK, MASK, MASK)?;
                a.vcmppd(MASK, MASK, m, GT_OQ)
            }
        }
    }

    fn blend(
        a: &mut CodeAssembler,
        r: AsmRegisterYmm,
        e: AsmRegisterYmm,
        t: Src<AsmRegisterYmm>,
    ) -> Result<(), IcedError> {
        match t {
            Src::Reg(t) => a.vblendvpd(r, e, t, MASK),
            Src::Mem(m) => a.vblendvpd(r, e, m, MASK),
        }
    }

    /// Broadcast into `X[6]`.
    fn inv_eta(a: &mut CodeAssembler) -> Result<Src<AsmRegisterYmm>, IcedError> {
        a.vbroadcastsd(X[6], qword_ptr(rbx + frame::INV_ETA))?;
        Ok(Src::Reg(X[6]))
    }

    /// Each product and the mask of its nonzero weight's lanes (`vandpd`: `+0.0` where the
    /// mask is clear, as a zeroing-masked product gives).
    fn smooth_forward(
        a: &mut CodeAssembler,
        r: AsmRegisterYmm,
        t: Src<AsmRegisterYmm>,
        e: Src<AsmRegisterYmm>,
        we: AsmRegisterYmm,
        wt: AsmRegisterYmm,
    ) -> Result<(), IcedError> {
        a.vcmppd(X[6], wt, k(C_ZERO), NEQ_UQ)?;
        match t {
            Src::Reg(t) => a.vmulpd(X[4], wt, t)?,
            Src::Mem(m) => a.vmulpd(X[4], wt, m)?,
        }
        a.vandpd(X[4], X[4], X[6])?;
        a.vcmppd(X[6], we, k(C_ZERO), NEQ_UQ)?;
        match e {
            Src::Reg(e) => a.vmulpd(X[5], we, e)?,
            Src::Mem(m) => a.vmulpd(X[5], we, m)?,
        }
        a.vandpd(X[5], X[5], X[6])?;
        a.vaddpd(r, X[4], X[5])
    }

    /// Uses `X[1]` and `X[2]` (so `to` is neither): the exponent field of `x` (of `x 2^54`
    /// where `x` is below the smallest normal number) read as `2^52 + field` and less
    /// `2^52 + 1023` (or `+ 1077`), exactly, times `ln 2`; `x + x` where `x` is not below
    /// `+inf`, and the logarithm's values at zero and below, as the scalar function computes
    /// them.
    fn ln_stand_in(
        a: &mut CodeAssembler,
        to: AsmRegisterYmm,
        x: AsmRegisterYmm,
    ) -> Result<(), IcedError> {
        use routines::{
            C_E_BIAS, C_E_BIAS_SUB, C_E_BITS, C_INF, C_LN_2, C_MIN_POSITIVE, C_NAN, C_NEG_INF,
            C_SUB_SCALE, EQ_OQ, LE_OQ,
        };
        let (t1, t2) = (X[1], X[2]);
        a.vcmppd(t1, x, k(C_MIN_POSITIVE), LT_OQ)?; // sub
        a.vmovupd(to, k(C_ONE))?;
        a.vblendvpd(to, to, k(C_SUB_SCALE), t1)?;
        a.vmulpd(to, x, to)?;
        a.vpsrlq(to, to, 52)?;
        a.vpor(to, to, k(C_E_BITS))?; // 2^52 + field (and the sign, where x < 0)
        a.vmovupd(t2, k(C_E_BIAS))?;
        a.vblendvpd(t2, t2, k(C_E_BIAS_SUB), t1)?;
        a.vsubpd(to, to, t2)?; // the exponent
        a.vmulpd(to, to, k(C_LN_2))?;
        a.vcmppd(t1, x, k(C_INF), LT_OQ)?;
        a.vaddpd(t2, x, x)?;
        a.vblendvpd(to, t2, to, t1)?;
        a.vcmppd(t1, x, k(C_ZERO), EQ_OQ)?;
        a.vmovupd(t2, k(C_NAN))?;
        a.vblendvpd(t2, t2, k(C_NEG_INF), t1)?;
        a.vcmppd(t1, x, k(C_ZERO), LE_OQ)?;
        a.vblendvpd(to, to, t2, t1)
    }

    /// Through `X[6]` and [`MASK`].
    fn softplus(
        a: &mut CodeAssembler,
        to: AsmRegisterYmm,
        x: AsmRegisterYmm,
    ) -> Result<(), IcedError> {
        a.vmaxpd(to, x, k(C_ZERO))?;
        a.vcmppd(MASK, x, x, UNORD_Q)?;
        a.vaddpd(X[6], x, x)?;
        a.vblendvpd(to, to, X[6], MASK)
    }
}
