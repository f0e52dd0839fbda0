//! The checks themselves are tested: the JSON-schema validator catches what cloud-init
//! would, and the document checks fail on the original's known mistakes.
use serde_json::{Value, json};

use super::{SECRET, params};
use crate::render;
use crate::validate::{DEBIAN_SCHEMA, Schema, UPSTREAM_SCHEMA, document_problems, pyyaml_load};

fn errors(file: &str, instance: Value) -> Vec<String> {
    Schema::load(file).errors(&instance)
}

#[test]
fn both_cloud_init_schemas_reject_what_cloud_init_rejects() {
    let bad = [
        json!({"write_files": [{"path": "/x", "permissions": 384}]}),
        json!({"write_files": [{"content": "no path"}]}),
        json!({"write_files": [{"path": "/x", "encoding": "zip"}]}),
        json!({"write_files": [{"path": "/x", "mode": "0600"}]}),
        json!({"write_files": []}),
        json!({"runcmd": []}),
        json!({"runcmd": [1]}),
        json!({"runcmd": [["ok", 2]]}),
        json!({"packages": "not-a-list"}),
    ];
    for file in [UPSTREAM_SCHEMA, DEBIAN_SCHEMA] {
        for instance in &bad {
            assert!(
                !errors(file, instance.clone()).is_empty(),
                "{file} accepted {instance}"
            );
        }
        let good = json!({
            "write_files": [{"path": "/x", "owner": "root:root", "permissions": "0600", "content": "a"}],
            "runcmd": ["echo hi", ["echo", "hi"], null],
        });
        assert_eq!(errors(file, good), Vec::<String>::new(), "{file}");
    }
    // Only the newer schema closes the top level to unknown keys.
    assert!(!errors(UPSTREAM_SCHEMA, json!({"no_such_module": 1})).is_empty());
}

#[test]
fn the_validator_implements_the_keywords_the_schemas_use() {
    let schema = Schema::from_value(json!({
        "definitions": {"port": {"type": "integer", "minimum": 1, "maximum": 65535}},
        "$defs": {"name": {"type": "string", "pattern": "^[a-z]+$", "minLength": 2}},
        "type": "object",
        "required": ["name"],
        "minProperties": 1,
        "properties": {
            "name": {"$ref": "#/$defs/name"},
            "port": {"$ref": "#/definitions/port"},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true, "maxItems": 2},
            "pair": {"type": "array", "items": [{"type": "string"}], "additionalItems": {"type": "null"}},
            "kind": {"enum": ["a", "b"]},
            "either": {"anyOf": [{"type": "string"}, {"type": "boolean"}]},
            "exactly": {"oneOf": [{"type": "integer"}, {"type": "number"}]},
            "never": {"not": {"type": "string"}},
        },
        "patternProperties": {"^x_": {"type": "boolean"}},
        "additionalProperties": false,
    }));
    let ok = json!({"name": "ab", "port": 443, "tags": ["a", "b"], "pair": ["a", null],
        "kind": "a", "either": true, "exactly": 1.5, "never": 1, "x_flag": true});
    assert_eq!(schema.errors(&ok), Vec::<String>::new());
    let bad = [
        json!({}),
        json!({"name": "Ab"}),
        json!({"name": "a"}),
        json!({"name": "ab", "port": 0}),
        json!({"name": "ab", "port": 1.5}),
        json!({"name": "ab", "tags": ["a", "a"]}),
        json!({"name": "ab", "tags": ["a", "b", "c"]}),
        json!({"name": "ab", "pair": ["a", "b"]}),
        json!({"name": "ab", "kind": "c"}),
        json!({"name": "ab", "either": 1}),
        json!({"name": "ab", "exactly": 1}),
        json!({"name": "ab", "never": "s"}),
        json!({"name": "ab", "x_flag": "yes"}),
        json!({"name": "ab", "other": 1}),
    ];
    for instance in bad {
        assert!(!schema.errors(&instance).is_empty(), "accepted {instance}");
    }
}

#[test]
fn the_original_cloud_init_header_fails_the_document_checks() {
    let document = render(&params())
        .unwrap()
        .replacen("#cloud-config", "#cloud-init", 1);
    let problems = document_problems(&document);
    assert!(
        problems.iter().any(|p| p.contains("#cloud-config")),
        "{problems:#?}"
    );
}

#[test]
fn an_unquoted_permissions_value_fails_every_check_that_reads_types() {
    let document =
        render(&params())
            .unwrap()
            .replacen("permissions: '0600'", "permissions: 0600", 1);
    let problems = document_problems(&document);
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("permissions must be a quoted string"))
    );
    if cloud_init_installed() {
        // What cloud-init's YAML 1.1 loader sees: the integer 384.
        assert!(
            problems
                .iter()
                .any(|p| p == "PyYAML: permissions is not a string")
        );
        for file in [UPSTREAM_SCHEMA, DEBIAN_SCHEMA] {
            let prefix = format!("{file} (PyYAML)");
            assert!(
                problems.iter().any(|p| p.starts_with(&prefix)),
                "{file}: {problems:#?}"
            );
        }
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("cloud-init schema rejected"))
        );
    }
}

fn cloud_init_installed() -> bool {
    std::process::Command::new("cloud-init")
        .arg("--version")
        .output()
        .is_ok()
}

#[test]
fn pyyaml_reads_the_document_as_the_yaml_1_2_parser_does() {
    let document = render(&params()).unwrap();
    let Some(pyyaml) = pyyaml_load(&document) else {
        return;
    };
    let ours: Value = serde_norway::from_str(&document).unwrap();
    assert_eq!(pyyaml, ours);
    assert!(
        pyyaml.to_string().contains(SECRET),
        "the token file is there, as written"
    );
}
