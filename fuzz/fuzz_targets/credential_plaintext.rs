//! Fuzz target `credential_plaintext`: the properties are `levelrail_fuzz_checks::credential_plaintext::check`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| levelrail_fuzz_checks::credential_plaintext::check(data));
