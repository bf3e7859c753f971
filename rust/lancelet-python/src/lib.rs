//! PyO3 glue for lancelet: argument conversion, Arrow in and out through
//! the Arrow PyCapsule interface (no copies), and error → exception
//! mapping. No format logic lives here.

#[allow(dead_code)]
mod arrow_ffi;
#[cfg(target_os = "linux")]
mod bigalloc;
mod callback;
mod commit_args;
mod dataset;
mod errors;
mod evolve;
mod file;
mod index;
mod namespace;
mod nearest;
mod ops;
mod optimize;
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
/// spot and made a write's system time swing from 0.07 to 0.9 s. On Linux,
/// blocks of 1 MiB and more get mappings of their own, reused through a
/// bounded cache ([`bigalloc`]): in mimalloc's arena the freed
/// holes of a write's page buffers kept the resident set far above the
/// live data (session 9).
#[cfg(target_os = "linux")]
#[global_allocator]
static ALLOCATOR: bigalloc::BigMapped<mimalloc::MiMalloc> = bigalloc::BigMapped(mimalloc::MiMalloc);
/// mimalloc (see the Linux variant above).
#[cfg(not(target_os = "linux"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

extern "C" {
    /// mimalloc's `mi_option_set` (linked in by `libmimalloc-sys`).
    fn mi_option_set(option: std::os::raw::c_int, value: std::os::raw::c_long);
}

/// `mi_option_purge_delay` in mimalloc 2.x's `mi_option_t`.
const MI_OPTION_PURGE_DELAY: std::os::raw::c_int = 15;

/// How long freed memory stays mapped before mimalloc returns it to the
/// kernel (its default is 10 ms).
const PURGE_DELAY_MS: std::os::raw::c_long = 10_000;

/// Keep freed memory mapped for a while instead of handing it back to the
/// kernel 10 ms after it is freed: a write frees and allocates page-sized
/// buffers all along, and each purged one came back as fresh pages to
/// fault in and zero (a sixth of a write's CPU time; system time of a 5M-row
/// write fell from ~0.4 to ~0.25 s). Never purging (-1) saved a little more
/// but raised the peak RSS of a streaming 4M-row write from 309 to 392 MB
/// (fragments kept mapped); 2 s kept it at 314 MB. Session 7: with 2 s, a
/// write that came more than 2 s after the previous one (a benchmark
/// alternating libraries, a task writing one fragment after another)
/// faulted its whole working set in again, 30-50k page faults per write of
/// the benchmark tables; 10 s cut that to a few thousand when writes follow
/// each other, at a streaming-write peak of 359 MB (pylance 433, never
/// purging 390). `MIMALLOC_PURGE_DELAY` still overrides.
fn keep_freed_memory() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets a plain integer option; mimalloc reads options
        // atomically.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
}

/// Process-wide read totals of the storage layer (private; benchmarks use
/// it to count the requests a take makes): `{"calls", "requests", "bytes"}`.
#[pyfunction]
fn _io_stats(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let s = lancelet::io::io_stats();
    let d = pyo3::types::PyDict::new(py);
    d.set_item("calls", s.calls)?;
    d.set_item("requests", s.requests)?;
    d.set_item("bytes", s.bytes)?;
    d.set_item("mapped", s.mapped)?;
    Ok(d)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    keep_freed_memory();
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
    nearest::register(m)?;
    tiledb::register(m)?;
    tiledb_ops::register(m)?;
    tiledb_write::register(m)?;
    m.add_function(wrap_pyfunction!(_io_stats, m)?)?;
    m.add_function(wrap_pyfunction!(errors::_caught_panics, m)?)?;
    m.add_function(wrap_pyfunction!(errors::_stream_error_cause, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
