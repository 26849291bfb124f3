//! `--eta auto`: DSGD's accuracy chosen from what the run measures.
//!
//! The schedule keeps the paper's shape, `eta_k = a_j (K_MATCH / (k + 1))^decay`, and adapts
//! only its amplitude `a_j`, once per measurement, within `[a_max / MAX_SHRINK, a_max]`. So
//! `eta_k` always lies between two sequences that tighten at the paper's rate: `eta_k -> 0`
//! tied to the step sizes as in the paper's argument, whatever the measurements say.
//!
//! The rule (docs/adaptive-eta.md gives the reasoning and the experiments behind it): every
//! measurement evaluates the crisp and the smoothed objective on the same fresh samples. The
//! amplitude halves when the smoothing gap between them is visible above its noise (twice
//! the larger of its own standard error and the objective's) and larger than what the
//! optimisation of the smoothed problem still gained over the last segment: the iterates
//! have settled on the smoothed problem, whose answer is then no longer the original one's.
//! While the smoothed objective still climbs faster than the gap, the smooth problem is left
//! alone (the paper's reason to start smooth). Every input is a function of (model, options,
//! seed): no timing, no thread count.

use super::Schedule;

/// The largest factor by which the amplitude may fall below its start.
pub const MAX_SHRINK: f64 = 4.0;

/// The amplitude `--eta auto` starts from: the largest accuracy of the paper's Table 1.
pub const START_AMPLITUDE: f64 = 0.22;

/// What one measurement found: the crisp and smoothed objective on the same samples.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct GapProbe {
    /// The smoothed objective at the current eta (maximised sense).
    pub smoothed: f64,
    /// `smoothed - crisp` and its standard error.
    pub gap: f64,
    pub gap_se: f64,
    /// The standard error of the crisp objective estimate.
    pub value_se: f64,
}

impl GapProbe {
    /// The noise a gap must exceed to count: the larger of the two standard errors, twice.
    pub fn noise(&self) -> f64 {
        2.0 * self.gap_se.max(self.value_se)
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
    /// The smoothed objective at the previous measurement.
    last_smoothed: Option<f64>,
}

impl AutoEta {
    /// A controller starting (and capped) at `start`, with the schedule's `decay`.
    pub fn new(start: f64, decay: f64) -> AutoEta {
        AutoEta {
            amplitude: start,
            max: start,
            decay,
            last_smoothed: None,
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

    /// Applies one measurement's finding.
    pub fn update(&mut self, probe: &GapProbe) -> Adjustment {
        let progress = self
            .last_smoothed
            .map_or(f64::INFINITY, |last| probe.smoothed - last);
        self.last_smoothed = Some(probe.smoothed);
        let min = self.max / MAX_SHRINK;
        // A NaN anywhere compares false: nothing changes.
        let visible = probe.gap.abs() > probe.noise();
        let settled = probe.gap.abs() > progress.max(0.0);
        if visible && settled && self.amplitude > min {
            self.amplitude = (0.5 * self.amplitude).max(min);
            // The next segment's smoothed objective is of another problem: no progress yet.
            self.last_smoothed = None;
            return Adjustment::Tightened;
        }
        Adjustment::Kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(smoothed: f64, gap: f64) -> GapProbe {
        GapProbe {
            smoothed,
            gap,
            gap_se: 0.1,
            value_se: 0.2,
        }
    }

    #[test]
    fn a_visible_gap_tightens_once_the_smoothed_problem_settles() {
        let mut a = AutoEta::new(0.2, 0.5);
        // The first measurement has no progress to compare with.
        assert_eq!(a.update(&probe(-100.0, 50.0)), Adjustment::Kept);
        // Still climbing by 60 a segment, more than the gap: keep.
        assert_eq!(a.update(&probe(-40.0, 50.0)), Adjustment::Kept);
        // Climbing by 5 with a gap of 50: settled, tighten.
        assert_eq!(a.update(&probe(-35.0, 50.0)), Adjustment::Tightened);
        assert_eq!(a.amplitude(), 0.1);
        // After a change the next measurement only sets the reference.
        assert_eq!(a.update(&probe(-30.0, 20.0)), Adjustment::Kept);
        assert_eq!(a.update(&probe(-30.0, 20.0)), Adjustment::Tightened);
        assert_eq!(a.amplitude(), 0.05);
        // Never below the floor.
        a.update(&probe(-30.0, 20.0));
        assert_eq!(a.update(&probe(-30.0, 20.0)), Adjustment::Kept);
        assert_eq!(a.amplitude(), 0.2 / MAX_SHRINK);
        assert_eq!(
            a.schedule(),
            Schedule::Tightening {
                eta: 0.05,
                decay: 0.5
            }
        );
    }

    #[test]
    fn a_gap_within_its_noise_changes_nothing() {
        let mut a = AutoEta::new(0.2, 0.5);
        a.update(&probe(-10.0, 0.3));
        // 0.3 is below twice the larger standard error (0.4), though nothing moves.
        assert_eq!(a.update(&probe(-10.0, 0.3)), Adjustment::Kept);
        assert_eq!(a.update(&probe(f64::NAN, f64::NAN)), Adjustment::Kept);
        assert_eq!(a.amplitude(), 0.2);
    }
}
