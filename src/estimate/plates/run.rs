//! Running a plate over its rows: for each call, each lane's shared values and one sweep of
//! the call's tape per lane, then the call's values and gradients summed in row order and
//! added to the outer per-sample gradient (or, forward only, to the values).

use crate::eval::{BatchGradient, CHUNK, Latents, Tape, Values};
use crate::ir::{Semantics, Shared};

use super::inputs::Call;
use super::rows::{Outer, Rows};
use super::sums::add_lanes;
use super::tapes::TapeScratch;
use super::{PlateRun, PlateScratch, Target};

impl PlateRun {
    /// Runs the calls over `rows`: for each call, for each lane `l` of the chunk, fills the
    /// lane's shared values, then `sweep(call, l, tape, scratch, shared, inputs)` with the
    /// call's tape, that tape's scratch and the call's inputs; after a call's lanes,
    /// `after(call, scratch, acc)` with that scratch and the per-parameter sums
    /// (`PlateScratch::acc`). The gradient and the forward runs differ only in the two.
    #[inline(always)]
    fn run_calls(
        &self,
        ps: &mut PlateScratch,
        o: &Outer<'_>,
        rows: Rows<'_>,
        mut sweep: impl FnMut(Call, usize, &Tape, &mut TapeScratch, &[f64], Latents<'_>),
        mut after: impl FnMut(Call, &TapeScratch, &mut [f64]),
    ) {
        let count = match rows {
            Rows::All => self.plate.rows,
            Rows::Drawn { rows, .. } => rows.len(),
        };
        let inputs = self.plate.body.latent_count();
        let mut at = 0;
        for call in Self::calls(count) {
            let rt = self.tape_for(call);
            let len = inputs * call.per * call.padded();
            let laid = self.call_inputs(ps, o, call, rows, at);
            at += len;
            let n = inputs * call.per;
            for l in 0..o.w {
                self.shared_values(ps, o, l);
                // Split from the other fields of `ps` the call reads.
                let ts = if call.per == 1 {
                    &mut ps.single
                } else {
                    &mut ps.group
                };
                // The body tapes' latents are their noise: locations and scales the compiled
                // sweep knows by their address where there are few enough.
                let (loc, scale) = match Tape::noise_factors(n) {
                    Some(factors) => factors,
                    None => (&ps.zero[..n], &ps.one[..n]),
                };
                let latents = Latents::Affine {
                    noise: match laid {
                        Some(at) => &self.laid[at..at + len],
                        None => &ps.inputs[l.min(ps.inputs.len() - 1)][..len],
                    },
                    loc,
                    scale,
                };
                sweep(call, l, &rt.tape, ts, &ps.shared, latents);
            }
            let ts = if call.per == 1 { &ps.single } else { &ps.group };
            after(call, ts, &mut ps.acc);
        }
    }

    /// Fills lane `l`'s shared values.
    fn shared_values(&self, ps: &mut PlateScratch, o: &Outer<'_>, l: usize) {
        for (v, s) in ps.shared.iter_mut().zip(&self.plate.shared) {
            *v = match *s {
                Shared::Param(k) => o.theta[k as usize],
                Shared::Latent(i) => {
                    let i = i as usize;
                    // As `Latents::load` forms it: multiplied, then added.
                    o.state.loc(i) + o.state.scale(i) * o.s[i * o.w + l]
                }
                Shared::GuardFactor(j) => {
                    crate::ir::plate_guard_factor(&self.factors[j as usize], |i| o.state.scale(i))
                }
            };
        }
    }

    /// Adds the plate's value and gradients to the outer per-sample gradient `grad` (of the
    /// chunk's `o.w` lanes) under `semantics`.
    pub(crate) fn add_gradient(
        &self,
        ps: &mut PlateScratch,
        o: &Outer<'_>,
        semantics: Semantics,
        values: Values,
        rows: Rows<'_>,
        grad: &mut BatchGradient,
    ) {
        let w = o.w;
        let k_count = self.plate.shared.len();
        let scale = rows.scale();
        let mut value = [0.0; CHUNK];
        ps.acc.fill(0.0);
        // A row latent's gradient row is written by its plate alone: undrawn rows get zeros
        // (unless `zero_undrawn` is false: a sparse step never reads them).
        if let (Rows::Drawn { .. }, true) = (rows, o.zero_undrawn) {
            for &q in &self.active {
                let rl = self.plate.row_latents[q];
                for r in 0..self.plate.rows {
                    let m = o.moved_row[rl.of_row(r) as usize] as usize;
                    grad.latents[m * w..(m + 1) * w].fill(0.0);
                }
            }
        }
        let after = |call: Call, ts: &TapeScratch, acc: &mut [f64]| {
            let (n, nb) = (call.lanes, call.padded());
            let grads = &ts.grads[..w];
            // Row order within each lane; the lanes' chains side by side.
            let vals: [&[f64]; CHUNK] = std::array::from_fn(|l| match grads.get(l) {
                Some(g) => &g.value[..n],
                None => &[][..],
            });
            add_lanes(&mut value[..w], &vals[..w], n);
            for k in 0..k_count {
                let cols: [&[f64]; CHUNK] = std::array::from_fn(|l| match grads.get(l) {
                    Some(g) => &g.params[k * nb..k * nb + n],
                    None => &[][..],
                });
                add_lanes(&mut acc[k * CHUNK..k * CHUNK + w], &cols[..w], n);
            }
            for (a, &q) in self.active.iter().enumerate() {
                let rl = self.plate.row_latents[q];
                for t in 0..call.per {
                    let row = a + t * self.active.len();
                    for gi in 0..n {
                        let r = rows.at(call.position(gi, t));
                        let m = o.moved_row[rl.of_row(r) as usize] as usize;
                        for (l, g) in grads.iter().enumerate() {
                            grad.latents[m * w + l] = scale * g.latents[row * nb + gi];
                        }
                    }
                }
            }
        };
        self.run_calls(
            ps,
            o,
            rows,
            |call, l, tape, ts, shared, latents| {
                let g = &mut ts.grads[l];
                g.resize(tape, call.padded());
                tape.gradient_latents(&mut ts.ws, semantics, shared, latents, g, values);
            },
            after,
        );
        for (v, x) in grad.value[..w].iter_mut().zip(&value) {
            *v += scale * x;
        }
        for (k, &(target, first)) in self.targets.iter().enumerate() {
            let dest = match target {
                Target::Param(p) => &mut grad.params[p * w..(p + 1) * w],
                Target::Latent(r) => &mut grad.latents[r * w..(r + 1) * w],
                Target::Nowhere => continue,
            };
            for (d, &a) in dest.iter_mut().zip(&ps.acc[k * CHUNK..k * CHUNK + w]) {
                *d = if first { scale * a } else { *d + scale * a };
            }
        }
    }

    /// Adds the plate's value to `out[..o.w]` (a forward sweep only) under `semantics`.
    pub(crate) fn add_values(
        &self,
        ps: &mut PlateScratch,
        o: &Outer<'_>,
        semantics: Semantics,
        rows: Rows<'_>,
        out: &mut [f64],
    ) {
        let w = o.w;
        let mut value = [0.0; CHUNK];
        self.run_calls(
            ps,
            o,
            rows,
            |call, l, tape, ts, shared, latents| {
                let out = &mut ts.outs[l][..call.padded()];
                tape.forward_latents(&mut ts.ws, semantics, shared, latents, out);
            },
            |call, ts, _| {
                let n = call.lanes;
                let vals: [&[f64]; CHUNK] = std::array::from_fn(|l| match ts.outs.get(l) {
                    Some(v) if l < w => &v[..n],
                    _ => &[][..],
                });
                add_lanes(&mut value[..w], &vals[..w], n);
            },
        );
        let scale = rows.scale();
        for (v, x) in out[..w].iter_mut().zip(&value) {
            *v += scale * x;
        }
    }
}
