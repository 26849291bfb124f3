//! `dsgd`: gradient-based optimisation and variational inference for programs that branch.
//!
//! Diagonalisation SGD smooths every if-statement of a model with a sigmoid of accuracy `eta`
//! and tightens `eta` as the optimisation goes, so that the gradient steps converge to
//! stationary points of the original, unsmoothed objective. The crate also offers the usual
//! alternatives (Reparam, Score, LYY18, Fixed) so a model's author can compare them.
//!
//! # Quick start
//!
//! Fit a model with one latent whose likelihood branches, then read the fitted latent in its
//! own units, the verdict on convergence, and posterior draws:
//!
//! ```
//! let model = dsgd::compile(
//!     "threshold.dsgd",
//!     "let z = sample Normal(0, 1);
//!      let p = if z > 0.5 { 0.9 } else { 0.2 };
//!      observe 1 ~ Bernoulli(p);
//!      observe 1 ~ Bernoulli(p);",
//! )?;
//! let config = dsgd::RunConfig {
//!     iterations: 3000,
//!     seed: 1,
//!     ..dsgd::RunConfig::default()
//! };
//! let report = dsgd::fit(&model, &config)?;
//! let z = &report.latents[0];
//! println!("z: mean {:.3}, sd {:.3}, 90% in [{:.3}, {:.3}]", z.mean, z.sd, z.q05, z.q95);
//! println!("final ELBO {:.3}; {}", report.final_value, report.convergence);
//! assert!(z.mean > 0.0); // the data pull z above the threshold
//! let draws = report.draws(1000, 7)?;
//! assert_eq!(draws.rows.len(), 1000);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The stable surface
//!
//! - Models: [`compile`], [`compile_file`], [`builtin`] give a [`Model`]; the language is
//!   described in `docs/language.md`, the semantics and formulas in `docs/design.md`.
//! - Runs: a [`RunConfig`] (estimator, `eta`, iterations, optimiser, seed, ...), or a
//!   [`RunOptions`] of what a user gave that resolves into one (the module [`settings`]
//!   holds every default, check and resource limit), and [`fit`]
//!   (or [`fit_observed`] with progress hooks through an [`Observer`], [`fit_cancellable`]
//!   with a cancel flag);
//!   [`recommended_config`] gives a built-in model's own settings.
//! - Results: a [`RunReport`] with the final value, the parameters by name, each latent's
//!   [`LatentSummary`], the convergence verdict, the trajectory of [`TrajectoryRow`]s, and
//!   [`RunReport::draws`]; its JSON form is documented field by field in `docs/json.md`.
//! - Gradients at a point: [`gradient_samples`]; the layout of a model's `theta`, draws of
//!   the guide and a step's per-sample gradients at any `theta`: [`theta_layout`],
//!   [`draws_at`], [`step_gradients`].
//!
//! # The toolkit of the front ends
//!
//! The command line (`cli/`), the paper's reproduction (`report/`) and the Python binding
//! (`python/`) are built on the modules documented below, and on nothing else of this crate:
//! [`lang`] (compiling model text with data), [`models`] (the built-in models), [`input`]
//! (reading files safely), [`estimate`] (the estimators and their engine), [`experiment`]
//! (runs, sweeps, comparisons, checks, advice, tables, costs), [`special`] (the special
//! functions) and [`settings`]. They are public and documented but younger than the surface
//! above: they may change between minor versions. The remaining modules (the IR, the tape
//! and its compiled sweeps, the guide family, the optimisers' internals) are hidden from
//! these docs; only this crate's own tests and benchmarks reach them.

#![warn(missing_docs)]
// Every `unsafe` block says why it is sound, next to it.
#![deny(clippy::undocumented_unsafe_blocks)]

mod fit;
mod theta;

#[doc(hidden)]
pub mod aligned;
#[doc(hidden)]
pub mod cpu;
#[doc(hidden)]
pub mod elementary;
pub mod estimate;
#[doc(hidden)]
pub mod eval;
pub mod experiment;
#[doc(hidden)]
pub mod family;
pub mod input;
#[doc(hidden)]
pub mod ir;
pub mod lang;
pub mod models;
#[doc(hidden)]
pub mod optim;
pub mod settings;
pub mod special;

pub use estimate::{EstimateError, EstimatorKind};
pub use experiment::observe::Observer;
pub use experiment::report::{
    DrawError, Draws, LatentSummary, NamedValues, ObjectiveKind, RunReport, StopReason,
    TrajectoryRow,
};
pub use experiment::run::RunError;
pub use fit::{
    GradientSamples, builtin, compile, compile_file, fit, fit_cancellable, fit_observed,
    gradient_samples, gradient_samples_cancellable, recommended_config,
};
pub use ir::{Mode, Model};
pub use lang::CompileError;
pub use optim::{AdamConfig, DogConfig, OptimizerConfig, SgdConfig};
pub use settings::{OnNonFinite, RunConfig, RunOptions, SettingError};
pub use theta::{ThetaError, ThetaLayout, draws_at, step_gradients, theta_layout};
