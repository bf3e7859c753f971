//! Mapping core errors to the Python exception hierarchy defined in
//! `lancelet.exceptions` (so it can use multiple inheritance, e.g.
//! `NotFoundError` is also a `FileNotFoundError`).

use lancelet::Error;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

fn class_name(e: &Error) -> &'static str {
    match e {
        Error::NotFound { .. } => "NotFoundError",
        Error::AlreadyExists { .. } => "AlreadyExistsError",
        Error::Corrupt { .. } => "CorruptFileError",
        Error::Unsupported { .. } => "UnsupportedError",
        Error::InvalidInput { .. } => "InvalidInputError",
        Error::Conflict { .. } => "CommitConflictError",
        Error::Io { .. } => "LanceletIOError",
        Error::Internal { .. } => "InternalError",
    }
}

/// Convert a core error into the matching Python exception.
pub fn to_py(e: Error) -> PyErr {
    let name = class_name(&e);
    let msg = e.to_string();
    Python::attach(|py| {
        match py.import("lancelet.exceptions").and_then(|m| m.getattr(name)) {
            Ok(cls) => match cls.call1((msg.clone(),)) {
                Ok(inst) => PyErr::from_value(inst),
                Err(err) => err,
            },
            // lancelet.exceptions failed to import: nothing typed to raise
            Err(_) => PyRuntimeError::new_err(msg),
        }
    })
}

/// `Result` with the error converted for Python.
pub trait IntoPy<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for lancelet::Result<T> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

/// Run core code, turning a panic into `Error::Internal` so that no panic
/// ever unwinds into Python or through the Arrow C stream interface.
pub fn guard<T>(f: impl FnOnce() -> lancelet::Result<T>) -> lancelet::Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => Err(caught_panic(payload)),
    }
}

/// How many panics the glue caught, and the last one's message: a caught
/// panic is always a bug, and the test suite fails any test during which
/// this count grows (`tests/conftest.py`).
static CAUGHT: std::sync::Mutex<(u64, String)> = std::sync::Mutex::new((0, String::new()));

/// Record a caught panic and describe it as an internal error.
pub fn caught_panic(payload: Box<dyn std::any::Any + Send>) -> Error {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".to_string());
    let mut c = CAUGHT.lock().unwrap_or_else(|p| p.into_inner());
    c.0 += 1;
    c.1 = what.clone();
    Error::Internal { what }
}

/// `(count, last message)` of the panics caught so far in this process.
#[pyfunction]
pub fn _caught_panics() -> (u64, String) {
    CAUGHT.lock().unwrap_or_else(|p| p.into_inner()).clone()
}
