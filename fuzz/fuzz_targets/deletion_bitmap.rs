//! `.bin` deletion files (Roaring bitmaps).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    lancelet::fuzzing::deletion_bitmap(data);
});
