//! The parser's expressions: a Pratt loop for the operators and their binding powers, then
//! prefixes, atoms, calls, arrays (and comprehensions), `if` as an expression and `sample`.

use super::super::ast::*;
use super::super::diagnostic::Diag;
use super::super::lexer::Tok;
use super::{Parser, join};

/// What an infix operator builds.
#[derive(Clone, Copy)]
enum Infix {
    Or,
    And,
    Cmp(CmpOp),
    Binary(BinOp),
}

/// The infix operator `tok` is, if it is one: its binding power, whether it is
/// right-associative, and what it builds (the Pratt loop's one table of operators).
fn infix(tok: &Tok) -> Option<(u8, bool, Infix)> {
    Some(match tok {
        Tok::OrOr => (1, false, Infix::Or),
        Tok::AndAnd => (2, false, Infix::And),
        Tok::Lt => (3, false, Infix::Cmp(CmpOp::Lt)),
        Tok::Le => (3, false, Infix::Cmp(CmpOp::Le)),
        Tok::Gt => (3, false, Infix::Cmp(CmpOp::Gt)),
        Tok::Ge => (3, false, Infix::Cmp(CmpOp::Ge)),
        Tok::EqEq => (3, false, Infix::Cmp(CmpOp::Eq)),
        Tok::Ne => (3, false, Infix::Cmp(CmpOp::Ne)),
        Tok::Plus => (4, false, Infix::Binary(BinOp::Add)),
        Tok::Minus => (4, false, Infix::Binary(BinOp::Sub)),
        Tok::Star => (5, false, Infix::Binary(BinOp::Mul)),
        Tok::Slash => (5, false, Infix::Binary(BinOp::Div)),
        Tok::Caret => (7, true, Infix::Binary(BinOp::Pow)),
        _ => return None,
    })
}

impl<'t> Parser<'t> {
    pub(super) fn expr(&mut self) -> Result<Expr, Diag> {
        self.enter()?;
        let e = self.binary(0);
        self.leave();
        e
    }

    /// Pratt loop. Binding powers: `||` 1, `&&` 2, comparisons 3 (non-associative),
    /// `+ -` 4, `* /` 5, prefix `-` `!` 6, `^` 7 (right-associative, so `-x^2 = -(x^2)`).
    fn binary(&mut self, min_bp: u8) -> Result<Expr, Diag> {
        let mut lhs = self.prefix()?;
        while let Some((bp, right_assoc, op)) = infix(self.peek()) {
            if bp < min_bp {
                break;
            }
            self.bump();
            let next = if right_assoc { bp } else { bp + 1 };
            self.enter()?;
            let rhs = self.binary(next)?;
            self.leave();
            let is_cmp = |op: Infix| matches!(op, Infix::Cmp(_));
            if is_cmp(op) && infix(self.peek()).is_some_and(|(_, _, next)| is_cmp(next)) {
                return Err(Diag::new(
                    self.span(),
                    "comparisons cannot be chained",
                    "`&&` between two comparisons, e.g. `a < b && b < c`",
                ));
            }
            let span = join(lhs.span, rhs.span);
            let (l, r) = (Box::new(lhs), Box::new(rhs));
            let kind = match op {
                Infix::Or => ExprKind::Or(l, r),
                Infix::And => ExprKind::And(l, r),
                Infix::Cmp(op) => ExprKind::Cmp { op, lhs: l, rhs: r },
                Infix::Binary(op) => ExprKind::Binary { op, lhs: l, rhs: r },
            };
            lhs = Expr { kind, span };
        }
        Ok(lhs)
    }

    fn prefix(&mut self) -> Result<Expr, Diag> {
        let start = self.span();
        match self.peek() {
            Tok::Minus | Tok::Bang => {
                let neg = self.bump().tok == Tok::Minus;
                self.enter()?;
                let e = self.binary(6)?;
                self.leave();
                let span = join(start, e.span);
                let kind = if neg {
                    ExprKind::Neg(Box::new(e))
                } else {
                    ExprKind::Not(Box::new(e))
                };
                Ok(Expr { kind, span })
            }
            _ => {
                let mut e = self.atom()?;
                while self.peek() == &Tok::LBracket {
                    self.bump();
                    let index = self.expr()?;
                    let end = self.expect(Tok::RBracket, "to close the index")?;
                    let span = join(e.span, end);
                    e = Expr {
                        kind: ExprKind::Index {
                            base: Box::new(e),
                            index: Box::new(index),
                        },
                        span,
                    };
                }
                Ok(e)
            }
        }
    }

    pub(super) fn call_args(&mut self, what: &str) -> Result<Vec<Expr>, Diag> {
        self.expect(Tok::LParen, &format!("to start {what}"))?;
        let mut args = Vec::new();
        if self.eat(&Tok::RParen) {
            return Ok(args);
        }
        loop {
            args.push(self.expr()?);
            if self.eat(&Tok::RParen) {
                return Ok(args);
            }
            self.expect(Tok::Comma, &format!("or `)` in {what}"))?;
        }
    }

    fn atom(&mut self) -> Result<Expr, Diag> {
        self.check_cancel()?;
        let start = self.span();
        match self.peek().clone() {
            Tok::Num(x) => {
                self.bump();
                Ok(Expr {
                    kind: ExprKind::Num(x),
                    span: start,
                })
            }
            Tok::Str(s) => {
                self.bump();
                Ok(Expr {
                    kind: ExprKind::Str(s),
                    span: start,
                })
            }
            Tok::Ident(name) => {
                self.bump();
                let id = Ident { name, span: start };
                if self.peek() == &Tok::LParen {
                    let args = self.call_args("the arguments")?;
                    let span = join(start, self.prev_span());
                    return Ok(Expr {
                        kind: ExprKind::Call(Box::new(Call { name: id, args })),
                        span,
                    });
                }
                Ok(Expr {
                    kind: ExprKind::Var(id),
                    span: start,
                })
            }
            Tok::LParen => {
                self.bump();
                let mut e = self.expr()?;
                let end = self.expect(Tok::RParen, "to close the parenthesis")?;
                e.span = join(start, end);
                Ok(e)
            }
            Tok::LBracket => self.array(),
            Tok::If => self.if_expr(false),
            Tok::Sample => self.sample(),
            _ => {
                Err(self.error_here("an expression (a number, a name, `(`, `[`, `if` or `sample`)"))
            }
        }
    }

    fn array(&mut self) -> Result<Expr, Diag> {
        let start = self.bump().span;
        self.enter()?;
        let mut items = Vec::new();
        if !self.eat(&Tok::RBracket) {
            let first = self.expr()?;
            if self.eat(&Tok::For) {
                let var = self.ident("a loop variable after `for`")?;
                self.expect(Tok::In, "after the loop variable")?;
                let lo = self.expr()?;
                self.expect(Tok::DotDot, "in the range `a..b`")?;
                let hi = self.expr()?;
                let end = self.expect(Tok::RBracket, "to close the array")?;
                self.leave();
                let kind = ExprKind::Comprehension(Box::new(Comprehension {
                    body: first,
                    var,
                    lo,
                    hi,
                }));
                return Ok(Expr {
                    kind,
                    span: join(start, end),
                });
            }
            items.push(first);
            loop {
                if self.eat(&Tok::RBracket) {
                    break;
                }
                self.expect(Tok::Comma, "or `]` in the array")?;
                if self.eat(&Tok::RBracket) {
                    break;
                }
                items.push(self.expr()?);
            }
        }
        self.leave();
        Ok(Expr {
            kind: ExprKind::Array(items),
            span: join(start, self.prev_span()),
        })
    }

    /// `if c { .. } else { .. }`, with `else if` chains; `else` may be left out only in
    /// statement position.
    pub(super) fn if_expr(&mut self, statement: bool) -> Result<Expr, Diag> {
        let start = self.bump().span;
        self.enter()?;
        let cond = self.expr()?;
        let then_ = self.block()?;
        let else_ = if self.eat(&Tok::Else) {
            if self.peek() == &Tok::If {
                let inner = self.if_expr(statement)?;
                let span = inner.span;
                Some(Block {
                    stmts: Vec::new(),
                    tail: Some(Box::new(inner)),
                    span,
                })
            } else {
                Some(self.block()?)
            }
        } else if statement {
            None
        } else {
            return Err(self.error_here("`else` and a block: an if-expression needs both branches"));
        };
        self.leave();
        let span = join(start, self.prev_span());
        Ok(Expr {
            kind: ExprKind::If(Box::new(IfExpr { cond, then_, else_ })),
            span,
        })
    }

    fn sample(&mut self) -> Result<Expr, Diag> {
        let start = self.bump().span;
        let dist = self.ident("a distribution after `sample`, such as `Normal`")?;
        let args = self.call_args("the distribution's arguments")?;
        let mut fixed = None;
        let mut init = Vec::new();
        loop {
            match self.peek() {
                Tok::Fixed if fixed.is_none() => fixed = Some(self.bump().span),
                Tok::Init if init.is_empty() => {
                    self.bump();
                    self.expect(Tok::LParen, "after `init`")?;
                    loop {
                        let key = self.ident("`mean`, `std` or `rho`")?;
                        let k = match key.name.as_str() {
                            "mean" => InitKey::Mean,
                            "std" => InitKey::Std,
                            "rho" => InitKey::Rho,
                            _ => {
                                return Err(Diag::new(
                                    key.span,
                                    format!("unknown guide setting `{}`", key.name),
                                    "`mean`, `std` or `rho`",
                                ));
                            }
                        };
                        self.expect(Tok::Assign, "after the guide setting")?;
                        let value = self.expr()?;
                        init.push((k, key.span, value));
                        if self.eat(&Tok::RParen) {
                            break;
                        }
                        self.expect(Tok::Comma, "or `)` in `init(...)`")?;
                    }
                }
                _ => break,
            }
        }
        let span = join(start, self.prev_span());
        Ok(Expr {
            kind: ExprKind::Sample(Box::new(SampleExpr {
                dist,
                args,
                fixed,
                init,
            })),
            span,
        })
    }
}
