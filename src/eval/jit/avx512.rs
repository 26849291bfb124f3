//! The AVX-512 width of the compiled sweeps ([`Vector`] for [`Avx512`]): `zmm` registers of
//! eight lanes, a value a pair of them (the chunk's two halves); comparisons into the mask
//! register `k1`, selects as masked blends, zeroing-masked products, constants read as
//! broadcast operands, `-0.0` and zero kept in `zmm30` and `zmm31` (`entry.rs`).
//!
//! Register use in the forward code: `zmm0..zmm19` hold cached values (pair `p` is `zmm2p`,
//! `zmm2p+1`), `zmm20..zmm29` are scratch. A routine uses `zmm10..zmm29` and so loses the
//! cache pairs 5 to 9 (it borrows `zmm30` and `zmm31` and sets them again).
//!
//! In the reverse code ([`ReverseVector`]): `zmm0` the step's own adjoint (a half), `k6` its
//! nonzero lanes, `zmm1..zmm15` scratch, `zmm16..zmm29` cached adjoints (halves).

use iced_x86::IcedError;
use iced_x86::code_asm::*;

use super::regs::*;
use super::routines::{self, k};
use super::sweep::Routine;
use super::vector::{Arith, ReverseVector, Src, Vector, same_at_every_width};
use super::{consts, entry, frame};

/// The AVX-512 width.
pub(super) struct Avx512;

impl Vector for Avx512 {
    type Reg = AsmRegisterZmm;

    const LOOPS_OVER_HALVES: bool = false;
    const PAIRS: usize = 10;
    /// The pairs in `zmm10..zmm19`, the routines' scratch.
    const ROUTINE_PAIRS: std::ops::Range<usize> = 5..10;
    const SPARE_PAIRS: bool = true;
    const BYTES: i32 = 64;
    const X: &'static [AsmRegisterZmm] = &X;
    const WEIGHTS: Routine = routines::weights;
    const WEIGHTS_PLAIN: Routine = routines::weights_plain;
    const LN: Routine = routines::ln;
    const EXP: Routine = routines::exp;
    const STAND_IN: AsmRegisterZmm = X[5];

    fn pair(p: usize, h: usize) -> AsmRegisterZmm {
        ZMM[2 * p + h]
    }

    fn routine(h: usize, i: usize) -> AsmRegisterZmm {
        let set = if h == 0 {
            routines::SET_A
        } else {
            routines::SET_B
        };
        set.x[i]
    }

    fn table() -> Vec<f64> {
        consts::ROUTINES.to_vec()
    }

    fn constant(table: &mut Vec<f64>, c: f64) -> usize {
        table.push(c);
        table.len() - 1
    }

    fn k(i: usize) -> AsmMemoryOperand {
        k(i)
    }

    fn ptr(m: AsmMemoryOperand) -> AsmMemoryOperand {
        zmmword_ptr(m)
    }

    fn constants(a: &mut CodeAssembler) -> Result<(), IcedError> {
        entry::constants(a)
    }

    same_at_every_width!();

    fn neg(
        a: &mut CodeAssembler,
        r: AsmRegisterZmm,
        x: Src<AsmRegisterZmm>,
    ) -> Result<(), IcedError> {
        match x {
            Src::Reg(x) => a.vxorpd(r, x, SIGN),
            Src::Mem(m) => a.vxorpd(r, SIGN, m),
        }
    }

    /// `k1` = `g < 0` (from memory as `0 > g`, the operand order `vcmppd` allows).
    fn negative(a: &mut CodeAssembler, g: Src<AsmRegisterZmm>) -> Result<(), IcedError> {
        match g {
            Src::Reg(g) => a.vcmppd(k1, g, ZERO, LT_OQ),
            Src::Mem(m) => a.vcmppd(k1, ZERO, m, GT_OQ),
        }
    }

    fn blend(
        a: &mut CodeAssembler,
        r: AsmRegisterZmm,
        e: AsmRegisterZmm,
        t: Src<AsmRegisterZmm>,
    ) -> Result<(), IcedError> {
        match t {
            Src::Reg(t) => a.vblendmpd(r.k1(), e, t),
            Src::Mem(m) => a.vblendmpd(r.k1(), e, m),
        }
    }

    fn inv_eta(_: &mut CodeAssembler) -> Result<Src<AsmRegisterZmm>, IcedError> {
        Ok(Src::Mem(qword_bcst(rbx + frame::INV_ETA)))
    }

    /// The products under the masks `k4` and `k5` of the nonzero weights.
    fn smooth_forward(
        a: &mut CodeAssembler,
        r: AsmRegisterZmm,
        t: Src<AsmRegisterZmm>,
        e: Src<AsmRegisterZmm>,
        we: AsmRegisterZmm,
        wt: AsmRegisterZmm,
    ) -> Result<(), IcedError> {
        a.vcmppd(k4, wt, ZERO, NEQ_UQ)?;
        match t {
            Src::Reg(t) => a.vmulpd(r.k4().z(), wt, t)?,
            Src::Mem(m) => a.vmulpd(r.k4().z(), wt, m)?,
        }
        a.vcmppd(k5, we, ZERO, NEQ_UQ)?;
        match e {
            Src::Reg(e) => a.vmulpd(X[4].k5().z(), we, e)?,
            Src::Mem(m) => a.vmulpd(X[4].k5().z(), we, m)?,
        }
        a.vaddpd(r, r, X[4])
    }

    /// The exponent as a double (`vgetexppd`: `-inf` at zero, `+inf` at `+inf`, NaN
    /// quieted), times `ln 2`, and NaN where `x < 0` (`-inf` included), as the scalar function
    /// computes them.
    fn ln_stand_in(
        a: &mut CodeAssembler,
        to: AsmRegisterZmm,
        x: AsmRegisterZmm,
    ) -> Result<(), IcedError> {
        a.vgetexppd(to, x)?;
        a.vmulpd(to, to, k(routines::C_LN_2))?;
        a.vcmppd(k1, x, ZERO, LT_OQ)?;
        a.vbroadcastsd(to.k1(), qword_ptr(rbp + 8 * routines::C_NAN as i32))
    }

    fn softplus(
        a: &mut CodeAssembler,
        to: AsmRegisterZmm,
        x: AsmRegisterZmm,
    ) -> Result<(), IcedError> {
        a.vmaxpd(to, x, ZERO)?;
        a.vcmppd(k1, x, x, UNORD_Q)?;
        a.vaddpd(to.k1(), x, x)
    }
}

/// The step's own adjoint, and the lanes where it is not zero.
const OWN: AsmRegisterZmm = zmm0;
const OWN_NONZERO: AsmRegisterK = k6;

/// The reverse code's scratch registers.
const R: [AsmRegisterZmm; 15] = [
    zmm1, zmm2, zmm3, zmm4, zmm5, zmm6, zmm7, zmm8, zmm9, zmm10, zmm11, zmm12, zmm13, zmm14, zmm15,
];

impl ReverseVector for Avx512 {
    const PARTS: usize = 2;
    const CONSTS: &'static [f64] = &[1.0, 2.0, 0.5, -1.0];
    const OWN: AsmRegisterZmm = OWN;
    const ZERO: AsmRegisterZmm = ZERO;
    const R: &'static [AsmRegisterZmm] = &R;
    const ACC: &'static [AsmRegisterZmm] = &[
        zmm16, zmm17, zmm18, zmm19, zmm20, zmm21, zmm22, zmm23, zmm24, zmm25, zmm26, zmm27, zmm28,
        zmm29,
    ];
    const GUARD: [AsmRegisterZmm; 2] = [R[8], R[9]];
    const FOLD: AsmRegisterZmm = R[10];

    fn reverse_constants(a: &mut CodeAssembler) -> Result<(), IcedError> {
        entry::constants(a)
    }

    fn load_constant(a: &mut CodeAssembler, r: AsmRegisterZmm, i: usize) -> Result<(), IcedError> {
        a.vbroadcastsd(r, qword_ptr(rbp + 8 * i as i32))
    }

    fn negate(
        a: &mut CodeAssembler,
        r: AsmRegisterZmm,
        x: AsmRegisterZmm,
    ) -> Result<(), IcedError> {
        a.vxorpd(r, x, SIGN)
    }

    fn negate_value(
        a: &mut CodeAssembler,
        r: AsmRegisterZmm,
        m: AsmMemoryOperand,
    ) -> Result<(), IcedError> {
        a.vxorpd(r, SIGN, m)
    }

    fn times_inv_eta(
        a: &mut CodeAssembler,
        r: AsmRegisterZmm,
        x: AsmRegisterZmm,
    ) -> Result<(), IcedError> {
        a.vmulpd(r, x, qword_bcst(rbx + frame::INV_ETA))
    }

    fn own_nonzero(a: &mut CodeAssembler) -> Result<(), IcedError> {
        a.vcmppd(OWN_NONZERO, OWN, ZERO, NEQ_UQ)
    }

    /// A zeroing-masked product (under `k6` for the own adjoint, else `k1`).
    fn masked(
        a: &mut CodeAssembler,
        r: AsmRegisterZmm,
        d: AsmRegisterZmm,
        local: Src<AsmRegisterZmm>,
        own: bool,
    ) -> Result<(), IcedError> {
        let r = if own {
            r.k6().z()
        } else {
            a.vcmppd(k1, d, ZERO, NEQ_UQ)?;
            r.k1().z()
        };
        product(a, r, d, local)
    }

    /// Under `k1`, the nonzero lanes of `w` among `k6`'s.
    fn masked_by_weight(
        a: &mut CodeAssembler,
        r: AsmRegisterZmm,
        x: AsmRegisterZmm,
        y: Src<AsmRegisterZmm>,
        w: AsmRegisterZmm,
    ) -> Result<(), IcedError> {
        a.vcmppd(k1.k6(), w, ZERO, NEQ_UQ)?;
        product(a, r.k1().z(), x, y)
    }

    /// Zeroing-masked copies under `k2` (`0 > g`) and its complement `k3`.
    fn split_by_guard(
        a: &mut CodeAssembler,
        then: AsmRegisterZmm,
        other: AsmRegisterZmm,
        m: AsmMemoryOperand,
    ) -> Result<(), IcedError> {
        a.vcmppd(k2, ZERO, m, GT_OQ)?;
        a.knotb(k3, k2)?;
        a.vmovapd(then.k2().z(), OWN)?;
        a.vmovapd(other.k3().z(), OWN)
    }
}

/// `r = x * y` (`r` may carry a mask).
fn product(
    a: &mut CodeAssembler,
    r: AsmRegisterZmm,
    x: AsmRegisterZmm,
    y: Src<AsmRegisterZmm>,
) -> Result<(), IcedError> {
    match y {
        Src::Reg(y) => a.vmulpd(r, x, y),
        Src::Mem(m) => a.vmulpd(r, x, m),
    }
}
