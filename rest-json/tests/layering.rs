//! The REST/JSON mapping stays pure: no import loops, no adapter crate (the HTTP layer is
//! the control plane's). The protocol crate is named in `descriptors.rs` alone, for its
//! encoded descriptor set.
#[macro_use]
#[path = "../../scripts/module_imports.rs"]
mod module_imports;

pure_crate_tests!(&["descriptors.rs"]);
