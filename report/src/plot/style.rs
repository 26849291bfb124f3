//! Colours, line styles and markers: which series gets which, and how a dash pattern is cut.
//!
//! Colours follow `colour_key` (one per estimator) and line styles follow `style_key` (one per
//! eta), as in the paper's Figure 2. When a figure has several colour keys, each key also gets
//! a marker shape, so that the series can be told apart in grayscale print and by readers who
//! do not see the colours. Nothing here draws; [`dash`] works on pixel polylines.

use super::Series;

/// An RGB colour.
pub type Rgb = (u8, u8, u8);

/// A line's dash pattern. The order of [`STYLE_CYCLE`] starts with the paper's Figure 2 order
/// for eta = 0.06, 0.1, 0.14, 0.18, 0.22: dashed, loosely dashed, solid, dash-dotted, dotted;
/// seven more patterns follow for comparisons with more etas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LineStyle {
    /// Unbroken line.
    Solid,
    /// Long dashes, short gaps.
    Dashed,
    /// Long dashes, long gaps.
    LooselyDashed,
    /// Dash, gap, dot, gap.
    DashDot,
    /// Dots.
    Dotted,
    /// Dash, gap, dot, gap, dot, gap.
    DashDotDot,
    /// Very long dashes, short gaps.
    LongDashed,
    /// Very long dash, gap, dot, gap.
    LongDashDot,
    /// Dots far apart.
    LooselyDotted,
    /// Dash, gap, dash, gap, dot, gap.
    DashDashDot,
    /// Short dashes, short gaps.
    DenselyDashed,
    /// Very long dash, gap, dot, gap, dot, gap.
    LongDashDotDot,
}

/// The styles given to distinct non-empty style keys, in order (repeating after twelve).
pub const STYLE_CYCLE: [LineStyle; 12] = [
    LineStyle::Dashed,
    LineStyle::LooselyDashed,
    LineStyle::Solid,
    LineStyle::DashDot,
    LineStyle::Dotted,
    LineStyle::DashDotDot,
    LineStyle::LongDashed,
    LineStyle::LongDashDot,
    LineStyle::LooselyDotted,
    LineStyle::DashDashDot,
    LineStyle::DenselyDashed,
    LineStyle::LongDashDotDot,
];

impl LineStyle {
    /// Alternating on/off lengths in pixels for a line of width 2 (empty: solid).
    pub fn pattern(&self) -> &'static [f64] {
        match self {
            LineStyle::Solid => &[],
            LineStyle::Dashed => &[9.0, 4.0],
            LineStyle::LooselyDashed => &[9.0, 10.0],
            LineStyle::DashDot => &[9.0, 4.0, 2.0, 4.0],
            LineStyle::Dotted => &[2.0, 3.5],
            LineStyle::DashDotDot => &[9.0, 3.5, 2.0, 3.5, 2.0, 3.5],
            LineStyle::LongDashed => &[20.0, 5.0],
            LineStyle::LongDashDot => &[20.0, 4.0, 2.0, 4.0],
            LineStyle::LooselyDotted => &[2.0, 8.0],
            LineStyle::DashDashDot => &[9.0, 3.5, 9.0, 3.5, 2.0, 3.5],
            LineStyle::DenselyDashed => &[4.5, 2.5],
            LineStyle::LongDashDotDot => &[20.0, 4.0, 2.0, 4.0, 2.0, 4.0],
        }
    }
}

/// A marker shape drawn at a few points along a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Marker {
    /// Filled circle.
    Circle,
    /// Filled square.
    Square,
    /// Filled triangle pointing up.
    TriangleUp,
    /// Filled diamond.
    Diamond,
    /// Filled triangle pointing down.
    TriangleDown,
    /// Diagonal cross.
    Cross,
    /// Upright cross.
    Plus,
    /// Open circle (a ring).
    Ring,
}

/// The markers in the order spare colour keys receive them.
pub const MARKER_CYCLE: [Marker; 8] = [
    Marker::Circle,
    Marker::Square,
    Marker::TriangleUp,
    Marker::Diamond,
    Marker::TriangleDown,
    Marker::Cross,
    Marker::Plus,
    Marker::Ring,
];

/// Fixed colours and markers for the estimators (a colour-blind-safe palette after Okabe and
/// Ito), plus the curves of Figure 1a, so a given estimator looks the same in every figure.
const FIXED_COLOURS: [(&str, Rgb, Marker); 8] = [
    ("dsgd", (0, 114, 178), Marker::Circle),
    ("fixed", (230, 159, 0), Marker::Square),
    ("score", (0, 158, 115), Marker::TriangleUp),
    ("rloo", (86, 180, 233), Marker::Cross),
    ("reparam", (213, 45, 0), Marker::Diamond),
    ("lyy18", (204, 121, 167), Marker::TriangleDown),
    ("true", (0, 140, 60), Marker::Plus),
    ("smoothed", (0, 0, 0), Marker::Ring),
];

/// Colours for other keys, in order of first appearance.
const SPARE_COLOURS: [Rgb; 6] = [
    (40, 40, 120),
    (110, 110, 110),
    (148, 103, 189),
    (140, 86, 75),
    (23, 170, 190),
    (120, 120, 0),
];

/// The colour and style chosen for each series, in series order.
#[derive(Debug, Clone)]
pub struct Assignment {
    /// Colour of series `i`.
    pub colours: Vec<Rgb>,
    /// Style of series `i`.
    pub styles: Vec<LineStyle>,
    /// Distinct colour keys with their colour, in order of first appearance.
    pub colour_keys: Vec<(String, Rgb)>,
    /// Distinct non-empty style keys with their style, in assignment order.
    pub style_keys: Vec<(String, LineStyle)>,
    /// The marker of each colour key (parallel to `colour_keys`); empty when the series have
    /// fewer than two colour keys (colour alone then tells nothing apart).
    pub key_markers: Vec<Marker>,
    /// Marker of series `i`, when markers are drawn.
    pub markers: Vec<Option<Marker>>,
}

/// Picks colours, styles and markers: fixed colours and markers by (case-insensitive) key,
/// spare colours and markers in order of first appearance (six colours and eight markers, so
/// 24 spare keys look different); style keys sorted numerically when all parse as numbers (so
/// eta 0.06 is always dashed), else in order of first appearance. An explicit `Series::style`
/// wins.
pub fn assign(series: &[Series]) -> Assignment {
    let fixed = |key: &str| {
        let lower = key.to_lowercase();
        FIXED_COLOURS.iter().find(|(k, ..)| *k == lower).copied()
    };
    // Spare keys take the markers no fixed key of these series has, then the rest in turn.
    let taken: Vec<Marker> = series
        .iter()
        .filter_map(|s| fixed(&s.colour_key).map(|f| f.2))
        .collect();
    let spare_markers: Vec<Marker> = MARKER_CYCLE
        .iter()
        .filter(|m| !taken.contains(m))
        .chain(MARKER_CYCLE.iter().filter(|m| taken.contains(m)))
        .copied()
        .collect();
    let mut colour_keys: Vec<(String, Rgb)> = Vec::new();
    let mut key_markers: Vec<Marker> = Vec::new();
    let mut spare = 0usize;
    for s in series {
        if colour_keys.iter().any(|(k, _)| *k == s.colour_key) {
            continue;
        }
        let (colour, marker) = match fixed(&s.colour_key) {
            Some((_, c, m)) => (c, m),
            None => {
                let c = SPARE_COLOURS[spare % SPARE_COLOURS.len()];
                let m = spare_markers[spare % spare_markers.len()];
                spare += 1;
                (c, m)
            }
        };
        colour_keys.push((s.colour_key.clone(), colour));
        key_markers.push(marker);
    }
    if colour_keys.len() < 2 {
        key_markers.clear();
    }

    let mut keys: Vec<String> = Vec::new();
    for s in series {
        if s.style.is_none() && !s.style_key.is_empty() && !keys.contains(&s.style_key) {
            keys.push(s.style_key.clone());
        }
    }
    let numeric: Option<Vec<f64>> = keys.iter().map(|k| k.trim().parse::<f64>().ok()).collect();
    if let Some(values) = numeric {
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
        keys = order.into_iter().map(|i| keys[i].clone()).collect();
    }
    let style_keys: Vec<(String, LineStyle)> = keys
        .into_iter()
        .enumerate()
        .map(|(i, k)| (k, STYLE_CYCLE[i % STYLE_CYCLE.len()]))
        .collect();

    let colours = series
        .iter()
        .map(|s| {
            colour_keys
                .iter()
                .find(|(k, _)| *k == s.colour_key)
                .map_or((0, 0, 0), |c| c.1)
        })
        .collect();
    let styles = series
        .iter()
        .map(|s| match s.style {
            Some(st) => st,
            None => style_keys
                .iter()
                .find(|(k, _)| *k == s.style_key)
                .map_or(LineStyle::Solid, |k| k.1),
        })
        .collect();
    let markers = series
        .iter()
        .map(|s| {
            colour_keys
                .iter()
                .position(|(k, _)| *k == s.colour_key)
                .and_then(|i| key_markers.get(i).copied())
        })
        .collect();
    Assignment {
        colours,
        styles,
        colour_keys,
        style_keys,
        key_markers,
        markers,
    }
}

/// Cuts a pixel polyline into the "on" pieces of a dash pattern. The pattern continues across
/// vertices, so short segments (dense data) still show the dashes.
pub fn dash(points: &[(f64, f64)], pattern: &[f64]) -> Vec<Vec<(f64, f64)>> {
    if points.len() < 2 {
        return if points.is_empty() {
            Vec::new()
        } else {
            vec![points.to_vec()]
        };
    }
    if pattern.is_empty() || pattern.iter().any(|l| l.is_nan() || *l <= 0.0) {
        return vec![points.to_vec()];
    }
    let mut pieces = Vec::new();
    let mut current: Vec<(f64, f64)> = vec![points[0]];
    let mut index = 0usize;
    let mut left = pattern[0];
    for w in points.windows(2) {
        let (a, b) = (w[0], w[1]);
        let len = ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt();
        let mut done = 0.0;
        while len - done > left {
            done += left;
            let t = done / len;
            let p = (a.0 + t * (b.0 - a.0), a.1 + t * (b.1 - a.1));
            if index.is_multiple_of(2) {
                current.push(p);
                pieces.push(std::mem::take(&mut current));
            } else {
                current = vec![p];
            }
            index = (index + 1) % pattern.len();
            left = pattern[index];
        }
        left -= len - done;
        if index.is_multiple_of(2) {
            current.push(b);
        }
    }
    if index.is_multiple_of(2) && current.len() >= 2 {
        pieces.push(current);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dash_cuts_a_straight_line_into_pattern_lengths() {
        let pieces = dash(&[(0.0, 0.0), (30.0, 0.0)], &[5.0, 5.0]);
        assert_eq!(pieces.len(), 3);
        for (i, p) in pieces.iter().enumerate() {
            assert!((p[0].0 - 10.0 * i as f64).abs() < 1e-12);
            assert!((p[p.len() - 1].0 - (10.0 * i as f64 + 5.0)).abs() < 1e-12);
        }
    }

    #[test]
    fn dash_continues_across_vertices() {
        let pieces = dash(
            &[(0.0, 0.0), (3.0, 0.0), (6.0, 0.0), (9.0, 0.0)],
            &[5.0, 2.0],
        );
        // On 0..5, off 5..7, on 7..9.
        assert_eq!(pieces.len(), 2);
        assert_eq!(pieces[0], vec![(0.0, 0.0), (3.0, 0.0), (5.0, 0.0)]);
        assert_eq!(pieces[1], vec![(7.0, 0.0), (9.0, 0.0)]);
    }
}
