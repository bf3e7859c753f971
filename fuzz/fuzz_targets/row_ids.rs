//! Serialized RowIdSequences and the row id index.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    lancelet::fuzzing::row_ids(data);
});
