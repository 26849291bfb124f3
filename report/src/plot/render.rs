//! Draws a [`Figure`] onto any plotters backend: the title, one chart per panel (axes with our
//! own ticks, shaded bands, lines with dash patterns and markers, a zero line) and one legend
//! column to the right, shared by the panels. The first panel spans the top; the others share
//! the row below it.
//!
//! Lines are drawn in pixel space (mapped through the chart, then cut by [`dash`]) because
//! plotters has no dash-dot style and restarts dashes per segment. No file handling here.

use plotters::coord::Shift;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::prelude::*;

use super::scale::ResolvedScale;
#[cfg(doc)]
use super::style::dash;
use super::style::{LineStyle, Marker, Rgb, assign};
use super::{Figure, LinePlot, PlotError, Series};

mod axes;
mod legend;
mod lines;

use axes::axes;
use legend::{LegendLayout, legend_entries};
use lines::{band_polygons, draw_marker, finite_runs, marker_places, rgb, stroke};

/// The family name under which the embedded font is registered.
pub const FONT_FAMILY: &str = "sans-serif";

/// Turns any plotters error into ours.
pub fn render_error<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> PlotError {
    PlotError::Render(e.to_string())
}

/// Font sizes and line widths, scaled with the image height (tuned at 600 pixels).
struct Metrics {
    title: f64,
    panel_title: f64,
    label: f64,
    desc: f64,
    legend: f64,
    line: u32,
    marker: f64,
}

impl Metrics {
    fn for_size(width: u32, height: u32) -> Self {
        // Square-root scaling: small figures keep legible text, large ones do not shout.
        let s = (f64::from(height.min(width * 3 / 4)) / 600.0)
            .sqrt()
            .clamp(0.6, 2.5);
        Metrics {
            title: 22.0 * s,
            panel_title: 17.0 * s,
            label: 15.0 * s,
            desc: 16.0 * s,
            legend: 15.0 * s,
            line: ((2.0 * s).round() as u32).max(1),
            marker: (4.5 * s).max(3.0),
        }
    }
}

/// What a panel draws its series with: their colours, styles and markers.
struct Looks<'a> {
    colours: &'a [Rgb],
    styles: &'a [LineStyle],
    markers: &'a [Option<Marker>],
    /// Index of the panel's first series among all the figure's series.
    offset: usize,
}

/// Draws one panel into `area`: its heading, axes and mesh, zero line, bands, lines, markers.
fn draw_panel<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    area: &DrawingArea<DB, Shift>,
    plot: &LinePlot,
    scale: ResolvedScale,
    looks: &Looks<'_>,
    m: &Metrics,
) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    let body = if plot.title.is_empty() {
        area.clone()
    } else {
        area.titled(&plot.title, (FONT_FAMILY, m.panel_title))
            .map_err(render_error)?
    };
    let (x_axis, y_axis) = axes(&plot.series, scale);
    let label_font = (FONT_FAMILY, m.label).into_font();
    let label_style = label_font.clone().into_text_style(root);
    let mut tick_w = 0u32;
    for t in &y_axis.ticks {
        let (w, _) = root
            .estimate_text_size(&y_axis.format_ext(t), &label_style)
            .map_err(render_error)?;
        tick_w = tick_w.max(w);
    }
    let margin = (m.label * 0.7).round() as u32;
    let mut chart = ChartBuilder::on(&body)
        .margin(margin)
        // The last x tick label is centred on the right edge: leave room for half of it.
        .margin_right((m.label * 2.6).round() as u32)
        .x_label_area_size((m.label * 1.6 + m.desc * 1.8).round() as u32)
        .y_label_area_size(tick_w + (m.desc * 2.4).round() as u32)
        .build_cartesian_2d(x_axis.clone(), y_axis.clone())
        .map_err(render_error)?;
    chart
        .configure_mesh()
        .x_desc(plot.x_label.as_str())
        .y_desc(plot.y_axis_label()?)
        .label_style(label_font)
        .axis_desc_style((FONT_FAMILY, m.desc))
        .bold_line_style(RGBColor(225, 225, 225))
        .x_labels(x_axis.ticks.len().max(2))
        .y_labels(y_axis.ticks.len().max(2))
        .draw()
        .map_err(render_error)?;

    let to_px = |(x, y): (f64, f64)| {
        let (px, py) = chart.backend_coord(&(x, y));
        (f64::from(px), f64::from(py))
    };

    // A zero line helps reading signs (gradients, gaps) and symlog axes.
    if y_axis.lo_t < 0.0 && y_axis.hi_t > 0.0 && scale != ResolvedScale::Log {
        let ends = [to_px((x_axis.lo_t, 0.0)), to_px((x_axis.hi_t, 0.0))];
        stroke(root, &ends, (150, 150, 150), LineStyle::Solid, 1)?;
    }

    // Bands first, translucent, so that every line stays visible above them.
    for (i, s) in plot.series.iter().enumerate() {
        for polygon in band_polygons(&s.band, scale) {
            let pixels: Vec<(i32, i32)> = polygon
                .into_iter()
                .map(|p| {
                    let (x, y) = to_px(p);
                    (x.round() as i32, y.round() as i32)
                })
                .collect();
            let c = looks.colours[looks.offset + i];
            root.draw(&Polygon::new(pixels, rgb(c).mix(0.15).filled()))
                .map_err(render_error)?;
        }
    }
    let mut pixel_runs = Vec::with_capacity(plot.series.len());
    for (i, s) in plot.series.iter().enumerate() {
        let (colour, style) = (
            looks.colours[looks.offset + i],
            looks.styles[looks.offset + i],
        );
        let runs: Vec<Vec<(f64, f64)>> = finite_runs(&s.points, scale)
            .into_iter()
            .map(|run| run.into_iter().map(to_px).collect())
            .collect();
        for run in &runs {
            stroke(root, run, colour, style, m.line)?;
        }
        pixel_runs.push(runs);
    }
    // Markers last, above every line.
    let (left, _) = to_px((x_axis.lo_t, 0.0));
    let (right, _) = to_px((x_axis.hi_t, 0.0));
    for (i, runs) in pixel_runs.iter().enumerate() {
        let g = looks.offset + i;
        if let Some(marker) = looks.markers[g] {
            for place in marker_places(runs, left, right, g) {
                draw_marker(root, place, marker, looks.colours[g], m.marker)?;
            }
        }
    }
    Ok(())
}

/// Draws the whole figure onto `root`: title, legend column, then the panels (the first across
/// the top, the others side by side below it), each with its resolved y-scale.
pub fn render<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    figure: &Figure,
    scales: &[ResolvedScale],
) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    let (width, height) = root.dim_in_pixel();
    let m = Metrics::for_size(width, height);
    root.fill(&WHITE).map_err(render_error)?;

    let title_font = (FONT_FAMILY, m.title).into_font();
    let body = root
        .margin((m.title * 0.4).round() as u32, 0, 0, 0)
        .titled(&figure.title, title_font)
        .map_err(render_error)?;

    let all: Vec<Series> = figure
        .panels
        .iter()
        .flat_map(|p| p.series.iter().cloned())
        .collect();
    let assignment = assign(&all);
    let entries = legend_entries(&figure.legend, &all, &assignment);
    let legend = LegendLayout::new(&m);
    let legend_w = legend.width(root, &entries)?;
    let (main, legend_area) = body.split_horizontally(width - legend_w);

    let mut areas = Vec::with_capacity(figure.panels.len());
    if figure.panels.len() <= 1 {
        areas.push(main);
    } else {
        let (_, main_h) = main.dim_in_pixel();
        let (top, bottom) = main.split_vertically(main_h * 11 / 20);
        areas.push(top);
        let (bottom_w, _) = bottom.dim_in_pixel();
        let n = figure.panels.len() - 1;
        let breaks: Vec<i32> = (1..n).map(|k| (bottom_w as usize * k / n) as i32).collect();
        areas.extend(bottom.split_by_breakpoints(breaks, Vec::<i32>::new()));
    }
    let mut offset = 0;
    for ((panel, &scale), area) in figure.panels.iter().zip(scales).zip(&areas) {
        let looks = Looks {
            colours: &assignment.colours,
            styles: &assignment.styles,
            markers: &assignment.markers,
            offset,
        };
        draw_panel(root, area, panel, scale, &looks, &m)?;
        offset += panel.series.len();
    }

    let margin = (m.label * 0.7).round() as i32;
    legend.draw(root, &legend_area, &entries, margin, m.line)
}
