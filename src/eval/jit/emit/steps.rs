//! The forward emitter's code for each kind of step ([`Emitter::step`] dispatches here):
//! each writes the step's value into a register pair it returns, by the interpreter's own
//! operations in the same order; and the instruction sequences several kinds share
//! (operands in registers or memory, blends, sum chains, latents, smoothing weights).

use iced_x86::IcedError;
use iced_x86::code_asm::*;

use crate::ir::{Binary, Unary, unary_called_back, unary_without_stand_in};

use super::super::super::instr::{NONE, UNREAD};
use super::super::frame;
use super::super::indicators::Indicator;
use super::super::regs::*;
use super::super::repeat::Unit;
use super::super::routines::{self, k};
use super::cache::Operand;
use super::{EXP, Emitter, HALF_BYTES, LN, LOC_AT, SCALE_AT, WEIGHTS, set};

impl Emitter<'_> {
    /// Parameter `k` broadcast into a new pair.
    pub(super) fn param(&mut self, k: u32) -> Result<usize, IcedError> {
        let d = self.cache.take(&[]);
        let at = match self.moving(|l| l.word(Unit::Param, k)) {
            Some((reg, scale)) => qword_ptr(r13 + reg * scale + 8 * k as i32),
            None => qword_ptr(r13 + 8 * k as i32),
        };
        for h in 0..2 {
            self.a.vbroadcastsd(ZMM[2 * d + h], at)?;
        }
        Ok(d)
    }

    /// Latent `i` (its noise reparameterised) into a new pair.
    pub(super) fn latent_value(&mut self, i: u32) -> Result<usize, IcedError> {
        let d = self.cache.take(&[]);
        self.latent_factors(i)?;
        for h in 0..2 {
            self.latent(ZMM[2 * d + h], h)?;
        }
        Ok(d)
    }

    /// `op(a)` into a new pair: a routine's call (`exp`, `ln`) or an instruction.
    pub(super) fn unary(&mut self, op: Unary, a: u32) -> Result<usize, IcedError> {
        let x = self.cache.find(a);
        match op {
            Unary::Log => self.by_routine(LN, x),
            Unary::Exp => self.by_routine(EXP, x),
            Unary::Neg | Unary::Sqrt => self.by_instruction(op == Unary::Neg, x),
            Unary::Log1p | Unary::Expm1 | Unary::Sigmoid | Unary::Tanh | unary_called_back!() => {
                unreachable!("no inline form of {op} here")
            }
        }
    }

    /// Routine `routine` (`LN` or `EXP`) of `x` into a new pair.
    pub(super) fn by_routine(&mut self, routine: usize, x: Operand) -> Result<usize, IcedError> {
        self.elementary(routine, x)?;
        let d = self.cache.take(&[]);
        for h in 0..2 {
            self.a.vmovapd(ZMM[2 * d + h], set(h).x[1])?;
        }
        Ok(d)
    }

    /// `-x` (`neg`) or `sqrt(x)` into a new pair.
    pub(super) fn by_instruction(&mut self, neg: bool, x: Operand) -> Result<usize, IcedError> {
        let d = self.cache.take(&[x]);
        for h in 0..2 {
            let r = ZMM[2 * d + h];
            match (neg, x) {
                (true, Operand::Pair(p)) => self.a.vxorpd(r, ZMM[2 * p + h], SIGN)?,
                (true, Operand::Slot(s)) => self.a.vxorpd(r, SIGN, self.slot_at(s, h))?,
                (false, Operand::Pair(p)) => self.a.vsqrtpd(r, ZMM[2 * p + h])?,
                (false, Operand::Slot(s)) => self.a.vsqrtpd(r, self.slot_at(s, h))?,
            }
        }
        Ok(d)
    }

    /// The sum chain `((base + t1) + t2) + ...` of the terms `from..to` into a new pair.
    pub(super) fn sum_chain(&mut self, base: u32, from: u32, to: u32) -> Result<usize, IcedError> {
        let x = self.cache.find(base);
        let terms = self.cache.terms(&self.chains[from as usize..to as usize]);
        let mut keep = terms.clone();
        keep.push(x);
        Ok(match self.cache.free(&keep) {
            Some(d) => {
                for h in 0..2 {
                    self.chain(ZMM[2 * d + h], x, from, to, &terms, h)?;
                }
                d
            }
            // Every pair holds an operand: each half is summed in a scratch register and
            // then written over its half of a pair, whose term that half of the sum has read.
            None => {
                let d = self.cache.take(&[]);
                for h in 0..2 {
                    self.chain(X[4], x, from, to, &terms, h)?;
                    self.a.vmovapd(ZMM[2 * d + h], X[4])?;
                }
                d
            }
        })
    }

    /// A smoothed if-statement into a new pair: its weights computed (or read back, with
    /// `reuse`), kept at `cache` where read later, and the branches weighted.
    pub(super) fn smoothed_if(
        &mut self,
        g: u32,
        t: u32,
        e: u32,
        cache: u32,
        product: bool,
        reuse: bool,
    ) -> Result<usize, IcedError> {
        if !reuse {
            // Both halves' weights in one call, which loses the routines' pairs.
            self.smooth_weights(self.cache.find(g))?;
            self.cache.lose_routine_pairs();
        }
        let (y, z) = (self.cache.find(t), self.cache.find(e));
        let d = self.cache.take(&[y, z]);
        let keep = cache != UNREAD;
        if reuse || keep {
            self.a.mov(rcx, qword_ptr(rbx + frame::WEIGHTS))?;
        }
        for h in 0..2 {
            let (we, wt) = if reuse {
                self.a.vmovupd(X[1], self.weight_at(cache, 0, h))?;
                self.a.vmovupd(X[2], self.weight_at(cache, 1, h))?;
                (X[1], X[2])
            } else {
                let (we, wt) = (set(h).x[1], set(h).x[2]);
                if keep {
                    self.keep_weights(cache, product, h, we, wt)?;
                }
                (we, wt)
            };
            match self.indicators.between(t, e) {
                Some(which) => self.indicator(d, h, which, we, wt)?,
                None => self.smooth_forward(d, h, y, z, we, wt)?,
            }
        }
        Ok(d)
    }

    /// `t` where `g < 0`, else `e`, into a new pair (a crisp if-statement).
    pub(super) fn select(&mut self, g: u32, t: u32, e: u32) -> Result<usize, IcedError> {
        self.select_where_negative(g, t, e, Self::blend)
    }

    /// A new pair `d` chosen where `g < 0` between `t` and `e`: half by half, `k1` set where
    /// `g` is negative, then `choose(self, d, h, t, e)` writes half `h` of `d`.
    fn select_where_negative(
        &mut self,
        g: u32,
        t: u32,
        e: u32,
        mut choose: impl FnMut(&mut Self, usize, usize, Operand, Operand) -> Result<(), IcedError>,
    ) -> Result<usize, IcedError> {
        let (x, y, z) = (self.cache.find(g), self.cache.find(t), self.cache.find(e));
        let d = self.cache.take(&[x, y, z]);
        for h in 0..2 {
            self.negative(x, h)?;
            choose(self, d, h, y, z)?;
        }
        Ok(d)
    }

    /// `t` where `a op b < 0` (`op` a sum or difference), else `e`, into a new pair.
    pub(super) fn select_by(
        &mut self,
        op: Binary,
        a: u32,
        b: u32,
        t: u32,
        e: u32,
    ) -> Result<usize, IcedError> {
        let (p, q) = (self.cache.find(a), self.cache.find(b));
        let (y, z) = (self.cache.find(t), self.cache.find(e));
        let d = self.cache.take(&[p, q, y, z]);
        for h in 0..2 {
            let pa = self.reg(p, h, X[4])?;
            self.binary(op, X[4], pa, q, h)?;
            self.a.vcmppd(k1, X[4], ZERO, LT_OQ)?;
            self.blend(d, h, y, z)?;
        }
        Ok(d)
    }

    /// The stand-in of `op(a)` (`checked.rs`) into a new pair, inline.
    pub(super) fn stand_in(&mut self, op: Unary, a: u32) -> Result<usize, IcedError> {
        let x = self.cache.find(a);
        let d = self.cache.take(&[x]);
        for h in 0..2 {
            let xa = self.reg(x, h, X[4])?;
            match op {
                Unary::Log => self.ln_stand_in(X[5], xa)?,
                Unary::Log1p => {
                    // `ln_stand_in(1 + x)`.
                    self.a.vaddpd(X[6], xa, k(routines::C_ONE))?;
                    self.ln_stand_in(X[5], X[6])?;
                }
                Unary::Softplus => {
                    // `max(x, 0)` (zero where `x` is zero or below, the second operand where
                    // either is NaN), then `x + x` where `x` is NaN.
                    self.a.vmaxpd(X[5], xa, ZERO)?;
                    self.a.vcmppd(k1, xa, xa, UNORD_Q)?;
                    self.a.vaddpd(X[5].k1(), xa, xa)?;
                }
                unary_without_stand_in!() => unreachable!("no stand-in for {op:?}"),
            }
            self.a.vmovapd(ZMM[2 * d + h], X[5])?;
        }
        Ok(d)
    }

    /// The Poisson term `c ln(r) - r` into a new pair (the product's operand order cannot
    /// change its bits: `c` is a finite count): the logarithm by the routine, or its stand-in
    /// inline.
    pub(super) fn poisson_term(
        &mut self,
        r: u32,
        c: f64,
        stand_in: bool,
    ) -> Result<usize, IcedError> {
        let x = self.cache.find(r);
        if stand_in {
            let d = self.cache.take(&[x]);
            let ci = self.constant(c);
            for h in 0..2 {
                let xa = self.reg(x, h, X[4])?;
                self.ln_stand_in(X[5], xa)?;
                self.a.vmulpd(X[5], X[5], k(ci))?;
                self.a.vsubpd(ZMM[2 * d + h], X[5], xa)?;
            }
            return Ok(d);
        }
        // The routine leaves `r` where it took it.
        self.elementary(LN, x)?;
        let d = self.cache.take(&[]);
        let ci = self.constant(c);
        for h in 0..2 {
            // Through a scratch register: `d` may be the pair that held `r`.
            self.a.vmulpd(X[4], set(h).x[1], k(ci))?;
            self.a.vsubpd(ZMM[2 * d + h], X[4], set(h).x[0])?;
        }
        Ok(d)
    }

    /// `-a` where `g < 0`, else `e`, into a new pair.
    pub(super) fn select_neg(&mut self, g: u32, a: u32, e: u32) -> Result<usize, IcedError> {
        self.select_where_negative(g, a, e, |s, d, h, y, z| {
            match y {
                Operand::Pair(p) => s.a.vxorpd(X[4], ZMM[2 * p + h], SIGN)?,
                Operand::Slot(p) => s.a.vxorpd(X[4], SIGN, s.slot_at(p, h))?,
            }
            let r = ZMM[2 * d + h];
            let ea = s.reg(z, h, r)?;
            s.a.vblendmpd(r.k1(), ea, X[4])
        })
    }

    /// `t` where latent `i` (minus `b`, where given) is negative, else `e`, into a new pair.
    pub(super) fn select_latent(
        &mut self,
        i: u32,
        b: Option<u32>,
        t: u32,
        e: u32,
    ) -> Result<usize, IcedError> {
        let b = b.map(|b| self.cache.find(b));
        let (y, z) = (self.cache.find(t), self.cache.find(e));
        let d = self.cache.take(&[y, z, b.unwrap_or(Operand::Slot(NONE))]);
        self.latent_factors(i)?;
        for h in 0..2 {
            self.latent(X[4], h)?;
            if let Some(b) = b {
                self.binary(Binary::Sub, X[4], X[4], b, h)?;
            }
            self.a.vcmppd(k1, X[4], ZERO, LT_OQ)?;
            self.blend(d, h, y, z)?;
        }
        Ok(d)
    }

    /// `t` where the sum chain of `base` and the terms `from..to` is negative, else `e`, into
    /// a new pair.
    pub(super) fn select_chain(
        &mut self,
        base: u32,
        from: u32,
        to: u32,
        t: u32,
        e: u32,
    ) -> Result<usize, IcedError> {
        let x = self.cache.find(base);
        let terms = self.cache.terms(&self.chains[from as usize..to as usize]);
        let (y, z) = (self.cache.find(t), self.cache.find(e));
        let mut keep = terms.clone();
        keep.extend([x, y, z]);
        // The sum goes through a scratch register, so with every pair holding an operand only
        // the branches' pairs must survive (each half's guard is summed before the blend
        // writes that half).
        let d = match self.cache.free(&keep) {
            Some(d) => d,
            None => self.cache.take(&[y, z]),
        };
        for h in 0..2 {
            self.chain(X[4], x, from, to, &terms, h)?;
            self.a.vcmppd(k1, X[4], ZERO, LT_OQ)?;
            self.blend(d, h, y, z)?;
        }
        Ok(d)
    }

    /// Half `h` of the sum chain `((base + t1) + t2) + ...` of the terms `from..` (operands
    /// `terms`) into `r`, which holds none of them; each addition in its own operand order,
    /// as `kernels::sum_step`.
    pub(super) fn chain(
        &mut self,
        r: AsmRegisterZmm,
        base: Operand,
        from: u32,
        to: u32,
        terms: &[Operand],
        h: usize,
    ) -> Result<(), IcedError> {
        let mut acc = self.reg(base, h, r)?;
        for (&(_, right), &t) in self.chains[from as usize..to as usize].iter().zip(terms) {
            if right {
                // `t + acc`: the term is the first operand.
                let ta = self.reg(t, h, X[5])?;
                self.a.vaddpd(r, ta, acc)?;
            } else {
                self.binary(Binary::Add, r, acc, t, h)?;
            }
            acc = r;
        }
        if acc != r {
            self.a.vmovapd(r, acc)?;
        }
        Ok(())
    }

    /// Broadcasts latent `i`'s scale into `X[0]` and location into `X[1]`, and puts its
    /// noise's offset in `rax`.
    /// Inside a loop, a moving latent's are its first iteration's plus the loop's registers.
    pub(super) fn latent_factors(&mut self, i: u32) -> Result<(), IcedError> {
        let word = self.moving(|l| l.word(Unit::Latent, i));
        let noise = self.moving(|l| l.noise(i));
        let a = &mut self.a;
        if !self.latent_pointers {
            a.mov(SCALE_AT, qword_ptr(rbx + frame::SCALE))?;
            a.mov(LOC_AT, qword_ptr(rbx + frame::LOC))?;
            self.latent_pointers = true;
        }
        a.imul_3(rax, r15, i as i32)?;
        match noise {
            Some((reg, 1)) => a.add(rax, reg)?,
            Some((reg, scale)) => a.lea(rax, qword_ptr(rax + reg * scale))?,
            None => {}
        }
        let disp = 8 * i as i32;
        match word {
            Some((reg, scale)) => {
                a.vbroadcastsd(X[0], qword_ptr(SCALE_AT + reg * scale + disp))?;
                a.vbroadcastsd(X[1], qword_ptr(LOC_AT + reg * scale + disp))
            }
            None => {
                a.vbroadcastsd(X[0], qword_ptr(SCALE_AT + disp))?;
                a.vbroadcastsd(X[1], qword_ptr(LOC_AT + disp))
            }
        }
    }

    /// Half `h` of the latent whose factors [`Self::latent_factors`] loaded, into `r`:
    /// `loc + scale * s`, multiplied then added (never fused), as `Latents::load`.
    pub(super) fn latent(&mut self, r: AsmRegisterZmm, h: usize) -> Result<(), IcedError> {
        let noise = zmmword_ptr(r14 + rax + (h as i32 * HALF_BYTES));
        self.a.vmulpd(r, X[0], noise)?;
        self.a.vaddpd(r, X[1], r)
    }

    /// A fused density term, `c * u^2` with `u = (x - m) / s` (either part left out where
    /// absent), minus `k` where given: each operation as the unfused instruction's (the
    /// square as `u * u`, what `powi(2)` computes). Returns the result's pair.
    pub(super) fn square(
        &mut self,
        x: u32,
        m: Option<u32>,
        s: Option<u32>,
        c: f64,
        k: Option<u32>,
    ) -> Result<usize, IcedError> {
        let none = Operand::Slot(NONE);
        let find = |o: Option<u32>| o.map_or(none, |o| self.cache.find(o));
        let (xo, mo, so, ko) = (self.cache.find(x), find(m), find(s), find(k));
        let d = self.cache.take(&[xo, mo, so, ko]);
        let ci = self.constant(c) as i32;
        for h in 0..2 {
            let r = ZMM[2 * d + h];
            let mut u = self.reg(xo, h, r)?;
            if m.is_some() {
                self.binary(Binary::Sub, r, u, mo, h)?;
                u = r;
            }
            if s.is_some() {
                self.binary(Binary::Div, r, u, so, h)?;
                u = r;
            }
            self.a.vmulpd(r, u, u)?;
            self.a.vmulpd(r, r, qword_bcst(rbp + 8 * ci))?;
            if k.is_some() {
                self.binary(Binary::Sub, r, r, ko, h)?;
            }
        }
        Ok(d)
    }

    /// `elementary::ln_stand_in` of `x` into `to` (not `x`): the exponent as a double
    /// (`vgetexppd`: `-inf` at zero, `+inf` at `+inf`, NaN quieted), times `ln 2`, and NaN
    /// where `x < 0` (`-inf` included), as the scalar function computes them.
    pub(super) fn ln_stand_in(
        &mut self,
        to: AsmRegisterZmm,
        x: AsmRegisterZmm,
    ) -> Result<(), IcedError> {
        self.a.vgetexppd(to, x)?;
        self.a.vmulpd(to, to, k(routines::C_LN_2))?;
        self.a.vcmppd(k1, x, ZERO, LT_OQ)?;
        self.a
            .vbroadcastsd(to.k1(), qword_ptr(rbp + 8 * routines::C_NAN as i32))
    }

    /// `kernels::smooth_weights` of both halves of the guard `g`: the else weights into
    /// `x[1]` and the then weights into `x[2]` of each set.
    pub(super) fn smooth_weights(&mut self, g: Operand) -> Result<(), IcedError> {
        // x = g * (1 / eta), then the shared routine.
        for h in 0..2 {
            let x = set(h).x[0];
            match g {
                Operand::Pair(p) => {
                    self.a
                        .vmulpd(x, ZMM[2 * p + h], qword_bcst(rbx + frame::INV_ETA))?
                }
                Operand::Slot(s) => {
                    self.a.vmovupd(x, self.slot_at(s, h))?;
                    self.a.vmulpd(x, x, qword_bcst(rbx + frame::INV_ETA))?;
                }
            }
        }
        self.a.call(self.routine_at[WEIGHTS])
    }

    /// `keep_weights` of half `h` (the weights' places at `rcx`), from the else and then
    /// weights in `we` and `wt`.
    pub(super) fn keep_weights(
        &mut self,
        cache: u32,
        product: bool,
        h: usize,
        we: AsmRegisterZmm,
        wt: AsmRegisterZmm,
    ) -> Result<(), IcedError> {
        if product {
            self.a.vmulpd(X[3], wt, we)?; // wt * we
            self.a.vmovupd(self.weight_at(cache, 0, h), X[3])
        } else {
            self.a.vmovupd(self.weight_at(cache, 0, h), we)?;
            self.a.vmovupd(self.weight_at(cache, 1, h), wt)
        }
    }

    /// `kernels::smooth_forward` of half `h` into pair `d` where the branches are the
    /// constants 1 and 0 (`which`): `masked(w1, 1) + masked(w0, 0)` is `w1` itself. Weights
    /// are never `-0.0` (`0 + 0` keeps `+0.0`), `w1 * 1` is `w1`, and where the guard is NaN
    /// both weights are the same NaN, which the sum returns.
    pub(super) fn indicator(
        &mut self,
        d: usize,
        h: usize,
        which: Indicator,
        we: AsmRegisterZmm,
        wt: AsmRegisterZmm,
    ) -> Result<(), IcedError> {
        let w = match which {
            Indicator::Then => wt,
            Indicator::Else => we,
        };
        self.a.vmovapd(ZMM[2 * d + h], w)
    }

    /// `kernels::smooth_forward` of half `h` into pair `d`, with the else and then weights in
    /// `we` and `wt`: `wt t + we e`, a product whose weight is zero replaced by zero.
    pub(super) fn smooth_forward(
        &mut self,
        d: usize,
        h: usize,
        t: Operand,
        e: Operand,
        we: AsmRegisterZmm,
        wt: AsmRegisterZmm,
    ) -> Result<(), IcedError> {
        let r = ZMM[2 * d + h];
        self.a.vcmppd(k4, wt, ZERO, NEQ_UQ)?;
        match t {
            Operand::Pair(p) => self.a.vmulpd(r.k4().z(), wt, ZMM[2 * p + h])?,
            Operand::Slot(s) => self.a.vmulpd(r.k4().z(), wt, self.slot_at(s, h))?,
        }
        self.a.vcmppd(k5, we, ZERO, NEQ_UQ)?;
        match e {
            Operand::Pair(p) => self.a.vmulpd(X[4].k5().z(), we, ZMM[2 * p + h])?,
            Operand::Slot(s) => self.a.vmulpd(X[4].k5().z(), we, self.slot_at(s, h))?,
        }
        self.a.vaddpd(r, r, X[4])
    }

    /// `r = x op y` on half `h`.
    pub(super) fn binary(
        &mut self,
        op: Binary,
        r: AsmRegisterZmm,
        x: AsmRegisterZmm,
        y: Operand,
        h: usize,
    ) -> Result<(), IcedError> {
        macro_rules! emit {
            ($f:ident) => {
                match y {
                    Operand::Pair(p) => self.a.$f(r, x, ZMM[2 * p + h]),
                    Operand::Slot(s) => self.a.$f(r, x, self.slot_at(s, h)),
                }
            };
        }
        match op {
            Binary::Add => emit!(vaddpd),
            Binary::Sub => emit!(vsubpd),
            Binary::Mul => emit!(vmulpd),
            Binary::Div => emit!(vdivpd),
            Binary::Pow => unreachable!("no inline form"),
        }
    }

    /// `k1` = half `h` of the guard `g < 0`.
    pub(super) fn negative(&mut self, g: Operand, h: usize) -> Result<(), IcedError> {
        match g {
            Operand::Pair(p) => self.a.vcmppd(k1, ZMM[2 * p + h], ZERO, LT_OQ),
            Operand::Slot(s) => self.a.vcmppd(k1, ZERO, self.slot_at(s, h), GT_OQ),
        }
    }

    /// Half `h` of pair `d` = `t` where `k1`, else `e`.
    pub(super) fn blend(
        &mut self,
        d: usize,
        h: usize,
        t: Operand,
        e: Operand,
    ) -> Result<(), IcedError> {
        let r = ZMM[2 * d + h];
        let ea = self.reg(e, h, r)?;
        match t {
            Operand::Pair(p) => self.a.vblendmpd(r.k1(), ea, ZMM[2 * p + h]),
            Operand::Slot(s) => self.a.vblendmpd(r.k1(), ea, self.slot_at(s, h)),
        }
    }
}
