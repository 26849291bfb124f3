//! A comparison's trajectory figure, in the style of the paper's Figure 2: the mean
//! objective per arm over the iterations, with panels for the gradient variance and the
//! smoothing gap, each line with its band over the seeds.

use super::super::plot::{Figure, Legend, LinePlot, Series, YScale};
use super::super::report::{RunReport, TrajectoryRow};
use super::Arm;

/// The mean trajectory over runs: at each logged iteration, the mean of the finite ELBOs
/// logged there by any run.
pub fn mean_trajectory(runs: &[&RunReport]) -> Vec<(f64, f64)> {
    mean_of_rows(runs, |row| Some(row.value))
}

/// At each logged iteration, the mean over runs of the finite values `f` gives there.
fn mean_of_rows(runs: &[&RunReport], f: impl Fn(&TrajectoryRow) -> Option<f64>) -> Vec<(f64, f64)> {
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

/// The Figure-2-style plot of one model: mean ELBO (or objective) over seeds against
/// iteration with the spread over seeds shaded, one colour per estimator, one line style per
/// eta, on a symlog y-axis (linear within ±1).
pub fn trajectory_plot(model: &str, arms: &[Arm], reports: &[&RunReport], seeds: u64) -> LinePlot {
    let label = reports.first().map_or("ELBO", |r| r.kind.label());
    let mut series = Vec::new();
    for arm in arms {
        let runs: Vec<&RunReport> = reports.iter().copied().filter(|r| arm.matches(r)).collect();
        let line = Series::new(
            arm.label(),
            arm.estimator.name(),
            match arm.eta {
                Some(e) => e.to_string(),
                None if arm.is_auto() => "auto".into(),
                None => String::new(),
            },
            mean_trajectory(&runs),
        );
        series.push(if runs.len() > 1 {
            line.with_band(spread_band(&runs))
        } else {
            line
        });
    }
    LinePlot {
        title: if seeds > 1 {
            format!(
                "{model}: {label} during optimisation (mean over {seeds} seeds; shaded: lowest to highest)"
            )
        } else {
            format!("{model}: {label} during optimisation (1 seed)")
        },
        x_label: "iteration".to_string(),
        y_label: label.to_string(),
        series,
        y_scale: YScale::SymLog { linthresh: 1.0 },
        legend: Legend::ByKeys {
            style_name: "η".to_string(),
        },
    }
}

/// The size in pixels of [`trajectory_figure`]'s images (the PDF page is this at 96 dpi).
pub const FIGURE_SIZE: (u32, u32) = (1150, 950);

/// The comparison figure of one model: the Figure-2-style objective panel across the top;
/// below it the gradient variance (mean over seeds of the mean per-component variance of the
/// gradient samples, log scale) and, when some arm smooths, the smoothing gap (smoothed minus
/// crisp objective at the arm's eta, mean over seeds with ±2 standard errors shaded). Every
/// panel uses the same colour per estimator, line style per eta and marker per estimator.
pub fn trajectory_figure(model: &str, arms: &[Arm], reports: &[&RunReport], seeds: u64) -> Figure {
    let objective = trajectory_plot(model, arms, reports, seeds);
    let mut variance = LinePlot::new(
        "Gradient variance",
        "iteration",
        "mean per-component variance",
    );
    variance.y_scale = YScale::Log;
    let mut gap = LinePlot::new(
        "Smoothing gap: smoothed − crisp (shaded: ±2 SE)",
        "iteration",
        "gap",
    );
    for (arm, line) in arms.iter().zip(&objective.series) {
        let runs: Vec<&RunReport> = reports.iter().copied().filter(|r| arm.matches(r)).collect();
        let like = |points| Series {
            points,
            band: Vec::new(),
            ..line.clone()
        };
        variance
            .series
            .push(like(mean_of_rows(&runs, |row| Some(row.var_component))));
        let (points, band) = mean_gap(&runs);
        if !points.is_empty() {
            gap.series.push(like(points).with_band(band));
        }
    }
    let title = objective.title.clone();
    let mut objective = objective;
    objective.title = String::new();
    let mut panels = vec![objective, variance];
    if !gap.series.is_empty() {
        panels.push(gap);
    }
    Figure {
        title,
        panels,
        legend: Legend::ByKeys {
            style_name: "η".to_string(),
        },
    }
}
