//! Fuzz target `rest_request`: the properties are `levelrail_fuzz_checks::rest_request::check`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| levelrail_fuzz_checks::rest_request::check(data));
