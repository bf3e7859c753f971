//! 2.0 data files (ArrayEncoding trees).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    lancelet::fuzzing::data_file_of(data, true);
});
