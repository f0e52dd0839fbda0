//! The package names that the README, the shell scripts under `scripts/` and `.ci/run` give
//! cargo (`-p NAME`, `-p=NAME`, `--package NAME`, `--package=NAME`) name packages of the
//! workspace. A package's name is not its folder's: `control-plane/` is `levelrail`,
//! `credentials-svc/` is `levelrail-credentials`.
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The quoted strings of the root manifest's `members = [ … ]`.
fn members(manifest: &str) -> Vec<String> {
    let start = manifest
        .lines()
        .position(|l| l.trim_start().starts_with("members"))
        .expect("a members list");
    let mut list = String::new();
    for line in manifest.lines().skip(start) {
        list.push_str(line.split('#').next().unwrap_or_default());
        if line.contains(']') {
            break;
        }
    }
    list.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The `name` of a member manifest's `[package]` table.
fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package && let Some(value) = line.strip_prefix("name") {
            let value = value.trim_start().strip_prefix('=')?.trim();
            return Some(value.trim_matches('"').to_owned());
        }
    }
    None
}

fn workspace_packages() -> BTreeSet<String> {
    let root = root();
    members(&read(&root.join("Cargo.toml")))
        .iter()
        .map(|member| {
            let manifest = root.join(member).join("Cargo.toml");
            package_name(&read(&manifest))
                .unwrap_or_else(|| panic!("{} names no package", manifest.display()))
        })
        .collect()
}

/// The package names given to cargo in `text`, with their line numbers. Lines continued
/// with `\` are read as one command; a cargo command ends at `--` (what follows is the
/// program's), at a shell separator or at the closing backtick of Markdown code. Names
/// that are variables or placeholders (`$pkg`, `<name>`) are skipped.
fn cargo_packages(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((n, first)) = lines.next() {
        let mut command = first.to_owned();
        while command.ends_with('\\') {
            command.pop();
            match lines.next() {
                Some((_, next)) => command.push_str(next),
                None => break,
            }
        }
        let (mut in_cargo, mut wants_name) = (false, false);
        for word in command.split_whitespace() {
            let bare = word.trim_start_matches(['`', '(', '"', '\'', '$']);
            let ends = word.ends_with(['`', ';', ')', '|', '&']) || matches!(bare, "&&" | "||");
            if bare == "cargo" {
                in_cargo = true;
            } else if in_cargo && wants_name {
                found.push((n + 1, word.to_owned()));
                wants_name = false;
            } else if in_cargo && word == "--" {
                in_cargo = false;
            } else if in_cargo && matches!(word, "-p" | "--package") {
                wants_name = true;
            } else if in_cargo
                && let Some(name) = word
                    .strip_prefix("-p=")
                    .or_else(|| word.strip_prefix("--package="))
            {
                found.push((n + 1, name.to_owned()));
            }
            if ends {
                in_cargo = false;
                wants_name = false;
            }
        }
    }
    found
        .into_iter()
        .filter(|(_, word)| !word.contains(['$', '<']))
        .map(|(n, word)| {
            // The name runs to the first character a package name cannot hold (a closing
            // quote, a parenthesis, the full stop of a sentence).
            let name = word
                .trim_start_matches(['`', '"', '\''])
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
                .collect();
            (n, name)
        })
        .collect()
}

/// The README, every shell script under `scripts/` (a `#!` line naming a shell, or `.sh`)
/// and `.ci/run`.
fn documents() -> Vec<PathBuf> {
    let root = root();
    let mut paths = vec![root.join("README.md"), root.join(".ci/run")];
    let mut scripts: Vec<PathBuf> = fs::read_dir(root.join("scripts"))
        .expect("scripts/")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_file())
        .filter(|p| {
            let text = fs::read_to_string(p).unwrap_or_default();
            let shebang = text.lines().next().unwrap_or_default();
            p.extension().is_some_and(|e| e == "sh")
                || (shebang.starts_with("#!") && shebang.contains("sh"))
        })
        .collect();
    scripts.sort();
    paths.extend(scripts);
    paths
}

#[test]
fn docs_and_scripts_name_only_packages_of_the_workspace() {
    let packages = workspace_packages();
    assert!(packages.contains("levelrail") && packages.contains("levelrail-credentials"));
    let root = root();
    let (mut named, mut unknown) = (0, Vec::new());
    for path in documents() {
        let shown = path
            .strip_prefix(&root)
            .unwrap_or(&path)
            .display()
            .to_string();
        for (line, name) in cargo_packages(&read(&path)) {
            named += 1;
            if !packages.contains(&name) {
                unknown.push(format!("{shown}:{line}: {name}"));
            }
        }
    }
    assert!(
        named > 5,
        "only {named} package names found: is the reader broken?"
    );
    assert!(
        unknown.is_empty(),
        "not packages of the workspace ({packages:?}): {unknown:#?}"
    );
}

#[test]
fn only_the_package_arguments_of_cargo_are_read() {
    let text = "mkdir -p \"$node\" && pg_isready -q -p 5432\n\
        `cargo build -p levelrail --no-default-features` and `cargo bench -p=levelrail-tests`\n\
        echo x | cargo run -q -p levelrail-cli -- nodes -p not-cargo\n\
        cargo test --workspace \\\n  --package levelrail-sim --package=levelrail-db; ls -p x\n\
        cargo build -p \"$pkg\" -p <name>\n";
    assert_eq!(
        cargo_packages(text),
        vec![
            (2, "levelrail".to_owned()),
            (2, "levelrail-tests".to_owned()),
            (3, "levelrail-cli".to_owned()),
            (4, "levelrail-sim".to_owned()),
            (4, "levelrail-db".to_owned()),
        ]
    );
}
