//! The PDF figures: a well-formed document (header, every cross-reference offset pointing at
//! its object, stream lengths, trailer), the same bytes for the same figure, text in the
//! standard fonts, and whole-or-nothing writing of SVG, PNG and PDF together.

use std::fs;
use std::path::PathBuf;

use dsgd_report::plot::{Figure, LinePlot, Series, YScale, render_figure_pdf, write_figure};

fn figure() -> Figure {
    let mut top = LinePlot::new("", "iteration", "ELBO");
    let mut bottom = LinePlot::new("Gradient variance", "iteration", "variance");
    bottom.y_scale = YScale::Log;
    for (k, name) in ["dsgd", "score", "reparam"].into_iter().enumerate() {
        let points: Vec<(f64, f64)> = (0..50)
            .map(|i| {
                (
                    f64::from(i),
                    -1e5 * (-f64::from(i) / 5.0).exp() - 50.0 * (k + 1) as f64,
                )
            })
            .collect();
        let band = points
            .iter()
            .map(|&(x, y)| (x, y - 10.0, y + 10.0))
            .collect();
        top.series
            .push(Series::new(name, name, "", points).with_band(band));
        let var = (0..50)
            .map(|i| {
                (
                    f64::from(i),
                    10f64.powi(k as i32 + 1) / (1.0 + f64::from(i)),
                )
            })
            .collect();
        bottom.series.push(Series::new(name, name, "", var));
    }
    Figure {
        title: "temperature: ELBO (η = 0.1) (a) \\ b".to_string(),
        panels: vec![top, bottom],
        legend: dsgd_report::plot::Legend::PerSeries,
    }
}

/// The position of `needle` in `hay` at or after `from`.
fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

/// The text of a line starting at `at`.
fn line(bytes: &[u8], at: usize) -> String {
    let end = find(bytes, b"\n", at).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[at..end]).into_owned()
}

#[test]
fn the_document_is_well_formed() {
    let pdf = render_figure_pdf(&figure(), 900, 700).unwrap();
    assert!(pdf.starts_with(b"%PDF-1.4\n"));
    assert!(pdf.ends_with(b"%%EOF\n"));

    // startxref names the offset of the cross-reference table.
    let sx = rfind(&pdf, b"startxref\n").unwrap();
    let xref: usize = line(&pdf, sx + 10).trim().parse().unwrap();
    assert_eq!(line(&pdf, xref), "xref");
    let header = line(&pdf, xref + 5);
    let (first, count) = header.split_once(' ').unwrap();
    assert_eq!(first, "0");
    let count: usize = count.parse().unwrap();
    assert!(
        count >= 7,
        "catalog, pages, page, two fonts, contents, info"
    );

    // Every entry is 20 bytes; entry N's offset points at "N 0 obj".
    let entries = xref + 5 + header.len() + 1;
    assert_eq!(&pdf[entries..entries + 20], b"0000000000 65535 f \n");
    for n in 1..count {
        let e = &pdf[entries + 20 * n..entries + 20 * (n + 1)];
        let e = std::str::from_utf8(e).unwrap();
        assert!(e.ends_with(" 00000 n \n"), "entry {n}: {e:?}");
        let offset: usize = e[..10].parse().unwrap();
        assert_eq!(line(&pdf, offset), format!("{n} 0 obj"), "object {n}");
    }

    // The trailer gives the size and the root, which is the catalog.
    let trailer = line(&pdf, entries + 20 * count + 8);
    assert!(trailer.contains(&format!("/Size {count}")), "{trailer}");
    assert!(trailer.contains("/Root 1 0 R"));
    assert!(line(&pdf, find(&pdf, b"1 0 obj\n", 0).unwrap() + 8).contains("/Type /Catalog"));

    // The content stream's /Length is the number of bytes between its keywords.
    let start = find(&pdf, b"stream\n", 0).unwrap() + 7;
    let end = find(&pdf, b"endstream", start).unwrap();
    let dict_start = rfind(&pdf[..start], b"<< /Length ").unwrap();
    let length: usize = line(&pdf, dict_start + 11)
        .trim_end_matches(" >>")
        .parse()
        .unwrap();
    assert_eq!(length, end - start);

    // The page is the image at 96 pixels per inch; text is set in the standard fonts.
    let text = String::from_utf8_lossy(&pdf);
    assert!(text.contains("/MediaBox [0 0 675 525]"));
    assert!(text.contains("/BaseFont /Helvetica"));
    assert!(text.contains("/BaseFont /Symbol"));
    assert!(!text.contains("/FontFile"), "nothing is embedded");
    // Parentheses and backslashes in text are escaped; η comes from Symbol (code 104).
    assert!(text.contains("\\(a\\) \\\\ b) Tj"), "escaped title");
    assert!(text.contains("/F2 ") && text.contains("(h) Tj"));
    // Bands are translucent through a graphics state.
    assert!(text.contains("/ca 0.15"));
    // Log-axis tick labels such as 10⁵ set their exponent raised (a non-zero rise `Ts`).
    let raised = text
        .match_indices(" Ts (5) Tj")
        .any(|(i, _)| !text[..i].ends_with(" 0"));
    assert!(raised, "a superscript exponent");
}

#[test]
fn the_same_figure_gives_the_same_bytes() {
    let a = render_figure_pdf(&figure(), 800, 600).unwrap();
    let b = render_figure_pdf(&figure(), 800, 600).unwrap();
    assert_eq!(a, b);
    let c = render_figure_pdf(&figure(), 801, 600).unwrap();
    assert_ne!(a, c);
}

#[test]
fn write_figure_writes_three_files_or_none() {
    let dir: PathBuf = std::env::temp_dir().join(format!("dsgd-plot-pdf-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let files = write_figure(&figure(), &dir.join("fig.v1"), 900, 700).unwrap();
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let pdf = fs::read(&files.pdf).unwrap();
    let svg = fs::read_to_string(&files.svg).unwrap();
    let png = fs::read(&files.png).unwrap();

    // A bad scale fails before anything is written, and leaves the old files alone.
    let mut bad = figure();
    bad.panels[1].y_scale = YScale::Clip { lo: 1.0, hi: 0.0 };
    let err = write_figure(&bad, &dir.join("fig.v1"), 900, 700);
    let after: Vec<u8> = fs::read(&files.pdf).unwrap();
    let missing = write_figure(&figure(), &dir.join("missing").join("fig"), 900, 700);
    let _ = fs::remove_dir_all(&dir);

    assert_eq!(names, ["fig.v1.pdf", "fig.v1.png", "fig.v1.svg"]);
    assert!(pdf.starts_with(b"%PDF-1.4"));
    assert!(svg.contains("Gradient variance"));
    assert!(png.starts_with(b"\x89PNG"));
    assert!(err.is_err());
    assert_eq!(after, pdf);
    assert!(missing.is_err());
}
