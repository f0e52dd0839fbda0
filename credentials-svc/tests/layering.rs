//! Module layering of the credentials service (its `lib.rs` says what each layer holds).
#[macro_use]
#[path = "../../scripts/module_imports.rs"]
mod module_imports;

// grpc, startup → app → verify → broker, store → model → crypto.
service_layering_tests!(&[
    &["grpc", "startup"],
    &["app"],
    &["verify"],
    &["broker", "store"],
    &["model"],
    &["crypto"],
]);
