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
use std::path::Path;
use std::sync::Arc;

use thiserror::Error;

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

    /// Reads a JSON object of numbers and (nested) arrays of numbers, at most
    /// [`DEFAULT_MAX_VALUES`] values.
    pub fn from_json_str(text: &str, origin: &str) -> Result<DataSet, DataError> {
        DataSet::from_json_str_within(text, origin, DEFAULT_MAX_VALUES)
    }

    /// Reads a JSON object of numbers and (nested) arrays of numbers, refusing it as soon as
    /// it holds more than `max_values` values (numbers and arrays) or gives a name twice.
    ///
    /// The text is read as a stream: values are counted and checked as they are read, never
    /// held as a JSON tree, so a refusal comes after at most `max_values` values.
    pub fn from_json_str_within(
        text: &str,
        origin: &str,
        max_values: usize,
    ) -> Result<DataSet, DataError> {
        use serde::de::DeserializeSeed;
        let mut reader = JsonReader {
            origin,
            max_values,
            count: 0,
        };
        let mut de = serde_json::Deserializer::from_str(text);
        let values = Members(&mut reader)
            .deserialize(&mut de)
            .and_then(|v| de.end().map(|()| v))
            .map_err(|e| json_error(&e, text, origin))?;
        let mut set = DataSet::new(origin);
        for (name, value) in values {
            set.insert(&name, value)?;
        }
        Ok(set)
    }

    /// Reads the JSON file at `path`: a regular file of at most `max_bytes` bytes holding at
    /// most `max_values` values.
    pub fn from_json_file(
        path: &Path,
        max_bytes: u64,
        max_values: usize,
    ) -> Result<DataSet, DataError> {
        use crate::input::{InputError, Links, read_text};
        let origin = path.display().to_string();
        let text = read_text(path, Links::Follow, max_bytes).map_err(|e| match e {
            InputError::TooLarge { cap, .. } => DataError(format!(
                "data file `{origin}` is larger than {cap} bytes (raise the limit with \
                 `--max-data-bytes`)"
            )),
            InputError::NotRegular { .. } => {
                DataError(format!("data file `{origin}` is not a regular file"))
            }
            InputError::Io { source, .. } => {
                DataError(format!("cannot read data file `{origin}`: {source}"))
            }
        })?;
        DataSet::from_json_str_within(&text, &origin, max_values)
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

/// The longest name quoted in a message, in characters.
const SHOWN_NAME_CHARS: usize = 60;

/// `{origin}:{line}:{column}: what`, with NaN and infinities explained.
fn json_error(e: &serde_json::Error, text: &str, origin: &str) -> DataError {
    let at = format!("{origin}:{}:{}", e.line(), e.column());
    if e.is_syntax() || e.is_eof() {
        let rest = offset_of(text, e.line(), e.column()).map_or("", |o| &text[o..]);
        let rest = rest.trim_start_matches('-');
        if ["NaN", "Infinity", "inf", "nan"]
            .iter()
            .any(|w| rest.starts_with(w))
        {
            return DataError(format!(
                "{at}: NaN and infinities are not data (JSON has no such numbers)"
            ));
        }
        return DataError(format!("{at}: not valid JSON: {}", without_position(e)));
    }
    DataError(format!("{at}: {}", without_position(e)))
}

/// serde_json's message without its ` at line L column C`.
fn without_position(e: &serde_json::Error) -> String {
    let full = e.to_string();
    match full.rsplit_once(" at line ") {
        Some((what, _)) => what.to_string(),
        None => full,
    }
}

/// The state of one streaming read: where the text came from and how many values it held.
struct JsonReader<'a> {
    origin: &'a str,
    max_values: usize,
    count: usize,
}

impl JsonReader<'_> {
    /// Counts one value, refusing one too many.
    fn count<E: serde::de::Error>(&mut self) -> Result<(), E> {
        self.count += 1;
        if self.count > self.max_values {
            return Err(E::custom(format!(
                "the data hold more than the {} values (numbers and arrays) allowed",
                self.max_values
            )));
        }
        Ok(())
    }
}

/// The top level: an object of names and values, each name once.
struct Members<'s, 'a>(&'s mut JsonReader<'a>);

impl<'de> serde::de::DeserializeSeed<'de> for Members<'_, '_> {
    type Value = Vec<(String, DataValue)>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Members<'_, '_> {
    type Value = Vec<(String, DataValue)>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "a JSON object of names and values, like {{\"y\": [1, 2]}} ({})",
            self.0.origin
        )
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use serde::de::Error;
        let mut names = std::collections::BTreeSet::new();
        let mut out = Vec::new();
        while let Some(name) = map.next_key::<String>()? {
            if names.contains(&name) {
                return Err(A::Error::custom(format!(
                    "`{}` is given twice (each name once)",
                    clip(&name)
                )));
            }
            let mut path = Vec::new();
            let value = map.next_value_seed(Value {
                reader: &mut *self.0,
                name: &name,
                path: &mut path,
            })?;
            names.insert(name.clone());
            out.push((name, value));
        }
        Ok(out)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
        Err(not_an_object("an array"))
    }
    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Err(not_an_object("a string"))
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Err(not_an_object("a number"))
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Err(not_an_object("a number"))
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Err(not_an_object("a number"))
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Err(not_an_object("a boolean"))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Err(not_an_object("null"))
    }
}

fn not_an_object<E: serde::de::Error>(kind: &str) -> E {
    E::custom(format!(
        "the data must be a JSON object of names and values, like {{\"y\": [1, 2]}}, not {kind}"
    ))
}

/// A name quoted in a message, cut to [`SHOWN_NAME_CHARS`] characters.
fn clip(name: &str) -> String {
    crate::lang::diagnostic::clip(name, SHOWN_NAME_CHARS)
}

/// One value of member `name` at index path `path` (`[2][0]`, written out only for a
/// message: a million numbers must not cost a million strings).
struct Value<'s, 'a, 'n> {
    reader: &'s mut JsonReader<'a>,
    name: &'n str,
    path: &'s mut Vec<usize>,
}

impl Value<'_, '_, '_> {
    fn not_data<E: serde::de::Error>(&self, kind: &str) -> E {
        E::custom(format!(
            "`{}{}` is {kind}, not a number or an array of numbers",
            clip(self.name),
            index_path(self.path)
        ))
    }

    fn number<E: serde::de::Error>(self, x: f64) -> Result<DataValue, E> {
        self.reader.count()?;
        if !x.is_finite() {
            return Err(E::custom(format!(
                "`{}{}` = {x} is not a finite 64-bit number",
                clip(self.name),
                index_path(self.path)
            )));
        }
        Ok(DataValue::Num(x))
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Value<'_, '_, '_> {
    type Value = DataValue;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<DataValue, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Value<'_, '_, '_> {
    type Value = DataValue;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a number or an array of numbers")
    }

    fn visit_f64<E: serde::de::Error>(self, x: f64) -> Result<DataValue, E> {
        self.number(x)
    }
    fn visit_u64<E: serde::de::Error>(self, x: u64) -> Result<DataValue, E> {
        self.number(x as f64)
    }
    fn visit_i64<E: serde::de::Error>(self, x: i64) -> Result<DataValue, E> {
        self.number(x as f64)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<DataValue, A::Error> {
        self.reader.count()?;
        let mut items = Items::default();
        for k in 0.. {
            self.path.push(k);
            let item = seq.next_element_seed(Value {
                reader: &mut *self.reader,
                name: self.name,
                path: &mut *self.path,
            })?;
            self.path.pop();
            match item {
                Some(v) => items.push(v),
                None => break,
            }
        }
        Ok(items.finish())
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<DataValue, E> {
        Err(self.not_data("a string"))
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<DataValue, E> {
        Err(self.not_data("a boolean"))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<DataValue, E> {
        Err(self.not_data("null"))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, _: A) -> Result<DataValue, A::Error> {
        Err(self.not_data("an object"))
    }
}

/// `[2][0]` for the indices 2, 0.
fn index_path(path: &[usize]) -> String {
    path.iter().map(|k| format!("[{k}]")).collect()
}

/// The byte offset of 1-based `line` and `column` (serde_json's error position).
fn offset_of(text: &str, line: usize, column: usize) -> Option<usize> {
    let start: usize = text
        .split_inclusive('\n')
        .take(line.checked_sub(1)?)
        .map(str::len)
        .sum();
    let at = start + column.saturating_sub(1);
    text.is_char_boundary(at).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_nested_arrays_bind() {
        let d = DataSet::from_json_str(r#"{"y": [1, 2.5], "n": 3, "m": [[1], [2, 3]]}"#, "d.json")
            .unwrap();
        assert_eq!(d.get("n"), Some(&DataValue::Num(3.0)));
        assert_eq!(
            d.get("y"),
            DataValue::from_packed(&[2], vec![1.0, 2.5].into()).as_ref()
        );
        // A ragged array is a list of its elements, each packed.
        assert_eq!(
            d.get("m"),
            Some(&DataValue::Array(vec![
                DataValue::from_packed(&[1], vec![1.0].into()).unwrap(),
                DataValue::from_packed(&[2], vec![2.0, 3.0].into()).unwrap(),
            ]))
        );
        assert_eq!(d.get("m").unwrap().len_numbers(), 3);
    }

    #[test]
    fn bad_values_are_named() {
        let e = |t: &str| DataSet::from_json_str(t, "d.json").unwrap_err().0;
        assert!(
            e(r#"{"y": [1, "a"]}"#).contains("`y[1]` is a string"),
            "{}",
            e(r#"{"y": [1, "a"]}"#)
        );
        assert!(e(r#"{"y": [1, NaN]}"#).contains("d.json:1:11: NaN"));
        assert!(e(r#"{"y": 1e999}"#).contains("d.json:1:"));
        assert!(e("[1, 2]").contains("a JSON object"));
        assert!(e(r#"{"y": {"a": 1}}"#).contains("`y` is an object"));
    }

    #[test]
    fn a_name_given_twice_is_refused_with_the_name() {
        let e = DataSet::from_json_str(r#"{"y": [1], "n": 2, "y": [3]}"#, "d.json")
            .unwrap_err()
            .0;
        assert!(e.contains("`y` is given twice"), "{e}");
        assert!(e.starts_with("d.json:1:"), "{e}");
        // A long name is cut in the message.
        let long = "k".repeat(10_000);
        let e = DataSet::from_json_str(&format!(r#"{{"{long}": 1, "{long}": 2}}"#), "d.json")
            .unwrap_err()
            .0;
        assert!(e.contains("given twice") && e.len() < 300, "{e}");
    }

    #[test]
    fn values_are_counted_as_they_are_read() {
        // Numbers and arrays both count: 3 numbers and 2 arrays here.
        let text = r#"{"y": [[1, 2], 3]}"#;
        assert!(DataSet::from_json_str_within(text, "d.json", 5).is_ok());
        let e = DataSet::from_json_str_within(text, "d.json", 4)
            .unwrap_err()
            .0;
        assert!(e.contains("more than the 4 values"), "{e}");
        // Deep nesting is refused by the reader's depth limit, not by the stack.
        let deep = format!(r#"{{"y": {}{}}}"#, "[".repeat(100_000), "]".repeat(100_000));
        let e = DataSet::from_json_str(&deep, "d.json").unwrap_err().0;
        assert!(e.starts_with("d.json:1:"), "{e}");
    }

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
