//! Adam (Kingma and Ba, 2015) with bias correction, as an ascent method.

use super::Optimizer;

/// Adam's hyperparameters; the defaults are those of the paper's reference experiments.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct AdamConfig {
    /// The step size.
    pub lr: f64,
    /// Decay of the first-moment estimate.
    pub beta1: f64,
    /// Decay of the second-moment estimate.
    pub beta2: f64,
    /// Added to the root of the second moment before dividing.
    pub eps: f64,
}

impl Default for AdamConfig {
    fn default() -> Self {
        AdamConfig {
            lr: 0.0015,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
        }
    }
}

/// Adam's state: first and second moment estimates and the step count.
#[derive(Clone, Debug)]
pub struct Adam {
    config: AdamConfig,
    m: Vec<f64>,
    v: Vec<f64>,
    t: u64,
}

impl Adam {
    /// A fresh optimiser for `dim` components.
    pub fn new(config: AdamConfig, dim: usize) -> Adam {
        Adam {
            config,
            m: vec![0.0; dim],
            v: vec![0.0; dim],
            t: 0,
        }
    }
}

impl Optimizer for Adam {
    fn step(&mut self, theta: &mut [f64], grad: &[f64]) {
        let AdamConfig {
            lr,
            beta1,
            beta2,
            eps,
        } = self.config;
        self.t += 1;
        let t = self.t as i32;
        let c1 = 1.0 - beta1.powi(t);
        let c2 = 1.0 - beta2.powi(t);
        for ((x, &g), (m, v)) in theta
            .iter_mut()
            .zip(grad)
            .zip(self.m.iter_mut().zip(&mut self.v))
        {
            *m = beta1 * *m + (1.0 - beta1) * g;
            *v = beta2 * *v + (1.0 - beta2) * g * g;
            *x += lr * (*m / c1) / ((*v / c2).sqrt() + eps);
        }
    }

    fn steps(&self) -> u64 {
        self.t
    }

    fn clone_box(&self) -> Box<dyn Optimizer> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_step_moves_by_lr_uphill() {
        // With bias correction the first step is lr * g / (|g| + eps).
        let mut a = Adam::new(AdamConfig::default(), 2);
        let mut theta = [0.0, 1.0];
        a.step(&mut theta, &[2.0, -0.5]);
        assert!((theta[0] - 0.0015).abs() < 1e-10);
        assert!((theta[1] - (1.0 - 0.0015)).abs() < 1e-10);
    }

    #[test]
    fn maximises_a_concave_quadratic() {
        // f = -(x - 3)^2, gradient -2 (x - 3).
        let mut a = Adam::new(
            AdamConfig {
                lr: 0.05,
                ..AdamConfig::default()
            },
            1,
        );
        let mut x = [0.0];
        for _ in 0..2000 {
            let g = [-2.0 * (x[0] - 3.0)];
            a.step(&mut x, &g);
        }
        assert!((x[0] - 3.0).abs() < 1e-3, "{}", x[0]);
    }
}
