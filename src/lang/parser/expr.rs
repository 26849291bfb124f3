//! The parser's expressions: a Pratt loop for the operators and their binding powers, then
//! prefixes, atoms, calls, arrays (and comprehensions), `if` as an expression and `sample`.

use super::super::ast::*;
use super::super::diagnostic::Diag;
use super::super::lexer::Tok;
use super::{Parser, join};

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
        loop {
            let (bp, right_assoc) = match self.peek() {
                Tok::OrOr => (1, false),
                Tok::AndAnd => (2, false),
                Tok::Lt | Tok::Le | Tok::Gt | Tok::Ge | Tok::EqEq | Tok::Ne => (3, false),
                Tok::Plus | Tok::Minus => (4, false),
                Tok::Star | Tok::Slash => (5, false),
                Tok::Caret => (7, true),
                _ => break,
            };
            if bp < min_bp {
                break;
            }
            let op_tok = self.bump().clone();
            let next = if right_assoc { bp } else { bp + 1 };
            self.enter()?;
            let rhs = self.binary(next)?;
            self.leave();
            if bp == 3
                && matches!(
                    self.peek(),
                    Tok::Lt | Tok::Le | Tok::Gt | Tok::Ge | Tok::EqEq | Tok::Ne
                )
            {
                return Err(Diag::new(
                    self.span(),
                    "comparisons cannot be chained",
                    "`&&` between two comparisons, e.g. `a < b && b < c`",
                ));
            }
            let span = join(lhs.span, rhs.span);
            let (l, r) = (Box::new(lhs), Box::new(rhs));
            let kind = match op_tok.tok {
                Tok::OrOr => ExprKind::Or(l, r),
                Tok::AndAnd => ExprKind::And(l, r),
                Tok::Lt => ExprKind::Cmp {
                    op: CmpOp::Lt,
                    lhs: l,
                    rhs: r,
                },
                Tok::Le => ExprKind::Cmp {
                    op: CmpOp::Le,
                    lhs: l,
                    rhs: r,
                },
                Tok::Gt => ExprKind::Cmp {
                    op: CmpOp::Gt,
                    lhs: l,
                    rhs: r,
                },
                Tok::Ge => ExprKind::Cmp {
                    op: CmpOp::Ge,
                    lhs: l,
                    rhs: r,
                },
                Tok::EqEq => ExprKind::Cmp {
                    op: CmpOp::Eq,
                    lhs: l,
                    rhs: r,
                },
                Tok::Ne => ExprKind::Cmp {
                    op: CmpOp::Ne,
                    lhs: l,
                    rhs: r,
                },
                Tok::Plus => ExprKind::Binary {
                    op: BinOp::Add,
                    lhs: l,
                    rhs: r,
                },
                Tok::Minus => ExprKind::Binary {
                    op: BinOp::Sub,
                    lhs: l,
                    rhs: r,
                },
                Tok::Star => ExprKind::Binary {
                    op: BinOp::Mul,
                    lhs: l,
                    rhs: r,
                },
                Tok::Slash => ExprKind::Binary {
                    op: BinOp::Div,
                    lhs: l,
                    rhs: r,
                },
                _ => ExprKind::Binary {
                    op: BinOp::Pow,
                    lhs: l,
                    rhs: r,
                },
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
