//! Module layering of the credentials service: no two modules in one folder import each other
//! (a loop between siblings becomes a parent with children, or a leaf both import).
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

const FORBIDDEN_IN_MODEL: &[&str] = &[
    "sqlx::",
    "tokio::",
    "reqwest::",
    "tonic::",
    "levelrail_db::",
    "levelrail_clouds::",
    "levelrail_proto::",
    "std::fs::",
    "aws_sdk_sts::",
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

/// The crate's layers, top to bottom (grpc, startup → app → verify → broker, store → model →
/// crypto; the crate's `lib.rs` says what each holds). A module imports only the layers below
/// its own; test code is exempt.
const LAYERS: &[&[&str]] = &[
    &["grpc", "startup"],
    &["app"],
    &["verify"],
    &["broker", "store"],
    &["model"],
    &["crypto"],
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
