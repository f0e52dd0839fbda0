//! The user-data renderer stays pure: no import loops, and no adapter crate or file I/O
//! outside its test-only modules (`jsonschema.rs` reads the schema files, `validate.rs`
//! runs `cloud-init schema` on a written document; both are `#[cfg(test)]`).
#[macro_use]
#[path = "../../scripts/module_imports.rs"]
mod module_imports;

pure_crate_tests!(&["jsonschema.rs", "validate.rs"]);
