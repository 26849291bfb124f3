//! The pathwise gradient's assembly, which every estimator shares: the tape's per-sample
//! gradient through each moved latent's Jacobian into the family's parameters, planned once
//! per problem ([`PathwisePlan`]) and vectorised chunk by chunk ([`Contribution`]).

use super::super::subsample::{Sparse, Subsample};
#[cfg(doc)]
use super::Problem;
use super::{ProblemData, Scratch};
use crate::eval::CHUNK;
use crate::family::{Family, FamilyState};

/// One chunk's lanes of one row.
type Lanes = [f64; CHUNK];

/// Which gradient components the pathwise assembly writes first and which it never
/// touches, from the family's Jacobian pattern (the same at every `theta`): a component's
/// first contribution is written as `0.0 + c` (what adding it to a zeroed component gives,
/// bit for bit) and only the untouched components are zeroed, instead of zeroing every
/// component of every chunk and adding to it.
#[derive(Debug, Default)]
pub(super) struct PathwisePlan {
    /// Per Jacobian entry of the moved latents, in the order the assembly visits them:
    /// whether it is the first contribution to its component.
    first: Vec<bool>,
    /// Family components (beyond the model's parameters) no moved latent's Jacobian has.
    untouched: Vec<u32>,
}

impl PathwisePlan {
    pub(super) fn new(family: &Family, moved: &[u32]) -> PathwisePlan {
        let m = family.model_param_count();
        let state = family.state();
        // The model's parameters start from the tape's direct derivatives.
        let mut touched: Vec<bool> = (0..family.dim()).map(|p| p < m).collect();
        let mut first = Vec::new();
        for &i in moved {
            for (p, _, _) in state.jacobian(i as usize) {
                first.push(!touched[p]);
                touched[p] = true;
            }
        }
        let untouched = (0..family.dim() as u32)
            .filter(|&p| !touched[p as usize])
            .collect();
        PathwisePlan { first, untouched }
    }
}

impl ProblemData {
    /// The pathwise (reparameterisation) gradient of `f(theta, phi_theta(s))` per lane from
    /// the tape's per-sample gradient in `scratch.grad`: direct parameter derivatives, plus
    /// `df/dz_i * (d loc_i + s_i d scale_i)`, plus `d ln scale_i` for latents in the entropy.
    /// Component-major, as every estimator's chunk: `grads[p * w + l]`, so the lane loops
    /// are contiguous; each `(l, p)` gets its start value, then latent by latent (the moved
    /// ones: a fixed latent's Jacobian is empty).
    ///
    /// With a subsample whose row latents are weighted ([`Subsample`]), a latent's entropy
    /// term counts its weight's times.
    pub(crate) fn pathwise_block(
        &self,
        state: &FamilyState,
        scratch: &Scratch,
        grads: &mut [f64],
        sub: Option<&Subsample>,
    ) {
        if let Some(sp) = Subsample::sparse(sub) {
            self.pathwise_sparse(state, scratch, grads, sp);
            return;
        }
        let weights = Subsample::weights(sub);
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::avx2_fma() {
            // SAFETY: the CPU has AVX2 and FMA (checked just above).
            unsafe { self.pathwise_avx2(state, scratch, grads, weights) };
            return;
        }
        self.pathwise_body(state, scratch, grads, weights);
    }

    /// [`Problem::pathwise_block`] compiled for AVX2 (4 lanes a vector instead of 2; no
    /// fused multiply-adds, so the same bits).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn pathwise_avx2(
        &self,
        state: &FamilyState,
        scratch: &Scratch,
        grads: &mut [f64],
        weights: Option<&[f64]>,
    ) {
        self.pathwise_body(state, scratch, grads, weights);
    }

    #[inline(always)]
    fn pathwise_body(
        &self,
        state: &FamilyState,
        scratch: &Scratch,
        grads: &mut [f64],
        weights: Option<&[f64]>,
    ) {
        // A full chunk with its width known at compile time: straight-line lane loops.
        if scratch.w == CHUNK {
            self.pathwise_lanes(CHUNK, state, scratch, grads, weights);
        } else {
            self.pathwise_lanes(scratch.w, state, scratch, grads, weights);
        }
    }

    #[inline(always)]
    fn pathwise_lanes(
        &self,
        w: usize,
        state: &FamilyState,
        scratch: &Scratch,
        grads: &mut [f64],
        weights: Option<&[f64]>,
    ) {
        let d = self.dim();
        let m = self.family.model_param_count();
        let g = &scratch.grad;
        let acc = &mut grads[..d * w];
        acc[..m * w].copy_from_slice(&g.params[..m * w]);
        for &p in &self.pathwise.untouched {
            let p = p as usize;
            acc[p * w..(p + 1) * w].fill(0.0);
        }
        let mut first = self.pathwise.first.iter();
        for (row, &i) in self.moved.iter().enumerate() {
            let i = i as usize;
            let entropy = self.family.in_entropy[i];
            let inv_scale = 1.0 / state.scale(i);
            let dz = &g.latents[row * w..(row + 1) * w];
            let s = &scratch.s[i * w..(i + 1) * w];
            for ((p, dl, ds), &first) in state.jacobian(i).zip(&mut first) {
                let a = &mut acc[p * w..(p + 1) * w];
                // `v + ds / scale` for latents in the entropy, `v` itself otherwise.
                let add = match (entropy, weights) {
                    (false, _) => 0.0,
                    (true, None) => ds * inv_scale,
                    (true, Some(wt)) => wt[i] * (ds * inv_scale),
                };
                let k = Contribution {
                    dl,
                    ds,
                    entropy,
                    add,
                    first,
                };
                match (
                    <&mut Lanes>::try_from(a),
                    <&Lanes>::try_from(dz),
                    <&Lanes>::try_from(s),
                ) {
                    (Ok(a), Ok(dz), Ok(s)) => k.chunk(a, dz, s),
                    _ => k.short(&mut acc[p * w..(p + 1) * w], dz, s),
                }
            }
        }
    }
}

impl ProblemData {
    /// [`ProblemData::pathwise_block`] of a sparse step ([`Sparse`]): only the touched
    /// components are written (the model's parameters from the tape, the others zeroed and
    /// added to, which is the dense assembly's `0.0 + c`), from the latents read alone.
    fn pathwise_sparse(
        &self,
        state: &FamilyState,
        scratch: &Scratch,
        grads: &mut [f64],
        sp: &Sparse,
    ) {
        let w = scratch.w;
        let m = self.family.model_param_count();
        let g = &scratch.grad;
        for &p in &sp.components {
            let p = p as usize;
            let a = &mut grads[p * w..(p + 1) * w];
            if p < m {
                a.copy_from_slice(&g.params[p * w..(p + 1) * w]);
            } else {
                a.fill(0.0);
            }
        }
        for (&i, &wt) in sp.latents.iter().zip(&sp.weights) {
            let i = i as usize;
            let row = self.moved_row[i] as usize;
            let entropy = self.family.in_entropy[i];
            let inv_scale = 1.0 / state.scale(i);
            let dz = &g.latents[row * w..(row + 1) * w];
            let s = &scratch.s[i * w..(i + 1) * w];
            for (p, dl, ds) in state.jacobian(i) {
                let add = if entropy { wt * (ds * inv_scale) } else { 0.0 };
                let k = Contribution {
                    dl,
                    ds,
                    entropy,
                    add,
                    first: false,
                };
                k.short(&mut grads[p * w..(p + 1) * w], dz, s);
            }
        }
    }
}

/// One Jacobian entry's contribution to one gradient component, lane by lane:
/// `dz * (dl + s * ds)` (exactly zero where `dz` is), plus `ds / scale` for a latent in the
/// entropy, written (`first`) or added.
#[derive(Clone, Copy)]
struct Contribution {
    dl: f64,
    ds: f64,
    entropy: bool,
    /// `ds / scale` (the entropy's part).
    add: f64,
    first: bool,
}

impl Contribution {
    /// Over a full chunk: the contributions are formed in a local array first, so that
    /// LLVM, free of any question of aliasing with the gradient block, makes vector code.
    #[inline(always)]
    fn chunk(self, a: &mut Lanes, dz: &Lanes, s: &Lanes) {
        let mut c: Lanes = [0.0; CHUNK];
        for ((c, &dz), &s) in c.iter_mut().zip(dz).zip(s) {
            *c = self.lane(dz, s);
        }
        self.put(a, &c);
    }

    /// Over the `a.len()` (fewer than [`CHUNK`]) lanes of a short chunk.
    #[inline(always)]
    fn short(self, a: &mut [f64], dz: &[f64], s: &[f64]) {
        let mut c = [0.0; CHUNK];
        for (l, c) in c[..a.len()].iter_mut().enumerate() {
            *c = self.lane(dz[l], s[l]);
        }
        self.put(a, &c[..a.len()]);
    }

    #[inline(always)]
    fn lane(self, dz: f64, s: f64) -> f64 {
        let v = dz * (self.dl + s * self.ds);
        let v = if dz == 0.0 { 0.0 } else { v };
        if self.entropy { v + self.add } else { v }
    }

    #[inline(always)]
    fn put(self, a: &mut [f64], c: &[f64]) {
        if self.first {
            for (a, &c) in a.iter_mut().zip(c) {
                *a = 0.0 + c;
            }
        } else {
            for (a, &c) in a.iter_mut().zip(c) {
                *a += c;
            }
        }
    }
}
