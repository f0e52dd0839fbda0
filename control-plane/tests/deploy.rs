//! The deployment files in `deploy/` use only flags and environment variables the binaries
//! have: every `--flag` of a `command:` and every `LEVELRAIL_*` / `DATABASE_URL` /
//! `APP_NODE_*` variable appears in the `--help` of the binary that runs there, and every
//! file is valid YAML.
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Variables the deployment sets for other programs (the PostgreSQL image).
const NOT_OURS: &[&str] = &["POSTGRES_USER", "POSTGRES_PASSWORD_FILE", "POSTGRES_DB"];

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// The `--help` of `binary` with `args` (e.g. `serve`).
fn help(binary: &str, args: &[&str]) -> String {
    let exe = match binary {
        "levelrail" => env!("CARGO_BIN_EXE_levelrail"),
        "levelrail-credentials" => env!("CARGO_BIN_EXE_levelrail-credentials"),
        "levelrail-provisioner" => env!("CARGO_BIN_EXE_levelrail-provisioner"),
        other => panic!("a deployment runs `{other}`, which this workspace does not build"),
    };
    let out = Command::new(exe)
        .args(args)
        .arg("--help")
        .env_clear()
        .output()
        .expect("the binary runs");
    assert!(out.status.success(), "{binary} {args:?} --help failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The `command: [...]` arrays of a file: binary, its subcommands, its flags.
fn commands(text: &str) -> Vec<(String, Vec<String>, Vec<String>)> {
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("command: ["))
        .map(|rest| {
            let words: Vec<String> = rest
                .trim_end_matches(']')
                .split(',')
                .map(|w| w.trim().trim_matches('"').to_owned())
                .collect();
            let binary = words[0].clone();
            let subcommands = words[1..]
                .iter()
                .take_while(|w| !w.starts_with('-'))
                .cloned()
                .collect();
            let flags = words
                .iter()
                .filter(|w| w.starts_with("--"))
                .cloned()
                .collect();
            (binary, subcommands, flags)
        })
        .collect()
}

/// The environment variables a file sets: `- { name: X, … }` (Kubernetes) and `X: …`
/// (Compose) keys in capitals.
fn variables(text: &str) -> BTreeSet<String> {
    let capital = |s: &str| {
        s.len() > 3
            && s.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    };
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let key = match line.strip_prefix("- { name: ") {
                Some(rest) => rest.split(',').next()?,
                None => line.split(':').next()?,
            };
            capital(key.trim()).then(|| key.trim().to_owned())
        })
        .collect()
}

fn check(file: &Path) {
    let text = std::fs::read_to_string(file).expect("readable");
    for doc in text.split("\n---\n") {
        let _: serde_norway::Value = serde_norway::from_str(doc)
            .unwrap_or_else(|e| panic!("{}: not valid YAML: {e}", file.display()));
    }
    let commands = commands(&text);
    let mut helps = String::new();
    for (binary, subcommands, flags) in &commands {
        let args: Vec<&str> = subcommands.iter().map(String::as_str).collect();
        let h = help(binary, &args);
        for flag in flags {
            assert!(
                h.contains(&format!("{flag} "))
                    || h.contains(&format!("{flag}="))
                    || h.contains(&format!("{flag}\n")),
                "{}: `{binary} {}` has no flag {flag}",
                file.display(),
                subcommands.join(" ")
            );
        }
        helps.push_str(&h);
    }
    for var in variables(&text) {
        if NOT_OURS.contains(&var.as_str()) {
            continue;
        }
        assert!(
            helps.contains(&format!("[env: {var}")),
            "{}: {var} is set, but no binary it runs ({:?}) reads it",
            file.display(),
            commands.iter().map(|c| &c.0).collect::<Vec<_>>()
        );
    }
}

#[test]
fn every_deployment_file_uses_only_flags_and_variables_the_binaries_have() {
    let mut files = vec![deploy_dir().join("compose.yaml")];
    let k8s = deploy_dir().join("kubernetes");
    let mut manifests: Vec<PathBuf> = std::fs::read_dir(&k8s)
        .expect("deploy/kubernetes")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    manifests.sort();
    assert!(manifests.len() >= 3, "{manifests:?}");
    files.extend(manifests);
    for file in &files {
        check(file);
    }
}

#[test]
fn the_checker_notices_a_variable_no_binary_reads() {
    let text = "command: [\"levelrail-provisioner\", \"serve\"]\n  LEVELRAIL_NO_SUCH_SETTING: 1\n";
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("bad.yaml");
    std::fs::write(&file, text).expect("write");
    let caught = std::panic::catch_unwind(|| check(&file));
    assert!(caught.is_err(), "an unknown variable passed");
}
