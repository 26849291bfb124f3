//! Which AVX2 instructions each reverse step becomes: one quarter of a step's reverse, by
//! the kind of its operation, as the AVX-512 code's table (`jit/reverse/steps.rs`) has it.
//!
//! Why apart from the emitter (`avx2/reverse.rs`): the emitter keeps the registers, the
//! adjoint cache and the places; this is the one long table from operation to code.

use iced_x86::IcedError;

use crate::ir::{Binary, Unary};

use super::super::super::super::instr::{NONE, Op, RevStep, Target};
use super::{C_ONE, C_SIGN, C_TWO, Emitter, GT_OQ, MASK, OWN, R, ZERO, k};

impl Emitter<'_> {
    pub(super) fn step_quarter(&mut self, rs: &RevStep) -> Result<(), IcedError> {
        let [t0, t1, t2, ..] = rs.to;
        let out = rs.step.out;
        let [r0, r1, r2, r3, r4, ..] = R;
        match rs.step.op {
            Op::Param { .. } | Op::Latent { .. } => {}
            Op::Unary { op: Unary::Neg, .. } => {
                if t0.adj != NONE {
                    self.accumulate(t0, OWN, true)?;
                }
            }
            Op::Unary { op, a } => {
                self.unary_local(r0, op, a, out)?;
                self.masked(r1, OWN, r0)?;
                self.put(t0, r1)?;
            }
            Op::Binary { op, a, b } if a == b => {
                // Both partials at once: `da + db`.
                match op {
                    Binary::Add => self.masked(r1, OWN, k(C_TWO))?,
                    Binary::Sub => self.masked(r1, OWN, ZERO)?,
                    Binary::Mul => {
                        self.a.vmovupd(r2, self.value(a))?;
                        self.a.vaddpd(r0, r2, r2)?;
                        self.masked(r1, OWN, r0)?;
                    }
                    Binary::Div => {
                        self.div_partials(r2, r3, a, out)?;
                        self.a.vaddpd(r0, r2, r3)?;
                        self.masked(r1, OWN, r0)?;
                    }
                    Binary::Pow => unreachable!("no inline form"),
                }
                self.put(t0, r1)?;
            }
            Op::Binary {
                op: op @ (Binary::Add | Binary::Sub),
                ..
            } => self.sum_contributions(OWN, t0, t1, op == Binary::Sub)?,
            Op::Binary { op, a, b } => {
                let (want_a, want_b) = (t0.adj != NONE, t1.adj != NONE);
                if want_a {
                    match op {
                        Binary::Add | Binary::Sub => unreachable!("a sum's own arm"),
                        Binary::Mul => self.masked(r1, OWN, self.value(b))?,
                        Binary::Div => {
                            self.a.vmovupd(r2, k(C_ONE))?;
                            self.a.vdivpd(r0, r2, self.value(b))?;
                            self.masked(r1, OWN, r0)?;
                        }
                        Binary::Pow => unreachable!("no inline form"),
                    }
                }
                // Only `b` wanted, or both of a product or quotient.
                if want_b || !want_a {
                    match op {
                        Binary::Add | Binary::Sub => unreachable!("a sum's own arm"),
                        Binary::Mul => self.masked(r4, OWN, self.value(a))?,
                        Binary::Div => {
                            // -v / b
                            self.a.vmovupd(r2, k(C_SIGN))?;
                            self.a.vxorpd(r2, r2, self.value(out))?;
                            self.a.vdivpd(r3, r2, self.value(b))?;
                            self.masked(r4, OWN, r3)?;
                        }
                        Binary::Pow => unreachable!("no inline form"),
                    }
                }
                self.put(t0, r1)?;
                self.put(t1, r4)?;
            }
            Op::NormalSquare { x, m, s, c } => self.square(rs, x, Some(m), Some(s), c)?,
            Op::SquareDiff { x, m, c } => self.square(rs, x, Some(m), None, c)?,
            Op::Square { x, s, c } => self.square(rs, x, None, (s != NONE).then_some(s), c)?,
            Op::PoissonTerm { r, c, .. } => {
                if t0.adj != NONE {
                    let ci = self.constant(c);
                    // ad_p = 0.0 + ad is `ad` itself (never `-0.0`).
                    self.masked(r2, OWN, k(ci))?;
                    self.a.vaddpd(r2, ZERO, r2)?; // ad_l = 0.0 + masked(ad_p, c)
                    self.a.vmovupd(r3, k(C_ONE))?;
                    self.a.vdivpd(r3, r3, self.value(r))?; // 1 / r
                    self.masked(r4, r2, r3)?;
                    self.accumulate(t0, OWN, true)?;
                    self.accumulate(Target { first: false, ..t0 }, r4, false)?;
                }
            }
            Op::SumChain { from, to, .. } => {
                // Every term and then the base receive the step's own adjoint, in the
                // interpreter's order (see the AVX-512 code).
                for j in (from..to).rev() {
                    self.put(self.chain_targets[j as usize], OWN)?;
                }
                self.put(t0, OWN)?;
            }
            Op::If {
                t,
                e,
                cache,
                product,
                ..
            } if self.smooth => {
                let want_guard = t0.adj != NONE || rs.folded_guard.is_some();
                if product {
                    self.a.vmovupd(r2, self.weight(cache))?;
                    self.smooth_guard(r1, r2, t, e)?;
                    self.put(t0, r1)?;
                } else {
                    if want_guard {
                        // w = wt * we
                        self.a.vmovupd(r2, self.weight_after(cache))?;
                        self.a.vmulpd(r2, r2, self.weight(cache))?;
                        self.smooth_guard(r1, r2, t, e)?;
                        self.put(t0, r1)?;
                    }
                    if t1.adj != NONE {
                        self.smooth_branch(r3, self.weight_after(cache))?;
                        self.put(t1, r3)?;
                    }
                    if t2.adj != NONE {
                        self.smooth_branch(r3, self.weight(cache))?;
                        self.put(t2, r3)?;
                    }
                }
                if let Some(op) = rs.folded_guard {
                    self.fold_guard(op, r1, rs.to)?;
                }
            }
            Op::If { g, .. } => {
                // `then` takes the adjoint where `0 > g`, `else` elsewhere (NaN too).
                self.a.vcmppd(MASK, ZERO, self.value(g), GT_OQ)?;
                self.a.vandpd(r1, MASK, OWN)?;
                self.a.vandnpd(r2, MASK, OWN)?;
                self.put(t1, r1)?;
                self.put(t2, r2)?;
            }
            _ => unreachable!("no reverse step of the crisp forward-only plan"),
        }
        Ok(())
    }
}
