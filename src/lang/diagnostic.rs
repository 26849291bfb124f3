//! Compile errors and how they are shown: file, line and column, the source line with a
//! caret under the offending text, and what was expected. No colour, so that the output
//! is the same on a terminal, in a log and in a snapshot.

use std::fmt;

use crate::ir::Span;

/// An error found at a place in the source, before the file name and text are attached.
#[derive(Clone, Debug, PartialEq)]
pub struct Diag {
    /// Where the error is.
    pub span: Span,
    /// What is wrong.
    pub message: String,
    /// What was expected there (printed under the caret).
    pub expected: String,
    /// Further lines printed after the caret.
    pub notes: Vec<String>,
}

impl Diag {
    /// An error at `span`: what is wrong, and what was expected there.
    pub fn new(span: Span, message: impl Into<String>, expected: impl Into<String>) -> Diag {
        Diag {
            span,
            message: message.into(),
            expected: expected.into(),
            notes: Vec::new(),
        }
    }

    /// The same error with one more note.
    pub fn with_note(mut self, note: impl Into<String>) -> Diag {
        self.notes.push(note.into());
        self
    }

    /// Compiling stopped at `span` because the caller's cancel flag rose (the words of the
    /// lowering's own check).
    pub fn cancelled(span: Span) -> Diag {
        Diag::new(
            span,
            "compiling was cancelled",
            "no cancellation (the caller's flag rose)",
        )
    }
}

/// Where a diagnostic points: 1-based line and column (in characters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// 1-based line number.
    pub line: usize,
    /// 1-based column, counted in characters.
    pub column: usize,
    /// The text of that line, without its newline.
    pub line_text: String,
    /// Number of characters to underline (at least 1).
    pub width: usize,
}

/// The 1-based line and column of byte offset `offset` in `source`, and the line's text.
pub fn locate(source: &str, span: Span) -> Location {
    let start = (span.start as usize).min(source.len());
    let start = floor_char_boundary(source, start);
    let line_start = source[..start].rfind('\n').map_or(0, |p| p + 1);
    let line_end = source[start..]
        .find('\n')
        .map_or(source.len(), |p| start + p);
    let line = source[..start].matches('\n').count() + 1;
    let column = source[line_start..start].chars().count() + 1;
    let line_text = source[line_start..line_end]
        .trim_end_matches('\r')
        .to_string();
    let end = floor_char_boundary(source, (span.end as usize).clamp(start, line_end));
    let width = source[start..end].chars().count().max(1);
    Location {
        line,
        column,
        line_text,
        width,
    }
}

/// Where each line of a source text starts, for locating many spans in one text in
/// O(log n) each ([`locate`] scans from the start, which made `check` quadratic on programs
/// with tens of thousands of if-statements).
#[derive(Clone, Debug)]
pub struct LineIndex<'s> {
    source: &'s str,
    /// Byte offset of the start of every line.
    starts: Vec<usize>,
}

impl<'s> LineIndex<'s> {
    /// The line starts of `source`.
    pub fn new(source: &'s str) -> LineIndex<'s> {
        let starts = std::iter::once(0)
            .chain(source.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        LineIndex { source, starts }
    }

    /// The 1-based line and column (in characters) of the start of `span`, as [`locate`]
    /// gives them.
    pub fn line_column(&self, span: Span) -> (usize, usize) {
        let start = floor_char_boundary(self.source, (span.start as usize).min(self.source.len()));
        let line = self.starts.partition_point(|&s| s <= start);
        let line_start = self.starts[line - 1];
        (line, self.source[line_start..start].chars().count() + 1)
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Characters of a source line shown on either side of the column in a snippet.
pub const SNIPPET_CONTEXT: usize = 60;

/// The part of a long source line around `column` that a snippet shows (at most
/// [`SNIPPET_CONTEXT`] characters either side, `...` where it is cut), with the column and
/// underline width within it. One very long line (generated code) must not print whole.
pub fn clip_line(line: &str, column: usize, width: usize) -> (String, usize, usize) {
    let chars = line.chars().count();
    if chars <= 2 * SNIPPET_CONTEXT {
        return (line.to_string(), column, width);
    }
    let at = column.saturating_sub(1).min(chars);
    let from = at.saturating_sub(SNIPPET_CONTEXT);
    let to = (at + SNIPPET_CONTEXT).min(chars);
    let mut text = String::new();
    if from > 0 {
        text.push_str("...");
    }
    text.extend(line.chars().skip(from).take(to - from));
    if to < chars {
        text.push_str("...");
    }
    let lead = if from > 0 { 3 } else { 0 };
    let width = width.min(to - at).max(1);
    (text, at - from + lead + 1, width)
}

/// Text quoted in a message (a name, a path), cut to its first `max_chars` characters with
/// `...` and the length where it is longer: a 60 MB string must not be printed back whole.
pub fn clip(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_string(),
        Some((at, _)) => format!("{}... ({} bytes)", &text[..at], text.len()),
    }
}

/// A failed compilation. `Display` renders the whole diagnostic.
#[derive(Clone, Debug, PartialEq)]
pub struct CompileError {
    /// The model's file name (or built-in name) as given to the compiler.
    pub file: String,
    /// What is wrong, in one sentence (`unknown function `foo``).
    pub message: String,
    /// What was expected at the location (shown under the caret); may be empty.
    pub expected: String,
    /// `None` when the error is not about a place in the text (e.g. the file is unreadable).
    pub location: Option<Box<Location>>,
    /// Further explanations or hints, each printed on its own `= note:` line.
    pub notes: Vec<String>,
}

impl CompileError {
    /// Attaches file name and source text to a diagnostic.
    pub fn from_diag(file: &str, source: &str, d: Diag) -> CompileError {
        CompileError {
            file: file.to_string(),
            message: d.message,
            expected: d.expected,
            location: Some(Box::new(locate(source, d.span))),
            notes: d.notes,
        }
    }

    /// An error about the file as a whole.
    pub fn without_location(file: &str, message: impl Into<String>) -> CompileError {
        CompileError {
            file: file.to_string(),
            message: message.into(),
            expected: String::new(),
            location: None,
            notes: Vec::new(),
        }
    }

    /// `file:line:col` of the error, or just the file.
    pub fn position(&self) -> String {
        match &self.location {
            Some(l) => format!("{}:{}:{}", self.file, l.line, l.column),
            None => self.file.clone(),
        }
    }
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "error: {}", self.message)?;
        match &self.location {
            None => write!(f, "  --> {}", self.file)?,
            Some(loc) => {
                let num = loc.line.to_string();
                let pad = " ".repeat(num.len());
                writeln!(f, "{pad}--> {}:{}:{}", self.file, loc.line, loc.column)?;
                writeln!(f, "{pad} |")?;
                let (text, column, width) = clip_line(&loc.line_text, loc.column, loc.width);
                writeln!(f, "{num} | {text}")?;
                let lead: String = text
                    .chars()
                    .take(column - 1)
                    .map(|c| if c == '\t' { '\t' } else { ' ' })
                    .collect();
                write!(f, "{pad} | {lead}{}", "^".repeat(width))?;
                if !self.expected.is_empty() {
                    write!(f, " expected {}", self.expected)?;
                }
            }
        }
        for note in &self.notes {
            write!(f, "\n  = note: {note}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CompileError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_line_and_column_in_characters() {
        let src = "let a = 1;\nlet é = b;\n";
        let start = src.find('b').unwrap() as u32;
        let loc = locate(
            src,
            Span {
                start,
                end: start + 1,
            },
        );
        assert_eq!((loc.line, loc.column, loc.width), (2, 9, 1));
        assert_eq!(loc.line_text, "let é = b;");
    }

    #[test]
    fn the_line_index_agrees_with_locate() {
        let src = "a\n\nlet é = b;\r\nx\n";
        let index = LineIndex::new(src);
        for start in 0..=src.len() as u32 + 2 {
            let span = Span { start, end: start };
            let l = locate(src, span);
            assert_eq!(index.line_column(span), (l.line, l.column), "{start}");
        }
    }

    #[test]
    fn a_long_line_is_cut_around_the_column() {
        let src = format!("{}foo{}", "a+".repeat(50_000), "+a".repeat(50_000));
        let start = src.find("foo").unwrap() as u32;
        let d = Diag::new(
            Span {
                start,
                end: start + 3,
            },
            "unknown name `foo`",
            "a name",
        );
        let text = CompileError::from_diag("m.dsgd", &src, d).to_string();
        assert!(text.len() < 400, "{} bytes", text.len());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], " --> m.dsgd:1:100001");
        let shown = lines[3].strip_prefix("1 | ").unwrap();
        assert!(
            shown.starts_with("...") && shown.ends_with("..."),
            "{shown}"
        );
        let caret = lines[4].strip_prefix("  | ").unwrap();
        let col = caret.find('^').unwrap();
        assert_eq!(&shown[col..col + 3], "foo");
        assert!(caret.ends_with("^^^ expected a name"), "{caret}");
    }

    #[test]
    fn renders_caret_under_the_span() {
        let src = "x = foo(1);";
        let d = Diag::new(
            Span { start: 4, end: 7 },
            "unknown function `foo`",
            "a built-in or a `fn`",
        );
        let text = CompileError::from_diag("m.dsgd", src, d).to_string();
        assert_eq!(
            text,
            "error: unknown function `foo`\n --> m.dsgd:1:5\n  |\n1 | x = foo(1);\n  |     ^^^ expected a built-in or a `fn`"
        );
    }
}
