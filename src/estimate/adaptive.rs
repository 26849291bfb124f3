//! `--eta auto`: DSGD's accuracy chosen from what the run measures.
//!
//! The schedule keeps the paper's shape, `eta_k = a (K_MATCH / (k + 1))^decay`, and chooses
//! its amplitude `a` (the [`race`] module decides). A race at the start picks among
//! `START_AMPLITUDE`, a half and a quarter of it by successive halving: runs of the
//! candidates from the initial state with the same noise, compared on the crisp objective
//! with common samples (how smooth the first steps are decides where a run ends, and only
//! the crisp progress after many steps tells which way a model goes). Later, when a
//! measurement shows the smoothed objective above the crisp one by more than the noise of
//! either (the smoothing flatters the answer), a check (the [`bias`] module) halves the
//! amplitude when the crisp problem's gradient is visibly nonzero where the smoothed run
//! has settled. The amplitude never grows, so
//! `eta_k <= START_AMPLITUDE (K_MATCH / (k + 1))^decay -> 0` at the paper's rate, whatever
//! the decisions. docs/adaptive-eta.md gives the reasoning and the measurements.

use super::Schedule;

pub mod bias;
pub mod race;

/// The largest amplitude `--eta auto` considers: the largest accuracy of the paper's Table 1.
pub const START_AMPLITUDE: f64 = 0.22;

/// How many times the starting race halves `START_AMPLITUDE` for its candidates.
pub const START_HALVINGS: i32 = 2;

/// The unit of the starting race's checkpoints as a fraction of the run's iterations
/// (`race::STAGES`: 10 % and 50 % of the run).
pub const RACE_FRACTION: f64 = 0.05;

/// The first iteration (as a fraction of the run) at which a gap may call a tightening
/// check, and the least spacing between two checks.
pub const LATE_SPACING: f64 = 0.1;

/// How many standard errors (the larger of the gap's and the objective's) a gap must exceed
/// to call a tightening check: the threshold of the run's smoothing warning.
pub const GAP_Z: f64 = 2.0;

/// What one measurement found: the crisp and smoothed objective on the same samples.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct GapProbe {
    /// The smoothed objective at the current eta (maximised sense).
    pub smoothed: f64,
    /// `smoothed - crisp` and its standard error.
    pub gap: f64,
    /// The standard error of `gap`.
    pub gap_se: f64,
    /// The standard error of the crisp objective estimate.
    pub value_se: f64,
}

impl GapProbe {
    /// Whether the smoothing flatters the objective here: the smoothed objective exceeds the
    /// crisp one by more than `GAP_Z` times the larger of the two standard errors. Then the
    /// optimiser may be sitting where only the smoothing pays, and a smaller `eta` could move
    /// the answer. A gap the other way (the smoothed objective below the crisp one) is a
    /// margin the smoothing keeps from the boundaries, which the crisp objective's rare
    /// crossings (beyond what a thousand samples see) may need, so it calls nothing.
    pub fn flatters(&self) -> bool {
        self.gap > GAP_Z * self.gap_se.max(self.value_se)
    }
}

/// What the controller did at a measurement.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Adjustment {
    /// Eta was made smaller: the gap allowed it.
    Tightened,
    /// Eta was kept.
    Kept,
    /// Eta was made larger: the gap was too wide.
    Relaxed,
}

/// The adaptive amplitude of DSGD's schedule.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct AutoEta {
    amplitude: f64,
    decay: f64,
    iterations: u64,
    /// The earliest iteration of the next tightening check.
    next_race: u64,
    /// A measurement asked for a check at the next segment.
    due: bool,
}

impl AutoEta {
    /// A controller for a run of `iterations` steps with the schedule's `decay`, before the
    /// starting race.
    pub fn new(decay: f64, iterations: u64) -> AutoEta {
        AutoEta {
            amplitude: START_AMPLITUDE,
            decay,
            iterations,
            next_race: (LATE_SPACING * iterations as f64) as u64,
            due: true,
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

    /// The unit of the starting race's checkpoints, in steps (at least one).
    pub fn race_length(&self) -> u64 {
        ((RACE_FRACTION * self.iterations as f64) as u64).max(1)
    }

    /// The decay of the schedule.
    pub fn decay(&self) -> f64 {
        self.decay
    }

    /// The candidates of a decision at iteration `k`, in the order of preference, when one is
    /// due there: at the start, `START_AMPLITUDE` and its halvings, smoothest first (the
    /// race takes the first within noise of the best); later, the current amplitude, then
    /// half of it (a check halves only when its test rejects). `None` when nothing is due or
    /// the run is within `race_length` of its end.
    pub fn race_at(&self, k: u64) -> Option<Vec<f64>> {
        if !self.due || k + self.race_length() > self.iterations {
            return None;
        }
        let halvings = if k == 0 { START_HALVINGS } else { 1 };
        Some(
            (0..=halvings)
                .map(|j| self.amplitude * 0.5f64.powi(j))
                .collect(),
        )
    }

    /// Applies a decision's choice at iteration `k` (never above the current amplitude).
    pub fn raced(&mut self, k: u64, chosen: f64) -> Adjustment {
        self.due = false;
        if k > 0 {
            self.next_race = k + (LATE_SPACING * self.iterations as f64) as u64;
        }
        if chosen < self.amplitude {
            self.amplitude = chosen;
            Adjustment::Tightened
        } else {
            Adjustment::Kept
        }
    }

    /// Reads the measurement at iteration `k`: a flattering gap, once the spacing since the
    /// last check has passed, calls a check at the next segment.
    pub fn observe(&mut self, k: u64, probe: &GapProbe) {
        // A NaN compares false: no check.
        if k >= self.next_race && probe.flatters() {
            self.due = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(gap: f64) -> GapProbe {
        GapProbe {
            smoothed: -10.0,
            gap,
            gap_se: 0.1,
            value_se: 0.2,
        }
    }

    #[test]
    fn races_start_the_run_and_follow_flattering_gaps() {
        let mut a = AutoEta::new(0.5, 10_000);
        assert_eq!(a.race_length(), 500);
        assert_eq!(a.race_at(0), Some(vec![0.22, 0.11, 0.055]));
        assert_eq!(a.raced(0, 0.11), Adjustment::Tightened);
        assert_eq!(a.race_at(100), None);
        // A flattering gap before the spacing (10 % of the run) has passed calls nothing.
        a.observe(500, &probe(5.0));
        assert_eq!(a.race_at(600), None);
        // Within the noise (twice the objective's standard error, 0.4), the other way round,
        // or not a number: nothing.
        for gap in [0.35, -5.0, f64::NAN] {
            a.observe(2000, &probe(gap));
            assert_eq!(a.race_at(2100), None, "{gap}");
        }
        a.observe(2000, &probe(0.5));
        // The current amplitude first: tighten only when it clearly pays.
        assert_eq!(a.race_at(2100), Some(vec![0.11, 0.055]));
        assert_eq!(a.raced(2100, 0.11), Adjustment::Kept);
        assert_eq!(a.amplitude(), 0.11);
        a.observe(3000, &probe(5.0));
        assert_eq!(a.race_at(3100), None);
        a.observe(4100, &probe(5.0));
        // Too close to the end.
        assert_eq!(a.race_at(9600), None);
        assert_eq!(a.race_at(9500), Some(vec![0.11, 0.055]));
        assert_eq!(a.raced(9500, 0.055), Adjustment::Tightened);
        assert_eq!(
            a.schedule(),
            Schedule::Tightening {
                eta: 0.055,
                decay: 0.5
            }
        );
        // The amplitude never grows.
        assert_eq!(a.raced(9600, 0.22), Adjustment::Kept);
        assert_eq!(a.amplitude(), 0.055);
    }
}
