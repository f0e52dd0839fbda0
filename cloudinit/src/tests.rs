//! Tests of the rendered document: the golden text, every document passing the schema
//! checks, where the secrets may and may not appear, the unit's hardening and the scripts.
//! Input validation tables are in `tests/input.rs`, the schema validator's own tests in
//! `tests/schema.rs`. The scripts run for real in the boot harness tests (`tests/`).
use super::validate::check_document;
use super::*;
use levelrail_types::CpuArch;

mod input;
mod schema;

/// SHA-256 of `testdata/ca.pem`'s DER.
pub(super) const FP: &str = "58cbcfdc6b47da3ac07b8bf30238138a6b3af4b5c251d13098cb3c8800acec70";
pub(super) const CA_PEM: &str = include_str!("testdata/ca.pem");
/// The secret part of the fixture token: no error or non-secret file may contain it.
pub(super) const SECRET: &str = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3I";
/// The secret part of the fixture progress credential.
pub(super) const PROGRESS_SECRET: &str = "cHJvZ3Jlc3MtcHJvZ3Jlc3MtcHJvZ3Jlc3MtcHJvZ3I";
pub(super) const DIGEST: &str =
    "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
/// The fixture agent binary's SHA-256.
pub(super) const AGENT_SHA: &str =
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
const GOLDEN: &str = include_str!("testdata/golden.yaml");

pub(super) fn token() -> String {
    format!("LR1.{FP}.njt_0123456789abcdef.{SECRET}")
}

pub(super) fn progress_credential() -> String {
    format!("LRP1.npv_0123456789abcdef0123456789abcdef.{PROGRESS_SECRET}")
}

pub(super) fn binary() -> AgentSource {
    AgentSource::Binary(AgentDownload {
        base_url: "https://cp.example:9443/v1/agent/0.4.0".into(),
        sha256: vec![(CpuArch::X86_64, AGENT_SHA.into())],
    })
}

pub(super) fn image() -> AgentSource {
    AgentSource::Image(AgentImage {
        repository: "registry.example:5000/team/levelrail-agent".into(),
        digest: DIGEST.into(),
    })
}

/// The golden test's inputs.
pub(super) fn params() -> CloudInitParams {
    CloudInitParams {
        control_plane_addr: "cp.example:9443".into(),
        join_token: SecretString::from(token()),
        progress_credential: SecretString::from(progress_credential()),
        node_name: "node-1".into(),
        ca_fingerprint: FP.into(),
        ca_pem: CA_PEM.into(),
        agent: binary(),
        progress_url: "https://cp.example:9443/v1/provision-progress".into(),
    }
}

use secrecy::SecretString;

/// The content of the file at `path` in a rendered document.
fn file_content(document: &str, path: &str) -> String {
    written_file(document, path).unwrap_or_else(|| panic!("no {path}"))
}

fn variants() -> Vec<CloudInitParams> {
    let pinned = |p: &mut CloudInitParams| p.agent = image();
    let two_arches = |p: &mut CloudInitParams| {
        p.agent = AgentSource::Binary(AgentDownload {
            base_url: "https://192.0.2.7/v1/agent/0.4.0".into(),
            sha256: vec![
                (CpuArch::X86_64, AGENT_SHA.into()),
                (CpuArch::Aarch64, "ab".repeat(32)),
            ],
        });
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
    // Inputs that are plain YAML 1.1 non-strings (`yes`): quoting keeps them strings.
    let yaml11 = |p: &mut CloudInitParams| p.node_name = "yes".into();
    let mut all = vec![params()];
    for change in [
        &pinned as &dyn Fn(&mut CloudInitParams),
        &two_arches,
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
fn each_secret_is_only_in_its_own_root_only_file() {
    let document = render(&params()).unwrap();
    assert_eq!(document.matches(SECRET).count(), 1, "{document}");
    assert_eq!(document.matches(PROGRESS_SECRET).count(), 1, "{document}");
    assert_eq!(
        file_content(&document, JOIN_TOKEN_PATH),
        format!("{}\n", token())
    );
    assert_eq!(
        file_content(&document, PROGRESS_HEADER_PATH),
        format!("Authorization: Bearer {}\n", progress_credential())
    );
    for path in [
        ENV_FILE_PATH,
        UNIT_PATH,
        REPORT_PROGRESS_PATH,
        INSTALL_AGENT_PATH,
        INSTALL_DOCKER_PATH,
        CA_PEM_PATH,
    ] {
        let content = file_content(&document, path);
        assert!(
            !content.contains(SECRET) && !content.contains(PROGRESS_SECRET),
            "{path} holds a secret"
        );
    }
    let runcmd = &document[document.find("\nruncmd:").unwrap()..];
    assert!(!runcmd.contains(SECRET) && !runcmd.contains(PROGRESS_SECRET));
    for secret_file in [JOIN_TOKEN_PATH, PROGRESS_HEADER_PATH, ENV_FILE_PATH] {
        let entry = &document[document.find(&format!("path: '{secret_file}'")).unwrap()..];
        assert!(entry.contains("permissions: '0600'"), "{secret_file}");
    }
}

#[test]
fn the_env_file_names_the_secret_files_and_holds_no_secret() {
    let env = file_content(&render(&params()).unwrap(), ENV_FILE_PATH);
    let expected = format!(
        "APP_CONTROL_PLANE_ADDR=cp.example:9443\nAPP_NODE_NAME=node-1\nAPP_CA_FINGERPRINT={FP}\n\
         APP_JOIN_TOKEN_FILE=/var/lib/levelrail-agent/join-token\n\
         APP_AGENT_IDENTITY_FILE=/var/lib/levelrail-agent/identity.json\n\
         APP_PROGRESS_CREDENTIAL_FILE=/var/lib/levelrail-agent/progress.header\n\
         DOCKER_HOST=unix:///var/run/docker.sock\n"
    );
    assert_eq!(env, expected);
    assert!(!env.contains("APP_JOIN_TOKEN="));
}

#[test]
fn the_binary_unit_runs_the_verified_binary_hardened_with_only_its_state_writable() {
    let unit = file_content(&render(&params()).unwrap(), UNIT_PATH);
    assert!(
        unit.contains(
            "ExecStart=/usr/local/bin/levelrail-agent --env-file /etc/levelrail/agent.env\n"
        ),
        "{unit}"
    );
    for directive in [
        "Restart=on-failure",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "ReadWritePaths=/var/lib/levelrail-agent",
        "StateDirectory=levelrail-agent",
        "StateDirectoryMode=0700",
        "ProtectHome=yes",
        "PrivateTmp=yes",
        "PrivateDevices=yes",
        "CapabilityBoundingSet=\n",
        "SystemCallFilter=@system-service",
        "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK",
        "UMask=0077",
    ] {
        assert!(unit.contains(directive), "missing {directive}:\n{unit}");
    }
    assert!(!unit.contains("docker run"), "{unit}");
    assert_eq!(unit.matches("ReadWritePaths=").count(), 1);
}

#[test]
fn an_image_is_run_by_its_digest_and_pulled_by_install_agent() {
    let mut p = params();
    p.agent = image();
    let document = render(&p).unwrap();
    let reference = format!("registry.example:5000/team/levelrail-agent@{DIGEST}");
    let unit = file_content(&document, UNIT_PATH);
    let exec = unit.lines().find(|l| l.starts_with("ExecStart=")).unwrap();
    assert!(exec.ends_with(&reference), "{exec}");
    assert!(
        exec.contains("-v /var/lib/levelrail-agent:/var/lib/levelrail-agent"),
        "{exec}"
    );
    assert!(
        !exec.contains(" -e "),
        "no variable on the command line: {exec}"
    );
    assert!(unit.contains("Requires=docker.service"));
    let install = file_content(&document, INSTALL_AGENT_PATH);
    assert!(
        install.contains(&format!("docker pull '{reference}'")),
        "{install}"
    );
    assert!(!document.contains("ghcr.io"), "no default image is named");
}

#[test]
fn install_agent_pins_each_binary_by_sha256_and_trusts_only_the_control_plane_ca() {
    let script = file_content(&render(&params()).unwrap(), INSTALL_AGENT_PATH);
    for part in [
        "#!/bin/sh\n",
        "base='https://cp.example:9443/v1/agent/0.4.0'",
        &format!("  x86_64|amd64) arch=x86_64; sum={AGENT_SHA} ;;"),
        "--cacert /etc/levelrail/ca.pem -o \"$tmp\" \"$base/$arch/levelrail-agent\"",
        "sha256sum -c --status",
        "failed its SHA-256 check: expected $sum, got $got",
        "chmod 0755 \"$tmp\"",
        "mv -f \"$tmp\" /usr/local/bin/levelrail-agent",
        "no levelrail-agent binary for CPU architecture $machine",
    ] {
        assert!(script.contains(part), "missing {part}:\n{script}");
    }
    assert!(
        !script.contains("aarch64|arm64"),
        "no arm64 binary is offered"
    );
    assert!(sh_syntax_ok(&script));
}

fn sh_syntax_ok(script: &str) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script");
    std::fs::write(&path, script).unwrap();
    std::process::Command::new("sh")
        .arg("-n")
        .arg(&path)
        .status()
        .unwrap()
        .success()
}

#[test]
fn the_progress_script_reads_the_header_from_a_file_and_never_fails_the_boot() {
    let script = file_content(&render(&params()).unwrap(), REPORT_PROGRESS_PATH);
    assert!(script.starts_with("#!/bin/sh\n"));
    assert!(script.contains("url='https://cp.example:9443/v1/provision-progress'\n"));
    for part in [
        "curl -fsS --retry 5 --retry-connrefused",
        "--cacert /etc/levelrail/ca.pem",
        "header=/var/lib/levelrail-agent/progress.header",
        "-H @\"$header\"",
        "-H 'Content-Type: application/json'",
        r#"body="{\"step\":\"$step\",\"error\":\"$error\"}""#,
        "|| true",
    ] {
        assert!(script.contains(part), "missing {part}:\n{script}");
    }
    assert!(script.trim_end().ends_with("exit 0"));
    // A refusal is final: retrying a 401 would hold the boot for a minute after enrolling.
    assert!(!script.contains("--retry-all-errors"), "{script}");
    assert!(sh_syntax_ok(&script));
    assert!(sh_syntax_ok(&file_content(
        &render(&params()).unwrap(),
        INSTALL_DOCKER_PATH
    )));
}

#[test]
fn the_script_reports_nothing_for_a_bad_step() {
    let script = file_content(&render(&params()).unwrap(), REPORT_PROGRESS_PATH);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report-progress");
    std::fs::write(&path, script).unwrap();
    let out = std::process::Command::new("sh")
        .arg(&path)
        .arg("bad;step")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid step name"));
}

#[test]
fn runcmd_installs_docker_only_when_missing_then_verifies_and_starts_the_agent() {
    let document = render(&params()).unwrap();
    let runcmd = &document[document.find("\nruncmd:").unwrap()..];
    let order = [
        "'command -v docker >/dev/null 2>&1 || /usr/local/lib/levelrail/install-docker'",
        "systemctl enable --now docker && /usr/local/lib/levelrail/report-progress docker_ready",
        "['chmod', '0700', '/var/lib/levelrail-agent']",
        "'/usr/local/lib/levelrail/install-agent && { systemctl daemon-reload && systemctl enable --now levelrail-agent",
        "report-progress agent_started ||",
    ];
    let positions: Vec<usize> = order
        .iter()
        .map(|s| {
            runcmd
                .find(s)
                .unwrap_or_else(|| panic!("missing {s}:\n{runcmd}"))
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{runcmd}");
}

#[test]
fn every_install_step_is_reported_in_the_order_the_domain_expects() {
    let document = render(&params()).unwrap();
    let runcmd = &document[document.find("\nruncmd:").unwrap()..];
    let install = file_content(&document, INSTALL_AGENT_PATH);
    let docker = runcmd.find("report-progress docker_ready").unwrap();
    let chain = runcmd.find("install-agent &&").unwrap();
    let started = runcmd.find("report-progress agent_started").unwrap();
    assert!(docker < chain && chain < started, "{runcmd}");
    assert!(
        install.trim_end().ends_with("\"$report\" agent_verified"),
        "{install}"
    );
    for step in levelrail_provisioner_model::InstallStep::ALL {
        assert!(
            document.contains(step.as_str()),
            "{step:?} is never reported"
        );
    }
}

#[test]
fn written_file_reads_back_what_was_rendered() {
    let document = render(&params()).unwrap();
    assert_eq!(
        written_file(&document, CA_PEM_PATH).unwrap().trim_end(),
        CA_PEM.trim_end()
    );
    assert_eq!(written_file(&document, "/etc/nope"), None);
    assert_eq!(written_file("not: [yaml", CA_PEM_PATH), None);
}
