//! `zonemap.lance` index files (ZONEMAP / BLOOMFILTER indices) opened and queried.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    lancelet::fuzzing::zonemap_index(data);
});
