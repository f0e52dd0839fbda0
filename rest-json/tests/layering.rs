//! The REST/JSON mapping stays pure: no import loops, no adapter crate (the HTTP layer is
//! the control plane's).
#[macro_use]
#[path = "../../scripts/module_imports.rs"]
mod module_imports;

pure_crate_tests!(&[]);
