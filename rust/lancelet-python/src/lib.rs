//! PyO3 glue for lancelet: argument conversion, Arrow in and out through
//! the Arrow PyCapsule interface (no copies), and error → exception
//! mapping. No format logic lives here.

#[allow(dead_code)]
mod arrow_ffi;
mod dataset;
mod errors;
mod file;
mod write;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<arrow_ffi::ArrowStream>()?;
    m.add_class::<arrow_ffi::ArrowSchemaHolder>()?;
    m.add_class::<file::NativeFileReader>()?;
    m.add_class::<file::NativeFileWriter>()?;
    m.add_class::<dataset::NativeDataset>()?;
    write::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
