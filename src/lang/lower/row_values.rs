//! A plate body's values that differ by row: an index chain applied row by row
//! ([`pick`]: one value, one per row, or a column of packed data read without a node per
//! number), and the rows' values made one body value ([`collapse`]: constants become a column).

use super::Value;
use super::value::Shape;
use crate::ir::{Builder, Span, Var};
use std::rc::Rc;
use std::sync::Arc;

/// Why a loop is not a plate: the rule, and where it failed.
pub(super) type Refusal = (String, Option<Span>);

/// One index of an index chain, in a body.
#[derive(Clone, Debug)]
pub(super) enum Step {
    /// The same element in every row.
    At(i64, Span),
    /// Row `r` takes element `rows[r]`.
    Rows(Rc<[i64]>, Span),
}

/// A value indexed by a chain: one value, or one per row; a number or a column when the
/// chain ends in packed data (read without making a node per number).
pub(super) enum Picked<'x> {
    One(Value<'x>),
    Rows(Vec<Value<'x>>),
    Number(f64),
    Column(Arc<[f64]>),
}

/// One element: a value, or a number of packed data.
enum Elem<'x> {
    Val(Value<'x>),
    Num(f64),
}

/// Per-row elements as a pick: a column when they are numbers of packed data.
fn per_row<'x>(elems: Vec<Elem<'x>>, span: Span) -> Result<Picked<'x>, Refusal> {
    if elems.iter().all(|e| matches!(e, Elem::Num(_))) {
        return Ok(Picked::Column(
            elems
                .iter()
                .map(|e| match e {
                    Elem::Num(x) => *x,
                    Elem::Val(_) => unreachable!("checked above"),
                })
                .collect(),
        ));
    }
    elems
        .into_iter()
        .map(|e| match e {
            Elem::Val(v) => Ok(v),
            Elem::Num(_) => Err((
                "reads numbers and arrays at one index in different rows".to_string(),
                Some(span),
            )),
        })
        .collect::<Result<_, _>>()
        .map(Picked::Rows)
}

/// `v[steps[0]][steps[1]]..`; an index out of range (in any row) refuses the plate (the
/// unrolled loop then reports it).
pub(super) fn pick<'x>(v: Value<'x>, steps: &[Step]) -> Result<Picked<'x>, Refusal> {
    fn element<'x>(v: &Value<'x>, i: i64, span: Span) -> Result<Elem<'x>, Refusal> {
        match v {
            Value::Array(items, _) if i >= 0 && (i as usize) < items.len() => {
                Ok(Elem::Val(items[i as usize].clone()))
            }
            Value::Numbers(n) if i >= 0 && (i as usize) < n.len() => {
                Ok(match n.element(i as usize) {
                    super::value::Element::Num(x) => Elem::Num(x),
                    super::value::Element::Row(r) => Elem::Val(Value::Numbers(r)),
                })
            }
            _ => Err((
                format!("an index ({i}) is out of range or indexes {}", v.describe()),
                Some(span),
            )),
        }
    }
    let mut cur = Picked::One(v);
    for step in steps {
        cur = match (cur, step) {
            (Picked::One(v), Step::At(i, span)) => match element(&v, *i, *span)? {
                Elem::Val(v) => Picked::One(v),
                Elem::Num(x) => Picked::Number(x),
            },
            (Picked::Rows(vs), Step::At(i, span)) => per_row(
                vs.iter()
                    .map(|v| element(v, *i, *span))
                    .collect::<Result<_, _>>()?,
                *span,
            )?,
            // The whole of a data column, row by row: the data's own numbers, not a copy.
            (Picked::One(v), Step::Rows(ix, _))
                if ix.iter().enumerate().all(|(r, &i)| i == r as i64)
                    && v.column(0..ix.len()).is_some() =>
            {
                Picked::Column(v.column(0..ix.len()).expect("checked in the guard"))
            }
            (Picked::One(v), Step::Rows(ix, span)) => per_row(
                ix.iter()
                    .map(|&i| element(&v, i, *span))
                    .collect::<Result<_, _>>()?,
                *span,
            )?,
            (Picked::Rows(vs), Step::Rows(ix, span)) => per_row(
                vs.iter()
                    .zip(ix.iter())
                    .map(|(v, &i)| element(v, i, *span))
                    .collect::<Result<_, _>>()?,
                *span,
            )?,
            (Picked::Number(_) | Picked::Column(_), Step::At(_, span) | Step::Rows(_, span)) => {
                return Err(("indexes a number".to_string(), Some(*span)));
            }
        };
    }
    Ok(cur)
}

/// Per-row values as one body value: numbers that are constants in every row become a column
/// (`name` names it in messages), others go through `other`; arrays of one length element
/// by element.
pub(super) fn collapse<'x, 'c>(
    vals: &[Value<'x>],
    name: &str,
    b: &'c Builder,
    other: &mut dyn FnMut(&[Var<'x>]) -> Result<Var<'c>, String>,
) -> Result<Value<'c>, Refusal> {
    if let Some(nums) = vals
        .iter()
        .map(|v| match v {
            Value::Num(x) => Some(*x),
            _ => None,
        })
        .collect::<Option<Vec<Var<'x>>>>()
    {
        if let Some(column) = column_of(&nums) {
            return Ok(Value::Num(b.column(&format!("{name}[..]"), column)));
        }
        return other(&nums).map(Value::Num).map_err(|why| (why, None));
    }
    let len = match vals.first() {
        Some(Value::Array(items, _)) => items.len(),
        Some(Value::Numbers(n)) => n.len(),
        _ => return Err(("reads a value with no number by row".to_string(), None)),
    };
    let ragged = || {
        (
            "reads arrays of different lengths in different rows".to_string(),
            None,
        )
    };
    let mut items = Vec::with_capacity(len);
    // Per-row arrays of the body's values, not constants: a row's array is not constant.
    let mut shape = Shape {
        depth: 1,
        size: 0,
        packed: 0,
        constant: false,
    };
    let packed_rows = vals
        .iter()
        .all(|v| matches!(v, Value::Numbers(n) if n.len() == len && n.dims().len() == 1));
    for j in 0..len {
        let item = if packed_rows {
            // Rows of packed numbers: element `j` of every row is a column, read directly.
            let column: Arc<[f64]> = vals
                .iter()
                .map(|v| match v {
                    Value::Numbers(n) => n.as_slice()[j],
                    _ => unreachable!("checked above"),
                })
                .collect();
            Value::Num(b.column(&format!("{name}[..]"), column))
        } else {
            let per_row: Vec<Value<'x>> = vals
                .iter()
                .map(|v| match v {
                    Value::Array(a, _) if a.len() == len => Ok(a[j].clone()),
                    Value::Numbers(n) if n.len() == len => match n.element(j) {
                        super::value::Element::Row(r) => Ok(Value::Numbers(r)),
                        super::value::Element::Num(_) => Err(ragged()),
                    },
                    _ => Err(ragged()),
                })
                .collect::<Result<_, _>>()?;
            collapse(&per_row, name, b, other)?
        };
        shape.depth = shape.depth.max(item.depth() + 1);
        shape.size = shape.size.saturating_add(item.size());
        items.push(item);
    }
    Ok(Value::Array(Rc::new(items), shape))
}

/// The data column of per-row numbers, when every one is a constant. (Where data arrays
/// are stored otherwise, this is the one place that reads their elements by row.)
fn column_of(nums: &[Var<'_>]) -> Option<Arc<[f64]>> {
    nums.iter().map(|x| x.as_const()).collect()
}
