//! What an expression lowers to: a number (an IR node), an array, packed data numbers, or
//! nothing; and conditions, which select between values through if-statements.

use std::ops::Range;
use std::rc::Rc;
use std::sync::Arc;

use super::super::bind::Packed;
use crate::ir::{Builder, Var};

/// A compile-time value of the language.
#[derive(Clone, Debug)]
pub enum Value<'b> {
    Num(Var<'b>),
    /// The elements and their shape. Elements are shared (`Rc`), so an array can stand for
    /// far more numbers than it occupies; the shape bounds what a traversal may cost.
    Array(Rc<Vec<Value<'b>>>, Shape),
    /// A rectangular array of data numbers, kept packed: a number becomes an IR constant
    /// only when it is read as one (see [`Numbers`]). It means exactly what the same
    /// numbers as an [`Value::Array`] of constants mean.
    Numbers(Numbers),
    /// What a function without a final expression returns.
    Unit,
}

/// A view of packed data numbers: the whole data array or, after indexing, one of its rows
/// (of a matrix, a row; of a row, a number is read out as a [`Value::Num`]). Cloning and
/// indexing copy no numbers.
#[derive(Clone, Debug)]
pub struct Numbers {
    /// Every number of the data array, row-major.
    values: Arc<[f64]>,
    /// The data array's extents, outermost first.
    dims: Rc<[usize]>,
    /// How many leading extents indexing has taken: this view's extents are
    /// `dims[level..]` (at least one).
    level: usize,
    /// Where this view's numbers start in `values`.
    start: usize,
}

impl Numbers {
    /// The whole of a packed data array.
    pub fn of(p: &Packed) -> Numbers {
        Numbers {
            values: p.values().clone(),
            dims: p.dims().into(),
            level: 0,
            start: 0,
        }
    }

    /// A column of numbers (extent `values.len()`).
    pub fn column(values: Arc<[f64]>) -> Numbers {
        Numbers {
            dims: Rc::new([values.len()]),
            values,
            level: 0,
            start: 0,
        }
    }

    /// This view's extents, outermost first.
    pub fn dims(&self) -> &[usize] {
        &self.dims[self.level..]
    }

    /// The number of elements (the outermost extent).
    pub fn len(&self) -> usize {
        self.dims()[0]
    }

    /// How many numbers the view holds.
    pub fn size(&self) -> usize {
        self.dims().iter().product()
    }

    /// The view's numbers, row-major.
    pub fn as_slice(&self) -> &[f64] {
        &self.values[self.start..self.start + self.size()]
    }

    /// Element `k` (below [`Numbers::len`]): a number, or a row.
    pub(super) fn element(&self, k: usize) -> Element {
        if self.dims().len() == 1 {
            return Element::Num(self.values[self.start + k]);
        }
        let step: usize = self.dims()[1..].iter().product();
        Element::Row(Numbers {
            values: self.values.clone(),
            dims: self.dims.clone(),
            level: self.level + 1,
            start: self.start + k * step,
        })
    }

    /// Element `k` as a value: a number becomes a constant node (interned: the same number
    /// read twice is one node).
    fn value<'b>(&self, b: &'b Builder, k: usize) -> Value<'b> {
        match self.element(k) {
            Element::Num(x) => Value::Num(b.constant(x)),
            Element::Row(r) => Value::Numbers(r),
        }
    }

    /// The same numbers of the same data array.
    fn same_view(&self, other: &Numbers) -> bool {
        Arc::ptr_eq(&self.values, &other.values)
            && self.start == other.start
            && self.dims() == other.dims()
    }
}

/// One element of a [`Numbers`] view.
pub(super) enum Element {
    Num(f64),
    Row(Numbers),
}

impl<'b> Value<'b> {
    /// How the value reads in an error message.
    pub fn describe(&self) -> String {
        match self {
            Value::Num(_) => "a number".to_string(),
            Value::Array(a, _) => format!("an array of {} element(s)", a.len()),
            Value::Numbers(n) => format!("an array of {} element(s)", n.len()),
            Value::Unit => "no value".to_string(),
        }
    }

    /// Nesting depth: 0 for a number, 1 for an array of numbers, ...
    pub fn depth(&self) -> u16 {
        match self {
            Value::Array(_, shape) => shape.depth,
            Value::Numbers(n) => n.dims().len() as u16,
            _ => 0,
        }
    }

    /// The number of numbers in the value, counted with repetition.
    pub fn size(&self) -> u64 {
        match self {
            Value::Array(_, shape) => shape.size,
            Value::Numbers(n) => n.size() as u64,
            Value::Num(_) => 1,
            Value::Unit => 0,
        }
    }

    /// The number of numbers in the value that are not held packed, counted with repetition
    /// (each was a step of lowering to make; packed data numbers cost nothing until read).
    pub fn unpacked_size(&self) -> u64 {
        match self {
            Value::Array(_, shape) => shape.size - shape.packed,
            Value::Numbers(_) | Value::Unit => 0,
            Value::Num(_) => 1,
        }
    }

    /// The number of numbers held packed, counted with repetition.
    pub fn packed_size(&self) -> u64 {
        match self {
            Value::Array(_, shape) => shape.packed,
            Value::Numbers(n) => n.size() as u64,
            Value::Num(_) | Value::Unit => 0,
        }
    }

    /// The constant numbers of an array (flattened), if every element is a constant.
    pub fn is_constant(&self) -> bool {
        match self {
            Value::Num(v) => v.as_const().is_some(),
            Value::Array(_, shape) => shape.constant,
            Value::Numbers(_) => true,
            Value::Unit => false,
        }
    }

    /// The number of elements of an array (`None` for a number or no value).
    pub fn len(&self) -> Option<usize> {
        match self {
            Value::Array(items, _) => Some(items.len()),
            Value::Numbers(n) => Some(n.len()),
            Value::Num(_) | Value::Unit => None,
        }
    }

    /// Element `k` of an array (`k` below [`Value::len`]); `None` for a number or no value.
    /// A packed number read here becomes a constant node.
    pub fn element(&self, b: &'b Builder, k: usize) -> Option<Value<'b>> {
        match self {
            Value::Array(items, _) => items.get(k).cloned(),
            Value::Numbers(n) => (k < n.len()).then(|| n.value(b, k)),
            Value::Num(_) | Value::Unit => None,
        }
    }

    /// The elements of an array, one value each (packed numbers become constant nodes, rows
    /// stay packed); `None` for a number or no value.
    pub fn elements(&self, b: &'b Builder) -> Option<Rc<Vec<Value<'b>>>> {
        match self {
            Value::Array(items, _) => Some(items.clone()),
            Value::Numbers(n) => Some(Rc::new((0..n.len()).map(|k| n.value(b, k)).collect())),
            Value::Num(_) | Value::Unit => None,
        }
    }

    /// Rows `rows` of a data column, as a plate reads them (the body's input at row `r` is
    /// element `rows.start + r`): the numbers of a one-dimensional packed array (shared with
    /// the data, not copied, when `rows` is the whole array), or of an array of constants
    /// (copied). `None` when the value is not a one-dimensional array of constants or `rows`
    /// is not within it.
    pub fn column(&self, rows: Range<usize>) -> Option<Arc<[f64]>> {
        match self {
            Value::Numbers(n) if n.dims().len() == 1 => {
                if rows.start > rows.end || rows.end > n.len() {
                    return None;
                }
                if rows.start == 0 && rows.end == n.values.len() {
                    return Some(n.values.clone());
                }
                Some(n.as_slice()[rows].into())
            }
            Value::Array(items, _) => items
                .get(rows)?
                .iter()
                .map(|v| match v {
                    Value::Num(x) => x.as_const(),
                    _ => None,
                })
                .collect(),
            _ => None,
        }
    }

    /// The same node or the same shared array (a check that costs nothing).
    pub fn same_handle(&self, other: &Value<'b>) -> bool {
        match (self, other) {
            (Value::Num(a), Value::Num(b)) => a.id() == b.id(),
            (Value::Array(a, _), Value::Array(b, _)) => Rc::ptr_eq(a, b),
            (Value::Numbers(a), Value::Numbers(b)) => a.same_view(b),
            (Value::Unit, Value::Unit) => true,
            _ => false,
        }
    }

    /// Same value structurally (same nodes): merging such values needs no if-statement. A
    /// packed number is the same as a constant node of the same bits (constants are
    /// interned by their bits).
    pub fn same(&self, other: &Value<'b>) -> bool {
        match (self, other) {
            (Value::Num(a), Value::Num(b)) => a.id() == b.id(),
            (Value::Array(a, _), Value::Array(b, _)) => {
                Rc::ptr_eq(a, b)
                    || (a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x.same(y)))
            }
            (Value::Numbers(a), Value::Numbers(b)) => {
                a.same_view(b)
                    || (a.dims() == b.dims()
                        && a.as_slice()
                            .iter()
                            .zip(b.as_slice())
                            .all(|(x, y)| x.to_bits() == y.to_bits()))
            }
            (Value::Numbers(n), Value::Array(a, _)) | (Value::Array(a, _), Value::Numbers(n)) => {
                n.len() == a.len()
                    && a.iter().enumerate().all(|(k, v)| match (n.element(k), v) {
                        (Element::Num(x), Value::Num(y)) => {
                            y.as_const().is_some_and(|y| x.to_bits() == y.to_bits())
                        }
                        (Element::Row(r), v) => Value::Numbers(r).same(v),
                        _ => false,
                    })
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
    /// How many of the `size` numbers are packed data ([`Value::Numbers`]).
    pub packed: u64,
    /// Whether every number is a constant (kept here, since arrays shared many times over
    /// must not be walked element by element: `[e, e]` nested 60 deep holds 2^60 arrays).
    pub constant: bool,
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
    if let (Value::Num(x), Value::Num(y)) = (t, e) {
        return Ok(Value::Num(cond.select(b, *x, *y)));
    }
    match (t.len(), e.len()) {
        (Some(n), Some(m)) if n == m => {
            // Packed data numbers become constants here, element by element.
            let x = t.elements(b).unwrap_or_default();
            let y = e.elements(b).unwrap_or_default();
            let items = x
                .iter()
                .zip(y.iter())
                .map(|(p, q)| merge(b, cond, p, q))
                .collect::<Result<Vec<_>, _>>()?;
            let constant = items.iter().all(Value::is_constant);
            Ok(Value::Array(
                Rc::new(items),
                Shape {
                    depth: t.depth().max(e.depth()),
                    size: t.size().max(e.size()),
                    // Merged element by element: nothing stays packed.
                    packed: 0,
                    constant,
                },
            ))
        }
        _ => Err(ShapeMismatch {
            then_: t.describe(),
            else_: e.describe(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packed(dims: &[usize], values: Vec<f64>) -> Value<'static> {
        let p = Packed::new(dims.to_vec(), values.into()).unwrap();
        Value::Numbers(Numbers::of(&p))
    }

    /// Catches a column that copies the whole data array, reads another row, or reads past
    /// the array.
    #[test]
    fn columns_share_the_data_and_stay_in_range() {
        let x = packed(&[4], vec![1.0, 2.0, 3.0, 4.0]);
        let Value::Numbers(n) = &x else { panic!() };
        let whole = x.column(0..4).unwrap();
        assert!(Arc::ptr_eq(&whole, &n.values), "the whole column is shared");
        assert_eq!(&x.column(1..3).unwrap()[..], &[2.0, 3.0]);
        assert!(x.column(2..5).is_none());
        // A row of a matrix is a column of its own.
        let m = packed(&[2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let b = Builder::new();
        let row = m.element(&b, 1).unwrap();
        assert_eq!(&row.column(0..3).unwrap()[..], &[4.0, 5.0, 6.0]);
        assert!(m.column(0..2).is_none(), "a matrix is not a column");
        // An array of constants written in a model is a column too (copied).
        let written = Value::Array(
            Rc::new(vec![
                Value::Num(b.constant(7.0)),
                Value::Num(b.constant(8.0)),
            ]),
            Shape {
                depth: 1,
                size: 2,
                packed: 0,
                constant: true,
            },
        );
        assert_eq!(&written.column(0..2).unwrap()[..], &[7.0, 8.0]);
        let z = b.latent("z");
        let with_latent = Value::Array(
            Rc::new(vec![Value::Num(z)]),
            Shape {
                depth: 1,
                size: 1,
                packed: 0,
                constant: false,
            },
        );
        assert!(with_latent.column(0..1).is_none());
    }

    /// Catches a packed number that is not the same as the constant node of its bits.
    #[test]
    fn packed_numbers_are_the_same_as_their_constants() {
        let b = Builder::new();
        let x = packed(&[2], vec![0.5, -0.0]);
        let same = Value::Array(
            Rc::new(vec![
                Value::Num(b.constant(0.5)),
                Value::Num(b.constant(-0.0)),
            ]),
            Shape {
                depth: 1,
                size: 2,
                packed: 0,
                constant: true,
            },
        );
        let other = Value::Array(
            Rc::new(vec![
                Value::Num(b.constant(0.5)),
                Value::Num(b.constant(0.0)),
            ]),
            Shape {
                depth: 1,
                size: 2,
                packed: 0,
                constant: true,
            },
        );
        assert!(x.same(&same) && same.same(&x));
        assert!(!x.same(&other), "-0 and 0 are different constants");
        assert!(x.same(&packed(&[2], vec![0.5, -0.0])));
        assert!(!x.same(&packed(&[1, 2], vec![0.5, -0.0])));
    }
}
