//! Manifest files (all sections, index section included), opened as a dataset and appended to.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    lancelet::fuzzing::manifest(data);
});
