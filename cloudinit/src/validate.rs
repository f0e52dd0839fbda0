//! Test-only checks of rendered documents: the header, quoted `permissions` that both
//! YAML 1.1 and 1.2 read as strings, cloud-init's JSON schemas (upstream and Debian
//! 22.4.2, read from `tests/specs/` with [`Schema`]), and the real `cloud-init schema` and
//! PyYAML when installed.
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

pub(super) use super::jsonschema::{DEBIAN_SCHEMA, Schema, UPSTREAM_SCHEMA};

/// Whether the test script demands the real tools (`LEVELRAIL_REQUIRE_CLOUD_INIT=1`).
fn tools_required() -> bool {
    std::env::var_os("LEVELRAIL_REQUIRE_CLOUD_INIT").is_some_and(|v| v == "1")
}

/// Runs `program args` with `stdin`; `None` (with a note) when the program is missing
/// and the tools are not required.
fn run_tool(program: &str, args: &[&str], stdin: &str) -> Option<std::process::Output> {
    use std::io::Write as _;
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !tools_required() => {
            println!("note: {program} is not installed; skipping that check");
            return None;
        }
        Err(e) => {
            panic!("cannot run {program}, which LEVELRAIL_REQUIRE_CLOUD_INIT=1 requires: {e}")
        }
    };
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    Some(child.wait_with_output().expect("wait"))
}

/// The document as PyYAML (cloud-init's YAML 1.1 loader) reads it, when installed.
pub(super) fn pyyaml_load(text: &str) -> Option<Value> {
    pyyaml(text).map(|result| result.unwrap_or_else(|e| panic!("{e}")))
}

fn pyyaml(text: &str) -> Option<Result<Value, String>> {
    let script = "import json, sys, yaml; json.dump(yaml.safe_load(sys.stdin.read()), sys.stdout)";
    // Debian's interpreter is the one cloud-init runs with; any python3 otherwise.
    let python = if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    };
    let output = run_tool(python, &["-c", script], text)?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() && stderr.contains("No module named 'yaml'") && !tools_required() {
        println!("note: PyYAML is not installed; skipping that check");
        return None;
    }
    if !output.status.success() {
        return Some(Err(format!("PyYAML cannot load the document: {stderr}")));
    }
    Some(serde_json::from_slice(&output.stdout).map_err(|e| format!("JSON from python: {e}")))
}

/// `cloud-init schema --config-file <tmp>`: `None` when cloud-init is not installed.
fn cloud_init_schema(document: &str) -> Option<Result<(), String>> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("user-data.yaml");
    std::fs::write(&path, document).expect("write user-data");
    let path = path.to_str().expect("utf-8 path");
    let out = run_tool("cloud-init", &["schema", "--config-file", path], "")?;
    Some(if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "cloud-init schema rejected the document: {} {}",
            String::from_utf8_lossy(&out.stdout).trim(),
            String::from_utf8_lossy(&out.stderr).trim(),
        ))
    })
}

fn schema(file: &'static str) -> &'static Schema {
    static UPSTREAM: OnceLock<Schema> = OnceLock::new();
    static DEBIAN: OnceLock<Schema> = OnceLock::new();
    let cell = if file == UPSTREAM_SCHEMA {
        &UPSTREAM
    } else {
        &DEBIAN
    };
    cell.get_or_init(|| Schema::load(file))
}

/// Every problem of a document (empty when it passes): the `#cloud-config` header, YAML
/// with string `permissions`, PyYAML reading it as the YAML 1.2 parser does, both JSON
/// schemas, and `cloud-init schema`. The last two tools are skipped (with a note) when not
/// installed, unless `LEVELRAIL_REQUIRE_CLOUD_INIT=1`.
pub(super) fn document_problems(document: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if document.lines().next() != Some("#cloud-config") {
        problems.push("the first line is not #cloud-config".to_owned());
    }
    let parsed: Value = match serde_norway::from_str(document) {
        Ok(parsed) => parsed,
        Err(e) => {
            problems.push(format!("not YAML: {e}"));
            return problems;
        }
    };
    // A YAML 1.2 parser reads a plain `0600` as the string "0600", YAML 1.1 (cloud-init)
    // as the integer 384: so the text itself must quote every permissions value.
    for line in document.lines().map(str::trim_start) {
        if let Some(value) = line.strip_prefix("permissions:").map(str::trim_start)
            && !value.starts_with(['\'', '"'])
        {
            problems.push(format!("permissions must be a quoted string: {value}"));
        }
    }
    let mut views = vec![("YAML 1.2", parsed)];
    match pyyaml(document) {
        Some(Ok(pyyaml)) => {
            if pyyaml != views[0].1 {
                problems.push("PyYAML (YAML 1.1) reads the document differently".to_owned());
            }
            views.push(("PyYAML", pyyaml));
        }
        Some(Err(e)) => problems.push(e),
        None => {}
    }
    for (view, value) in &views {
        for file in value["write_files"].as_array().into_iter().flatten() {
            if !file["permissions"].is_string() {
                problems.push(format!("{view}: permissions is not a string"));
            }
        }
        for file in [UPSTREAM_SCHEMA, DEBIAN_SCHEMA] {
            let errors = schema(file).errors(value);
            problems.extend(errors.into_iter().map(|e| format!("{file} ({view}): {e}")));
        }
    }
    if let Some(Err(e)) = cloud_init_schema(document) {
        problems.push(e);
    }
    problems
}

/// Panics unless the document passes every check of [`document_problems`].
pub(super) fn check_document(document: &str) {
    let problems = document_problems(document);
    assert!(problems.is_empty(), "{problems:#?}\n{document}");
}
