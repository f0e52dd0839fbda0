//! Fuzz target `cloudinit`: the properties are `levelrail_fuzz_checks::cloudinit::check`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| levelrail_fuzz_checks::cloudinit::check(data));
