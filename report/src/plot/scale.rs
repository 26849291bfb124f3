//! Axis scales: the symlog transform, the choice of y-scale, tick placement and tick labels.
//!
//! Holds no drawing code: everything here is plain arithmetic on `f64`, so it can be tested
//! without rendering. Tick labels always show *real* data values, whatever the transform.

use std::f64::consts::LN_10;

use super::{PlotError, Series};

/// How the y-axis maps data values to the page.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum YScale {
    /// Plain linear axis over the data range.
    Linear,
    /// `sign(y) * log10(1 + |y| / linthresh)`: logarithmic in `|y|` far from zero, linear within
    /// about `linthresh` of it, so -1e6 and -50 share one readable axis.
    SymLog {
        /// Half-width of the (approximately) linear band around zero; must be positive.
        linthresh: f64,
    },
    /// Linear axis over `[lo, hi]`; values outside are drawn on the nearest edge.
    Clip {
        /// Lower edge of the axis.
        lo: f64,
        /// Upper edge of the axis.
        hi: f64,
    },
    /// Symlog when the data span more than [`AUTO_SYMLOG_RATIO`] (three orders of magnitude),
    /// linear otherwise.
    Auto,
    /// `log10(y)`, for positive quantities spanning orders of magnitude (variances); points
    /// at or below zero are not drawn and break the line.
    Log,
}

/// `Auto` switches to symlog when the largest `|y|` exceeds the smallest per-series median `|y|`
/// by more than this factor: then a linear axis would squash the quiet series into one pixel row.
pub const AUTO_SYMLOG_RATIO: f64 = 1e3;

/// A scale with every parameter decided, ready to draw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ResolvedScale {
    /// Linear over the data range.
    Linear,
    /// Symlog with the given transform.
    SymLog(SymLog),
    /// Linear over `[lo, hi]`, values clamped into it.
    Clip {
        /// Lower edge.
        lo: f64,
        /// Upper edge.
        hi: f64,
    },
    /// `log10(y)`; not defined at or below zero.
    Log,
}

impl ResolvedScale {
    /// The note appended to the y-axis label, so that a reader of the figure knows how to read
    /// it (`None` for a plain linear axis).
    pub fn axis_note(&self) -> Option<String> {
        match self {
            ResolvedScale::Linear => None,
            ResolvedScale::SymLog(s) => Some(format!(
                "symlog scale, linear within ±{}",
                format_tick(s.linthresh())
            )),
            ResolvedScale::Clip { lo, hi } => Some(format!(
                "clipped to [{}, {}]",
                format_tick(*lo),
                format_tick(*hi)
            )),
            ResolvedScale::Log => Some("log scale".to_string()),
        }
    }

    /// Maps a data value to axis space (the identity for linear scales); NaN where the scale
    /// is not defined (zero and below on a log scale).
    pub fn forward(&self, y: f64) -> f64 {
        match self {
            ResolvedScale::SymLog(s) => s.forward(y),
            ResolvedScale::Log if y > 0.0 => y.log10(),
            ResolvedScale::Log => f64::NAN,
            _ => y,
        }
    }

    /// Maps an axis-space value back to a data value.
    pub fn inverse(&self, t: f64) -> f64 {
        match self {
            ResolvedScale::SymLog(s) => s.inverse(t),
            ResolvedScale::Log => 10f64.powf(t),
            _ => t,
        }
    }
}

impl YScale {
    /// Decides the scale for these series: validates explicit parameters and, for `Auto`, looks
    /// at the spread of the finite data.
    pub fn resolve(&self, series: &[Series]) -> Result<ResolvedScale, PlotError> {
        match *self {
            YScale::Linear => Ok(ResolvedScale::Linear),
            YScale::SymLog { linthresh } => Ok(ResolvedScale::SymLog(SymLog::new(linthresh)?)),
            YScale::Clip { lo, hi } => {
                if lo.is_finite() && hi.is_finite() && lo < hi {
                    Ok(ResolvedScale::Clip { lo, hi })
                } else {
                    Err(PlotError::InvalidScale(format!(
                        "clip range [{lo}, {hi}] must be finite with lo < hi"
                    )))
                }
            }
            YScale::Auto => Ok(auto_scale(series)),
            YScale::Log => Ok(ResolvedScale::Log),
        }
    }
}

/// `Auto`'s rule: compare the largest magnitude with the quietest series' typical small
/// magnitude (its 10th percentile of `|y|`: for an ELBO trajectory, about where it settles).
fn auto_scale(series: &[Series]) -> ResolvedScale {
    let mut max_abs: f64 = 0.0;
    let mut quiet = f64::INFINITY;
    for s in series {
        let mut mags: Vec<f64> = s
            .points
            .iter()
            .map(|p| p.1.abs())
            .filter(|m| m.is_finite())
            .collect();
        if mags.is_empty() {
            continue;
        }
        mags.sort_by(f64::total_cmp);
        max_abs = max_abs.max(mags[mags.len() - 1]);
        let low = mags[mags.len() / 10];
        if low > 0.0 {
            quiet = quiet.min(low);
        }
    }
    if quiet.is_finite() && max_abs > AUTO_SYMLOG_RATIO * quiet {
        // A power of ten at or below the quiet magnitude keeps those series out of the linear
        // band, where they are still spread logarithmically; but no more than
        // `MAX_SYMLOG_DECADES` decades below the largest value, or data crossing zero would
        // spend the axis on decades of near-zero noise.
        let floor = max_abs * 10f64.powi(-MAX_SYMLOG_DECADES);
        let linthresh = 10f64.powf(quiet.max(floor).log10().floor());
        if let Ok(s) = SymLog::new(linthresh) {
            return ResolvedScale::SymLog(s);
        }
    }
    ResolvedScale::Linear
}

/// The most decades `Auto` lets a symlog axis span above its linear band.
pub const MAX_SYMLOG_DECADES: i32 = 6;

/// The symmetric-log transform `t = sign(y) * log10(1 + |y| / linthresh)`.
///
/// It is odd, strictly increasing and smooth except for a kink-free join at zero (slope
/// `1 / (linthresh ln 10)` there), and its inverse is closed-form.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SymLog {
    linthresh: f64,
}

impl SymLog {
    /// A symlog transform with the given linear threshold (positive and finite).
    pub fn new(linthresh: f64) -> Result<Self, PlotError> {
        if linthresh.is_finite() && linthresh > 0.0 {
            Ok(SymLog { linthresh })
        } else {
            Err(PlotError::InvalidScale(format!(
                "symlog linthresh must be positive and finite, got {linthresh}"
            )))
        }
    }

    /// The linear threshold.
    pub fn linthresh(&self) -> f64 {
        self.linthresh
    }

    /// Data value to axis value.
    pub fn forward(&self, y: f64) -> f64 {
        let t = (y.abs() / self.linthresh).ln_1p() / LN_10;
        if y < 0.0 { -t } else { t }
    }

    /// Axis value to data value; `inverse(forward(y)) == y` up to rounding.
    pub fn inverse(&self, t: f64) -> f64 {
        let y = self.linthresh * (t.abs() * LN_10).exp_m1();
        if t < 0.0 { -y } else { y }
    }

    /// Tick positions (data values) for the data interval `[lo, hi]`: zero when inside, and
    /// signed powers of ten at or above `linthresh`, thinned to every k-th decade so that at
    /// most about `max_ticks` remain. Falls back to 1-2-5 steps on narrow ranges.
    pub fn ticks(&self, lo: f64, hi: f64, max_ticks: usize) -> Vec<f64> {
        let max_ticks = max_ticks.max(3);
        let mut decades = Vec::new();
        let top = lo.abs().max(hi.abs());
        if top.is_finite() && top > 0.0 {
            let first = self.linthresh.log10().ceil() as i32;
            let last = top.log10().floor() as i32;
            for e in first..=last {
                let m = 10f64.powi(e);
                for v in [-m, m] {
                    if v >= lo && v <= hi {
                        decades.push((e, v));
                    }
                }
            }
        }
        let mut ticks: Vec<f64>;
        if decades.len() >= 2 {
            // Keep decades whose exponent is a multiple of the stride, so ticks stay evenly
            // spaced on the page.
            let mut stride = 1;
            while decades.iter().filter(|(e, _)| e % stride == 0).count() + 1 > max_ticks {
                stride += 1;
            }
            ticks = decades
                .iter()
                .filter(|(e, _)| e % stride == 0)
                .map(|d| d.1)
                .collect();
            if lo <= 0.0 && hi >= 0.0 {
                ticks.push(0.0);
            }
            if ticks.len() < 2 {
                ticks = linear_ticks(lo, hi, max_ticks);
            }
        } else {
            ticks = linear_ticks(lo, hi, max_ticks);
        }
        ticks.sort_by(f64::total_cmp);
        ticks.dedup();
        ticks
    }
}

/// Ticks for a log axis over the positive data interval `[lo, hi]`: powers of ten, thinned to
/// every k-th decade so that at most about `max_ticks` remain; 1, 2 and 5 times powers of ten
/// when fewer than two decades fall inside; plain linear ticks on a very narrow range.
pub fn log_ticks(lo: f64, hi: f64, max_ticks: usize) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return linear_ticks(lo, hi, max_ticks);
    }
    let max_ticks = max_ticks.max(2);
    let first = lo.log10().ceil() as i32;
    let last = hi.log10().floor() as i32;
    if last - first >= 1 {
        let count = (last - first + 1) as usize;
        let stride = count.div_ceil(max_ticks).max(1) as i32;
        return (first..=last)
            .filter(|e| (e - first) % stride == 0)
            .map(|e| 10f64.powi(e))
            .collect();
    }
    let mut ticks: Vec<f64> = (first - 1..=last + 1)
        .flat_map(|e| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(e)))
        .filter(|v| *v >= lo * (1.0 - 1e-12) && *v <= hi * (1.0 + 1e-12))
        .collect();
    if ticks.len() < 2 {
        ticks = linear_ticks(lo, hi, max_ticks);
    }
    ticks
}

/// "Nice" ticks (1, 2 or 5 times a power of ten) inside `[lo, hi]`, at most about `max_ticks`.
pub fn linear_ticks(lo: f64, hi: f64, max_ticks: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return if lo.is_finite() { vec![lo] } else { Vec::new() };
    }
    let step = nice_step((hi - lo) / max_ticks.max(2) as f64);
    let start = (lo / step).ceil() as i64;
    let end = (hi / step).floor() as i64;
    // `step >= (hi - lo) / max_ticks` bounds the count; the check guards against saturated
    // casts at extreme magnitudes all the same.
    if end.saturating_sub(start) > 4 * max_ticks as i64 + 4 {
        return vec![lo, hi];
    }
    (start..=end)
        .map(|i| {
            let v = i as f64 * step;
            // Snap rounding noise such as 0.30000000000000004 and -0.0.
            let r = (v / step).round() * step;
            if r == 0.0 { 0.0 } else { r }
        })
        .collect()
}

/// The smallest of 1, 2, 5 times a power of ten that is at least `raw`.
fn nice_step(raw: f64) -> f64 {
    let base = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * base >= raw * (1.0 - 1e-12) {
            return m * base;
        }
    }
    10.0 * base
}

/// Formats a tick value for a label: plain decimals for moderate magnitudes, `10ⁿ` with
/// superscript exponents for powers of ten far from one, `m×10ⁿ` for other large or small
/// values. Negative values use the typographic minus sign `−`.
pub fn format_tick(v: f64) -> String {
    if v == 0.0 {
        return "0".to_string();
    }
    if !v.is_finite() {
        return format!("{v}");
    }
    let sign = if v < 0.0 { "−" } else { "" };
    let a = v.abs();
    let e = a.log10().floor() as i32;
    let mantissa = a / 10f64.powi(e);
    let mantissa = (mantissa * 1e6).round() / 1e6;
    if (-3..=4).contains(&e) {
        // At most 6 significant decimals, trailing zeros removed.
        let decimals = (5 - e).clamp(0, 10) as usize;
        let s = format!("{a:.decimals$}");
        let s = if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        };
        return format!("{sign}{s}");
    }
    let (mantissa, e) = if mantissa >= 10.0 {
        (mantissa / 10.0, e + 1)
    } else {
        (mantissa, e)
    };
    if (mantissa - 1.0).abs() < 1e-9 {
        format!("{sign}10{}", superscript(e))
    } else {
        let m = format!("{mantissa:.3}");
        let m = m.trim_end_matches('0').trim_end_matches('.');
        format!("{sign}{m}×10{}", superscript(e))
    }
}

/// Formats a tick on a symlog axis: like [`format_tick`], except that powers of ten from 10³
/// up (and 10⁻³ down) are always written `10ⁿ`, so a decade axis reads uniformly.
pub fn format_symlog_tick(v: f64) -> String {
    let a = v.abs();
    if a > 0.0 && a.is_finite() {
        let e = a.log10().round() as i32;
        if e.abs() >= 3 && (a / 10f64.powi(e) - 1.0).abs() < 1e-9 {
            let sign = if v < 0.0 { "−" } else { "" };
            return format!("{sign}10{}", superscript(e));
        }
    }
    format_tick(v)
}

/// An integer in Unicode superscript digits (`-12` becomes `⁻¹²`).
fn superscript(e: i32) -> String {
    const DIGITS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    let mut out = String::new();
    if e < 0 {
        out.push('⁻');
    }
    for c in e.unsigned_abs().to_string().chars() {
        out.push(DIGITS[c.to_digit(10).unwrap_or(0) as usize]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_real_values() {
        assert_eq!(format_tick(-1e6), "−10⁶");
        assert_eq!(format_tick(1e-5), "10⁻⁵");
        assert_eq!(format_tick(-100.0), "−100");
        assert_eq!(format_tick(2500.0), "2500");
        assert_eq!(format_tick(0.25), "0.25");
        assert_eq!(format_tick(-2e6), "−2×10⁶");
        assert_eq!(format_tick(10000.0), "10000");
        assert_eq!(format_symlog_tick(-10000.0), "−10⁴");
        assert_eq!(format_symlog_tick(-100.0), "−100");
        assert_eq!(format_symlog_tick(2000.0), "2000");
    }

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(0.3), 0.5);
        assert_eq!(nice_step(1.0), 1.0);
        assert_eq!(nice_step(1100.0), 2000.0);
        assert_eq!(
            linear_ticks(0.0, 10000.0, 6),
            vec![0.0, 2000.0, 4000.0, 6000.0, 8000.0, 10000.0]
        );
    }
}
