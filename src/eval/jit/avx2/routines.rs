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
//! A routine works on the two vectors of a half chunk: their operands come in `x[0]` of each
//! of [`SETS`], the results in `x[1]` (and `x[2]`); it uses every vector register, no
//! general register, and the red zone below the stack pointer (`ln`).

use iced_x86::IcedError;
use iced_x86::code_asm::*;

use crate::elementary::{EXP2_SIXTEENTHS, ROUND, TABLED_BIAS, TWO_TO_MINUS_64};

use super::super::routine_parts::{Insn, SigmoidRegs, ln_split, sigmoid_big_small};

pub(super) use super::super::consts::*;
pub(super) use super::super::regs::{EQ_OQ, GE_OQ, GT_OQ, LE_OQ, LT_OQ, NEQ_UQ, UNORD_Q};

/// The AVX2 code's constants besides the routines' shared ones ([`ROUTINES`]), after them in
/// its table.
const OWN: [f64; 10] = [
    -0.0,
    0.0,
    // `exp_of_nonpositive`'s biased exponent `k + 1087` from the bits of `kr`.
    f64::from_bits(1087u64.wrapping_sub(ROUND.to_bits())),
    // `exp_of_at_most`'s `k + 1082`, and the bias of each of its two factors.
    f64::from_bits(1082u64.wrapping_sub(ROUND.to_bits())),
    f64::from_bits(482),
    TWO_TO_MINUS_64,
    // `exp_of_nonpositive_tabled`'s bias of `kr`'s bits, and the mask of its table index.
    f64::from_bits(TABLED_BIAS),
    f64::from_bits(15),
    // Spare, so that the table's length is not a guess.
    0.0,
    0.0,
];

/// The routines' and the steps' constants, first in every AVX2 code's constant table
/// (integers as the doubles of their bits), each stored [`WIDTH`] times.
const CONSTS: [f64; ROUTINES.len() + OWN.len()] = {
    let mut all = [0.0; ROUTINES.len() + OWN.len()];
    let mut i = 0;
    while i < all.len() {
        all[i] = if i < ROUTINES.len() {
            ROUTINES[i]
        } else {
            OWN[i - ROUTINES.len()]
        };
        i += 1;
    }
    all
};

/// Lanes of one vector: copies of each constant in the table.
pub(super) const WIDTH: usize = 4;

/// The constant table's start: [`CONSTS`], each [`WIDTH`] times, then `EXP2_SIXTEENTHS` once
/// (its entries side by side for a gather; a whole number of [`WIDTH`]s).
pub(super) fn table() -> Vec<f64> {
    let mut t: Vec<f64> = CONSTS.iter().flat_map(|&c| [c; WIDTH]).collect();
    t.extend(EXP2_SIXTEENTHS);
    t
}

/// Where `EXP2_SIXTEENTHS` starts in the table, in bytes.
const EXP2_SIXTEENTHS_AT: i32 = (8 * WIDTH * CONSTS.len()) as i32;
const _: () = assert!(EXP2_SIXTEENTHS.len().is_multiple_of(WIDTH));

/// Indices in [`CONSTS`] of the AVX2 code's own constants (those of the routines are
/// shared: `consts.rs`).
pub(super) const C_SIGN: usize = ROUTINES.len();
pub(super) const C_ZERO: usize = C_SIGN + 1;
const C_NONPOSITIVE_BIAS: usize = C_SIGN + 2;
const C_AT_MOST_BIAS: usize = C_SIGN + 3;
const C_FACTOR_BIAS: usize = C_SIGN + 4;
const C_TWO_TO_MINUS_64: usize = C_SIGN + 5;
const C_TABLED_BIAS: usize = C_SIGN + 6;
const C_FIFTEEN: usize = C_SIGN + 7;

/// Constant `i` of the code's table as a whole vector.
pub(super) fn k(i: usize) -> AsmMemoryOperand {
    ymmword_ptr(rbp + (8 * WIDTH * i) as i32)
}

/// The registers of the routines' two sets (`x[0]` of each takes the operand): a routine
/// works on two vectors at once, one in each set's registers, its instructions interleaved
/// (see [`interleaved`]). They are every vector register: a call loses every cached value.
pub(super) const SETS: [[AsmRegisterYmm; 8]; 2] = [
    [ymm0, ymm1, ymm2, ymm3, ymm4, ymm5, ymm6, ymm7],
    [ymm8, ymm9, ymm10, ymm11, ymm12, ymm13, ymm14, ymm15],
];

/// A routine's instructions for one set.
struct Body(Vec<Insn>);

impl Body {
    fn push(&mut self, f: impl Fn(&mut CodeAssembler) -> Result<(), IcedError> + 'static) {
        self.0.push(Box::new(f));
    }
}

/// The routine `body` for both sets (set `s` spilling to its own slots of the red zone), one
/// instruction of each in turn, then `ret`. Why: each routine is one long dependency chain (a
/// division, then a polynomial); called once per vector, back to back, the chains did not
/// overlap enough (textmsg's smoothed sweep 0.76x the interpreter's AVX2 build, whose lane
/// loops interleave four vectors).
fn interleaved(
    a: &mut CodeAssembler,
    body: fn([AsmRegisterYmm; 8], i32) -> Body,
) -> Result<(), IcedError> {
    let (one, two) = (body(SETS[0], 0).0, body(SETS[1], 2).0);
    debug_assert_eq!(one.len(), two.len());
    for (i, j) in one.iter().zip(&two) {
        i(a)?;
        j(a)?;
    }
    a.ret()
}

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

/// The weights routine: from `x` in `r[0]`, `exp_of_nonpositive(-|x|)` and
/// `sigmoid_big_small`, the else weight into `r[1]`, the then weight into `r[2]`.
pub(super) fn weights(a: &mut CodeAssembler) -> Result<(), IcedError> {
    interleaved(a, |r, _| weights_with(r, false))
}

/// [`weights`] with `exp_of_nonpositive_tabled` and `sigmoid_big_small_plain` (a tape
/// `with_plain_weights`).
pub(super) fn weights_plain(a: &mut CodeAssembler) -> Result<(), IcedError> {
    interleaved(a, |r, _| weights_with(r, true))
}

fn weights_with(r: [AsmRegisterYmm; 8], plain: bool) -> Body {
    let mut b = Body(Vec::new());
    b.push(move |a| a.vorpd(r[1], r[0], k(C_SIGN))); // -|x|
    b.push(move |a| a.vmaxpd(r[1], r[1], k(C_FLOOR))); // x_c: the floor where -|x| is NaN
    if plain {
        exp_tabled(&mut b, r);
    } else {
        exp_reduced(&mut b, r);
        // `p * pow2_biased(kb + 5) * 2^-64`: `kb + 5` from the bits of `kr`.
        b.push(move |a| a.vpaddq(r[2], r[2], k(C_NONPOSITIVE_BIAS)));
        b.push(move |a| a.vpsllq(r[2], r[2], 52));
        b.push(move |a| a.vmulpd(r[1], r[1], r[2]));
        b.push(move |a| a.vmulpd(r[1], r[1], k(C_TWO_TO_MINUS_64))); // e
    }
    b.push(move |a| a.vmovupd(r[3], k(C_ONE)));
    let regs = SigmoidRegs {
        one: r[3],
        e: r[1],
        d: r[2],
        d_err: r[4],
        inv: r[5],
        big_err: r[6],
        big: r[7],
        small: r[3],
        spare: r[1],
    };
    sigmoid_big_small(&mut b.0, regs, plain);
    // sigmoid_pair_order(x, big, small), and x + x for both where x is NaN.
    b.push(move |a| a.vcmppd(r[4], r[0], k(C_ZERO), GE_OQ));
    b.push(move |a| select(a, r[1], r[3], r[7], r[4])); // else weight: big where x >= 0
    b.push(move |a| select(a, r[2], r[7], r[3], r[4])); // then weight: small where x >= 0
    b.push(move |a| a.vcmppd(r[4], r[0], r[0], UNORD_Q));
    b.push(move |a| a.vaddpd(r[5], r[0], r[0]));
    b.push(move |a| select(a, r[1], r[1], r[5], r[4]));
    b.push(move |a| select(a, r[2], r[2], r[5], r[4]));
    b
}

/// `exp_reduced` of the clamped argument in `r[1]`: `p` (`e^r`) into `r[1]`, `kr` into
/// `r[2]` (it uses `r[1..8]`).
fn exp_reduced(b: &mut Body, r: [AsmRegisterYmm; 8]) {
    let c = |i: usize| k(C_COEFF + i);
    b.push(move |a| a.vmovupd(r[2], k(C_ROUND)));
    b.push(move |a| a.vfmadd231pd(r[2], r[1], k(C_INV_LN2))); // kr
    b.push(move |a| a.vsubpd(r[3], r[2], k(C_ROUND))); // k
    b.push(move |a| a.vfnmadd231pd(r[1], r[3], k(C_LN2_HI)));
    b.push(move |a| a.vfnmadd231pd(r[1], r[3], k(C_LN2_LO))); // r
    b.push(move |a| a.vmulpd(r[3], r[1], r[1])); // r2
    // exp_q in Estrin's order, each pair joined as soon as it is made.
    b.push(move |a| a.vmovupd(r[4], c(9)));
    b.push(move |a| a.vfmadd231pd(r[4], r[1], c(8))); // p0
    b.push(move |a| a.vmovupd(r[5], c(7)));
    b.push(move |a| a.vfmadd231pd(r[5], r[1], c(6))); // p1
    b.push(move |a| a.vfmadd231pd(r[4], r[5], r[3])); // q0 = p1 r2 + p0
    b.push(move |a| a.vmulpd(r[5], r[3], r[3])); // r4
    b.push(move |a| a.vmovupd(r[6], c(5)));
    b.push(move |a| a.vfmadd231pd(r[6], r[1], c(4))); // p2
    b.push(move |a| a.vmovupd(r[7], c(3)));
    b.push(move |a| a.vfmadd231pd(r[7], r[1], c(2))); // p3
    b.push(move |a| a.vfmadd231pd(r[6], r[7], r[3])); // q1 = p3 r2 + p2
    b.push(move |a| a.vfmadd231pd(r[4], r[6], r[5])); // s0 = q1 r4 + q0
    b.push(move |a| a.vmulpd(r[5], r[5], r[5])); // r8
    b.push(move |a| a.vmovupd(r[6], c(1)));
    b.push(move |a| a.vfmadd231pd(r[6], r[1], c(0))); // p4
    b.push(move |a| a.vfmadd231pd(r[4], r[6], r[5])); // q = p4 r8 + s0
    b.push(move |a| a.vfmadd231pd(r[1], r[3], r[4])); // r2 q + r
    b.push(move |a| a.vaddpd(r[1], r[1], k(C_ONE))); // p = 1 + (r2 q + r)
}

/// `exp_of_nonpositive_tabled` of the clamped argument in `r[1]`: `e^x` into `r[1]` (it uses
/// `r[1..7]`). The table's entry `j` (the low four bits of `kr`) is read by a gather, and the
/// scaling by `2^m` is the scalar code's: `m + 1087` from the bits of `kr`, then two products.
fn exp_tabled(b: &mut Body, r: [AsmRegisterYmm; 8]) {
    let c = |i: usize| k(C_TABLED_COEFF + i);
    b.push(move |a| a.vmovupd(r[2], k(C_ROUND_SIXTEENTHS)));
    b.push(move |a| a.vfmadd231pd(r[2], r[1], k(C_INV_LN2))); // kr
    b.push(move |a| a.vsubpd(r[3], r[2], k(C_ROUND_SIXTEENTHS))); // k
    b.push(move |a| a.vfnmadd231pd(r[1], r[3], k(C_LN2_HI)));
    b.push(move |a| a.vfnmadd231pd(r[1], r[3], k(C_LN2_LO))); // r
    b.push(move |a| a.vpand(r[4], r[2], k(C_FIFTEEN))); // j
    b.push(move |a| a.vpcmpeqq(r[5], r[5], r[5])); // every lane gathered
    b.push(move |a| a.vgatherqpd_3(r[6], ptr(rbp + r[4] * 8 + EXP2_SIXTEENTHS_AT), r[5])); // t
    b.push(move |a| a.vmulpd(r[3], r[1], r[1])); // r2
    // Q in Estrin's order.
    b.push(move |a| a.vmovupd(r[4], c(2)));
    b.push(move |a| a.vfmadd231pd(r[4], r[1], c(1))); // c1 r + c2
    b.push(move |a| a.vmovupd(r[5], c(4)));
    b.push(move |a| a.vfmadd231pd(r[5], r[1], c(3))); // low = c3 r + c4
    b.push(move |a| a.vfmadd231pd(r[4], r[3], c(0))); // high = c0 r2 + (c1 r + c2)
    b.push(move |a| a.vfmadd213pd(r[4], r[3], r[5])); // q = high r2 + low
    b.push(move |a| a.vfmadd213pd(r[4], r[3], r[1])); // s = r2 q + r
    b.push(move |a| a.vfmadd213pd(r[6], r[4], r[6])); // p = t s + t
    b.push(move |a| a.vpaddq(r[2], r[2], k(C_TABLED_BIAS)));
    b.push(move |a| a.vpsrlq(r[2], r[2], 4));
    b.push(move |a| a.vpsllq(r[2], r[2], 52)); // 2^(m + 64)
    b.push(move |a| a.vmulpd(r[1], r[6], r[2]));
    b.push(move |a| a.vmulpd(r[1], r[1], k(C_TWO_TO_MINUS_64))); // e
}

/// The exponential routine: `elementary::exp` of `r[0]` into `r[1]`.
pub(super) fn exp(a: &mut CodeAssembler) -> Result<(), IcedError> {
    interleaved(a, exp_body)
}

fn exp_body(r: [AsmRegisterYmm; 8], _spill: i32) -> Body {
    let mut b = Body(Vec::new());
    b.push(move |a| a.vminpd(r[1], r[0], k(C_EXP_CEIL)));
    b.push(move |a| a.vmaxpd(r[1], r[1], k(C_FLOOR)));
    exp_reduced(&mut b, r);
    // `exp_of_at_most`: `kb = k + 1082` from the bits of `kr`, `k1 = kb >> 1`, and `p` times
    // `2^(k1 - 541)` and then `2^(kb - k1 - 541)`.
    b.push(move |a| a.vpaddq(r[2], r[2], k(C_AT_MOST_BIAS))); // kb
    b.push(move |a| a.vpsrlq(r[3], r[2], 1)); // k1
    b.push(move |a| a.vpsubq(r[2], r[2], r[3])); // kb - k1
    b.push(move |a| a.vpaddq(r[3], r[3], k(C_FACTOR_BIAS)));
    b.push(move |a| a.vpsllq(r[3], r[3], 52)); // s1
    b.push(move |a| a.vpaddq(r[2], r[2], k(C_FACTOR_BIAS)));
    b.push(move |a| a.vpsllq(r[2], r[2], 52)); // s2
    b.push(move |a| a.vmulpd(r[1], r[1], r[3]));
    b.push(move |a| a.vmulpd(r[1], r[1], r[2]));
    // `x + x` where `x` is NaN.
    b.push(move |a| a.vcmppd(r[3], r[0], r[0], UNORD_Q));
    b.push(move |a| a.vaddpd(r[2], r[0], r[0]));
    b.push(move |a| select(a, r[1], r[1], r[2], r[3]));
    b
}

/// Spill slot `i` below the stack pointer (the routines are leaves: the System V ABI keeps
/// the 128 bytes below it for them; each set has two).
fn spill(i: i32) -> AsmMemoryOperand {
    ymmword_ptr(rsp - 32 * (i + 1))
}

/// The logarithm routine: `elementary::ln` of `r[0]` into `r[1]` (`r[0]` left as it came).
/// `e` and `f` wait in the red zone while the polynomial needs their registers.
pub(super) fn ln(a: &mut CodeAssembler) -> Result<(), IcedError> {
    interleaved(a, ln_body)
}

fn ln_body(r: [AsmRegisterYmm; 8], slots: i32) -> Body {
    let mut b = Body(Vec::new());
    let x = r[0];
    let c = |i: usize| k(C_ATANH + i);
    // A subnormal is scaled into the normal range first (a select, then a product).
    b.push(move |a| a.vcmppd(r[6], x, k(C_MIN_POSITIVE), LT_OQ)); // sub
    b.push(move |a| a.vmovupd(r[1], k(C_ONE)));
    b.push(move |a| a.vblendvpd(r[1], r[1], k(C_SUB_SCALE), r[6]));
    b.push(move |a| a.vmulpd(r[1], x, r[1])); // m
    ln_split(&mut b.0, [r[0], r[1], r[2], r[3], r[4], r[5]], k);
    b.push(move |a| a.vpor(r[2], r[2], k(C_E_BITS)));
    b.push(move |a| a.vmovupd(r[3], k(C_E_BIAS)));
    b.push(move |a| a.vblendvpd(r[3], r[3], k(C_E_BIAS_SUB), r[6]));
    b.push(move |a| a.vsubpd(r[2], r[2], r[3])); // e
    b.push(move |a| a.vmulpd(r[6], r[4], k(C_HALF)));
    b.push(move |a| a.vmulpd(r[6], r[6], r[4])); // hfsq = 0.5 f f
    b.push(move |a| a.vxorpd(r[1], r[1], r[1]));
    b.push(move |a| a.vfmadd231pd(r[1], r[2], k(C_LN2_LO))); // e LN2_LO + 0
    b.push(move |a| a.vfmadd231pd(r[1], r[5], r[6])); // near = s hfsq + that
    b.push(move |a| a.vmovupd(spill(slots), r[2]));
    b.push(move |a| a.vmovupd(spill(slots + 1), r[4]));
    b.push(move |a| a.vmulpd(r[7], r[5], r[5])); // z = s^2
    b.push(move |a| a.vmulpd(r[5], r[5], r[7])); // s z
    // estrin7(z).
    b.push(move |a| a.vmulpd(r[2], r[7], r[7])); // z^2
    b.push(move |a| a.vmovupd(r[3], c(6)));
    b.push(move |a| a.vfmadd231pd(r[3], r[7], c(5))); // p0
    b.push(move |a| a.vmovupd(r[4], c(4)));
    b.push(move |a| a.vfmadd231pd(r[4], r[7], c(3))); // p1
    b.push(move |a| a.vfmadd231pd(r[3], r[4], r[2])); // q0 = p1 z^2 + p0
    b.push(move |a| a.vmovupd(r[4], c(2)));
    b.push(move |a| a.vfmadd231pd(r[4], r[7], c(1))); // p2
    b.push(move |a| a.vfmadd231pd(r[4], r[2], c(0))); // q1 = c0 z^2 + p2
    b.push(move |a| a.vmulpd(r[2], r[2], r[2])); // z^4
    b.push(move |a| a.vfmadd231pd(r[3], r[4], r[2])); // R = q1 z^4 + q0
    b.push(move |a| a.vfmadd231pd(r[1], r[5], r[3])); // tail = (s z) R + near
    b.push(move |a| a.vsubpd(r[2], r[6], r[1]));
    b.push(move |a| a.vmovupd(r[4], spill(slots + 1)));
    b.push(move |a| a.vsubpd(r[2], r[4], r[2]));
    b.push(move |a| a.vmovupd(r[3], spill(slots)));
    b.push(move |a| a.vfmadd231pd(r[2], r[3], k(C_LN2_HI))); // e LN2_HI + (f - (hfsq - tail))
    // `+inf` and NaN are themselves; 0 gives -inf and a negative number NaN.
    b.push(move |a| a.vcmppd(r[7], x, k(C_INF), LT_OQ));
    b.push(move |a| select(a, r[2], x, r[2], r[7]));
    b.push(move |a| a.vcmppd(r[7], x, k(C_ZERO), EQ_OQ));
    b.push(move |a| a.vmovupd(r[6], k(C_NAN)));
    b.push(move |a| a.vblendvpd(r[6], r[6], k(C_NEG_INF), r[7]));
    b.push(move |a| a.vcmppd(r[7], x, k(C_ZERO), LE_OQ));
    b.push(move |a| select(a, r[1], r[2], r[6], r[7]));
    b
}
