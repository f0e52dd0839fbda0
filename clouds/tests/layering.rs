//! Module rules of the provider clients: no two modules in one folder import each other (a
//! loop between siblings becomes a parent with children, or a leaf both import), no files
//! import each other through a longer loop, and no
//! client branches on a provider's error strings (only `error.rs` maps codes to kinds and
//! reasons).
#[path = "../../scripts/module_imports.rs"]
mod module_imports;

use std::path::Path;

use module_imports::{Graph, provider_code_comparisons};

fn src() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn no_two_sibling_modules_import_each_other() {
    let cycles = Graph::load(&src()).sibling_cycles();
    assert!(
        cycles.is_empty(),
        "sibling modules import each other: {cycles:#?}"
    );
}

#[test]
fn no_control_flow_compares_provider_error_codes() {
    let found = provider_code_comparisons(&src(), &["error.rs"]);
    assert!(found.is_empty(), "branching on provider codes: {found:#?}");
}

#[test]
fn no_files_import_each_other_through_a_loop_of_any_length() {
    let cycles = Graph::load(&src()).cycles();
    assert!(cycles.is_empty(), "import loops: {cycles:#?}");
}
