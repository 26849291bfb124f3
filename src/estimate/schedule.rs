//! Accuracy schedules: which semantics an estimator differentiates at iteration `k`.
//!
//! DSGD tightens the smoothing as `eta_k = eta * (k_match / (k + 1))^decay` with
//! `k_match = 4000`, so `--eta` is the accuracy at iteration 4000 and also the constant that
//! Fixed uses (the paper's `eta / eta_4000` column).
//!
//! The answer DSGD ends at is the smoothed problem's, short of the crisp one by `O(eta^2)` at
//! the final eta. Tightening only the tail of the run was measured and not adopted
//! (`scripts/answers_bias.py`, 10^4 DoG steps, 160 seeds): an extra factor falling
//! geometrically from 1 at half the run to 1/2 at three quarters, held after. A shifted
//! step's optimum, a step likelihood's posterior mean and Example 1.1's theta went from
//! 0.0027, 0.0025 and 0.0023 short (standard errors 0.0006, 4.3-4.5 of them) to 0.0003,
//! 0.0002 and 0.0009 (0.3-1.4 standard errors; LYY18's first two 0.0001 and 0.0000),
//! a positive latent in a guard and the newsvendor from 4 standard errors off to 1.2-1.5. But
//! a sharper eta makes DSGD's gradients noisier (their variance grows like `1 / eta`): each
//! run's answer spread 1.2-1.25 times as far (Example 1.1 within 0.01 of its optimum on 31 of 40
//! seeds against 35), textmsg slowed (final ELBO -296.1 +- 0.2 against -295.6 +- 0.3, and 6
//! of 40 runs converged against 21), and nested steps in a latent of spread 0.1 gained
//! nothing (guide scale 0.0005 short either way, LYY18's 0.0003: the rest is the optimiser's,
//! and grows with the noise). A floor of 1/4 spread each answer 1.6-1.75 times as far; 0.7 left
//! half the bias (Example 1.1 still 2.3 standard errors short).

use crate::ir::Semantics;

/// The iteration at which DSGD's accuracy equals `--eta`.
pub const K_MATCH: f64 = 4000.0;

/// The zero-based iteration whose `eta_k` is `eta` itself (`K_MATCH - 1`): where a probe of
/// DSGD's gradient at "its eta" looks.
pub const ITERATION_AT_ETA: u64 = K_MATCH as u64 - 1;

/// The decay DSGD's schedule uses: the one given, else the one the paper's theorem
/// suggests for the model's nesting depth (`Analysis::default_eta_decay`).
pub fn decay_or_default(given: Option<f64>, analysis: &crate::ir::Analysis) -> f64 {
    given.unwrap_or_else(|| analysis.default_eta_decay())
}

/// [`decay_or_default`] on `model`: the decay given, else the one its nesting depth suggests.
pub fn decay_for(given: Option<f64>, model: &crate::ir::Model) -> f64 {
    decay_or_default(given, &crate::ir::analyse(&model.program))
}

/// How the accuracy coefficient evolves.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Schedule {
    /// No smoothing: crisp if-statements.
    Crisp,
    /// Smoothed at one `eta` throughout.
    Constant {
        /// The accuracy coefficient.
        eta: f64,
    },
    /// `eta_k = eta * (K_MATCH / (k + 1))^decay`.
    Tightening {
        /// `eta_k` at iteration `K_MATCH - 1`.
        eta: f64,
        /// How fast it tightens.
        decay: f64,
    },
}

impl Schedule {
    /// The accuracy coefficient at zero-based iteration `k`, if smoothed.
    pub fn eta(&self, k: u64) -> Option<f64> {
        match *self {
            Schedule::Crisp => None,
            Schedule::Constant { eta } => Some(eta),
            Schedule::Tightening { eta, decay } => {
                Some(eta * libm::pow(K_MATCH / (k as f64 + 1.0), decay))
            }
        }
    }

    /// The semantics at iteration `k`.
    pub fn semantics(&self, k: u64) -> Semantics {
        match self.eta(k) {
            Some(eta) => Semantics::Smoothed { eta },
            None => Semantics::Crisp,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tightening_matches_eta_at_iteration_4000() {
        let s = Schedule::Tightening {
            eta: 0.1,
            decay: 0.5,
        };
        assert!((s.eta(ITERATION_AT_ETA).unwrap() - 0.1).abs() < 1e-15);
        // eta_0 = 0.1 * sqrt(4000)
        assert!((s.eta(0).unwrap() - 0.1 * 4000f64.sqrt()).abs() < 1e-12);
        assert!(s.eta(20_000).unwrap() < s.eta(19_999).unwrap());
        assert_eq!(Schedule::Constant { eta: 0.3 }.eta(123), Some(0.3));
        assert_eq!(Schedule::Crisp.semantics(5), Semantics::Crisp);
    }
}
