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
///
/// A sparse step ([`Optimizer::step_touched`]) advances only the touched components' moments
/// and their own step counts (their bias correction), so a row drawn rarely keeps the state of
/// its last step: momentum does not move a row that got no gradient.
#[derive(Clone, Debug)]
pub struct Adam {
    config: AdamConfig,
    m: Vec<f64>,
    v: Vec<f64>,
    t: u64,
    /// Per component, the steps that moved it; empty while every step moved all (then
    /// each count is `t`).
    own: Vec<u64>,
}

impl Adam {
    /// A fresh optimiser for `dim` components.
    pub fn new(config: AdamConfig, dim: usize) -> Adam {
        Adam {
            config,
            m: vec![0.0; dim],
            v: vec![0.0; dim],
            t: 0,
            own: Vec::new(),
        }
    }

    /// Moves component `p` by its gradient `g`, its own `k`-th step.
    #[inline(always)]
    fn update(&mut self, theta: &mut [f64], p: usize, g: f64, k: u64) {
        let AdamConfig {
            lr,
            beta1,
            beta2,
            eps,
        } = self.config;
        let k = k as i32;
        let c1 = 1.0 - beta1.powi(k);
        let c2 = 1.0 - beta2.powi(k);
        let (m, v) = (&mut self.m[p], &mut self.v[p]);
        *m = beta1 * *m + (1.0 - beta1) * g;
        *v = beta2 * *v + (1.0 - beta2) * g * g;
        theta[p] += lr * (*m / c1) / ((*v / c2).sqrt() + eps);
    }
}

impl Optimizer for Adam {
    fn step(&mut self, theta: &mut [f64], grad: &[f64]) {
        if !self.own.is_empty() {
            // Some component missed a step: each keeps its own count.
            self.t += 1;
            for (p, &g) in grad.iter().enumerate() {
                self.own[p] += 1;
                self.update(theta, p, g, self.own[p]);
            }
            return;
        }
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

    fn step_touched(&mut self, theta: &mut [f64], grad: &[f64], touched: &[u32]) {
        if self.own.is_empty() {
            self.own = vec![self.t; self.m.len()];
        }
        self.t += 1;
        for &p in touched {
            let p = p as usize;
            self.own[p] += 1;
            self.update(theta, p, grad[p], self.own[p]);
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

    /// A sparse step moves the touched components alone: the others, their moments and
    /// their step counts stay as they were (momentum does not move a component without a
    /// gradient), and a component's later step is its own second one (bias-corrected as
    /// such). Listing every component is the dense step, bit for bit.
    #[test]
    fn a_sparse_step_moves_the_touched_components_alone() {
        let mut a = Adam::new(AdamConfig::default(), 3);
        let mut x = [0.0, 0.0, 0.0];
        a.step(&mut x, &[1.0, 1.0, 1.0]);
        let before = x;
        let (m, v) = (a.m.clone(), a.v.clone());
        a.step_touched(&mut x, &[5.0, 9.0, -7.0], &[0, 2]);
        assert_eq!(x[1].to_bits(), before[1].to_bits());
        assert_eq!((a.m[1], a.v[1]), (m[1], v[1]));
        assert!(x[0] != before[0] && x[2] != before[2]);
        // Component 1's next step is its second: as a fresh optimiser's second step.
        let mut fresh = Adam::new(AdamConfig::default(), 1);
        let mut y = [0.0];
        fresh.step(&mut y, &[1.0]);
        fresh.step(&mut y, &[0.5]);
        a.step_touched(&mut x, &[0.0, 0.5, 0.0], &[1]);
        assert_eq!(x[1].to_bits(), y[0].to_bits());
        // Every component listed: the dense step's bits.
        let (mut p, mut q) = (
            Adam::new(AdamConfig::default(), 2),
            Adam::new(AdamConfig::default(), 2),
        );
        let (mut xp, mut xq) = ([0.1, -0.2], [0.1, -0.2]);
        for t in 0..20 {
            let g = [t as f64 - xp[0], 0.3 - xp[1]];
            p.step_touched(&mut xp, &g, &[0, 1]);
            q.step(&mut xq, &g);
            assert_eq!(xp, xq);
        }
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
