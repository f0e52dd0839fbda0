//! Fuzz target `progress_report`: the properties are `levelrail_fuzz_checks::progress_report::check`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| levelrail_fuzz_checks::progress_report::check(data));
