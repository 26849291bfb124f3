//! What a sweep reads for the latents of a batch: their values, or standard noise that the
//! sweep turns into `loc_i + scale_i * s` as it loads each latent.
//!
//! The second form exists for size: the latents of a batch of a program with tens of
//! thousands of latents take megabytes, and writing them out before the sweep (then reading
//! them back in it) streams them through the caches once more at every step. Formed on load,
//! each latent's lanes are computed while the noise is in L1, by the plain multiply and add
//! (never fused) that writing them out used, so the bits are the same.
//!
//! Depends on nothing in `eval` but the lane width.

use super::instr::{CHUNK, Lanes};

/// The latents of a batch of `batch` samples, latent-major (`[i * batch + lane]`).
#[derive(Copy, Clone, Debug)]
pub enum Latents<'a> {
    /// The latents' values.
    Values(&'a [f64]),
    /// Latent `i` of sample `lane` is `loc[i] + scale[i] * noise[i * batch + lane]`: a
    /// location-scale family's reparameterisation, done as the sweep loads the latent.
    Affine {
        noise: &'a [f64],
        loc: &'a [f64],
        scale: &'a [f64],
    },
}

impl<'a> Latents<'a> {
    /// Numbers per latent times latents: the length of the values or of the noise.
    pub(super) fn len(&self) -> usize {
        match self {
            Latents::Values(v) => v.len(),
            Latents::Affine { noise, .. } => noise.len(),
        }
    }

    /// Whether location and scale, when given, have one entry per latent of `latents`.
    pub(super) fn fits(&self, latents: usize) -> bool {
        match self {
            Latents::Values(_) => true,
            Latents::Affine { loc, scale, .. } => loc.len() == latents && scale.len() == latents,
        }
    }

    /// Lanes `start..start + w` of latent `i`, the last of them repeated in the lanes beyond
    /// `w` (a short chunk's padding).
    #[inline(always)]
    pub(super) fn load(&self, i: usize, batch: usize, start: usize, w: usize) -> Lanes {
        let from = i * batch + start;
        match *self {
            Latents::Values(v) => lanes(&v[from..from + w]),
            Latents::Affine { noise, loc, scale } => {
                let (l, sc) = (loc[i], scale[i]);
                lanes(&noise[from..from + w]).map(|s| l + sc * s)
            }
        }
    }
}

/// `src` (1 to [`CHUNK`] numbers) as a chunk's lanes, its last number repeated beyond it. A
/// full chunk is one fixed-size copy (a copy of variable length is a call to `memmove`).
#[inline(always)]
fn lanes(src: &[f64]) -> Lanes {
    if let Ok(full) = <&Lanes>::try_from(src) {
        return *full;
    }
    let mut lanes = [src[src.len() - 1]; CHUNK];
    lanes[..src.len()].copy_from_slice(src);
    lanes
}

impl<'a> From<&'a [f64]> for Latents<'a> {
    fn from(values: &'a [f64]) -> Latents<'a> {
        Latents::Values(values)
    }
}
