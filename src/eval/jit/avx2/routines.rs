//! The long numeric routines of the AVX2 forward code (a smoothed if-statement's weights,
//! `exp` and `ln`), emitted once per code and called, with their constants (first in the
//! code's table, each stored four times so that an instruction reads it as a whole vector:
//! AVX2 has no broadcast operand).
//!
//! Each is the `elementary` function's operations in the same order, every `mul_add` one FMA
//! instruction, as the AVX-512 routines (`jit/routines.rs`) have them; what AVX2 lacks is
//! written with the scalar code's own bit arithmetic: the scaling by `2^k` as the exponent
//! field built with integer shifts and additions (`pow2_biased`) and the products the scalar
//! code rounds in (where `vscalefpd` gives their result in one instruction), and every
//! select as a comparison into a vector register and `vblendvpd`. So the bits are the
//! interpreter's.
//!
//! A routine works on one vector of four lanes: its operand comes in `x[0]` of [`SET`], its
//! results in `x[1]` (and `x[2]`); it uses every register of [`SET`] (`ymm5..ymm15`) and no
//! other, and no general register.

use iced_x86::IcedError;
use iced_x86::code_asm::*;

use crate::elementary::{
    ATANH_COEFFS, E_BIAS, E_BIAS_SUBNORMAL, EXP_COEFFS, EXP_FLOOR, INV_LN2, LN_OFFSET, LN2_HI,
    LN2_LO, ROUND, SUBNORMAL_SCALE, TWO_TO_MINUS_64,
};

/// The routines' and the steps' constants, first in every AVX2 code's constant table
/// (integers as the doubles of their bits), each stored [`WIDTH`] times.
const CONSTS: [f64; 44] = [
    EXP_FLOOR,
    INV_LN2,
    ROUND,
    LN2_HI,
    LN2_LO,
    1.0,
    EXP_COEFFS[0],
    EXP_COEFFS[1],
    EXP_COEFFS[2],
    EXP_COEFFS[3],
    EXP_COEFFS[4],
    EXP_COEFFS[5],
    EXP_COEFFS[6],
    EXP_COEFFS[7],
    EXP_COEFFS[8],
    EXP_COEFFS[9],
    f64::MIN_POSITIVE,
    SUBNORMAL_SCALE,
    f64::from_bits(0x3ff0_0000_0000_0000 - LN_OFFSET),
    f64::from_bits(1023),
    f64::from_bits(ROUND.to_bits() - (1u64 << 51)),
    E_BIAS,
    E_BIAS_SUBNORMAL,
    0.5,
    f64::INFINITY,
    f64::NAN,
    f64::NEG_INFINITY,
    ATANH_COEFFS[0],
    ATANH_COEFFS[1],
    ATANH_COEFFS[2],
    ATANH_COEFFS[3],
    ATANH_COEFFS[4],
    ATANH_COEFFS[5],
    ATANH_COEFFS[6],
    710.0,
    std::f64::consts::LN_2,
    -0.0,
    0.0,
    // `exp_of_nonpositive`'s biased exponent `k + 1087` from the bits of `kr`.
    f64::from_bits(1087u64.wrapping_sub(ROUND.to_bits())),
    // `exp_of_at_most`'s `k + 1082`, and the bias of each of its two factors.
    f64::from_bits(1082u64.wrapping_sub(ROUND.to_bits())),
    f64::from_bits(482),
    TWO_TO_MINUS_64,
    // Spare, so that the table's length is not a guess.
    0.0,
    0.0,
];

/// Lanes of one vector: copies of each constant in the table.
pub(super) const WIDTH: usize = 4;

/// The constant table's start: [`CONSTS`], each [`WIDTH`] times.
pub(super) fn table() -> Vec<f64> {
    CONSTS.iter().flat_map(|&c| [c; WIDTH]).collect()
}

/// Indices in [`CONSTS`] (`C_COEFF + i` is `EXP_COEFFS[i]`, `C_ATANH + i` `ATANH_COEFFS[i]`).
const C_FLOOR: usize = 0;
const C_INV_LN2: usize = 1;
const C_ROUND: usize = 2;
const C_LN2_HI: usize = 3;
const C_LN2_LO: usize = 4;
pub(super) const C_ONE: usize = 5;
const C_COEFF: usize = 6;
pub(super) const C_MIN_POSITIVE: usize = 16;
pub(super) const C_SUB_SCALE: usize = 17;
const C_LN_OFFSET: usize = 18;
const C_1023: usize = 19;
pub(super) const C_E_BITS: usize = 20;
pub(super) const C_E_BIAS: usize = 21;
pub(super) const C_E_BIAS_SUB: usize = 22;
const C_HALF: usize = 23;
pub(super) const C_INF: usize = 24;
pub(super) const C_NAN: usize = 25;
pub(super) const C_NEG_INF: usize = 26;
const C_ATANH: usize = 27;
const C_EXP_CEIL: usize = 34;
pub(super) const C_LN_2: usize = 35;
pub(super) const C_SIGN: usize = 36;
pub(super) const C_ZERO: usize = 37;
const C_NONPOSITIVE_BIAS: usize = 38;
const C_AT_MOST_BIAS: usize = 39;
const C_FACTOR_BIAS: usize = 40;
const C_TWO_TO_MINUS_64: usize = 41;

/// Constant `i` of the code's table as a whole vector.
pub(super) fn k(i: usize) -> AsmMemoryOperand {
    ymmword_ptr(rbp + (8 * WIDTH * i) as i32)
}

/// The routines' registers: the operand comes in `x[0]`; `t` is one more temporary.
pub(super) struct Set {
    pub x: [AsmRegisterYmm; 10],
    t: AsmRegisterYmm,
}

pub(super) const SET: Set = Set {
    x: [
        ymm5, ymm6, ymm7, ymm8, ymm9, ymm10, ymm11, ymm12, ymm13, ymm14,
    ],
    t: ymm15,
};

/// `x` = `t` where `m` (all ones), else `e`.
fn select(
    a: &mut CodeAssembler,
    x: AsmRegisterYmm,
    e: AsmRegisterYmm,
    t: AsmRegisterYmm,
    m: AsmRegisterYmm,
) -> Result<(), IcedError> {
    a.vblendvpd(x, e, t, m)
}

/// `vcmppd` predicates (ordered, quiet: false on NaN, like Rust's comparisons; `NEQ_UQ` true
/// on NaN, `UNORD_Q` "is NaN").
pub(super) const LT_OQ: i32 = 0x11;
pub(super) const GT_OQ: i32 = 0x1e;
pub(super) const GE_OQ: i32 = 0x1d;
pub(super) const NEQ_UQ: i32 = 0x04;
pub(super) const UNORD_Q: i32 = 0x03;
pub(super) const EQ_OQ: i32 = 0x00;
pub(super) const LE_OQ: i32 = 0x12;

/// The weights routine: from `x` in `x[0]`, `exp_of_nonpositive(-|x|)` and
/// `sigmoid_big_small`, the else weight into `x[1]`, the then weight into `x[2]`.
pub(super) fn weights(a: &mut CodeAssembler) -> Result<(), IcedError> {
    let x = SET.x;
    a.vorpd(x[1], x[0], k(C_SIGN))?; // -|x|
    a.vmaxpd(x[1], x[1], k(C_FLOOR))?; // x_c: the floor where -|x| is NaN
    exp_reduced(a)?;
    // `p * pow2_biased(kb + 5) * 2^-64`: `kb + 5` from the bits of `kr`.
    a.vpaddq(x[2], x[2], k(C_NONPOSITIVE_BIAS))?;
    a.vpsllq(x[2], x[2], 52)?;
    a.vmulpd(x[4], x[4], x[2])?;
    a.vmulpd(x[4], x[4], k(C_TWO_TO_MINUS_64))?; // e
    // sigmoid_big_small(e).
    a.vmovupd(x[1], k(C_ONE))?;
    a.vaddpd(x[2], x[1], x[4])?; // d = 1 + e
    a.vsubpd(x[3], x[1], x[2])?;
    a.vaddpd(x[3], x[3], x[4])?; // d_err = (1 - d) + e
    a.vdivpd(x[5], x[1], x[2])?; // inv = 1 / d
    a.vmovapd(x[6], x[1])?;
    a.vfnmadd231pd(x[6], x[5], x[2])?;
    a.vfnmadd231pd(x[6], x[5], x[3])?;
    a.vmovapd(x[7], x[5])?;
    a.vfmadd231pd(x[7], x[6], x[5])?; // big
    a.vmulpd(x[8], x[4], x[5])?; // s0 = e inv
    a.vmovapd(x[9], x[4])?;
    a.vfnmadd231pd(x[9], x[8], x[2])?;
    a.vfnmadd231pd(x[9], x[8], x[3])?;
    a.vfmadd231pd(x[8], x[9], x[5])?; // small
    // sigmoid_pair_order(x, big, small), and x + x for both where x is NaN.
    a.vcmppd(x[3], x[0], k(C_ZERO), GE_OQ)?;
    select(a, x[1], x[8], x[7], x[3])?; // else weight: big where x >= 0
    select(a, x[2], x[7], x[8], x[3])?; // then weight: small where x >= 0
    a.vcmppd(x[3], x[0], x[0], UNORD_Q)?;
    a.vaddpd(x[4], x[0], x[0])?;
    select(a, x[1], x[1], x[4], x[3])?;
    select(a, x[2], x[2], x[4], x[3])?;
    a.ret()
}

/// `exp_reduced` of the clamped argument in `x[1]`: `p` (`e^r`) into `x[4]`, `kr` left in
/// `x[2]` (it uses `x[1..10]` and `t`).
fn exp_reduced(a: &mut CodeAssembler) -> Result<(), IcedError> {
    let (x, t) = (SET.x, SET.t);
    let c = |i: usize| k(C_COEFF + i);
    a.vmovupd(x[2], k(C_ROUND))?;
    a.vfmadd231pd(x[2], x[1], k(C_INV_LN2))?; // kr
    a.vsubpd(x[3], x[2], k(C_ROUND))?; // k
    a.vmovapd(x[4], x[1])?;
    a.vfnmadd231pd(x[4], x[3], k(C_LN2_HI))?;
    a.vfnmadd231pd(x[4], x[3], k(C_LN2_LO))?; // r
    a.vmulpd(x[5], x[4], x[4])?; // r2
    a.vmulpd(x[6], x[5], x[5])?; // r4
    a.vmulpd(x[7], x[6], x[6])?; // r8
    // exp_q in Estrin's order: p0 = c8 r + c9 (x[3]), p1 (x[8]), p2 (x[9]), p3 (x[1]), p4 (t).
    for (r, i) in [(x[3], 8), (x[8], 6), (x[9], 4), (x[1], 2), (t, 0)] {
        a.vmovupd(r, c(i + 1))?;
        a.vfmadd231pd(r, x[4], c(i))?;
    }
    a.vfmadd231pd(x[3], x[8], x[5])?; // q0 = p1 r2 + p0
    a.vfmadd231pd(x[9], x[1], x[5])?; // q1 = p3 r2 + p2
    a.vfmadd231pd(x[3], x[9], x[6])?; // s0 = q1 r4 + q0
    a.vfmadd231pd(x[3], t, x[7])?; // q = p4 r8 + s0
    a.vfmadd231pd(x[4], x[5], x[3])?; // r2 q + r
    a.vaddpd(x[4], x[4], k(C_ONE)) // p = 1 + (r2 q + r)
}

/// The exponential routine: `elementary::exp` of `x[0]` into `x[1]`.
pub(super) fn exp(a: &mut CodeAssembler) -> Result<(), IcedError> {
    let x = SET.x;
    a.vminpd(x[1], x[0], k(C_EXP_CEIL))?;
    a.vmaxpd(x[1], x[1], k(C_FLOOR))?;
    exp_reduced(a)?;
    // `exp_of_at_most`: `kb = k + 1082` from the bits of `kr`, `k1 = kb >> 1`, and `p` times
    // `2^(k1 - 541)` and then `2^(kb - k1 - 541)`.
    a.vpaddq(x[2], x[2], k(C_AT_MOST_BIAS))?; // kb
    a.vpsrlq(x[3], x[2], 1)?; // k1
    a.vpsubq(x[2], x[2], x[3])?; // kb - k1
    a.vpaddq(x[3], x[3], k(C_FACTOR_BIAS))?;
    a.vpsllq(x[3], x[3], 52)?; // s1
    a.vpaddq(x[2], x[2], k(C_FACTOR_BIAS))?;
    a.vpsllq(x[2], x[2], 52)?; // s2
    a.vmulpd(x[4], x[4], x[3])?;
    a.vmulpd(x[4], x[4], x[2])?;
    // `x + x` where `x` is NaN.
    a.vcmppd(x[3], x[0], x[0], UNORD_Q)?;
    a.vaddpd(x[2], x[0], x[0])?;
    select(a, x[1], x[4], x[2], x[3])?;
    a.ret()
}

/// The logarithm routine: `elementary::ln` of `x[0]` into `x[1]` (`x[0]` left as it came).
pub(super) fn ln(a: &mut CodeAssembler) -> Result<(), IcedError> {
    let (x, r, t) = (SET.x[0], SET.x, SET.t);
    let c = |i: usize| k(C_ATANH + i);
    // A subnormal is scaled into the normal range first (a select, then a product).
    a.vcmppd(r[6], x, k(C_MIN_POSITIVE), LT_OQ)?; // sub
    a.vmovupd(r[1], k(C_ONE))?;
    a.vblendvpd(r[1], r[1], k(C_SUB_SCALE), r[6])?;
    a.vmulpd(r[1], x, r[1])?; // m
    a.vpaddq(r[2], r[1], k(C_LN_OFFSET))?;
    a.vpsrlq(r[2], r[2], 52)?; // eb
    a.vpsubq(r[3], r[2], k(C_1023))?;
    a.vpsllq(r[3], r[3], 52)?;
    a.vpsubq(r[3], r[1], r[3])?; // mantissa
    a.vsubpd(r[4], r[3], k(C_ONE))?; // f
    a.vaddpd(r[3], r[3], k(C_ONE))?;
    a.vdivpd(r[5], r[4], r[3])?; // s = f / (mantissa + 1)
    a.vpor(r[2], r[2], k(C_E_BITS))?;
    a.vmovupd(r[3], k(C_E_BIAS))?;
    a.vblendvpd(r[3], r[3], k(C_E_BIAS_SUB), r[6])?;
    a.vsubpd(r[2], r[2], r[3])?; // e
    a.vmulpd(r[6], r[4], k(C_HALF))?;
    a.vmulpd(r[6], r[6], r[4])?; // hfsq = 0.5 f f
    a.vmulpd(r[7], r[5], r[5])?; // z = s^2
    a.vmulpd(r[8], r[7], r[7])?; // z^2
    a.vmulpd(r[9], r[8], r[8])?; // z^4
    // estrin7(z): p0 (r[3]), p1 (r[1]), p2 (t), then R in r[3].
    for (reg, i) in [(r[3], 5), (r[1], 3), (t, 1)] {
        a.vmovupd(reg, c(i + 1))?;
        a.vfmadd231pd(reg, r[7], c(i))?;
    }
    a.vfmadd231pd(r[3], r[1], r[8])?; // q0 = p1 z^2 + p0
    a.vfmadd231pd(t, r[8], c(0))?; // q1 = c0 z^2 + p2
    a.vfmadd231pd(r[3], t, r[9])?; // R = q1 z^4 + q0
    a.vxorpd(r[1], r[1], r[1])?;
    a.vfmadd231pd(r[1], r[2], k(C_LN2_LO))?; // e LN2_LO + 0
    a.vfmadd231pd(r[1], r[5], r[6])?; // near = s hfsq + that
    a.vmulpd(r[8], r[5], r[7])?;
    a.vfmadd231pd(r[1], r[8], r[3])?; // tail = (s z) R + near
    a.vsubpd(r[9], r[6], r[1])?;
    a.vsubpd(r[9], r[4], r[9])?;
    a.vfmadd231pd(r[9], r[2], k(C_LN2_HI))?; // e LN2_HI + (f - (hfsq - tail))
    // `+inf` and NaN are themselves; 0 gives -inf and a negative number NaN.
    a.vcmppd(r[7], x, k(C_INF), LT_OQ)?;
    select(a, r[9], x, r[9], r[7])?;
    a.vcmppd(r[7], x, k(C_ZERO), EQ_OQ)?;
    a.vmovupd(r[8], k(C_NAN))?;
    a.vblendvpd(r[8], r[8], k(C_NEG_INF), r[7])?;
    a.vcmppd(r[7], x, k(C_ZERO), LE_OQ)?;
    select(a, r[1], r[9], r[8], r[7])?;
    a.ret()
}
