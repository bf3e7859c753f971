//! Tag files and the latest-version hint.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    lancelet::fuzzing::tags_and_hint(data);
});
