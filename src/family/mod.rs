//! Location-scale families `q_theta`: which parameters move which latent, and how.
//!
//! Every latent is reparameterised as `z_i = loc_i(theta) + scale_i(theta) * s_i` with
//! `s_i ~ N(0, 1)` (mean field). This module lays out the parameter vector `theta`,
//! evaluates `loc`, `scale` and their (sparse) Jacobians at a given `theta`, and supplies the
//! Gaussian pieces the estimators need (`log q`, its gradients, the entropy term of the ELBO).
//! It draws no random numbers and knows nothing about estimators.

mod state;

pub use state::FamilyState;

use thiserror::Error;

use crate::eval::Tape;
use crate::ir::{LatentKind, Mode, Model, Node, NodeId};
use crate::special::softplus_inv;

/// Why a model's family cannot be built, or cannot be evaluated at some `theta`.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum FamilyError {
    #[error("the {what} of latent `{latent}` is not an output of the program")]
    NotAnOutput { latent: String, what: &'static str },
    #[error(
        "the {what} of latent `{latent}` depends on a latent variable; it may depend on parameters only"
    )]
    DependsOnLatent { latent: String, what: &'static str },
    #[error("the guide of latent `{latent}` has initial std {std}; it must be positive and finite")]
    BadInitStd { latent: String, std: f64 },
    #[error("the guide of latent `{latent}` has initial mean {mean}; it must be finite")]
    BadInitMean { latent: String, mean: f64 },
    #[error(
        "the scale of latent `{latent}` is {value} at the current parameters; it must be positive and finite"
    )]
    BadScale { latent: String, value: f64 },
    #[error("the location of latent `{latent}` is {value} at the current parameters")]
    BadLocation { latent: String, value: f64 },
    #[error("the model has {found} latent specs for {expected} latent variables")]
    LatentCount { expected: usize, found: usize },
    #[error(
        "the model has nothing to optimise: it declares no `param` and no latent with a guide (only fixed latents, or none)"
    )]
    NothingToOptimise,
}

/// Which group of `theta` a component belongs to (`diagnose` reports per block).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Block {
    /// A parameter declared by the program (`param`).
    Model,
    /// The mean of a Gaussian guide.
    Mu,
    /// The softplus-inverse std of a Gaussian guide.
    Rho,
}

impl Block {
    pub fn name(self) -> &'static str {
        match self {
            Block::Model => "params",
            Block::Mu => "mu",
            Block::Rho => "rho",
        }
    }
}

/// Where a latent's location or scale comes from.
#[derive(Clone, Debug)]
pub(crate) enum Source {
    Const(f64),
    /// Output `output` of the program, evaluated by `tapes[tape]`.
    Tape(usize),
}

/// How one latent is parameterised.
#[derive(Clone, Debug)]
pub(crate) enum Role {
    /// `loc = theta[mu]`, `scale = softplus(theta[rho])`.
    Guided { mu: usize, rho: usize },
    /// Constant location and scale, no parameters.
    Fixed { loc: f64, scale: f64 },
    /// Objective mode: location and scale are program expressions of the model parameters.
    User { loc: Source, scale: Source },
}

/// A mean-field location-scale family over a model's latents, with the layout of `theta`:
/// first the model's own parameters, then `(mu_i, rho_i)` for each guided latent in order.
#[derive(Clone, Debug)]
pub struct Family {
    pub(crate) roles: Vec<Role>,
    /// Whether `-log q(z_i)` is part of the objective (variational mode, non-fixed latents).
    pub(crate) in_entropy: Vec<bool>,
    pub(crate) tapes: Vec<Tape>,
    model_params: usize,
    names: Vec<String>,
    blocks: Vec<Block>,
    init: Vec<f64>,
    latent_names: Vec<String>,
}

impl Family {
    /// The family a model declares: guides in variational mode, the `sample` statements'
    /// expressions in objective mode, constants for fixed latents.
    pub fn new(model: &Model) -> Result<Family, FamilyError> {
        let program = &model.program;
        let n = program.latent_count();
        if model.latents.len() != n {
            return Err(FamilyError::LatentCount {
                expected: n,
                found: model.latents.len(),
            });
        }
        let m = program.param_count();
        let mut names: Vec<String> = program.param_names().to_vec();
        let mut blocks = vec![Block::Model; m];
        let mut init: Vec<f64> = (0..m)
            .map(|k| model.params.get(k).map_or(0.0, |p| p.init))
            .collect();
        let mut roles = Vec::with_capacity(n);
        let mut in_entropy = Vec::with_capacity(n);
        let mut tapes: Vec<Tape> = Vec::new();
        let mut tape_outputs: Vec<NodeId> = Vec::new();
        let variational = model.mode == Mode::Variational;
        for spec in &model.latents {
            let role = match spec.kind {
                LatentKind::Guided {
                    init_mean,
                    init_std,
                } => {
                    if !init_mean.is_finite() {
                        return Err(FamilyError::BadInitMean {
                            latent: spec.name.clone(),
                            mean: init_mean,
                        });
                    }
                    if !(init_std > 0.0 && init_std.is_finite()) {
                        return Err(FamilyError::BadInitStd {
                            latent: spec.name.clone(),
                            std: init_std,
                        });
                    }
                    let mu = names.len();
                    names.push(format!("mu[{}]", spec.name));
                    blocks.push(Block::Mu);
                    init.push(init_mean);
                    names.push(format!("rho[{}]", spec.name));
                    blocks.push(Block::Rho);
                    init.push(softplus_inv(init_std));
                    Role::Guided { mu, rho: mu + 1 }
                }
                LatentKind::Fixed { loc, scale } => Role::Fixed { loc, scale },
                LatentKind::Family { loc, scale } => {
                    let mut source = |node: NodeId, what: &'static str| {
                        family_source(model, node, &spec.name, what, &mut tapes, &mut tape_outputs)
                    };
                    Role::User {
                        loc: source(loc, "location")?,
                        scale: source(scale, "scale")?,
                    }
                }
            };
            in_entropy.push(variational && !matches!(role, Role::Fixed { .. }));
            roles.push(role);
        }
        if names.is_empty() {
            return Err(FamilyError::NothingToOptimise);
        }
        Ok(Family {
            roles,
            in_entropy,
            tapes,
            model_params: m,
            names,
            blocks,
            init,
            latent_names: program.latent_names().to_vec(),
        })
    }

    /// The dimension of `theta`.
    pub fn dim(&self) -> usize {
        self.names.len()
    }

    /// The number of latent variables.
    pub fn latent_count(&self) -> usize {
        self.roles.len()
    }

    /// The number of the model's own parameters (the first entries of `theta`).
    pub fn model_param_count(&self) -> usize {
        self.model_params
    }

    /// Display names of the components of `theta` (`theta`, `mu[z]`, `rho[z]`).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn latent_names(&self) -> &[String] {
        &self.latent_names
    }

    /// The block of each component of `theta`.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// The initial `theta`: parameter inits, guide means and `softplus^-1(std)`.
    pub fn init(&self) -> Vec<f64> {
        self.init.clone()
    }

    /// Per latent, whether any component of `theta` moves it (every latent but the fixed
    /// ones): the latents whose gradient the pathwise estimators read.
    pub fn gradient_wanted(&self) -> Vec<bool> {
        self.roles
            .iter()
            .map(|r| !matches!(r, Role::Fixed { .. }))
            .collect()
    }

    /// The latents some component of `theta` moves (every latent but the fixed ones), in
    /// increasing order: the only ones whose gradient and Jacobian the estimators read.
    pub fn moved_latents(&self) -> Vec<u32> {
        (0..self.roles.len() as u32)
            .filter(|&i| !matches!(self.roles[i as usize], Role::Fixed { .. }))
            .collect()
    }

    /// The components of `theta` that are latent `i`'s own (a guided latent's `mu` and
    /// `rho`; none for the others, which only the model's parameters move).
    pub fn own_components(&self, i: usize) -> impl Iterator<Item = u32> {
        match self.roles[i] {
            Role::Guided { mu, rho } => [Some(mu as u32), Some(rho as u32)],
            _ => [None, None],
        }
        .into_iter()
        .flatten()
    }

    /// Whether latent `i`'s guide density enters the objective as `-log q` (variational mode).
    pub fn in_entropy(&self, i: usize) -> bool {
        self.in_entropy[i]
    }

    /// Buffers for evaluating this family (allocated once).
    pub fn state(&self) -> FamilyState {
        FamilyState::new(self)
    }
}

/// A location or scale expression: a constant when it folded to one, otherwise a tape over
/// the program output that holds it (one tape per distinct output).
fn family_source(
    model: &Model,
    node: NodeId,
    latent: &str,
    what: &'static str,
    tapes: &mut Vec<Tape>,
    tape_outputs: &mut Vec<NodeId>,
) -> Result<Source, FamilyError> {
    let program = &model.program;
    let Some(output) = program.outputs().iter().position(|&o| o == node) else {
        return Err(FamilyError::NotAnOutput {
            latent: latent.to_string(),
            what,
        });
    };
    if let Node::Const(c) = program.node(node) {
        return Ok(Source::Const(c));
    }
    let live = program.reachable_from(&[node]);
    let reads_latent = program
        .nodes()
        .iter()
        .zip(&live)
        .any(|(n, &l)| l && matches!(n, Node::Latent(_)));
    if reads_latent {
        return Err(FamilyError::DependsOnLatent {
            latent: latent.to_string(),
            what,
        });
    }
    if let Some(t) = tape_outputs.iter().position(|&o| o == node) {
        return Ok(Source::Tape(t));
    }
    tape_outputs.push(node);
    tapes.push(Tape::compile(program, output));
    Ok(Source::Tape(tapes.len() - 1))
}
