//! The in-crate import graph of a crate's `src/`, for the layering tests
//! (`credentials-svc`, `provisioner`, `clouds`, `sim` and `cli` each have a
//! `tests/layering.rs` that pulls this file in with `#[path]`; a shared file instead of a
//! crate keeps the workspace and the lock file as they are).
//!
//! Every `crate::…`, `super::…` and `self::…` path is read, in `use` items (brace groups
//! included) and in code, with comments and string literals skipped. A path resolves to the
//! deepest module that has its own file, so an edge joins two files. `super` inside an inline
//! `mod x { … }` is resolved from that inline module. `main.rs` and `src/bin/` are other crate
//! roots and are not read. Paths written through macros other than `$crate` are not seen.
#![allow(dead_code, unreachable_pub, unused_macros)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// A module path inside the crate; the crate root is empty.
pub type ModPath = Vec<String>;

/// The crate's file modules (module path → file path under `src/`) and the imports between
/// them (importer → imported; never a file to itself).
#[derive(Debug, Default)]
pub struct Graph {
    pub files: BTreeMap<ModPath, String>,
    pub edges: BTreeSet<(ModPath, ModPath)>,
}

impl Graph {
    /// Reads every library file under `src`.
    pub fn load(src: &Path) -> Graph {
        let mut sources = Vec::new();
        collect(src, src, &mut sources);
        Graph::from_sources(&sources)
    }

    /// Builds the graph of `(path under src/, text)` pairs.
    pub fn from_sources(sources: &[(String, String)]) -> Graph {
        let mut graph = Graph::default();
        for (path, _) in sources {
            graph.files.insert(module_of(path), path.clone());
        }
        for (path, text) in sources {
            let from = module_of(path);
            for target in paths_in(&from, &tokens(text)) {
                let to = graph.deepest_file(&target);
                if to != from {
                    graph.edges.insert((from.clone(), to));
                }
            }
        }
        graph
    }

    /// Pairs of files in the same folder (the same parent module) that import each other, as
    /// `"a.rs <-> b.rs"`.
    pub fn sibling_cycles(&self) -> Vec<String> {
        self.edges
            .iter()
            .filter(|(a, b)| a < b && same_parent(a, b))
            .filter(|(a, b)| self.edges.contains(&(b.clone(), a.clone())))
            .map(|(a, b)| format!("{} <-> {}", self.files[a], self.files[b]))
            .collect()
    }

    /// Imports from a file under module `from` into a module under `to`, as
    /// `"file.rs -> module::path"`.
    pub fn imports_between(&self, from: &str, to: &str) -> Vec<String> {
        self.edges
            .iter()
            .filter(|(a, _)| a.first().map(String::as_str) == Some(from))
            .filter(|(_, b)| b.first().map(String::as_str) == Some(to))
            .map(|(a, b)| format!("{} -> crate::{}", self.files[a], b.join("::")))
            .collect()
    }

    /// The import loops of any length: the strongly connected components of more than one
    /// file, each as its files' paths, sorted; the components sorted too.
    pub fn cycles(&self) -> Vec<Vec<String>> {
        let nodes: Vec<&ModPath> = self.files.keys().collect();
        let index: BTreeMap<&ModPath, usize> =
            nodes.iter().enumerate().map(|(i, m)| (*m, i)).collect();
        let mut next = vec![Vec::new(); nodes.len()];
        for (a, b) in &self.edges {
            if let (Some(&i), Some(&j)) = (index.get(a), index.get(b)) {
                next[i].push(j);
            }
        }
        let mut found: Vec<Vec<String>> = strongly_connected(&next)
            .into_iter()
            .filter(|component| component.len() > 1)
            .map(|component| {
                let mut files: Vec<String> = component
                    .into_iter()
                    .map(|i| self.files[nodes[i]].clone())
                    .collect();
                files.sort();
                files
            })
            .collect();
        found.sort();
        found
    }

    /// The imports that break a layering of the crate's top-level modules: `layers` runs from
    /// the top layer to the bottom one, and a module may import only modules of lower layers
    /// (and itself). Returns each import from a lower layer into a higher one, or between two
    /// modules of one layer, as `"file.rs -> crate::path"`, then each top-level module placed
    /// in no layer (a new module must be placed) and each name placed that is no module or
    /// placed twice. The crate root (`lib.rs`) is in no layer: imports to and from it are not
    /// checked.
    pub fn upward_imports(&self, layers: &[&[&str]]) -> Vec<String> {
        let mut layer_of: BTreeMap<&str, usize> = BTreeMap::new();
        let mut problems = Vec::new();
        let modules: BTreeSet<&str> = self
            .files
            .keys()
            .filter_map(|m| m.first().map(String::as_str))
            .collect();
        for (depth, layer) in layers.iter().enumerate() {
            for &name in layer.iter() {
                if layer_of.insert(name, depth).is_some() {
                    problems.push(format!("crate::{name} is placed in more than one layer"));
                }
                if !modules.contains(name) {
                    problems.push(format!(
                        "crate::{name} is placed in a layer but is no module"
                    ));
                }
            }
        }
        let mut edges = Vec::new();
        for (from, to) in &self.edges {
            let (Some(a), Some(b)) = (from.first(), to.first()) else {
                continue;
            };
            let (Some(&la), Some(&lb)) = (layer_of.get(a.as_str()), layer_of.get(b.as_str()))
            else {
                continue;
            };
            if la > lb || (la == lb && a != b) {
                edges.push(format!("{} -> crate::{}", self.files[from], to.join("::")));
            }
        }
        for name in modules {
            if !layer_of.contains_key(name) {
                problems.push(format!("crate::{name} is placed in no layer"));
            }
        }
        edges.extend(problems);
        edges
    }

    fn deepest_file(&self, path: &[String]) -> ModPath {
        (0..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|prefix| self.files.contains_key(prefix))
            .unwrap_or_default()
    }
}

/// Control flow branches on error kinds and reasons, never on a provider's error strings:
/// the library lines under `src` (the paths in `except` left out) that compare an
/// error's `.code` with something, outside comments and assertions, as `"file.rs:N: line"`.
pub fn provider_code_comparisons(src: &Path, except: &[&str]) -> Vec<String> {
    const PATTERNS: [&str; 4] = [
        ".code ==",
        ".code !=",
        "matches!(e.code",
        "contains(&e.code",
    ];
    lines_where(src, |path, code| {
        !except.contains(&path)
            && PATTERNS.iter().any(|p| code.contains(p))
            && !code.contains("assert")
    })
}

/// Whether a file under `src/` is test code: a `tests` module (`tests.rs`, `tests/…`) or the
/// crate's `test_support`. (A store's conformance suite is library code other crates run,
/// so it is held to its layer; an inline `#[cfg(test)] mod tests` counts as its file.)
pub fn is_test_file(path: &str) -> bool {
    path.split('/')
        .any(|part| matches!(part.trim_end_matches(".rs"), "tests" | "test_support"))
}

/// The lines of library (non-test) files under `dir` that name one of `needles` outside a
/// comment, as `"file.rs:N: line"`.
pub fn mentions(dir: &Path, needles: &[&str]) -> Vec<String> {
    lines_where(dir, |path, code| {
        !is_test_file(path) && needles.iter().any(|needle| code.contains(needle))
    })
}

/// The lines under `dir` whose code (the part before a `//`) `keep(path, code)` selects, as
/// `"file.rs:N: line"`.
fn lines_where(dir: &Path, keep: impl Fn(&str, &str) -> bool) -> Vec<String> {
    let mut sources = Vec::new();
    collect(dir, dir, &mut sources);
    let mut found = Vec::new();
    for (path, text) in &sources {
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            if keep(path, code) {
                found.push(format!("{path}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

/// The `pub use` / `pub(crate) use` lines of a crate root: a re-export there would let any
/// layer reach an item as `crate::Item`, which the layer checks cannot see.
pub fn root_re_exports(src: &Path) -> Vec<String> {
    let lib = fs::read_to_string(src.join("lib.rs")).expect("src/lib.rs");
    lib.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("pub use") || l.starts_with("pub(crate) use"))
        .map(str::to_owned)
        .collect()
}

/// Crates a service's model must not name: databases, runtimes, HTTP, gRPC, the provider
/// clients, and the file system.
pub const ADAPTER_CRATES: &[&str] = &[
    "sqlx::",
    "tokio::",
    "reqwest::",
    "tonic::",
    "levelrail_db::",
    "levelrail_clouds::",
    "levelrail_proto::",
    "aws_sdk_",
    "std::fs",
    "std::process",
];

/// What every layering test file has: `src()`, and no import loop of any length (test files
/// exempt).
macro_rules! crate_graph_tests {
    () => {
        fn src() -> std::path::PathBuf {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
        }

        #[test]
        fn no_modules_import_each_other_through_any_loop() {
            let graph = module_imports::Graph::load(&src()).without_test_imports();
            let cycles = graph.cycles();
            assert!(cycles.is_empty(), "import loops: {cycles:#?}");
        }
    };
}

/// The layering tests of a service crate whose `src/model` is its pure bottom layer: no two
/// sibling files import each other, no import loop of any length, no import against
/// `$layers` (top to bottom; test files exempt), no adapter crate in the model, and no
/// re-export at the crate root.
macro_rules! service_layering_tests {
    ($layers:expr) => {
        crate_graph_tests!();

        #[test]
        fn no_two_sibling_modules_import_each_other() {
            let cycles = module_imports::Graph::load(&src()).sibling_cycles();
            assert!(
                cycles.is_empty(),
                "sibling modules import each other: {cycles:#?}"
            );
        }

        #[test]
        fn no_module_imports_a_layer_above_its_own_or_beside_it() {
            let graph = module_imports::Graph::load(&src()).without_test_imports();
            let upward = graph.upward_imports($layers);
            assert!(upward.is_empty(), "imports against the layers: {upward:#?}");
        }

        #[test]
        fn the_model_names_no_database_runtime_http_or_grpc_crate() {
            let found =
                module_imports::mentions(&src().join("model"), module_imports::ADAPTER_CRATES);
            assert!(
                found.is_empty(),
                "the model uses an adapter crate: {found:#?}"
            );
        }

        #[test]
        fn the_crate_root_re_exports_nothing() {
            let re_exports = module_imports::root_re_exports(&src());
            assert!(
                re_exports.is_empty(),
                "the crate root re-exports: {re_exports:?}"
            );
        }
    };
}

/// The rules of a pure crate (the model crates, the user-data renderer): no import loops,
/// and no database, runtime, HTTP or gRPC crate, and no file I/O, named outside `$allowed`
/// (files under `src/` compiled only for tests or behind a feature the fuzz targets leave
/// off).
macro_rules! pure_crate_tests {
    ($allowed:expr) => {
        crate_graph_tests!();

        #[test]
        fn names_no_database_runtime_http_or_grpc_crate() {
            let allowed: &[&str] = $allowed;
            let found: Vec<String> =
                module_imports::mentions(&src(), module_imports::ADAPTER_CRATES)
                    .into_iter()
                    .filter(|line| {
                        !allowed
                            .iter()
                            .any(|file| line.starts_with(&format!("{file}:")))
                    })
                    .collect();
            assert!(found.is_empty(), "an adapter crate is named: {found:#?}");
        }
    };
}

impl Graph {
    /// The same graph without the imports made by test code ([`is_test_file`]): a test may
    /// reach any layer.
    pub fn without_test_imports(mut self) -> Graph {
        let files = &self.files;
        self.edges
            .retain(|(from, _)| !files.get(from).is_some_and(|f| is_test_file(f)));
        self
    }
}

/// Tarjan's strongly connected components of the graph whose node `i` has the successors
/// `next[i]`.
fn strongly_connected(next: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct Walk<'a> {
        next: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        counter: usize,
        found: Vec<Vec<usize>>,
    }
    impl Walk<'_> {
        fn visit(&mut self, v: usize) {
            self.index[v] = Some(self.counter);
            self.low[v] = self.counter;
            self.counter += 1;
            self.stack.push(v);
            self.on_stack[v] = true;
            for &w in &self.next[v] {
                match self.index[w] {
                    None => {
                        self.visit(w);
                        self.low[v] = self.low[v].min(self.low[w]);
                    }
                    Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                    Some(_) => {}
                }
            }
            if Some(self.low[v]) == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                self.found.push(component);
            }
        }
    }
    let n = next.len();
    let mut walk = Walk {
        next,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        counter: 0,
        found: Vec::new(),
    };
    for v in 0..n {
        if walk.index[v].is_none() {
            walk.visit(v);
        }
    }
    walk.found
}

fn same_parent(a: &ModPath, b: &ModPath) -> bool {
    !a.is_empty() && a.len() == b.len() && a[..a.len() - 1] == b[..b.len() - 1]
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let rel = path
            .strip_prefix(root)
            .expect("under src")
            .to_string_lossy();
        let rel = rel.replace('\\', "/");
        if rel == "main.rs" || rel == "bin" {
            continue;
        }
        if path.is_dir() {
            collect(root, &path, out);
        } else if rel.ends_with(".rs") {
            let text = fs::read_to_string(&path).expect("a readable source file");
            out.push((rel, text));
        }
    }
}

/// `lib.rs` → root, `a/mod.rs` and `a.rs` → `a`, `a/b.rs` → `a::b`.
fn module_of(path: &str) -> ModPath {
    let mut parts: Vec<String> = path
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Punct(char),
}

/// The identifiers, `::` and punctuation of `text`, without comments and literals.
fn tokens(text: &str) -> Vec<Tok> {
    let c: Vec<char> = text.chars().collect();
    let (mut out, mut i) = (Vec::new(), 0);
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let (mut depth, mut j) = (0, i);
            loop {
                if j >= c.len() {
                    break;
                } else if c[j] == '/' && at(j + 1) == '*' {
                    depth += 1;
                    j += 2;
                } else if c[j] == '*' && at(j + 1) == '/' {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            i = j;
        } else if ch == '"' {
            i = skip_string(&c, i + 1);
        } else if ch == '\'' {
            i = skip_char_or_lifetime(&c, i);
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            if matches!(word.as_str(), "r" | "br") && matches!(at(i), '"' | '#') {
                i = skip_raw_string(&c, i);
            } else if word == "b" && at(i) == '"' {
                i = skip_string(&c, i + 1);
            } else if word == "b" && at(i) == '\'' {
                i = skip_char_or_lifetime(&c, i);
            } else {
                out.push(Tok::Ident(word));
            }
        } else if ch == ':' && at(i + 1) == ':' {
            out.push(Tok::PathSep);
            i += 2;
        } else {
            out.push(Tok::Punct(ch));
            i += 1;
        }
    }
    out
}

/// The index after a char literal starting at `i`, or after the quote of a lifetime (whose
/// name then reads as an identifier).
fn skip_char_or_lifetime(c: &[char], i: usize) -> usize {
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    if at(i + 1) == '\\' {
        let mut j = i + 3;
        while j < c.len() && c[j] != '\'' {
            j += 1;
        }
        j + 1
    } else if at(i + 2) == '\'' {
        i + 3
    } else {
        i + 1
    }
}

/// The index after the closing quote of a string whose body starts at `i`.
fn skip_string(c: &[char], mut i: usize) -> usize {
    while i < c.len() && c[i] != '"' {
        i += if c[i] == '\\' { 2 } else { 1 };
    }
    i + 1
}

/// The index after a raw string whose `#…"` starts at `i`.
fn skip_raw_string(c: &[char], mut i: usize) -> usize {
    let mut hashes = 0;
    while c.get(i) == Some(&'#') {
        hashes += 1;
        i += 1;
    }
    i += 1;
    while i < c.len() {
        if c[i] == '"' && (1..=hashes).all(|k| c.get(i + k) == Some(&'#')) {
            return i + 1 + hashes;
        }
        i += 1;
    }
    i
}

/// The absolute module paths named by `crate::`/`super::`/`self::` paths in a file whose
/// module is `file`.
fn paths_in(file: &ModPath, toks: &[Tok]) -> Vec<ModPath> {
    let mut inline: Vec<(String, usize)> = Vec::new();
    let (mut depth, mut out, mut i) = (0usize, Vec::new(), 0);
    let ident = |i: usize| match toks.get(i) {
        Some(Tok::Ident(s)) => Some(s.as_str()),
        _ => None,
    };
    while i < toks.len() {
        match &toks[i] {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Ident(w) if w == "mod" => {
                if let (Some(name), Some(Tok::Punct('{'))) = (ident(i + 1), toks.get(i + 2)) {
                    inline.push((name.to_owned(), depth + 1));
                }
            }
            Tok::Ident(w)
                if matches!(w.as_str(), "crate" | "super" | "self")
                    && toks.get(i + 1) == Some(&Tok::PathSep)
                    && !matches!(i.checked_sub(1).map(|p| &toks[p]), Some(Tok::PathSep)) =>
            {
                let mut base = file.clone();
                base.extend(inline.iter().map(|(n, _)| n.clone()));
                let (trees, next) = tree(toks, i);
                for segments in trees {
                    out.push(resolve(&base, &segments));
                }
                i = next;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The full segment lists of the path (or `use` tree) starting at `i`, and the index after it.
fn tree(toks: &[Tok], mut i: usize) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    loop {
        match toks.get(i) {
            Some(Tok::Ident(w)) if w != "as" => {
                prefix.push(w.clone());
                i += 1;
            }
            Some(Tok::Punct('{')) => {
                let mut all = Vec::new();
                i += 1;
                while i < toks.len() && toks[i] != Tok::Punct('}') {
                    if toks[i] == Tok::Punct(',') {
                        i += 1;
                        continue;
                    }
                    if toks[i] == Tok::Ident("as".into()) {
                        i += 2; // `as alias`
                        continue;
                    }
                    let (subs, next) = tree(toks, i);
                    for sub in subs {
                        all.push(prefix.iter().cloned().chain(sub).collect());
                    }
                    i = next.max(i + 1);
                }
                return (all, i + 1);
            }
            _ => return (vec![prefix], i),
        }
        if toks.get(i) != Some(&Tok::PathSep) {
            // `as alias` (skipped by the caller's loop) or the end of the path.
            return (vec![prefix], i);
        }
        i += 1;
    }
}

fn resolve(base: &ModPath, segments: &[String]) -> ModPath {
    let mut path = base.clone();
    for (n, segment) in segments.iter().enumerate() {
        match segment.as_str() {
            "crate" if n == 0 => path.clear(),
            "super" => {
                path.pop();
            }
            "self" => {}
            other => path.push(other.to_owned()),
        }
    }
    path
}
