//! Long work without the GIL, stoppable by Ctrl-C.
//!
//! The work runs on a scoped worker thread with a cancel flag; the calling thread waits for it
//! without the GIL in slices of [`POLL`] and between them runs Python's signal handlers
//! (`check_signals`). When one raises (Ctrl-C gives `KeyboardInterrupt`), the flag goes up,
//! the run loop stops before its next step, and the exception propagates: the interpreter
//! answers within a slice plus one optimisation step. Off the main thread (thread pools, Ray
//! workers) Python delivers no signals and the wait simply ends when the work does.
//!
//! A panic in the work is caught here, at the binding's boundary, and becomes a
//! `RuntimeError` with its message: the interpreter and the package stay usable.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::core::CoreError;
use crate::errors::to_py;

/// How often the waiting thread looks for signals.
const POLL: Duration = Duration::from_millis(50);

/// Runs `work` on a worker thread, GIL released, cancelling it on a Python signal exception.
pub fn run<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce(&Arc<AtomicBool>) -> Result<T, CoreError> + Send,
{
    run_core(py, work)?.map_err(|e| to_py(py, e))
}

/// [`run`], handing back the work's own error for the caller to look at; the outer error
/// is the Python exception that interrupted it (or a panic's).
pub fn run_core<T, F>(py: Python<'_>, work: F) -> PyResult<Result<T, CoreError>>
where
    T: Send,
    F: FnOnce(&Arc<AtomicBool>) -> Result<T, CoreError> + Send,
{
    let cancel = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        let flag = &cancel;
        let handle = s.spawn(move || {
            let r = catch_unwind(AssertUnwindSafe(|| work(flag)))
                .unwrap_or_else(|payload| Err(CoreError::Panicked(panic_message(&*payload))));
            // The receiver may be gone if the caller was interrupted; nothing to tell then.
            let _ = tx.send(());
            r
        });
        let mut rx = rx;
        let mut interrupted = None;
        loop {
            let (waited, back) = py.detach(move || (rx.recv_timeout(POLL), rx));
            rx = back;
            match waited {
                Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {}
            }
            if let Err(e) = py.check_signals() {
                cancel.store(true, Ordering::Relaxed);
                interrupted = Some(e);
                break;
            }
        }
        let joined = py.detach(move || handle.join());
        if let Some(e) = interrupted {
            return Err(e);
        }
        match joined {
            Ok(r) => Ok(r),
            Err(payload) => Err(PyRuntimeError::new_err(format!(
                "internal error: {} (please report)",
                panic_message(&*payload)
            ))),
        }
    })
}

/// A call whose work panics with `message` (a test build's `_core._panic_in_work`): what
/// the test of the panic -> `RuntimeError` path calls, there being no input that makes the
/// work panic on purpose.
#[cfg(feature = "test-hooks")]
#[pyfunction]
pub fn _panic_in_work(py: Python<'_>, message: String) -> PyResult<()> {
    run(py, move |_| -> Result<(), CoreError> {
        panic!("{message}")
    })
}

/// What a panic said, when it said it as text.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned());
    match text {
        Some(t) => format!("a panic: {t}"),
        None => "a panic".to_string(),
    }
}
