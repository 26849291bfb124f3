//! The axes of a panel: an axis over a resolved scale that plotters can draw with our own
//! ticks and tick labels, and the data bounds (widened where empty or flat) it spans.
//!
//! Why apart from the drawing (`render.rs`): the mapping from data to axis is the part with
//! arithmetic to get right (log, symlog and clipped scales), read without the drawing code.

use std::ops::Range;

use plotters::coord::ranged1d::{
    KeyPointHint, KeyPointWeight, NoDefaultFormatting, Ranged, ValueFormatter,
};

use super::super::Series;
use super::super::scale::{
    ResolvedScale, format_symlog_tick, format_tick, linear_ticks, log_ticks,
};

/// One axis: a resolved scale over an axis-space interval, with precomputed ticks (data values).
#[derive(Debug, Clone)]
pub(super) struct Axis {
    scale: ResolvedScale,
    pub(super) lo_t: f64,
    pub(super) hi_t: f64,
    pub(super) ticks: Vec<f64>,
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

pub(super) fn axes(series: &[Series], scale: ResolvedScale) -> (Axis, Axis) {
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
