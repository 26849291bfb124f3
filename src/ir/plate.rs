//! A plate: a loop over data rows whose iterations are independent, kept as one body program
//! run over the rows instead of being unrolled into the model's program.
//!
//! Why a separate program and not a node of the model's DAG: the model's objective is a sum,
//! `output 0 + sum over plates and rows of the body's output 0`, so the estimators can add a
//! plate's value and gradient to the outer program's per sample without the outer tape
//! knowing of it, and the body is compiled once however many rows there are.
//!
//! The body reads two kinds of input, mapped onto the program's two input kinds:
//! - `Param(k)`: a *shared* input, the same for every row of one sample ([`Shared`]): a
//!   parameter of the model or one of its latents sampled outside the loop. An outer value
//!   the body reads (`let mu = a * 2;` before the loop) is recomputed inside the body from
//!   the shared inputs; it is the same in every row, so the tape computes it once per call.
//! - `Latent(j)`: a *per-row* input: for `j < columns.len()` a data column at the row (the
//!   loop index itself, when the body reads it as a number, is a column too); after them, the
//!   row's own latents ([`RowLatents`]), which are ordinary latents of the model (each with
//!   its own guide parameters), numbered in the model's program as if the loop were unrolled.

use std::sync::Arc;

use super::program::Program;
use super::source::Span;

/// What a body's `Param(k)` stands for: the same value in every row of one sample.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Shared {
    /// The model's parameter `theta_k`.
    Param(u32),
    /// The model's latent `z_i` (sampled outside the loop).
    Latent(u32),
    /// The `j`-th factor of a guard smoothed relative to its spread (`scale_plate_guards`):
    /// set by the estimator from the guide, never differentiated; 1 (the absolute `eta`) in
    /// the reference evaluation.
    GuardFactor(u32),
}

/// One latent sampled in every iteration: row `r`'s is the model's latent
/// `first + r * stride`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RowLatents {
    /// The model latent of row 0.
    pub first: u32,
    /// How far apart consecutive rows' latents are (the number of latents an iteration samples).
    pub stride: u32,
}

impl RowLatents {
    /// The model latent of row `r`.
    pub fn of_row(&self, r: usize) -> u32 {
        self.first + r as u32 * self.stride
    }
}

/// A loop kept as a loop (see the module doc).
#[derive(Clone, Debug)]
pub struct Plate {
    /// The loop variable's name, for messages (`i` in `for i in 0..n`).
    pub var: String,
    /// Where the loop is in the source, if known.
    pub span: Option<Span>,
    /// How many rows (iterations) it has.
    pub rows: usize,
    /// The body: output 0 is one row's contribution to the model's output 0.
    pub body: Arc<Program>,
    /// By the body's parameter index.
    pub shared: Vec<Shared>,
    /// The per-row data the body reads, each of `rows` values; the body's `Latent(j)` for
    /// `j < columns.len()`.
    pub columns: Vec<Arc<[f64]>>,
    /// The row latents, the body's `Latent(columns.len() + q)`.
    pub row_latents: Vec<RowLatents>,
}

impl Plate {
    /// The body's latent index of row latent `q`.
    pub fn row_latent_input(&self, q: usize) -> usize {
        self.columns.len() + q
    }

    /// The body's parameter values for one sample: `theta` (the model's parameters) and `z`
    /// (one sample's values of every model latent) read through [`Plate::shared`].
    pub fn shared_values(&self, theta: &[f64], z: &[f64]) -> Vec<f64> {
        self.shared
            .iter()
            .map(|s| match *s {
                Shared::Param(k) => theta[k as usize],
                Shared::Latent(i) => z[i as usize],
                Shared::GuardFactor(_) => 1.0,
            })
            .collect()
    }

    /// The body's latent values at row `r` for one sample: the columns at `r`, then the row's
    /// latents read from `z` (one sample's values of every model latent).
    pub fn row_inputs(&self, r: usize, z: &[f64]) -> Vec<f64> {
        self.columns
            .iter()
            .map(|c| c[r])
            .chain(self.row_latents.iter().map(|l| z[l.of_row(r) as usize]))
            .collect()
    }
}

/// What became of one `for` loop of the source: kept as a plate, or unrolled and why.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopNote {
    /// The loop variable's name.
    pub var: String,
    /// Where the loop is in the source, if known.
    pub span: Option<Span>,
    /// How many iterations it has.
    pub rows: usize,
    /// A plate (its index in `Model::plates`), or unrolled.
    pub outcome: LoopOutcome,
}

/// Whether a loop became a plate.
#[derive(Clone, Debug, PartialEq)]
pub enum LoopOutcome {
    /// Kept as `Model::plates[index]`.
    Plate {
        /// Its index in `Model::plates`.
        index: usize,
    },
    /// Unrolled: the first rule the loop failed (or the policy that did not try it), and
    /// where in the source that rule failed, if it is a place of its own.
    Unrolled {
        /// Why, in words.
        reason: String,
        /// The statement or expression that failed the rule.
        at: Option<Span>,
    },
}
