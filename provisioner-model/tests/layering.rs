//! The provisioner's model stays pure: no import loops, and no adapter crate outside the
//! feature-gated error conversions of the SQL store.
#[macro_use]
#[path = "../../scripts/module_imports.rs"]
mod module_imports;

pure_crate_tests!(&["ports/sql.rs"]);
