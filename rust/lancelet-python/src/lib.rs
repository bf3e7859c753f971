//! PyO3 glue for lancelet: argument conversion, Arrow in and out through
//! the Arrow PyCapsule interface (no copies), and error → exception
//! mapping. No format logic lives here.

#[allow(dead_code)]
mod arrow_ffi;
mod callback;
mod dataset;
mod errors;
mod evolve;
mod file;
mod ops;
mod optimize;
mod index;
mod namespace;
mod tiledb;
mod tiledb_ops;
mod tiledb_write;
mod write;

use pyo3::prelude::*;

/// mimalloc keeps freed memory for reuse: encoding and decoding allocate
/// many page-sized buffers, and with the system allocator each came fresh
/// from the kernel (page faults and zeroing were a tenth of a write's time).
/// Built with `no_thp`: it does not ask for transparent huge pages, whose
/// faults (with the common `defrag=madvise` setting) compact memory on the
/// spot and made a write's system time swing from 0.07 to 0.9 s.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Process-wide read totals of the storage layer (private; benchmarks use
/// it to count the requests a take makes): `{"calls", "requests", "bytes"}`.
#[pyfunction]
fn _io_stats(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let s = lancelet::io::io_stats();
    let d = pyo3::types::PyDict::new(py);
    d.set_item("calls", s.calls)?;
    d.set_item("requests", s.requests)?;
    d.set_item("bytes", s.bytes)?;
    Ok(d)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<arrow_ffi::ArrowStream>()?;
    m.add_class::<arrow_ffi::ArrowSchemaHolder>()?;
    m.add_class::<file::NativeFileReader>()?;
    m.add_class::<file::NativeFileWriter>()?;
    m.add_class::<dataset::NativeDataset>()?;
    m.add_class::<namespace::NativeDirNamespace>()?;
    write::register(m)?;
    ops::register(m)?;
    evolve::register(m)?;
    optimize::register(m)?;
    index::register(m)?;
    tiledb::register(m)?;
    tiledb_ops::register(m)?;
    tiledb_write::register(m)?;
    m.add_function(wrap_pyfunction!(_io_stats, m)?)?;
    m.add_function(wrap_pyfunction!(errors::_caught_panics, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
