//! What a plate's run reads besides its own columns: which rows a call runs (all, or the drawn
//! ones with their `n / M`), and the outer gradient rows and noise it adds into. Apart from
//! the runner so that the calls' inputs and the sweeps both read them without importing each
//! other.

use crate::family::FamilyState;

/// Which rows a call runs.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Rows<'a> {
    /// Every row, scale 1.
    All,
    /// The drawn rows (increasing), their sums scaled by `scale` (`n / M`).
    Drawn { rows: &'a [u32], scale: f64 },
}

impl Rows<'_> {
    /// The row at position `t` of the sequence.
    #[inline(always)]
    pub(super) fn at(&self, t: usize) -> usize {
        match self {
            Rows::All => t,
            Rows::Drawn { rows, .. } => rows[t] as usize,
        }
    }

    pub(super) fn scale(&self) -> f64 {
        match self {
            Rows::All => 1.0,
            Rows::Drawn { scale, .. } => *scale,
        }
    }
}

/// The outer gradient rows a plate adds into, and the chunk's noise.
pub(crate) struct Outer<'a> {
    pub theta: &'a [f64],
    pub state: &'a FamilyState,
    /// The chunk's noise, latent-major (`s[i * w + l]`).
    pub s: &'a [f64],
    pub w: usize,
    /// The moved-latent row of each model latent (`u32::MAX` for a fixed one).
    pub moved_row: &'a [u32],
    /// Whether the gradient rows of undrawn rows' latents are zeroed (a sparse step reads
    /// none of them: `subsample::Sparse`).
    pub zero_undrawn: bool,
}
