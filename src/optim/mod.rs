//! Optimisers that move `theta` uphill along an estimated gradient.
//!
//! Convention: `grad` is the gradient of the objective being *maximised* (the ELBO, or `E`
//! of `maximize E`), so every step is an ascent step. Nothing here knows about models,
//! estimators or randomness.

mod adam;
mod sgd;

pub use adam::{Adam, AdamConfig};
pub use sgd::{Sgd, SgdConfig};

/// A first-order ascent method; it keeps its own step counter.
pub trait Optimizer: Send {
    /// One ascent step: `theta` moves in the direction of `grad`.
    fn step(&mut self, theta: &mut [f64], grad: &[f64]);

    /// Steps taken so far.
    fn steps(&self) -> u64;

    /// A copy of the state, to try steps from it and keep or drop them (`--eta auto`'s
    /// races).
    fn clone_box(&self) -> Box<dyn Optimizer>;
}

/// Which optimiser, with its hyperparameters.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum OptimizerConfig {
    /// Adam with bias correction (the default, step 0.0015).
    Adam(AdamConfig),
    /// Plain SGD with step `gamma_0 / k^p`.
    Sgd(SgdConfig),
}

impl OptimizerConfig {
    /// `adam` or `sgd`.
    pub fn name(&self) -> &'static str {
        match self {
            OptimizerConfig::Adam(_) => "adam",
            OptimizerConfig::Sgd(_) => "sgd",
        }
    }

    /// The (initial) step size.
    pub fn lr(&self) -> f64 {
        match self {
            OptimizerConfig::Adam(c) => c.lr,
            OptimizerConfig::Sgd(c) => c.lr,
        }
    }

    /// A fresh optimiser for `dim` parameters.
    pub fn build(&self, dim: usize) -> Box<dyn Optimizer> {
        match *self {
            OptimizerConfig::Adam(c) => Box::new(Adam::new(c, dim)),
            OptimizerConfig::Sgd(c) => Box::new(Sgd::new(c)),
        }
    }
}
