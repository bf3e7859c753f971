//! INVERTED index posting blocks, position streams and fst token sets decoded.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    lancelet::fuzzing::fts_postings(data);
});
