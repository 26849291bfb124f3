//! The forward emitter's code for each kind of step ([`Emitter::step`] dispatches here), at
//! either width: each writes the step's value into a register pair it returns, by the
//! interpreter's own operations in the same order; and the instruction sequences several
//! kinds share (operands in registers or memory, blends, sum chains, latents, smoothing
//! weights). What a width does its own way (a comparison, a select, a masked product, a
//! stand-in) is its [`Vector`]'s.
//!
//! A step writes register `h` of its result only after reading register `h` of its operands
//! (or through scratch registers), and registers of different `h` are different: so a result
//! may take the pair of an operand that only the other register still reads.

use iced_x86::IcedError;
use iced_x86::code_asm::*;

use crate::ir::{Binary, Unary, unary_called_back, unary_without_stand_in};

use super::super::super::instr::{NONE, UNREAD};
use super::super::consts::C_ONE;
use super::super::frame;
use super::super::indicators::Indicator;
use super::super::repeat::Unit;
use super::super::vector::{Arith, Src, Vector};
use super::cache::Operand;
use super::{EXP, Emitter, LN, LOC_AT, SCALE_AT, WEIGHTS};

impl<W: Vector> Emitter<'_, W> {
    /// Parameter `k` broadcast into a new pair.
    pub(super) fn param(&mut self, k: u32) -> Result<usize, IcedError> {
        let d = self.cache.take(&[]);
        let at = match self.moving(|l| l.word(Unit::Param, k)) {
            Some((reg, scale)) => qword_ptr(r13 + reg * scale + 8 * k as i32),
            None => qword_ptr(r13 + 8 * k as i32),
        };
        for h in 0..2 {
            W::broadcast(&mut self.a, W::pair(d, h), at)?;
        }
        Ok(d)
    }

    /// Latent `i` (its noise reparameterised) into a new pair.
    pub(super) fn latent_value(&mut self, i: u32) -> Result<usize, IcedError> {
        let d = self.cache.take(&[]);
        self.latent_factors(i)?;
        for h in 0..2 {
            self.latent(W::pair(d, h), h)?;
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
            W::mov(&mut self.a, W::pair(d, h), Src::Reg(W::routine(h, 1)))?;
        }
        Ok(d)
    }

    /// `-x` (`neg`) or `sqrt(x)` into a new pair.
    pub(super) fn by_instruction(&mut self, neg: bool, x: Operand) -> Result<usize, IcedError> {
        let d = self.cache.take(&[x]);
        for h in 0..2 {
            let (r, x) = (W::pair(d, h), self.src(x, h));
            if neg {
                W::neg(&mut self.a, r, x)?;
            } else {
                W::sqrt(&mut self.a, r, x)?;
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
                    self.chain(W::pair(d, h), x, from, to, &terms, h)?;
                }
                d
            }
            // Every pair holds an operand: each register of the sum is computed in a scratch
            // register and then written over its register of a pair, whose term it has read.
            None => {
                let d = self.cache.take(&[]);
                for h in 0..2 {
                    self.chain(W::X[4], x, from, to, &terms, h)?;
                    W::mov(&mut self.a, W::pair(d, h), Src::Reg(W::X[4]))?;
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
                let x = W::X;
                let (else_at, then_at) = (self.weight_at(cache, 0, h), self.weight_at(cache, 1, h));
                W::mov(&mut self.a, x[1], Src::Mem(else_at))?;
                W::mov(&mut self.a, x[2], Src::Mem(then_at))?;
                (x[1], x[2])
            } else {
                // Register 0 writes only registers of the first set, whose weights it has
                // read; register 1's weights are in the second.
                let (we, wt) = (W::routine(h, 1), W::routine(h, 2));
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

    /// A new pair `d` chosen where `g < 0` between `t` and `e`: register by register, the
    /// condition set where `g` is negative, then `choose(self, d, h, t, e)` writes register
    /// `h` of `d`.
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

    /// `t` where `a op b < 0` (`op` a sum or difference), else `e`, into a new pair (the
    /// guard is computed in a scratch register, so without pairs to spare only the
    /// branches' pairs are kept).
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
        let d = if W::SPARE_PAIRS {
            self.cache.take(&[p, q, y, z])
        } else {
            self.cache.take(&[y, z])
        };
        let x4 = W::X[4];
        for h in 0..2 {
            let pa = self.reg(p, h, x4)?;
            self.binary(op, x4, pa, q, h)?;
            W::negative(&mut self.a, Src::Reg(x4))?;
            self.blend(d, h, y, z)?;
        }
        Ok(d)
    }

    /// The stand-in of `op(a)` (`checked.rs`) into a new pair, inline.
    pub(super) fn stand_in(&mut self, op: Unary, a: u32) -> Result<usize, IcedError> {
        let x = self.cache.find(a);
        let d = self.cache.take(&[x]);
        let (x4, x6, to) = (W::X[4], W::X[6], W::STAND_IN);
        for h in 0..2 {
            let xa = self.reg(x, h, x4)?;
            let a = &mut self.a;
            match op {
                Unary::Log => W::ln_stand_in(a, to, xa)?,
                Unary::Log1p => {
                    // `ln_stand_in(1 + x)`.
                    W::arith(a, Arith::Add, x6, xa, Src::Mem(W::k(C_ONE)))?;
                    W::ln_stand_in(a, to, x6)?;
                }
                Unary::Softplus => W::softplus(a, to, xa)?,
                unary_without_stand_in!() => unreachable!("no stand-in for {op:?}"),
            }
            W::mov(a, W::pair(d, h), Src::Reg(to))?;
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
        let (x4, to) = (W::X[4], W::STAND_IN);
        if stand_in {
            let d = self.cache.take(&[x]);
            let ci = self.constant(c);
            for h in 0..2 {
                let xa = self.reg(x, h, x4)?;
                let a = &mut self.a;
                W::ln_stand_in(a, to, xa)?;
                W::arith(a, Arith::Mul, to, to, Src::Mem(W::k(ci)))?;
                W::arith(a, Arith::Sub, W::pair(d, h), to, Src::Reg(xa))?;
            }
            return Ok(d);
        }
        // The routine leaves `r` where it took it.
        self.elementary(LN, x)?;
        let d = self.cache.take(&[]);
        let ci = self.constant(c);
        for h in 0..2 {
            // Through a scratch register: `d` may be the pair that held `r`.
            let a = &mut self.a;
            W::arith(a, Arith::Mul, x4, W::routine(h, 1), Src::Mem(W::k(ci)))?;
            W::arith(a, Arith::Sub, W::pair(d, h), x4, Src::Reg(W::routine(h, 0)))?;
        }
        Ok(d)
    }

    /// `-a` where `g < 0`, else `e`, into a new pair.
    pub(super) fn select_neg(&mut self, g: u32, a: u32, e: u32) -> Result<usize, IcedError> {
        self.select_where_negative(g, a, e, |s, d, h, y, z| {
            let x4 = W::X[4];
            let operand = s.src(y, h);
            W::neg(&mut s.a, x4, operand)?;
            let r = W::pair(d, h);
            let ea = s.reg(z, h, r)?;
            W::blend(&mut s.a, r, ea, Src::Reg(x4))
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
        let d = if W::SPARE_PAIRS {
            self.cache.take(&[y, z, b.unwrap_or(Operand::Slot(NONE))])
        } else {
            self.cache.take(&[y, z])
        };
        self.latent_factors(i)?;
        let x4 = W::X[4];
        for h in 0..2 {
            self.latent(x4, h)?;
            if let Some(b) = b {
                self.binary(Binary::Sub, x4, x4, b, h)?;
            }
            W::negative(&mut self.a, Src::Reg(x4))?;
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
        // The sum goes through a scratch register, so with every pair holding an operand (or
        // none to spare) only the branches' pairs must survive (each register's guard is
        // summed before the blend writes that register).
        let spare = if W::SPARE_PAIRS {
            self.cache.free(&keep)
        } else {
            None
        };
        let d = match spare {
            Some(d) => d,
            None => self.cache.take(&[y, z]),
        };
        let x4 = W::X[4];
        for h in 0..2 {
            self.chain(x4, x, from, to, &terms, h)?;
            W::negative(&mut self.a, Src::Reg(x4))?;
            self.blend(d, h, y, z)?;
        }
        Ok(d)
    }

    /// Half `h` of the sum chain `((base + t1) + t2) + ...` of the terms `from..` (operands
    /// `terms`) into `r`, which holds none of them; each addition in its own operand order,
    /// as `kernels::sum_step`.
    pub(super) fn chain(
        &mut self,
        r: W::Reg,
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
                let ta = self.reg(t, h, W::X[5])?;
                W::arith(&mut self.a, Arith::Add, r, ta, Src::Reg(acc))?;
            } else {
                self.binary(Binary::Add, r, acc, t, h)?;
            }
            acc = r;
        }
        if acc != r {
            W::mov(&mut self.a, r, Src::Reg(acc))?;
        }
        Ok(())
    }

    /// Broadcasts latent `i`'s scale into `X[0]` and location into `X[1]` (unless the
    /// latents are their noise), and puts its noise's offset in `rax`.
    /// Inside a loop, a moving latent's are its first iteration's plus the loop's registers.
    pub(super) fn latent_factors(&mut self, i: u32) -> Result<(), IcedError> {
        let word = self.moving(|l| l.word(Unit::Latent, i));
        let noise = self.moving(|l| l.noise(i));
        let a = &mut self.a;
        if !self.latent_pointers && !self.noise_latents {
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
        if self.noise_latents {
            return Ok(());
        }
        let disp = 8 * i as i32;
        let x = W::X;
        match word {
            Some((reg, scale)) => {
                W::broadcast(a, x[0], qword_ptr(SCALE_AT + reg * scale + disp))?;
                W::broadcast(a, x[1], qword_ptr(LOC_AT + reg * scale + disp))
            }
            None => {
                W::broadcast(a, x[0], qword_ptr(SCALE_AT + disp))?;
                W::broadcast(a, x[1], qword_ptr(LOC_AT + disp))
            }
        }
    }

    /// Register `h` of the latent whose factors [`Self::latent_factors`] loaded, into `r`:
    /// `loc + scale * s`, multiplied then added (never fused), as `Latents::load`; where the
    /// latents are their noise, `s` itself (what `-0.0 + 1 * s` is).
    pub(super) fn latent(&mut self, r: W::Reg, h: usize) -> Result<(), IcedError> {
        let noise = W::ptr(r14 + rax + (h as i32 * W::BYTES));
        if self.noise_latents {
            return W::mov(&mut self.a, r, Src::Mem(noise));
        }
        W::arith(&mut self.a, Arith::Mul, r, W::X[0], Src::Mem(noise))?;
        W::arith(&mut self.a, Arith::Add, r, W::X[1], Src::Reg(r))
    }

    /// A fused density term, `c * u^2` with `u = (x - m) / s` (either part left out where
    /// absent), minus `k` where given: each operation as the unfused instruction's (the
    /// square as `u * u`, what `powi(2)` computes). Returns the result's pair. Without pairs to
    /// spare, computed in a scratch register, so that the result may take any pair.
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
        let d = if W::SPARE_PAIRS {
            self.cache.take(&[xo, mo, so, ko])
        } else {
            self.cache.take(&[])
        };
        let ci = self.constant(c);
        for h in 0..2 {
            let r = if W::SPARE_PAIRS {
                W::pair(d, h)
            } else {
                W::X[4]
            };
            let mut u = self.reg(xo, h, r)?;
            if m.is_some() {
                self.binary(Binary::Sub, r, u, mo, h)?;
                u = r;
            }
            if s.is_some() {
                self.binary(Binary::Div, r, u, so, h)?;
                u = r;
            }
            W::arith(&mut self.a, Arith::Mul, r, u, Src::Reg(u))?;
            W::arith(&mut self.a, Arith::Mul, r, r, Src::Mem(W::k(ci)))?;
            if k.is_some() {
                self.binary(Binary::Sub, r, r, ko, h)?;
            }
            if !W::SPARE_PAIRS {
                W::mov(&mut self.a, W::pair(d, h), Src::Reg(r))?;
            }
        }
        Ok(d)
    }

    /// `kernels::smooth_weights` of both registers of the guard `g`: the else weights into
    /// `x[1]` and the then weights into `x[2]` of each routine set.
    pub(super) fn smooth_weights(&mut self, g: Operand) -> Result<(), IcedError> {
        // x = g * (1 / eta), then the shared routine.
        let inv_eta = W::inv_eta(&mut self.a)?;
        for h in 0..2 {
            let x = W::routine(h, 0);
            match g {
                Operand::Pair(p) => W::arith(&mut self.a, Arith::Mul, x, W::pair(p, h), inv_eta)?,
                Operand::Slot(s) => {
                    let at = self.slot_at(s, h);
                    W::mov(&mut self.a, x, Src::Mem(at))?;
                    W::arith(&mut self.a, Arith::Mul, x, x, inv_eta)?;
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
        we: W::Reg,
        wt: W::Reg,
    ) -> Result<(), IcedError> {
        if product {
            let x3 = W::X[3];
            W::arith(&mut self.a, Arith::Mul, x3, wt, Src::Reg(we))?; // wt * we
            let at = self.weight_at(cache, 0, h);
            W::store(&mut self.a, at, x3)
        } else {
            let (else_at, then_at) = (self.weight_at(cache, 0, h), self.weight_at(cache, 1, h));
            W::store(&mut self.a, else_at, we)?;
            W::store(&mut self.a, then_at, wt)
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
        we: W::Reg,
        wt: W::Reg,
    ) -> Result<(), IcedError> {
        let w = match which {
            Indicator::Then => wt,
            Indicator::Else => we,
        };
        W::mov(&mut self.a, W::pair(d, h), Src::Reg(w))
    }

    /// `kernels::smooth_forward` of half `h` into pair `d`, with the else and then weights in
    /// `we` and `wt`: `wt t + we e`, a product whose weight is zero replaced by zero.
    pub(super) fn smooth_forward(
        &mut self,
        d: usize,
        h: usize,
        t: Operand,
        e: Operand,
        we: W::Reg,
        wt: W::Reg,
    ) -> Result<(), IcedError> {
        let (t, e) = (self.src(t, h), self.src(e, h));
        W::smooth_forward(&mut self.a, W::pair(d, h), t, e, we, wt)
    }

    /// `r = x op y` on register `h`.
    pub(super) fn binary(
        &mut self,
        op: Binary,
        r: W::Reg,
        x: W::Reg,
        y: Operand,
        h: usize,
    ) -> Result<(), IcedError> {
        let op = match op {
            Binary::Add => Arith::Add,
            Binary::Sub => Arith::Sub,
            Binary::Mul => Arith::Mul,
            Binary::Div => Arith::Div,
            Binary::Pow => unreachable!("no inline form"),
        };
        let operand = self.src(y, h);
        W::arith(&mut self.a, op, r, x, operand)
    }

    /// The condition [`Vector::blend`] reads = register `h` of the guard `g < 0`.
    pub(super) fn negative(&mut self, g: Operand, h: usize) -> Result<(), IcedError> {
        let operand = self.src(g, h);
        W::negative(&mut self.a, operand)
    }

    /// Register `h` of pair `d` = `t` where the condition holds, else `e`.
    pub(super) fn blend(
        &mut self,
        d: usize,
        h: usize,
        t: Operand,
        e: Operand,
    ) -> Result<(), IcedError> {
        let r = W::pair(d, h);
        let ea = self.reg(e, h, r)?;
        let operand = self.src(t, h);
        W::blend(&mut self.a, r, ea, operand)
    }
}
