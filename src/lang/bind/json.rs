//! Reading a data set from JSON (as Stan's JSON data): streamed through serde, counting the
//! values as they are read so that a huge or deeply nested text is refused before it is held,
//! with errors that name the file, line, column and the value's path.

use std::path::Path;

use super::{DEFAULT_MAX_VALUES, DataError, DataSet, DataValue, Items};

impl DataSet {
    /// Reads a JSON object of numbers and (nested) arrays of numbers, at most
    /// `DEFAULT_MAX_VALUES` values.
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
}
