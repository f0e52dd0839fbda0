//! Module rules of the simulated clouds: no two modules in one folder import each other, and
//! no files import each other through a longer loop. A fake's dispatcher and its handlers
//! share the wire helpers through a leaf module (`wire.rs`) that imports neither.
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
fn no_files_import_each_other_through_a_loop_of_any_length() {
    let cycles = graph().cycles();
    assert!(cycles.is_empty(), "import loops: {cycles:#?}");
}
