//! Module layering of the provisioner: no two modules in one folder import each other (a loop
//! between siblings becomes a parent with children, or a leaf both import), and the cloud
//! adapters under `providers/` sit below the workflow, the gRPC layer and the store.
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
fn providers_import_neither_the_workflow_nor_grpc_nor_the_store() {
    let graph = graph();
    let upward: Vec<String> = ["workflow", "grpc", "store"]
        .iter()
        .flat_map(|layer| graph.imports_between("providers", layer))
        .collect();
    assert!(
        upward.is_empty(),
        "providers import a layer above them: {upward:#?}"
    );
}
