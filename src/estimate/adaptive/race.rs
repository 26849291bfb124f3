//! `--eta auto`'s decisions: the starting race that picks the amplitude, and the later
//! tightening checks.
//!
//! How smooth the first few hundred steps are decides where a run ends (on the paper's
//! temperature model, the schedule that starts four times smoother ends 2,000 times lower;
//! on xornet it is the other way round), and no measurement at the initial parameters says
//! which way a model goes: the smoothing gap there is large for every candidate on both.
//! What does say it is the crisp objective after the optimiser has moved, and on some
//! models only after it has moved a long way (on walk the smoothest schedule leads for the
//! first 40 % of the run and ends 1.7 nats lower). So the start is a successive halving:
//! every candidate amplitude runs from the initial parameters with the same gradient noise
//! to the first checkpoint (`STAGES`, in units of `RaceConfig::length`), the worst is
//! dropped, the others run on to the next, and at the last checkpoint the race keeps the
//! first candidate, in the caller's order of preference, whose crisp objective is not below
//! the best one's by more than `RACE_Z` paired standard errors (common random numbers: the
//! per-sample differences between two candidates resolve far finer than either value). The
//! smoothest comes first: start as smooth as the crisp progress allows (the paper's reason
//! to smooth), no smoother.
//!
//! Later, a check from the run's current state decides whether to halve the amplitude: the
//! `super::bias` test, which asks whether the crisp problem's gradient is visibly nonzero
//! where the smoothed run has settled.
//!
//! Under `--subsample M` the candidates' steps, the comparison and the test read the run's
//! subsample (each batch `M` rows of every plate drawn from its key, the sums scaled by
//! `n / M`): unbiased, as the run's own steps are, and at a cost that does not grow with
//! the data. The candidates read the same rows at the same iteration (the draw is a function
//! of the key), so their comparison stays paired.
//!
//! Every input is a function of (model, options, seed), so the choice is too.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::estimate::{Engine, EstimatorKind, Pathwise, Problem, Purpose, Schedule, StreamKey};
use crate::optim::Optimizer;

use super::bias::{BiasTest, bias_test};

/// How many paired standard errors a preferred candidate may trail the best one by and
/// still be chosen: the race keeps the preference unless the data clearly say otherwise.
pub const RACE_Z: f64 = 2.0;

/// The starting race's checkpoints in units of `RaceConfig::length` (5 % of the run): all
/// candidates to 10 % of the run, the two best on to 50 %.
pub const STAGES: [u64; 2] = [2, 10];

/// What the race needs from the run's settings.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct RaceConfig {
    /// The unit of the starting race's checkpoints (`STAGES`), in steps.
    pub length: u64,
    /// Gradient samples per step.
    pub batch: usize,
    /// Fresh samples of the final comparison.
    pub samples: usize,
    /// The schedule's decay.
    pub decay: f64,
    /// The run's seed: the candidates share its step and measurement streams.
    pub seed: u64,
    /// The run's `--subsample`: rows of each plate a batch reads (`None`: every row).
    pub subsample: Option<usize>,
}

/// Where the candidates start: the run's state before iteration `k`.
pub struct Start<'a> {
    /// The iteration the candidates start at.
    pub k: u64,
    /// The parameters before iteration `k`.
    pub theta: &'a [f64],
    /// The optimiser's state (each candidate steps a copy).
    pub optimizer: &'a dyn Optimizer,
    /// The run's cancel flag: once it rises, every candidate stops before its next step
    /// (and fails), so a cancelled run does not wait for the race.
    pub cancel: &'a AtomicBool,
}

/// One candidate's finish.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The candidate's amplitude.
    pub amplitude: f64,
    /// Mean crisp objective (maximised sense) at the checkpoint; NaN when a step or the
    /// measurement failed (a non-finite gradient or objective).
    pub value: f64,
    /// The per-sample objectives of the comparison (empty on failure).
    samples: Vec<f64>,
}

/// The race's outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct Race {
    /// The starting race's entries at its last checkpoint (empty for a later check).
    pub entries: Vec<Entry>,
    /// A later check's test (`None` at the start, or when no crisp estimator applies).
    pub test: Option<BiasTest>,
    /// The amplitude the run starts with.
    pub chosen: f64,
    /// The plate rows the race's evaluations read, summed over their samples.
    pub rows_read: u64,
}

/// Decides the amplitude from `start` among `candidates` (in the order of preference): at
/// the start (`start.k == 0`) by the successive halving over `STAGES`; later by the bias
/// test at the current amplitude (`candidates[0]`), which halves it (`candidates[1]`) when
/// the crisp gradient is visibly nonzero where the smoothed run has settled.
pub fn race(problem: &Problem, cfg: &RaceConfig, start: &Start, candidates: &[f64]) -> Race {
    if start.k == 0 {
        let stages = STAGES.map(|s| s * cfg.length);
        return halving(problem, cfg, start, candidates, &stages);
    }
    let schedule = Schedule::Tightening {
        eta: candidates[0],
        decay: cfg.decay,
    };
    let (test, rows_read) = bias_test(
        problem,
        start.theta,
        start.k,
        schedule,
        cfg.seed,
        cfg.subsample,
    );
    let chosen = match (&test, candidates.get(1)) {
        (Some(t), Some(&half)) if t.rejects() => half,
        _ => candidates[0],
    };
    Race {
        entries: Vec::new(),
        test,
        chosen,
        rows_read,
    }
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

/// One candidate on its way: its own engine, iterate and optimiser.
struct Runner {
    amplitude: f64,
    engine: Engine,
    theta: Vec<f64>,
    optimizer: Box<dyn Optimizer>,
    /// The next iteration; `None` once a step failed.
    k: Option<u64>,
}

impl Runner {
    fn new(problem: &Problem, cfg: &RaceConfig, start: &Start, a: f64) -> Runner {
        let schedule = Schedule::Tightening {
            eta: a,
            decay: cfg.decay,
        };
        let mut engine = Engine::new(
            problem.clone(),
            Box::new(Pathwise::new(EstimatorKind::Dsgd, schedule)),
        );
        engine.set_subsample(cfg.subsample);
        Runner {
            amplitude: a,
            engine,
            theta: start.theta.to_vec(),
            optimizer: start.optimizer.clone_box(),
            k: Some(start.k),
        }
    }

    /// DSGD steps up to iteration `end`.
    fn advance(&mut self, cfg: &RaceConfig, end: u64, cancel: &AtomicBool) {
        let Some(from) = self.k else { return };
        for k in from..end {
            if cancel.load(Ordering::Relaxed) {
                self.k = None;
                return;
            }
            let key = StreamKey::new(cfg.seed, k, Purpose::Step);
            if self
                .engine
                .evaluate(&self.theta, key, cfg.batch, false)
                .is_err()
                || self.engine.first_non_finite().is_some()
            {
                self.k = None;
                return;
            }
            // A subsampled step with row latents steps only what the drawn rows moved, as
            // the run's steps do.
            match self.engine.touched() {
                Some(touched) => self.optimizer.step_touched(
                    &mut self.theta,
                    self.engine.mean_gradient(),
                    touched,
                ),
                None => self
                    .optimizer
                    .step(&mut self.theta, self.engine.mean_gradient()),
            }
        }
        self.k = Some(end.max(from));
    }

    /// The crisp objective on the comparison's samples at the current iteration.
    fn measure(&mut self, cfg: &RaceConfig) -> Entry {
        let failed = Entry {
            amplitude: self.amplitude,
            value: f64::NAN,
            samples: Vec::new(),
        };
        let Some(k) = self.k else { return failed };
        let key = StreamKey::new(cfg.seed, k, Purpose::Measure);
        // Under a subsample each chunk of samples reads rows of its own (as the run's
        // measurements do): the per-sample values are unbiased for the full-data objective.
        self.engine.set_rows_per_chunk(true);
        let evaluated = self.engine.evaluate(&self.theta, key, cfg.samples, true);
        self.engine.set_rows_per_chunk(false);
        if evaluated.is_err() {
            return failed;
        }
        let sign = self.engine.problem().objective_sign();
        let samples: Vec<f64> = self
            .engine
            .crisp_values()
            .iter()
            .map(|v| sign * v)
            .collect();
        let value = samples.iter().sum::<f64>() / samples.len() as f64;
        if !value.is_finite() {
            return failed;
        }
        Entry {
            amplitude: self.amplitude,
            value,
            samples,
        }
    }
}

/// Successive halving: every candidate runs to the first checkpoint, the worst is dropped,
/// the others run on to the next, and so on; the last checkpoint's race picks.
fn halving(
    problem: &Problem,
    cfg: &RaceConfig,
    start: &Start,
    candidates: &[f64],
    checkpoints: &[u64],
) -> Race {
    let mut alive: Vec<Runner> = candidates
        .iter()
        .map(|&a| Runner::new(problem, cfg, start, a))
        .collect();
    let mut entries = Vec::new();
    let mut rows_read = 0;
    for (i, &end) in checkpoints.iter().enumerate() {
        for r in &mut alive {
            r.advance(cfg, start.k + end, start.cancel);
        }
        entries = alive.iter_mut().map(|r| r.measure(cfg)).collect();
        if i + 1 == checkpoints.len() || alive.len() == 1 {
            break;
        }
        // Drop the worst (a failed candidate first).
        let worst = entries
            .iter()
            .enumerate()
            .min_by(|(_, a), (_, b)| {
                let key = |e: &Entry| {
                    if e.value.is_finite() {
                        e.value
                    } else {
                        f64::NEG_INFINITY
                    }
                };
                key(a).total_cmp(&key(b))
            })
            .map(|(j, _)| j)
            .unwrap_or(0);
        rows_read += alive.remove(worst).engine.rows_read();
    }
    rows_read += alive.iter().map(|r| r.engine.rows_read()).sum::<u64>();
    let chosen = pick(&entries).unwrap_or(alive[0].amplitude);
    Race {
        entries,
        test: None,
        chosen,
        rows_read,
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
