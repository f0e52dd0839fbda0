//! The repository is self-contained: no tracked file points at the `shared` folder beside
//! the checkout, which a clone anywhere else does not have (issue 14: the tests once read
//! the API descriptions from there, and a newcomer's first test run was red).
use std::path::{Path, PathBuf};
use std::process::Command;

/// What no tracked file may contain: the parent folder's `shared` (built from two pieces,
/// so this file does not contain it either and needs no exception).
const OUTSIDE: &str = concat!("..", "/shared");

#[test]
fn no_tracked_file_reads_a_shared_folder_outside_the_repository() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let offenders: Vec<String> = repository_files(&root)
        .into_iter()
        .filter(|f| match std::fs::read(root.join(f)) {
            Ok(bytes) => bytes
                .windows(OUTSIDE.len())
                .any(|w| w == OUTSIDE.as_bytes()),
            // Tracked but deleted in the working tree: nothing to read.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => panic!("{f}: {e}"),
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "these files refer to {OUTSIDE}, outside the repository: {offenders:?}"
    );
}

/// The tracked files (`git ls-files`), or, outside a git checkout (an unpacked archive),
/// every file below `root` except build output, `node_modules` and `.git`. Paths are
/// relative to `root`, `/`-separated.
fn repository_files(root: &Path) -> Vec<String> {
    let listed = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["ls-files", "-z"])
        .output();
    match listed {
        Ok(out) if out.status.success() => String::from_utf8(out.stdout)
            .expect("git ls-files prints UTF-8 paths")
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect(),
        _ => {
            let mut files = Vec::new();
            walk(root, root, &mut files);
            files
        }
    }
}

fn walk(root: &Path, dir: &Path, files: &mut Vec<String>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if path.is_dir() {
            if !matches!(name, "target" | "node_modules" | ".git") {
                walk(root, &path, files);
            }
        } else if let Ok(relative) = path.strip_prefix(root) {
            let parts: Vec<_> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect();
            files.push(parts.join("/"));
        }
    }
}
