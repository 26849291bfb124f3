//! The package's exceptions and how a [`CoreError`] becomes one: `dsgd.CompileError` (with
//! file, line, column, message and what was expected), `ValueError` for impossible options,
//! `MemoryError` for settings beyond this machine's memory, `OSError` for unreadable files,
//! `KeyboardInterrupt` for a cancelled run, `RuntimeError` for a caught panic.

use pyo3::exceptions::{
    PyException, PyFileNotFoundError, PyKeyboardInterrupt, PyMemoryError, PyOSError,
    PyRuntimeError, PyValueError,
};
use pyo3::prelude::*;

use crate::core::CoreError;

pyo3::create_exception!(
    dsgd,
    CompileError,
    PyException,
    "A model that does not compile. `str(e)` is the whole diagnostic (file:line:column, the \
     source line with a caret, what was expected); the attributes `file`, `line`, `column` \
     (1-based, None when the error is about the file as a whole), `message` and `expected` \
     give its parts."
);

/// Each message as a Python `UserWarning` (what the command line prints as `warning: ..`),
/// attributed to the caller's line. A warnings filter that makes warnings errors makes this
/// one an exception.
pub fn warn_all(py: Python<'_>, messages: &[String]) -> PyResult<()> {
    let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
    for m in messages {
        let text = std::ffi::CString::new(m.replace('\0', "?"))
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        PyErr::warn(py, &category, &text, 1)?;
    }
    Ok(())
}

/// The Python exception for `e`.
pub fn to_py(py: Python<'_>, e: CoreError) -> PyErr {
    match e {
        CoreError::Compile(c) => {
            let err = CompileError::new_err(c.to_string());
            let v = err.value(py);
            let (line, column) = match &c.location {
                Some(l) => (Some(l.line), Some(l.column)),
                None => (None, None),
            };
            // Setting attributes on a fresh exception object cannot fail in practice; if it
            // did, the message still carries everything.
            let _ = v.setattr("file", c.file.clone());
            let _ = v.setattr("line", line);
            let _ = v.setattr("column", column);
            let _ = v.setattr("message", c.message.clone());
            let _ = v.setattr("expected", c.expected.clone());
            err
        }
        CoreError::Invalid(msg) => PyValueError::new_err(msg),
        CoreError::Memory(msg) => PyMemoryError::new_err(msg),
        CoreError::Panicked(msg) => {
            PyRuntimeError::new_err(format!("internal error: {msg} (please report)"))
        }
        CoreError::NotFound(msg) => PyFileNotFoundError::new_err(msg),
        CoreError::Io(msg) => PyOSError::new_err(msg),
        CoreError::Cancelled => PyKeyboardInterrupt::new_err("the run was cancelled"),
    }
}
