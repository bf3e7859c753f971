//! The 2.x footer, offset tables and file metadata.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    lancelet::fuzzing::file_footer(data);
});
