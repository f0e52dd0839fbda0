//! Fuzz target `credentials`: the properties are `levelrail_fuzz_checks::credentials::check`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| levelrail_fuzz_checks::credentials::check(data));
