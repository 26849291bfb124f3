//! Plain stochastic gradient ascent with step `gamma_k = gamma_0 / k^p`, `k = 1, 2, ...`
//! (`p = 1` is the schedule of the paper's Theorem 5.4).

use super::Optimizer;

/// SGD's hyperparameters.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct SgdConfig {
    /// `gamma_0`.
    pub lr: f64,
    /// `p` in `gamma_0 / k^p`.
    pub power: f64,
}

impl Default for SgdConfig {
    fn default() -> Self {
        SgdConfig {
            lr: 0.5,
            power: 1.0,
        }
    }
}

/// SGD's state: the step count.
#[derive(Clone, Debug)]
pub struct Sgd {
    config: SgdConfig,
    k: u64,
}

impl Sgd {
    /// A fresh optimiser.
    pub fn new(config: SgdConfig) -> Sgd {
        Sgd { config, k: 0 }
    }
}

impl Optimizer for Sgd {
    fn step(&mut self, theta: &mut [f64], grad: &[f64]) {
        self.k += 1;
        let gamma = self.config.lr / libm::pow(self.k as f64, self.config.power);
        for (x, &g) in theta.iter_mut().zip(grad) {
            *x += gamma * g;
        }
    }

    fn step_touched(&mut self, theta: &mut [f64], grad: &[f64], touched: &[u32]) {
        self.k += 1;
        let gamma = self.config.lr / libm::pow(self.k as f64, self.config.power);
        for &p in touched {
            let p = p as usize;
            theta[p] += gamma * grad[p];
        }
    }

    fn steps(&self) -> u64 {
        self.k
    }

    fn clone_box(&self) -> Box<dyn Optimizer> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_follow_gamma0_over_k() {
        let mut s = Sgd::new(SgdConfig {
            lr: 0.5,
            power: 1.0,
        });
        let mut x = [0.0];
        s.step(&mut x, &[1.0]); // + 0.5 / 1
        s.step(&mut x, &[1.0]); // + 0.5 / 2
        s.step(&mut x, &[-2.0]); // - 2 * 0.5 / 3
        assert!((x[0] - (0.5 + 0.25 - 1.0 / 3.0)).abs() < 1e-15);
        assert_eq!(s.steps(), 3);
    }

    /// A sparse step moves the touched components alone, at the step's `gamma_k`.
    #[test]
    fn a_sparse_step_moves_the_touched_components_alone() {
        let mut s = Sgd::new(SgdConfig::default());
        let mut x = [0.0, 0.0];
        s.step_touched(&mut x, &[1.0, 1.0], &[1]);
        assert_eq!(x, [0.0, 0.5]);
        s.step_touched(&mut x, &[1.0, 1.0], &[0]);
        assert_eq!(x, [0.25, 0.5]);
    }
}
