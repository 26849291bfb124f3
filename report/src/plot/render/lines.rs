//! How a series is drawn in pixel space: strokes with dash patterns, markers and their
//! places along a line, the runs of points a scale can place, and the polygons of shaded
//! bands.
//!
//! Why apart from the panels (`render.rs`): plotters has no dash-dot style and restarts
//! dashes per segment, so lines are cut here; a panel only says what to draw.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::super::PlotError;
use super::super::scale::ResolvedScale;
use super::super::style::{LineStyle, Marker, Rgb, dash};
use super::render_error;

pub(super) fn rgb(c: Rgb) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

/// Draws a pixel polyline in the given style.
pub(super) fn stroke<DB: DrawingBackend>(
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
pub(super) fn draw_marker<DB: DrawingBackend>(
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
pub(super) fn marker_places(
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

/// Clamps `y` into a clipped axis; other scales keep it.
fn clamp_to(scale: ResolvedScale, y: f64) -> f64 {
    match scale {
        ResolvedScale::Clip { lo, hi } => y.clamp(lo, hi),
        _ => y,
    }
}

/// Splits a series into runs of drawable points (clamped for a clipped axis), breaking the
/// line at each point the scale cannot place (non-finite, or not positive on a log axis).
pub(super) fn finite_runs(points: &[(f64, f64)], scale: ResolvedScale) -> Vec<Vec<(f64, f64)>> {
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
pub(super) fn band_polygons(
    band: &[(f64, f64, f64)],
    scale: ResolvedScale,
) -> Vec<Vec<(f64, f64)>> {
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
