//! Fuzz target `join_token`: the properties are `levelrail_fuzz_checks::join_token::check`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| levelrail_fuzz_checks::join_token::check(data));
