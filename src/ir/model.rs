//! A model: a program plus what the inference layers need to know about its inputs.
//!
//! The program's output 0 is what is maximised in expectation: `log p(x, z)` in variational
//! mode (the guide's `-log q` is added by the family layer), the objective (negated for
//! `minimize`) in objective mode. How each latent is distributed is recorded here, not in
//! the program, because it decides the family, not the objective.

use super::node::NodeId;
use super::program::{Program, Span};
use super::transform::Transform;

/// What kind of problem a model states.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `sample`/`observe`: maximise the ELBO of a mean-field Gaussian guide.
    Variational,
    /// `param`s and `maximize E` / `minimize E`; the family is what `sample` says.
    Objective {
        /// The source said `minimize`: output 0 is `-E`.
        minimize: bool,
    },
}

/// How a latent is distributed under the family `q_theta`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum LatentKind {
    /// Variational mode: a guide `N(mu, softplus(rho))` on the unconstrained latent `u` (see
    /// [`Model::latent_transform`]) initialised at this mean and std of `u`.
    Guided { init_mean: f64, init_std: f64 },
    /// A latent whose distribution has constant arguments and no parameters.
    Fixed { loc: f64, scale: f64 },
    /// Objective mode: `loc` and `scale` are program outputs depending on parameters only.
    Family { loc: NodeId, scale: NodeId },
}

/// One latent variable.
#[derive(Clone, Debug, PartialEq)]
pub struct LatentSpec {
    pub name: String,
    pub kind: LatentKind,
    /// Where it was sampled in the source, if known.
    pub span: Option<Span>,
}

/// One parameter of the program (objective mode) with its initial value.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamSpec {
    pub name: String,
    pub init: f64,
}

/// A compiled model.
#[derive(Clone, Debug)]
pub struct Model {
    pub name: String,
    pub mode: Mode,
    pub program: Program,
    /// By latent index (the program's `Latent(i)`).
    pub latents: Vec<LatentSpec>,
    /// By parameter index (the program's `Param(k)`).
    pub params: Vec<ParamSpec>,
}

impl Model {
    /// The sign that turns output 0 back into the user's objective (`-1` for `minimize`).
    pub fn objective_sign(&self) -> f64 {
        match self.mode {
            Mode::Objective { minimize: true } => -1.0,
            _ => 1.0,
        }
    }

    /// How latent `i`'s value `z` is made from the program's unconstrained latent `u` (the
    /// guide is Gaussian on `u`): `Identity` for a latent on the real line.
    pub fn latent_transform(&self, i: usize) -> Transform {
        self.program.latent_transform(i)
    }
}
