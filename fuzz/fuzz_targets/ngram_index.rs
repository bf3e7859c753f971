//! `ngram_postings.lance` index files (NGRAM indices) opened and queried.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    lancelet::fuzzing::ngram_index(data);
});
