//! Which instructions each reverse step becomes: one half of a step's reverse, by the
//! kind of its operation, sending its contributions to its operands' adjoints.
//!
//! Why apart from the emitter (`reverse.rs`): the emitter keeps the registers, the adjoint
//! cache and the places; this is the one long table from operation to code.

use iced_x86::IcedError;
use iced_x86::code_asm::*;

use crate::ir::{Binary, Unary};

use super::super::super::instr::{NONE, Op, RevStep, Target};
use super::super::regs::*;
use super::super::routines::k;
use super::{C_ONE, C_TWO, Emitter, OWN, R};

impl Emitter<'_> {
    pub(super) fn step_half(&mut self, rs: &RevStep, h: usize) -> Result<(), IcedError> {
        let [t0, t1, t2, ..] = rs.to;
        let out = rs.step.out;
        let [r0, r1, r2, r3, r4, ..] = R;
        match rs.step.op {
            Op::Param { .. } | Op::Latent { .. } => {}
            Op::Unary { op: Unary::Neg, .. } => {
                if t0.adj != NONE {
                    self.accumulate(t0, OWN, h, true)?;
                }
            }
            Op::Unary { op, a } => {
                self.unary_local(r0, op, a, out, h)?;
                self.masked(r1, OWN, r0)?;
                self.put(t0, r1, h)?;
            }
            Op::Binary { op, a, b } if a == b => {
                // Both partials at once: `da + db`.
                match op {
                    Binary::Add => {
                        let two = k(C_TWO);
                        self.masked(r1, OWN, two)?;
                    }
                    Binary::Sub => self.masked(r1, OWN, ZERO)?,
                    Binary::Mul => {
                        self.a.vmovupd(r2, self.value(a, h))?;
                        self.a.vaddpd(r0, r2, r2)?;
                        self.masked(r1, OWN, r0)?;
                    }
                    Binary::Div => {
                        self.div_partials(r2, r3, a, out, h)?;
                        self.a.vaddpd(r0, r2, r3)?;
                        self.masked(r1, OWN, r0)?;
                    }
                    Binary::Pow => unreachable!("no inline form"),
                }
                self.put(t0, r1, h)?;
            }
            Op::Binary {
                op: op @ (Binary::Add | Binary::Sub),
                ..
            } => self.sum_contributions(OWN, t0, t1, op == Binary::Sub, h)?,
            Op::Binary { op, a, b } => {
                let (want_a, want_b) = (t0.adj != NONE, t1.adj != NONE);
                if want_a {
                    match op {
                        Binary::Add | Binary::Sub => unreachable!("a sum's own arm"),
                        Binary::Mul => self.masked(r1, OWN, self.value(b, h))?,
                        Binary::Div => {
                            self.a.vbroadcastsd(r2, qword_ptr(rbp + 8 * C_ONE as i32))?;
                            self.a.vdivpd(r0, r2, self.value(b, h))?;
                            self.masked(r1, OWN, r0)?;
                        }
                        Binary::Pow => unreachable!("no inline form"),
                    }
                }
                // Only `b` wanted, or both of a product or quotient.
                if want_b || !want_a {
                    match op {
                        Binary::Add | Binary::Sub => unreachable!("a sum's own arm"),
                        Binary::Mul => self.masked(r4, OWN, self.value(a, h))?,
                        Binary::Div => {
                            // -v / b
                            self.a.vxorpd(r2, SIGN, self.value(out, h))?;
                            self.a.vdivpd(r3, r2, self.value(b, h))?;
                            self.masked(r4, OWN, r3)?;
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
                    self.masked(r2, OWN, k(ci))?;
                    self.a.vaddpd(r2, ZERO, r2)?; // ad_l = 0.0 + masked(ad_p, c)
                    self.a.vbroadcastsd(r3, qword_ptr(rbp + 8 * C_ONE as i32))?;
                    self.a.vdivpd(r3, r3, self.value(r, h))?; // 1 / r
                    self.masked(r4, r2, r3)?;
                    self.accumulate(t0, OWN, h, true)?;
                    self.accumulate(Target { first: false, ..t0 }, r4, h, false)?;
                }
            }
            Op::SumChain { from, to, .. } => {
                // Down the chain the partial sums' adjoints are `0.0 + d` and
                // `0.0 + masked(d, 1)`: each is `d` itself (an adjoint is never `-0.0`), so
                // every term and then the base receive the step's own adjoint, in the
                // interpreter's order.
                for j in (from..to).rev() {
                    self.put(self.chain_targets[j as usize], OWN, h)?;
                }
                self.put(t0, OWN, h)?;
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
                    self.a.vmovupd(r2, self.weight(cache, h))?;
                    self.smooth_guard(r1, r2, t, e, h)?;
                    self.put(t0, r1, h)?;
                } else {
                    if want_guard {
                        // w = wt * we
                        self.a.vmovupd(r2, self.weight_after(cache, h))?;
                        self.a.vmulpd(r2, r2, self.weight(cache, h))?;
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
                self.a.vcmppd(k2, ZERO, self.value(g, h), GT_OQ)?;
                self.a.knotb(k3, k2)?;
                self.a.vmovapd(r1.k2().z(), OWN)?;
                self.a.vmovapd(r2.k3().z(), OWN)?;
                self.put(t1, r1, h)?;
                self.put(t2, r2, h)?;
            }
            _ => unreachable!("no reverse step of the crisp forward-only plan"),
        }
        Ok(())
    }
}
