//! What an expression lowers to: a number (an IR node), an array, or nothing; and
//! conditions, which select between values through if-statements.

use std::rc::Rc;

use crate::ir::{Builder, Var};

/// A compile-time value of the language.
#[derive(Clone, Debug)]
pub enum Value<'b> {
    Num(Var<'b>),
    /// The elements and their shape. Elements are shared (`Rc`), so an array can stand for
    /// far more numbers than it occupies; the shape bounds what a traversal may cost.
    Array(Rc<Vec<Value<'b>>>, Shape),
    /// What a function without a final expression returns.
    Unit,
}

impl<'b> Value<'b> {
    /// How the value reads in an error message.
    pub fn describe(&self) -> String {
        match self {
            Value::Num(_) => "a number".to_string(),
            Value::Array(a, _) => format!("an array of {} element(s)", a.len()),
            Value::Unit => "no value".to_string(),
        }
    }

    /// Nesting depth: 0 for a number, 1 for an array of numbers, ...
    pub fn depth(&self) -> u16 {
        match self {
            Value::Array(_, shape) => shape.depth,
            _ => 0,
        }
    }

    /// The number of numbers in the value, counted with repetition.
    pub fn size(&self) -> u64 {
        match self {
            Value::Array(_, shape) => shape.size,
            Value::Num(_) => 1,
            Value::Unit => 0,
        }
    }

    /// The constant numbers of an array (flattened), if every element is a constant.
    pub fn is_constant(&self) -> bool {
        match self {
            Value::Num(v) => v.as_const().is_some(),
            Value::Array(a, _) => a.iter().all(Value::is_constant),
            Value::Unit => false,
        }
    }

    /// The same node or the same shared array (a check that costs nothing).
    pub fn same_handle(&self, other: &Value<'b>) -> bool {
        match (self, other) {
            (Value::Num(a), Value::Num(b)) => a.id() == b.id(),
            (Value::Array(a, _), Value::Array(b, _)) => Rc::ptr_eq(a, b),
            (Value::Unit, Value::Unit) => true,
            _ => false,
        }
    }

    /// Same value structurally (same nodes): merging such values needs no if-statement.
    pub fn same(&self, other: &Value<'b>) -> bool {
        match (self, other) {
            (Value::Num(a), Value::Num(b)) => a.id() == b.id(),
            (Value::Array(a, _), Value::Array(b, _)) => {
                Rc::ptr_eq(a, b)
                    || (a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x.same(y)))
            }
            (Value::Unit, Value::Unit) => true,
            _ => false,
        }
    }
}

/// Nesting depth (1 for an array of numbers) and number of numbers in an array, counted
/// with repetition. Both are bounded when an array is made, so that comparing, merging or
/// dropping a value neither overflows the stack nor takes exponential time.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    pub depth: u16,
    pub size: u64,
}

/// A condition after lowering. Negation is pushed into the leaves, so there is no `Not`.
#[derive(Clone, Debug)]
pub enum Cond<'b> {
    /// Resolved at compile time.
    Const(bool),
    /// True when `g < 0`, or when `g >= 0` if `negate`.
    Guard {
        g: Var<'b>,
        negate: bool,
    },
    And(Box<Cond<'b>>, Box<Cond<'b>>),
    Or(Box<Cond<'b>>, Box<Cond<'b>>),
}

impl<'b> Cond<'b> {
    /// A guard condition, resolved now if the guard folded to a constant.
    pub fn guard(g: Var<'b>, negate: bool) -> Cond<'b> {
        match g.as_const() {
            Some(c) => Cond::Const((c < 0.0) != negate),
            None => Cond::Guard { g, negate },
        }
    }

    pub fn not(self) -> Cond<'b> {
        match self {
            Cond::Const(b) => Cond::Const(!b),
            Cond::Guard { g, negate } => Cond::Guard { g, negate: !negate },
            Cond::And(a, b) => Cond::Or(Box::new(a.not()), Box::new(b.not())),
            Cond::Or(a, b) => Cond::And(Box::new(a.not()), Box::new(b.not())),
        }
    }

    pub fn and(self, other: Cond<'b>) -> Cond<'b> {
        match (self, other) {
            (Cond::Const(false), _) | (_, Cond::Const(false)) => Cond::Const(false),
            (Cond::Const(true), c) | (c, Cond::Const(true)) => c,
            (a, b) => Cond::And(Box::new(a), Box::new(b)),
        }
    }

    pub fn or(self, other: Cond<'b>) -> Cond<'b> {
        match (self, other) {
            (Cond::Const(true), _) | (_, Cond::Const(true)) => Cond::Const(true),
            (Cond::Const(false), c) | (c, Cond::Const(false)) => c,
            (a, b) => Cond::Or(Box::new(a), Box::new(b)),
        }
    }

    /// `if self then t else e` as if-statements: `&&` and `||` become nested ifs that
    /// share the branch values, so each branch is computed once.
    pub fn select(&self, b: &'b Builder, t: Var<'b>, e: Var<'b>) -> Var<'b> {
        match self {
            Cond::Const(true) => t,
            Cond::Const(false) => e,
            Cond::Guard { g, negate: false } => b.if_neg(*g, t, e),
            Cond::Guard { g, negate: true } => b.if_neg(*g, e, t),
            Cond::And(x, y) => {
                let inner = y.select(b, t, e);
                x.select(b, inner, e)
            }
            Cond::Or(x, y) => {
                let inner = y.select(b, t, e);
                x.select(b, t, inner)
            }
        }
    }
}

/// Why two values cannot be merged at the end of an if.
pub struct ShapeMismatch {
    pub then_: String,
    pub else_: String,
}

/// `if cond then t else e` for whole values (element-wise for arrays).
pub fn merge<'b>(
    b: &'b Builder,
    cond: &Cond<'b>,
    t: &Value<'b>,
    e: &Value<'b>,
) -> Result<Value<'b>, ShapeMismatch> {
    if t.same(e) {
        return Ok(t.clone());
    }
    match (t, e) {
        (Value::Num(x), Value::Num(y)) => Ok(Value::Num(cond.select(b, *x, *y))),
        (Value::Array(x, dx), Value::Array(y, dy)) if x.len() == y.len() => {
            let items = x
                .iter()
                .zip(y.iter())
                .map(|(p, q)| merge(b, cond, p, q))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Value::Array(
                Rc::new(items),
                Shape {
                    depth: dx.depth.max(dy.depth),
                    size: dx.size.max(dy.size),
                },
            ))
        }
        _ => Err(ShapeMismatch {
            then_: t.describe(),
            else_: e.describe(),
        }),
    }
}
