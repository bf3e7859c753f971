//! `.arrow` deletion files (Arrow IPC).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    lancelet::fuzzing::deletion_arrow(data);
});
