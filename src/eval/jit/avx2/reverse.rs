//! The AVX2 width of the reverse sweep ([`ReverseVector`] for [`Avx2`]).
//!
//! Why a loop, as in the AVX2 forward code: AVX2 has 16 vector registers where AVX-512 has
//! 32, and a step's reverse needs up to a dozen at once (the fused density terms'), so a
//! value cannot take a register per quarter of the chunk. Each run of steps with an inline
//! form (a segment, between two calls back into the interpreter) is one loop over the chunk's
//! four quarters, one register a value ([`ReverseVector::PARTS`] is 1). Lanes never mix
//! (every reverse step is per lane), so running a segment quarter by quarter gives each lane
//! the operations the interpreter gives it, in the same order: the same bits. The calls back
//! run after a segment's last quarter, on whole chunks, with every adjoint in memory.
//!
//! What differs from the AVX-512 code besides the width: no mask registers (a comparison
//! gives a vector of all-ones lanes; a zeroing-masked product is the product and `vandpd`,
//! which gives `+0.0` where the mask is clear, as the masked multiplication does), no
//! broadcast operands (the constant table holds each constant four times), `-0.0` read from
//! the table. Repeated blocks are not looped over (`repeat.rs`): each step is emitted once.
//!
//! Register use: `ymm0` the step's own adjoint, `ymm1` the lanes where it is not zero, `ymm2`
//! a second mask, `ymm3..ymm11` scratch, `ymm12..ymm14` cached adjoints, `ymm15` zero.

use iced_x86::IcedError;
use iced_x86::code_asm::*;

use super::super::frame;
use super::super::vector::{ReverseVector, Src};
use super::Avx2;
use super::routines::k;

/// The own adjoint, the lanes where it is not zero (all ones), a second mask, and zero.
const OWN: AsmRegisterYmm = ymm0;
const OWN_NONZERO: AsmRegisterYmm = ymm1;
const MASK: AsmRegisterYmm = ymm2;
const ZERO: AsmRegisterYmm = ymm15;

/// Scratch registers.
const R: [AsmRegisterYmm; 9] = [ymm3, ymm4, ymm5, ymm6, ymm7, ymm8, ymm9, ymm10, ymm11];

/// `x != 0` (true on NaN) and `0 > g` (false on NaN) as `vcmppd` predicates.
const NEQ_UQ: i32 = 0x04;
const GT_OQ: i32 = 0x1e;

/// Where `-0.0` is in the table ([`ReverseVector::CONSTS`]).
const C_SIGN: usize = 4;

impl ReverseVector for Avx2 {
    const PARTS: usize = 1;
    const CONSTS: &'static [f64] = &[1.0, 2.0, 0.5, -1.0, -0.0];
    const OWN: AsmRegisterYmm = OWN;
    const ZERO: AsmRegisterYmm = ZERO;
    const R: &'static [AsmRegisterYmm] = &R;
    const ACC: &'static [AsmRegisterYmm] = &[ymm12, ymm13, ymm14];
    const GUARD: [AsmRegisterYmm; 2] = [R[4], R[5]];
    const FOLD: AsmRegisterYmm = R[6];

    fn reverse_constants(a: &mut CodeAssembler) -> Result<(), IcedError> {
        a.vxorpd(ZERO, ZERO, ZERO)
    }

    fn load_constant(a: &mut CodeAssembler, r: AsmRegisterYmm, i: usize) -> Result<(), IcedError> {
        a.vmovupd(r, k(i))
    }

    fn negate(
        a: &mut CodeAssembler,
        r: AsmRegisterYmm,
        x: AsmRegisterYmm,
    ) -> Result<(), IcedError> {
        a.vxorpd(r, x, k(C_SIGN))
    }

    fn negate_value(
        a: &mut CodeAssembler,
        r: AsmRegisterYmm,
        m: AsmMemoryOperand,
    ) -> Result<(), IcedError> {
        a.vmovupd(r, k(C_SIGN))?;
        a.vxorpd(r, r, m)
    }

    fn times_inv_eta(
        a: &mut CodeAssembler,
        r: AsmRegisterYmm,
        x: AsmRegisterYmm,
    ) -> Result<(), IcedError> {
        a.vbroadcastsd(r, qword_ptr(rbx + frame::INV_ETA))?;
        a.vmulpd(r, x, r)
    }

    fn own_nonzero(a: &mut CodeAssembler) -> Result<(), IcedError> {
        a.vcmppd(OWN_NONZERO, OWN, ZERO, NEQ_UQ)
    }

    /// The product, then `vandpd` with the mask (compared first: `r` may be `d`).
    fn masked(
        a: &mut CodeAssembler,
        r: AsmRegisterYmm,
        d: AsmRegisterYmm,
        local: Src<AsmRegisterYmm>,
        own: bool,
    ) -> Result<(), IcedError> {
        let mask = if own {
            OWN_NONZERO
        } else {
            a.vcmppd(MASK, d, ZERO, NEQ_UQ)?;
            MASK
        };
        product_where(a, r, d, local, mask)
    }

    fn masked_by_weight(
        a: &mut CodeAssembler,
        r: AsmRegisterYmm,
        x: AsmRegisterYmm,
        y: Src<AsmRegisterYmm>,
        w: AsmRegisterYmm,
    ) -> Result<(), IcedError> {
        a.vcmppd(MASK, w, ZERO, NEQ_UQ)?;
        a.vandpd(MASK, MASK, OWN_NONZERO)?;
        product_where(a, r, x, y, MASK)
    }

    fn split_by_guard(
        a: &mut CodeAssembler,
        then: AsmRegisterYmm,
        other: AsmRegisterYmm,
        m: AsmMemoryOperand,
    ) -> Result<(), IcedError> {
        a.vcmppd(MASK, ZERO, m, GT_OQ)?;
        a.vandpd(then, MASK, OWN)?;
        a.vandnpd(other, MASK, OWN)
    }
}

/// `r = x * y` in the lanes of `mask`, `+0.0` in the others (`vandpd`, as a zeroing-masked
/// product gives).
fn product_where(
    a: &mut CodeAssembler,
    r: AsmRegisterYmm,
    x: AsmRegisterYmm,
    y: Src<AsmRegisterYmm>,
    mask: AsmRegisterYmm,
) -> Result<(), IcedError> {
    match y {
        Src::Reg(y) => a.vmulpd(r, x, y)?,
        Src::Mem(m) => a.vmulpd(r, x, m)?,
    }
    a.vandpd(r, r, mask)
}
