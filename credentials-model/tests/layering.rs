//! The credentials model stays pure: no import loops, no adapter crate.
#[macro_use]
#[path = "../../scripts/module_imports.rs"]
mod module_imports;

pure_crate_tests!(&[]);
