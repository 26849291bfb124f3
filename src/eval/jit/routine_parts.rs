//! The parts of the long numeric routines that both widths (`routines.rs`,
//! `avx2/routines.rs`) run alike, written once over whichever registers a width's routine
//! gives each value: the smoothed weights' arithmetic after the exponential (`d = 1 + e`, then
//! `sigmoid_big_small` with its corrections, or `sigmoid_big_small_plain`) and the
//! logarithm's split into exponent and mantissa; the same operations in the same order as
//! `crate::elementary`'s.

use iced_x86::IcedError;
use iced_x86::code_asm::asm_traits::*;
use iced_x86::code_asm::*;

use super::consts::{C_1023, C_LN_OFFSET, C_ONE};

/// One instruction of a routine, for one set's registers.
pub(super) type Insn = Box<dyn Fn(&mut CodeAssembler) -> Result<(), IcedError>>;

/// Where each value of the sigmoid lives. `one` holds 1 in every lane and `e` the exponential
/// on entry; the big weight ends in `big`, the small one in `small`. A width short of registers
/// may give `small` the register of `one`, and `spare` that of `e` (both are dead by then):
/// the copy into `spare` is then left out.
#[derive(Clone, Copy)]
pub(super) struct SigmoidRegs<R> {
    pub one: R,
    pub e: R,
    pub d: R,
    pub d_err: R,
    pub inv: R,
    pub big_err: R,
    pub big: R,
    pub small: R,
    pub spare: R,
}

/// Pushes `d = 1 + e` and the two weights (`plain`: `sigmoid_big_small_plain`, else
/// `sigmoid_big_small`) onto `body`.
pub(super) fn sigmoid_big_small<R>(body: &mut Vec<Insn>, r: SigmoidRegs<R>, plain: bool)
where
    R: Copy + PartialEq + 'static,
    CodeAssembler: CodeAsmVaddpd<R, R, R>
        + CodeAsmVsubpd<R, R, R>
        + CodeAsmVdivpd<R, R, R>
        + CodeAsmVmulpd<R, R, R>
        + CodeAsmVmovapd<R, R>
        + CodeAsmVfmadd231pd<R, R, R>
        + CodeAsmVfnmadd231pd<R, R, R>,
{
    let mut push = |f: Insn| body.push(f);
    push(Box::new(move |a| a.vaddpd(r.d, r.one, r.e))); // d = 1 + e
    if plain {
        push(Box::new(move |a| a.vdivpd(r.big, r.one, r.d))); // big = 1 / d
        push(Box::new(move |a| a.vmulpd(r.small, r.e, r.big))); // small = e big
        return;
    }
    push(Box::new(move |a| a.vsubpd(r.d_err, r.one, r.d)));
    push(Box::new(move |a| a.vaddpd(r.d_err, r.d_err, r.e))); // d_err = (1 - d) + e
    push(Box::new(move |a| a.vdivpd(r.inv, r.one, r.d))); // inv = 1 / d
    push(Box::new(move |a| a.vmovapd(r.big_err, r.one)));
    push(Box::new(move |a| a.vfnmadd231pd(r.big_err, r.inv, r.d)));
    push(Box::new(move |a| a.vfnmadd231pd(r.big_err, r.inv, r.d_err)));
    push(Box::new(move |a| a.vmovapd(r.big, r.inv)));
    push(Box::new(move |a| a.vfmadd231pd(r.big, r.big_err, r.inv))); // big
    push(Box::new(move |a| a.vmulpd(r.small, r.e, r.inv))); // s0 = e inv
    if r.spare != r.e {
        push(Box::new(move |a| a.vmovapd(r.spare, r.e)));
    }
    push(Box::new(move |a| a.vfnmadd231pd(r.spare, r.small, r.d)));
    push(Box::new(move |a| a.vfnmadd231pd(r.spare, r.small, r.d_err)));
    push(Box::new(move |a| a.vfmadd231pd(r.small, r.spare, r.inv))); // small
}

/// The logarithm's reduction, from the (scaled) argument `m` in `r[1]`: its biased exponent
/// `eb` into `r[2]`, the mantissa in `[sqrt(1/2), sqrt(2))` into `r[3]` (then `mantissa + 1`),
/// `f = mantissa - 1` into `r[4]` and `s = f / (mantissa + 1)` into `r[5]`; `k` is the width's
/// operand for constant `i` of the code's table.
pub(super) fn ln_split<R>(body: &mut Vec<Insn>, r: [R; 6], k: fn(usize) -> AsmMemoryOperand)
where
    R: Copy + 'static,
    CodeAssembler: CodeAsmVpaddq<R, R, AsmMemoryOperand>
        + CodeAsmVpsrlq<R, R, i32>
        + CodeAsmVpsubq<R, R, AsmMemoryOperand>
        + CodeAsmVpsllq<R, R, i32>
        + CodeAsmVpsubq<R, R, R>
        + CodeAsmVsubpd<R, R, AsmMemoryOperand>
        + CodeAsmVaddpd<R, R, AsmMemoryOperand>
        + CodeAsmVdivpd<R, R, R>,
{
    let mut push = |f: Insn| body.push(f);
    push(Box::new(move |a| a.vpaddq(r[2], r[1], k(C_LN_OFFSET))));
    push(Box::new(move |a| a.vpsrlq(r[2], r[2], 52))); // eb
    push(Box::new(move |a| a.vpsubq(r[3], r[2], k(C_1023))));
    push(Box::new(move |a| a.vpsllq(r[3], r[3], 52)));
    push(Box::new(move |a| a.vpsubq(r[3], r[1], r[3]))); // mantissa
    push(Box::new(move |a| a.vsubpd(r[4], r[3], k(C_ONE)))); // f
    push(Box::new(move |a| a.vaddpd(r[3], r[3], k(C_ONE))));
    push(Box::new(move |a| a.vdivpd(r[5], r[4], r[3]))); // s = f / (mantissa + 1)
}
