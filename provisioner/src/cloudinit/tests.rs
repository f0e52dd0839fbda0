//! Tests of the rendered document: the golden text, every document passing the schema
//! checks, where the token may and may not appear, and the round trip through
//! [`extract_agent_bootstrap`]. Input validation tables are in `input_tests.rs`, the schema
//! validator's own tests in `schema_tests.rs`.
use secrecy::{ExposeSecret as _, SecretString};

use super::validate::check_document;
use super::*;

mod input_tests;
mod schema_tests;

/// SHA-256 of `testdata/ca.pem`'s DER.
pub(super) const FP: &str = "58cbcfdc6b47da3ac07b8bf30238138a6b3af4b5c251d13098cb3c8800acec70";
pub(super) const CA_PEM: &str = include_str!("testdata/ca.pem");
/// The secret part of the fixture token: no error or non-secret file may contain it.
pub(super) const SECRET: &str = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3I";
pub(super) const DIGEST: &str =
    "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const GOLDEN: &str = include_str!("testdata/golden.yaml");

pub(super) fn token() -> String {
    format!("LR1.{FP}.njt_0123456789abcdef.{SECRET}")
}

/// The golden test's inputs.
pub(super) fn params() -> CloudInitParams {
    CloudInitParams {
        control_plane_addr: "cp.example:9443".into(),
        join_token: SecretString::from(token()),
        node_name: "node-1".into(),
        ca_fingerprint: FP.into(),
        ca_pem: CA_PEM.into(),
        agent_image: AgentImage::default_for_version("0.4.0").unwrap(),
        progress_url: "https://cp.example:9443/v1/provision-progress".into(),
    }
}

/// The content of the file at `path` in a rendered document.
fn file_content(document: &str, path: &str) -> String {
    let value: serde_json::Value = serde_norway::from_str(document).unwrap();
    let files = value["write_files"].as_array().unwrap();
    let file = files
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("no {path}"));
    file["content"].as_str().unwrap().to_owned()
}

fn variants() -> Vec<CloudInitParams> {
    let pinned = |p: &mut CloudInitParams| {
        p.agent_image = AgentImage::Digest {
            repository: "registry.example:5000/team/levelrail-agent".into(),
            digest: DIGEST.into(),
        };
    };
    let ipv6 = |p: &mut CloudInitParams| {
        p.control_plane_addr = "[2001:db8::10]:9443".into();
        p.progress_url = "https://[2001:db8::10]:9443/v1/provision-progress".into();
        p.ca_fingerprint = FP.to_uppercase();
    };
    let ipv4 = |p: &mut CloudInitParams| {
        p.control_plane_addr = "192.0.2.7:443".into();
        p.progress_url = "https://192.0.2.7/v1/provision-progress".into();
        p.node_name = format!("n{}", "-9".repeat(31));
        p.ca_pem = CA_PEM.trim_end().into();
    };
    // Inputs that are plain YAML 1.1 non-strings (`yes`, `1:20`): quoting keeps them strings.
    let yaml11 = |p: &mut CloudInitParams| {
        p.node_name = "yes".into();
        p.agent_image = AgentImage::parse("1:20").unwrap();
    };
    let mut all = vec![params()];
    for change in [
        &pinned as &dyn Fn(&mut CloudInitParams),
        &ipv6,
        &ipv4,
        &yaml11,
    ] {
        let mut p = params();
        change(&mut p);
        all.push(p);
    }
    all
}

#[test]
fn the_document_matches_the_golden_text() {
    let document = render(&params()).unwrap();
    if document != GOLDEN {
        panic!(
            "the rendered document changed; if deliberate, update testdata/golden.yaml:\n{document}"
        );
    }
}

#[test]
fn every_rendered_document_passes_the_header_yaml_schema_and_cloud_init_checks() {
    for p in variants() {
        check_document(&render(&p).unwrap());
    }
}

#[test]
fn the_first_line_is_the_cloud_config_header() {
    let document = render(&params()).unwrap();
    assert!(document.starts_with("#cloud-config\n"));
}

#[test]
fn the_token_is_only_in_the_token_file_and_the_progress_header() {
    let document = render(&params()).unwrap();
    assert_eq!(document.matches(SECRET).count(), 2, "{document}");
    assert_eq!(
        file_content(&document, JOIN_TOKEN_PATH),
        format!("{}\n", token())
    );
    assert_eq!(
        file_content(&document, PROGRESS_HEADER_PATH),
        format!("Authorization: Bearer {}\n", token())
    );
    for path in [ENV_FILE_PATH, UNIT_PATH, REPORT_PROGRESS_PATH, CA_PEM_PATH] {
        assert!(
            !file_content(&document, path).contains(SECRET),
            "{path} holds the token"
        );
    }
    let runcmd = &document[document.find("\nruncmd:").unwrap()..];
    assert!(!runcmd.contains(SECRET));
}

#[test]
fn the_env_file_names_the_token_file_and_holds_no_secret() {
    let env = file_content(&render(&params()).unwrap(), ENV_FILE_PATH);
    let expected = format!(
        "APP_CONTROL_PLANE_ADDR=cp.example:9443\nAPP_NODE_NAME=node-1\nAPP_CA_FINGERPRINT={FP}\n\
         APP_JOIN_TOKEN_FILE=/etc/levelrail/join-token\n\
         APP_AGENT_IDENTITY_FILE=/var/lib/levelrail-agent-data/identity.json\n"
    );
    assert_eq!(env, expected);
    assert!(!env.contains("APP_JOIN_TOKEN="));
}

#[test]
fn the_unit_mounts_the_token_file_read_only_and_passes_no_secret() {
    let unit = file_content(&render(&params()).unwrap(), UNIT_PATH);
    let exec = unit.lines().find(|l| l.starts_with("ExecStart=")).unwrap();
    assert!(
        exec.contains("-v /etc/levelrail/join-token:/etc/levelrail/join-token:ro"),
        "{exec}"
    );
    assert!(
        exec.contains("--env-file /etc/levelrail/agent.env"),
        "{exec}"
    );
    assert!(
        !exec.contains(" -e "),
        "no variable is passed on the command line: {exec}"
    );
    assert!(
        exec.contains(" --user 0:0 "),
        "the root-only token file stays readable: {exec}"
    );
    assert!(unit.contains("Restart=on-failure\nRestartSec=5\n"));
    assert!(unit.contains("ExecStartPre=-/usr/bin/docker rm -f levelrail-agent\n"));
}

#[test]
fn a_digest_pin_is_rendered_as_repository_at_digest_everywhere_the_image_is_named() {
    let mut p = params();
    p.agent_image =
        AgentImage::parse(&format!("ghcr.io/glincker/levelrail-agent@{DIGEST}")).unwrap();
    let document = render(&p).unwrap();
    let reference = format!("ghcr.io/glincker/levelrail-agent@{DIGEST}");
    let unit = file_content(&document, UNIT_PATH);
    assert!(unit.contains(&format!("ExecStartPre=/usr/bin/docker pull {reference}\n")));
    assert!(
        unit.lines()
            .any(|l| l.starts_with("ExecStart=") && l.ends_with(&reference))
    );
    assert!(
        document.contains(&format!("'levelrail-pull', '{reference}']")),
        "{document}"
    );
    assert!(!document.contains(":0.4.0"));
}

#[test]
fn the_progress_script_reads_the_header_from_a_file_and_never_fails_the_boot() {
    let script = file_content(&render(&params()).unwrap(), REPORT_PROGRESS_PATH);
    assert!(script.starts_with("#!/bin/sh\n"));
    assert!(script.contains("url='https://cp.example:9443/v1/provision-progress'\n"));
    for part in [
        "curl -fsS --retry 5 --retry-all-errors",
        "--cacert /etc/levelrail/ca.pem",
        "-H @/etc/levelrail/progress.header",
        "-H 'Content-Type: application/json'",
        r#"--data "{\"step\":\"$step\"}""#,
        "|| true",
    ] {
        assert!(script.contains(part), "missing {part}:\n{script}");
    }
    assert!(script.trim_end().ends_with("exit 0"));
}

#[test]
fn the_script_runs_under_sh_and_reports_nothing_for_a_bad_step() {
    let script = file_content(&render(&params()).unwrap(), REPORT_PROGRESS_PATH);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report-progress");
    std::fs::write(&path, script).unwrap();
    // Syntax only (-n), and a bad step exits 0 before curl runs.
    let syntax = std::process::Command::new("sh")
        .arg("-n")
        .arg(&path)
        .status()
        .unwrap();
    assert!(syntax.success());
    let out = std::process::Command::new("sh")
        .arg(&path)
        .arg("bad;step")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid step name"));
}

#[test]
fn runcmd_installs_docker_only_when_missing_and_reports_each_step_in_order() {
    let document = render(&params()).unwrap();
    let runcmd = &document[document.find("\nruncmd:").unwrap()..];
    let order = [
        "'command -v docker >/dev/null 2>&1 || (curl -fsSL https://get.docker.com | sh)'",
        "systemctl enable --now docker && /usr/local/lib/levelrail/report-progress docker_ready",
        "['chmod', '0700', '/var/lib/levelrail-agent-data']",
        "report-progress image_pulled', 'levelrail-pull', 'ghcr.io/glincker/levelrail-agent:0.4.0']",
        "['systemctl', 'daemon-reload']",
        "systemctl enable --now levelrail-agent && /usr/local/lib/levelrail/report-progress agent_started",
    ];
    let positions: Vec<usize> = order
        .iter()
        .map(|s| runcmd.find(s).unwrap_or_else(|| panic!("missing {s}")))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{runcmd}");
}

#[test]
fn extract_agent_bootstrap_gives_back_what_was_rendered() {
    for p in variants() {
        let bootstrap = extract_agent_bootstrap(&render(&p).unwrap()).unwrap();
        let fingerprint = p.ca_fingerprint.to_lowercase();
        let expected: Vec<(String, String)> = [
            ("APP_CONTROL_PLANE_ADDR", p.control_plane_addr.as_str()),
            ("APP_NODE_NAME", p.node_name.as_str()),
            ("APP_CA_FINGERPRINT", fingerprint.as_str()),
            ("APP_JOIN_TOKEN_FILE", JOIN_TOKEN_PATH),
            ("APP_AGENT_IDENTITY_FILE", IDENTITY_FILE_PATH),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(bootstrap.env, expected);
        assert_eq!(
            bootstrap.env_var("APP_NODE_NAME"),
            Some(p.node_name.as_str())
        );
        assert_eq!(
            bootstrap.join_token.expose_secret(),
            p.join_token.expose_secret()
        );
        assert_eq!(bootstrap.ca_pem.trim_end(), p.ca_pem.trim_end());
        assert_eq!(bootstrap.progress_url, p.progress_url);
        assert_eq!(bootstrap.image, p.agent_image);
        assert!(!format!("{bootstrap:?}").contains(SECRET));
    }
}

#[test]
fn extract_agent_bootstrap_rejects_foreign_or_tampered_documents_without_quoting_the_token() {
    let document = render(&params()).unwrap();
    let other_secret = "b3RoZXItb3RoZXItb3RoZXItb3RoZXItb3RoZXItb3R";
    let cases: Vec<(String, &str)> = vec![
        (
            document.replacen("#cloud-config", "#cloud-init", 1),
            "#cloud-config",
        ),
        ("#cloud-config\nruncmd: [x]\n".into(), "write_files"),
        ("#cloud-config\nwrite_files: {{\n".into(), "line"),
        (
            document.replace("path: '/etc/levelrail/ca.pem'", "path: '/tmp/ca.pem'"),
            "ca.pem",
        ),
        (document.replacen(SECRET, other_secret, 1), "bearer header"),
        (
            document.replace("APP_NODE_NAME=node-1", "APP_NODE_NAME=Node_1"),
            "node_name",
        ),
        (
            document.replace("url='https://", "url='http://"),
            "progress_url",
        ),
        (
            document.replace("docker pull ghcr", "docker pull GHCR"),
            "agent_image",
        ),
    ];
    for (text, expected) in cases {
        let err = extract_agent_bootstrap(&text).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains(expected),
            "{message:?} should mention {expected}"
        );
        assert!(!message.contains(SECRET) && !format!("{err:?}").contains(SECRET));
    }
}

#[test]
fn every_install_step_is_reported_once_in_the_order_the_domain_expects() {
    let document = render(&params()).unwrap();
    let runcmd = &document[document.find("\nruncmd:").unwrap()..];
    let positions: Vec<usize> = crate::domain::InstallStep::ALL
        .iter()
        .map(|step| {
            let call = format!("report-progress {}'", step.as_str());
            assert_eq!(runcmd.matches(&call).count(), 1, "{call}:\n{runcmd}");
            runcmd.find(&call).unwrap()
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{runcmd}");
}
