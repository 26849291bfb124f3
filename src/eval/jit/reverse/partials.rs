//! The reverse sweep's local derivatives and fused terms in machine code, at either width: a
//! unary
//! function's derivative, a quotient's partials, a smoothed if-statement's guard and branch
//! contributions, and the fused density terms' reverse steps.
//!
//! Why apart from the step dispatch (`steps.rs`): each is one formula of the interpreter's
//! kernels restated as instructions, checked against `kernels.rs` one at a time.

use iced_x86::IcedError;
use iced_x86::code_asm::*;

use crate::ir::{Binary, Unary, unary_called_back};

use super::super::super::instr::{FOLD_A, FOLD_B, NONE, RevStep, Target};
use super::super::indicators::Indicator;
use super::super::vector::{Arith, ReverseVector, Src};
use super::{C_HALF, C_MINUS_ONE, C_ONE, C_TWO, Emitter};

impl<W: ReverseVector> Emitter<'_, W> {
    /// `r` = the local derivative of unary `op` at operand `a` and value `out`, part `h`
    /// (`ir::unary_derivative`).
    pub(super) fn unary_local(
        &mut self,
        r: W::Reg,
        op: Unary,
        a: u32,
        out: u32,
        h: usize,
    ) -> Result<(), IcedError> {
        let (s0, s1) = (W::R[5], W::R[6]);
        // What the derivative reads: the operand (`ln`, `ln_1p`) or the value (the step keeps
        // no other place for it).
        let read = match op {
            Unary::Log | Unary::Log1p => a,
            _ => out,
        };
        let x = Src::Mem(self.value(read, h));
        let a = &mut self.a;
        match op {
            Unary::Exp => W::mov(a, r, x),
            Unary::Log => {
                W::load_constant(a, s0, C_ONE)?;
                W::arith(a, Arith::Div, r, s0, x)
            }
            Unary::Log1p => {
                W::load_constant(a, s0, C_ONE)?;
                W::arith(a, Arith::Add, s1, s0, x)?;
                W::arith(a, Arith::Div, r, s0, Src::Reg(s1))
            }
            Unary::Expm1 => {
                W::mov(a, s0, x)?;
                W::arith(a, Arith::Add, r, s0, Src::Mem(W::k(C_ONE)))
            }
            Unary::Sqrt => {
                W::load_constant(a, s0, C_HALF)?;
                W::arith(a, Arith::Div, r, s0, x)
            }
            Unary::Sigmoid => {
                // v * (1 - v)
                W::load_constant(a, s0, C_ONE)?;
                W::arith(a, Arith::Sub, s0, s0, x)?;
                W::mov(a, s1, x)?;
                W::arith(a, Arith::Mul, r, s1, Src::Reg(s0))
            }
            Unary::Tanh => {
                // 1 - v * v
                W::mov(a, s1, x)?;
                W::arith(a, Arith::Mul, s1, s1, Src::Reg(s1))?;
                W::load_constant(a, r, C_ONE)?;
                W::arith(a, Arith::Sub, r, r, Src::Reg(s1))
            }
            Unary::Neg | unary_called_back!() => unreachable!("no inline form of {op} here"),
        }
    }

    /// The quotient's partials `1 / b` into `p` and `-v / b` into `q` (`v` the quotient).
    pub(super) fn div_partials(
        &mut self,
        p: W::Reg,
        q: W::Reg,
        b: u32,
        out: u32,
        h: usize,
    ) -> Result<(), IcedError> {
        let (b, v) = (self.value(b, h), self.value(out, h));
        let a = &mut self.a;
        W::load_constant(a, p, C_ONE)?;
        W::arith(a, Arith::Div, p, p, Src::Mem(b))?;
        W::negate_value(a, q, v)?;
        W::arith(a, Arith::Div, q, q, Src::Mem(b))
    }

    /// `kernels::smooth_reverse_guard` into `r`: `ad * (w * (1 / eta)) * (e - t)`, zero where
    /// the adjoint or the weights' product `w` is.
    pub(super) fn smooth_guard(
        &mut self,
        r: W::Reg,
        wr: W::Reg,
        t: u32,
        e: u32,
        h: usize,
    ) -> Result<(), IcedError> {
        let [p, d] = W::GUARD;
        // `e - t` of an indicator is exactly -1 (then 1, else 0) or 1, in every lane.
        let difference = self.indicators.between(t, e).map(|which| match which {
            Indicator::Then => C_MINUS_ONE,
            Indicator::Else => C_ONE,
        });
        W::times_inv_eta(&mut self.a, p, wr)?;
        W::arith(&mut self.a, Arith::Mul, p, W::OWN, Src::Reg(p))?;
        if difference.is_none() {
            let (e, t) = (self.value(e, h), self.value(t, h));
            W::mov(&mut self.a, d, Src::Mem(e))?;
            W::arith(&mut self.a, Arith::Sub, d, d, Src::Mem(t))?;
        }
        self.own_nonzero()?;
        let factor = match difference {
            Some(c) => Src::Mem(W::k(c)),
            None => Src::Reg(d),
        };
        W::masked_by_weight(&mut self.a, r, p, factor, wr)
    }

    /// `kernels::smooth_reverse_branch` into `r`: `ad * w`, zero where either is.
    pub(super) fn smooth_branch(
        &mut self,
        r: W::Reg,
        w: AsmMemoryOperand,
    ) -> Result<(), IcedError> {
        let wr = W::R[7];
        self.own_nonzero()?;
        W::mov(&mut self.a, wr, Src::Mem(w))?;
        W::masked_by_weight(&mut self.a, r, W::OWN, Src::Reg(wr), wr)
    }

    /// `fold_guard` (`sweep.rs`) of the guard's contribution `cg`.
    pub(super) fn fold_guard(
        &mut self,
        op: Binary,
        cg: W::Reg,
        to: [Target; 5],
        h: usize,
    ) -> Result<(), IcedError> {
        let (ta, tb) = (to[FOLD_A], to[FOLD_B]);
        let d = W::FOLD;
        W::arith(&mut self.a, Arith::Add, d, W::ZERO, Src::Reg(cg))?;
        self.sum_contributions(d, ta, tb, op == Binary::Sub, h)
    }

    /// A fused density term's reverse step (`kernels::normal_square_reverse`,
    /// `square_diff_reverse`, `square_reverse`): `c * u^2`, `u = (x - m) / s` (either part
    /// absent where `None`).
    pub(super) fn square(
        &mut self,
        rs: &RevStep,
        x: u32,
        m: Option<u32>,
        s: Option<u32>,
        c: f64,
        h: usize,
    ) -> Result<(), IcedError> {
        let [t0, t1, t2, ..] = rs.to;
        let [u, udx, adp, adu, p, ucs, ucx, inv_s, ..] = *W::R else {
            unreachable!("a width has nine scratch registers")
        };
        let zero = W::ZERO;
        let ci = self.constant(c);
        // u
        let at = self.value(x, h);
        W::mov(&mut self.a, u, Src::Mem(at))?;
        if let Some(m) = m {
            let at = self.value(m, h);
            W::arith(&mut self.a, Arith::Sub, u, u, Src::Mem(at))?;
        }
        if let Some(s) = s {
            W::mov(&mut self.a, udx, Src::Reg(u))?;
            let at = self.value(s, h);
            W::arith(&mut self.a, Arith::Div, u, u, Src::Mem(at))?;
        }
        // adp = 0.0 + masked(ad, c); the square's local derivative 2 u.
        self.masked(adp, W::OWN, W::k(ci))?;
        W::arith(&mut self.a, Arith::Add, adp, zero, Src::Reg(adp))?;
        W::arith(&mut self.a, Arith::Mul, p, u, Src::Mem(W::k(C_TWO)))?;
        // `2.0 * u` with the constant first, as `f64::from(2) * u.powi(1)`: the same product.
        self.masked(adu, adp, p)?;
        let Some(s) = s else {
            // No division: the square's contribution goes to `x` (or `x - m`) as it is.
            return match m {
                None => {
                    // `square_reverse` without `s`: `ucs` is zero.
                    if t0.adj != NONE {
                        self.put(t0, zero, h)?;
                    }
                    self.put(t1, adu, h)
                }
                Some(_) => {
                    W::arith(&mut self.a, Arith::Add, adu, zero, Src::Reg(adu))?;
                    self.difference(rs, adu, h)
                }
            };
        };
        W::arith(&mut self.a, Arith::Add, adu, zero, Src::Reg(adu))?;
        // (dd, ds) = (1 / s, -u / s)
        let s = self.value(s, h);
        W::load_constant(&mut self.a, inv_s, C_ONE)?;
        W::arith(&mut self.a, Arith::Div, inv_s, inv_s, Src::Mem(s))?;
        let want_s = t0.adj != NONE;
        if m.is_none() {
            // `square_reverse` with `s`: ucs then ucx, both masked from `adu`.
            W::negate(&mut self.a, udx, u)?;
            W::arith(&mut self.a, Arith::Div, udx, udx, Src::Mem(s))?;
            self.masked(ucs, adu, udx)?;
            self.masked(ucx, adu, inv_s)?;
            self.put(t0, ucs, h)?;
            return self.put(t1, ucx, h);
        }
        if want_s {
            W::negate(&mut self.a, udx, u)?;
            W::arith(&mut self.a, Arith::Div, udx, udx, Src::Mem(s))?;
            self.masked(ucs, adu, udx)?;
        }
        self.masked(ucx, adu, inv_s)?;
        W::arith(&mut self.a, Arith::Add, ucx, zero, Src::Reg(ucx))?;
        if want_s {
            self.put(t0, ucs, h)?;
        }
        let _ = (t1, t2);
        self.difference(rs, ucx, h)
    }

    /// The contributions of a difference `x - m` with adjoint `ad_d` to `x` (`to[1]`) and `m`
    /// (`to[2]`), as the density terms' reverse steps send them.
    pub(super) fn difference(
        &mut self,
        rs: &RevStep,
        ad_d: W::Reg,
        h: usize,
    ) -> Result<(), IcedError> {
        let [_, t1, t2, ..] = rs.to;
        self.sum_contributions(ad_d, t1, t2, true, h)
    }
}
