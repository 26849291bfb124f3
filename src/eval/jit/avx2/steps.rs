//! The AVX2 forward emitter's code for each kind of step, one half of a chunk at a time (two
//! vectors of four lanes): the AVX-512 emitter's (`emit/steps.rs`) operations in the same
//! order, each select a comparison into a scratch register and a `vblendvpd`, and each long
//! routine called once for both vectors.
//!
//! A step writes vector `h` of its result only after reading vector `h` of its operands (or
//! through scratch registers), and vectors of different `h` are different registers: so a
//! result may take the pair of an operand that only the other vector still reads.

use iced_x86::IcedError;
use iced_x86::code_asm::*;

use crate::ir::{Binary, Unary};

use super::super::super::instr::{NONE, Op, UNREAD};
use super::super::frame;
use super::super::indicators::Indicator;
use super::routines::{self, C_ONE, C_SIGN, C_ZERO, GT_OQ, LT_OQ, NEQ_UQ, UNORD_Q, k};
use super::{EXP, Emitter, H, LN, LOC_AT, Operand, SCALE_AT, Step, WEIGHTS, X, pair, set};

/// The scratch register comparisons leave their lanes' masks in.
const MASK: AsmRegisterYmm = X[5];

impl Emitter<'_> {
    /// The value of `step` into a cache pair it returns.
    pub(super) fn step_value(&mut self, step: &Step) -> Result<usize, IcedError> {
        Ok(match step.op {
            Op::Param { k } => {
                let d = self.cache.take(&[]);
                for h in 0..H {
                    self.a
                        .vbroadcastsd(pair(d, h), qword_ptr(r13 + 8 * k as i32))?;
                }
                d
            }
            Op::Latent { i } => {
                let d = self.cache.take(&[]);
                self.latent_factors(i)?;
                for h in 0..H {
                    self.latent(pair(d, h), h)?;
                }
                d
            }
            Op::Unary { op, a } => self.unary(op, a)?,
            Op::Binary { op, a, b } => {
                let (x, y) = (self.cache.find(a), self.cache.find(b));
                let d = self.cache.take(&[x, y]);
                for h in 0..H {
                    let r = pair(d, h);
                    let xa = self.reg(x, h, r)?;
                    self.binary(op, r, xa, y, h)?;
                }
                d
            }
            Op::SumChain { base, from, to } => self.sum_chain(base, from, to)?,
            Op::If {
                g,
                t,
                e,
                cache,
                product,
                reuse,
                ..
            } if !self.crisp => self.smoothed_if(g, t, e, cache, product, reuse)?,
            Op::If { g, t, e, .. } | Op::Select { g, t, e } => self.select(g, t, e)?,
            Op::SelectLess { a, b, t, e } => self.select_by(Binary::Sub, a, b, t, e)?,
            Op::SelectSum { a, b, t, e } => self.select_by(Binary::Add, a, b, t, e)?,
            Op::StandIn { op, a } => self.stand_in(op, a)?,
            Op::PoissonTerm { r, c, stand_in, .. } => self.poisson_term(r, c, stand_in)?,
            Op::NormalSquare { x, m, s, c } => self.square(x, Some(m), Some(s), c, None)?,
            Op::SquareDiff { x, m, c } => self.square(x, Some(m), None, c, None)?,
            Op::Square { x, s, c } => self.square(x, None, (s != NONE).then_some(s), c, None)?,
            Op::SquareDiffSub { x, m, k, c } => self.square(x, Some(m), None, c, Some(k))?,
            Op::SquareSub { x, k, c } => self.square(x, None, None, c, Some(k))?,
            Op::SelectNeg { g, a, e } => self.select_neg(g, a, e)?,
            Op::SelectLatent { i, t, e } => self.select_latent(i, None, t, e)?,
            Op::SelectLessLatent { i, b, t, e } => self.select_latent(i, Some(b), t, e)?,
            Op::SelectChain {
                base,
                from,
                to,
                t,
                e,
            } => self.select_chain(base, from, to, t, e)?,
        })
    }

    /// `op(a)` into a new pair: a routine's call per vector (`exp`, `ln`) or an instruction.
    fn unary(&mut self, op: Unary, a: u32) -> Result<usize, IcedError> {
        let x = self.cache.find(a);
        match op {
            Unary::Log | Unary::Exp => {
                self.elementary(if op == Unary::Log { LN } else { EXP }, x)?;
                let d = self.cache.take(&[]);
                for h in 0..H {
                    self.a.vmovapd(pair(d, h), set(h)[1])?;
                }
                Ok(d)
            }
            Unary::Neg | Unary::Sqrt => {
                let d = self.cache.take(&[x]);
                for h in 0..H {
                    let r = pair(d, h);
                    if op == Unary::Neg {
                        let xa = self.reg(x, h, r)?;
                        self.a.vxorpd(r, xa, k(C_SIGN))?;
                    } else {
                        match x {
                            Operand::Pair(p) => self.a.vsqrtpd(r, pair(p, h))?,
                            Operand::Slot(s) => self.a.vsqrtpd(r, self.slot_at(s, h))?,
                        }
                    }
                }
                Ok(d)
            }
            _ => unreachable!("no inline form of {op} here"),
        }
    }

    /// The sum chain `((base + t1) + t2) + ...` of the terms `from..to` into a new pair.
    fn sum_chain(&mut self, base: u32, from: u32, to: u32) -> Result<usize, IcedError> {
        let x = self.cache.find(base);
        let terms = self.cache.terms(&self.chains[from as usize..to as usize]);
        let mut keep = terms.clone();
        keep.push(x);
        Ok(match self.cache.free(&keep) {
            Some(d) => {
                for h in 0..H {
                    self.chain(pair(d, h), x, from, to, &terms, h)?;
                }
                d
            }
            // Every pair holds an operand: each vector summed in a scratch register, then
            // written over its vector of a pair, whose term that vector of the sum has read.
            None => {
                let d = self.cache.take(&[]);
                for h in 0..H {
                    self.chain(X[4], x, from, to, &terms, h)?;
                    self.a.vmovapd(pair(d, h), X[4])?;
                }
                d
            }
        })
    }

    /// A smoothed if-statement into a new pair: both vectors' weights computed in one call
    /// (or read back, with `reuse`), kept at `cache` where read later, and the branches
    /// weighted.
    fn smoothed_if(
        &mut self,
        g: u32,
        t: u32,
        e: u32,
        cache: u32,
        product: bool,
        reuse: bool,
    ) -> Result<usize, IcedError> {
        if !reuse {
            // x = g * (1 / eta), then the routine, which loses every cached pair.
            let go = self.cache.find(g);
            self.a.vbroadcastsd(X[6], qword_ptr(rbx + frame::INV_ETA))?;
            for h in 0..H {
                let x0 = set(h)[0];
                match go {
                    Operand::Pair(p) => self.a.vmulpd(x0, pair(p, h), X[6])?,
                    Operand::Slot(s) => {
                        self.a.vmovupd(x0, self.slot_at(s, h))?;
                        self.a.vmulpd(x0, x0, X[6])?;
                    }
                }
            }
            self.a.call(self.routine_at[WEIGHTS])?;
            self.cache.lose_routine_pairs();
        }
        let (y, z) = (self.cache.find(t), self.cache.find(e));
        let d = self.cache.take(&[y, z]);
        let keep = cache != UNREAD;
        if reuse || keep {
            self.a.mov(rcx, qword_ptr(rbx + frame::WEIGHTS))?;
        }
        // Vector 0 writes only registers of the first set, whose weights it has read; vector
        // 1's weights are in the second.
        for h in 0..H {
            let (we, wt) = if reuse {
                self.a.vmovupd(X[1], self.weight_at(cache, 0, h))?;
                self.a.vmovupd(X[2], self.weight_at(cache, 1, h))?;
                (X[1], X[2])
            } else {
                let (we, wt) = (set(h)[1], set(h)[2]);
                if keep {
                    if product {
                        self.a.vmulpd(X[3], wt, we)?; // wt * we
                        self.a.vmovupd(self.weight_at(cache, 0, h), X[3])?;
                    } else {
                        self.a.vmovupd(self.weight_at(cache, 0, h), we)?;
                        self.a.vmovupd(self.weight_at(cache, 1, h), wt)?;
                    }
                }
                (we, wt)
            };
            let r = pair(d, h);
            match self.indicators.between(t, e) {
                // `masked(w1, 1) + masked(w0, 0)` is `w1` itself (see `emit/steps.rs`).
                Some(Indicator::Then) => self.a.vmovapd(r, wt)?,
                Some(Indicator::Else) => self.a.vmovapd(r, we)?,
                None => {
                    // `wt t + we e`, a product whose weight is zero replaced by zero.
                    self.a.vcmppd(X[6], wt, k(C_ZERO), NEQ_UQ)?;
                    match y {
                        Operand::Pair(p) => self.a.vmulpd(X[4], wt, pair(p, h))?,
                        Operand::Slot(s) => self.a.vmulpd(X[4], wt, self.slot_at(s, h))?,
                    }
                    self.a.vandpd(X[4], X[4], X[6])?;
                    self.a.vcmppd(X[6], we, k(C_ZERO), NEQ_UQ)?;
                    match z {
                        Operand::Pair(p) => self.a.vmulpd(X[5], we, pair(p, h))?,
                        Operand::Slot(s) => self.a.vmulpd(X[5], we, self.slot_at(s, h))?,
                    }
                    self.a.vandpd(X[5], X[5], X[6])?;
                    self.a.vaddpd(r, X[4], X[5])?;
                }
            }
        }
        Ok(d)
    }

    /// [`MASK`] = vector `h` of `g < 0`.
    fn negative(&mut self, g: Operand, h: usize) -> Result<(), IcedError> {
        match g {
            Operand::Pair(p) => self.a.vcmppd(MASK, pair(p, h), k(C_ZERO), LT_OQ),
            Operand::Slot(s) => {
                self.a.vxorpd(MASK, MASK, MASK)?;
                self.a.vcmppd(MASK, MASK, self.slot_at(s, h), GT_OQ)
            }
        }
    }

    /// `t` where `g < 0`, else `e`, into a new pair (a crisp if-statement).
    fn select(&mut self, g: u32, t: u32, e: u32) -> Result<usize, IcedError> {
        let (x, y, z) = (self.cache.find(g), self.cache.find(t), self.cache.find(e));
        let d = self.cache.take(&[x, y, z]);
        for h in 0..H {
            self.negative(x, h)?;
            self.blend(d, h, y, z)?;
        }
        Ok(d)
    }

    /// `t` where `a op b < 0` (`op` a sum or difference), else `e`, into a new pair (the
    /// guard is read into a scratch register first, so only the branches' pairs are kept).
    fn select_by(
        &mut self,
        op: Binary,
        a: u32,
        b: u32,
        t: u32,
        e: u32,
    ) -> Result<usize, IcedError> {
        let (p, q) = (self.cache.find(a), self.cache.find(b));
        let (y, z) = (self.cache.find(t), self.cache.find(e));
        let d = self.cache.take(&[y, z]);
        for h in 0..H {
            let pa = self.reg(p, h, X[4])?;
            self.binary(op, X[4], pa, q, h)?;
            self.a.vcmppd(MASK, X[4], k(C_ZERO), LT_OQ)?;
            self.blend(d, h, y, z)?;
        }
        Ok(d)
    }

    /// The stand-in of `op(a)` (`checked.rs`) into a new pair, inline.
    fn stand_in(&mut self, op: Unary, a: u32) -> Result<usize, IcedError> {
        let x = self.cache.find(a);
        let d = self.cache.take(&[x]);
        for h in 0..H {
            let xa = self.reg(x, h, X[4])?;
            match op {
                Unary::Log => self.ln_stand_in(X[3], xa)?,
                Unary::Log1p => {
                    // `ln_stand_in(1 + x)`.
                    self.a.vaddpd(X[6], xa, k(C_ONE))?;
                    self.ln_stand_in(X[3], X[6])?;
                }
                Unary::Softplus => {
                    // `max(x, 0)` (zero where `x` is zero or below, the second operand where
                    // either is NaN), then `x + x` where `x` is NaN.
                    self.a.vmaxpd(X[3], xa, k(C_ZERO))?;
                    self.a.vcmppd(MASK, xa, xa, UNORD_Q)?;
                    self.a.vaddpd(X[6], xa, xa)?;
                    self.a.vblendvpd(X[3], X[3], X[6], MASK)?;
                }
                _ => unreachable!("no stand-in for {op:?}"),
            }
            self.a.vmovapd(pair(d, h), X[3])?;
        }
        Ok(d)
    }

    /// The Poisson term `c ln(r) - r` into a new pair: the logarithm by the routine, or its
    /// stand-in inline.
    fn poisson_term(&mut self, r: u32, c: f64, stand_in: bool) -> Result<usize, IcedError> {
        let x = self.cache.find(r);
        let ci = self.constant(c);
        if stand_in {
            let d = self.cache.take(&[x]);
            for h in 0..H {
                let xa = self.reg(x, h, X[4])?;
                self.ln_stand_in(X[3], xa)?;
                self.a.vmulpd(X[3], X[3], k(ci))?;
                self.a.vsubpd(pair(d, h), X[3], xa)?;
            }
            return Ok(d);
        }
        // The routine leaves `r` where it took it; vector 0 writes only registers of the
        // first set, vector 1 reads the second's.
        self.elementary(LN, x)?;
        let d = self.cache.take(&[]);
        for h in 0..H {
            self.a.vmulpd(X[4], set(h)[1], k(ci))?;
            self.a.vsubpd(pair(d, h), X[4], set(h)[0])?;
        }
        Ok(d)
    }

    /// `-a` where `g < 0`, else `e`, into a new pair.
    fn select_neg(&mut self, g: u32, a: u32, e: u32) -> Result<usize, IcedError> {
        let (x, y, z) = (self.cache.find(g), self.cache.find(a), self.cache.find(e));
        let d = self.cache.take(&[x, y, z]);
        for h in 0..H {
            self.negative(x, h)?;
            let ya = self.reg(y, h, X[4])?;
            self.a.vxorpd(X[4], ya, k(C_SIGN))?;
            let r = pair(d, h);
            let ea = self.reg(z, h, r)?;
            self.a.vblendvpd(r, ea, X[4], MASK)?;
        }
        Ok(d)
    }

    /// `t` where latent `i` (minus `b`, where given) is negative, else `e`, into a new pair.
    fn select_latent(
        &mut self,
        i: u32,
        b: Option<u32>,
        t: u32,
        e: u32,
    ) -> Result<usize, IcedError> {
        let b = b.map(|b| self.cache.find(b));
        let (y, z) = (self.cache.find(t), self.cache.find(e));
        let d = self.cache.take(&[y, z]);
        self.latent_factors(i)?;
        for h in 0..H {
            self.latent(X[4], h)?;
            if let Some(b) = b {
                self.binary(Binary::Sub, X[4], X[4], b, h)?;
            }
            self.a.vcmppd(MASK, X[4], k(C_ZERO), LT_OQ)?;
            self.blend(d, h, y, z)?;
        }
        Ok(d)
    }

    /// `t` where the sum chain of `base` and the terms `from..to` is negative, else `e`, into
    /// a new pair.
    fn select_chain(
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
        // The sum goes through a scratch register, so only the branches' pairs must survive.
        let d = self.cache.take(&[y, z]);
        for h in 0..H {
            self.chain(X[4], x, from, to, &terms, h)?;
            self.a.vcmppd(MASK, X[4], k(C_ZERO), LT_OQ)?;
            self.blend(d, h, y, z)?;
        }
        Ok(d)
    }

    /// Vector `h` of the sum chain `((base + t1) + t2) + ...` into `r`, which holds none of
    /// its terms; each addition in its own operand order, as `kernels::sum_step`.
    fn chain(
        &mut self,
        r: AsmRegisterYmm,
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
    fn latent_factors(&mut self, i: u32) -> Result<(), IcedError> {
        let a = &mut self.a;
        if !self.latent_pointers {
            a.mov(SCALE_AT, qword_ptr(rbx + frame::SCALE))?;
            a.mov(LOC_AT, qword_ptr(rbx + frame::LOC))?;
            self.latent_pointers = true;
        }
        a.imul_3(rax, r15, i as i32)?;
        let disp = 8 * i as i32;
        a.vbroadcastsd(X[0], qword_ptr(SCALE_AT + disp))?;
        a.vbroadcastsd(X[1], qword_ptr(LOC_AT + disp))
    }

    /// Vector `h` of the latent whose factors [`Self::latent_factors`] loaded, into `r`:
    /// `loc + scale * s`, multiplied then added (never fused), as `Latents::load`.
    fn latent(&mut self, r: AsmRegisterYmm, h: usize) -> Result<(), IcedError> {
        self.a
            .vmulpd(r, X[0], ymmword_ptr(r14 + rax + 32 * h as i32))?;
        self.a.vaddpd(r, X[1], r)
    }

    /// A fused density term, `c * u^2` with `u = (x - m) / s` (either part left out where
    /// absent), minus `k` where given, each operation as the unfused instruction's; computed
    /// in a scratch register, so that the result may take any pair.
    fn square(
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
        let d = self.cache.take(&[]);
        let ci = self.constant(c);
        let r = X[4];
        for h in 0..H {
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
            self.a.vmulpd(r, r, routines::k(ci))?;
            if k.is_some() {
                self.binary(Binary::Sub, r, r, ko, h)?;
            }
            self.a.vmovapd(pair(d, h), r)?;
        }
        Ok(d)
    }

    /// `elementary::ln_stand_in` of `x` into `to` (neither `x` nor `X[1]`, `X[2]`, which it
    /// uses): the exponent field of `x` (of `x 2^54` where `x` is below the smallest normal
    /// number) read as `2^52 + field` and less `2^52 + 1023` (or `+ 1077`), exactly, times
    /// `ln 2`; `x + x` where `x` is not below `+inf`, and the logarithm's values at zero and
    /// below, as the scalar function computes them.
    fn ln_stand_in(&mut self, to: AsmRegisterYmm, x: AsmRegisterYmm) -> Result<(), IcedError> {
        use routines::{
            C_E_BIAS, C_E_BIAS_SUB, C_E_BITS, C_INF, C_LN_2, C_MIN_POSITIVE, C_NAN, C_NEG_INF,
            C_SUB_SCALE, EQ_OQ, LE_OQ,
        };
        let (t1, t2) = (X[1], X[2]);
        let a = &mut self.a;
        a.vcmppd(t1, x, k(C_MIN_POSITIVE), LT_OQ)?; // sub
        a.vmovupd(to, k(C_ONE))?;
        a.vblendvpd(to, to, k(C_SUB_SCALE), t1)?;
        a.vmulpd(to, x, to)?;
        a.vpsrlq(to, to, 52)?;
        a.vpor(to, to, k(C_E_BITS))?; // 2^52 + field (and the sign, where x < 0)
        a.vmovupd(t2, k(C_E_BIAS))?;
        a.vblendvpd(t2, t2, k(C_E_BIAS_SUB), t1)?;
        a.vsubpd(to, to, t2)?; // the exponent
        a.vmulpd(to, to, k(C_LN_2))?;
        a.vcmppd(t1, x, k(C_INF), LT_OQ)?;
        a.vaddpd(t2, x, x)?;
        a.vblendvpd(to, t2, to, t1)?;
        a.vcmppd(t1, x, k(C_ZERO), EQ_OQ)?;
        a.vmovupd(t2, k(C_NAN))?;
        a.vblendvpd(t2, t2, k(C_NEG_INF), t1)?;
        a.vcmppd(t1, x, k(C_ZERO), LE_OQ)?;
        a.vblendvpd(to, to, t2, t1)
    }

    /// `r = x op y` on vector `h`.
    fn binary(
        &mut self,
        op: Binary,
        r: AsmRegisterYmm,
        x: AsmRegisterYmm,
        y: Operand,
        h: usize,
    ) -> Result<(), IcedError> {
        macro_rules! emit {
            ($f:ident) => {
                match y {
                    Operand::Pair(p) => self.a.$f(r, x, pair(p, h)),
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

    /// Vector `h` of pair `d` = `t` where [`MASK`], else `e`.
    fn blend(&mut self, d: usize, h: usize, t: Operand, e: Operand) -> Result<(), IcedError> {
        let r = pair(d, h);
        let ea = self.reg(e, h, r)?;
        match t {
            Operand::Pair(p) => self.a.vblendvpd(r, ea, pair(p, h), MASK),
            Operand::Slot(s) => self.a.vblendvpd(r, ea, self.slot_at(s, h), MASK),
        }
    }
}
