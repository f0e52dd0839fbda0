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

const FORBIDDEN_IN_MODEL: &[&str] = &[
    "sqlx::",
    "tokio::",
    "reqwest::",
    "tonic::",
    "levelrail_db::",
    "levelrail_clouds::",
    "levelrail_proto::",
    "std::fs::",
];

/// The model is pure: no database, runtime, HTTP or gRPC crate, no provider client, and no
/// import of another layer of this crate (test code aside).
#[test]
fn the_model_names_no_database_runtime_http_or_grpc_crate() {
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/model");
    let found = module_imports::mentions(&model, FORBIDDEN_IN_MODEL);
    assert!(
        found.is_empty(),
        "the model uses an adapter crate: {found:#?}"
    );
}

/// The crate's layers, top to bottom (grpc → app → store, cloudinit → enroll → model; the
/// crate's `lib.rs` says what each holds). A module imports only the layers below its own; test
/// code is exempt.
const LAYERS: &[&[&str]] = &[
    &["grpc", "test_support"],
    &["app"],
    &["store", "cloudinit"],
    &["enroll"],
    &["model"],
];

#[test]
fn no_module_imports_a_layer_above_its_own_or_beside_it() {
    let graph = Graph::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let upward = graph.without_test_imports().upward_imports(LAYERS);
    assert!(upward.is_empty(), "imports against the layers: {upward:#?}");
}

#[test]
fn no_modules_import_each_other_through_any_loop() {
    let graph = Graph::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let cycles = graph.without_test_imports().cycles();
    assert!(cycles.is_empty(), "import loops: {cycles:#?}");
}

/// The layer checks read `crate::layer::…` paths; a re-export at the crate root would let
/// any layer reach an item as `crate::Item` unseen, so the root re-exports nothing.
#[test]
fn the_crate_root_re_exports_nothing() {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
        .expect("src/lib.rs");
    let re_exports: Vec<&str> = lib
        .lines()
        .filter(|l| {
            l.trim_start().starts_with("pub use") || l.trim_start().starts_with("pub(crate) use")
        })
        .collect();
    assert!(
        re_exports.is_empty(),
        "the crate root re-exports: {re_exports:?}"
    );
}
