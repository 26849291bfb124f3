//! A family evaluated at one `theta`: locations, scales and their sparse Jacobians.
//!
//! Computed once per iteration, then shared read-only by every sample of the batch. The
//! buffers are allocated when the state is made and reused by [`FamilyState::update`], which
//! visits only the latents some parameter moves: a fixed latent's location and scale are set
//! and checked when the state is made (a survey's tens of thousands of coin tosses cost
//! nothing per step).

use super::{Family, FamilyError, Role, Source};
use crate::elementary;
use crate::eval::{BatchGradient, Latents, Tape, Workspace};
use crate::special::{HALF_LN_2PI, sigmoid_softplus};

/// `loc`, `scale` of every latent at one `theta`, with `d loc / d theta` and
/// `d scale / d theta` stored sparsely per latent (a guided latent has two entries).
#[derive(Clone, Debug)]
pub struct FamilyState {
    loc: Vec<f64>,
    scale: Vec<f64>,
    /// Entries of latent `i` are `start[i]..start[i + 1]`.
    start: Vec<usize>,
    param: Vec<u32>,
    dloc: Vec<f64>,
    dscale: Vec<f64>,
    /// `sum_i (ln scale_i + ln(2 pi) / 2)` over the latents whose `-log q` is in the objective.
    entropy_const: f64,
    tape_value: Vec<f64>,
    tape_grad: Vec<f64>,
    workspaces: Vec<Workspace>,
    grads: Vec<BatchGradient>,
    zeros: Vec<f64>,
    /// Each guided latent (all are moved), in latent order: where its location, scale and
    /// Jacobian entries are.
    guided: Vec<GuidedAt>,
    /// `rho`, then `d scale / d rho` and `scale = softplus(rho)`, of each guided latent, in
    /// the order of `guided`: arrays of their own, so that the softplus loop vectorises.
    rho: Vec<f64>,
    dscale_drho: Vec<f64>,
    guided_scale: Vec<f64>,
    /// The moved latents whose location and scale are program expressions, in order.
    user: Vec<u32>,
    /// `scale_i`, then `ln scale_i`, of the latents in the entropy only (in latent order):
    /// a fixed latent's scale never enters `-log q`, and big surveys have thousands of them.
    entropy_ln_scale: Vec<f64>,
    /// The latents some parameter moves, in order ([`Family::moved_latents`]).
    moved: Vec<u32>,
    /// Per latent, its position in `guided` (`u32::MAX` for a latent not guided).
    guided_of: Vec<u32>,
    /// The first fixed latent with a location or scale that is not valid, and why.
    bad_fixed: Option<(usize, FamilyError)>,
}

impl FamilyState {
    pub(super) fn new(family: &Family) -> FamilyState {
        let m = family.model_param_count();
        let mut start = vec![0];
        let mut param = Vec::new();
        for role in &family.roles {
            match *role {
                Role::Guided { mu, rho } => param.extend([mu as u32, rho as u32]),
                Role::Fixed { .. } => {}
                Role::User { .. } => param.extend(0..m as u32),
            }
            start.push(param.len());
        }
        let n = family.roles.len();
        let entries = param.len();
        let t = family.tapes.len();
        let (mut loc, mut scale) = (vec![0.0; n], vec![1.0; n]);
        let mut bad_fixed = None;
        for (i, role) in family.roles.iter().enumerate() {
            if let Role::Fixed { loc: l, scale: s } = *role {
                if bad_fixed.is_none()
                    && let Err(e) = check(family, i, l, s)
                {
                    bad_fixed = Some((i, e));
                }
                (loc[i], scale[i]) = (l, s);
            }
        }
        let mut state = FamilyState {
            loc,
            scale,
            start,
            param,
            dloc: vec![0.0; entries],
            dscale: vec![0.0; entries],
            entropy_const: 0.0,
            tape_value: vec![0.0; t],
            tape_grad: vec![0.0; t * m],
            workspaces: family.tapes.iter().map(Tape::workspace).collect(),
            grads: family
                .tapes
                .iter()
                .map(|tp| BatchGradient::new(tp, 1))
                .collect(),
            zeros: vec![0.0; n],
            guided: Vec::new(),
            rho: Vec::new(),
            dscale_drho: Vec::new(),
            guided_scale: Vec::new(),
            user: Vec::new(),
            entropy_ln_scale: Vec::with_capacity(family.in_entropy.iter().filter(|&&e| e).count()),
            moved: family.moved_latents(),
            guided_of: vec![u32::MAX; n],
            bad_fixed,
        };
        for &i in &state.moved {
            let e = state.start[i as usize];
            match family.roles[i as usize] {
                Role::Guided { mu, rho } => {
                    // The constant part of the Jacobian, `d loc / d mu = 1` (the rest is 0
                    // but `d scale / d rho`), written once.
                    state.dloc[e] = 1.0;
                    state.guided_of[i as usize] = state.guided.len() as u32;
                    state.guided.push(GuidedAt {
                        latent: i as usize,
                        mu,
                        rho,
                        entry: e,
                    });
                }
                Role::User { .. } => state.user.push(i),
                Role::Fixed { .. } => unreachable!("a fixed latent is not moved"),
            }
        }
        let g = state.guided.len();
        (state.rho, state.dscale_drho, state.guided_scale) =
            (vec![0.0; g], vec![0.0; g], vec![0.0; g]);
        state
    }

    /// Evaluates the family at `theta`. Fails when a scale is not positive and finite or a
    /// location is not finite, naming the latent.
    pub fn update(&mut self, family: &Family, theta: &[f64]) -> Result<(), FamilyError> {
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::avx2_fma() {
            // SAFETY: the CPU has AVX2 and FMA (checked just above).
            return unsafe { self.update_avx2(family, theta) };
        }
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::fma() {
            // SAFETY: the CPU has FMA (checked just above).
            return unsafe { self.update_fma(family, theta) };
        }
        self.update_body(family, theta)
    }

    /// [`FamilyState::update`] compiled with FMA: the softplus of every guided latent's
    /// `rho` is a chain of `mul_add`s, each a call to libm's `fma` in the baseline build
    /// (about a sixth of a small model's step). Same operations, same bits.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn update_avx2(&mut self, family: &Family, theta: &[f64]) -> Result<(), FamilyError> {
        self.update_body(family, theta)
    }

    /// [`FamilyState::update_avx2`] in the portable build (128-bit, with FMA).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "fma")]
    fn update_fma(&mut self, family: &Family, theta: &[f64]) -> Result<(), FamilyError> {
        self.update_body(family, theta)
    }

    /// [`FamilyState::update`] of the latents `latents` alone (and of the latents whose
    /// location and scale are program expressions, which the model's parameters move): a
    /// subsampled step reads no other latent, and the others keep the values of an earlier
    /// `theta`. `O(latents)`, whatever the number of latents. The entropy constant is not
    /// updated (the subsample computes its own, weighted).
    pub fn update_latents(
        &mut self,
        family: &Family,
        theta: &[f64],
        latents: &[u32],
    ) -> Result<(), FamilyError> {
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::avx2_fma() {
            // SAFETY: the CPU has AVX2 and FMA (checked just above).
            return unsafe { self.update_latents_avx2(family, theta, latents) };
        }
        self.update_latents_body(family, theta, latents)
    }

    /// [`FamilyState::update_latents`] compiled with FMA (see [`FamilyState::update_avx2`]).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn update_latents_avx2(
        &mut self,
        family: &Family,
        theta: &[f64],
        latents: &[u32],
    ) -> Result<(), FamilyError> {
        self.update_latents_body(family, theta, latents)
    }

    #[inline(always)]
    fn update_latents_body(
        &mut self,
        family: &Family,
        theta: &[f64],
        latents: &[u32],
    ) -> Result<(), FamilyError> {
        let mut valid = self.update_user(family, theta);
        for &i in latents {
            let k = self.guided_of[i as usize];
            if k == u32::MAX {
                continue;
            }
            let g = self.guided[k as usize];
            let (ds, scale) = sigmoid_softplus(theta[g.rho]);
            let loc = theta[g.mu];
            self.dscale[g.entry + 1] = ds;
            self.loc[g.latent] = loc;
            self.scale[g.latent] = scale;
            valid &= is_valid(loc, scale);
        }
        if !valid {
            // The first invalid latent in latent order.
            let mut read: Vec<u32> = self.user.iter().chain(latents).copied().collect();
            read.sort_unstable();
            for i in read {
                let i = i as usize;
                check(family, i, self.loc[i], self.scale[i])?;
            }
        }
        match &self.bad_fixed {
            Some((_, e)) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Each of the family's tapes (a latent's location or scale as a function of the model's
    /// parameters) at `params`: its value and its gradient in the parameters.
    #[inline(always)]
    fn run_tapes(&mut self, family: &Family, params: &[f64]) {
        let m = params.len();
        for (t, tape) in family.tapes.iter().enumerate() {
            let g = &mut self.grads[t];
            tape.gradient(
                &mut self.workspaces[t],
                crate::ir::Semantics::Crisp,
                params,
                &self.zeros,
                g,
            );
            self.tape_value[t] = g.value[0];
            for k in 0..m {
                self.tape_grad[t * m + k] = g.params[k];
            }
        }
    }

    /// The tapes of the user latents' locations and scales at `theta`'s model parameters,
    /// then those latents' values and Jacobians; true when all are valid.
    fn update_user(&mut self, family: &Family, theta: &[f64]) -> bool {
        let m = family.model_param_count();
        self.run_tapes(family, &theta[..m]);
        self.user_latents(family, m)
    }

    /// The user latents' locations and scales from the tapes just run (`m` model
    /// parameters), with their Jacobians; true when all are valid.
    #[inline(always)]
    fn user_latents(&mut self, family: &Family, m: usize) -> bool {
        let mut valid = true;
        for k in 0..self.user.len() {
            let i = self.user[k] as usize;
            let e = self.start[i];
            let Role::User { ref loc, ref scale } = family.roles[i] else {
                unreachable!("listed as a user latent")
            };
            let (loc, scale) = (
                self.source(loc, m, e, true),
                self.source(scale, m, e, false),
            );
            self.loc[i] = loc;
            self.scale[i] = scale;
            valid &= is_valid(loc, scale);
        }
        valid
    }

    #[inline(always)]
    fn update_body(&mut self, family: &Family, theta: &[f64]) -> Result<(), FamilyError> {
        let m = family.model_param_count();
        self.run_tapes(family, &theta[..m]);
        // The guided latents' `softplus(rho)` and its derivative in one lane loop (it
        // vectorises), then their locations, scales and Jacobians; then the others.
        for (r, g) in self.rho.iter_mut().zip(&self.guided) {
            *r = theta[g.rho];
        }
        for ((&r, ds), sc) in self
            .rho
            .iter()
            .zip(&mut self.dscale_drho)
            .zip(&mut self.guided_scale)
        {
            (*ds, *sc) = sigmoid_softplus(r);
        }
        let mut valid = true;
        for ((g, &ds), &scale) in self
            .guided
            .iter()
            .zip(&self.dscale_drho)
            .zip(&self.guided_scale)
        {
            let loc = theta[g.mu];
            self.dscale[g.entry + 1] = ds;
            self.loc[g.latent] = loc;
            self.scale[g.latent] = scale;
            valid &= is_valid(loc, scale);
        }
        valid &= self.user_latents(family, m);
        if !valid {
            // The first invalid latent in latent order, fixed or not.
            for &i in &self.moved {
                let i = i as usize;
                if let Err(e) = check(family, i, self.loc[i], self.scale[i]) {
                    return Err(match &self.bad_fixed {
                        Some((j, fixed)) if *j < i => fixed.clone(),
                        _ => e,
                    });
                }
            }
        }
        if let Some((_, e)) = &self.bad_fixed {
            return Err(e.clone());
        }
        // Gathered first (only moved latents are in the entropy), so that the `ln`s run as
        // one lane loop (it vectorises), then summed in latent order.
        self.entropy_ln_scale.clear();
        self.entropy_ln_scale.extend(
            self.moved
                .iter()
                .map(|&i| i as usize)
                .filter(|&i| family.in_entropy[i])
                .map(|i| self.scale[i]),
        );
        for l in &mut self.entropy_ln_scale {
            *l = elementary::ln(*l);
        }
        self.entropy_const = self
            .entropy_ln_scale
            .iter()
            .fold(0.0, |entropy, &l| entropy + (l + HALF_LN_2PI));
        Ok(())
    }

    /// The value of a user location or scale, writing its derivatives into the Jacobian.
    fn source(&mut self, src: &Source, m: usize, e: usize, is_loc: bool) -> f64 {
        let dest = if is_loc {
            &mut self.dloc
        } else {
            &mut self.dscale
        };
        match *src {
            Source::Const(c) => {
                dest[e..e + m].fill(0.0);
                c
            }
            Source::Tape(t) => {
                dest[e..e + m].copy_from_slice(&self.tape_grad[t * m..(t + 1) * m]);
                self.tape_value[t]
            }
        }
    }

    #[inline]
    pub fn loc(&self, i: usize) -> f64 {
        self.loc[i]
    }

    #[inline]
    pub fn scale(&self, i: usize) -> f64 {
        self.scale[i]
    }

    /// The non-zero pattern of latent `i`'s Jacobian: `(theta index, d loc, d scale)`.
    #[inline(always)]
    pub fn jacobian(&self, i: usize) -> impl Iterator<Item = (usize, f64, f64)> + '_ {
        let r = self.start[i]..self.start[i + 1];
        self.param[r.clone()]
            .iter()
            .zip(&self.dloc[r.clone()])
            .zip(&self.dscale[r])
            .map(|((&p, &dl), &ds)| (p as usize, dl, ds))
    }

    /// `sum_i (ln scale_i + ln(2 pi)/2)` over the latents in the entropy: with
    /// `0.5 * sum s_i^2` added it is `-log q(z)`.
    #[inline]
    pub fn entropy_const(&self) -> f64 {
        self.entropy_const
    }

    /// The latents `z = loc + scale * s` of noise `s` (latent-major, `s[i * w + l]`), for a
    /// tape to form as it loads them: a batch's latents are never written out.
    pub fn latents<'a>(&'a self, s: &'a [f64]) -> Latents<'a> {
        Latents::Affine {
            noise: s,
            loc: &self.loc,
            scale: &self.scale,
        }
    }

    /// `z = loc + scale * s` for `w` samples stored latent-major, written out (what
    /// [`FamilyState::latents`] gives a tape, bit for bit).
    pub fn reparameterise(&self, s: &[f64], z: &mut [f64], w: usize) {
        for i in 0..self.loc.len() {
            let (l, sc) = (self.loc[i], self.scale[i]);
            for (zz, &ss) in z[i * w..(i + 1) * w].iter_mut().zip(&s[i * w..(i + 1) * w]) {
                *zz = l + sc * ss;
            }
        }
    }

    /// The marginal density `q_i(x)` of latent `i`. Inlined, so that it runs in the caller's
    /// build (LYY18's boundary points: with FMA, not libm's `fma` per `mul_add`).
    #[inline(always)]
    pub fn marginal_density(&self, i: usize, x: f64) -> f64 {
        let u = (x - self.loc[i]) / self.scale[i];
        elementary::exp(-0.5 * u * u - HALF_LN_2PI) / self.scale[i]
    }
}

/// Where a guided latent's location, scale and Jacobian entries are: `loc = theta[mu]`,
/// `scale = softplus(theta[rho])`, Jacobian entries `entry` (for `mu`) and `entry + 1`.
#[derive(Clone, Copy, Debug)]
struct GuidedAt {
    latent: usize,
    mu: usize,
    rho: usize,
    entry: usize,
}

/// Whether a latent may have location `loc` and scale `scale` ([`check`] without the
/// error): written with `&`, not `&&`, so a loop over latents folds it without branches.
#[inline(always)]
fn is_valid(loc: f64, scale: f64) -> bool {
    loc.is_finite() & (scale > 0.0) & scale.is_finite()
}

/// Whether latent `i` may have location `loc` and scale `scale`: finite, and positive for the
/// scale; the error names the latent.
fn check(family: &Family, i: usize, loc: f64, scale: f64) -> Result<(), FamilyError> {
    let name = || {
        family
            .latent_names
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("#{i}"))
    };
    if !loc.is_finite() {
        return Err(FamilyError::BadLocation {
            latent: name(),
            value: loc,
        });
    }
    if !(scale > 0.0 && scale.is_finite()) {
        return Err(FamilyError::BadScale {
            latent: name(),
            value: scale,
        });
    }
    Ok(())
}
