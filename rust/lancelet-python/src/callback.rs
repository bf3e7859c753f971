//! Python functions the core calls back (progress callbacks, UDFs): one
//! rule for all of them. The function runs with the GIL taken; an exception
//! it raises is kept, the core is stopped with a marker error (so the
//! operation aborts the way any failure does: nothing committed, its files
//! removed), and when the call returns the kept exception is re-raised
//! unchanged — the caller sees their own exception, not a wrapper.

use std::sync::{Arc, Mutex};

use lancelet::table::ops::Progress;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{guard, to_py};

/// Python exceptions raised inside callbacks, kept until the call returns.
#[derive(Default)]
pub struct Raised(Mutex<Option<PyErr>>);

impl Raised {
    /// Keep `e` (the first one wins) and stop the core with a marker error.
    pub fn keep(&self, e: PyErr) -> lancelet::Error {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
        Self::marker()
    }

    fn marker() -> lancelet::Error {
        lancelet::Error::Internal { what: "a Python callback raised an exception".into() }
    }

    /// Whether a callback has raised already.
    fn has_raised(&self) -> bool {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }

    /// The kept Python exception, else the core error as an exception.
    pub fn result<T>(&self, r: lancelet::Result<T>) -> PyResult<T> {
        match r {
            Ok(v) => Ok(v),
            Err(e) => match self.0.lock().unwrap_or_else(|p| p.into_inner()).take() {
                Some(py_err) => Err(py_err),
                None => Err(to_py(e)),
            },
        }
    }
}

/// Run `f` without the GIL (panics caught, see [`guard`]) with a fresh
/// [`Raised`] for its callbacks; an exception one of them raised is
/// re-raised as it was, else the core's error is mapped as usual.
pub fn run<T: Send>(py: Python<'_>, f: impl FnOnce(&Arc<Raised>) -> lancelet::Result<T> + Send) -> PyResult<T> {
    let raised = Arc::new(Raised::default());
    let r = py.detach(|| guard(|| f(&raised)));
    raised.result(r)
}

/// A user's progress callback as a core [`Progress`]: called with
/// `{"stage": str, "done": int, "total": int}`. Once it has raised it is
/// not called again (other threads of the operation may still report
/// while it stops).
pub fn progress(callback: Option<Py<PyAny>>, raised: &Arc<Raised>) -> Option<Progress> {
    let callback = callback?;
    let raised = raised.clone();
    Some(Arc::new(move |stage: &str, done: u64, total: u64| {
        if raised.has_raised() {
            return Err(Raised::marker());
        }
        Python::attach(|py| {
            let event = PyDict::new(py);
            event.set_item("stage", stage)?;
            event.set_item("done", done)?;
            event.set_item("total", total)?;
            callback.call1(py, (event,)).map(|_| ())
        })
        .map_err(|e| raised.keep(e))
    }))
}
