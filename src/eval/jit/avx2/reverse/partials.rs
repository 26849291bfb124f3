//! The AVX2 reverse sweep's local derivatives and fused terms: a unary function's
//! derivative, a quotient's partials, a smoothed if-statement's guard and branch
//! contributions, and the fused density terms' reverse steps, each the AVX-512 code's
//! (`jit/reverse/partials.rs`) operations on the same operands in the same order.
//!
//! Why apart from the step dispatch (`steps.rs`): each is one formula of the interpreter's
//! kernels restated as instructions, checked against `kernels.rs` one at a time.

use iced_x86::IcedError;
use iced_x86::code_asm::*;

use crate::ir::{Binary, Unary, unary_called_back};

use super::super::super::super::instr::{FOLD_A, FOLD_B, NONE, RevStep, Target};
use super::super::super::frame;
use super::super::super::indicators::Indicator;
use super::{
    C_HALF, C_MINUS_ONE, C_ONE, C_SIGN, C_TWO, Emitter, MASK, NEQ_UQ, OWN, OWN_NONZERO, R, ZERO, k,
};

impl Emitter<'_> {
    /// `r` = the local derivative of unary `op` at operand `a` and value `out`
    /// (`ir::unary_derivative`).
    pub(super) fn unary_local(
        &mut self,
        r: AsmRegisterYmm,
        op: Unary,
        a: u32,
        out: u32,
    ) -> Result<(), IcedError> {
        let [_, _, _, _, _, s0, s1, ..] = R;
        match op {
            Unary::Exp => self.a.vmovupd(r, self.value(out)),
            Unary::Log => {
                self.a.vmovupd(s0, k(C_ONE))?;
                self.a.vdivpd(r, s0, self.value(a))
            }
            Unary::Log1p => {
                self.a.vmovupd(s0, k(C_ONE))?;
                self.a.vaddpd(s1, s0, self.value(a))?;
                self.a.vdivpd(r, s0, s1)
            }
            Unary::Expm1 => {
                self.a.vmovupd(s0, self.value(out))?;
                self.a.vaddpd(r, s0, k(C_ONE))
            }
            Unary::Sqrt => {
                self.a.vmovupd(s0, k(C_HALF))?;
                self.a.vdivpd(r, s0, self.value(out))
            }
            Unary::Sigmoid => {
                // v * (1 - v)
                self.a.vmovupd(s0, k(C_ONE))?;
                self.a.vsubpd(s0, s0, self.value(out))?;
                self.a.vmovupd(s1, self.value(out))?;
                self.a.vmulpd(r, s1, s0)
            }
            Unary::Tanh => {
                // 1 - v * v
                self.a.vmovupd(s1, self.value(out))?;
                self.a.vmulpd(s1, s1, s1)?;
                self.a.vmovupd(r, k(C_ONE))?;
                self.a.vsubpd(r, r, s1)
            }
            Unary::Neg | unary_called_back!() => unreachable!("no inline form of {op} here"),
        }
    }

    /// The quotient's partials `1 / b` into `p` and `-v / b` into `q` (`v` the quotient).
    pub(super) fn div_partials(
        &mut self,
        p: AsmRegisterYmm,
        q: AsmRegisterYmm,
        b: u32,
        out: u32,
    ) -> Result<(), IcedError> {
        self.a.vmovupd(p, k(C_ONE))?;
        self.a.vdivpd(p, p, self.value(b))?;
        self.a.vmovupd(q, k(C_SIGN))?;
        self.a.vxorpd(q, q, self.value(out))?;
        self.a.vdivpd(q, q, self.value(b))
    }

    /// `kernels::smooth_reverse_guard` into `r`: `ad * (w * (1 / eta)) * (e - t)`, zero where
    /// the adjoint or the weights' product `w` (in `wr`) is.
    pub(super) fn smooth_guard(
        &mut self,
        r: AsmRegisterYmm,
        wr: AsmRegisterYmm,
        t: u32,
        e: u32,
    ) -> Result<(), IcedError> {
        let [_, _, _, _, p, d, ..] = R;
        // `e - t` of an indicator is exactly -1 (then 1, else 0) or 1, in every lane.
        let difference = self.indicators.between(t, e).map(|which| match which {
            Indicator::Then => C_MINUS_ONE,
            Indicator::Else => C_ONE,
        });
        self.a.vbroadcastsd(p, qword_ptr(rbx + frame::INV_ETA))?;
        self.a.vmulpd(p, wr, p)?;
        self.a.vmulpd(p, OWN, p)?;
        if difference.is_none() {
            self.a.vmovupd(d, self.value(e))?;
            self.a.vsubpd(d, d, self.value(t))?;
        }
        self.own_nonzero()?;
        self.a.vcmppd(MASK, wr, ZERO, NEQ_UQ)?;
        self.a.vandpd(MASK, MASK, OWN_NONZERO)?;
        match difference {
            Some(c) => self.a.vmulpd(r, p, k(c))?,
            None => self.a.vmulpd(r, p, d)?,
        }
        self.a.vandpd(r, r, MASK)
    }

    /// `kernels::smooth_reverse_branch` into `r`: `ad * w`, zero where either is.
    pub(super) fn smooth_branch(
        &mut self,
        r: AsmRegisterYmm,
        w: AsmMemoryOperand,
    ) -> Result<(), IcedError> {
        let wr = R[7];
        self.own_nonzero()?;
        self.a.vmovupd(wr, w)?;
        self.a.vcmppd(MASK, wr, ZERO, NEQ_UQ)?;
        self.a.vandpd(MASK, MASK, OWN_NONZERO)?;
        self.a.vmulpd(r, OWN, wr)?;
        self.a.vandpd(r, r, MASK)
    }

    /// `fold_guard` (`sweep.rs`) of the guard's contribution `cg`.
    pub(super) fn fold_guard(
        &mut self,
        op: Binary,
        cg: AsmRegisterYmm,
        to: [Target; 5],
    ) -> Result<(), IcedError> {
        let (ta, tb) = (to[FOLD_A], to[FOLD_B]);
        let d = R[6];
        self.a.vaddpd(d, ZERO, cg)?;
        self.sum_contributions(d, ta, tb, op == Binary::Sub)
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
    ) -> Result<(), IcedError> {
        let [t0, t1, ..] = rs.to;
        let [u, udx, adp, adu, p, ucs, ucx, inv_s, ..] = R;
        let ci = self.constant(c);
        // u
        self.a.vmovupd(u, self.value(x))?;
        if let Some(m) = m {
            self.a.vsubpd(u, u, self.value(m))?;
        }
        if let Some(s) = s {
            self.a.vmovapd(udx, u)?;
            self.a.vdivpd(u, u, self.value(s))?;
        }
        // adp = 0.0 + masked(ad, c); the square's local derivative 2 u.
        self.masked(adp, OWN, k(ci))?;
        self.a.vaddpd(adp, ZERO, adp)?;
        self.a.vmulpd(p, u, k(C_TWO))?;
        self.masked(adu, adp, p)?;
        let Some(s) = s else {
            return match m {
                None => {
                    // `square_reverse` without `s`: `ucs` is zero.
                    if t0.adj != NONE {
                        self.put(t0, ZERO)?;
                    }
                    self.put(t1, adu)
                }
                Some(_) => {
                    self.a.vaddpd(adu, ZERO, adu)?;
                    self.difference(rs, adu)
                }
            };
        };
        self.a.vaddpd(adu, ZERO, adu)?;
        // (dd, ds) = (1 / s, -u / s)
        self.a.vmovupd(inv_s, k(C_ONE))?;
        self.a.vdivpd(inv_s, inv_s, self.value(s))?;
        let want_s = t0.adj != NONE;
        if m.is_none() {
            // `square_reverse` with `s`: ucs then ucx, both masked from `adu`.
            self.a.vxorpd(udx, u, k(C_SIGN))?;
            self.a.vdivpd(udx, udx, self.value(s))?;
            self.masked(ucs, adu, udx)?;
            self.masked(ucx, adu, inv_s)?;
            self.put(t0, ucs)?;
            return self.put(t1, ucx);
        }
        if want_s {
            self.a.vxorpd(udx, u, k(C_SIGN))?;
            self.a.vdivpd(udx, udx, self.value(s))?;
            self.masked(ucs, adu, udx)?;
        }
        self.masked(ucx, adu, inv_s)?;
        self.a.vaddpd(ucx, ZERO, ucx)?;
        if want_s {
            self.put(t0, ucs)?;
        }
        self.difference(rs, ucx)
    }

    /// The contributions of a difference `x - m` with adjoint `ad_d` to `x` (`to[1]`) and `m`
    /// (`to[2]`), as the density terms' reverse steps send them.
    pub(super) fn difference(
        &mut self,
        rs: &RevStep,
        ad_d: AsmRegisterYmm,
    ) -> Result<(), IcedError> {
        let [_, t1, t2, ..] = rs.to;
        self.sum_contributions(ad_d, t1, t2, true)
    }
}
