//! Line plots of plain data, written as SVG, PNG and PDF: the figures of the experiment reports.
//!
//! The input is data only ([`LinePlot`]: series of `(x, y)` points with a colour key, usually
//! the estimator, and a style key, usually eta; a [`Figure`] puts several such panels under
//! one title and legend); nothing here knows about estimators or runs. SVG and PNG text is
//! rendered with the DejaVu Sans font embedded in the binary, so figures look the same on every
//! machine and need no system fonts; PDF text uses the standard Helvetica, which every reader
//! has. Files are written whole or not at all.
//!
//! The y-axis can be symlog ([`YScale::SymLog`]) or clipped ([`YScale::Clip`]) so that ELBO
//! trajectories at -10^6 and at -50 share one readable figure, or logarithmic ([`YScale::Log`])
//! for positive quantities such as variances; the y-axis label then says so.

mod atomic;
mod pdf;
mod pdf_text;
mod render;
mod scale;
mod style;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::prelude::*;
use plotters::style::FontStyle;

pub use pdf::PdfBackend;
pub use scale::{
    AUTO_SYMLOG_RATIO, ResolvedScale, SymLog, YScale, format_symlog_tick, format_tick,
    linear_ticks, log_ticks,
};
pub use style::{Assignment, LineStyle, MARKER_CYCLE, Marker, Rgb, STYLE_CYCLE, assign, dash};

use atomic::TempFile;

/// One line of a plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text (empty: not listed in a per-series legend).
    pub label: String,
    /// Series with equal keys share a colour; `dsgd`, `fixed`, `score`, `reparam`, `lyy18`
    /// (any case) have fixed colours.
    pub colour_key: String,
    /// Series with equal keys share a line style; empty means solid.
    pub style_key: String,
    /// An explicit style, overriding `style_key`.
    pub style: Option<LineStyle>,
    /// The data; points with a non-finite coordinate are not drawn and break the line.
    pub points: Vec<(f64, f64)>,
    /// A shaded band `(x, low, high)` drawn under the line in its colour (e.g. the spread
    /// over seeds); empty for none. Non-finite rows break the band.
    pub band: Vec<(f64, f64, f64)>,
}

impl Series {
    /// A series with the given legend label, colour key and style key.
    pub fn new(
        label: impl Into<String>,
        colour_key: impl Into<String>,
        style_key: impl Into<String>,
        points: Vec<(f64, f64)>,
    ) -> Self {
        Series {
            label: label.into(),
            colour_key: colour_key.into(),
            style_key: style_key.into(),
            style: None,
            points,
            band: Vec::new(),
        }
    }

    /// The same series with a shaded band `(x, low, high)` under its line.
    pub fn with_band(mut self, band: Vec<(f64, f64, f64)>) -> Self {
        self.band = band;
        self
    }

    /// The same series with an explicit line style.
    pub fn with_style(mut self, style: LineStyle) -> Self {
        self.style = Some(style);
        self
    }
}

/// How the legend is organised.
#[derive(Debug, Clone, PartialEq)]
pub enum Legend {
    /// One entry per labelled series.
    PerSeries,
    /// One entry per colour key, then one per style key, each written `"{name} = {key}"`
    /// (or just the key when `style_name` is empty): compact for estimators x etas.
    ByKeys {
        /// What the style keys are, e.g. `"η"`.
        style_name: String,
    },
    /// `PerSeries` up to [`AUTO_LEGEND_MAX`] labelled series, else `ByKeys` with this name.
    Auto {
        /// What the style keys are, e.g. `"η"`.
        style_name: String,
    },
}

/// `Legend::Auto` switches to a legend by keys above this many labelled series.
pub const AUTO_LEGEND_MAX: usize = 12;

/// A line plot: title, axis labels, series, y-scale and legend layout.
#[derive(Debug, Clone, PartialEq)]
pub struct LinePlot {
    /// Printed above the plot.
    pub title: String,
    /// Horizontal axis description.
    pub x_label: String,
    /// Vertical axis description; a note on the scale is appended when it is not linear.
    pub y_label: String,
    /// The lines.
    pub series: Vec<Series>,
    /// How y values map to the page.
    pub y_scale: YScale,
    /// How the legend is organised.
    pub legend: Legend,
}

impl LinePlot {
    /// An empty plot with an automatic y-scale and legend.
    pub fn new(
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
    ) -> Self {
        LinePlot {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            series: Vec::new(),
            y_scale: YScale::Auto,
            legend: Legend::Auto {
                style_name: String::new(),
            },
        }
    }

    /// The y-axis label as drawn, including the note on a non-linear scale.
    pub fn y_axis_label(&self) -> Result<String, PlotError> {
        let scale = self.y_scale.resolve(&self.series)?;
        Ok(match scale.axis_note() {
            Some(note) if self.y_label.is_empty() => note,
            Some(note) => format!("{} ({note})", self.y_label),
            None => self.y_label.clone(),
        })
    }
}

/// Several line plots (panels) under one title and one legend: the first panel spans the
/// top, the others share the row below it. Series with equal keys look the same in every panel
/// (colours, styles and markers are assigned over all panels together), so the legend serves
/// them all. Each panel's `title` is its heading and its `legend` is ignored.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// Printed above the panels.
    pub title: String,
    /// The panels, in reading order.
    pub panels: Vec<LinePlot>,
    /// How the shared legend is organised.
    pub legend: Legend,
}

impl Figure {
    /// The figure of a single plot: its title above, its legend beside it.
    pub fn single(plot: &LinePlot) -> Figure {
        Figure {
            title: plot.title.clone(),
            panels: vec![LinePlot {
                title: String::new(),
                ..plot.clone()
            }],
            legend: plot.legend.clone(),
        }
    }

    fn scales(&self) -> Result<Vec<ResolvedScale>, PlotError> {
        self.panels
            .iter()
            .map(|p| p.y_scale.resolve(&p.series))
            .collect()
    }
}

/// Why a plot could not be produced.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// A file could not be created, written or renamed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The drawing library failed.
    #[error("rendering failed: {0}")]
    Render(String),
    /// The y-scale parameters are unusable.
    #[error("invalid y-scale: {0}")]
    InvalidScale(String),
    /// The image size is outside [`MIN_SIZE`]..=[`MAX_SIZE`].
    #[error(
        "invalid image size {width}x{height} (each side must be {MIN_SIZE} to {MAX_SIZE} pixels)"
    )]
    InvalidSize {
        /// Requested width.
        width: u32,
        /// Requested height.
        height: u32,
    },
    /// The embedded font could not be registered.
    #[error("cannot register the embedded font: {0}")]
    Font(String),
}

/// Smallest accepted image side in pixels.
pub const MIN_SIZE: u32 = 200;
/// Largest accepted image side in pixels.
pub const MAX_SIZE: u32 = 8000;

/// Registers the embedded DejaVu Sans under the family name the renderer uses, once per
/// process. plotters' `ab_glyph` backend has no fallback to system fonts, so text fails to
/// render until this has run.
pub fn ensure_fonts() -> Result<(), PlotError> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            let fonts: [(FontStyle, &str, &'static [u8]); 1] =
                [(FontStyle::Normal, "regular", dejavu::sans::regular())];
            for (style, name, bytes) in fonts {
                plotters::style::register_font(render::FONT_FAMILY, style, bytes)
                    .map_err(|_| format!("DejaVu Sans {name} is not a valid font"))?;
            }
            Ok(())
        })
        .clone()
        .map_err(PlotError::Font)
}

fn check_size(width: u32, height: u32) -> Result<(), PlotError> {
    let ok = |s: u32| (MIN_SIZE..=MAX_SIZE).contains(&s);
    if ok(width) && ok(height) {
        Ok(())
    } else {
        Err(PlotError::InvalidSize { width, height })
    }
}

/// Renders the plot to an SVG document in memory.
pub fn render_svg(plot: &LinePlot, width: u32, height: u32) -> Result<String, PlotError> {
    render_figure_svg(&Figure::single(plot), width, height)
}

/// Renders the figure to an SVG document in memory.
pub fn render_figure_svg(figure: &Figure, width: u32, height: u32) -> Result<String, PlotError> {
    check_size(width, height)?;
    ensure_fonts()?;
    let scales = figure.scales()?;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        render::render(&root, figure, &scales)?;
        root.present().map_err(render::render_error)?;
    }
    Ok(svg)
}

/// Renders the figure to a one-page PDF document in memory (the page is the image's size at
/// 96 pixels per inch).
pub fn render_figure_pdf(figure: &Figure, width: u32, height: u32) -> Result<Vec<u8>, PlotError> {
    check_size(width, height)?;
    ensure_fonts()?;
    let scales = figure.scales()?;
    let mut pdf = Vec::new();
    {
        let root = PdfBackend::new(&mut pdf, (width, height)).into_drawing_area();
        render::render(&root, figure, &scales)?;
        root.present().map_err(render::render_error)?;
    }
    Ok(pdf)
}

/// Writes the plot to `<path>.svg` and `<path>.png` (the extensions are appended, so a stem
/// may contain dots) and returns both paths. Both images are rendered to temporary files in
/// the target directory first and only then renamed into place, so a failure leaves no
/// partial file; an existing file of the same name is replaced only on success.
pub fn write_svg_and_png(
    plot: &LinePlot,
    path_without_extension: &Path,
    width: u32,
    height: u32,
) -> Result<(PathBuf, PathBuf), PlotError> {
    let figure = Figure::single(plot);
    let [svg, png] = write_formats(&figure, path_without_extension, width, height, false)?
        .try_into()
        .map_err(|_| PlotError::Render("expected two files".into()))?;
    Ok((svg, png))
}

/// The files of a figure written in every format.
#[derive(Debug, Clone, PartialEq)]
pub struct FigureFiles {
    /// The SVG (for the web and for editing).
    pub svg: PathBuf,
    /// The PNG (for quick viewing).
    pub png: PathBuf,
    /// The PDF (for papers).
    pub pdf: PathBuf,
}

impl FigureFiles {
    /// The three paths, SVG, PNG, PDF.
    pub fn paths(&self) -> [PathBuf; 3] {
        [self.svg.clone(), self.png.clone(), self.pdf.clone()]
    }
}

/// Writes the figure to `<path>.svg`, `<path>.png` and `<path>.pdf`, all or none: every file
/// is rendered to a temporary file beside its target first and renamed into place only when
/// all three rendered.
pub fn write_figure(
    figure: &Figure,
    path_without_extension: &Path,
    width: u32,
    height: u32,
) -> Result<FigureFiles, PlotError> {
    let [svg, png, pdf] = write_formats(figure, path_without_extension, width, height, true)?
        .try_into()
        .map_err(|_| PlotError::Render("expected three files".into()))?;
    Ok(FigureFiles { svg, png, pdf })
}

fn write_formats(
    figure: &Figure,
    path_without_extension: &Path,
    width: u32,
    height: u32,
    with_pdf: bool,
) -> Result<Vec<PathBuf>, PlotError> {
    let svg_path = with_suffix(path_without_extension, ".svg");
    let png_path = with_suffix(path_without_extension, ".png");

    let svg = render_figure_svg(figure, width, height)?;
    let svg_temp = TempFile::beside(&svg_path)?;
    svg_temp.write_all(svg.as_bytes())?;

    let png_temp = TempFile::beside(&png_path)?;
    render_png(figure, png_temp.path(), width, height).map_err(|e| match e {
        PlotError::Render(msg) => {
            PlotError::Render(format!("{msg} (writing {})", png_path.display()))
        }
        other => other,
    })?;
    png_temp.check_non_empty()?;

    let pdf_temp = if with_pdf {
        let pdf_path = with_suffix(path_without_extension, ".pdf");
        let pdf = render_figure_pdf(figure, width, height)?;
        let temp = TempFile::beside(&pdf_path)?;
        temp.write_all(&pdf)?;
        Some(temp)
    } else {
        None
    };

    let mut done = vec![svg_temp.commit()?, png_temp.commit()?];
    if let Some(temp) = pdf_temp {
        done.push(temp.commit()?);
    }
    Ok(done)
}

fn render_png(figure: &Figure, path: &Path, width: u32, height: u32) -> Result<(), PlotError> {
    ensure_fonts()?;
    let scales = figure.scales()?;
    let root = BitMapBackend::new(path, (width, height)).into_drawing_area();
    render::render(&root, figure, &scales)?;
    root.present().map_err(render::render_error)
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}
