//! A model's optimised vector `theta` outside a fit: its layout, draws of the guide at a
//! `theta`, and the per-sample gradients a step at a `theta` averages. What a front end (the
//! Python binding) offers between fits, without reaching into the estimators.
//!
//! Each is a pure function of its arguments and seed, like a run.

use std::sync::atomic::{AtomicBool, Ordering};

use thiserror::Error;

use crate::estimate::{Channel, Problem, Purpose, StreamKey};
use crate::family::FamilyState;
use crate::ir::Model;
use crate::settings::RunConfig;

/// Why a function of this module gave no answer.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ThetaError {
    /// The model, `theta` or the settings cannot be used (the message says why).
    #[error("{0}")]
    Invalid(String),
    /// The cancel flag rose.
    #[error("cancelled")]
    Cancelled,
}

fn invalid(e: impl std::fmt::Display) -> ThetaError {
    ThetaError::Invalid(e.to_string())
}

/// The layout of a model's `theta` and of its fitted latents.
#[derive(Clone, Debug, PartialEq)]
pub struct ThetaLayout {
    /// `theta`'s components: the model's `param`s, then `mu[z]`, `rho[z]` per guided latent.
    pub theta_names: Vec<String>,
    /// Where a fit starts.
    pub init_theta: Vec<f64>,
    /// The fitted latents (fixed ones left out) by name, in the order of
    /// [`RunReport::latents`](crate::RunReport::latents).
    pub latent_names: Vec<String>,
    /// The same latents as indices among all the model's latents.
    pub fitted: Vec<usize>,
}

/// The layout of `model`'s `theta`.
pub fn theta_layout(model: &Model) -> Result<ThetaLayout, ThetaError> {
    let problem = Problem::new(model).map_err(invalid)?;
    let f = problem.family();
    let names = f.latent_names();
    let fitted = fitted_latents(&problem);
    Ok(ThetaLayout {
        theta_names: f.names().to_vec(),
        init_theta: f.init(),
        latent_names: fitted.iter().map(|&i| names[i].clone()).collect(),
        fitted,
    })
}

/// The latents a fit fits (all but the fixed ones).
fn fitted_latents(problem: &Problem) -> Vec<usize> {
    problem
        .family()
        .gradient_wanted()
        .into_iter()
        .enumerate()
        .filter_map(|(i, fitted)| fitted.then_some(i))
        .collect()
}

/// The stream tag of [`draws_at`]'s draws.
const SAMPLE_TAG: u32 = 1;

/// Draws between two looks at the cancel flag.
const CANCEL_EVERY: usize = 4096;

/// `n` draws of the fitted latents (the order of [`ThetaLayout::latent_names`]) from the
/// guide at `theta`, in natural units (`z = T(loc + scale s)`), row-major; a pure function
/// of `seed`. Ends early with [`ThetaError::Cancelled`] when `cancel` rises. The caller
/// checks that `n` rows fit in memory.
pub fn draws_at(
    model: &Model,
    theta: &[f64],
    n: usize,
    seed: u64,
    cancel: &AtomicBool,
) -> Result<Vec<f64>, ThetaError> {
    let problem = Problem::new(model).map_err(invalid)?;
    problem.check_theta(theta).map_err(ThetaError::Invalid)?;
    let mut state: FamilyState = problem.family().state();
    state.update(problem.family(), theta).map_err(invalid)?;
    let fitted = fitted_latents(&problem);
    let all = problem.family().latent_count();
    let key = StreamKey::new(seed, 0, Purpose::Other(SAMPLE_TAG));
    let mut out = Vec::with_capacity(n.saturating_mul(fitted.len()));
    let mut s = vec![0.0; all];
    let mut rng = key.rng(Channel::Noise);
    for row in 0..n {
        if row % CANCEL_EVERY == 0 && cancel.load(Ordering::Relaxed) {
            return Err(ThetaError::Cancelled);
        }
        rng.fill_normals(row, &mut s);
        out.extend(fitted.iter().map(|&i| {
            model
                .latent_transform(i)
                .to_constrained(state.loc(i) + state.scale(i) * s[i])
        }));
    }
    Ok(out)
}

/// `n` per-sample gradient estimates at `theta`, row-major `(n, dim)`: the samples that an
/// optimisation step at `iteration` with batch `n` would average, from `config`'s estimator,
/// `eta`, `eta_decay`, eta scale and seed (gradients of the maximised objective: the ELBO,
/// `E` for `maximize`, `-E` for `minimize`). The caller validates the settings and checks
/// that the samples fit in memory; ends early with [`ThetaError::Cancelled`] when `cancel`
/// rises (the samples are computed in parts, the same bits as one batch).
pub fn step_gradients(
    model: &Model,
    config: &RunConfig,
    theta: &[f64],
    n: usize,
    iteration: u64,
    cancel: &AtomicBool,
) -> Result<Vec<f64>, ThetaError> {
    let problem = crate::fit::problem_at(model, config, theta).map_err(invalid)?;
    let d = problem.dim();
    let key = StreamKey::new(config.seed, iteration, Purpose::Step);
    let all = crate::fit::sample_all(problem, config, theta, n, key, cancel)
        .map_err(invalid)?
        .ok_or(ThetaError::Cancelled)?;
    debug_assert_eq!(all.gradients.len(), n * d);
    Ok(all.gradients)
}
