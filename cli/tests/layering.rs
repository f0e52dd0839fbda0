//! Module layering of the CLI: no two modules in one folder import each other, and no files
//! import each other through a longer loop. The shared types (`globals`, `outcome`) are
//! leaves that `args`, `context` and the commands import. The rest of this file tests the
//! graph itself (`scripts/module_imports.rs`) on small made-up crates.
#[path = "../../scripts/module_imports.rs"]
mod module_imports;

use std::path::Path;

use module_imports::Graph;

fn graph() -> Graph {
    Graph::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

fn sources(files: &[(&str, &str)]) -> Graph {
    let owned: Vec<(String, String)> = files
        .iter()
        .map(|(p, t)| ((*p).to_owned(), (*t).to_owned()))
        .collect();
    Graph::from_sources(&owned)
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
    // `Io` lives in `io.rs`, not in the crate root, which imports the context.
    let cycles = graph().cycles();
    assert!(cycles.is_empty(), "import loops: {cycles:#?}");
}

#[test]
fn the_leaf_modules_import_nothing_from_the_crate() {
    let graph = graph();
    for leaf in ["globals", "outcome"] {
        let from_leaf: Vec<_> = graph
            .edges
            .iter()
            .filter(|(from, _)| from.first().map(String::as_str) == Some(leaf))
            .collect();
        assert!(from_leaf.is_empty(), "{leaf} imports {from_leaf:?}");
    }
}

#[test]
fn the_context_imports_neither_the_flag_parser_nor_the_commands() {
    // The loop this replaced was args → commands → context → args, longer than the sibling
    // check's two files, so the edge that closed it is pinned here.
    let context = vec!["context".to_owned()];
    for above in ["args", "commands"] {
        let edge = (context.clone(), vec![above.to_owned()]);
        assert!(!graph().edges.contains(&edge), "context imports {above}");
    }
}

#[test]
fn the_check_names_a_loop_through_use_groups_and_calls_but_not_comments_or_strings() {
    let graph = sources(&[
        ("lib.rs", "mod a; mod b; mod c;"),
        ("a.rs", "use super::{b::Thing as T, c};"),
        ("b.rs", "fn f() { crate::a::g(); }"),
        (
            "c.rs",
            "// use super::a;\nconst S: &str = \"crate::a::x\";\nfn f<'q>(_: &'q str) {}",
        ),
    ]);
    assert_eq!(graph.sibling_cycles(), vec!["a.rs <-> b.rs".to_owned()]);
}

#[test]
fn a_child_importing_its_parent_is_no_loop_and_inline_tests_resolve_super_from_inside() {
    let graph = sources(&[
        ("lib.rs", "mod p; mod q;"),
        ("p/mod.rs", "mod x; mod y; fn f() { x::go(); y::go(); }"),
        ("p/x.rs", "use super::Shared;"),
        ("p/y.rs", "use super::Shared;"),
        ("q.rs", "#[cfg(test)] mod tests { use super::*; }"),
    ]);
    assert!(graph.sibling_cycles().is_empty(), "{:?}", graph.edges);
    assert!(
        !graph
            .edges
            .iter()
            .any(|(from, _)| from == &vec!["q".to_owned()])
    );
}

#[test]
fn the_loops_of_any_length_are_the_strongly_connected_files_sorted() {
    let graph = sources(&[
        ("lib.rs", "mod a; mod b; mod c; mod d; mod e;"),
        ("a.rs", "use crate::b::X;"),
        ("b.rs", "use crate::c::Y;"),
        ("c.rs", "fn f() { crate::a::g(); }"),
        ("d/mod.rs", "use self::inner::Z; mod inner;"),
        ("d/inner.rs", "use super::W; use crate::e::V;"),
        ("e.rs", "use crate::c::Y;"),
    ]);
    assert_eq!(
        graph.cycles(),
        vec![
            vec!["a.rs".to_owned(), "b.rs".to_owned(), "c.rs".to_owned()],
            vec!["d/inner.rs".to_owned(), "d/mod.rs".to_owned()],
        ]
    );
    let acyclic = sources(&[
        ("lib.rs", "mod a; mod b;"),
        ("a.rs", "use crate::b::X;"),
        ("b.rs", ""),
    ]);
    assert!(acyclic.cycles().is_empty());
}

#[test]
fn imports_may_only_go_down_the_layers_and_every_module_is_placed() {
    let graph = sources(&[
        (
            "lib.rs",
            "mod top; mod mid; mod low; mod side; mod new; pub use top::Run;",
        ),
        ("top.rs", "use crate::mid::M; use crate::low::L;"),
        ("mid.rs", "use crate::low::L; use crate::side::S;"),
        ("side.rs", "use crate::mid::M; use crate::Run;"),
        ("low/mod.rs", "mod deep; use self::deep::D;"),
        ("low/deep.rs", "use crate::top::T; use super::L;"),
        ("new.rs", ""),
    ]);
    let layers: &[&[&str]] = &[&["top"], &["mid", "side"], &["low"]];
    assert_eq!(
        graph.upward_imports(layers),
        vec![
            "low/deep.rs -> crate::top".to_owned(),
            "mid.rs -> crate::side".to_owned(),
            "side.rs -> crate::mid".to_owned(),
            "crate::new is placed in no layer".to_owned(),
        ]
    );
    let stale: &[&[&str]] = &[&["top", "gone"], &["mid", "side", "new"], &["low", "top"]];
    assert_eq!(
        graph.upward_imports(stale),
        vec![
            "low/deep.rs -> crate::top".to_owned(),
            "mid.rs -> crate::side".to_owned(),
            "side.rs -> crate::mid".to_owned(),
            "top.rs -> crate::low".to_owned(),
            "top.rs -> crate::mid".to_owned(),
            "crate::gone is placed in a layer but is no module".to_owned(),
            "crate::top is placed in more than one layer".to_owned(),
        ]
    );
}
