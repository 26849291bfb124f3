//! Draws a [`Figure`] onto any plotters backend: the title, one chart per panel (axes with our
//! own ticks, shaded bands, lines with dash patterns and markers, a zero line) and one legend
//! column to the right, shared by the panels. The first panel spans the top; the others share
//! the row below it.
//!
//! Lines are drawn in pixel space (mapped through the chart, then cut by [`dash`]) because
//! plotters has no dash-dot style and restarts dashes per segment. No file handling here.

use std::ops::Range;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{
    KeyPointHint, KeyPointWeight, NoDefaultFormatting, Ranged, ValueFormatter,
};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::scale::{ResolvedScale, format_symlog_tick, format_tick, linear_ticks, log_ticks};
use super::style::{Assignment, LineStyle, Marker, Rgb, assign, dash};
use super::{AUTO_LEGEND_MAX, Figure, Legend, LinePlot, PlotError, Series};

/// The family name under which the embedded font is registered.
pub const FONT_FAMILY: &str = "sans-serif";

/// Turns any plotters error into ours.
pub fn render_error<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> PlotError {
    PlotError::Render(e.to_string())
}

/// One axis: a resolved scale over an axis-space interval, with precomputed ticks (data values).
#[derive(Debug, Clone)]
struct Axis {
    scale: ResolvedScale,
    lo_t: f64,
    hi_t: f64,
    ticks: Vec<f64>,
}

impl Ranged for Axis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let frac = (self.scale.forward(*value) - self.lo_t) / (self.hi_t - self.lo_t);
        // Keep wild values from overflowing the i32 pixel arithmetic downstream.
        let frac = if frac.is_finite() {
            frac.clamp(-1.0, 2.0)
        } else {
            0.0
        };
        limit.0 + (frac * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        match hint.weight() {
            KeyPointWeight::Bold => self.ticks.clone(),
            // Only our own ticks get grid lines; plotters' light lines would not match them.
            KeyPointWeight::Any => Vec::new(),
        }
    }

    fn range(&self) -> Range<f64> {
        self.scale.inverse(self.lo_t)..self.scale.inverse(self.hi_t)
    }
}

impl ValueFormatter<f64> for Axis {
    fn format(value: &f64) -> String {
        format_tick(*value)
    }
    fn format_ext(&self, value: &f64) -> String {
        match self.scale {
            ResolvedScale::SymLog(_) | ResolvedScale::Log => format_symlog_tick(*value),
            _ => format_tick(*value),
        }
    }
}

/// Finite `(x, y)` bounds of the data; y in axis space.
fn data_bounds(series: &[Series], scale: ResolvedScale) -> Option<(f64, f64, f64, f64)> {
    let mut b: Option<(f64, f64, f64, f64)> = None;
    for s in series {
        let band = s.band.iter().flat_map(|&(x, lo, hi)| [(x, lo), (x, hi)]);
        for (x, y) in s.points.iter().copied().chain(band) {
            let t = scale.forward(y);
            if !(x.is_finite() && t.is_finite()) {
                continue;
            }
            b = Some(match b {
                None => (x, x, t, t),
                Some((x0, x1, t0, t1)) => (x0.min(x), x1.max(x), t0.min(t), t1.max(t)),
            });
        }
    }
    b
}

/// Widens a degenerate interval so that it can be drawn.
fn widen(lo: f64, hi: f64) -> (f64, f64) {
    if hi > lo {
        (lo, hi)
    } else {
        let pad = (lo.abs() * 0.1).max(1.0);
        (lo - pad, hi + pad)
    }
}

fn axes(series: &[Series], scale: ResolvedScale) -> (Axis, Axis) {
    let (x0, x1, t0, t1) = data_bounds(series, scale).unwrap_or((0.0, 1.0, 0.0, 1.0));
    let (x0, x1) = widen(x0, x1);
    let x_axis = Axis {
        scale: ResolvedScale::Linear,
        lo_t: x0,
        hi_t: x1,
        ticks: linear_ticks(x0, x1, 8),
    };
    let (lo_t, hi_t) = match scale {
        ResolvedScale::Clip { lo, hi } => (lo, hi),
        _ => {
            let (t0, t1) = widen(t0, t1);
            let pad = 0.04 * (t1 - t0);
            (t0 - pad, t1 + pad)
        }
    };
    let ticks = match scale {
        ResolvedScale::SymLog(s) => s.ticks(scale.inverse(lo_t), scale.inverse(hi_t), 9),
        ResolvedScale::Log => log_ticks(scale.inverse(lo_t), scale.inverse(hi_t), 8),
        _ => linear_ticks(lo_t, hi_t, 8),
    };
    let y_axis = Axis {
        scale,
        lo_t,
        hi_t,
        ticks,
    };
    (x_axis, y_axis)
}

/// A legend line: sample colour, style and marker, and its text.
struct Entry {
    label: String,
    colour: Rgb,
    style: LineStyle,
    marker: Option<Marker>,
}

/// Grey used for legend entries that stand for a style, not a colour.
const STYLE_SAMPLE: Rgb = (60, 60, 60);

/// The legend of all panels' series (`series` concatenated, `a` their assignment): one entry
/// per distinct labelled line, or one per colour key and one per style key.
fn legend_entries(legend: &Legend, series: &[Series], a: &Assignment) -> Vec<Entry> {
    let mut per_series: Vec<Entry> = Vec::new();
    for (i, s) in series.iter().enumerate() {
        let dup = per_series.iter().any(|e| {
            e.label == s.label
                && e.colour == a.colours[i]
                && e.style == a.styles[i]
                && e.marker == a.markers[i]
        });
        if !s.label.is_empty() && !dup {
            per_series.push(Entry {
                label: s.label.clone(),
                colour: a.colours[i],
                style: a.styles[i],
                marker: a.markers[i],
            });
        }
    }
    let by_keys = match legend {
        Legend::PerSeries => None,
        Legend::ByKeys { style_name } => Some(style_name),
        Legend::Auto { style_name } => (per_series.len() > AUTO_LEGEND_MAX).then_some(style_name),
    };
    let Some(name) = by_keys else {
        return per_series;
    };
    let mut out: Vec<Entry> = a
        .colour_keys
        .iter()
        .enumerate()
        .filter(|(_, (k, _))| !k.is_empty())
        .map(|(i, (k, c))| Entry {
            label: k.clone(),
            colour: *c,
            style: LineStyle::Solid,
            marker: a.key_markers.get(i).copied(),
        })
        .collect();
    out.extend(a.style_keys.iter().map(|(k, st)| Entry {
        label: if name.is_empty() {
            k.clone()
        } else {
            format!("{name} = {k}")
        },
        colour: STYLE_SAMPLE,
        style: *st,
        marker: None,
    }));
    out
}

fn rgb(c: Rgb) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

/// Draws a pixel polyline in the given style.
fn stroke<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    pixels: &[(f64, f64)],
    colour: Rgb,
    style: LineStyle,
    width: u32,
) -> Result<(), PlotError> {
    let shape = ShapeStyle {
        color: rgb(colour).to_rgba(),
        filled: false,
        stroke_width: width,
    };
    if pixels.len() == 1 {
        let (x, y) = pixels[0];
        let dot = Circle::new(
            (x.round() as i32, y.round() as i32),
            width + 1,
            shape.filled(),
        );
        return root.draw(&dot).map_err(render_error);
    }
    let scale = f64::from(width) / 2.0;
    let pattern: Vec<f64> = style.pattern().iter().map(|l| l * scale).collect();
    for piece in dash(pixels, &pattern) {
        let path: Vec<(i32, i32)> = piece
            .iter()
            .map(|&(x, y)| (x.round() as i32, y.round() as i32))
            .collect();
        root.draw(&PathElement::new(path, shape))
            .map_err(render_error)?;
    }
    Ok(())
}

/// Draws one marker centred at `(x, y)` with half-size `r` pixels: filled shapes get a thin
/// white rim so that they stand out on lines and on each other.
fn draw_marker<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    (x, y): (f64, f64),
    marker: Marker,
    colour: Rgb,
    r: f64,
) -> Result<(), PlotError> {
    let p = |dx: f64, dy: f64| ((x + dx * r).round() as i32, (y + dy * r).round() as i32);
    let fill = rgb(colour).filled();
    let rim = WHITE.stroke_width(1);
    let line = rgb(colour).stroke_width(((r / 3.0).round() as u32).max(1));
    let polygon = |pts: Vec<(i32, i32)>| -> Result<(), PlotError> {
        root.draw(&Polygon::new(pts.clone(), fill))
            .map_err(render_error)?;
        let mut ring = pts;
        ring.push(ring[0]);
        root.draw(&PathElement::new(ring, rim))
            .map_err(render_error)
    };
    match marker {
        Marker::Circle => {
            let c = p(0.0, 0.0);
            root.draw(&Circle::new(c, r.round() as u32, fill))
                .map_err(render_error)?;
            root.draw(&Circle::new(c, r.round() as u32, rim))
                .map_err(render_error)
        }
        Marker::Ring => root
            .draw(&Circle::new(p(0.0, 0.0), r.round() as u32, line))
            .map_err(render_error),
        Marker::Square => {
            let k = 0.85;
            polygon(vec![p(-k, -k), p(k, -k), p(k, k), p(-k, k)])
        }
        Marker::Diamond => polygon(vec![p(0.0, -1.2), p(1.0, 0.0), p(0.0, 1.2), p(-1.0, 0.0)]),
        Marker::TriangleUp => polygon(vec![p(0.0, -1.15), p(1.05, 0.75), p(-1.05, 0.75)]),
        Marker::TriangleDown => polygon(vec![p(0.0, 1.15), p(1.05, -0.75), p(-1.05, -0.75)]),
        Marker::Cross => {
            let k = 0.9;
            root.draw(&PathElement::new(vec![p(-k, -k), p(k, k)], line))
                .map_err(render_error)?;
            root.draw(&PathElement::new(vec![p(-k, k), p(k, -k)], line))
                .map_err(render_error)
        }
        Marker::Plus => {
            root.draw(&PathElement::new(vec![p(-1.1, 0.0), p(1.1, 0.0)], line))
                .map_err(render_error)?;
            root.draw(&PathElement::new(vec![p(0.0, -1.1), p(0.0, 1.1)], line))
                .map_err(render_error)
        }
    }
}

/// Markers per line and panel.
const MARKERS_PER_LINE: usize = 6;

/// Where a series' markers go: `MARKERS_PER_LINE` places evenly spread across the pixel
/// range `[left, right]`, shifted by a fraction of a step that differs per series (a golden-
/// ratio sequence), so that markers of lines lying on top of each other do not hide each other.
/// Each place is the point of the polyline at that pixel column, if the line reaches it.
fn marker_places(
    runs: &[Vec<(f64, f64)>],
    left: f64,
    right: f64,
    series: usize,
) -> Vec<(f64, f64)> {
    let phase = 0.15 + 0.7 * ((series as f64 * 0.618_033_988_75) % 1.0);
    let step = (right - left) / MARKERS_PER_LINE as f64;
    let mut out = Vec::new();
    for k in 0..MARKERS_PER_LINE {
        let x = left + (k as f64 + phase) * step;
        'runs: for run in runs {
            for w in run.windows(2) {
                let (a, b) = (w[0], w[1]);
                if (a.0 <= x && x <= b.0) || (b.0 <= x && x <= a.0) {
                    let t = if b.0 == a.0 {
                        0.0
                    } else {
                        (x - a.0) / (b.0 - a.0)
                    };
                    out.push((x, a.1 + t * (b.1 - a.1)));
                    break 'runs;
                }
            }
        }
    }
    out
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

/// Clamps `y` into a clipped axis; other scales keep it.
fn clamp_to(scale: ResolvedScale, y: f64) -> f64 {
    match scale {
        ResolvedScale::Clip { lo, hi } => y.clamp(lo, hi),
        _ => y,
    }
}

/// Splits a series into runs of drawable points (clamped for a clipped axis), breaking the
/// line at each point the scale cannot place (non-finite, or not positive on a log axis).
fn finite_runs(points: &[(f64, f64)], scale: ResolvedScale) -> Vec<Vec<(f64, f64)>> {
    let mut runs = Vec::new();
    let mut run: Vec<(f64, f64)> = Vec::new();
    for &(x, y) in points {
        let y = clamp_to(scale, y);
        if x.is_finite() && scale.forward(y).is_finite() {
            run.push((x, y));
        } else if !run.is_empty() {
            runs.push(std::mem::take(&mut run));
        }
    }
    if !run.is_empty() {
        runs.push(run);
    }
    runs
}

/// A band as closed outlines (the upper edge left to right, then the lower edge back), one per
/// run of drawable rows, clamped like the lines on a clipped axis.
fn band_polygons(band: &[(f64, f64, f64)], scale: ResolvedScale) -> Vec<Vec<(f64, f64)>> {
    let mut out = Vec::new();
    let mut run: Vec<(f64, f64, f64)> = Vec::new();
    let close = |run: &mut Vec<(f64, f64, f64)>, out: &mut Vec<Vec<(f64, f64)>>| {
        if run.len() >= 2 {
            let mut poly: Vec<(f64, f64)> = run.iter().map(|&(x, _, hi)| (x, hi)).collect();
            poly.extend(run.iter().rev().map(|&(x, lo, _)| (x, lo)));
            out.push(poly);
        }
        run.clear();
    };
    for &(x, lo, hi) in band {
        let (lo, hi) = (clamp_to(scale, lo), clamp_to(scale, hi));
        let ok = |v: f64| scale.forward(v).is_finite();
        if x.is_finite() && ok(lo) && ok(hi) {
            run.push((x, lo, hi));
        } else {
            close(&mut run, &mut out);
        }
    }
    close(&mut run, &mut out);
    out
}

/// The legend's geometry, shared by the width estimate and the drawing.
struct LegendLayout<'a> {
    font: FontDesc<'a>,
    sample_len: u32,
    pad: u32,
    line_h: i32,
    marker: f64,
}

impl LegendLayout<'_> {
    fn new(m: &Metrics) -> Self {
        LegendLayout {
            font: (FONT_FAMILY, m.legend).into_font(),
            sample_len: (m.legend * 3.2).round() as u32,
            pad: (m.legend * 0.8).round() as u32,
            line_h: (m.legend * 1.6).round() as i32,
            marker: m.marker,
        }
    }

    /// Width of the legend column (0 without entries), at most two fifths of the image.
    fn width<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        entries: &[Entry],
    ) -> Result<u32, PlotError> {
        if entries.is_empty() {
            return Ok(0);
        }
        let style = self.font.clone().into_text_style(root);
        let mut text_w = 0u32;
        for e in entries {
            let (w, _) = root
                .estimate_text_size(&e.label, &style)
                .map_err(render_error)?;
            text_w = text_w.max(w);
        }
        let (width, _) = root.dim_in_pixel();
        Ok((self.sample_len + text_w + 3 * self.pad).min(width * 2 / 5))
    }

    /// Draws the entries from the top of `area`; those that do not fit are counted instead.
    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        area: &DrawingArea<DB, Shift>,
        entries: &[Entry],
        top_margin: i32,
        line_width: u32,
    ) -> Result<(), PlotError> {
        let (lx, ly) = area.get_base_pixel();
        let (_, area_h) = area.dim_in_pixel();
        let top = ly + top_margin + self.line_h / 2;
        let fit = ((area_h as i32 - 2 * self.line_h) / self.line_h).max(1) as usize;
        let shown = if entries.len() > fit {
            fit.saturating_sub(1).max(1)
        } else {
            entries.len()
        };
        let text_style = self
            .font
            .clone()
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        let x0 = f64::from(lx) + f64::from(self.pad / 2);
        let x1 = x0 + f64::from(self.sample_len);
        for (k, e) in entries.iter().take(shown).enumerate() {
            let y = top + k as i32 * self.line_h;
            let sample = [(x0, f64::from(y)), (x1, f64::from(y))];
            stroke(root, &sample, e.colour, e.style, line_width)?;
            if let Some(marker) = e.marker {
                let centre = ((x0 + x1) / 2.0, f64::from(y));
                draw_marker(root, centre, marker, e.colour, self.marker)?;
            }
            let text_pos = (x1.round() as i32 + self.pad as i32 / 2, y);
            root.draw(&Text::new(e.label.clone(), text_pos, text_style.clone()))
                .map_err(render_error)?;
        }
        if shown < entries.len() {
            let y = top + shown as i32 * self.line_h;
            let text = format!("… and {} more", entries.len() - shown);
            root.draw(&Text::new(text, (x0.round() as i32, y), text_style))
                .map_err(render_error)?;
        }
        Ok(())
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
