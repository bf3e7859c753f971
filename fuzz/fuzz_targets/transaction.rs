//! Transaction files of concurrent writers, checked and rebased over.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    lancelet::fuzzing::transaction(data);
});
