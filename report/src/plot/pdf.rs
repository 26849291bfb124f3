//! A plotters drawing backend that writes a one-page PDF, so that figures can go into papers
//! as vectors without a converter.
//!
//! plotters has no PDF backend and the crates that convert SVG are heavy, but a plot needs
//! little of PDF: stroked and filled paths in RGB, translucent fills (an `ExtGState` per
//! alpha), and text in the standard fonts every reader has ([`super::pdf_text`]), which need
//! no embedding. The page is the image's size at 96 pixels per inch; drawing happens in pixel
//! coordinates through one transformation at the start of the content stream. The document
//! is uncompressed and has no dates, so the same figure gives the same bytes.

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::fmt::Write as _;

use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
    FontTransform,
};

use super::pdf_text::{self, MINUS_CODE, SUPERSCRIPT_RISE, SUPERSCRIPT_SCALE};

/// Points per pixel: the page is the image at 96 pixels per inch.
const POINTS_PER_PIXEL: f64 = 0.75;

/// plotters' font sizes are this much larger than the em size that SVG and PNG draw.
const FONT_SIZE_DIVISOR: f64 = 1.24;

/// Helvetica's x-height, for centring text vertically.
const X_HEIGHT: f64 = 0.523;

/// The Bézier handle length that approximates a quarter circle of radius 1.
const KAPPA: f64 = 0.552_284_749_8;

/// Draws into a PDF page; the document is written into the target when presented.
pub struct PdfBackend<'a> {
    target: &'a mut Vec<u8>,
    width: u32,
    height: u32,
    content: String,
    /// Alphas in use (thousandths), each an `ExtGState` named `/GA<thousandths>`.
    alphas: BTreeSet<u16>,
    /// The alpha currently set in the graphics state (thousandths).
    alpha: u16,
    /// The fill colour, stroke colour and line width last set (so each is written once per
    /// change, not once per shape).
    fill: Option<(u8, u8, u8)>,
    stroke: Option<(u8, u8, u8)>,
    line: Option<u32>,
    presented: bool,
}

impl<'a> PdfBackend<'a> {
    /// A blank page of `width` x `height` pixels that [`DrawingBackend::present`] writes into
    /// `target` (replacing what it held).
    pub fn new(target: &'a mut Vec<u8>, (width, height): (u32, u32)) -> Self {
        let mut content = String::new();
        // Pixel coordinates (origin at the top left, y down), round caps and joins.
        let _ = writeln!(
            content,
            "{s} 0 0 {ns} 0 {h} cm\n1 J 1 j",
            s = num(POINTS_PER_PIXEL),
            ns = num(-POINTS_PER_PIXEL),
            h = num(f64::from(height) * POINTS_PER_PIXEL)
        );
        PdfBackend {
            target,
            width,
            height,
            content,
            alphas: BTreeSet::new(),
            alpha: 1000,
            fill: None,
            stroke: None,
            line: None,
            presented: false,
        }
    }

    /// Sets the fill (`fill`) or stroke colour and the alpha; false when nothing would show.
    fn colour(&mut self, c: BackendColor, fill: bool) -> bool {
        let alpha = (c.alpha.clamp(0.0, 1.0) * 1000.0).round() as u16;
        if alpha == 0 {
            return false;
        }
        if alpha != self.alpha {
            self.alphas.insert(alpha);
            let _ = writeln!(self.content, "/GA{alpha} gs");
            self.alpha = alpha;
        }
        let current = if fill {
            &mut self.fill
        } else {
            &mut self.stroke
        };
        if *current != Some(c.rgb) {
            *current = Some(c.rgb);
            let (r, g, b) = c.rgb;
            let op = if fill { "rg" } else { "RG" };
            let _ = writeln!(
                self.content,
                "{} {} {} {op}",
                channel(r),
                channel(g),
                channel(b)
            );
        }
        true
    }

    fn line_width(&mut self, w: u32) {
        let w = w.max(1);
        if self.line != Some(w) {
            self.line = Some(w);
            let _ = writeln!(self.content, "{w} w");
        }
    }

    /// Appends a path through `points` (moveto, then linetos), optionally closed.
    fn path(&mut self, points: &[(f64, f64)], close: bool) {
        for (i, &(x, y)) in points.iter().enumerate() {
            let op = if i == 0 { "m" } else { "l" };
            let _ = writeln!(self.content, "{} {} {op}", num(x), num(y));
        }
        if close {
            self.content.push_str("h\n");
        }
    }

    /// Appends a circle as four Bézier quarters.
    fn circle(&mut self, (cx, cy): (f64, f64), r: f64) {
        let k = r * KAPPA;
        let _ = writeln!(self.content, "{} {} m", num(cx + r), num(cy));
        let quarters = [
            [(cx + r, cy + k), (cx + k, cy + r), (cx, cy + r)],
            [(cx - k, cy + r), (cx - r, cy + k), (cx - r, cy)],
            [(cx - r, cy - k), (cx - k, cy - r), (cx, cy - r)],
            [(cx + k, cy - r), (cx + r, cy - k), (cx + r, cy)],
        ];
        for q in quarters {
            let _ = writeln!(
                self.content,
                "{} {} {} {} {} {} c",
                num(q[0].0),
                num(q[0].1),
                num(q[1].0),
                num(q[1].1),
                num(q[2].0),
                num(q[2].1)
            );
        }
        self.content.push_str("h\n");
    }

    /// The whole document around the content stream.
    fn document(&self) -> Vec<u8> {
        let (w, h) = (
            f64::from(self.width) * POINTS_PER_PIXEL,
            f64::from(self.height) * POINTS_PER_PIXEL,
        );
        let mut states = String::new();
        for a in &self.alphas {
            let v = num(f64::from(*a) / 1000.0);
            let _ = write!(states, " /GA{a} << /Type /ExtGState /CA {v} /ca {v} >>");
        }
        let objects = [
            "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
            "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_string(),
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {} {}] /Resources << /Font << /F1 4 0 R /F2 5 0 R >> /ExtGState <<{states} >> >> /Contents 6 0 R >>",
                num(w),
                num(h)
            ),
            format!(
                "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding << /Type /Encoding /BaseEncoding /WinAnsiEncoding /Differences [{MINUS_CODE} /minus] >> >>"
            ),
            "<< /Type /Font /Subtype /Type1 /BaseFont /Symbol >>".to_string(),
            format!(
                "<< /Length {} >>\nstream\n{}endstream",
                self.content.len(),
                self.content
            ),
            format!("<< /Producer (dsgd {}) >>", env!("CARGO_PKG_VERSION")),
        ];
        let mut out: Vec<u8> = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n".to_vec();
        let mut offsets = Vec::with_capacity(objects.len());
        for (i, body) in objects.iter().enumerate() {
            offsets.push(out.len());
            out.extend_from_slice(format!("{} 0 obj\n{body}\nendobj\n", i + 1).as_bytes());
        }
        let xref = out.len();
        let mut table = format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1);
        for o in offsets {
            let _ = writeln!(table, "{o:010} 00000 n ");
        }
        let _ = write!(
            table,
            "trailer\n<< /Size {} /Root 1 0 R /Info {} 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1,
            objects.len()
        );
        out.extend_from_slice(table.as_bytes());
        out
    }
}

/// A colour channel as a PDF number in 0..=1.
fn channel(v: u8) -> String {
    num(f64::from(v) / 255.0)
}

/// A number with at most three decimals and no exponent (PDF has none).
fn num(v: f64) -> String {
    let v = if v.is_finite() { v } else { 0.0 };
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    match s {
        "-0" | "" => "0".to_string(),
        _ => s.to_string(),
    }
}

fn pt((x, y): BackendCoord) -> (f64, f64) {
    (f64::from(x), f64::from(y))
}

impl DrawingBackend for PdfBackend<'_> {
    type ErrorType = Infallible;

    fn get_size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Infallible>> {
        Ok(())
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Infallible>> {
        if !self.presented {
            *self.target = self.document();
            self.presented = true;
        }
        Ok(())
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Infallible>> {
        if self.colour(color, true) {
            let _ = writeln!(self.content, "{} {} 1 1 re f", point.0, point.1);
        }
        Ok(())
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Infallible>> {
        if self.colour(style.color(), false) {
            self.line_width(style.stroke_width());
            self.path(&[pt(from), pt(to)], false);
            self.content.push_str("S\n");
        }
        Ok(())
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Infallible>> {
        if self.colour(style.color(), fill) {
            if !fill {
                self.line_width(style.stroke_width());
            }
            let _ = writeln!(
                self.content,
                "{} {} {} {} re {}",
                upper_left.0,
                upper_left.1,
                bottom_right.0 - upper_left.0,
                bottom_right.1 - upper_left.1,
                if fill { "f" } else { "S" }
            );
        }
        Ok(())
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Infallible>> {
        let points: Vec<(f64, f64)> = path.into_iter().map(pt).collect();
        if points.len() >= 2 && self.colour(style.color(), false) {
            self.line_width(style.stroke_width());
            self.path(&points, false);
            self.content.push_str("S\n");
        }
        Ok(())
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Infallible>> {
        if self.colour(style.color(), fill) {
            if !fill {
                self.line_width(style.stroke_width());
            }
            self.circle(pt(center), f64::from(radius));
            self.content.push_str(if fill { "f\n" } else { "S\n" });
        }
        Ok(())
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Infallible>> {
        let points: Vec<(f64, f64)> = vert.into_iter().map(pt).collect();
        if points.len() >= 3 && self.colour(style.color(), true) {
            self.path(&points, true);
            self.content.push_str("f\n");
        }
        Ok(())
    }

    fn draw_text<TStyle: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &TStyle,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Infallible>> {
        let runs = pdf_text::runs(text);
        if runs.is_empty() || !self.colour(style.color(), true) {
            return Ok(());
        }
        let size = style.size() / FONT_SIZE_DIVISOR;
        let width = runs.iter().map(|r| r.width).sum::<f64>() * size / 1000.0;
        // Offsets along the text's own axes, as the SVG backend anchors text.
        let dx = match style.anchor().h_pos {
            HPos::Left => 0.0,
            HPos::Center => -width / 2.0,
            HPos::Right => -width,
        };
        let down = match style.anchor().v_pos {
            VPos::Top => 0.76 * size,
            VPos::Center => 0.5 * X_HEIGHT * size,
            VPos::Bottom => -0.5 * X_HEIGHT * size,
        };
        // The text matrix undoes the page's y flip and turns the text clockwise.
        let (cos, sin) = match style.transform() {
            FontTransform::None => (1.0, 0.0),
            FontTransform::Rotate90 => (0.0, 1.0),
            FontTransform::Rotate180 => (-1.0, 0.0),
            FontTransform::Rotate270 => (0.0, -1.0),
        };
        let _ = writeln!(
            self.content,
            "BT\n{} {} {} {} {} {} Tm\n{} {} Td",
            num(cos),
            num(sin),
            num(sin),
            num(-cos),
            pos.0,
            pos.1,
            num(dx),
            num(-down)
        );
        for r in &runs {
            let (run_size, rise) = if r.superscript {
                (size * SUPERSCRIPT_SCALE, size * SUPERSCRIPT_RISE)
            } else {
                (size, 0.0)
            };
            let _ = writeln!(
                self.content,
                "/{} {} Tf {} Ts {} Tj",
                r.face.resource(),
                num(run_size),
                num(rise),
                pdf_text::literal(&r.bytes)
            );
        }
        self.content.push_str("ET\n");
        Ok(())
    }

    fn estimate_text_size<TStyle: BackendTextStyle>(
        &self,
        text: &str,
        style: &TStyle,
    ) -> Result<(u32, u32), DrawingErrorKind<Infallible>> {
        let size = style.size() / FONT_SIZE_DIVISOR;
        let w = pdf_text::width(text, size);
        Ok((w.ceil() as u32, (1.16 * size).ceil() as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plotters::prelude::{
        BLACK, BLUE, Circle, Color, IntoDrawingArea, PathElement, Polygon, RED, Text, WHITE,
    };

    fn draw_sample() -> Vec<u8> {
        let mut out = Vec::new();
        {
            let root = PdfBackend::new(&mut out, (400, 300)).into_drawing_area();
            root.fill(&WHITE).unwrap();
            root.draw(&PathElement::new(
                vec![(10, 10), (100, 50)],
                Color::stroke_width(&BLUE, 2),
            ))
            .unwrap();
            root.draw(&Polygon::new(
                vec![(0, 0), (50, 0), (50, 50)],
                RED.mix(0.15).filled(),
            ))
            .unwrap();
            root.draw(&Circle::new((200, 150), 5, BLACK.filled()))
                .unwrap();
            root.draw(&Text::new("η = 0.1 (a)", (20, 200), ("sans-serif", 20)))
                .unwrap();
            root.present().unwrap();
        }
        out
    }

    #[test]
    fn numbers_have_no_exponent_and_few_decimals() {
        assert_eq!(num(1e-9), "0");
        assert_eq!(num(-0.0001), "0");
        assert_eq!(num(2.5), "2.5");
        assert_eq!(num(465.0), "465");
        assert_eq!(num(f64::NAN), "0");
    }

    #[test]
    fn the_document_has_its_parts_and_translucency() {
        let pdf = draw_sample();
        let text = String::from_utf8_lossy(&pdf);
        assert!(text.starts_with("%PDF-1.4\n"));
        assert!(text.ends_with("%%EOF\n"));
        assert!(text.contains("/MediaBox [0 0 300 225]"));
        assert!(text.contains("/GA150 << /Type /ExtGState /CA 0.15 /ca 0.15 >>"));
        assert!(text.contains("/GA150 gs"));
        assert!(text.contains("/F2 "), "η is drawn in Symbol");
        assert!(text.contains("\\(a\\)) Tj"), "parentheses are escaped");
    }
}
