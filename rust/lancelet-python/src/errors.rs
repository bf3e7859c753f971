//! Mapping core errors to the Python exception hierarchy defined in
//! `lancelet.exceptions` (so it can use multiple inheritance, e.g.
//! `NotFoundError` is also a `FileNotFoundError`).

use arrow_schema::ArrowError;
use lancelet::error::Existing;
use lancelet::Error;
use pyo3::exceptions::{PyOSError, PyRuntimeError};
use pyo3::prelude::*;

fn class_name(e: &Error) -> &'static str {
    match e {
        Error::NotFound { .. } => "NotFoundError",
        Error::AlreadyExists { existing: Existing::Index, .. } => "IndexExistsError",
        Error::AlreadyExists { existing: Existing::Reference, .. } => "ReferenceExistsError",
        Error::AlreadyExists { .. } => "AlreadyExistsError",
        Error::Corrupt { .. } => "CorruptFileError",
        Error::Unsupported { .. } => "UnsupportedError",
        Error::InvalidInput { .. } => "InvalidInputError",
        Error::Conflict { .. } => "CommitConflictError",
        Error::Io { .. } => "LanceletIOError",
        Error::Internal { .. } => "InternalError",
    }
}

/// One error of a core error's source chain, as Python will see it: an
/// `OSError` (with its errno, so Python picks the subclass: a
/// `PermissionError`, a `NotADirectoryError` ...) for an I/O or object-store
/// error, a plain `LanceletError` for anything else (an Arrow, protobuf,
/// JSON, zstd ... error), carrying the source's text.
#[derive(Clone, Debug)]
struct Cause {
    text: String,
    errno: Option<i32>,
    os: bool,
}

/// The source chain of `e`, outermost first. Everything from the first I/O
/// or object-store error down is a storage error (an object store wraps the
/// file system's error in errors of its own).
fn causes(e: &Error) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut storage = false;
    let mut next = std::error::Error::source(e);
    while let Some(s) = next {
        let io = s.downcast_ref::<std::io::Error>();
        storage |= io.is_some() || lancelet::io::is_object_store_error(s);
        out.push(Cause { text: s.to_string(), errno: io.and_then(std::io::Error::raw_os_error), os: storage });
        next = s.source();
    }
    out
}

/// The chain as Python exceptions, each the `__cause__` of the one before;
/// the outermost returned. `None` for an empty chain.
fn py_causes<'py>(py: Python<'py>, chain: &[Cause]) -> Option<Bound<'py, PyAny>> {
    let mut inner: Option<Bound<'py, PyAny>> = None;
    for c in chain.iter().rev() {
        let made = if c.os {
            let os_error = py.get_type::<PyOSError>();
            match c.errno {
                Some(errno) => os_error.call1((errno, c.text.clone())),
                None => os_error.call1((c.text.clone(),)),
            }
        } else {
            py.import("lancelet.exceptions").and_then(|m| m.getattr("LanceletError")).and_then(|cls| cls.call1((c.text.clone(),)))
        };
        let Ok(exc) = made else { continue };
        if let Some(i) = inner.take() {
            let _ = exc.setattr("__cause__", i);
        }
        inner = Some(exc);
    }
    inner
}

/// Set the Python exception `inst`'s `__cause__` to `e`'s source chain.
pub fn set_cause(py: Python<'_>, inst: &Bound<'_, PyAny>, e: &Error) {
    if let Some(cause) = py_causes(py, &causes(e)) {
        let _ = inst.setattr("__cause__", cause);
    }
}

/// Convert a core error into the matching Python exception, its source
/// chain as the `__cause__`.
pub fn to_py(e: Error) -> PyErr {
    let name = class_name(&e);
    let msg = e.to_string();
    Python::attach(|py| {
        match py.import("lancelet.exceptions").and_then(|m| m.getattr(name)) {
            Ok(cls) => match cls.call1((msg.clone(),)) {
                Ok(inst) => {
                    set_cause(py, &inst, &e);
                    PyErr::from_value(inst)
                }
                Err(err) => err,
            },
            // lancelet.exceptions failed to import: nothing typed to raise
            Err(_) => PyRuntimeError::new_err(msg),
        }
    })
}

/// Source chains of errors that left through an Arrow C stream, by message:
/// the stream carries only the text, and `lancelet._args.retyped` (which
/// turns the text back into the lancelet class) asks for the chain with
/// [`_stream_error_cause`]. Bounded: entries a foreign consumer never asks
/// for fall out.
static STREAM_CAUSES: std::sync::Mutex<std::collections::VecDeque<(String, Vec<Cause>)>> = std::sync::Mutex::new(std::collections::VecDeque::new());
const STREAM_CAUSES_KEPT: usize = 64;

/// A core error met while streaming, as the ArrowError the stream reports;
/// its source chain is kept for [`_stream_error_cause`].
pub fn stream_error(e: Error) -> ArrowError {
    let chain = causes(&e);
    if !chain.is_empty() {
        let mut kept = STREAM_CAUSES.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() == STREAM_CAUSES_KEPT {
            kept.pop_front();
        }
        kept.push_back((e.to_string(), chain));
    }
    ArrowError::ExternalError(Box::new(e))
}

/// The `__cause__` for a lancelet error that crossed an Arrow C stream with
/// message `msg` (the newest error of that message, taken), or `None`.
#[pyfunction]
pub fn _stream_error_cause(py: Python<'_>, msg: &str) -> Option<Py<PyAny>> {
    let chain = {
        let mut kept = STREAM_CAUSES.lock().unwrap_or_else(|p| p.into_inner());
        let at = kept.iter().rposition(|(m, _)| msg == m || msg.starts_with(m.as_str()))?;
        kept.remove(at)?.1
    };
    py_causes(py, &chain).map(Bound::unbind)
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
