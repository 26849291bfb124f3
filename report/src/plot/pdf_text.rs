//! Text for the PDF figures in the standard fonts every PDF reader has (Helvetica, Symbol), so
//! nothing is embedded: which font and byte each character is drawn with, and how wide it is.
//!
//! Helvetica is used with the Windows ANSI encoding, plus one code for its true minus sign
//! (tick labels use `−`). Greek letters and a few mathematical signs come from Symbol.
//! Superscript digits (tick labels such as `10⁶`) are Helvetica digits drawn smaller and
//! raised. A character neither font has is drawn as `?`. Widths are the fonts' published
//! metrics (thousandths of the font size), so text can be centred and measured exactly.

/// The code given to Helvetica's minus sign through the font's encoding differences (unused
/// in Windows ANSI).
pub const MINUS_CODE: u8 = 127;

/// The Helvetica width of the minus sign.
const MINUS_WIDTH: u16 = 584;

/// Size of a superscript relative to the surrounding text.
pub const SUPERSCRIPT_SCALE: f64 = 0.7;

/// How far a superscript is raised, relative to the surrounding font size.
pub const SUPERSCRIPT_RISE: f64 = 0.36;

/// Which standard font a piece of text is set in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Face {
    /// Helvetica (`/F1`), Windows ANSI encoding plus the minus sign.
    Helvetica,
    /// Symbol (`/F2`), its built-in encoding.
    Symbol,
}

impl Face {
    /// The font's resource name in the page.
    pub fn resource(self) -> &'static str {
        match self {
            Face::Helvetica => "F1",
            Face::Symbol => "F2",
        }
    }
}

/// A run of characters drawn with one font at one size and baseline.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// The font.
    pub face: Face,
    /// Whether the run is a superscript (smaller and raised).
    pub superscript: bool,
    /// The bytes to show, in the font's encoding.
    pub bytes: Vec<u8>,
    /// The run's advance width in thousandths of the surrounding font size.
    pub width: f64,
}

/// Helvetica's widths for the printable ASCII codes 32 to 126.
const ASCII_WIDTHS: [u16; 95] = [
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556,
    556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556, 1015, 667, 667, 722, 722, 667,
    611, 778, 722, 278, 500, 667, 556, 833, 722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667,
    667, 611, 278, 278, 278, 469, 556, 333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500,
    222, 833, 556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
];

/// Helvetica's characters above ASCII in Windows ANSI: (character, code, width).
const LATIN_WIDTHS: [(char, u8, u16); 123] = [
    ('\u{00a0}', 160, 278),
    ('\u{00a1}', 161, 333),
    ('\u{00a2}', 162, 556),
    ('\u{00a3}', 163, 556),
    ('\u{00a4}', 164, 556),
    ('\u{00a5}', 165, 556),
    ('\u{00a6}', 166, 260),
    ('\u{00a7}', 167, 556),
    ('\u{00a8}', 168, 333),
    ('\u{00a9}', 169, 737),
    ('\u{00aa}', 170, 370),
    ('\u{00ab}', 171, 556),
    ('\u{00ac}', 172, 584),
    ('\u{00ad}', 173, 333),
    ('\u{00ae}', 174, 737),
    ('\u{00af}', 175, 333),
    ('\u{00b0}', 176, 400),
    ('\u{00b1}', 177, 584),
    ('\u{00b2}', 178, 333),
    ('\u{00b3}', 179, 333),
    ('\u{00b4}', 180, 333),
    ('\u{00b5}', 181, 578),
    ('\u{00b6}', 182, 537),
    ('\u{00b7}', 183, 278),
    ('\u{00b8}', 184, 333),
    ('\u{00b9}', 185, 333),
    ('\u{00ba}', 186, 365),
    ('\u{00bb}', 187, 556),
    ('\u{00bc}', 188, 834),
    ('\u{00bd}', 189, 834),
    ('\u{00be}', 190, 834),
    ('\u{00bf}', 191, 611),
    ('\u{00c0}', 192, 667),
    ('\u{00c1}', 193, 667),
    ('\u{00c2}', 194, 667),
    ('\u{00c3}', 195, 667),
    ('\u{00c4}', 196, 667),
    ('\u{00c5}', 197, 667),
    ('\u{00c6}', 198, 1000),
    ('\u{00c7}', 199, 722),
    ('\u{00c8}', 200, 667),
    ('\u{00c9}', 201, 667),
    ('\u{00ca}', 202, 667),
    ('\u{00cb}', 203, 667),
    ('\u{00cc}', 204, 278),
    ('\u{00cd}', 205, 278),
    ('\u{00ce}', 206, 278),
    ('\u{00cf}', 207, 278),
    ('\u{00d0}', 208, 722),
    ('\u{00d1}', 209, 722),
    ('\u{00d2}', 210, 778),
    ('\u{00d3}', 211, 778),
    ('\u{00d4}', 212, 778),
    ('\u{00d5}', 213, 778),
    ('\u{00d6}', 214, 778),
    ('\u{00d7}', 215, 584),
    ('\u{00d8}', 216, 778),
    ('\u{00d9}', 217, 722),
    ('\u{00da}', 218, 722),
    ('\u{00db}', 219, 722),
    ('\u{00dc}', 220, 722),
    ('\u{00dd}', 221, 667),
    ('\u{00de}', 222, 667),
    ('\u{00df}', 223, 611),
    ('\u{00e0}', 224, 556),
    ('\u{00e1}', 225, 556),
    ('\u{00e2}', 226, 556),
    ('\u{00e3}', 227, 556),
    ('\u{00e4}', 228, 556),
    ('\u{00e5}', 229, 556),
    ('\u{00e6}', 230, 889),
    ('\u{00e7}', 231, 500),
    ('\u{00e8}', 232, 556),
    ('\u{00e9}', 233, 556),
    ('\u{00ea}', 234, 556),
    ('\u{00eb}', 235, 556),
    ('\u{00ec}', 236, 278),
    ('\u{00ed}', 237, 278),
    ('\u{00ee}', 238, 278),
    ('\u{00ef}', 239, 278),
    ('\u{00f0}', 240, 556),
    ('\u{00f1}', 241, 556),
    ('\u{00f2}', 242, 556),
    ('\u{00f3}', 243, 556),
    ('\u{00f4}', 244, 556),
    ('\u{00f5}', 245, 556),
    ('\u{00f6}', 246, 556),
    ('\u{00f7}', 247, 584),
    ('\u{00f8}', 248, 611),
    ('\u{00f9}', 249, 556),
    ('\u{00fa}', 250, 556),
    ('\u{00fb}', 251, 556),
    ('\u{00fc}', 252, 556),
    ('\u{00fd}', 253, 500),
    ('\u{00fe}', 254, 556),
    ('\u{00ff}', 255, 500),
    ('\u{0152}', 140, 1000),
    ('\u{0153}', 156, 944),
    ('\u{0160}', 138, 667),
    ('\u{0161}', 154, 500),
    ('\u{0178}', 159, 667),
    ('\u{017d}', 142, 611),
    ('\u{017e}', 158, 500),
    ('\u{0192}', 131, 556),
    ('\u{02c6}', 136, 333),
    ('\u{02dc}', 152, 333),
    ('\u{2013}', 150, 556),
    ('\u{2014}', 151, 1000),
    ('\u{2018}', 145, 222),
    ('\u{2019}', 146, 222),
    ('\u{201a}', 130, 222),
    ('\u{201c}', 147, 333),
    ('\u{201d}', 148, 333),
    ('\u{201e}', 132, 333),
    ('\u{2020}', 134, 556),
    ('\u{2021}', 135, 556),
    ('\u{2022}', 149, 350),
    ('\u{2026}', 133, 1000),
    ('\u{2030}', 137, 1000),
    ('\u{2039}', 139, 333),
    ('\u{203a}', 155, 333),
    ('\u{20ac}', 128, 556),
    ('\u{2122}', 153, 1000),
];

/// Symbol's characters we use: (character, code, width).
const SYMBOL_WIDTHS: [(char, u8, u16); 42] = [
    ('Α', 65, 722),
    ('Β', 66, 667),
    ('Γ', 71, 603),
    ('Δ', 68, 612),
    ('Θ', 81, 741),
    ('Λ', 76, 686),
    ('Π', 80, 768),
    ('Σ', 83, 592),
    ('Φ', 70, 763),
    ('Ψ', 89, 795),
    ('Ω', 87, 768),
    ('α', 97, 631),
    ('β', 98, 549),
    ('γ', 103, 411),
    ('δ', 100, 494),
    ('ε', 101, 439),
    ('ζ', 122, 494),
    ('η', 104, 603),
    ('θ', 113, 521),
    ('ι', 105, 329),
    ('κ', 107, 549),
    ('λ', 108, 549),
    ('μ', 109, 576),
    ('ν', 110, 521),
    ('ξ', 120, 493),
    ('ο', 111, 549),
    ('π', 112, 549),
    ('ρ', 114, 549),
    ('σ', 115, 603),
    ('τ', 116, 439),
    ('υ', 117, 576),
    ('φ', 102, 521),
    ('χ', 99, 549),
    ('ψ', 121, 686),
    ('ω', 119, 686),
    ('≤', 163, 549),
    ('≥', 179, 549),
    ('≈', 187, 549),
    ('≠', 185, 549),
    ('∞', 165, 713),
    ('→', 174, 987),
    ('√', 214, 549),
];

/// Font, code and width of one character outside superscripts.
fn glyph(c: char) -> (Face, u8, u16) {
    let u = c as u32;
    if (32..=126).contains(&u) {
        return (Face::Helvetica, u as u8, ASCII_WIDTHS[(u - 32) as usize]);
    }
    if c == '\u{2212}' {
        return (Face::Helvetica, MINUS_CODE, MINUS_WIDTH);
    }
    if let Some(&(_, code, w)) = LATIN_WIDTHS.iter().find(|e| e.0 == c) {
        return (Face::Helvetica, code, w);
    }
    if let Some(&(_, code, w)) = SYMBOL_WIDTHS.iter().find(|e| e.0 == c) {
        return (Face::Symbol, code, w);
    }
    (Face::Helvetica, b'?', ASCII_WIDTHS[(b'?' - 32) as usize])
}

/// The character a superscript stands for (`⁶` is `6`), if it is one.
fn superscript_base(c: char) -> Option<char> {
    match c {
        '⁰' => Some('0'),
        '¹' => Some('1'),
        '²' => Some('2'),
        '³' => Some('3'),
        '⁴'..='⁹' => char::from_u32(c as u32 - '⁴' as u32 + '4' as u32),
        '⁺' => Some('+'),
        '⁻' => Some('\u{2212}'),
        _ => None,
    }
}

/// Splits `text` into runs of one font and baseline, with their widths. Control characters
/// are dropped.
pub fn runs(text: &str) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::new();
    for c in text.chars().filter(|c| !c.is_control()) {
        let (sup, base) = match superscript_base(c) {
            Some(b) => (true, b),
            None => (false, c),
        };
        let (face, code, w) = glyph(base);
        let w = f64::from(w) * if sup { SUPERSCRIPT_SCALE } else { 1.0 };
        match out.last_mut() {
            Some(r) if r.face == face && r.superscript == sup => {
                r.bytes.push(code);
                r.width += w;
            }
            _ => out.push(Run {
                face,
                superscript: sup,
                bytes: vec![code],
                width: w,
            }),
        }
    }
    out
}

/// The advance width of `text` at font size `size`.
pub fn width(text: &str, size: f64) -> f64 {
    runs(text).iter().map(|r| r.width).sum::<f64>() * size / 1000.0
}

/// `bytes` as a PDF literal string: parentheses and backslashes escaped, bytes outside
/// printable ASCII written in octal.
pub fn literal(bytes: &[u8]) -> String {
    let mut s = String::from("(");
    for &b in bytes {
        match b {
            b'(' | b')' | b'\\' => {
                s.push('\\');
                s.push(b as char);
            }
            32..=126 => s.push(b as char),
            _ => s.push_str(&format!("\\{b:03o}")),
        }
    }
    s.push(')');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_use_the_minus_sign_and_raised_digits() {
        let r = runs("−10⁻⁶");
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].bytes, vec![MINUS_CODE, b'1', b'0']);
        assert!(!r[0].superscript);
        assert_eq!(r[1].bytes, vec![MINUS_CODE, b'6']);
        assert!(r[1].superscript);
        assert!((r[0].width - (584.0 + 2.0 * 556.0)).abs() < 1e-9);
    }

    #[test]
    fn greek_comes_from_symbol_and_unknowns_are_question_marks() {
        let r = runs("η = 0.1 ✓");
        assert_eq!(r[0].face, Face::Symbol);
        assert_eq!(r[0].bytes, vec![104]);
        assert_eq!(r[1].face, Face::Helvetica);
        assert_eq!(r[1].bytes, b" = 0.1 ?".to_vec());
        assert!((width("Hi", 10.0) - 10.0 * (722.0 + 222.0) / 1000.0).abs() < 1e-9);
    }

    #[test]
    fn literals_are_escaped() {
        assert_eq!(literal(b"a(b)\\c"), "(a\\(b\\)\\\\c)");
        assert_eq!(literal(&[127, 0xb1]), "(\\177\\261)");
    }
}
