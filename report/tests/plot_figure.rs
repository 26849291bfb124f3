//! The comparison figure and telling many series apart: the objective, gradient-variance and
//! smoothing-gap panels built from real runs, distinct dash patterns for up to twelve etas,
//! distinct colour-and-marker pairs for many estimators, and the log axis.

use dsgd::experiment::compare::{mean_gap, run_comparison};
use dsgd::experiment::report::RunReport;
use dsgd::experiment::reproduction::ReproduceConfig;
use dsgd_report::compare_figure::trajectory_figure;
use dsgd_report::plot::{
    Figure, Legend, LinePlot, Marker, STYLE_CYCLE, Series, YScale, assign, log_ticks,
    render_figure_svg, render_svg,
};
use dsgd_report::reproduce::builtin_model;

fn tiny_base(model: &str) -> dsgd::experiment::run::RunConfig {
    let mut cfg = ReproduceConfig::quick();
    cfg.iterations = 60;
    cfg.log_every = 20;
    cfg.log_samples = 40;
    cfg.base_run(model)
}

#[test]
fn the_comparison_figure_has_objective_variance_and_gap_panels() {
    let model = builtin_model("example").unwrap();
    let base = tiny_base("example");
    let (_, arms, reports) = run_comparison(&model, &[0.1, 0.2], 2, &base, &|_, _| {}).unwrap();
    let refs: Vec<&RunReport> = reports.iter().collect();
    let fig = trajectory_figure("example", &arms, &refs, 2);
    assert_eq!(fig.panels.len(), 3);
    let [objective, variance, gap] = &fig.panels[..] else {
        unreachable!()
    };
    assert_eq!(objective.series.len(), arms.len());
    assert_eq!(variance.series.len(), arms.len());
    assert_eq!(variance.y_scale, YScale::Log);
    // Only the smoothing arms have a gap; each keeps its arm's label and keys.
    let smoothing: Vec<String> = arms
        .iter()
        .filter(|a| a.estimator.uses_eta())
        .map(|a| a.label())
        .collect();
    let gap_labels: Vec<String> = gap.series.iter().map(|s| s.label.clone()).collect();
    assert_eq!(gap_labels, smoothing);

    // The variance line is the mean over seeds of the logged per-component variance.
    let arm = arms[0];
    let runs: Vec<&RunReport> = refs.iter().copied().filter(|r| arm.matches(r)).collect();
    assert_eq!(runs.len(), 2);
    let (x, v) = variance.series[0].points[1];
    let rows: Vec<f64> = runs
        .iter()
        .map(|r| {
            r.trajectory
                .iter()
                .find(|t| t.iter as f64 == x)
                .unwrap()
                .var_component
        })
        .collect();
    assert!((v - (rows[0] + rows[1]) / 2.0).abs() <= 1e-12 * v.abs());

    // The gap line is the mean gap, the band ±2 combined standard errors of that mean.
    let (line, band) = mean_gap(&runs);
    assert_eq!(gap.series[0].points, line);
    assert_eq!(gap.series[0].band, band);
    let row = |r: &RunReport| {
        r.trajectory
            .iter()
            .find(|t| t.iter as f64 == line[2].0)
            .cloned()
    };
    let (a, b) = (row(runs[0]).unwrap(), row(runs[1]).unwrap());
    let mean = (a.gap.unwrap() + b.gap.unwrap()) / 2.0;
    let se = (a.gap_se.unwrap().powi(2) + b.gap_se.unwrap().powi(2)).sqrt() / 2.0;
    assert!((line[2].1 - mean).abs() <= 1e-12 * mean.abs().max(1e-300));
    assert!((band[2].2 - band[2].1 - 4.0 * se).abs() <= 1e-9 * se.max(1e-300));

    let svg = render_figure_svg(&fig, 1150, 950).unwrap();
    for needle in [
        "example: objective during optimisation",
        "Gradient variance",
        "mean per-component variance (log scale)",
        "Smoothing gap: smoothed − crisp (shaded: ±2 SE)",
        "η = 0.2",
        "score",
    ] {
        assert!(svg.contains(needle), "SVG lacks {needle:?}");
    }
}

#[test]
fn a_figure_without_smoothing_arms_has_no_gap_panel() {
    let model = builtin_model("example").unwrap();
    let base = tiny_base("example");
    let (_, arms, reports) = run_comparison(&model, &[0.1], 1, &base, &|_, _| {}).unwrap();
    let kept: Vec<_> = arms
        .into_iter()
        .filter(|a| !a.estimator.uses_eta())
        .collect();
    let refs: Vec<&RunReport> = reports
        .iter()
        .filter(|r| kept.iter().any(|a| a.matches(r)))
        .collect();
    let fig = trajectory_figure("example", &kept, &refs, 1);
    assert_eq!(fig.panels.len(), 2);
}

fn line(i: usize) -> Vec<(f64, f64)> {
    (0..30)
        .map(|k| (f64::from(k), (i as f64 + 1.0) * f64::from(k).sqrt()))
        .collect()
}

#[test]
fn twelve_etas_get_twelve_dash_patterns() {
    let etas = [
        "0.02", "0.04", "0.06", "0.08", "0.1", "0.12", "0.14", "0.16", "0.18", "0.2", "0.22",
        "auto",
    ];
    for n in 1..=etas.len() {
        let series: Vec<Series> = etas[..n]
            .iter()
            .enumerate()
            .map(|(i, eta)| Series::new(format!("dsgd η={eta}"), "dsgd", *eta, line(i)))
            .collect();
        let a = assign(&series);
        let mut patterns: Vec<&[f64]> = a.styles.iter().map(|s| s.pattern()).collect();
        patterns.sort_by(|x, y| x.partial_cmp(y).unwrap());
        patterns.dedup();
        assert_eq!(patterns.len(), n, "{n} etas");
    }
    assert_eq!(STYLE_CYCLE.len(), 12);
}

#[test]
fn many_colour_keys_differ_in_colour_or_marker_and_fixed_keys_keep_theirs() {
    let names: Vec<String> = (0..16).map(|i| format!("user{i}")).collect();
    let mut series: Vec<Series> = names
        .iter()
        .enumerate()
        .map(|(i, n)| Series::new(n.clone(), n.clone(), "", line(i)))
        .collect();
    series.push(Series::new("dsgd", "dsgd", "", line(16)));
    series.push(Series::new("score", "score", "", line(17)));
    let a = assign(&series);
    let mut looks: Vec<((u8, u8, u8), Marker)> = a
        .colours
        .iter()
        .zip(&a.markers)
        .map(|(c, m)| (*c, m.expect("markers with several colour keys")))
        .collect();
    looks.sort_by_key(|(c, m)| (*c, format!("{m:?}")));
    looks.dedup();
    assert_eq!(looks.len(), series.len(), "every series looks different");
    // Estimators keep their marker in every figure, and spare keys avoid the ones present.
    assert_eq!(a.markers[16], Some(Marker::Circle));
    assert_eq!(a.markers[17], Some(Marker::TriangleUp));
    assert!(
        a.markers[..6]
            .iter()
            .all(|m| !matches!(m, Some(Marker::Circle | Marker::TriangleUp)))
    );
    // One colour key: colour already says everything, no markers.
    let single = assign(&[Series::new("a", "k", "0.1", line(0))]);
    assert_eq!(single.markers, vec![None]);
}

#[test]
fn a_per_series_legend_lists_twelve_series_and_summarises_more() {
    let mut plot = LinePlot::new("many", "x", "y");
    plot.legend = Legend::Auto {
        style_name: "η".into(),
    };
    for i in 0..12 {
        plot.series.push(Series::new(
            format!("series {i}"),
            format!("k{i}"),
            "",
            line(i),
        ));
    }
    let svg = render_svg(&plot, 1000, 700).unwrap();
    assert!((0..12).all(|i| svg.contains(&format!("series {i}\n</text>"))));
    plot.series
        .push(Series::new("series 12", "k12", "", line(12)));
    let svg = render_svg(&plot, 1000, 700).unwrap();
    assert!(
        !svg.contains("series 12\n</text>"),
        "13 series: a legend by keys"
    );
    assert!(svg.contains("k12\n</text>"));
}

#[test]
fn log_axes_tick_powers_of_ten_and_skip_non_positive_values() {
    assert_eq!(log_ticks(0.5, 2e4, 8), vec![1.0, 10.0, 100.0, 1e3, 1e4]);
    let wide = log_ticks(1e-3, 1e12, 8);
    assert!(wide.len() <= 8 && wide.len() >= 4, "{wide:?}");
    assert!(wide.windows(2).all(|w| w[1] / w[0] == wide[1] / wide[0]));
    assert_eq!(log_ticks(1.5, 6.0, 8), vec![2.0, 5.0]);

    let mut plot = LinePlot::new("variance", "iteration", "variance");
    plot.y_scale = YScale::Log;
    plot.series.push(Series::new(
        "v",
        "k",
        "",
        vec![(0.0, 1e3), (1.0, 0.0), (2.0, -5.0), (3.0, 10.0), (4.0, 1.0)],
    ));
    assert_eq!(plot.y_axis_label().unwrap(), "variance (log scale)");
    let svg = render_svg(&plot, 600, 400).unwrap();
    assert!(svg.contains("10³") || svg.contains("1000"));
    let fig = Figure::single(&plot);
    assert_eq!(fig.panels[0].title, "");
    assert_eq!(render_figure_svg(&fig, 600, 400).unwrap(), svg);
}
