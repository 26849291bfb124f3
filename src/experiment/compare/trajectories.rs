//! What a comparison's trajectory figure shows, as numbers: the mean objective per arm over
//! the iterations, the gradient variance and the smoothing gap, each line with its band over
//! the seeds (the `dsgd-report` crate draws them in the style of the paper's Figure 2).

use super::super::report::{RunReport, TrajectoryRow};

/// The mean trajectory over runs: at each logged iteration, the mean of the finite ELBOs
/// logged there by any run.
pub fn mean_trajectory(runs: &[&RunReport]) -> Vec<(f64, f64)> {
    mean_of_rows(runs, |row| Some(row.value))
}

/// At each logged iteration, the mean over runs of the finite values `f` gives there.
pub fn mean_of_rows(
    runs: &[&RunReport],
    f: impl Fn(&TrajectoryRow) -> Option<f64>,
) -> Vec<(f64, f64)> {
    let mut acc: std::collections::BTreeMap<u64, (f64, usize)> = Default::default();
    for r in runs {
        for row in &r.trajectory {
            if let Some(v) = f(row).filter(|v| v.is_finite()) {
                let e = acc.entry(row.iter).or_insert((0.0, 0));
                e.0 += v;
                e.1 += 1;
            }
        }
    }
    acc.into_iter()
        .map(|(k, (s, n))| (k as f64, s / n as f64))
        .collect()
}

/// A line `(x, y)` and a band `(x, low, high)` around it.
pub type LineWithBand = (Vec<(f64, f64)>, Vec<(f64, f64, f64)>);

/// The smoothing gap over runs: at each logged iteration, the mean gap of the runs that
/// logged a finite one there, and the band of ±2 standard errors of that mean (the runs'
/// standard errors combined: `sqrt(sum se_i^2) / n`). Empty for estimators that do not smooth.
pub fn mean_gap(runs: &[&RunReport]) -> LineWithBand {
    let mut acc: std::collections::BTreeMap<u64, (f64, f64, usize)> = Default::default();
    for r in runs {
        for row in &r.trajectory {
            if let (Some(gap), Some(se)) = (row.gap, row.gap_se)
                && gap.is_finite()
                && se.is_finite()
            {
                let e = acc.entry(row.iter).or_insert((0.0, 0.0, 0));
                e.0 += gap;
                e.1 += se * se;
                e.2 += 1;
            }
        }
    }
    let mut line = Vec::with_capacity(acc.len());
    let mut band = Vec::with_capacity(acc.len());
    for (k, (sum, var, n)) in acc {
        let (mean, se) = (sum / n as f64, var.sqrt() / n as f64);
        line.push((k as f64, mean));
        band.push((k as f64, mean - 2.0 * se, mean + 2.0 * se));
    }
    (line, band)
}

/// The spread over runs: at each logged iteration, the lowest and highest finite value any
/// run logged there (the shaded band of the trajectory figures).
pub fn spread_band(runs: &[&RunReport]) -> Vec<(f64, f64, f64)> {
    let mut acc: std::collections::BTreeMap<u64, (f64, f64)> = Default::default();
    for r in runs {
        for row in r.trajectory.iter().filter(|row| row.value.is_finite()) {
            let e = acc.entry(row.iter).or_insert((row.value, row.value));
            e.0 = e.0.min(row.value);
            e.1 = e.1.max(row.value);
        }
    }
    acc.into_iter()
        .map(|(k, (lo, hi))| (k as f64, lo, hi))
        .collect()
}
