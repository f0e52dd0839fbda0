//! Module layering of the provisioner: no two modules in one folder import each other (a loop
//! between siblings becomes a parent with children, or a leaf both import), and nothing
//! branches on a provider's error codes.
#[path = "../../scripts/module_imports.rs"]
mod module_imports;

use std::path::Path;

use module_imports::Graph;

fn graph() -> Graph {
    Graph::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

#[test]
fn no_two_sibling_modules_import_each_other() {
    let cycles = graph().sibling_cycles();
    assert!(
        cycles.is_empty(),
        "sibling modules import each other: {cycles:#?}"
    );
}

#[test]
fn no_control_flow_compares_provider_error_codes() {
    // The saga decides retries, fallbacks and undo on kinds and reasons; the codes a
    // provider sends are mapped to those in the clients' `error.rs` alone.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = module_imports::provider_code_comparisons(&src, &[]);
    assert!(found.is_empty(), "branching on provider codes: {found:#?}");
}
