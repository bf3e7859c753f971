//! The commit options every operation takes, as Python hands them over: one
//! dict made by `lancelet._inputs.commit_args` (which checks the values
//! and names the argument at fault), turned here into the core's
//! [`CommitProperties`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use lancelet::table::properties::{CommitProperties, Committed, RetryPolicy};
use pyo3::prelude::*;

use crate::callback::{self, Raised};
use crate::dataset::NativeDataset;

/// `{"conflict_retries", "retry_timeout" (seconds), "progress",
/// "commit_message", "transaction_properties"}`; every key optional.
#[derive(Default)]
pub struct CommitArgs {
    conflict_retries: Option<u32>,
    retry_timeout: Option<f64>,
    progress: Option<Py<PyAny>>,
    commit_message: Option<String>,
    transaction_properties: HashMap<String, String>,
}

impl<'py> FromPyObject<'_, 'py> for CommitArgs {
    type Error = PyErr;

    fn extract(ob: Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        let get = |key: &str| -> PyResult<Option<Bound<'py, PyAny>>> {
            match ob.get_item(key) {
                Ok(v) if v.is_none() => Ok(None),
                Ok(v) => Ok(Some(v)),
                Err(e) if e.is_instance_of::<pyo3::exceptions::PyKeyError>(ob.py()) => Ok(None),
                Err(e) => Err(e),
            }
        };
        Ok(CommitArgs {
            conflict_retries: get("conflict_retries")?.map(|v| v.extract()).transpose()?,
            retry_timeout: get("retry_timeout")?.map(|v| v.extract()).transpose()?,
            progress: get("progress")?.map(Bound::unbind),
            commit_message: get("commit_message")?.map(|v| v.extract()).transpose()?,
            transaction_properties: get("transaction_properties")?.map(|v| v.extract()).transpose()?.unwrap_or_default(),
        })
    }
}

impl CommitArgs {
    /// The core's properties; the progress callback's exceptions are kept
    /// in `raised` (see [`callback::run`]).
    pub fn properties(self, raised: &Arc<Raised>) -> lancelet::Result<CommitProperties> {
        let mut retry = RetryPolicy::default();
        if let Some(n) = self.conflict_retries {
            retry.conflict_retries = n;
        }
        if let Some(t) = self.retry_timeout {
            if !t.is_finite() || t < 0.0 {
                return Err(lancelet::Error::invalid_input(format!("retry_timeout must be a non-negative duration, got {t} s")));
            }
            retry.retry_timeout = Duration::from_secs_f64(t);
        }
        Ok(CommitProperties {
            retry,
            progress: callback::progress(self.progress, raised),
            transaction_properties: self.transaction_properties,
            commit_message: self.commit_message,
        })
    }
}

/// Run a table operation with the commit options `commit` (defaults when
/// `None`), the GIL released; an exception a Python callback raised is
/// what the call raises. Returns the new dataset and the metrics.
pub fn run_op<M: Send>(
    py: Python<'_>,
    commit: Option<CommitArgs>,
    op: impl FnOnce(&CommitProperties, &Arc<Raised>) -> lancelet::Result<Committed<M>> + Send,
) -> PyResult<(NativeDataset, M)> {
    let commit = commit.unwrap_or_default();
    let done = callback::run(py, |raised| {
        let props = commit.properties(raised)?;
        op(&props, raised)
    })?;
    Ok((NativeDataset { inner: Arc::new(done.dataset) }, done.metrics))
}
