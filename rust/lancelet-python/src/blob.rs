//! Blob columns: `take_blobs` hands out one `NativeBlob` per selected row,
//! a handle on where the blob's bytes are; Python's `BlobFile` keeps the
//! cursor and asks for ranges (each one ranged read of the store).

use lancelet::table::blobs::{take_blob_locations, BlobLocation};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::dataset::NativeDataset;
use crate::errors::{guard, IntoPy};

/// Where one blob's bytes are (object, offset, size).
#[pyclass(module = "lancelet._native", frozen)]
pub struct NativeBlob {
    loc: BlobLocation,
}

#[pymethods]
impl NativeBlob {
    /// The blob's size in bytes.
    fn size(&self) -> u64 {
        self.loc.size
    }

    /// Up to `len` bytes at `offset` within the blob (fewer at its end).
    fn read_range(&self, py: Python<'_>, offset: u64, len: u64) -> PyResult<Py<PyBytes>> {
        let b = py.detach(|| guard(|| self.loc.read(offset, len))).py_err()?;
        Ok(PyBytes::new(py, &b).unbind())
    }

    /// The object holding the blob (for tests and `repr`).
    fn uri(&self) -> String {
        self.loc.storage.display().to_string()
    }
}

/// The blobs of `column` at the selected rows: `kind` is "ids",
/// "addresses" or "indices". Nulls (and deleted ids) are `None`.
#[pyfunction]
pub fn take_blobs(py: Python<'_>, ds: &NativeDataset, column: String, kind: &str, values: Vec<u64>) -> PyResult<Vec<Option<NativeBlob>>> {
    let ds = ds.inner.clone();
    let kind = kind.to_string();
    let locs = py
        .detach(|| {
            guard(|| {
                let (addrs, found) = match kind.as_str() {
                    "indices" => (ds.addresses_of_indices(&values)?, vec![true; values.len()]),
                    "ids" => ds.addresses_of_row_ids(&values)?,
                    "addresses" => ds.addresses_of_row_ids(&values).map(|(a, f)| {
                        if ds.has_stable_row_ids() {
                            (values.clone(), vec![true; values.len()])
                        } else {
                            (a, f)
                        }
                    })?,
                    other => return Err(lancelet::Error::invalid_input(format!("take_blobs selection {other:?}"))),
                };
                let mut got = take_blob_locations(&ds, &column, &addrs)?.into_iter();
                Ok(found.into_iter().map(|f| if f { got.next().flatten() } else { None }).collect::<Vec<_>>())
            })
        })
        .py_err()?;
    Ok(locs.into_iter().map(|l| l.map(|loc| NativeBlob { loc })).collect())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeBlob>()?;
    m.add_function(wrap_pyfunction!(take_blobs, m)?)?;
    Ok(())
}
