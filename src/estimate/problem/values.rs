//! The objective's values at the drawn lanes: `f` from the program's output (plus `-log q`
//! in variational mode, weighted for a subsample) and the crisp `f` with every guard hard.

use super::super::subsample::{Sparse, Subsample};
#[cfg(doc)]
use super::Problem;
use super::{ProblemData, Scratch};
use crate::eval::CHUNK;
use crate::family::FamilyState;

impl ProblemData {
    /// `f` for the drawn lanes from the program's values `logp`: adds `-log q(z)` in
    /// variational mode.
    pub(crate) fn f_values(
        &self,
        state: &FamilyState,
        scratch: &Scratch,
        logp: &[f64],
        out: &mut [f64],
        sub: Option<&Subsample>,
    ) {
        if let Some(sp) = Subsample::sparse(sub) {
            let c = sub.map_or(0.0, |s| s.entropy_const);
            self.f_values_sparse(c, sp, scratch, logp, out);
            return;
        }
        if let Some(weights) = Subsample::weights(sub) {
            let c = sub.map_or(0.0, |s| s.entropy_const);
            self.f_values_weighted(c, weights, scratch, logp, out);
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::avx2_fma() {
            // SAFETY: the CPU has AVX2 and FMA (checked just above).
            unsafe { self.f_values_avx2(state, scratch, logp, out) };
            return;
        }
        self.f_values_body(state, scratch, logp, out);
    }

    /// `f_S` of a subsample whose row latents' `-log q` are weighted ([`Subsample`]): latent
    /// `i`'s `0.5 s^2` counts `weights[i]` times, and not at all where the weight is 0.
    fn f_values_weighted(
        &self,
        c: f64,
        weights: &[f64],
        scratch: &Scratch,
        logp: &[f64],
        out: &mut [f64],
    ) {
        let w = scratch.w;
        let mut sq = [0.0; CHUNK];
        for &i in &self.moved {
            let i = i as usize;
            let wt = weights[i];
            if !self.family.in_entropy[i] || wt == 0.0 {
                continue;
            }
            for (q, &s) in sq[..w].iter_mut().zip(&scratch.s[i * w..(i + 1) * w]) {
                *q += wt * (s * s);
            }
        }
        let any = self.family.in_entropy.iter().any(|&e| e);
        for l in 0..w {
            out[l] = if any {
                logp[l] + (c + 0.5 * sq[l])
            } else {
                logp[l]
            };
        }
    }

    /// `f_S` of a sparse step ([`Sparse`]): the weighted `0.5 s^2` of the latents it reads.
    fn f_values_sparse(
        &self,
        c: f64,
        sp: &Sparse,
        scratch: &Scratch,
        logp: &[f64],
        out: &mut [f64],
    ) {
        let w = scratch.w;
        let mut sq = [0.0; CHUNK];
        for (&i, &wt) in sp.latents.iter().zip(&sp.weights) {
            let i = i as usize;
            if !self.family.in_entropy[i] || wt == 0.0 {
                continue;
            }
            for (q, &s) in sq[..w].iter_mut().zip(&scratch.s[i * w..(i + 1) * w]) {
                *q += wt * (s * s);
            }
        }
        // Some latent is in the entropy exactly in variational mode: a sparse step reads
        // row latents, which are moved (not the `any` over every latent, `O(n)`).
        let any = self.mode == crate::ir::Mode::Variational;
        for l in 0..w {
            out[l] = if any {
                logp[l] + (c + 0.5 * sq[l])
            } else {
                logp[l]
            };
        }
    }

    /// [`Problem::f_values`] compiled for AVX2 (no fused multiply-adds, so the same bits).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn f_values_avx2(&self, state: &FamilyState, scratch: &Scratch, logp: &[f64], out: &mut [f64]) {
        self.f_values_body(state, scratch, logp, out);
    }

    #[inline(always)]
    fn f_values_body(&self, state: &FamilyState, scratch: &Scratch, logp: &[f64], out: &mut [f64]) {
        // A full chunk with its width known at compile time: straight-line lane loops.
        if scratch.w == CHUNK {
            self.f_values_lanes(CHUNK, state, scratch, logp, out);
        } else {
            self.f_values_lanes(scratch.w, state, scratch, logp, out);
        }
    }

    #[inline(always)]
    fn f_values_lanes(
        &self,
        w: usize,
        state: &FamilyState,
        scratch: &Scratch,
        logp: &[f64],
        out: &mut [f64],
    ) {
        let c = state.entropy_const();
        for (l, o) in out[..w].iter_mut().enumerate() {
            *o = logp[l];
        }
        if self.family.in_entropy.iter().any(|&e| e) {
            // Latent-major, so the lanes advance together; each lane still sums its squares
            // in latent order (the same additions as a per-lane loop). Only moved latents
            // are in the entropy.
            let mut sq = [0.0; CHUNK];
            let sq = &mut sq[..w];
            for &i in &self.moved {
                let i = i as usize;
                if !self.family.in_entropy[i] {
                    continue;
                }
                for (q, &s) in sq.iter_mut().zip(&scratch.s[i * w..(i + 1) * w]) {
                    *q += s * s;
                }
            }
            for (o, q) in out[..w].iter_mut().zip(sq.iter()) {
                *o += c + 0.5 * q;
            }
        }
    }

    /// Crisp `f` at the drawn lanes (into `out[..w]`), every row of the plates read.
    pub fn crisp_values(
        &self,
        state: &FamilyState,
        theta: &[f64],
        scratch: &mut Scratch,
        out: &mut [f64],
    ) {
        self.crisp_values_of(state, theta, scratch, out, None);
    }

    /// [`Problem::crisp_values`] of the subsample's rows, if one is given.
    pub(crate) fn crisp_values_of(
        &self,
        state: &FamilyState,
        theta: &[f64],
        scratch: &mut Scratch,
        out: &mut [f64],
        sub: Option<&Subsample>,
    ) {
        let mut logp = std::mem::take(&mut scratch.out);
        self.forward_values(
            state,
            theta,
            crate::ir::Semantics::Crisp,
            scratch,
            &mut logp,
            sub,
        );
        scratch.out = logp;
        let logp = std::mem::take(&mut scratch.out);
        self.f_values(state, scratch, &logp, out, sub);
        scratch.out = logp;
    }
}
