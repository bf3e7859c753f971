//! Staged fragment bytes from distributed-write callers.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    lancelet::fuzzing::staged_fragments(data);
});
