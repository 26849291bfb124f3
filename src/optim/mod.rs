//! Optimisers that move `theta` uphill along an estimated gradient.
//!
//! Convention: `grad` is the gradient of the objective being *maximised* (the ELBO, or `E`
//! of `maximize E`), so every step is an ascent step. Nothing here knows about models,
//! estimators or randomness.

mod adam;
mod dog;
mod sgd;

pub use adam::{Adam, AdamConfig};
pub use dog::{Dog, DogConfig};
pub use sgd::{Sgd, SgdConfig};

/// A first-order ascent method; it keeps its own step counter.
pub trait Optimizer: Send {
    /// One ascent step: `theta` moves in the direction of `grad`.
    fn step(&mut self, theta: &mut [f64], grad: &[f64]);

    /// One ascent step in which only the components `touched` (increasing) got a gradient
    /// (a subsampled step: the shared parameters and the drawn rows' guides); `grad` is read
    /// at those components only. The others are not stepped and their state does not
    /// advance, as a parameter without a gradient in Pyro or torch: the step costs
    /// `O(touched)`, whatever `theta`'s length. With every component listed it is
    /// [`Optimizer::step`], bit for bit.
    fn step_touched(&mut self, theta: &mut [f64], grad: &[f64], touched: &[u32]);

    /// Steps taken so far.
    fn steps(&self) -> u64;

    /// The answer so far when it is not the last iterate (an average of the iterates), or
    /// `None` for the last iterate. The gradients are taken at the iterates; the runner
    /// measures and reports this.
    ///
    /// An optimiser that keeps its average lazily (components a sparse step did not touch
    /// caught up when read) brings it up to date here.
    fn average(&mut self) -> Option<&[f64]> {
        None
    }

    /// Component `p` of [`Optimizer::average`], without bringing the rest up to date.
    fn average_at(&self, p: usize) -> Option<f64> {
        let _ = p;
        None
    }

    /// The objective the gradients estimate has changed at once (`--eta auto` tightened
    /// DSGD's smoothing): the optimum has moved, and an optimiser whose step has settled
    /// (DoG's) takes full steps again to get there. The default does nothing.
    fn objective_changed(&mut self) {}

    /// A copy of the state, to try steps from it and keep or drop them (`--eta auto`'s
    /// races).
    fn clone_box(&self) -> Box<dyn Optimizer>;
}

/// Which optimiser, with its hyperparameters.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum OptimizerConfig {
    /// DoG: no step size to choose, the iterates averaged (the default).
    Dog(DogConfig),
    /// Adam with bias correction (the paper's, step 0.0015).
    Adam(AdamConfig),
    /// Plain SGD with step `gamma_0 / k^p`.
    Sgd(SgdConfig),
}

impl Default for OptimizerConfig {
    fn default() -> Self {
        OptimizerConfig::Dog(DogConfig::default())
    }
}

impl OptimizerConfig {
    /// The optimiser when the user names none: Adam at `step` when a step size is given (by
    /// the user, or a built-in model whose paper-tuned Adam beats DoG on it), else DoG.
    pub fn default_for(step: Option<f64>) -> OptimizerConfig {
        match step {
            Some(lr) => OptimizerConfig::Adam(AdamConfig {
                lr,
                ..AdamConfig::default()
            }),
            None => OptimizerConfig::default(),
        }
    }

    /// `dog`, `adam` or `sgd`.
    pub fn name(&self) -> &'static str {
        match self {
            OptimizerConfig::Dog(_) => "dog",
            OptimizerConfig::Adam(_) => "adam",
            OptimizerConfig::Sgd(_) => "sgd",
        }
    }

    /// The (initial) step size; `None` for DoG, which has none.
    pub fn lr(&self) -> Option<f64> {
        match self {
            OptimizerConfig::Dog(_) => None,
            OptimizerConfig::Adam(c) => Some(c.lr),
            OptimizerConfig::Sgd(c) => Some(c.lr),
        }
    }

    /// A fresh optimiser for `dim` parameters.
    pub fn build(&self, dim: usize) -> Box<dyn Optimizer> {
        match *self {
            OptimizerConfig::Dog(c) => Box::new(Dog::new(c, dim)),
            OptimizerConfig::Adam(c) => Box::new(Adam::new(c, dim)),
            OptimizerConfig::Sgd(c) => Box::new(Sgd::new(c)),
        }
    }
}
