//! The comparison figure of one model (`dsgd compare`, the reproduction): the trajectories
//! of [`dsgd::experiment::compare`]'s aggregation drawn in the style of the paper's Figure 2,
//! with panels for the gradient variance and the smoothing gap.

use dsgd::experiment::compare::{Arm, mean_gap, mean_of_rows, mean_trajectory, spread_band};
use dsgd::experiment::report::RunReport;

use crate::plot::{Figure, Legend, LinePlot, Series, YScale};

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
