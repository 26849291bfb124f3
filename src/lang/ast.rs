//! The syntax tree, every node with its source span. It records what was written; names,
//! types and constants are resolved later, by the lowering.

use crate::ir::Span;

/// A name as written, with its place.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

/// A guide initialisation key of `init(...)`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum InitKey {
    Mean,
    Std,
    Rho,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Num(f64),
    Str(String),
    Var(Ident),
    Array(Vec<Expr>),
    /// `[body for var in lo..hi]`.
    Comprehension(Box<Comprehension>),
    Index {
        base: Box<Expr>,
        index: Box<Expr>,
    },
    Call(Box<Call>),
    Neg(Box<Expr>),
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    Cmp {
        op: CmpOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    /// `if cond { .. } else { .. }`.
    If(Box<IfExpr>),
    /// `sample D(args) [fixed] [init(key = value, ..)]`.
    Sample(Box<SampleExpr>),
}

// The rarer, larger kinds of expression are boxed, so that an `Expr` stays small: a
// million-term chain is two million of them (48 bytes each instead of 104).

/// `[body for var in lo..hi]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Comprehension {
    pub body: Expr,
    pub var: Ident,
    pub lo: Expr,
    pub hi: Expr,
}

/// `name(args)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub name: Ident,
    pub args: Vec<Expr>,
}

/// `if cond { .. } else { .. }`; `else_` is `None` only in statement position.
#[derive(Clone, Debug, PartialEq)]
pub struct IfExpr {
    pub cond: Expr,
    pub then_: Block,
    pub else_: Option<Block>,
}

/// `sample D(args) [fixed] [init(key = value, ..)]`.
#[derive(Clone, Debug, PartialEq)]
pub struct SampleExpr {
    pub dist: Ident,
    pub args: Vec<Expr>,
    pub fixed: Option<Span>,
    pub init: Vec<(InitKey, Span, Expr)>,
}

/// Statements and an optional final expression (the block's value).
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub tail: Option<Box<Expr>>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    Let {
        name: Ident,
        value: Expr,
    },
    /// `name[i][j] = value` (no indices for a plain re-assignment).
    Assign {
        name: Ident,
        indices: Vec<Expr>,
        value: Expr,
    },
    Const {
        name: Ident,
        value: Expr,
    },
    /// `data name = value;`, or `data name;` whose value is bound at run time.
    Data {
        name: Ident,
        value: Option<Expr>,
    },
    Param {
        name: Ident,
        init: Expr,
    },
    Fn(std::rc::Rc<FnDef>),
    Observe {
        value: Expr,
        dist: Ident,
        args: Vec<Expr>,
    },
    Factor(Expr),
    Maximize(Expr),
    Minimize(Expr),
    For {
        var: Ident,
        lo: Expr,
        hi: Expr,
        body: Block,
    },
    /// An expression evaluated for its effects (a call, an `if`).
    Expr(Expr),
}

/// `fn name(params) { body }`.
#[derive(Clone, Debug, PartialEq)]
pub struct FnDef {
    pub name: Ident,
    pub params: Vec<Ident>,
    pub body: Block,
}

/// Dropping a syntax tree takes constant stack, whatever its shape: a left-associative chain
/// such as a million-term `a + a + ...` is a million boxes deep, and the derived recursive drop
/// would overflow the stack. The boxed operands are moved onto a heap stack instead, so each
/// node is dropped after its children were taken out.
impl Drop for Expr {
    fn drop(&mut self) {
        if !has_boxed_children(&self.kind) {
            return;
        }
        let mut pending: Vec<Box<Expr>> = Vec::new();
        take_boxed_children(&mut self.kind, &mut pending);
        while let Some(mut e) = pending.pop() {
            take_boxed_children(&mut e.kind, &mut pending);
        }
    }
}

fn has_boxed_children(kind: &ExprKind) -> bool {
    matches!(
        kind,
        ExprKind::Index { .. }
            | ExprKind::Neg(_)
            | ExprKind::Not(_)
            | ExprKind::Binary { .. }
            | ExprKind::Cmp { .. }
            | ExprKind::And(..)
            | ExprKind::Or(..)
    )
}

/// Moves the operands of a chainable node out (leaving cheap placeholders behind).
#[allow(
    clippy::vec_box,
    reason = "the boxes are moved as they are, never their contents"
)]
fn take_boxed_children(kind: &mut ExprKind, out: &mut Vec<Box<Expr>>) {
    if !has_boxed_children(kind) {
        return;
    }
    match std::mem::replace(kind, ExprKind::Num(0.0)) {
        ExprKind::Neg(x) | ExprKind::Not(x) => out.push(x),
        ExprKind::Index {
            base: a, index: b, ..
        }
        | ExprKind::Binary { lhs: a, rhs: b, .. }
        | ExprKind::Cmp { lhs: a, rhs: b, .. }
        | ExprKind::And(a, b)
        | ExprKind::Or(a, b) => {
            out.push(a);
            out.push(b);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_stay_small() {
        // Long chains of operators are as many expressions as terms: their size is the
        // memory of a big program's syntax tree.
        assert!(
            std::mem::size_of::<Expr>() <= 48,
            "{}",
            std::mem::size_of::<Expr>()
        );
    }
}

/// A whole file.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub stmts: Vec<Stmt>,
}

impl StmtKind {
    /// Whether the statement makes the program an objective (rather than variational) one.
    pub fn is_objective_marker(&self) -> bool {
        matches!(
            self,
            StmtKind::Param { .. } | StmtKind::Maximize(_) | StmtKind::Minimize(_)
        )
    }
}
