//! Every input kept for the fuzz targets, replayed through their properties: the corpus
//! (`fuzz/corpus/<target>/`) and the inputs that once failed (`fuzz/regressions/<target>/`).
//! A crash the fuzzer finds is added to `regressions/` with the fix, and stays tested here.
use std::path::{Path, PathBuf};

use levelrail_fuzz_checks::TARGETS;

fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz")
        .join(kind)
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_target_has_a_seed_corpus() {
    for target in TARGETS.map(|t| t.name) {
        assert!(
            inputs("corpus", target).len() >= 3,
            "fuzz/corpus/{target} holds at least three seeds"
        );
        let source = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fuzz/fuzz_targets")
            .join(format!("{target}.rs"));
        assert!(source.is_file(), "fuzz/fuzz_targets/{target}.rs exists");
    }
}

#[test]
fn every_corpus_folder_is_a_target() {
    // A misnamed folder would never be replayed.
    let names: Vec<&str> = TARGETS.map(|t| t.name).to_vec();
    for kind in ["corpus", "regressions"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fuzz")
            .join(kind);
        for entry in std::fs::read_dir(&dir).expect("the folder exists") {
            let name = entry.expect("an entry").file_name();
            let name = name.to_string_lossy();
            assert!(
                names.contains(&name.as_ref()),
                "fuzz/{kind}/{name} is no target"
            );
        }
    }
}

#[test]
fn the_corpus_and_every_regression_pass_their_properties() {
    let mut failing = Vec::new();
    for target in TARGETS {
        for kind in ["corpus", "regressions"] {
            for file in inputs(kind, target.name) {
                let data = std::fs::read(&file).expect("readable");
                if std::panic::catch_unwind(|| (target.check)(&data)).is_err() {
                    failing.push(format!("{}: {}", target.name, file.display()));
                }
            }
        }
    }
    assert!(
        failing.is_empty(),
        "inputs failing their properties: {failing:#?}"
    );
}

#[test]
fn the_valid_seeds_are_accepted_so_fuzzing_starts_deep() {
    for target in TARGETS {
        let valid: Vec<PathBuf> = inputs("corpus", target.name)
            .into_iter()
            .filter(|f| {
                f.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("valid-"))
            })
            .collect();
        assert!(!valid.is_empty(), "{}: no valid seed", target.name);
        for file in valid {
            let data = std::fs::read(&file).expect("readable");
            assert!(
                (target.accepts)(&data),
                "{}: {} is refused",
                target.name,
                file.display()
            );
        }
    }
}
