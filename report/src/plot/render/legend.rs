//! The legend column shared by a figure's panels: which entries it lists (one per labelled
//! line, or one per colour key and per style key), its geometry and its drawing.
//!
//! Why apart from the panels (`render.rs`): the legend is laid out once for all panels,
//! its width known before any panel is placed.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::super::style::{Assignment, LineStyle, Marker, Rgb};
use super::super::{AUTO_LEGEND_MAX, Legend, PlotError, Series};
use super::lines::{draw_marker, stroke};
use super::{FONT_FAMILY, Metrics, render_error};

/// A legend line: sample colour, style and marker, and its text.
pub(super) struct Entry {
    label: String,
    colour: Rgb,
    style: LineStyle,
    marker: Option<Marker>,
}

/// Grey used for legend entries that stand for a style, not a colour.
const STYLE_SAMPLE: Rgb = (60, 60, 60);

/// The legend of all panels' series (`series` concatenated, `a` their assignment): one entry
/// per distinct labelled line, or one per colour key and one per style key.
pub(super) fn legend_entries(legend: &Legend, series: &[Series], a: &Assignment) -> Vec<Entry> {
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

/// The legend's geometry, shared by the width estimate and the drawing.
pub(super) struct LegendLayout<'a> {
    font: FontDesc<'a>,
    sample_len: u32,
    pad: u32,
    line_h: i32,
    marker: f64,
}

impl LegendLayout<'_> {
    pub(super) fn new(m: &Metrics) -> Self {
        LegendLayout {
            font: (FONT_FAMILY, m.legend).into_font(),
            sample_len: (m.legend * 3.2).round() as u32,
            pad: (m.legend * 0.8).round() as u32,
            line_h: (m.legend * 1.6).round() as i32,
            marker: m.marker,
        }
    }

    /// Width of the legend column (0 without entries), at most two fifths of the image.
    pub(super) fn width<DB: DrawingBackend>(
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
    pub(super) fn draw<DB: DrawingBackend>(
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
