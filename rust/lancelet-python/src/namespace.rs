//! Python glue for directory namespaces (`lancelet.namespace`): one class
//! wrapping `lancelet::namespace::DirectoryNamespace`. Request/response
//! models and JSON properties stay in Python; namespace errors become the
//! classes of `lancelet.namespace.errors` (which are both lancelet's and
//! `lance_namespace`'s exceptions). The GIL is released for every call.

use std::collections::BTreeMap;

use lancelet::io::StorageOptions;
use lancelet::namespace::{CreateMode, DirectoryNamespace, NsError, NsResult, Properties, TableInfo};
use lancelet::Error;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::errors::{guard, to_py};

/// `(id, location, uri, metadata JSON, only declared)` of a table.
type TableRow = (Vec<String>, String, String, Option<String>, Option<bool>);
/// `(root properties, child metadata JSON)` of a namespace.
type NamespaceRow = (Option<BTreeMap<String, String>>, Option<String>);

fn raise(name: &str, msg: String) -> PyErr {
    Python::attach(|py| match py.import("lancelet.namespace.errors").and_then(|m| m.getattr(name)) {
        Ok(cls) => match cls.call1((msg.clone(),)) {
            Ok(inst) => PyErr::from_value(inst),
            Err(err) => err,
        },
        Err(_) => PyRuntimeError::new_err(msg),
    })
}

fn ns_err(e: NsError) -> PyErr {
    let msg = e.to_string();
    match e {
        NsError::NamespaceNotFound(_) => raise("NamespaceNotFoundError", msg),
        NsError::TableNotFound(_) => raise("TableNotFoundError", msg),
        NsError::NamespaceAlreadyExists(_) => raise("NamespaceAlreadyExistsError", msg),
        NsError::TableAlreadyExists(_) => raise("TableAlreadyExistsError", msg),
        NsError::NamespaceNotEmpty(_) => raise("NamespaceNotEmptyError", msg),
        NsError::Core(e @ (Error::InvalidInput { .. } | Error::Unsupported { .. })) => {
            let err = raise(if matches!(e, Error::InvalidInput { .. }) { "InvalidInputError" } else { "UnsupportedError" }, msg);
            Python::attach(|py| crate::errors::set_cause(py, err.value(py).as_any(), &e));
            err
        }
        NsError::Core(other) => to_py(other),
    }
}

/// Run a namespace call without the GIL, panics turned into `InternalError`.
fn run<T: Send>(py: Python<'_>, f: impl FnOnce() -> NsResult<T> + Send) -> PyResult<T> {
    match py.detach(|| guard(|| Ok(f()))) {
        Err(e) => Err(to_py(e)),
        Ok(r) => r.map_err(ns_err),
    }
}

fn row(t: TableInfo) -> TableRow {
    (t.id, t.location, t.uri, t.metadata, t.only_declared)
}

fn props(p: Properties) -> NamespaceRow {
    match p {
        Properties::Root(m) => (Some(m), None),
        Properties::Json(j) => (None, j),
    }
}

/// A directory namespace (see `lancelet::namespace`).
#[pyclass(module = "lancelet._native", name = "NativeDirNamespace", frozen)]
pub struct NativeDirNamespace {
    inner: DirectoryNamespace,
    options: StorageOptions,
}

#[pymethods]
impl NativeDirNamespace {
    #[new]
    #[pyo3(signature = (root, storage_options=None, manifest_enabled=true, dir_listing_enabled=true))]
    fn new(root: String, storage_options: Option<StorageOptions>, manifest_enabled: bool, dir_listing_enabled: bool) -> PyResult<Self> {
        let options = storage_options.unwrap_or_default();
        let inner = guard(|| Ok(DirectoryNamespace::open(&root, &options, manifest_enabled, dir_listing_enabled))).map_err(to_py)?.map_err(ns_err)?;
        Ok(NativeDirNamespace { inner, options })
    }

    /// The root (local roots as an absolute path).
    #[getter]
    fn root_uri(&self) -> String {
        self.inner.root_uri().to_string()
    }

    /// The URI of a location below the root.
    fn location_uri(&self, location: &str) -> String {
        self.inner.location_uri(location)
    }

    fn list_namespaces(&self, py: Python<'_>, parent: Vec<String>) -> PyResult<Vec<String>> {
        run(py, || self.inner.list_namespaces(&parent))
    }

    fn describe_namespace(&self, py: Python<'_>, id: Vec<String>) -> PyResult<NamespaceRow> {
        run(py, || self.inner.describe_namespace(&id)).map(props)
    }

    fn namespace_exists(&self, py: Python<'_>, id: Vec<String>) -> PyResult<()> {
        run(py, || self.inner.namespace_exists(&id))
    }

    #[pyo3(signature = (id, metadata=None, mode=None))]
    fn create_namespace(&self, py: Python<'_>, id: Vec<String>, metadata: Option<String>, mode: Option<String>) -> PyResult<NamespaceRow> {
        run(py, || {
            let mode = CreateMode::parse(mode.as_deref())?;
            self.inner.create_namespace(&id, metadata, mode)
        })
        .map(props)
    }

    #[pyo3(signature = (id, skip_missing=false, cascade=false))]
    fn drop_namespace(&self, py: Python<'_>, id: Vec<String>, skip_missing: bool, cascade: bool) -> PyResult<()> {
        run(py, || self.inner.drop_namespace(&id, skip_missing, cascade))
    }

    #[pyo3(signature = (namespace, include_declared=true))]
    fn list_tables(&self, py: Python<'_>, namespace: Vec<String>, include_declared: bool) -> PyResult<Vec<String>> {
        run(py, || self.inner.list_tables(&namespace, include_declared))
    }

    #[pyo3(signature = (id, check_declared=false))]
    fn describe_table(&self, py: Python<'_>, id: Vec<String>, check_declared: bool) -> PyResult<TableRow> {
        run(py, || self.inner.describe_table(&id, check_declared)).map(row)
    }

    fn table_exists(&self, py: Python<'_>, id: Vec<String>) -> PyResult<()> {
        run(py, || self.inner.table_exists(&id))
    }

    #[pyo3(signature = (id, metadata=None))]
    fn declare_table(&self, py: Python<'_>, id: Vec<String>, metadata: Option<String>) -> PyResult<TableRow> {
        run(py, || self.inner.declare_table(&id, metadata)).map(row)
    }

    /// Create a table from any object with `__arrow_c_stream__`; returns
    /// the table and the version written (or kept).
    #[pyo3(signature = (id, data, metadata=None, mode=None))]
    fn create_table(
        &self,
        py: Python<'_>,
        id: Vec<String>,
        data: &Bound<'_, PyAny>,
        metadata: Option<String>,
        mode: Option<String>,
    ) -> PyResult<(TableRow, u64)> {
        let reader = crate::arrow_ffi::import_stream(data)?;
        let schema = arrow_array::RecordBatchReader::schema(&reader);
        let batches = reader.map(|b| b.map_err(|e| Error::invalid_input(format!("reading input batch: {e}")).with_source(e)));
        run(py, move || {
            let mode = CreateMode::parse(mode.as_deref())?;
            self.inner.create_table(&id, metadata, mode, schema, batches, &self.options)
        })
        .map(|(t, v)| (row(t), v))
    }

    #[pyo3(signature = (id, location, metadata=None, overwrite=false))]
    fn register_table(&self, py: Python<'_>, id: Vec<String>, location: String, metadata: Option<String>, overwrite: bool) -> PyResult<TableRow> {
        run(py, || self.inner.register_table(&id, &location, metadata, overwrite)).map(row)
    }

    fn deregister_table(&self, py: Python<'_>, id: Vec<String>) -> PyResult<TableRow> {
        run(py, || self.inner.deregister_table(&id)).map(row)
    }

    fn drop_table(&self, py: Python<'_>, id: Vec<String>) -> PyResult<TableRow> {
        run(py, || self.inner.drop_table(&id)).map(row)
    }

    #[pyo3(signature = (id, new_name, new_namespace=None))]
    fn rename_table(&self, py: Python<'_>, id: Vec<String>, new_name: String, new_namespace: Option<Vec<String>>) -> PyResult<()> {
        run(py, || self.inner.rename_table(&id, new_namespace.as_deref(), &new_name))
    }
}
