//! `--eta auto`'s start: a short race of DSGD schedules that picks the amplitude.
//!
//! How smooth the first few hundred steps are decides where a run ends (on the paper's
//! temperature model, the schedule that starts four times smoother ends 2,000 times lower;
//! on xornet it is the other way round), and no measurement at the initial parameters says
//! which way a model goes: the smoothing gap there is large for every candidate on both.
//! What does say it is the crisp objective after the optimiser has moved. So each candidate
//! amplitude runs the first `length` steps from the initial parameters with the same
//! gradient noise, and the crisp objective is measured at the end on the same fresh samples
//! (common random numbers: the per-sample differences between two candidates resolve far
//! finer than either value). The race keeps the first candidate, in the caller's order of
//! preference, whose objective is not below the best one's by more than `RACE_Z` paired
//! standard errors. At the start the smoothest comes first: start as smooth as the crisp
//! progress allows (the paper's reason to smooth), no smoother. Later races start from the
//! run's current state (parameters and optimiser) and prefer the current amplitude.
//!
//! Every input is a function of (model, options, seed), so the choice is too.

use crate::estimate::{Engine, EstimatorKind, Pathwise, Problem, Purpose, Schedule, StreamKey};
use crate::optim::Optimizer;

/// How many paired standard errors a preferred candidate may trail the best one by and
/// still be chosen: the race keeps the preference unless the data clearly say otherwise.
pub const RACE_Z: f64 = 2.0;

/// What the race needs from the run's settings.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct RaceConfig {
    /// Steps each candidate takes.
    pub length: u64,
    /// Gradient samples per step.
    pub batch: usize,
    /// Fresh samples of the final comparison.
    pub samples: usize,
    /// The schedule's decay.
    pub decay: f64,
    /// The run's seed: the candidates share its step and measurement streams.
    pub seed: u64,
}

/// Where the candidates start: the run's state before iteration `k`.
pub struct Start<'a> {
    pub k: u64,
    pub theta: &'a [f64],
    /// The optimiser's state (each candidate steps a copy).
    pub optimizer: &'a dyn Optimizer,
}

/// One candidate's finish.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub amplitude: f64,
    /// Mean crisp objective (maximised sense) after the race; NaN when a step or the
    /// measurement failed (a non-finite gradient or objective).
    pub value: f64,
    /// The per-sample objectives of the comparison (empty on failure).
    samples: Vec<f64>,
}

/// The race's outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct Race {
    pub entries: Vec<Entry>,
    /// The amplitude the run starts with.
    pub chosen: f64,
}

/// Runs the race over `candidates` (in the order of preference) from `start` and picks one.
pub fn race(problem: &Problem, cfg: &RaceConfig, start: &Start, candidates: &[f64]) -> Race {
    let entries: Vec<Entry> = candidates
        .iter()
        .map(|&a| run_candidate(problem, cfg, start, a))
        .collect();
    let chosen = pick(&entries).unwrap_or(candidates[0]);
    Race { entries, chosen }
}

/// The first entry within `RACE_Z` paired standard errors of the best; `None` when no entry
/// finished.
fn pick(entries: &[Entry]) -> Option<f64> {
    let best = entries
        .iter()
        .filter(|e| e.value.is_finite())
        .max_by(|a, b| a.value.total_cmp(&b.value))?;
    entries
        .iter()
        .filter(|e| e.value.is_finite())
        .find(|e| {
            let (mean, se) = paired(&best.samples, &e.samples);
            mean <= RACE_Z * se
        })
        .map(|e| e.amplitude)
}

/// The mean of `a - b` sample by sample, and its standard error.
fn paired(a: &[f64], b: &[f64]) -> (f64, f64) {
    let n = a.len().min(b.len());
    if n < 2 {
        return (0.0, 0.0);
    }
    let d = || a.iter().zip(b).map(|(x, y)| x - y);
    let mean = d().sum::<f64>() / n as f64;
    let var = d().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64;
    (mean, (var / n as f64).sqrt())
}

/// `length` DSGD steps at amplitude `a` from `start`, then the crisp objective on the
/// comparison's samples.
fn run_candidate(problem: &Problem, cfg: &RaceConfig, start: &Start, a: f64) -> Entry {
    let failed = Entry {
        amplitude: a,
        value: f64::NAN,
        samples: Vec::new(),
    };
    let schedule = Schedule::Tightening {
        eta: a,
        decay: cfg.decay,
    };
    let mut engine = Engine::new(
        problem.clone(),
        Box::new(Pathwise::new(EstimatorKind::Dsgd, schedule)),
    );
    let mut theta = start.theta.to_vec();
    let mut optimizer = start.optimizer.clone_box();
    let end = start.k + cfg.length;
    for k in start.k..end {
        let key = StreamKey::new(cfg.seed, k, Purpose::Step);
        if engine.evaluate(&theta, key, cfg.batch, false).is_err()
            || engine.first_non_finite().is_some()
        {
            return failed;
        }
        optimizer.step(&mut theta, engine.mean_gradient());
    }
    let key = StreamKey::new(cfg.seed, end, Purpose::Measure);
    if engine.evaluate(&theta, key, cfg.samples, true).is_err() {
        return failed;
    }
    let sign = problem.objective_sign();
    let samples: Vec<f64> = engine.crisp_values().iter().map(|v| sign * v).collect();
    let value = samples.iter().sum::<f64>() / samples.len() as f64;
    if !value.is_finite() {
        return failed;
    }
    Entry {
        amplitude: a,
        value,
        samples,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(amplitude: f64, samples: Vec<f64>) -> Entry {
        let value = samples.iter().sum::<f64>() / samples.len() as f64;
        Entry {
            amplitude,
            value,
            samples,
        }
    }

    #[test]
    fn the_first_candidate_within_noise_of_the_best_wins() {
        let noise = [0.3, -0.2, 0.1, -0.4, 0.25, -0.05];
        let at = |shift: f64| noise.iter().map(|x| x + shift).collect::<Vec<_>>();
        // Identical noise: a constant shift is resolved exactly, however small.
        let clear = [entry(0.2, at(-0.01)), entry(0.1, at(0.0))];
        assert_eq!(pick(&clear), Some(0.1));
        // The smoothest is best: it wins.
        let smooth_best = [entry(0.2, at(1.0)), entry(0.1, at(0.0))];
        assert_eq!(pick(&smooth_best), Some(0.2));
        // Independent noise of the same size as the difference: a tie, the smoother wins.
        let tie = [
            entry(0.2, vec![0.3, -0.2, 0.1, -0.4]),
            entry(0.1, vec![-0.1, 0.4, -0.3, 0.2]),
        ];
        assert_eq!(pick(&tie), Some(0.2));
        // A failed candidate never wins; none finishing gives no choice.
        let failed = Entry {
            amplitude: 0.4,
            value: f64::NAN,
            samples: Vec::new(),
        };
        assert_eq!(pick(&[failed.clone(), entry(0.1, at(0.0))]), Some(0.1));
        assert_eq!(pick(&[failed]), None);
    }
}
