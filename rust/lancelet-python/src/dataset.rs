//! Python classes for Lance datasets (the table format): one checked-out
//! version, its history and tags, scans and takes. Arrow leaves through
//! `ArrowStream`; the GIL is released for every core call.

use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use lancelet::table::scan::ScanStream;
use lancelet::table::{Dataset, ScanOptions, Scanner, VersionRef};
use pyo3::prelude::*;

use crate::arrow_ffi::{ArrowSchemaHolder, ArrowStream};
use crate::errors::{guard, IntoPy};

/// Parse a SQL `filter` (type-checked against the dataset schema before any
/// I/O) into the scan options.
fn with_filter(ds: &Dataset, mut opts: ScanOptions, filter: Option<String>) -> lancelet::Result<ScanOptions> {
    if let Some(f) = filter {
        opts.filter = Some(lancelet::expr::parse_filter(&f, ds.schema())?);
    }
    Ok(opts)
}

fn version_ref(version: Option<u64>, tag: Option<String>) -> Option<VersionRef> {
    match (version, tag) {
        (Some(v), _) => Some(VersionRef::Number(v)),
        (None, Some(t)) => Some(VersionRef::Tag(t)),
        (None, None) => None,
    }
}

/// `(path, fields, column_indices, major, minor, size, base_id)` of a data file.
type DataFileRow = (String, Vec<i32>, Vec<i32>, u32, u32, u64, Option<u32>);
/// `(id, physical_rows, data files, deletion file path, deleted rows)`.
type FragmentRow = (u64, u64, Vec<DataFileRow>, Option<String>, Option<u64>);

/// `(version, seconds, nanos, summary)` of one history entry.
type VersionRow = (u64, i64, i32, Vec<(String, String)>);

/// One version of a Lance dataset.
#[pyclass(module = "lancelet._native", name = "Dataset", frozen)]
pub struct NativeDataset {
    pub(crate) inner: Arc<Dataset>,
}

#[pymethods]
impl NativeDataset {
    #[new]
    #[pyo3(signature = (uri, version=None, tag=None, storage_options=None))]
    fn new(
        py: Python<'_>,
        uri: String,
        version: Option<u64>,
        tag: Option<String>,
        storage_options: Option<lancelet::io::StorageOptions>,
    ) -> PyResult<Self> {
        let v = version_ref(version, tag);
        let options = storage_options.unwrap_or_default();
        let inner = py.detach(|| guard(|| Dataset::open_with(&uri, v, &options))).py_err()?;
        Ok(NativeDataset { inner: Arc::new(inner) })
    }

    /// The same dataset at another version (number or tag).
    #[pyo3(signature = (version=None, tag=None))]
    fn checkout(&self, py: Python<'_>, version: Option<u64>, tag: Option<String>) -> PyResult<NativeDataset> {
        let v = version_ref(version, tag);
        let inner = py.detach(|| guard(|| self.inner.checkout_ref(v))).py_err()?;
        Ok(NativeDataset { inner: Arc::new(inner) })
    }

    /// The dataset schema (as an object with `__arrow_c_schema__`).
    fn schema(&self) -> ArrowSchemaHolder {
        ArrowSchemaHolder { schema: self.inner.schema().clone() }
    }

    #[getter]
    fn uri(&self) -> String {
        self.inner.uri().to_string()
    }

    #[getter]
    fn version(&self) -> u64 {
        self.inner.version()
    }

    #[getter]
    fn manifest_name(&self) -> String {
        self.inner.manifest_location().name.clone()
    }

    /// The manifest's data storage version (`"2.1"`, …; `"0.1"` for a
    /// legacy dataset, as pylance shows it).
    #[getter]
    fn data_storage_version(&self) -> String {
        match &self.inner.manifest().data_format {
            Some(d) if !d.version.is_empty() => d.version.clone(),
            _ => "0.1".to_string(),
        }
    }

    #[getter]
    fn has_stable_row_ids(&self) -> bool {
        self.inner.has_stable_row_ids()
    }

    /// `(reader flags, writer flags, reader flag names, writer flag names)`
    /// of this version's manifest.
    fn feature_flags(&self) -> (u64, u64, Vec<String>, Vec<String>) {
        let m = self.inner.manifest();
        let names = lancelet::table::features::flag_names;
        (m.reader_feature_flags, m.writer_feature_flags, names(m.reader_feature_flags), names(m.writer_feature_flags))
    }

    /// `(requests, bytes)` read from storage through this dataset handle so
    /// far (manifests, data and deletion files).
    fn io_stats(&self) -> (u64, u64) {
        (self.inner.root().read_count(), self.inner.root().bytes_read())
    }

    /// The newest version present in storage.
    fn latest_version(&self, py: Python<'_>) -> PyResult<u64> {
        py.detach(|| guard(|| self.inner.latest_version())).py_err()
    }

    /// `[(version, seconds, nanos, [(key, value)])]`, oldest first.
    fn versions(&self, py: Python<'_>) -> PyResult<Vec<VersionRow>> {
        let v = py.detach(|| guard(|| self.inner.versions())).py_err()?;
        Ok(v.into_iter().map(|i| (i.version, i.timestamp.0, i.timestamp.1, i.metadata)).collect())
    }

    /// `[(name, version, json text)]`.
    fn tags(&self, py: Python<'_>) -> PyResult<Vec<(String, u64, String)>> {
        let t = py.detach(|| guard(|| self.inner.tags())).py_err()?;
        Ok(t.into_iter().map(|t| (t.name, t.version, t.json)).collect())
    }

    /// The table config.
    fn config(&self) -> std::collections::HashMap<String, String> {
        self.inner.config()
    }

    /// Fragments as plain tuples (see `FragmentRow`).
    fn fragments(&self) -> Vec<FragmentRow> {
        self.inner
            .fragments()
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let files = f
                    .files
                    .iter()
                    .map(|d| {
                        (
                            d.path.clone(),
                            d.fields.clone(),
                            d.column_indices.clone(),
                            d.file_major_version,
                            d.file_minor_version,
                            d.file_size_bytes,
                            d.base_id,
                        )
                    })
                    .collect();
                (f.id, f.physical_rows, files, self.inner.deletion_file_name(i), f.deletion_file.as_ref().map(|d| d.num_deleted_rows))
            })
            .collect()
    }

    /// Rows of one fragment that are not deleted.
    fn fragment_count_rows(&self, py: Python<'_>, fragment_id: u64) -> PyResult<u64> {
        py.detach(|| {
            guard(|| {
                let i = self
                    .inner
                    .fragment_index(fragment_id)
                    .ok_or_else(|| lancelet::Error::invalid_input(format!("no fragment {fragment_id} in version {}", self.inner.version())))?;
                self.inner.live_rows(i)
            })
        })
        .py_err()
    }

    /// Stream a scan batch by batch.
    #[pyo3(signature = (columns=None, limit=None, offset=0, with_row_id=false, with_row_address=false, batch_size=None, fragments=None, filter=None, row_range=None, use_scalar_index=true, blob_handling=None))]
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &self,
        py: Python<'_>,
        columns: Option<Vec<String>>,
        limit: Option<u64>,
        offset: u64,
        with_row_id: bool,
        with_row_address: bool,
        batch_size: Option<usize>,
        fragments: Option<Vec<u64>>,
        filter: Option<String>,
        row_range: Option<(u64, u64)>,
        use_scalar_index: bool,
        blob_handling: Option<String>,
    ) -> PyResult<ArrowStream> {
        let mut opts = scan_options(columns, limit, offset, with_row_id, with_row_address, batch_size, fragments, row_range, use_scalar_index);
        if let Some(h) = blob_handling {
            opts.blob_handling = lancelet::table::blobs::BlobHandling::parse(&h).py_err()?;
        }
        let stream = py.detach(|| guard(|| self.scanner(opts, filter)?.stream())).py_err()?;
        Ok(ArrowStream::new(Box::new(StreamReader { schema: stream.schema(), inner: stream })))
    }

    /// The whole scan, read before returning (errors keep their types).
    #[pyo3(signature = (columns=None, limit=None, offset=0, with_row_id=false, with_row_address=false, batch_size=None, fragments=None, filter=None, row_range=None, use_scalar_index=true, blob_handling=None))]
    #[allow(clippy::too_many_arguments)]
    fn scan_all(
        &self,
        py: Python<'_>,
        columns: Option<Vec<String>>,
        limit: Option<u64>,
        offset: u64,
        with_row_id: bool,
        with_row_address: bool,
        batch_size: Option<usize>,
        fragments: Option<Vec<u64>>,
        filter: Option<String>,
        row_range: Option<(u64, u64)>,
        use_scalar_index: bool,
        blob_handling: Option<String>,
    ) -> PyResult<ArrowStream> {
        let mut opts = scan_options(columns, limit, offset, with_row_id, with_row_address, batch_size, fragments, row_range, use_scalar_index);
        if let Some(h) = blob_handling {
            opts.blob_handling = lancelet::table::blobs::BlobHandling::parse(&h).py_err()?;
        }
        let (schema, batches) = py
            .detach(|| {
                guard(|| {
                    let s = self.scanner(opts, filter)?;
                    Ok((s.schema().clone(), s.collect()?))
                })
            })
            .py_err()?;
        Ok(ArrowStream::from_batches(schema, batches))
    }

    /// Rows a scan would return.
    #[pyo3(signature = (limit=None, offset=0, fragments=None, filter=None, row_range=None, use_scalar_index=true))]
    #[allow(clippy::too_many_arguments)]
    fn count_rows(
        &self,
        py: Python<'_>,
        limit: Option<u64>,
        offset: u64,
        fragments: Option<Vec<u64>>,
        filter: Option<String>,
        row_range: Option<(u64, u64)>,
        use_scalar_index: bool,
    ) -> PyResult<u64> {
        let opts = ScanOptions {
            columns: Some(Vec::new()),
            limit,
            offset,
            fragments,
            row_range: row_range.map(|(s, e)| s..e),
            disable_scalar_index: !use_scalar_index,
            ..Default::default()
        };
        py.detach(|| guard(|| self.scanner(opts, filter)?.count_rows())).py_err()
    }

    /// Rows at dataset positions (after deletions).
    #[pyo3(signature = (indices, columns=None))]
    fn take(&self, py: Python<'_>, indices: Vec<u64>, columns: Option<Vec<String>>) -> PyResult<ArrowStream> {
        let batch = py.detach(|| guard(|| self.inner.take(&indices, columns.as_deref()))).py_err()?;
        Ok(ArrowStream::from_batches(batch.schema(), vec![batch]))
    }

    /// Rows with these row ids that exist, and for each id whether it did.
    #[pyo3(signature = (row_ids, columns=None))]
    fn take_row_ids_found(&self, py: Python<'_>, row_ids: Vec<u64>, columns: Option<Vec<String>>) -> PyResult<(ArrowStream, Vec<bool>)> {
        let (batch, found) = py.detach(|| guard(|| self.inner.take_row_ids_found(&row_ids, columns.as_deref()))).py_err()?;
        Ok((ArrowStream::from_batches(batch.schema(), vec![batch]), found))
    }

    /// Rows with these row ids (deleted ones are left out).
    #[pyo3(signature = (row_ids, columns=None))]
    fn take_row_ids(&self, py: Python<'_>, row_ids: Vec<u64>, columns: Option<Vec<String>>) -> PyResult<ArrowStream> {
        let batch = py.detach(|| guard(|| self.inner.take_row_ids(&row_ids, columns.as_deref()))).py_err()?;
        Ok(ArrowStream::from_batches(batch.schema(), vec![batch]))
    }
}

impl NativeDataset {
    /// Plan a scan of this version, with the SQL filter parsed in.
    fn scanner(&self, opts: ScanOptions, filter: Option<String>) -> lancelet::Result<Scanner> {
        Scanner::new(self.inner.clone(), with_filter(&self.inner, opts, filter)?)
    }
}

/// The options of `scan` / `scan_all` (the filter is planned separately).
#[allow(clippy::too_many_arguments)]
fn scan_options(
    columns: Option<Vec<String>>,
    limit: Option<u64>,
    offset: u64,
    with_row_id: bool,
    with_row_address: bool,
    batch_size: Option<usize>,
    fragments: Option<Vec<u64>>,
    row_range: Option<(u64, u64)>,
    use_scalar_index: bool,
) -> ScanOptions {
    ScanOptions {
        columns,
        limit,
        offset,
        with_row_id,
        with_row_address,
        batch_size,
        fragments,
        filter: None,
        row_range: row_range.map(|(s, e)| s..e),
        disable_scalar_index: !use_scalar_index,
        blob_handling: Default::default(),
    }
}

/// A scan as an Arrow `RecordBatchReader`; panics become errors.
struct StreamReader {
    inner: ScanStream,
    schema: SchemaRef,
}

impl Iterator for StreamReader {
    type Item = Result<RecordBatch, ArrowError>;
    fn next(&mut self) -> Option<Self::Item> {
        let inner = &mut self.inner;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inner.next())) {
            Ok(None) => None,
            Ok(Some(r)) => Some(r.map_err(crate::errors::stream_error)),
            Err(payload) => {
                let e = crate::errors::caught_panic(payload);
                Some(Err(crate::errors::stream_error(e)))
            }
        }
    }
}

impl RecordBatchReader for StreamReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
