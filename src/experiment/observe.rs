//! Hooks through which a run reports progress while it goes (progress bars, live logs).
//!
//! The library never prints; a front end implements [`Observer`] and decides what to show.

use super::report::{RunReport, TrajectoryRow};

/// Called by the runner as a run proceeds; every method defaults to doing nothing.
pub trait Observer: Send {
    /// Before the first iteration.
    fn started(&mut self, _total_iterations: u64) {}
    /// After each optimisation step; `done` steps have been taken.
    fn iteration(&mut self, _done: u64) {}
    /// After each measurement row is taken.
    fn logged(&mut self, _row: &TrajectoryRow) {}
    /// When the run has ended (normally or not).
    fn finished(&mut self, _report: &RunReport) {}
}

/// An observer that ignores everything.
#[derive(Copy, Clone, Debug, Default)]
pub struct Quiet;

impl Observer for Quiet {}
