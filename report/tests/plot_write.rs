//! Writing plots to disk: complete SVG and PNG files with the title and legend, robustness to
//! non-finite and empty data, and whole-or-nothing behaviour when the target is unwritable.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use dsgd_report::plot::{Legend, LinePlot, PlotError, Series, YScale, write_svg_and_png};

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "dsgd-plot-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn path(&self) -> &Path {
        &self.0
    }
    fn entries(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Fake ELBO trajectories shaped like the paper's Figure 2: 5 estimators, 2 etas, values from
/// -2e6 up to about -60 over 10,000 iterations.
fn figure2_like() -> LinePlot {
    let mut plot = LinePlot::new("temperature: ELBO", "iteration", "ELBO");
    plot.legend = Legend::Auto {
        style_name: "η".to_string(),
    };
    let ends = [
        ("dsgd", -60.0),
        ("fixed", -75.0),
        ("score", -3e4),
        ("reparam", -900.0),
        ("lyy18", -70.0),
    ];
    for (k, (name, end)) in ends.into_iter().enumerate() {
        let etas: &[&str] = if k < 2 { &["0.06", "0.1"] } else { &[""] };
        for (j, eta) in etas.iter().enumerate() {
            let end = end - 5.0 * j as f64;
            let points = (0..=100)
                .map(|i| {
                    let it = f64::from(i) * 100.0;
                    (
                        it,
                        end + (-2e6 - end) * (-it / (400.0 * (k + 1) as f64)).exp(),
                    )
                })
                .collect();
            let label = if eta.is_empty() {
                name.to_string()
            } else {
                format!("{name} η = {eta}")
            };
            plot.series.push(Series::new(label, name, *eta, points));
        }
    }
    plot
}

#[test]
fn writes_complete_svg_and_png_with_title_and_legend() {
    let dir = TempDir::new("write");
    let plot = figure2_like();
    let (svg, png) = write_svg_and_png(&plot, &dir.path().join("fig.eta0.1"), 1000, 600).unwrap();
    assert_eq!(svg, dir.path().join("fig.eta0.1.svg"));
    assert_eq!(png, dir.path().join("fig.eta0.1.png"));
    let text = fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"));
    for needle in [
        "temperature: ELBO",
        "dsgd η = 0.06",
        "fixed η = 0.1",
        "lyy18",
        "iteration",
        "symlog scale",
        "−10⁶",
    ] {
        assert!(text.contains(needle), "SVG lacks {needle:?}");
    }
    let bytes = fs::read(&png).unwrap();
    assert!(bytes.starts_with(PNG_SIGNATURE));
    assert!(
        bytes.len() > 10_000,
        "a 1000x600 chart with text is not a few bytes"
    );
    // No temporary files are left beside the outputs.
    assert_eq!(dir.entries(), ["fig.eta0.1.png", "fig.eta0.1.svg"]);
}

#[test]
fn many_series_get_a_legend_by_keys() {
    let dir = TempDir::new("keys");
    let mut plot = figure2_like();
    for eta in ["0.14", "0.18", "0.22"] {
        for name in ["dsgd", "fixed"] {
            plot.series.push(Series::new(
                format!("{name} η = {eta}"),
                name,
                eta,
                vec![(0.0, -1e5), (1e4, -80.0)],
            ));
        }
    }
    let (svg, _) = write_svg_and_png(&plot, &dir.path().join("keys"), 1000, 600).unwrap();
    let text = fs::read_to_string(svg).unwrap();
    for needle in ["η = 0.06", "η = 0.22", "reparam", "score"] {
        assert!(text.contains(needle), "legend lacks {needle:?}");
    }
    assert!(
        !text.contains("dsgd η = 0.14"),
        "13 series should be summarised by keys"
    );
}

#[test]
fn non_finite_points_and_empty_series_are_skipped() {
    let dir = TempDir::new("nan");
    let mut plot = LinePlot::new("odd data", "x", "y");
    plot.series = vec![
        Series::new(
            "with gaps",
            "dsgd",
            "",
            vec![
                (0.0, 1.0),
                (1.0, f64::NAN),
                (2.0, f64::INFINITY),
                (3.0, -2.0),
                (f64::NAN, 0.0),
                (4.0, 5.0),
            ],
        ),
        Series::new("empty", "score", "", vec![]),
        Series::new("lonely point", "fixed", "0.1", vec![(2.0, 2.0)]),
        Series::new("only nan", "lyy18", "", vec![(f64::NAN, f64::NAN)]),
    ];
    for scale in [
        YScale::Auto,
        YScale::Linear,
        YScale::SymLog { linthresh: 1.0 },
        YScale::Clip { lo: -1.0, hi: 1.0 },
    ] {
        plot.y_scale = scale;
        let (svg, png) = write_svg_and_png(&plot, &dir.path().join("odd"), 640, 400).unwrap();
        assert!(fs::read_to_string(svg).unwrap().contains("with gaps"));
        assert!(fs::read(png).unwrap().starts_with(PNG_SIGNATURE));
    }
    // Nothing at all to draw still gives a figure.
    let empty = LinePlot::new("nothing", "x", "y");
    write_svg_and_png(&empty, &dir.path().join("empty"), 640, 400).unwrap();
    plot.series = vec![Series::new(
        "all bad",
        "dsgd",
        "",
        vec![(f64::NAN, 1.0), (1.0, f64::NEG_INFINITY)],
    )];
    write_svg_and_png(&plot, &dir.path().join("bad"), 640, 400).unwrap();
}

#[test]
fn unwritable_target_is_an_error_and_leaves_no_file() {
    let dir = TempDir::new("unwritable");
    let blocker = dir.path().join("not-a-dir");
    fs::write(&blocker, b"x").unwrap();
    let plot = figure2_like();
    let err = write_svg_and_png(&plot, &blocker.join("fig"), 800, 500).unwrap_err();
    assert!(matches!(err, PlotError::Io { .. }), "{err}");
    let err =
        write_svg_and_png(&plot, &dir.path().join("missing").join("fig"), 800, 500).unwrap_err();
    assert!(matches!(err, PlotError::Io { .. }), "{err}");
    assert_eq!(dir.entries(), ["not-a-dir"]);
}

#[test]
fn failed_render_keeps_the_previous_files() {
    let dir = TempDir::new("keep");
    let base = dir.path().join("fig");
    let plot = figure2_like();
    write_svg_and_png(&plot, &base, 800, 500).unwrap();
    let before = fs::read(dir.path().join("fig.svg")).unwrap();
    let mut bad = plot.clone();
    bad.y_scale = YScale::Clip { lo: 2.0, hi: 1.0 };
    assert!(matches!(
        write_svg_and_png(&bad, &base, 800, 500),
        Err(PlotError::InvalidScale(_))
    ));
    assert!(matches!(
        write_svg_and_png(&plot, &base, 10, 500),
        Err(PlotError::InvalidSize { .. })
    ));
    assert_eq!(fs::read(dir.path().join("fig.svg")).unwrap(), before);
    assert_eq!(dir.entries(), ["fig.png", "fig.svg"]);
}

fn any_value() -> impl proptest::strategy::Strategy<Value = f64> {
    use proptest::prelude::*;
    prop_oneof![
        4 => -1e3f64..1e3,
        1 => -1e300f64..1e300,
        1 => Just(f64::MAX),
        1 => Just(-f64::MAX),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(0.0),
        1 => Just(5e-324),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    #[test]
    fn rendering_arbitrary_data_never_panics(
        points in proptest::collection::vec((any_value(), any_value()), 0..12),
        scale in 0usize..4,
    ) {
        let mut plot = LinePlot::new("fuzz", "x", "y");
        plot.series = vec![Series::new("s", "dsgd", "0.1", points)];
        plot.y_scale = [YScale::Auto, YScale::Linear, YScale::SymLog { linthresh: 1.0 }, YScale::Clip { lo: -1.0, hi: 1.0 }][scale];
        let svg = dsgd_report::plot::render_svg(&plot, 400, 300);
        proptest::prop_assert!(svg.is_ok(), "{:?}", svg.err());
    }
}

/// A series with a band draws one translucent polygon per run of finite rows, beneath the
/// lines; a non-finite row splits the band.
#[test]
fn bands_are_drawn_as_polygons_split_at_non_finite_rows() {
    let line = Series::new("dsgd", "dsgd", "", vec![(0.0, 1.0), (1.0, 2.0), (2.0, 3.0)]);
    let mut plot = LinePlot::new("band", "x", "y");
    plot.series.push(line.clone());
    let bare = dsgd_report::plot::render_svg(&plot, 400, 300).unwrap();
    let banded = line.with_band(vec![
        (0.0, 0.5, 1.5),
        (1.0, 1.5, 2.5),
        (2.0, f64::NAN, 3.5),
        (3.0, 2.0, 4.0),
        (4.0, 2.5, 4.5),
    ]);
    plot.series[0] = banded;
    let svg = dsgd_report::plot::render_svg(&plot, 400, 300).unwrap();
    assert_eq!(
        svg.matches("<polygon").count(),
        bare.matches("<polygon").count() + 2,
        "{svg}"
    );
    assert!(svg.contains("opacity=\"0.15\""), "{svg}");
}
