//! Data from Python as the core's [`core::Data`]: a dict of numbers, lists and numpy arrays
//! read without going through text, and the bound data handed back as numpy arrays. Kept apart
//! from `dsgd.Model` because it is the one place that reads Python's numbers.

use std::sync::Arc;

use numpy::{PyArray1, PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::core;

/// A dict of numbers and arrays as the core's [`core::Data`] (see [`numbers_of`]).
pub(crate) fn data_of(py: Python<'_>, data: Option<&Bound<'_, PyAny>>) -> PyResult<core::Data> {
    let Some(data) = data.filter(|d| !d.is_none()) else {
        return Ok(Vec::new());
    };
    let dict = data.cast::<PyDict>().map_err(|_| {
        PyValueError::new_err("data must be a dict from data names to numbers or arrays")
    })?;
    let np = py.import("numpy")?;
    let mut out = Vec::new();
    for (k, v) in dict.iter() {
        let name: String = k
            .extract()
            .map_err(|_| PyValueError::new_err("data names must be strings"))?;
        let (shape, values) = numbers_of(&np, &name, &v)?;
        out.push((name, shape, values));
    }
    Ok(out)
}

/// The shape and numbers (row-major) of `value`, a number, a list or a numpy array of
/// numbers, read from its memory, never through text or Python floats: a float64 array is
/// copied once; float32, integer and boolean arrays and lists are converted by numpy first.
/// An array of Python objects (dtype object: `None`, strings, mixed types) is refused: its
/// elements are not numbers numpy can convert without running Python code per element.
fn numbers_of(
    np: &Bound<'_, PyModule>,
    name: &str,
    value: &Bound<'_, PyAny>,
) -> PyResult<(Vec<usize>, Arc<[f64]>)> {
    let not_numbers =
        |why: String| PyValueError::new_err(format!("data `{name}` is not numbers: {why}"));
    // A flat list of numbers: `fromiter` reads it in one pass, where `asarray` first finds
    // out its shape and type (three times faster on a million numbers). Anything else, or
    // a list it refuses (nested, text) or reads a NaN from (which may have been `None`),
    // goes the way of arrays, for the message.
    let value = match value.cast::<PyList>() {
        Ok(list) => {
            let kwargs = PyDict::new(np.py());
            kwargs.set_item("dtype", "float64")?;
            kwargs.set_item("count", list.len())?;
            match np.call_method("fromiter", (list,), Some(&kwargs)) {
                Ok(arr)
                    if !np
                        .call_method1("isnan", (&arr,))?
                        .call_method0("any")?
                        .is_truthy()? =>
                {
                    arr
                }
                _ => value.clone(),
            }
        }
        Err(_) => value.clone(),
    };
    let value = &value;
    let arr = np
        .call_method1("asarray", (value,))
        .map_err(|e| not_numbers(e.to_string()))?;
    let dtype = arr.getattr("dtype")?;
    let kind: String = dtype.getattr("kind")?.extract()?;
    match kind.as_str() {
        "f" | "i" | "u" | "b" => {}
        "O" => {
            return Err(not_numbers(
                "it is an array of Python objects (dtype object); give numbers: a list of \
                 numbers, or a numpy array of floats, integers or booleans"
                    .to_string(),
            ));
        }
        _ => {
            return Err(not_numbers(format!(
                "its dtype is {} (floats, integers or booleans are numbers)",
                dtype.str()?
            )));
        }
    }
    // `asarray` with an order keeps a number 0-dimensional (`ascontiguousarray` would not).
    let kwargs = PyDict::new(np.py());
    kwargs.set_item("dtype", "float64")?;
    kwargs.set_item("order", "C")?;
    let arr = np
        .call_method("asarray", (arr,), Some(&kwargs))
        .map_err(|e| not_numbers(e.to_string()))?;
    let arr = arr
        .cast::<PyArrayDyn<f64>>()
        .map_err(|e| not_numbers(e.to_string()))?;
    let view = arr.readonly();
    let values: Arc<[f64]> = view
        .as_slice()
        .map_err(|e| not_numbers(e.to_string()))?
        .into();
    Ok((view.shape().to_vec(), values))
}

/// The bound data as a dict of numpy arrays.
pub(crate) fn data_dict<'py>(py: Python<'py>, data: &core::Data) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, shape, values) in data {
        let arr = PyArray1::from_slice(py, values).reshape(shape.clone())?;
        d.set_item(name, arr)?;
    }
    Ok(d)
}
