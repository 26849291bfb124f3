//! `--eta auto`: DSGD's accuracy chosen from what the run measures.
//!
//! The schedule keeps the paper's shape, `eta_k = a_j (K_MATCH / (k + 1))^decay`, and adapts
//! only its amplitude `a_j`, once per measurement, within `[a_max / MAX_SHRINK, a_max]`. So
//! `eta_k` always lies between two sequences that tighten at the paper's rate: `eta_k -> 0`
//! tied to the step sizes as in the paper's argument, whatever the measurements say.
//!
//! The rule (docs/adaptive-eta.md gives the reasoning): at each measurement the run's probe
//! computes, on the same fresh samples, the gradient at the current `eta` and at `eta / 2`.
//! Their difference `D` estimates the smoothing bias of the gradient (to first order in `eta`
//! the bias at `eta` is `2 D`). The amplitude halves when that bias exceeds a fraction
//! [`BIAS_FRACTION`] of what the step can resolve, `max(|grad|, noise of one step's batch
//! mean)`, and doubles back (never above `a_max`) when the bias is below a quarter of that
//! threshold. Far from a stationary point the gradient is large and a smooth problem is
//! allowed; as the iterates settle the gradient falls to the noise and `eta` tightens until
//! the bias hides below the step's own Monte Carlo noise. Every input is a function of
//! (model, options, seed): no timing, no thread count.

use super::Schedule;

/// The largest factor by which the amplitude may fall below its start.
pub const MAX_SHRINK: f64 = 1024.0;

/// The bias may reach this fraction of `max(|grad|, step noise)` before the amplitude halves.
pub const BIAS_FRACTION: f64 = 0.5;

/// The amplitude `--eta auto` starts from: the largest accuracy of the paper's Table 1.
pub const START_AMPLITUDE: f64 = 0.22;

/// What one measurement found, as sums over gradient components (all at the same iterate,
/// over the same `samples` fresh samples).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct BiasProbe {
    /// `|mean gradient|^2` at the current eta.
    pub grad_sq: f64,
    /// The sum over components of the gradient samples' variance (ddof 1).
    pub grad_var: f64,
    /// `|mean of (g(eta) - g(eta / 2))|^2` over the same samples.
    pub diff_sq: f64,
    /// The sum over components of the variance of `g(eta) - g(eta / 2)`.
    pub diff_var: f64,
    /// Fresh samples of the measurement.
    pub samples: usize,
    /// Gradient samples per optimisation step.
    pub batch: usize,
}

impl BiasProbe {
    /// The estimated smoothing bias of the gradient, `|2 D|`, with the Monte Carlo part of
    /// `|D|^2` taken out (zero when `D` is indistinguishable from noise).
    pub fn bias(&self) -> f64 {
        2.0 * (self.diff_sq - self.diff_var / self.samples as f64)
            .max(0.0)
            .sqrt()
    }

    /// What one step can resolve: the larger of the gradient's norm (its Monte Carlo part
    /// taken out) and the standard deviation of one step's batch-mean gradient.
    pub fn resolution(&self) -> f64 {
        let grad = (self.grad_sq - self.grad_var / self.samples as f64).max(0.0);
        let step_noise = self.grad_var / self.batch.max(1) as f64;
        grad.max(step_noise).sqrt()
    }

    /// `bias / resolution` (infinite when the resolution is zero and the bias is not).
    pub fn ratio(&self) -> f64 {
        let (b, r) = (self.bias(), self.resolution());
        if b == 0.0 { 0.0 } else { b / r }
    }
}

/// What the controller did at a measurement.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Adjustment {
    Tightened,
    Kept,
    Relaxed,
}

/// The adaptive amplitude of DSGD's schedule.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct AutoEta {
    amplitude: f64,
    max: f64,
    decay: f64,
}

impl AutoEta {
    /// A controller starting (and capped) at `start`, with the schedule's `decay`.
    pub fn new(start: f64, decay: f64) -> AutoEta {
        AutoEta {
            amplitude: start,
            max: start,
            decay,
        }
    }

    /// The current amplitude (the accuracy the schedule would reach at iteration 4000).
    pub fn amplitude(&self) -> f64 {
        self.amplitude
    }

    /// The schedule the steps use now.
    pub fn schedule(&self) -> Schedule {
        Schedule::Tightening {
            eta: self.amplitude,
            decay: self.decay,
        }
    }

    /// The schedule at half the accuracy, for the bias probe.
    pub fn half_schedule(&self) -> Schedule {
        Schedule::Tightening {
            eta: 0.5 * self.amplitude,
            decay: self.decay,
        }
    }

    /// Applies one measurement's finding.
    pub fn update(&mut self, probe: &BiasProbe) -> Adjustment {
        let ratio = probe.ratio();
        let min = self.max / MAX_SHRINK;
        // A NaN ratio (a non-finite probe) compares false both ways: nothing changes.
        if ratio > BIAS_FRACTION {
            if self.amplitude > min {
                self.amplitude = (0.5 * self.amplitude).max(min);
                return Adjustment::Tightened;
            }
        } else if ratio < 0.25 * BIAS_FRACTION && self.amplitude < self.max {
            self.amplitude = (2.0 * self.amplitude).min(self.max);
            return Adjustment::Relaxed;
        }
        Adjustment::Kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(grad_sq: f64, grad_var: f64, diff_sq: f64, diff_var: f64) -> BiasProbe {
        BiasProbe {
            grad_sq,
            grad_var,
            diff_sq,
            diff_var,
            samples: 1000,
            batch: 16,
        }
    }

    #[test]
    fn bias_above_the_resolution_tightens_and_below_relaxes_within_bounds() {
        let mut a = AutoEta::new(0.2, 0.5);
        // Step noise 16 / 16 = 1, gradient ~0: resolution 1; bias 2 * 1 = 2 > 0.5.
        let big = probe(0.0, 16.0, 1.0, 0.0);
        assert_eq!(a.update(&big), Adjustment::Tightened);
        assert_eq!(a.amplitude(), 0.1);
        for _ in 0..40 {
            a.update(&big);
        }
        assert_eq!(a.amplitude(), 0.2 / MAX_SHRINK);
        assert_eq!(a.update(&big), Adjustment::Kept);
        // A difference that is pure Monte Carlo noise is no bias: relax back up to the cap.
        let noise = probe(0.0, 16.0, 1e-3, 1.0);
        assert_eq!(noise.bias(), 0.0);
        assert_eq!(a.update(&noise), Adjustment::Relaxed);
        for _ in 0..40 {
            a.update(&noise);
        }
        assert_eq!(a.amplitude(), 0.2);
        assert_eq!(a.update(&noise), Adjustment::Kept);
    }

    #[test]
    fn a_large_gradient_tolerates_a_proportionate_bias() {
        // Gradient norm 10 dominates the step noise 1: a bias of 2 is a fifth of it.
        let p = probe(100.0, 16.0, 1.0, 0.0);
        assert!((p.resolution() - (100.0f64 - 0.016).sqrt()).abs() < 1e-12);
        assert!(p.ratio() < BIAS_FRACTION);
        let mut a = AutoEta::new(0.2, 0.5);
        assert_eq!(a.update(&p), Adjustment::Kept);
        assert_eq!(
            a.half_schedule(),
            Schedule::Tightening {
                eta: 0.1,
                decay: 0.5
            }
        );
    }
}
