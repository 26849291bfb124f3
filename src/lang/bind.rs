//! Data supplied at run time: values for a model's `data` declarations, by name, from a JSON
//! object of numbers and (nested) arrays, as Stan's JSON data, or from Rust (the Python
//! package binds a dict of arrays through [`DataSet::insert_array`]).
//!
//! A value here replaces the one written in the model (`data y = [..];` is then a default),
//! and gives one to a declaration without (`data y;`). Every number must be finite, and every
//! name the set holds must be a `data` declaration of the model: a misspelt name is an error,
//! not silently unused data.

use std::collections::BTreeMap;
use std::path::Path;

use thiserror::Error;

/// A number or an array of values (arrays may nest and need not be rectangular).
#[derive(Clone, Debug, PartialEq)]
pub enum DataValue {
    Num(f64),
    Array(Vec<DataValue>),
}

impl DataValue {
    /// The first non-finite number, with its index path (`[2][0]`), if any.
    fn first_non_finite(&self) -> Option<(String, f64)> {
        match self {
            DataValue::Num(x) if !x.is_finite() => Some((String::new(), *x)),
            DataValue::Num(_) => None,
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
            DataValue::Array(items) => items.iter().map(DataValue::len_numbers).sum(),
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

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The names the set gives values for, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }

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
    /// empty shape is a single number.
    pub fn insert_array(
        &mut self,
        name: &str,
        shape: &[usize],
        values: &[f64],
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
        fn build(shape: &[usize], values: &[f64]) -> DataValue {
            match shape.split_first() {
                None => DataValue::Num(values[0]),
                Some((&n, rest)) => {
                    let step = rest.iter().product::<usize>();
                    DataValue::Array(
                        (0..n)
                            .map(|i| build(rest, &values[i * step..(i + 1) * step]))
                            .collect(),
                    )
                }
            }
        }
        let value = if shape.contains(&0) {
            build_empty(shape)
        } else {
            build(shape, values)
        };
        self.insert(name, value)
    }

    /// Reads a JSON object of numbers and (nested) arrays of numbers.
    pub fn from_json_str(text: &str, origin: &str) -> Result<DataSet, DataError> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            let at = format!("{origin}:{}:{}", e.line(), e.column());
            let rest = offset_of(text, e.line(), e.column()).map_or("", |o| &text[o..]);
            let rest = rest.trim_start_matches('-');
            if ["NaN", "Infinity", "inf", "nan"]
                .iter()
                .any(|w| rest.starts_with(w))
            {
                DataError(format!(
                    "{at}: NaN and infinities are not data (JSON has no such numbers)"
                ))
            } else {
                DataError(format!("{at}: not valid JSON: {e}"))
            }
        })?;
        DataSet::from_json_value(&value, origin)
    }

    /// Reads the JSON file at `path`.
    pub fn from_json_file(path: &Path) -> Result<DataSet, DataError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| DataError(format!("cannot read data file `{origin}`: {e}")))?;
        DataSet::from_json_str(&text, &origin)
    }

    /// Binds the members of a JSON object: each a number or a (nested) array of numbers.
    pub fn from_json_value(value: &serde_json::Value, origin: &str) -> Result<DataSet, DataError> {
        let serde_json::Value::Object(members) = value else {
            return Err(DataError(format!(
                "{origin}: the data must be a JSON object of names and values, like {{\"y\": [1, 2]}}, not {}",
                json_kind(value)
            )));
        };
        let mut set = DataSet::new(origin);
        for (name, v) in members {
            let value = from_json(v, origin, name, &mut String::new())?;
            set.insert(name, value)?;
        }
        Ok(set)
    }
}

/// An array of the given shape with no numbers (some extent is 0).
fn build_empty(shape: &[usize]) -> DataValue {
    match shape.split_first() {
        None => DataValue::Array(Vec::new()),
        Some((&n, rest)) => DataValue::Array((0..n).map(|_| build_empty(rest)).collect()),
    }
}

fn from_json(
    v: &serde_json::Value,
    origin: &str,
    name: &str,
    path: &mut String,
) -> Result<DataValue, DataError> {
    match v {
        serde_json::Value::Number(n) => match n.as_f64() {
            Some(x) if x.is_finite() => Ok(DataValue::Num(x)),
            _ => Err(DataError(format!(
                "{origin}: `{name}{path}` = {n} is not a finite 64-bit number"
            ))),
        },
        serde_json::Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                out.push(from_json(item, origin, name, path)?);
                path.truncate(len);
            }
            Ok(DataValue::Array(out))
        }
        other => Err(DataError(format!(
            "{origin}: `{name}{path}` is {}, not a number or an array of numbers",
            json_kind(other)
        ))),
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
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
            Some(&DataValue::Array(vec![
                DataValue::Num(1.0),
                DataValue::Num(2.5)
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
    fn arrays_from_a_flat_buffer() {
        let mut d = DataSet::new("dict");
        d.insert_array("w", &[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
            .unwrap();
        let DataValue::Array(rows) = d.get("w").unwrap() else {
            panic!()
        };
        assert_eq!(
            rows[1],
            DataValue::Array(vec![
                DataValue::Num(4.0),
                DataValue::Num(5.0),
                DataValue::Num(6.0)
            ])
        );
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
