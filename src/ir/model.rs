//! A model: a program plus what the inference layers need to know about its inputs.
//!
//! The program's output 0 is what is maximised in expectation: `log p(x, z)` in variational
//! mode (the guide's `-log q` is added by the family layer), the objective (negated for
//! `minimize`) in objective mode. How each latent is distributed is recorded here, not in
//! the program, because it decides the family, not the objective.

use super::node::NodeId;
use super::plate::{LoopNote, Plate};
use super::program::{Program, Semantics};
use super::source::Span;
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
    Guided {
        /// The guide's initial mean of `u` (`mu`'s starting value).
        init_mean: f64,
        /// The guide's initial standard deviation of `u` (`softplus(rho)` at the start).
        init_std: f64,
    },
    /// A latent whose distribution has constant arguments and no parameters.
    Fixed {
        /// Its distribution's location (a normal's mean).
        loc: f64,
        /// Its distribution's scale (a normal's standard deviation).
        scale: f64,
    },
    /// Objective mode: `loc` and `scale` are program outputs depending on parameters only.
    Family {
        /// The program node computing the location.
        loc: NodeId,
        /// The program node computing the scale.
        scale: NodeId,
    },
}

/// One latent variable.
#[derive(Clone, Debug, PartialEq)]
pub struct LatentSpec {
    /// The latent's name in the source (`z`, or `z[3]` for an array element).
    pub name: String,
    /// How it is distributed under the family.
    pub kind: LatentKind,
    /// Where it was sampled in the source, if known.
    pub span: Option<Span>,
}

/// One parameter of the program (objective mode) with its initial value.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamSpec {
    /// The parameter's name in the source.
    pub name: String,
    /// Its starting value (`param theta = 1;` starts at 1).
    pub init: f64,
}

/// A compiled model.
#[derive(Clone, Debug)]
pub struct Model {
    /// The model's name: the file stem, or the built-in's name (it names the model in
    /// reports and error messages).
    pub name: String,
    /// Variational inference or a `maximize`/`minimize` objective.
    pub mode: Mode,
    /// The computation: output 0 is what is maximised in expectation (see the module doc).
    /// Shared, not copied, by what runs the model (a large program is tens of megabytes).
    pub program: std::sync::Arc<Program>,
    /// By latent index (the program's `Latent(i)`).
    pub latents: Vec<LatentSpec>,
    /// By parameter index (the program's `Param(k)`).
    pub params: Vec<ParamSpec>,
    /// Loops kept as loops: what is maximised is output 0 of `program` plus, for each plate,
    /// the sum over its rows of its body's output 0 ([`Plate`]). Empty for a program with
    /// every loop unrolled.
    pub plates: Vec<Plate>,
    /// What became of each `for` loop of the source (one note per loop and, for a loop
    /// inside an unrolled loop, per iteration that made a plate): for `dsgd check`.
    pub loops: Vec<LoopNote>,
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

    /// What is maximised, at one point, by the reference interpreter: output 0 of the
    /// program plus every plate's rows, added row by row in order. The slow, obviously right
    /// definition the tapes are tested against.
    pub fn evaluate(&self, semantics: Semantics, theta: &[f64], z: &[f64]) -> f64 {
        let mut total = self.program.evaluate(semantics, theta, z);
        for plate in &self.plates {
            let shared = plate.shared_values(theta, z);
            for r in 0..plate.rows {
                total += plate
                    .body
                    .evaluate(semantics, &shared, &plate.row_inputs(r, z));
            }
        }
        total
    }
}
