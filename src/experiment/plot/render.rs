//! Draws a [`LinePlot`] onto any plotters backend: title, axes with our own ticks, lines with
//! dash patterns, a zero line and a legend column to the right of the plot.
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

use super::scale::{ResolvedScale, format_symlog_tick, format_tick, linear_ticks};
use super::style::{LineStyle, Rgb, assign, dash};
use super::{AUTO_LEGEND_MAX, Legend, LinePlot, PlotError};

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
            ResolvedScale::SymLog(_) => format_symlog_tick(*value),
            _ => format_tick(*value),
        }
    }
}

/// Finite `(x, y)` bounds of the data; y in axis space.
fn data_bounds(plot: &LinePlot, scale: ResolvedScale) -> Option<(f64, f64, f64, f64)> {
    let mut b: Option<(f64, f64, f64, f64)> = None;
    for s in &plot.series {
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

fn axes(plot: &LinePlot, scale: ResolvedScale) -> (Axis, Axis) {
    let (x0, x1, t0, t1) = data_bounds(plot, scale).unwrap_or((0.0, 1.0, 0.0, 1.0));
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

/// A legend line: sample colour and style, and its text.
struct Entry {
    label: String,
    colour: Rgb,
    style: LineStyle,
}

/// Grey used for legend entries that stand for a style, not a colour.
const STYLE_SAMPLE: Rgb = (60, 60, 60);

fn legend_entries(plot: &LinePlot, colours: &[Rgb], styles: &[LineStyle]) -> Vec<Entry> {
    let labelled = plot.series.iter().filter(|s| !s.label.is_empty()).count();
    let by_keys = match &plot.legend {
        Legend::PerSeries => None,
        Legend::ByKeys { style_name } => Some(style_name),
        Legend::Auto { style_name } => (labelled > AUTO_LEGEND_MAX).then_some(style_name),
    };
    match by_keys {
        None => {
            let mut out: Vec<Entry> = Vec::new();
            for (i, s) in plot.series.iter().enumerate() {
                let dup = out
                    .iter()
                    .any(|e| e.label == s.label && e.colour == colours[i] && e.style == styles[i]);
                if !s.label.is_empty() && !dup {
                    out.push(Entry {
                        label: s.label.clone(),
                        colour: colours[i],
                        style: styles[i],
                    });
                }
            }
            out
        }
        Some(name) => {
            let a = assign(&plot.series);
            let mut out: Vec<Entry> = a
                .colour_keys
                .iter()
                .filter(|(k, _)| !k.is_empty())
                .map(|(k, c)| Entry {
                    label: k.clone(),
                    colour: *c,
                    style: LineStyle::Solid,
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
            }));
            out
        }
    }
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

/// Font sizes and line widths, scaled with the image height (tuned at 600 pixels).
struct Metrics {
    title: f64,
    label: f64,
    desc: f64,
    legend: f64,
    line: u32,
}

impl Metrics {
    fn for_size(width: u32, height: u32) -> Self {
        // Square-root scaling: small figures keep legible text, large ones do not shout.
        let s = (f64::from(height.min(width * 3 / 4)) / 600.0)
            .sqrt()
            .clamp(0.6, 2.5);
        Metrics {
            title: 22.0 * s,
            label: 15.0 * s,
            desc: 16.0 * s,
            legend: 15.0 * s,
            line: ((2.0 * s).round() as u32).max(1),
        }
    }
}

/// Splits a series into runs of drawable points (clamped for a clipped axis), breaking the
/// line at each non-finite point.
fn finite_runs(points: &[(f64, f64)], scale: ResolvedScale) -> Vec<Vec<(f64, f64)>> {
    let mut runs = Vec::new();
    let mut run: Vec<(f64, f64)> = Vec::new();
    for &(x, y) in points {
        let y = match scale {
            ResolvedScale::Clip { lo, hi } => y.clamp(lo, hi),
            _ => y,
        };
        if x.is_finite() && y.is_finite() {
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
/// run of finite rows, clamped like the lines on a clipped axis.
fn band_polygons(band: &[(f64, f64, f64)], scale: ResolvedScale) -> Vec<Vec<(f64, f64)>> {
    let clamp = |y: f64| match scale {
        ResolvedScale::Clip { lo, hi } => y.clamp(lo, hi),
        _ => y,
    };
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
        let (lo, hi) = (clamp(lo), clamp(hi));
        if x.is_finite() && lo.is_finite() && hi.is_finite() {
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
}

impl LegendLayout<'_> {
    fn new(m: &Metrics) -> Self {
        LegendLayout {
            font: (FONT_FAMILY, m.legend).into_font(),
            sample_len: (m.legend * 2.6).round() as u32,
            pad: (m.legend * 0.8).round() as u32,
            line_h: (m.legend * 1.6).round() as i32,
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
        let shown = entries.len().min(fit);
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

/// Draws the whole plot onto `root`: title, legend column, axes and mesh, zero line, series.
pub fn render<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    plot: &LinePlot,
    scale: ResolvedScale,
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
        .titled(&plot.title, title_font)
        .map_err(render_error)?;

    let assignment = assign(&plot.series);
    let entries = legend_entries(plot, &assignment.colours, &assignment.styles);
    let legend = LegendLayout::new(&m);
    let legend_w = legend.width(root, &entries)?;
    let (main, legend_area) = body.split_horizontally(width - legend_w);

    let (x_axis, y_axis) = axes(plot, scale);
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
    let mut chart = ChartBuilder::on(&main)
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

    // A zero line helps reading signs (gradients) and symlog axes.
    if y_axis.lo_t < 0.0 && y_axis.hi_t > 0.0 {
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
            let c = assignment.colours[i];
            root.draw(&Polygon::new(pixels, rgb(c).mix(0.15).filled()))
                .map_err(render_error)?;
        }
    }
    for (i, s) in plot.series.iter().enumerate() {
        for run in finite_runs(&s.points, scale) {
            let pixels: Vec<(f64, f64)> = run.into_iter().map(to_px).collect();
            let (colour, style) = (assignment.colours[i], assignment.styles[i]);
            stroke(root, &pixels, colour, style, m.line)?;
        }
    }

    legend.draw(root, &legend_area, &entries, margin as i32, m.line)
}
