//! Whether the final smoothing gap matters enough to say the answer is still the smoothed
//! problem's.

use super::super::report::TrajectoryRow;

/// Why the final answer is still that of the smoothed problem, when the last measurement's
/// smoothing gap matters: it exceeds [`GAP_NOISE_FACTOR`] times its noise (the larger of the
/// gap's own standard error and the objective estimate's, so that a gap nobody could see in
/// the reported objective does not warn) and [`GAP_NEGLIGIBLE`] of the objective's size
/// `1 + |objective|` (a gap of a few parts in a billion, resolved only because the objective
/// is nearly exact, moves no answer).
pub(super) fn smoothing_warning(row: &TrajectoryRow) -> Option<String> {
    let (eta, gap, se) = (row.eta?, row.gap?, row.gap_se?);
    let noise = se.max(row.value_se);
    let matters = gap.abs() > GAP_NOISE_FACTOR * noise
        && gap.abs() > GAP_NEGLIGIBLE * (1.0 + row.value.abs());
    matters.then(|| {
        format!(
            "at the end (eta {eta:.3e}) the smoothed objective differs from the original by \
             {gap:.4} (standard error {se:.2e}; objective's {:.2e}): the result is that of the \
             smoothed problem, not yet of the original one; tighten eta further (more \
             iterations, a smaller --eta, or --eta auto)",
            row.value_se
        )
    })
}

/// How many standard errors a final smoothing gap must exceed to be reported.
pub const GAP_NOISE_FACTOR: f64 = 2.0;

/// The fraction of `1 + |objective|` below which a final smoothing gap is negligible,
/// however well resolved.
pub const GAP_NEGLIGIBLE: f64 = 1e-6;
