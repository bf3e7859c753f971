//! 2.1/2.2 files with mini-block pages.
#![no_main]
use lancelet::fuzzing::PageKind;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    lancelet::fuzzing::data_file_with_pages(data, PageKind::MiniBlock);
});
