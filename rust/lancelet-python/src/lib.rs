//! PyO3 glue for lancelet: argument conversion, Arrow in and out through
//! the Arrow PyCapsule interface (no copies), and error → exception
//! mapping. No format logic lives here.

#[allow(dead_code)]
mod arrow_ffi;
mod bases;
mod blob;
mod branches;
mod callback;
mod commit_args;
mod dataset;
mod errors;
mod evolve;
mod file;
mod fts;
mod fts_analyzer;
mod index;
mod merge;
mod namespace;
mod nearest;
mod ops;
mod optimize;
mod tiledb;
mod tiledb_ops;
mod tiledb_write;
mod vector_index;
mod write;

use pyo3::prelude::*;

#[cfg(not(any(feature = "alloc-mimalloc", feature = "alloc-jemalloc")))]
compile_error!("choose the global allocator: one of the features alloc-mimalloc, alloc-jemalloc");
#[cfg(all(feature = "alloc-mimalloc", feature = "alloc-jemalloc"))]
compile_error!("the alloc-* features exclude each other: build with --no-default-features --features alloc-X");

/// mimalloc (the default, `alloc-mimalloc`) keeps freed memory for reuse:
/// encoding and decoding allocate many page-sized buffers, and with the
/// system allocator each came fresh from the kernel (page faults and
/// zeroing were a tenth of a write's time). Built with `no_thp`: it does
/// not ask for transparent huge pages, whose faults (with the common
/// `defrag=madvise` setting) compact memory on the spot and made a write's
/// system time swing from 0.07 to 0.9 s.
///
/// Chosen as the simplest allocator that holds the memory targets (issue
/// 30.4; benches/RESULTS.md, "Allocator choice"; `benches/alloc_compare.py`,
/// release builds, one run alternating the variants, 3 rounds): peak RSS of
/// the streaming 4M-row writes of the wide table 0.66-0.90 of pylance's in
/// the same round (64k- and 100k-row batches), scan 0.40-0.45. Sessions 9-12
/// wrapped it in `bigalloc` (blocks of 1 MiB+ in mappings of their own
/// behind a cache: ~800 lines, ~50 unsafe sites, a global spin lock): ~30 MB
/// lower peaks and fewer page faults on writes, but no target needed them.
/// jemalloc (`alloc-jemalloc`) had the lowest peaks (write100k 0.53-0.67)
/// but about twice mimalloc's page faults on writes.
#[cfg(feature = "alloc-mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
/// jemalloc (`alloc-jemalloc`), its symbols prefixed so that only Rust's
/// allocations use it, configured through [`JEMALLOC_CONF`].
#[cfg(feature = "alloc-jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's build-time options (its `malloc_conf` symbol, `_rjem_`
/// prefixed): freed pages stay dirty, then muzzy, for 10 s before they go
/// back to the kernel (the 10 s that mimalloc's purge delay has below).
#[cfg(feature = "alloc-jemalloc")]
#[export_name = "_rjem_malloc_conf"]
static JEMALLOC_CONF: &u8 = &b"dirty_decay_ms:10000,muzzy_decay_ms:10000\0"[0];

#[cfg(feature = "alloc-mimalloc")]
extern "C" {
    /// mimalloc's `mi_option_set` (linked in by `libmimalloc-sys`).
    fn mi_option_set(option: std::os::raw::c_int, value: std::os::raw::c_long);
}

/// `mi_option_purge_delay` in mimalloc 2.x's `mi_option_t`.
#[cfg(feature = "alloc-mimalloc")]
const MI_OPTION_PURGE_DELAY: std::os::raw::c_int = 15;

/// How long freed memory stays mapped before mimalloc returns it to the
/// kernel (its default is 10 ms).
#[cfg(feature = "alloc-mimalloc")]
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
    #[cfg(feature = "alloc-mimalloc")]
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets a plain integer option; mimalloc reads options
        // atomically.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
}

#[cfg(feature = "alloc-jemalloc")]
extern "C" {
    /// jemalloc's `mallctl` (prefixed; linked in by `tikv-jemalloc-sys`).
    fn _rjem_mallctl(
        name: *const std::os::raw::c_char,
        oldp: *mut std::ffi::c_void,
        oldlenp: *mut usize,
        newp: *mut std::ffi::c_void,
        newlen: usize,
    ) -> std::os::raw::c_int;
}

/// The global allocator this build uses (private; benchmarks check it):
/// `{"name"}`, and for jemalloc the decay options it runs with.
#[pyfunction]
fn _allocator(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let d = pyo3::types::PyDict::new(py);
    let name = if cfg!(feature = "alloc-jemalloc") { "jemalloc" } else { "mimalloc" };
    d.set_item("name", name)?;
    #[cfg(feature = "alloc-jemalloc")]
    for opt in ["opt.dirty_decay_ms", "opt.muzzy_decay_ms"] {
        let key = std::ffi::CString::new(opt).expect("no NUL in the option's name");
        let mut value: isize = 0;
        let mut len = std::mem::size_of::<isize>();
        // SAFETY: reads an `ssize_t` option into a buffer of that size.
        let rc = unsafe { _rjem_mallctl(key.as_ptr(), (&mut value as *mut isize).cast(), &mut len, std::ptr::null_mut(), 0) };
        if rc == 0 {
            d.set_item(opt, value)?;
        }
    }
    Ok(d)
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
    branches::register(m)?;
    blob::register(m)?;
    bases::register(m)?;
    ops::register(m)?;
    merge::register(m)?;
    evolve::register(m)?;
    optimize::register(m)?;
    index::register(m)?;
    fts_analyzer::register(m)?;
    vector_index::register(m)?;
    nearest::register(m)?;
    fts::register(m)?;
    tiledb::register(m)?;
    tiledb_ops::register(m)?;
    tiledb_write::register(m)?;
    m.add_function(wrap_pyfunction!(_io_stats, m)?)?;
    m.add_function(wrap_pyfunction!(_allocator, m)?)?;
    m.add_function(wrap_pyfunction!(errors::_caught_panics, m)?)?;
    m.add_function(wrap_pyfunction!(errors::_stream_error_cause, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
