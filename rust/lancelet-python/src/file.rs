//! Python classes for Lance data files.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use lancelet::file::FileReader;
use pyo3::prelude::*;

use crate::arrow_ffi::{ArrowSchemaHolder, ArrowStream};
use crate::errors::IntoPy;

/// A Lance data file opened for reading.
#[pyclass(module = "lancelet._native", name = "FileReader", frozen)]
pub struct NativeFileReader {
    inner: Arc<FileReader>,
}

impl NativeFileReader {
    fn projection(&self, columns: Option<Vec<String>>) -> PyResult<Vec<usize>> {
        self.inner.projection(columns.as_deref()).py_err()
    }
}

#[pymethods]
impl NativeFileReader {
    #[new]
    #[pyo3(signature = (uri, storage_options=None))]
    fn new(py: Python<'_>, uri: String, storage_options: Option<lancelet::io::StorageOptions>) -> PyResult<Self> {
        let options = storage_options.unwrap_or_default();
        let inner = py.detach(|| crate::errors::guard(|| FileReader::open_with(&uri, &options))).py_err()?;
        Ok(NativeFileReader { inner: Arc::new(inner) })
    }

    /// The Arrow schema (as an object with `__arrow_c_schema__`).
    fn schema(&self) -> ArrowSchemaHolder {
        ArrowSchemaHolder { schema: self.inner.schema().clone() }
    }

    #[getter]
    fn num_rows(&self) -> u64 {
        self.inner.num_rows()
    }

    #[getter]
    fn version(&self) -> &'static str {
        self.inner.version().as_str()
    }

    #[getter]
    fn size(&self) -> u64 {
        self.inner.size()
    }

    #[getter]
    fn read_count(&self) -> u64 {
        self.inner.read_count()
    }

    /// Rows `offset .. offset+limit` of the projected columns, as a stream of
    /// batches of at most `batch_size` rows.
    #[pyo3(signature = (columns=None, offset=0, limit=None, batch_size=None))]
    fn read(&self, py: Python<'_>, columns: Option<Vec<String>>, offset: u64, limit: Option<u64>, batch_size: Option<u64>) -> PyResult<ArrowStream> {
        let projection = self.projection(columns)?;
        let total = self.inner.num_rows();
        let start = offset.min(total);
        let end = match limit {
            Some(l) => start.saturating_add(l).min(total),
            None => total,
        };
        let schema = Arc::new(self.inner.schema().project(&projection).map_err(|e| crate::errors::to_py(lancelet::Error::invalid_arrow(e)))?);
        match batch_size {
            None => {
                let batch = py.detach(|| crate::errors::guard(|| self.inner.read_range(&projection, start..end))).py_err()?;
                Ok(ArrowStream::from_batches(batch.schema(), vec![batch]))
            }
            Some(0) => Err(crate::errors::to_py(lancelet::Error::invalid_input("batch_size must be positive"))),
            Some(bs) => {
                Ok(ArrowStream::new(Box::new(BatchIter { reader: self.inner.clone(), projection, schema, next: start, end, batch_size: bs })))
            }
        }
    }

    /// Rows at `indices` (any order, duplicates allowed).
    #[pyo3(signature = (indices, columns=None))]
    fn take(&self, py: Python<'_>, indices: Vec<u64>, columns: Option<Vec<String>>) -> PyResult<ArrowStream> {
        let projection = self.projection(columns)?;
        let batch = py.detach(|| crate::errors::guard(|| self.inner.take(&projection, &indices))).py_err()?;
        Ok(ArrowStream::from_batches(batch.schema(), vec![batch]))
    }
}

/// Streams a row range in fixed-size batches, decoding one batch per call.
struct BatchIter {
    reader: Arc<FileReader>,
    projection: Vec<usize>,
    schema: SchemaRef,
    next: u64,
    end: u64,
    batch_size: u64,
}

impl Iterator for BatchIter {
    type Item = Result<RecordBatch, ArrowError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.end {
            return None;
        }
        let range: Range<u64> = self.next..(self.next + self.batch_size).min(self.end);
        self.next = range.end;
        Some(crate::errors::guard(|| self.reader.read_range(&self.projection, range)).map_err(crate::errors::stream_error))
    }
}

impl RecordBatchReader for BatchIter {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// A Lance data file being written. Nothing is stored until `close()`, so
/// a failed write leaves no file behind.
///
/// A failed `write` (a schema mismatch, a bad batch of the input stream,
/// an encoding or storage error) abandons the writer: pages of the failed
/// call may already be in the file, so its upload is aborted at once (the
/// partial file is removed) and every later `write` or `close` raises
/// `InvalidInputError` naming that first failure.
#[pyclass(module = "lancelet._native", name = "FileWriter")]
pub struct NativeFileWriter {
    inner: Option<lancelet::file::FileWriter>,
    path: String,
    /// The first failure, once the writer was abandoned.
    failed: Option<String>,
}

impl Drop for NativeFileWriter {
    /// An unfinished writer aborts its upload, which waits for the parts
    /// in flight; their buffers may be pyarrow memory (vector pages are
    /// written from the Arrow buffers, see `file/write/vectors.rs`), whose
    /// release may take the GIL on the thread that drops them. Waiting
    /// with the GIL held could then never end, so it is released here.
    fn drop(&mut self) {
        if let Some(w) = self.inner.take() {
            Python::attach(|py| py.detach(move || drop(w)));
        }
    }
}

impl NativeFileWriter {
    /// The writer, or the error of a call on an abandoned or closed one.
    fn usable(&mut self) -> PyResult<&mut lancelet::file::FileWriter> {
        if let Some(first) = &self.failed {
            return Err(crate::errors::to_py(lancelet::Error::invalid_input(format!(
                "the writer of {} failed earlier and was abandoned (its partial file removed); first failure: {first}",
                self.path
            ))));
        }
        let path = &self.path;
        self.inner.as_mut().ok_or_else(|| crate::errors::to_py(lancelet::Error::invalid_input(format!("writer for {path} is already closed"))))
    }

    /// Abandon the writer (see the type's docs); the first reason stays.
    /// The upload is aborted with the GIL released (see `Drop`).
    fn abandon(&mut self, py: Python<'_>, why: String) {
        self.failed.get_or_insert(why);
        if let Some(w) = self.inner.take() {
            py.detach(move || drop(w));
        }
    }
}

/// Append every batch of `reader` to `writer`; returns the rows written.
fn write_stream(
    py: Python<'_>,
    writer: &mut lancelet::file::FileWriter,
    path: &str,
    reader: impl Iterator<Item = Result<RecordBatch, ArrowError>>,
) -> PyResult<u64> {
    let mut rows = 0;
    let mut reader = reader;
    // The importer asserts what a producer's batches look like (a batch
    // with another number of columns panics): under the guard, that is an
    // error of this write, not an unwind into Python.
    while let Some(batch) = crate::errors::guard(|| Ok(reader.next())).py_err()? {
        let batch = batch.map_err(|e| crate::errors::to_py(lancelet::Error::invalid_input(format!("reading input batch: {e}")).with_source(e)))?;
        rows += batch.num_rows() as u64;
        py.detach(|| crate::errors::guard(|| writer.write(&batch))).map_err(|e| e.in_file(path).context(format!("writing {path}"))).py_err()?;
    }
    Ok(rows)
}

#[pymethods]
impl NativeFileWriter {
    #[new]
    #[pyo3(signature = (uri, schema, version, storage_options=None))]
    fn new(
        py: Python<'_>,
        uri: String,
        schema: &Bound<'_, PyAny>,
        version: String,
        storage_options: Option<lancelet::io::StorageOptions>,
    ) -> PyResult<Self> {
        let schema = crate::arrow_ffi::import_schema(schema)?;
        let version = lancelet::file::FileVersion::parse(&version).py_err()?;
        let options = storage_options.unwrap_or_default();
        let inner = py
            .detach(|| crate::errors::guard(|| lancelet::file::FileWriter::create_with(&uri, &schema, version, &options)))
            .map_err(|e| e.context(format!("creating {uri}")))
            .py_err()?;
        Ok(NativeFileWriter { inner: Some(inner), path: uri, failed: None })
    }

    /// Append every batch of an Arrow stream; returns the rows appended. A
    /// failure abandons the writer (see the type's docs).
    fn write(&mut self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<u64> {
        let path = self.path.clone();
        let writer = self.usable()?;
        let result = crate::arrow_ffi::import_stream(data).and_then(|reader| write_stream(py, writer, &path, reader));
        if let Err(e) = &result {
            self.abandon(py, e.to_string());
        }
        result
    }

    /// Abandon the writer: nothing is stored (a partial upload is removed)
    /// and later calls raise naming `reason`.
    #[pyo3(signature = (reason=None))]
    fn abort(&mut self, py: Python<'_>, reason: Option<String>) {
        self.abandon(py, reason.unwrap_or_else(|| "the write was aborted".to_string()));
    }

    /// Rows written so far.
    #[getter]
    fn num_rows(&self) -> u64 {
        self.inner.as_ref().map_or(0, |w| w.num_rows())
    }

    /// Write the file; returns its size in bytes (0 when already closed).
    /// A failure abandons the writer too.
    fn close(&mut self, py: Python<'_>) -> PyResult<u64> {
        if self.failed.is_none() && self.inner.is_none() {
            return Ok(0);
        }
        self.usable()?;
        let Some(w) = self.inner.take() else { return Ok(0) };
        let path = self.path.clone();
        let result = py.detach(|| crate::errors::guard(|| w.finish())).map_err(|e| e.in_file(&path).context(format!("writing {path}"))).py_err();
        if let Err(e) = &result {
            self.abandon(py, e.to_string());
        }
        result
    }

    /// True once `close()` has been called (or the writer was abandoned).
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_none()
    }

    /// The first failure, once the writer was abandoned.
    #[getter]
    fn failure(&self) -> Option<String> {
        self.failed.clone()
    }
}
