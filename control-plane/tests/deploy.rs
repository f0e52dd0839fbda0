//! The deployment files in `deploy/` use only flags and environment variables the binaries
//! have: in every Compose service and every Kubernetes document, each `levelrail*`
//! invocation's flags appear in that binary's `--help`, and each `LEVELRAIL_*`,
//! `DATABASE_URL` and `APP_NODE_*` variable set there is one that very binary reads. Every
//! file is valid YAML.
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const BINARIES: &[&str] = &[
    "levelrail",
    "levelrail-credentials",
    "levelrail-provisioner",
];

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// The `--help` of `binary` with `args` (e.g. `serve`).
fn help(binary: &str, args: &[String]) -> String {
    let exe = match binary {
        "levelrail" => env!("CARGO_BIN_EXE_levelrail"),
        "levelrail-credentials" => env!("CARGO_BIN_EXE_levelrail-credentials"),
        "levelrail-provisioner" => env!("CARGO_BIN_EXE_levelrail-provisioner"),
        other => panic!("`{other}` is not a binary of this workspace"),
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

/// One invocation: the binary, its subcommands, its flags.
#[derive(Debug)]
struct Invocation {
    binary: String,
    subcommands: Vec<String>,
    flags: Vec<String>,
}

/// Every line's first `levelrail*` word, with what follows it on that line (a `command:`
/// array or a shell line), up to a shell separator.
fn invocations(text: &str) -> Vec<Invocation> {
    text.lines()
        .filter_map(|line| {
            let words: Vec<&str> = line
                .split(|c: char| c.is_whitespace() || "[],\"'".contains(c))
                .filter(|w| !w.is_empty())
                .collect();
            let start = words.iter().position(|w| BINARIES.contains(w))?;
            let rest: Vec<&str> = words[start + 1..]
                .iter()
                .copied()
                .take_while(|w| !["&&", ";", "|", "||"].contains(w))
                .collect();
            Some(Invocation {
                binary: words[start].to_owned(),
                subcommands: rest
                    .iter()
                    .take_while(|w| {
                        !w.starts_with('-') && w.chars().all(|c| c.is_ascii_lowercase() || c == '-')
                    })
                    .map(|w| (*w).to_owned())
                    .collect(),
                flags: rest
                    .iter()
                    .filter(|w| w.starts_with("--"))
                    .map(|w| w.split('=').next().unwrap_or(w).to_owned())
                    .collect(),
            })
        })
        .collect()
}

/// The Levelrail variables a block sets: `- { name: X, … }` (Kubernetes) and `X: …`
/// (Compose) keys.
fn variables(text: &str) -> BTreeSet<String> {
    let ours = |s: &str| {
        (s.starts_with("LEVELRAIL_") || s.starts_with("APP_NODE_") || s == "DATABASE_URL")
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
            ours(key.trim()).then(|| key.trim().to_owned())
        })
        .collect()
}

/// Checks one deployment unit (a Compose service, a Kubernetes document).
fn check_unit(what: &str, text: &str) {
    let runs = invocations(text);
    let mut helps = String::new();
    for run in &runs {
        let h = help(&run.binary, &run.subcommands);
        for flag in &run.flags {
            assert!(
                h.contains(&format!("{flag} ")) || h.contains(&format!("{flag}\n")),
                "{what}: `{} {}` has no flag {flag}",
                run.binary,
                run.subcommands.join(" ")
            );
        }
        helps.push_str(&h);
    }
    for var in variables(text) {
        assert!(
            helps.contains(&format!("[env: {var}")),
            "{what}: {var} is set, but {:?} does not read it",
            runs.iter().map(|r| &r.binary).collect::<Vec<_>>()
        );
    }
}

/// Compose services, each with the `x-…` anchors it merges (`<<: *name`).
fn compose_services(text: &str) -> BTreeMap<String, String> {
    let mut top: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if !line.starts_with(' ') && !line.starts_with('#') && line.contains(':') {
            top.push((line.to_owned(), String::new()));
        } else if let Some((_, body)) = top.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    let anchors: BTreeMap<String, String> = top
        .iter()
        .filter_map(|(head, body)| {
            let anchor = head.split('&').nth(1)?.trim().to_owned();
            Some((anchor, body.clone()))
        })
        .collect();
    let services = &top
        .iter()
        .find(|(head, _)| head.trim() == "services:")
        .expect("a services: section")
        .1;
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in services.lines() {
        let indent = line.len() - line.trim_start().len();
        if indent == 2 && line.trim_end().ends_with(':') {
            let name = line.trim().trim_end_matches(':').to_owned();
            out.insert(name.clone(), String::new());
            current = Some(name);
        } else if let Some(name) = &current {
            let body = out.get_mut(name).expect("inserted");
            body.push_str(line);
            body.push('\n');
        }
    }
    for body in out.values_mut() {
        let merged: Vec<String> = body
            .lines()
            .filter_map(|l| l.trim().strip_prefix("<<: *"))
            .filter_map(|a| anchors.get(a.trim()).cloned())
            .collect();
        for m in merged {
            body.push_str(&m);
        }
    }
    out
}

fn parse_yaml(file: &Path, text: &str) {
    for doc in text.split("\n---\n") {
        let _: serde_norway::Value = serde_norway::from_str(doc)
            .unwrap_or_else(|e| panic!("{}: not valid YAML: {e}", file.display()));
    }
}

#[test]
fn every_deployment_file_uses_only_flags_and_variables_its_binaries_have() {
    let compose = deploy_dir().join("compose.yaml");
    let text = std::fs::read_to_string(&compose).expect("compose.yaml");
    parse_yaml(&compose, &text);
    let services = compose_services(&text);
    for service in ["pki", "credentials", "provisioner-a", "provisioner-b"] {
        let body = services
            .get(service)
            .unwrap_or_else(|| panic!("compose.yaml has no service {service}"));
        assert!(
            !invocations(body).is_empty(),
            "compose service {service} runs no levelrail binary"
        );
    }
    for (name, body) in &services {
        check_unit(&format!("compose service {name}"), body);
    }

    let mut manifests: Vec<PathBuf> = std::fs::read_dir(deploy_dir().join("kubernetes"))
        .expect("deploy/kubernetes")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    manifests.sort();
    assert!(manifests.len() >= 3, "{manifests:?}");
    for file in &manifests {
        let text = std::fs::read_to_string(file).expect("readable");
        parse_yaml(file, &text);
        for (i, doc) in text.split("\n---\n").enumerate() {
            check_unit(&format!("{} document {i}", file.display()), doc);
        }
    }
}

#[test]
fn the_checker_notices_a_variable_of_another_binary_and_an_unknown_flag() {
    let foreign =
        "command: [\"levelrail-provisioner\", \"serve\"]\n  LEVELRAIL_MASTER_KEY_FILE: x\n";
    assert!(std::panic::catch_unwind(|| check_unit("foreign", foreign)).is_err());
    let unknown = "command: [\"levelrail-credentials\", \"serve\", \"--no-such-flag\"]\n";
    assert!(std::panic::catch_unwind(|| check_unit("unknown", unknown)).is_err());
    let fine = "command: [\"levelrail-credentials\", \"serve\", \"--broker-listen\", \"0.0.0.0:1\"]\n  LEVELRAIL_MASTER_KEY_FILE: x\n";
    check_unit("fine", fine);
}
