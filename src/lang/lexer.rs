//! The lexer: source text to tokens with byte spans. Comments and whitespace are skipped
//! here; nothing about the grammar is known. A caller's cancel flag is read every few
//! thousand tokens.

use std::sync::atomic::{AtomicBool, Ordering};

use super::diagnostic::Diag;
use crate::ir::Span;

/// One token kind. Keywords are recognised here so that the parser can name them in
/// messages ("expected `;`, found keyword `let`").
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Num(f64),
    Ident(String),
    Str(String),
    // keywords
    Let,
    Const,
    Data,
    Param,
    Fn,
    For,
    In,
    If,
    Else,
    Sample,
    Observe,
    Factor,
    Maximize,
    Minimize,
    Fixed,
    Init,
    // punctuation
    LParen,
    RParen,
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    Comma,
    Semi,
    Assign,
    Tilde,
    Plus,
    Minus,
    Star,
    Slash,
    Caret,
    Lt,
    Le,
    Gt,
    Ge,
    EqEq,
    Ne,
    AndAnd,
    OrOr,
    Bang,
    DotDot,
    Eof,
}

impl Tok {
    /// How the token reads in an error message.
    pub fn describe(&self) -> String {
        match self {
            Tok::Num(x) => format!("number `{x}`"),
            Tok::Ident(s) => format!("name `{s}`"),
            Tok::Str(s) => format!("string \"{s}\""),
            Tok::Eof => "end of file".to_string(),
            t => match t.keyword() {
                Some(k) => format!("keyword `{k}`"),
                None => format!("`{}`", t.symbol()),
            },
        }
    }

    fn keyword(&self) -> Option<&'static str> {
        Some(match self {
            Tok::Let => "let",
            Tok::Const => "const",
            Tok::Data => "data",
            Tok::Param => "param",
            Tok::Fn => "fn",
            Tok::For => "for",
            Tok::In => "in",
            Tok::If => "if",
            Tok::Else => "else",
            Tok::Sample => "sample",
            Tok::Observe => "observe",
            Tok::Factor => "factor",
            Tok::Maximize => "maximize",
            Tok::Minimize => "minimize",
            Tok::Fixed => "fixed",
            Tok::Init => "init",
            _ => return None,
        })
    }

    /// The spelling of a punctuation token.
    pub fn symbol(&self) -> &'static str {
        match self {
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::LBracket => "[",
            Tok::RBracket => "]",
            Tok::Comma => ",",
            Tok::Semi => ";",
            Tok::Assign => "=",
            Tok::Tilde => "~",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Star => "*",
            Tok::Slash => "/",
            Tok::Caret => "^",
            Tok::Lt => "<",
            Tok::Le => "<=",
            Tok::Gt => ">",
            Tok::Ge => ">=",
            Tok::EqEq => "==",
            Tok::Ne => "!=",
            Tok::AndAnd => "&&",
            Tok::OrOr => "||",
            Tok::Bang => "!",
            Tok::DotDot => "..",
            _ => "?",
        }
    }
}

fn keyword(word: &str) -> Option<Tok> {
    Some(match word {
        "let" => Tok::Let,
        "const" => Tok::Const,
        "data" => Tok::Data,
        "param" => Tok::Param,
        "fn" => Tok::Fn,
        "for" => Tok::For,
        "in" => Tok::In,
        "if" => Tok::If,
        "else" => Tok::Else,
        "sample" => Tok::Sample,
        "observe" => Tok::Observe,
        "factor" => Tok::Factor,
        "maximize" => Tok::Maximize,
        "minimize" => Tok::Minimize,
        "fixed" => Tok::Fixed,
        "init" => Tok::Init,
        _ => return None,
    })
}

/// A token and where it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
}

fn span(start: usize, end: usize) -> Span {
    Span {
        start: start as u32,
        end: end as u32,
    }
}

/// Splits `src` into tokens, ending with [`Tok::Eof`]. The first malformed token is an error.
pub fn lex(src: &str) -> Result<Vec<Token>, Diag> {
    lex_within(src, usize::MAX)
}

/// [`lex`], refusing a text of more than `max_tokens` tokens as soon as it meets one more
/// (a token takes 40 bytes: a 64 MB file of one-character tokens must not become 2.6 GB of
/// them before the limits of the lowering can refuse it).
pub fn lex_within(src: &str, max_tokens: usize) -> Result<Vec<Token>, Diag> {
    lex_cancellable(src, max_tokens, None)
}

/// Tokens between two looks at the cancel flag of [`lex_cancellable`]: a few microseconds
/// of lexing.
pub const CANCEL_EVERY: usize = 4096;

/// [`lex_within`], ending with [`Diag::cancelled`] soon after `cancel` rises (within
/// [`CANCEL_EVERY`] tokens).
pub fn lex_cancellable(
    src: &str,
    max_tokens: usize,
    cancel: Option<&AtomicBool>,
) -> Result<Vec<Token>, Diag> {
    if src.len() > u32::MAX as usize / 2 {
        return Err(Diag::new(
            span(0, 0),
            "the source file is too large",
            "a file below 2 GiB",
        ));
    }
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut next_check = 0;
    while i < bytes.len() {
        if out.len() >= next_check {
            next_check = out.len() + CANCEL_EVERY;
            if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                return Err(Diag::cancelled(span(i, i + 1)));
            }
        }
        if out.len() >= max_tokens {
            return Err(Diag::new(
                span(i, i + 1),
                format!(
                    "the model has more than {max_tokens} tokens, more than the step limit \
                     lets compile"
                ),
                "a shorter model",
            )
            .with_note(super::lower::STEP_LIMIT_NOTE));
        }
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'/' && bytes.get(i + 1) == Some(&b'/') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && bytes.get(i + 1) == Some(&b'*') {
            let start = i;
            i += 2;
            loop {
                if i + 1 >= bytes.len() {
                    return Err(Diag::new(
                        span(start, start + 2),
                        "unterminated block comment",
                        "`*/` to close this comment",
                    ));
                }
                if bytes[i] == b'*' && bytes[i + 1] == b'/' {
                    i += 2;
                    break;
                }
                i += 1;
            }
            continue;
        }
        let start = i;
        if c.is_ascii_digit() || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            i = number_end(bytes, i);
            let text = &src[start..i];
            let value: f64 = text.replace('_', "").parse().map_err(|_| {
                Diag::new(
                    span(start, i),
                    format!("malformed number `{text}`"),
                    "a number such as `2`, `0.5` or `1e-3`",
                )
            })?;
            if bytes
                .get(i)
                .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
            {
                let end = ident_end(bytes, i);
                return Err(Diag::new(
                    span(start, end),
                    format!("malformed number `{}`", &src[start..end]),
                    "a number followed by an operator or space",
                ));
            }
            out.push(Token {
                tok: Tok::Num(value),
                span: span(start, i),
            });
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            i = ident_end(bytes, i);
            let word = &src[start..i];
            let tok = keyword(word).unwrap_or_else(|| Tok::Ident(word.to_string()));
            out.push(Token {
                tok,
                span: span(start, i),
            });
            continue;
        }
        if c == b'"' {
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' && bytes[i] != b'\n' {
                i += 1;
            }
            if i >= bytes.len() || bytes[i] != b'"' {
                return Err(Diag::new(
                    span(start, i),
                    "unterminated string",
                    "a closing `\"` on the same line",
                ));
            }
            i += 1;
            out.push(Token {
                tok: Tok::Str(src[start + 1..i - 1].to_string()),
                span: span(start, i),
            });
            continue;
        }
        let (tok, len) = match bytes[i..] {
            [b'<', b'=', ..] => (Tok::Le, 2),
            [b'>', b'=', ..] => (Tok::Ge, 2),
            [b'=', b'=', ..] => (Tok::EqEq, 2),
            [b'!', b'=', ..] => (Tok::Ne, 2),
            [b'&', b'&', ..] => (Tok::AndAnd, 2),
            [b'|', b'|', ..] => (Tok::OrOr, 2),
            [b'.', b'.', ..] => (Tok::DotDot, 2),
            _ => {
                let t = match c {
                    b'(' => Tok::LParen,
                    b')' => Tok::RParen,
                    b'{' => Tok::LBrace,
                    b'}' => Tok::RBrace,
                    b'[' => Tok::LBracket,
                    b']' => Tok::RBracket,
                    b',' => Tok::Comma,
                    b';' => Tok::Semi,
                    b'=' => Tok::Assign,
                    b'~' => Tok::Tilde,
                    b'+' => Tok::Plus,
                    b'-' => Tok::Minus,
                    b'*' => Tok::Star,
                    b'/' => Tok::Slash,
                    b'^' => Tok::Caret,
                    b'<' => Tok::Lt,
                    b'>' => Tok::Gt,
                    b'!' => Tok::Bang,
                    _ => {
                        let ch = src[i..].chars().next().unwrap_or('?');
                        let end = i + ch.len_utf8();
                        return Err(Diag::new(
                            span(i, end),
                            format!("unexpected character `{}`", ch.escape_debug()),
                            "a name, a number, an operator or punctuation",
                        ));
                    }
                };
                (t, 1)
            }
        };
        i += len;
        out.push(Token {
            tok,
            span: span(start, i),
        });
    }
    out.push(Token {
        tok: Tok::Eof,
        span: span(bytes.len(), bytes.len()),
    });
    Ok(out)
}

fn ident_end(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
        i += 1;
    }
    i
}

/// The end of a number starting at `i`: digits, a fraction only when a digit follows the
/// dot (so `0..n` is a range), and an optional exponent.
fn number_end(bytes: &[u8], mut i: usize) -> usize {
    let digits = |mut i: usize| {
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'_') {
            i += 1;
        }
        i
    };
    i = digits(i);
    if bytes.get(i) == Some(&b'.') && bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i = digits(i + 1);
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(bytes.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if bytes.get(j).is_some_and(u8::is_ascii_digit) {
            i = digits(j);
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Tok> {
        lex(src).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn range_is_not_a_fraction() {
        assert_eq!(
            kinds("0..n"),
            vec![Tok::Num(0.0), Tok::DotDot, Tok::Ident("n".into()), Tok::Eof]
        );
        assert_eq!(
            kinds("1.5e-3 .5"),
            vec![Tok::Num(1.5e-3), Tok::Num(0.5), Tok::Eof]
        );
    }

    #[test]
    fn comments_are_skipped() {
        assert_eq!(
            kinds("a // x\n/* y */ b"),
            vec![Tok::Ident("a".into()), Tok::Ident("b".into()), Tok::Eof]
        );
    }

    #[test]
    fn bad_character_is_an_error() {
        let e = lex("let x = 1 @ 2;").unwrap_err();
        assert_eq!(e.span, Span { start: 10, end: 11 });
    }
}
