//! The parser: tokens to a syntax tree, by recursive descent with a Pratt loop for
//! operators. Nesting (parentheses, blocks, brackets) is bounded by an explicit limit so that
//! deeply nested input is an error, never a stack overflow. A caller's cancel flag is read
//! every few thousand tokens, so a long text stops soon after it rises.

use std::sync::atomic::AtomicBool;

mod expr;

use super::ast::*;
use super::diagnostic::Diag;
use super::lexer::{Tok, Token};
use crate::ir::Span;

/// Deepest nesting of expressions and blocks the parser accepts.
pub const MAX_NESTING: usize = 256;

/// Parses a whole file.
pub fn parse(tokens: &[Token]) -> Result<Program, Diag> {
    parse_cancellable(tokens, None)
}

/// [`parse`], ending with [`Diag::cancelled`] soon after `cancel` rises (within
/// [`CANCEL_EVERY`] tokens).
pub fn parse_cancellable(tokens: &[Token], cancel: Option<&AtomicBool>) -> Result<Program, Diag> {
    let mut p = Parser {
        tokens,
        pos: 0,
        depth: 0,
        cancel,
        next_check: 0,
    };
    let mut stmts = Vec::new();
    while p.peek() != &Tok::Eof {
        stmts.push(p.statement(true)?);
    }
    Ok(Program { stmts })
}

/// Tokens between two looks at the cancel flag: a few microseconds of parsing.
pub const CANCEL_EVERY: usize = 4096;

struct Parser<'t> {
    tokens: &'t [Token],
    pos: usize,
    depth: usize,
    cancel: Option<&'t AtomicBool>,
    /// The token position at which the cancel flag is read next.
    next_check: usize,
}

fn join(a: Span, b: Span) -> Span {
    Span {
        start: a.start.min(b.start),
        end: a.end.max(b.end),
    }
}

impl<'t> Parser<'t> {
    fn peek(&self) -> &Tok {
        &self.tokens[self.pos].tok
    }

    fn peek_at(&self, k: usize) -> &Tok {
        &self.tokens[(self.pos + k).min(self.tokens.len() - 1)].tok
    }

    fn span(&self) -> Span {
        self.tokens[self.pos].span
    }

    fn prev_span(&self) -> Span {
        self.tokens[self.pos.saturating_sub(1)].span
    }

    fn bump(&mut self) -> &Token {
        let t = &self.tokens[self.pos];
        if self.pos + 1 < self.tokens.len() {
            self.pos += 1;
        }
        t
    }

    fn eat(&mut self, tok: &Tok) -> bool {
        if self.peek() == tok {
            self.bump();
            true
        } else {
            false
        }
    }

    fn error_here(&self, expected: &str) -> Diag {
        let found = self.peek().describe();
        Diag::new(self.span(), format!("unexpected {found}"), expected)
    }

    fn expect(&mut self, tok: Tok, context: &str) -> Result<Span, Diag> {
        if self.peek() == &tok {
            Ok(self.bump().span)
        } else {
            let want = format!("`{}` {context}", tok.symbol());
            Err(self.error_here(&want))
        }
    }

    fn ident(&mut self, what: &str) -> Result<Ident, Diag> {
        match self.peek().clone() {
            Tok::Ident(name) => {
                let span = self.bump().span;
                Ok(Ident { name, span })
            }
            _ => Err(self.error_here(what)),
        }
    }

    fn enter(&mut self) -> Result<(), Diag> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(Diag::new(
                self.span(),
                format!("the program nests deeper than {MAX_NESTING} levels"),
                "less deeply nested expressions or blocks",
            ));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Reads the cancel flag once [`CANCEL_EVERY`] tokens have passed since the last look.
    /// Called at every statement and every atom of an expression: no run of tokens longer
    /// than the nesting limit passes without one.
    fn check_cancel(&mut self) -> Result<(), Diag> {
        if self.pos < self.next_check {
            return Ok(());
        }
        self.next_check = self.pos + CANCEL_EVERY;
        match self.cancel {
            Some(c) if c.load(std::sync::atomic::Ordering::Relaxed) => {
                Err(Diag::cancelled(self.span()))
            }
            _ => Ok(()),
        }
    }

    /// One statement; `top` allows declarations (`const`, `data`, `param`, `fn`).
    fn statement(&mut self, top: bool) -> Result<Stmt, Diag> {
        self.check_cancel()?;
        let start = self.span();
        let declaration = matches!(self.peek(), Tok::Const | Tok::Data | Tok::Param | Tok::Fn);
        if declaration && !top {
            let d = Diag::new(
                start,
                format!(
                    "{} is only allowed at the top level",
                    self.peek().describe()
                ),
                "a statement (`let`, `observe`, `if`, `for`, ...) inside a block",
            );
            return Err(d);
        }
        let kind = match self.peek().clone() {
            Tok::Let => {
                self.bump();
                let name = self.ident("a variable name after `let`")?;
                self.expect(Tok::Assign, "after the variable name")?;
                let value = self.expr()?;
                self.semi()?;
                StmtKind::Let { name, value }
            }
            Tok::Const | Tok::Data => {
                let is_const = self.bump().tok == Tok::Const;
                let name = self.ident("a name")?;
                // `data y;` declares data whose value comes at run time (`--data`).
                if !is_const && self.eat(&Tok::Semi) {
                    StmtKind::Data { name, value: None }
                } else {
                    self.expect(Tok::Assign, "after the name")?;
                    let value = self.expr()?;
                    self.semi()?;
                    if is_const {
                        StmtKind::Const { name, value }
                    } else {
                        StmtKind::Data {
                            name,
                            value: Some(value),
                        }
                    }
                }
            }
            Tok::Param => {
                self.bump();
                let name = self.ident("a parameter name after `param`")?;
                self.expect(Tok::Assign, "and an initial value after the parameter name")?;
                let init = self.expr()?;
                self.semi()?;
                StmtKind::Param { name, init }
            }
            Tok::Fn => self.function()?,
            Tok::Observe => {
                self.bump();
                let value = self.expr()?;
                self.expect(
                    Tok::Tilde,
                    "between the observed value and its distribution",
                )?;
                let dist = self.ident("a distribution such as `Normal`")?;
                let args = self.call_args("the distribution's arguments")?;
                self.semi()?;
                StmtKind::Observe { value, dist, args }
            }
            Tok::Factor | Tok::Maximize | Tok::Minimize => {
                let t = self.bump().tok.clone();
                let e = self.expr()?;
                self.semi()?;
                match t {
                    Tok::Factor => StmtKind::Factor(e),
                    Tok::Maximize => StmtKind::Maximize(e),
                    _ => StmtKind::Minimize(e),
                }
            }
            Tok::For => {
                self.bump();
                let var = self.ident("a loop variable after `for`")?;
                self.expect(Tok::In, "after the loop variable")?;
                let lo = self.expr()?;
                self.expect(Tok::DotDot, "in the range `a..b`")?;
                let hi = self.expr()?;
                let body = self.block()?;
                StmtKind::For { var, lo, hi, body }
            }
            Tok::If => {
                let e = self.if_expr(true)?;
                StmtKind::Expr(e)
            }
            Tok::Ident(_)
                if matches!(self.peek_at(1), Tok::Assign | Tok::LBracket)
                    && self.is_assignment() =>
            {
                let name = self.ident("a variable")?;
                let mut indices = Vec::new();
                while self.eat(&Tok::LBracket) {
                    indices.push(self.expr()?);
                    self.expect(Tok::RBracket, "to close the index")?;
                }
                self.expect(Tok::Assign, "in the assignment")?;
                let value = self.expr()?;
                self.semi()?;
                StmtKind::Assign {
                    name,
                    indices,
                    value,
                }
            }
            _ => {
                let e = self.expr()?;
                self.semi()?;
                StmtKind::Expr(e)
            }
        };
        Ok(Stmt {
            kind,
            span: join(start, self.prev_span()),
        })
    }

    /// Looks ahead over `name[..][..]` for a `=`: an indexed assignment rather than an
    /// expression that starts with an indexed name.
    fn is_assignment(&self) -> bool {
        let mut k = 1;
        let mut depth = 0usize;
        loop {
            match self.peek_at(k) {
                Tok::LBracket => depth += 1,
                Tok::RBracket => {
                    if depth == 0 {
                        return false;
                    }
                    depth -= 1;
                }
                Tok::Assign if depth == 0 => return true,
                Tok::Eof | Tok::Semi | Tok::LBrace | Tok::RBrace => return false,
                _ if depth == 0 => return false,
                _ => {}
            }
            k += 1;
        }
    }

    fn semi(&mut self) -> Result<(), Diag> {
        if self.eat(&Tok::Semi) {
            return Ok(());
        }
        // Point just after the statement, where the `;` is missing, unless the next token is
        // on the same line (then it is what is wrong).
        Err(self.error_here("`;` to end the statement"))
    }

    fn function(&mut self) -> Result<StmtKind, Diag> {
        self.bump();
        let name = self.ident("a function name after `fn`")?;
        self.expect(Tok::LParen, "to start the parameter list")?;
        let mut params = Vec::new();
        if !self.eat(&Tok::RParen) {
            loop {
                params.push(self.ident("a parameter name")?);
                if self.eat(&Tok::RParen) {
                    break;
                }
                self.expect(Tok::Comma, "or `)` in the parameter list")?;
            }
        }
        let body = self.block()?;
        Ok(StmtKind::Fn(std::rc::Rc::new(FnDef { name, params, body })))
    }

    fn block(&mut self) -> Result<Block, Diag> {
        let start = self.expect(Tok::LBrace, "to start a block")?;
        self.enter()?;
        let mut stmts = Vec::new();
        let mut tail = None;
        loop {
            match self.peek() {
                Tok::RBrace => break,
                Tok::Eof => {
                    return Err(Diag::new(
                        start,
                        "this `{` is never closed",
                        "a matching `}` before the end of the file",
                    ));
                }
                Tok::Let
                | Tok::Const
                | Tok::Data
                | Tok::Param
                | Tok::Fn
                | Tok::Observe
                | Tok::Factor
                | Tok::Maximize
                | Tok::Minimize
                | Tok::For => stmts.push(self.statement(false)?),
                Tok::Ident(_)
                    if matches!(self.peek_at(1), Tok::Assign | Tok::LBracket)
                        && self.is_assignment() =>
                {
                    stmts.push(self.statement(false)?)
                }
                _ => {
                    let s = self.span();
                    let is_if = self.peek() == &Tok::If;
                    let e = if is_if {
                        self.if_expr(true)?
                    } else {
                        self.expr()?
                    };
                    if self.eat(&Tok::Semi) {
                        stmts.push(Stmt {
                            span: join(s, self.prev_span()),
                            kind: StmtKind::Expr(e),
                        });
                    } else if self.peek() == &Tok::RBrace {
                        tail = Some(Box::new(e));
                    } else if is_if {
                        stmts.push(Stmt {
                            span: e.span,
                            kind: StmtKind::Expr(e),
                        });
                    } else {
                        return Err(
                            self.error_here("`;` after the expression, or `}` to end the block")
                        );
                    }
                }
            }
        }
        self.leave();
        let end = self.bump().span;
        Ok(Block {
            stmts,
            tail,
            span: join(start, end),
        })
    }
}
