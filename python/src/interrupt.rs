//! Long work without the GIL, stoppable by Ctrl-C.
//!
//! The work runs on a scoped worker thread with a cancel flag; the calling thread waits for it
//! without the GIL in slices of [`POLL`] and between them runs Python's signal handlers
//! (`check_signals`). When one raises (Ctrl-C gives `KeyboardInterrupt`), the flag goes up,
//! the run loop stops before its next step, and the exception propagates: the interpreter
//! answers within a slice plus one optimisation step. Off the main thread (thread pools, Ray
//! workers) Python delivers no signals and the wait simply ends when the work does.

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
    F: FnOnce(&AtomicBool) -> Result<T, CoreError> + Send,
{
    let cancel = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        let flag = &cancel;
        let handle = s.spawn(move || {
            let r = work(flag);
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
            Ok(r) => r.map_err(|e| to_py(py, e)),
            Err(_) => Err(PyRuntimeError::new_err(
                "internal error: the worker thread panicked (please report)",
            )),
        }
    })
}
