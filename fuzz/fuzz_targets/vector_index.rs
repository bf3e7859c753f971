//! Bytes as `index.idx` or `auxiliary.idx` of a small IVF_FLAT / IVF_PQ /
//! IVF_SQ index, opened and searched (lancelet::index::vector::testing).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    lancelet::index::vector::testing::vector_index(data);
});
