//! FSST decoding: a symbol table, string offsets and compressed bytes
//! (layout in `rust/lancelet/src/fuzzing_fsst.rs`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    lancelet::fuzzing::fsst_decode(data);
});
