//! Which instructions each reverse step becomes, at either width: one part (a half, or a
//! quarter) of a step's reverse, by the kind of its operation, sending its contributions to
//! its operands' adjoints.
//!
//! Why apart from the emitter (`reverse.rs`): the emitter keeps the registers, the adjoint
//! cache and the places; this is the one long table from operation to code.

use iced_x86::IcedError;

use crate::ir::{Binary, Unary};

use super::super::super::instr::{NONE, Op, RevStep, Target};
use super::super::vector::{Arith, ReverseVector, Src};
use super::{C_ONE, C_TWO, Emitter};

impl<W: ReverseVector> Emitter<'_, W> {
    /// Part `h` of `rs`'s reverse, its own adjoint in `W::OWN`.
    pub(super) fn step_part(&mut self, rs: &RevStep, h: usize) -> Result<(), IcedError> {
        let [t0, t1, t2, ..] = rs.to;
        let out = rs.step.out;
        let [r0, r1, r2, r3, r4, ..] = *W::R else {
            unreachable!("a width has nine scratch registers")
        };
        let (own, zero) = (W::OWN, W::ZERO);
        match rs.step.op {
            Op::Param { .. } | Op::Latent { .. } => {}
            Op::Unary { op: Unary::Neg, .. } => {
                if t0.adj != NONE {
                    self.accumulate(t0, own, h, true)?;
                }
            }
            Op::Unary { op, a } => {
                self.unary_local(r0, op, a, out, h)?;
                self.masked(r1, own, r0)?;
                self.put(t0, r1, h)?;
            }
            Op::Binary { op, a, b } if a == b => {
                // Both partials at once: `da + db`.
                match op {
                    Binary::Add => self.masked(r1, own, W::k(C_TWO))?,
                    Binary::Sub => self.masked(r1, own, zero)?,
                    Binary::Mul => {
                        let at = self.value(a, h);
                        W::mov(&mut self.a, r2, Src::Mem(at))?;
                        W::arith(&mut self.a, Arith::Add, r0, r2, Src::Reg(r2))?;
                        self.masked(r1, own, r0)?;
                    }
                    Binary::Div => {
                        self.div_partials(r2, r3, a, out, h)?;
                        W::arith(&mut self.a, Arith::Add, r0, r2, Src::Reg(r3))?;
                        self.masked(r1, own, r0)?;
                    }
                    Binary::Pow => unreachable!("no inline form"),
                }
                self.put(t0, r1, h)?;
            }
            Op::Binary {
                op: op @ (Binary::Add | Binary::Sub),
                ..
            } => self.sum_contributions(own, t0, t1, op == Binary::Sub, h)?,
            Op::Binary { op, a, b } => {
                let (want_a, want_b) = (t0.adj != NONE, t1.adj != NONE);
                if want_a {
                    match op {
                        Binary::Add | Binary::Sub => unreachable!("a sum's own arm"),
                        Binary::Mul => self.masked(r1, own, self.value(b, h))?,
                        Binary::Div => {
                            W::load_constant(&mut self.a, r2, C_ONE)?;
                            let at = self.value(b, h);
                            W::arith(&mut self.a, Arith::Div, r0, r2, Src::Mem(at))?;
                            self.masked(r1, own, r0)?;
                        }
                        Binary::Pow => unreachable!("no inline form"),
                    }
                }
                // Only `b` wanted, or both of a product or quotient.
                if want_b || !want_a {
                    match op {
                        Binary::Add | Binary::Sub => unreachable!("a sum's own arm"),
                        Binary::Mul => self.masked(r4, own, self.value(a, h))?,
                        Binary::Div => {
                            // -v / b
                            let at = self.value(out, h);
                            W::negate_value(&mut self.a, r2, at)?;
                            let at = self.value(b, h);
                            W::arith(&mut self.a, Arith::Div, r3, r2, Src::Mem(at))?;
                            self.masked(r4, own, r3)?;
                        }
                        Binary::Pow => unreachable!("no inline form"),
                    }
                }
                self.put(t0, r1, h)?;
                self.put(t1, r4, h)?;
            }
            Op::NormalSquare { x, m, s, c } => self.square(rs, x, Some(m), Some(s), c, h)?,
            Op::SquareDiff { x, m, c } => self.square(rs, x, Some(m), None, c, h)?,
            Op::Square { x, s, c } => self.square(rs, x, None, (s != NONE).then_some(s), c, h)?,
            Op::PoissonTerm { r, c, .. } => {
                if t0.adj != NONE {
                    let ci = self.constant(c);
                    // ad_p = 0.0 + ad is `ad` itself (never `-0.0`).
                    self.masked(r2, own, W::k(ci))?;
                    // ad_l = 0.0 + masked(ad_p, c)
                    W::arith(&mut self.a, Arith::Add, r2, zero, Src::Reg(r2))?;
                    W::load_constant(&mut self.a, r3, C_ONE)?;
                    let at = self.value(r, h);
                    W::arith(&mut self.a, Arith::Div, r3, r3, Src::Mem(at))?; // 1 / r
                    self.masked(r4, r2, r3)?;
                    self.accumulate(t0, own, h, true)?;
                    self.accumulate(Target { first: false, ..t0 }, r4, h, false)?;
                }
            }
            Op::SumChain { from, to, .. } => {
                // Down the chain the partial sums' adjoints are `0.0 + d` and
                // `0.0 + masked(d, 1)`: each is `d` itself (an adjoint is never `-0.0`), so
                // every term and then the base receive the step's own adjoint, in the
                // interpreter's order.
                for j in (from..to).rev() {
                    self.put(self.chain_targets[j as usize], own, h)?;
                }
                self.put(t0, own, h)?;
            }
            Op::If {
                g,
                t,
                e,
                cache,
                product,
                ..
            } if self.smooth => {
                let want_guard = t0.adj != NONE || rs.folded_guard.is_some();
                if product {
                    let at = self.weight(cache, h);
                    W::mov(&mut self.a, r2, Src::Mem(at))?;
                    self.smooth_guard(r1, r2, t, e, h)?;
                    self.put(t0, r1, h)?;
                } else {
                    if want_guard {
                        // w = wt * we
                        let (then_at, else_at) =
                            (self.weight_after(cache, h), self.weight(cache, h));
                        W::mov(&mut self.a, r2, Src::Mem(then_at))?;
                        W::arith(&mut self.a, Arith::Mul, r2, r2, Src::Mem(else_at))?;
                        self.smooth_guard(r1, r2, t, e, h)?;
                        self.put(t0, r1, h)?;
                    }
                    if t1.adj != NONE {
                        self.smooth_branch(r3, self.weight_after(cache, h))?;
                        self.put(t1, r3, h)?;
                    }
                    if t2.adj != NONE {
                        self.smooth_branch(r3, self.weight(cache, h))?;
                        self.put(t2, r3, h)?;
                    }
                }
                if let Some(op) = rs.folded_guard {
                    self.fold_guard(op, r1, rs.to, h)?;
                }
                let _ = g;
            }
            Op::If { g, .. } => {
                // `then` takes the adjoint where `g < 0`, `else` elsewhere.
                let at = self.value(g, h);
                W::split_by_guard(&mut self.a, r1, r2, at)?;
                self.put(t1, r1, h)?;
                self.put(t2, r2, h)?;
            }
            _ => unreachable!("no reverse step of the crisp forward-only plan"),
        }
        Ok(())
    }
}
