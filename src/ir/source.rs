//! Where a program came from: byte ranges in its source text, and the text itself, for
//! messages that quote it. Depends on nothing else in `ir`, so the builder, the program and
//! the terms all use it without importing each other.

use std::fmt;

/// A byte range in the source text a node came from (the language sets it; the builder API
/// leaves it empty).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// Byte offset of the first byte.
    pub start: u32,
    /// Byte offset one past the last byte.
    pub end: u32,
}

/// The text a program was compiled from, for messages that quote it (the language sets it;
/// programs built in Rust have none).
#[derive(Clone, PartialEq, Eq)]
pub struct SourceText {
    /// The file name as given to the compiler.
    pub file: String,
    pub text: String,
}

/// Without the text, which may be megabytes.
impl fmt::Debug for SourceText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SourceText({:?}, {} bytes)", self.file, self.text.len())
    }
}
