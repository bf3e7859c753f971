//! TileDB arrays with one file replaced by the input (see
//! `rust/lancelet/src/fuzzing_tiledb.rs`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    lancelet::fuzzing::tiledb_array(data);
});
