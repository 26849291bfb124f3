//! The long numeric routines of the compiled code, emitted once per code and called: a
//! smoothed if-statement's weights and the logarithm, with their constants (first in every
//! code's constant table, read from `rbp`). Each is the `elementary` function's operations
//! in the same order, every `mul_add` one FMA instruction, so the bits are the interpreter's.
//! They take their operand in `X[0]` and leave their results in scratch registers; they
//! change no cached value (they borrow `zmm31` and zero it again).

use iced_x86::IcedError;
use iced_x86::code_asm::*;

use crate::elementary::{
    ATANH_COEFFS, E_BIAS, E_BIAS_SUBNORMAL, EXP_COEFFS, EXP_FLOOR, INV_LN2, LN_OFFSET, LN2_HI,
    LN2_LO, ROUND, SUBNORMAL_SCALE, TWO_TO_MINUS_64,
};

use super::regs::*;

/// The smoothed if-statement's and the logarithm's constants, first in every code's constant
/// table (integers as the doubles of their bits).
pub(super) const CONSTS: [f64; 36] = [
    EXP_FLOOR,
    INV_LN2,
    ROUND,
    LN2_HI,
    LN2_LO,
    1.0,
    // `k + 1087` from the bits of `k + ROUND` (see `exp_of_nonpositive`), as integers.
    f64::from_bits(1087u64.wrapping_sub(ROUND.to_bits())),
    TWO_TO_MINUS_64,
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
    // The logarithm's, from `C_LN` on.
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
];

/// Indices in [`CONSTS`] (`C_COEFF + i` is `EXP_COEFFS[i]`).
const C_FLOOR: usize = 0;
const C_INV_LN2: usize = 1;
const C_ROUND: usize = 2;
const C_LN2_HI: usize = 3;
const C_LN2_LO: usize = 4;
const C_ONE: usize = 5;
const C_BIAS: usize = 6;
const C_TWO_M64: usize = 7;
const C_COEFF: usize = 8;
const C_LN: usize = 18;
const C_MIN_POSITIVE: usize = C_LN;
const C_SUB_SCALE: usize = C_LN + 1;
const C_LN_OFFSET: usize = C_LN + 2;
const C_1023: usize = C_LN + 3;
const C_E_BITS: usize = C_LN + 4;
const C_E_BIAS: usize = C_LN + 5;
const C_E_BIAS_SUB: usize = C_LN + 6;
const C_HALF: usize = C_LN + 7;
const C_INF: usize = C_LN + 8;
const C_NAN: usize = C_LN + 9;
const C_NEG_INF: usize = C_LN + 10;
const C_ATANH: usize = C_LN + 11;

/// A broadcast of constant `i` of the code's table.
pub(super) fn k(i: usize) -> AsmMemoryOperand {
    qword_bcst(rbp + 8 * i as i32)
}

/// The weights routine: from `x` in `X[0]`, `exp_of_nonpositive(-|x|)` and
/// `sigmoid_big_small`, the else weight into `X[1]`, the then weight into `X[2]`.
pub(super) fn weights(a: &mut CodeAssembler) -> Result<(), IcedError> {
    let c = |i: usize| k(C_COEFF + i);
    let load = |i: usize| qword_ptr(rbp + 8 * i as i32);
    a.vorpd(X[1], X[0], SIGN)?; // -|x|
    a.vmaxpd(X[1], X[1], k(C_FLOOR))?; // x_c: the floor where -|x| is NaN, as `max`
    a.vbroadcastsd(X[2], load(C_ROUND))?;
    a.vfmadd231pd(X[2], X[1], k(C_INV_LN2))?; // kr
    a.vsubpd(X[3], X[2], k(C_ROUND))?; // k
    a.vmovapd(X[4], X[1])?;
    a.vfnmadd231pd(X[4], X[3], k(C_LN2_HI))?;
    a.vfnmadd231pd(X[4], X[3], k(C_LN2_LO))?; // r
    a.vmulpd(X[5], X[4], X[4])?; // r2
    a.vmulpd(X[6], X[5], X[5])?; // r4
    a.vmulpd(X[7], X[6], X[6])?; // r8
    // exp_q in Estrin's order: p0 = c8 r + c9 (X[3]), p1 (X[8]), p2 (X[9]), p3 (X[1]),
    // p4 (zmm31, zero again below).
    for (r, i) in [(X[3], 8), (X[8], 6), (X[9], 4), (X[1], 2), (ZERO, 0)] {
        a.vbroadcastsd(r, load(C_COEFF + i + 1))?;
        a.vfmadd231pd(r, X[4], c(i))?;
    }
    a.vfmadd231pd(X[3], X[8], X[5])?; // q0 = p1 r2 + p0
    a.vfmadd231pd(X[9], X[1], X[5])?; // q1 = p3 r2 + p2
    a.vfmadd231pd(X[3], X[9], X[6])?; // s0 = q1 r4 + q0
    a.vfmadd231pd(X[3], ZERO, X[7])?; // q = p4 r8 + s0
    a.vxorpd(ZERO, ZERO, ZERO)?;
    a.vfmadd231pd(X[4], X[5], X[3])?; // r2 q + r
    a.vaddpd(X[4], X[4], k(C_ONE))?; // p = 1 + (r2 q + r)
    a.vpaddq(X[2], X[2], k(C_BIAS))?;
    a.vpsllq(X[2], X[2], 52)?; // 2^(k + 64)
    a.vmulpd(X[4], X[4], X[2])?;
    a.vmulpd(X[4], X[4], k(C_TWO_M64))?; // e
    // sigmoid_big_small(e).
    a.vbroadcastsd(X[1], load(C_ONE))?;
    a.vaddpd(X[2], X[1], X[4])?; // d = 1 + e
    a.vsubpd(X[3], X[1], X[2])?;
    a.vaddpd(X[3], X[3], X[4])?; // d_err = (1 - d) + e
    a.vdivpd(X[5], X[1], X[2])?; // inv = 1 / d
    a.vmovapd(X[6], X[1])?;
    a.vfnmadd231pd(X[6], X[5], X[2])?;
    a.vfnmadd231pd(X[6], X[5], X[3])?;
    a.vmovapd(X[7], X[5])?;
    a.vfmadd231pd(X[7], X[6], X[5])?; // big
    a.vmulpd(X[8], X[4], X[5])?; // s0 = e inv
    a.vmovapd(X[9], X[4])?;
    a.vfnmadd231pd(X[9], X[8], X[2])?;
    a.vfnmadd231pd(X[9], X[8], X[3])?;
    a.vfmadd231pd(X[8], X[9], X[5])?; // small
    // sigmoid_pair_order(x, big, small), and x + x for both where x is NaN.
    a.vcmppd(k2, X[0], ZERO, GE_OQ)?;
    a.vblendmpd(X[1].k2(), X[8], X[7])?; // else weight: big where x >= 0
    a.vblendmpd(X[2].k2(), X[7], X[8])?; // then weight: small where x >= 0
    a.vcmppd(k3, X[0], X[0], UNORD_Q)?;
    a.vaddpd(X[3], X[0], X[0])?;
    a.vmovapd(X[1].k3(), X[3])?;
    a.vmovapd(X[2].k3(), X[3])?;
    a.ret()
}

/// The logarithm routine: `elementary::ln` of `X[0]` into `X[1]`.
pub(super) fn ln(a: &mut CodeAssembler) -> Result<(), IcedError> {
    let x = X[0];
    let load = |i: usize| qword_ptr(rbp + 8 * i as i32);
    let c = |i: usize| k(C_ATANH + i);
    // A subnormal is scaled into the normal range first (a select, then a product).
    a.vcmppd(k1, x, k(C_MIN_POSITIVE), LT_OQ)?;
    a.vbroadcastsd(X[1], load(C_ONE))?;
    a.vbroadcastsd(X[1].k1(), load(C_SUB_SCALE))?;
    a.vmulpd(X[1], x, X[1])?; // m
    a.vpaddq(X[2], X[1], k(C_LN_OFFSET))?;
    a.vpsrlq(X[2], X[2], 52)?; // eb
    a.vpsubq(X[3], X[2], k(C_1023))?;
    a.vpsllq(X[3], X[3], 52)?;
    a.vpsubq(X[3], X[1], X[3])?; // mantissa
    a.vsubpd(X[4], X[3], k(C_ONE))?; // f
    a.vaddpd(X[3], X[3], k(C_ONE))?;
    a.vdivpd(X[5], X[4], X[3])?; // s = f / (mantissa + 1)
    a.vporq(X[2], X[2], k(C_E_BITS))?;
    a.vbroadcastsd(X[3], load(C_E_BIAS))?;
    a.vbroadcastsd(X[3].k1(), load(C_E_BIAS_SUB))?;
    a.vsubpd(X[2], X[2], X[3])?; // e
    a.vmulpd(X[6], X[4], k(C_HALF))?;
    a.vmulpd(X[6], X[6], X[4])?; // hfsq = 0.5 f f
    a.vmulpd(X[7], X[5], X[5])?; // z = s^2
    a.vmulpd(X[8], X[7], X[7])?; // z^2
    a.vmulpd(X[9], X[8], X[8])?; // z^4
    // estrin7(z): p0 (X[3]), p1 (X[1]), p2 (zmm31, zero again after), then R in X[3].
    for (reg, i) in [(X[3], 5), (X[1], 3), (ZERO, 1)] {
        a.vbroadcastsd(reg, load(C_ATANH + i + 1))?;
        a.vfmadd231pd(reg, X[7], c(i))?;
    }
    a.vfmadd231pd(X[3], X[1], X[8])?; // q0 = p1 z^2 + p0
    a.vfmadd231pd(ZERO, X[8], c(0))?; // q1 = c0 z^2 + p2
    a.vfmadd231pd(X[3], ZERO, X[9])?; // R = q1 z^4 + q0
    a.vxorpd(ZERO, ZERO, ZERO)?;
    a.vmovapd(X[1], ZERO)?;
    a.vfmadd231pd(X[1], X[2], k(C_LN2_LO))?; // e LN2_LO + 0
    a.vfmadd231pd(X[1], X[5], X[6])?; // near = s hfsq + that
    a.vmulpd(X[8], X[5], X[7])?;
    a.vfmadd231pd(X[1], X[8], X[3])?; // tail = (s z) R + near
    a.vsubpd(X[9], X[6], X[1])?;
    a.vsubpd(X[9], X[4], X[9])?;
    a.vfmadd231pd(X[9], X[2], k(C_LN2_HI))?; // e LN2_HI + (f - (hfsq - tail))
    // `+inf` and NaN are themselves; 0 gives -inf and a negative number NaN.
    a.vcmppd(k2, x, k(C_INF), LT_OQ)?;
    a.vblendmpd(X[9].k2(), x, X[9])?;
    a.vcmppd(k3, x, ZERO, EQ_OQ)?;
    a.vbroadcastsd(X[8], load(C_NAN))?;
    a.vbroadcastsd(X[8].k3(), load(C_NEG_INF))?;
    a.vcmppd(k4, x, ZERO, LE_OQ)?;
    a.vblendmpd(X[1].k4(), X[9], X[8])?;
    a.ret()
}
