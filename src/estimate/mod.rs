//! Gradient estimators of `grad_theta E_{z ~ q_theta}[f(theta, z)]` (docs/design.md section 2).
//!
//! Every estimator produces one gradient sample per lane from the noise drawn for it; the
//! [`Engine`] drives batches, threads and averaging. Estimators never print and never draw
//! their own Gaussian noise (the engine does), so all five see the same `z` for the same key.

mod adaptive;
mod analysis;
mod ars;
mod column_sums;
mod engine;
mod lyy18;
pub mod normal;
mod pathwise;
mod plates;
mod plates_lyy18;
mod problem;
mod rloo;
mod rng;
mod schedule;
mod score;
mod share;
mod subsample;

pub use adaptive::{Adjustment, AutoEta, GapProbe, START_AMPLITUDE, race};
pub(crate) use analysis::body_guards;
pub use engine::{AllSamples, Engine, NonFinite, on_a_worker};
pub use lyy18::Lyy18;
pub use pathwise::Pathwise;
pub(crate) use plates::analysis_view;
pub use problem::{Problem, ProblemData, Scratch};
pub use rloo::Rloo;
pub use rng::{Channel, Purpose, SampleRng, StreamKey};
pub use schedule::{ITERATION_AT_ETA, K_MATCH, Schedule, decay_for, decay_or_default};
pub use score::Score;
pub use subsample::Subsample;

/// Gradient samples are computed in groups of this many (the lanes of one sweep); with
/// subsampled plates the samples of one group read the same rows.
pub const SAMPLE_GROUP: usize = crate::eval::CHUNK;

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use crate::eval::Values;
use crate::family::FamilyState;
use crate::ir::{NotAffine, Semantics};

/// The estimators `dsgd` offers.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum EstimatorKind {
    /// Reparameterisation on smoothed(eta_k), eta_k tightened each iteration.
    Dsgd,
    /// Reparameterisation on smoothed(eta), fixed eta.
    Fixed,
    /// Reparameterisation, crisp (biased at discontinuities).
    Reparam,
    /// Score function plus the direct derivative, crisp.
    Score,
    /// Reparameterisation plus the boundary term of Lee, Yu and Yang (2018).
    Lyy18,
    /// Score with a leave-one-out baseline (variance reduction; unbiased).
    Rloo,
}

impl EstimatorKind {
    /// Every estimator, in the order tables list them.
    pub const ALL: [EstimatorKind; 6] = [
        EstimatorKind::Dsgd,
        EstimatorKind::Fixed,
        EstimatorKind::Reparam,
        EstimatorKind::Score,
        EstimatorKind::Lyy18,
        EstimatorKind::Rloo,
    ];

    /// The estimator's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            EstimatorKind::Dsgd => "dsgd",
            EstimatorKind::Fixed => "fixed",
            EstimatorKind::Reparam => "reparam",
            EstimatorKind::Score => "score",
            EstimatorKind::Lyy18 => "lyy18",
            EstimatorKind::Rloo => "rloo",
        }
    }

    /// Whether the estimator smooths (and so reads `eta`).
    pub fn uses_eta(self) -> bool {
        matches!(self, EstimatorKind::Dsgd | EstimatorKind::Fixed)
    }
}

impl fmt::Display for EstimatorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EstimatorKind {
    type Err = EstimateError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EstimatorKind::ALL
            .into_iter()
            .find(|k| k.name() == s.to_ascii_lowercase())
            .ok_or_else(|| EstimateError::UnknownEstimator(s.to_string()))
    }
}

/// Why an estimator cannot be set up.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum EstimateError {
    /// The name is none of the estimators'.
    #[error("unknown estimator `{0}` (expected one of dsgd, fixed, reparam, score, lyy18, rloo)")]
    UnknownEstimator(String),
    /// `eta` is zero, negative or not finite.
    #[error("eta must be positive and finite, got {0}")]
    BadEta(f64),
    /// The decay of DSGD's schedule is negative or not finite.
    #[error("eta decay must be non-negative and finite, got {0}")]
    BadDecay(f64),
    /// LYY18 was asked for on a model with an if-statement whose guard is not affine.
    #[error(
        "LYY18 does not apply to this model: the guard of if-statement #{index}{} is not affine ({reason})",
        span.map_or(String::new(), |s| format!(" (source bytes {}..{})", s.start, s.end))
    )]
    NotAffine {
        /// The if-statement, in program order (`#k` in messages).
        index: usize,
        /// Where the if-statement is in the source, for front ends that can show it.
        span: Option<crate::ir::Span>,
        /// What makes the guard non-affine.
        reason: NotAffine,
    },
}

/// Everything a gradient sample depends on besides its own noise.
#[derive(Copy, Clone, Debug)]
pub struct Context<'a> {
    /// The compiled model.
    pub problem: &'a Problem,
    /// The guide at `theta`.
    pub state: &'a FamilyState,
    /// The optimised vector.
    pub theta: &'a [f64],
    /// Zero-based optimisation iteration (selects eta_k).
    pub iteration: u64,
    /// The estimator's [`Estimator::semantics`] at `iteration`, computed once per batch
    /// (DSGD's `eta_k` is a `pow`, which per chunk of a small model was a few per cent).
    pub semantics: Semantics,
    /// The key of the batch's noise streams.
    pub key: StreamKey,
    /// Index of the first lane of the chunk within the batch.
    pub first: usize,
    /// What the chunk's `f` values must be: exact, or only checked for finiteness (an
    /// optimisation step's, see [`Values::Checked`]).
    pub values: Values,
    /// The rows the plates read at this iteration, when subsampled (every row otherwise).
    pub subsample: Option<&'a Subsample>,
}

/// One gradient estimator.
pub trait Estimator: Send + Sync + fmt::Debug {
    /// Which estimator this is.
    fn kind(&self) -> EstimatorKind;

    /// The semantics this estimator differentiates at iteration `k`: crisp, unless it smooths
    /// (the pathwise estimators, by their schedule).
    fn semantics(&self, _k: u64) -> Semantics {
        Semantics::Crisp
    }

    /// Gradient samples for the `w = scratch.w` lanes drawn in `scratch`, component-major
    /// (`grads[p * w + l]`, so that per-lane loops are contiguous), and `f` under
    /// [`Estimator::semantics`] in `values[l]`.
    fn chunk(&self, cx: &Context<'_>, scratch: &mut Scratch, grads: &mut [f64], values: &mut [f64]);
}

/// The accuracy schedule `kind` differentiates with: DSGD's tightening one, Fixed's
/// constant `eta`, crisp for the rest.
pub fn schedule_of(kind: EstimatorKind, eta: f64, decay: f64) -> Schedule {
    match kind {
        EstimatorKind::Dsgd => Schedule::Tightening { eta, decay },
        EstimatorKind::Fixed => Schedule::Constant { eta },
        _ => Schedule::Crisp,
    }
}

/// Builds an estimator for `problem`. `eta` is the accuracy at iteration 4000 (DSGD) or the
/// fixed accuracy (Fixed); `decay` defaults to `1 / (2 l)` from the nesting depth `l`.
pub fn build(
    kind: EstimatorKind,
    problem: &Problem,
    eta: f64,
    decay: Option<f64>,
) -> Result<Box<dyn Estimator>, EstimateError> {
    if kind.uses_eta() && !(eta > 0.0 && eta.is_finite()) {
        return Err(EstimateError::BadEta(eta));
    }
    let decay = decay_or_default(decay, problem.analysis());
    if !(decay >= 0.0 && decay.is_finite()) {
        return Err(EstimateError::BadDecay(decay));
    }
    let schedule = schedule_of(kind, eta, decay);
    Ok(match kind {
        EstimatorKind::Dsgd | EstimatorKind::Fixed | EstimatorKind::Reparam => {
            Box::new(Pathwise::new(kind, schedule))
        }
        EstimatorKind::Score => Box::new(Score),
        EstimatorKind::Lyy18 => Box::new(Lyy18::new(problem)?),
        EstimatorKind::Rloo => Box::new(Rloo),
    })
}
