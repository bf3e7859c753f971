//! SQL filter text: parser, planner, evaluation, pruning, scan.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    lancelet::fuzzing::sql_filter(data);
});
