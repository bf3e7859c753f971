//! The Arrow PyCapsule interface: exporting record batch streams and
//! schemas to Python, importing streams from any object that has
//! `__arrow_c_stream__`.

use std::sync::Mutex;

use arrow_array::ffi::FFI_ArrowSchema;
use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use pyo3::exceptions::PyTypeError;

use crate::errors::to_py;
use lancelet::Error;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// A boxed batch stream that can cross threads.
pub type BoxedReader = Box<dyn RecordBatchReader + Send>;

/// A one-shot Arrow stream handed to Python; consumed by
/// `__arrow_c_stream__` (pyarrow, polars, duckdb all accept it).
#[pyclass(module = "lancelet._native", name = "ArrowStream")]
pub struct ArrowStream {
    reader: Mutex<Option<BoxedReader>>,
    schema: SchemaRef,
}

impl ArrowStream {
    /// Wrap a reader.
    pub fn new(reader: BoxedReader) -> Self {
        let schema = reader.schema();
        ArrowStream { reader: Mutex::new(Some(reader)), schema }
    }
    /// A stream over batches already in memory.
    pub fn from_batches(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        let it = RecordBatchIterator::new(batches.into_iter().map(Ok::<_, ArrowError>), schema);
        Self::new(Box::new(it))
    }
}

#[pymethods]
impl ArrowStream {
    /// Export as an `arrow_array_stream` capsule (consumes the stream).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(&self, py: Python<'py>, requested_schema: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader = self
            .reader
            .lock()
            .map_err(|_| to_py(Error::Internal { what: "stream lock poisoned".into() }))?
            .take()
            .ok_or_else(|| to_py(Error::invalid_input("this Arrow stream has already been consumed")))?;
        let stream = FFI_ArrowArrayStream::new(reader);
        PyCapsule::new_with_value_and_destructor(py, stream, c"arrow_array_stream", |stream, _| drop(stream))
    }

    /// Export the schema as an `arrow_schema` capsule.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        schema_capsule(py, &self.schema)
    }
}

/// Holds a schema so Python can import it with `pyarrow.schema(obj)`.
#[pyclass(module = "lancelet._native", name = "ArrowSchemaHolder")]
pub struct ArrowSchemaHolder {
    pub schema: SchemaRef,
}

#[pymethods]
impl ArrowSchemaHolder {
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        schema_capsule(py, &self.schema)
    }
}

fn schema_capsule<'py>(py: Python<'py>, schema: &SchemaRef) -> PyResult<Bound<'py, PyCapsule>> {
    let ffi = FFI_ArrowSchema::try_from(schema.as_ref())
        .map_err(|e| to_py(Error::Internal { what: format!("exporting the schema through the Arrow C interface: {e}") }))?;
    PyCapsule::new_with_value_and_destructor(py, ffi, c"arrow_schema", |s, _| drop(s))
}

/// Import a record batch stream from an object with `__arrow_c_stream__`.
pub fn import_stream(obj: &Bound<'_, PyAny>) -> PyResult<RecordBatchStreamReader> {
    if !obj.hasattr("__arrow_c_stream__")? {
        return Err(PyTypeError::new_err(format!("expected an Arrow stream (an object with __arrow_c_stream__), got {}", obj.get_type().name()?)));
    }
    let capsule = obj.call_method0("__arrow_c_stream__")?;
    let capsule = capsule.cast::<PyCapsule>().map_err(|_| PyTypeError::new_err("__arrow_c_stream__ did not return a capsule"))?;
    let ptr = capsule.pointer_checked(Some(c"arrow_array_stream"))?.cast::<FFI_ArrowArrayStream>();
    // SAFETY: the capsule holds a valid FFI_ArrowArrayStream by contract;
    // from_raw moves it out and marks the original released, so the
    // capsule's destructor will not release it a second time.
    let stream = unsafe { FFI_ArrowArrayStream::from_raw(ptr.as_ptr()) };
    RecordBatchStreamReader::try_new(stream).map_err(|e| to_py(Error::invalid_input(format!("bad Arrow stream: {e}")).with_source(e)))
}

/// Import a schema from an object with `__arrow_c_schema__`.
pub fn import_schema(obj: &Bound<'_, PyAny>) -> PyResult<arrow_schema::Schema> {
    if !obj.hasattr("__arrow_c_schema__")? {
        return Err(PyTypeError::new_err(format!("expected an Arrow schema, got {}", obj.get_type().name()?)));
    }
    let capsule = obj.call_method0("__arrow_c_schema__")?;
    let capsule = capsule.cast::<PyCapsule>().map_err(|_| PyTypeError::new_err("__arrow_c_schema__ did not return a capsule"))?;
    let ptr = capsule.pointer_checked(Some(c"arrow_schema"))?.cast::<FFI_ArrowSchema>();
    // SAFETY: the capsule holds a valid FFI_ArrowSchema by contract and
    // outlives this borrow; we only read it to build an owned Schema.
    let ffi = unsafe { ptr.as_ref() };
    arrow_schema::Schema::try_from(ffi).map_err(|e| to_py(Error::invalid_input(format!("bad Arrow schema: {e}")).with_source(e)))
}
