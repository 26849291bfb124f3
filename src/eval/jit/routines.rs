//! The long numeric routines of the compiled code, emitted once per code and called: a
//! smoothed if-statement's weights and the logarithm, with their constants (first in every
//! code's constant table, read from `rbp`). Each is the `elementary` function's operations
//! in the same order, every `mul_add` one FMA instruction, so the bits are the interpreter's.
//!
//! Each works on both halves of a chunk at once: the operations of one half in the registers
//! of [`SET_A`], those of the other in [`SET_B`], one instruction of each in turn. Why: each
//! routine is one long dependency chain (a division, then a polynomial), and called once per
//! half the chains ran one after the other; in textmsg's profile the samples piled up on the
//! instructions waiting for the division and the polynomial. Interleaved, each half's
//! instructions fill the other's waits.
//!
//! They take their operands in `x[0]` of each set and leave their results in its other
//! registers; they use the registers of both sets (the cache pairs in `zmm10..zmm19` are lost:
//! see `emit.rs`) and borrow `zmm31` (zero) and `zmm30` (`-0.0`), and set them again.

use iced_x86::IcedError;
use iced_x86::code_asm::*;

pub(super) use super::consts::*;
use super::regs::*;
use super::routine_parts::{Insn, SigmoidRegs, ln_split, sigmoid_big_small};

/// A broadcast of constant `i` of the code's table.
pub(super) fn k(i: usize) -> AsmMemoryOperand {
    qword_bcst(rbp + 8 * i as i32)
}

/// The registers one half's operations use.
#[derive(Clone, Copy)]
pub(super) struct Set {
    /// Scratch; the operand comes in `x[0]`.
    pub x: [AsmRegisterZmm; 10],
    /// Borrowed for one more temporary, and set again after.
    t: AsmRegisterZmm,
    /// Whether `t` is `zmm30` (set again to `-0.0` from the frame) rather than `zmm31` (zero).
    t_is_sign: bool,
    /// A mask that lives through the routine, and one that lives for a few instructions
    /// (numbers: `k1` is 1).
    long: usize,
    short: usize,
}

/// The mask registers by number.
const K: [AsmRegisterK; 8] = [k0, k1, k2, k3, k4, k5, k6, k7];

/// `r` written under mask `k<m>`.
fn under(r: AsmRegisterZmm, m: usize) -> AsmRegisterZmm {
    match m {
        1 => r.k1(),
        2 => r.k2(),
        3 => r.k3(),
        4 => r.k4(),
        5 => r.k5(),
        6 => r.k6(),
        _ => r.k7(),
    }
}

pub(super) const SET_A: Set = Set {
    x: [
        zmm10, zmm11, zmm12, zmm13, zmm14, zmm15, zmm16, zmm17, zmm18, zmm19,
    ],
    t: ZERO,
    t_is_sign: false,
    long: 1,
    short: 2,
};

pub(super) const SET_B: Set = Set {
    x: [
        zmm20, zmm21, zmm22, zmm23, zmm24, zmm25, zmm26, zmm27, zmm28, zmm29,
    ],
    t: SIGN,
    t_is_sign: true,
    long: 3,
    short: 4,
};

/// Collects a routine's instructions for one set.
struct Body(Vec<Insn>);

impl Body {
    fn push(&mut self, f: impl Fn(&mut CodeAssembler) -> Result<(), IcedError> + 'static) {
        self.0.push(Box::new(f));
    }

    /// Sets the borrowed register `t` again: zero, or `-0.0` in every lane.
    fn reset(&mut self, s: Set) {
        if s.t_is_sign {
            self.push(move |a| a.vbroadcastsd(s.t, qword_ptr(rbx + super::frame::SIGN)));
        } else {
            self.push(move |a| a.vxorpd(s.t, s.t, s.t));
        }
    }
}

/// The routine `body` for both sets, one instruction of each in turn, then `ret`. Both sets'
/// instruction lists have the same shape, so an instruction of one set never runs between
/// the other's borrowing of `zmm31` and its setting it again where that one reads zero.
fn interleaved(a: &mut CodeAssembler, body: fn(Set) -> Body) -> Result<(), IcedError> {
    let (one, two) = (body(SET_A).0, body(SET_B).0);
    debug_assert_eq!(one.len(), two.len());
    for (i, j) in one.iter().zip(&two) {
        i(a)?;
        j(a)?;
    }
    a.ret()
}

/// The weights routine: from `x` in `x[0]` of each set, `exp_of_nonpositive(-|x|)` and
/// `sigmoid_big_small`, the else weight into `x[1]`, the then weight into `x[2]`.
pub(super) fn weights(a: &mut CodeAssembler) -> Result<(), IcedError> {
    interleaved(a, weights_body)
}

/// [`weights`] with `exp_of_nonpositive_tabled` and `sigmoid_big_small_plain` (a tape
/// `with_plain_weights`).
pub(super) fn weights_plain(a: &mut CodeAssembler) -> Result<(), IcedError> {
    interleaved(a, weights_plain_body)
}

fn weights_body(s: Set) -> Body {
    weights_with(s, false)
}

fn weights_plain_body(s: Set) -> Body {
    weights_with(s, true)
}

fn weights_with(s: Set, plain: bool) -> Body {
    let mut b = Body(Vec::new());
    let x = s.x;
    let load = |i: usize| qword_ptr(rbp + 8 * i as i32);
    b.push(move |a| a.vorpd(x[1], x[0], SIGN)); // -|x|
    b.push(move |a| a.vmaxpd(x[1], x[1], k(C_FLOOR))); // x_c: the floor where -|x| is NaN
    if plain {
        exp_tabled(&mut b, s);
    } else {
        exp_reduced_scaled(&mut b, s);
    }
    b.push(move |a| a.vbroadcastsd(x[1], load(C_ONE)));
    let regs = SigmoidRegs {
        one: x[1],
        e: x[4],
        d: x[2],
        d_err: x[3],
        inv: x[5],
        big_err: x[6],
        big: x[7],
        small: x[8],
        spare: x[9],
    };
    sigmoid_big_small(&mut b.0, regs, plain);
    // sigmoid_pair_order(x, big, small), and x + x for both where x is NaN.
    let m = s.short;
    b.push(move |a| a.vcmppd(K[m], x[0], ZERO, GE_OQ));
    b.push(move |a| a.vblendmpd(under(x[1], m), x[8], x[7])); // else weight: big where x >= 0
    b.push(move |a| a.vblendmpd(under(x[2], m), x[7], x[8])); // then weight: small where x >= 0
    b.push(move |a| a.vcmppd(K[m], x[0], x[0], UNORD_Q));
    b.push(move |a| a.vaddpd(x[3], x[0], x[0]));
    b.push(move |a| a.vmovapd(under(x[1], m), x[3]));
    b.push(move |a| a.vmovapd(under(x[2], m), x[3]));
    b
}

/// `exp_reduced` of the clamped argument in `x[1]`, scaled by `2^k`: `e^x` into `x[4]` (it
/// uses `x[1..10]` and the borrowed register, set again).
fn exp_reduced_scaled(b: &mut Body, s: Set) {
    let x = s.x;
    let c = |i: usize| k(C_COEFF + i);
    let load = |i: usize| qword_ptr(rbp + 8 * i as i32);
    b.push(move |a| a.vbroadcastsd(x[2], load(C_ROUND)));
    b.push(move |a| a.vfmadd231pd(x[2], x[1], k(C_INV_LN2))); // kr
    b.push(move |a| a.vsubpd(x[3], x[2], k(C_ROUND))); // k
    b.push(move |a| a.vmovapd(x[4], x[1]));
    b.push(move |a| a.vfnmadd231pd(x[4], x[3], k(C_LN2_HI)));
    b.push(move |a| a.vfnmadd231pd(x[4], x[3], k(C_LN2_LO))); // r
    b.push(move |a| a.vmulpd(x[5], x[4], x[4])); // r2
    b.push(move |a| a.vmulpd(x[6], x[5], x[5])); // r4
    b.push(move |a| a.vmulpd(x[7], x[6], x[6])); // r8
    // exp_q in Estrin's order: p0 = c8 r + c9 (x[3]), p1 (x[8]), p2 (x[9]), p3 (x[1]),
    // p4 (the borrowed register, set again below).
    for (r, i) in [(x[3], 8), (x[8], 6), (x[9], 4), (x[1], 2), (s.t, 0)] {
        b.push(move |a| a.vbroadcastsd(r, load(C_COEFF + i + 1)));
        b.push(move |a| a.vfmadd231pd(r, x[4], c(i)));
    }
    b.push(move |a| a.vfmadd231pd(x[3], x[8], x[5])); // q0 = p1 r2 + p0
    b.push(move |a| a.vfmadd231pd(x[9], x[1], x[5])); // q1 = p3 r2 + p2
    b.push(move |a| a.vfmadd231pd(x[3], x[9], x[6])); // s0 = q1 r4 + q0
    b.push(move |a| a.vfmadd231pd(x[3], s.t, x[7])); // q = p4 r8 + s0
    b.reset(s);
    b.push(move |a| a.vfmadd231pd(x[4], x[5], x[3])); // r2 q + r
    b.push(move |a| a.vaddpd(x[4], x[4], k(C_ONE))); // p = 1 + (r2 q + r)
    // `exp_of_nonpositive` scales `p` by `2^(k + 64)` and then `2^-64`, `exp_of_at_most` by
    // two powers of two: in both the first product is exact and the second rounds once, so
    // the result is the correctly rounded `p * 2^k`, which `vscalefpd` gives in one
    // instruction (`k` again from `kr`, exactly).
    b.push(move |a| a.vsubpd(x[2], x[2], k(C_ROUND))); // k
    b.push(move |a| a.vscalefpd(x[4], x[4], x[2])); // e
}

/// `exp_of_nonpositive_tabled` of the clamped argument in `x[1]`: `e^x` into `x[4]` (it uses
/// `x[1..9]`). The table's entry `j` is read by `vpermt2pd` from the table's two halves (one
/// loaded, one the memory operand) with `kr` itself as the index: the instruction reads only
/// an index's low four bits, which are `j`. The scaling by `2^m`, `m = floor(k)`, is
/// `vscalefpd` by `k` (see [`exp_reduced_scaled`]).
fn exp_tabled(b: &mut Body, s: Set) {
    let x = s.x;
    let c = |i: usize| k(C_TABLED_COEFF + i);
    let load = |i: usize| qword_ptr(rbp + 8 * i as i32);
    let half = |h: i32| zmmword_ptr(rbp + 8 * C_EXP2_SIXTEENTHS as i32 + 64 * h);
    b.push(move |a| a.vbroadcastsd(x[2], load(C_ROUND_SIXTEENTHS)));
    b.push(move |a| a.vfmadd231pd(x[2], x[1], k(C_INV_LN2))); // kr
    b.push(move |a| a.vsubpd(x[3], x[2], k(C_ROUND_SIXTEENTHS))); // k
    b.push(move |a| a.vmovapd(x[4], x[1]));
    b.push(move |a| a.vfnmadd231pd(x[4], x[3], k(C_LN2_HI)));
    b.push(move |a| a.vfnmadd231pd(x[4], x[3], k(C_LN2_LO))); // r
    b.push(move |a| a.vmovupd(x[5], half(0)));
    b.push(move |a| a.vpermt2pd(x[5], x[2], half(1))); // t = 2^(j/16)
    b.push(move |a| a.vmulpd(x[6], x[4], x[4])); // r2
    // Q in Estrin's order.
    b.push(move |a| a.vbroadcastsd(x[7], load(C_TABLED_COEFF + 2)));
    b.push(move |a| a.vfmadd231pd(x[7], x[4], c(1))); // c1 r + c2
    b.push(move |a| a.vbroadcastsd(x[8], load(C_TABLED_COEFF + 4)));
    b.push(move |a| a.vfmadd231pd(x[8], x[4], c(3))); // low = c3 r + c4
    b.push(move |a| a.vfmadd231pd(x[7], x[6], c(0))); // high = c0 r2 + (c1 r + c2)
    b.push(move |a| a.vfmadd213pd(x[7], x[6], x[8])); // q = high r2 + low
    b.push(move |a| a.vfmadd213pd(x[7], x[6], x[4])); // s = r2 q + r
    b.push(move |a| a.vfmadd213pd(x[5], x[7], x[5])); // p = t s + t
    b.push(move |a| a.vscalefpd(x[4], x[5], x[3])); // e
}

/// The exponential routine: `elementary::exp` of `x[0]` into `x[1]` (of each set).
pub(super) fn exp(a: &mut CodeAssembler) -> Result<(), IcedError> {
    interleaved(a, exp_body)
}

fn exp_body(s: Set) -> Body {
    let mut b = Body(Vec::new());
    let x = s.x;
    // `exp_of_at_most(min(x, 710))`: its scaling by `2^k` in two exact factors, the second
    // product rounding once, is the correctly rounded `p * 2^k`, as `vscalefpd` gives it.
    b.push(move |a| a.vminpd(x[1], x[0], k(C_EXP_CEIL)));
    b.push(move |a| a.vmaxpd(x[1], x[1], k(C_FLOOR)));
    exp_reduced_scaled(&mut b, s);
    // `x + x` where `x` is NaN.
    let m = s.short;
    b.push(move |a| a.vcmppd(K[m], x[0], x[0], UNORD_Q));
    b.push(move |a| a.vaddpd(x[3], x[0], x[0]));
    b.push(move |a| a.vblendmpd(under(x[1], m), x[4], x[3]));
    b
}

/// The logarithm routine: `elementary::ln` of `x[0]` into `x[1]` (of each set).
pub(super) fn ln(a: &mut CodeAssembler) -> Result<(), IcedError> {
    interleaved(a, ln_body)
}

fn ln_body(s: Set) -> Body {
    let mut b = Body(Vec::new());
    let (x, r) = (s.x[0], s.x);
    let load = |i: usize| qword_ptr(rbp + 8 * i as i32);
    let c = |i: usize| k(C_ATANH + i);
    let (sub, m) = (s.long, s.short);
    // A subnormal is scaled into the normal range first (a select, then a product).
    b.push(move |a| a.vcmppd(K[sub], x, k(C_MIN_POSITIVE), LT_OQ));
    b.push(move |a| a.vbroadcastsd(r[1], load(C_ONE)));
    b.push(move |a| a.vbroadcastsd(under(r[1], sub), load(C_SUB_SCALE)));
    b.push(move |a| a.vmulpd(r[1], x, r[1])); // m
    ln_split(&mut b.0, [r[0], r[1], r[2], r[3], r[4], r[5]], k);
    b.push(move |a| a.vporq(r[2], r[2], k(C_E_BITS)));
    b.push(move |a| a.vbroadcastsd(r[3], load(C_E_BIAS)));
    b.push(move |a| a.vbroadcastsd(under(r[3], sub), load(C_E_BIAS_SUB)));
    b.push(move |a| a.vsubpd(r[2], r[2], r[3])); // e
    b.push(move |a| a.vmulpd(r[6], r[4], k(C_HALF)));
    b.push(move |a| a.vmulpd(r[6], r[6], r[4])); // hfsq = 0.5 f f
    b.push(move |a| a.vmulpd(r[7], r[5], r[5])); // z = s^2
    b.push(move |a| a.vmulpd(r[8], r[7], r[7])); // z^2
    b.push(move |a| a.vmulpd(r[9], r[8], r[8])); // z^4
    // estrin7(z): p0 (r[3]), p1 (r[1]), p2 (the borrowed register, set again after), then R
    // in r[3].
    for (reg, i) in [(r[3], 5), (r[1], 3), (s.t, 1)] {
        b.push(move |a| a.vbroadcastsd(reg, load(C_ATANH + i + 1)));
        b.push(move |a| a.vfmadd231pd(reg, r[7], c(i)));
    }
    b.push(move |a| a.vfmadd231pd(r[3], r[1], r[8])); // q0 = p1 z^2 + p0
    b.push(move |a| a.vfmadd231pd(s.t, r[8], c(0))); // q1 = c0 z^2 + p2
    b.push(move |a| a.vfmadd231pd(r[3], s.t, r[9])); // R = q1 z^4 + q0
    b.reset(s);
    b.push(move |a| a.vxorpd(r[1], r[1], r[1]));
    b.push(move |a| a.vfmadd231pd(r[1], r[2], k(C_LN2_LO))); // e LN2_LO + 0
    b.push(move |a| a.vfmadd231pd(r[1], r[5], r[6])); // near = s hfsq + that
    b.push(move |a| a.vmulpd(r[8], r[5], r[7]));
    b.push(move |a| a.vfmadd231pd(r[1], r[8], r[3])); // tail = (s z) R + near
    b.push(move |a| a.vsubpd(r[9], r[6], r[1]));
    b.push(move |a| a.vsubpd(r[9], r[4], r[9]));
    b.push(move |a| a.vfmadd231pd(r[9], r[2], k(C_LN2_HI))); // e LN2_HI + (f - (hfsq - tail))
    // `+inf` and NaN are themselves; 0 gives -inf and a negative number NaN.
    b.push(move |a| a.vcmppd(K[m], x, k(C_INF), LT_OQ));
    b.push(move |a| a.vblendmpd(under(r[9], m), x, r[9]));
    b.push(move |a| a.vcmppd(K[m], x, ZERO, EQ_OQ));
    b.push(move |a| a.vbroadcastsd(r[8], load(C_NAN)));
    b.push(move |a| a.vbroadcastsd(under(r[8], m), load(C_NEG_INF)));
    b.push(move |a| a.vcmppd(K[m], x, ZERO, LE_OQ));
    b.push(move |a| a.vblendmpd(under(r[1], m), r[9], r[8]));
    b
}
