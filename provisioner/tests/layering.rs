//! Module layering of the provisioner (its `lib.rs` says what each layer holds), and no
//! control flow on a provider's error codes.
#[macro_use]
#[path = "../../scripts/module_imports.rs"]
mod module_imports;

// grpc → app → store, cloudinit → enroll → model.
service_layering_tests!(&[
    &["grpc", "test_support"],
    &["app"],
    &["store", "cloudinit"],
    &["enroll"],
    &["model"],
]);

#[test]
fn no_control_flow_compares_provider_error_codes() {
    // The saga decides retries, fallbacks and undo on kinds and reasons; the codes a
    // provider sends are mapped to those in the clients' `error.rs` alone.
    let found = module_imports::provider_code_comparisons(&src(), &[]);
    assert!(found.is_empty(), "branching on provider codes: {found:#?}");
}
