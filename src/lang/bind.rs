//! Data supplied at run time: values for a model's `data` declarations, by name, from a JSON
//! object of numbers and (nested) arrays, as Stan's JSON data, or from Rust (the Python
//! package binds a dict of arrays through [`DataSet::insert_array`]).
//!
//! A value here replaces the one written in the model (`data y = [..];` is then a default),
//! and gives one to a declaration without (`data y;`). Every number must be finite, and every
//! name the set holds must be a `data` declaration of the model: a misspelt name is an error,
//! not silently unused data.
//!
//! A rectangular array (a column, a matrix) is held packed, as its extents and its numbers
//! row-major ([`Packed`]): a million rows cost a million `f64`s, and the compiler makes an IR
//! node of a number only where the model reads it.

use std::collections::BTreeMap;
use std::sync::Arc;

use thiserror::Error;

mod json;

/// A number or an array of values (arrays may nest and need not be rectangular).
///
/// One value has one form: an array whose elements are all numbers, or all rectangular
/// arrays of one shape, is [`DataValue::Numbers`]; only a ragged array (elements of different
/// shapes) is [`DataValue::Array`]. Build arrays with [`DataValue::array`], which keeps that.
#[derive(Clone, Debug, PartialEq)]
pub enum DataValue {
    /// A number.
    Num(f64),
    /// A rectangular array, packed.
    Numbers(Packed),
    /// A ragged array: its elements differ in shape.
    Array(Vec<DataValue>),
}

/// A rectangular array of numbers: its extents, outermost first (at least one), and its
/// numbers row-major (as numpy and C store them). The numbers are shared, so that the
/// compiler and a plate's columns can hold them without a copy.
#[derive(Clone, Debug, PartialEq)]
pub struct Packed {
    dims: Vec<usize>,
    values: Arc<[f64]>,
}

impl Packed {
    /// `values` as an array of extents `dims`; `None` unless there is at least one extent
    /// and the extents multiply to the number of values.
    pub fn new(dims: Vec<usize>, values: Arc<[f64]>) -> Option<Packed> {
        let size = dims.iter().try_fold(1usize, |acc, &n| acc.checked_mul(n))?;
        (!dims.is_empty() && size == values.len()).then_some(Packed { dims, values })
    }

    /// The extents, outermost first.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// The numbers, row-major.
    pub fn values(&self) -> &Arc<[f64]> {
        &self.values
    }

    /// The index path (`[2][0]`) of the number at flat position `k`.
    pub fn path_of(&self, mut k: usize) -> String {
        let mut ix = vec![0; self.dims.len()];
        for (slot, &n) in ix.iter_mut().zip(&self.dims).rev() {
            if n > 0 {
                *slot = k % n;
                k /= n;
            }
        }
        ix.iter().map(|i| format!("[{i}]")).collect()
    }
}

impl DataValue {
    /// An array of `items`, packed when they are all numbers or all rectangular arrays of
    /// one shape (an empty array is packed, of extent 0).
    pub fn array(items: Vec<DataValue>) -> DataValue {
        let mut acc = Items::default();
        for it in items {
            acc.push(it);
        }
        acc.finish()
    }

    /// `values` (row-major) as an array of extents `shape`; a number if `shape` is empty.
    /// `None` if the extents do not multiply to the number of values.
    pub fn from_packed(shape: &[usize], values: Arc<[f64]>) -> Option<DataValue> {
        if shape.is_empty() {
            return (values.len() == 1).then(|| DataValue::Num(values[0]));
        }
        Packed::new(shape.to_vec(), values).map(DataValue::Numbers)
    }

    /// The first non-finite number, with its index path (`[2][0]`), if any.
    fn first_non_finite(&self) -> Option<(String, f64)> {
        match self {
            DataValue::Num(x) if !x.is_finite() => Some((String::new(), *x)),
            DataValue::Num(_) => None,
            DataValue::Numbers(p) => {
                let k = p.values.iter().position(|x| !x.is_finite())?;
                Some((p.path_of(k), p.values[k]))
            }
            DataValue::Array(items) => items.iter().enumerate().find_map(|(i, v)| {
                v.first_non_finite()
                    .map(|(path, x)| (format!("[{i}]{path}"), x))
            }),
        }
    }

    /// How many numbers it holds.
    pub fn len_numbers(&self) -> usize {
        match self {
            DataValue::Num(_) => 1,
            DataValue::Numbers(p) => p.values.len(),
            DataValue::Array(items) => items.iter().map(DataValue::len_numbers).sum(),
        }
    }

    /// The extents of its elements when they differ (a ragged array): for messages that
    /// say why an index is out of range in one row and not another.
    pub fn ragged_lengths(&self) -> Option<Vec<Option<usize>>> {
        let DataValue::Array(items) = self else {
            return None;
        };
        Some(
            items
                .iter()
                .map(|v| match v {
                    DataValue::Num(_) => None,
                    DataValue::Numbers(p) => Some(p.dims[0]),
                    DataValue::Array(items) => Some(items.len()),
                })
                .collect(),
        )
    }
}

/// The elements of an array as they are read: packed while they are numbers, or arrays of
/// one shape, one after another; a list of values from the first element that differs.
enum Items {
    Flat {
        /// The extents of every element so far (empty for numbers); `None` before the first.
        inner: Option<Vec<usize>>,
        values: Vec<f64>,
        count: usize,
    },
    Ragged(Vec<DataValue>),
}

impl Default for Items {
    fn default() -> Items {
        Items::Flat {
            inner: None,
            values: Vec::new(),
            count: 0,
        }
    }
}

impl Items {
    fn push(&mut self, v: DataValue) {
        if let Items::Flat {
            inner,
            values,
            count,
        } = self
        {
            let fits = match (&v, inner.as_deref()) {
                (DataValue::Num(x), None | Some([])) => {
                    values.push(*x);
                    true
                }
                (DataValue::Numbers(p), None) => {
                    values.extend_from_slice(&p.values);
                    true
                }
                (DataValue::Numbers(p), Some(dims)) if dims == p.dims => {
                    values.extend_from_slice(&p.values);
                    true
                }
                _ => false,
            };
            if fits {
                if inner.is_none() {
                    *inner = Some(match &v {
                        DataValue::Numbers(p) => p.dims.clone(),
                        _ => Vec::new(),
                    });
                }
                *count += 1;
                return;
            }
            let before = std::mem::take(self).finish_elements();
            *self = Items::Ragged(before);
        }
        if let Items::Ragged(items) = self {
            items.push(v);
        }
    }

    /// The elements read so far, one value each.
    fn finish_elements(self) -> Vec<DataValue> {
        match self {
            Items::Ragged(items) => items,
            Items::Flat {
                inner,
                values,
                count,
            } => {
                let inner = inner.unwrap_or_default();
                let step = inner.iter().product::<usize>();
                (0..count)
                    .map(|i| {
                        let part = &values[i * step..(i + 1) * step];
                        if inner.is_empty() {
                            DataValue::Num(part[0])
                        } else {
                            DataValue::Numbers(Packed {
                                dims: inner.clone(),
                                values: part.into(),
                            })
                        }
                    })
                    .collect()
            }
        }
    }

    fn finish(self) -> DataValue {
        match self {
            Items::Ragged(items) => DataValue::Array(items),
            Items::Flat {
                inner,
                values,
                count,
            } => {
                let mut dims = vec![count];
                dims.extend(inner.unwrap_or_default());
                DataValue::Numbers(Packed {
                    dims,
                    values: values.into(),
                })
            }
        }
    }
}

/// What is wrong with a data set: one sentence naming the file, the name and the place.
#[derive(Clone, Debug, PartialEq, Error)]
#[error("{0}")]
pub struct DataError(pub String);

/// Values for a model's `data` declarations, by name, and where they came from (a file name
/// for messages).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DataSet {
    origin: String,
    values: BTreeMap<String, DataValue>,
}

impl DataSet {
    /// An empty set; `origin` names it in messages (`data.json`, `the Python dict`).
    pub fn new(origin: &str) -> DataSet {
        DataSet {
            origin: origin.to_string(),
            values: BTreeMap::new(),
        }
    }

    /// Where the values came from.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Whether the set gives no values.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The names the set gives values for, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }

    /// The value of `name`, if the set gives one.
    pub fn get(&self, name: &str) -> Option<&DataValue> {
        self.values.get(name)
    }

    /// Adds (or replaces) the value of `name`; every number must be finite.
    pub fn insert(&mut self, name: &str, value: DataValue) -> Result<(), DataError> {
        if let Some((path, x)) = value.first_non_finite() {
            return Err(DataError(format!(
                "{}: `{name}{path}` is {x}; data must be finite numbers",
                self.origin
            )));
        }
        self.values.insert(name.to_string(), value);
        Ok(())
    }

    /// Adds `name` as an array of `shape` (row-major `values`, as numpy stores them); an
    /// empty shape is a single number. The numbers are copied once; see
    /// [`DataSet::insert_packed`] to share them.
    pub fn insert_array(
        &mut self,
        name: &str,
        shape: &[usize],
        values: &[f64],
    ) -> Result<(), DataError> {
        self.insert_packed(name, shape, values.into())
    }

    /// Adds `name` as an array of `shape` whose numbers (row-major) are `values`, without
    /// copying them; an empty shape is a single number.
    pub fn insert_packed(
        &mut self,
        name: &str,
        shape: &[usize],
        values: Arc<[f64]>,
    ) -> Result<(), DataError> {
        let expected = shape
            .iter()
            .try_fold(1usize, |acc, &n| acc.checked_mul(n))
            .ok_or_else(|| DataError(format!("{}: `{name}` is too large", self.origin)))?;
        if expected != values.len() {
            return Err(DataError(format!(
                "{}: `{name}` has shape {shape:?} ({expected} numbers) but {} numbers were given",
                self.origin,
                values.len()
            )));
        }
        let value = DataValue::from_packed(shape, values)
            .expect("the extents multiply to the number of values");
        self.insert(name, value)
    }
}

/// Default of the most values (numbers and arrays) a JSON data set may hold: as many as a
/// file of the default `--max-data-bytes` can (a value takes at least two bytes of JSON, a
/// digit and a separator). Numbers are held packed and become IR nodes only where the model
/// reads them, so the node limit does not bound the data.
pub const DEFAULT_MAX_VALUES: usize = max_values_in(super::DEFAULT_MAX_DATA_BYTES);

/// The most values a JSON text of `max_bytes` bytes can hold.
pub const fn max_values_in(max_bytes: u64) -> usize {
    let n = max_bytes / 2 + 1;
    if n > usize::MAX as u64 {
        usize::MAX
    } else {
        n as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_from_a_flat_buffer() {
        let mut d = DataSet::new("dict");
        d.insert_array("w", &[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
            .unwrap();
        let Some(DataValue::Numbers(w)) = d.get("w") else {
            panic!("{:?}", d.get("w"))
        };
        assert_eq!(w.dims(), &[2, 3]);
        assert_eq!(&w.values()[3..], &[4.0, 5.0, 6.0]);
        assert!(d.insert_array("v", &[2], &[1.0]).is_err());
        assert!(
            d.insert_array("v", &[1], &[f64::NAN])
                .unwrap_err()
                .0
                .contains("`v[0]` is NaN")
        );
        d.insert_array("s", &[], &[7.0]).unwrap();
        assert_eq!(d.get("s"), Some(&DataValue::Num(7.0)));
    }
}
