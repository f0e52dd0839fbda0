//! `nodes provision`: the request sent (every flag, defaults, a fresh UUID v4 request id),
//! the output (text, JSON, `--watch`), local validation naming the flag, the retry with the
//! same request id, and server errors.
use levelrail_proto::provisioner::v1::Role;
use tonic::Status;

use crate::fake_provisioner::{HAPPY_LINES, happy_path};
use crate::helpers::{FakeSecrets, TestServer};

const KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDtWcpG0mVvDhuTqo0M9nXGlqWw0zvKjJr1ZP6xgYpZT me@laptop";
const REQUIRED: [&str; 9] = [
    "nodes",
    "provision",
    "--provider",
    "hetzner",
    "--region",
    "fsn1",
    "--size",
    "cx22",
    "--name",
];

/// `nodes provision` with the four required flags (name `web-1`) plus `extra`.
fn args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = REQUIRED.to_vec();
    args.push("web-1");
    args.extend_from_slice(extra);
    args
}

fn is_uuid_v4(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    let lengths: Vec<usize> = groups.iter().map(|g| g.len()).collect();
    lengths == [8, 4, 4, 4, 12]
        && text.chars().all(|c| c == '-' || c.is_ascii_hexdigit())
        && groups[2].starts_with('4')
}

#[tokio::test]
async fn provision_sends_the_flags_and_prints_the_id_and_how_to_follow_it() {
    // Arrange
    let server = TestServer::start().await;

    // Act
    let out = server.run(&args(&[]), FakeSecrets::none()).await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        "provision npv_1 created, status: creating\n\
         follow with: levelrail-cli nodes provisions watch npv_1\n"
    );
    assert_eq!(out.stderr, "");
    let request = server.provisioner().provision_requests[0].clone();
    assert_eq!(request.provider, 1);
    assert_eq!(
        (request.region.as_str(), request.size.as_str()),
        ("fsn1", "cx22")
    );
    assert_eq!(request.name, "web-1");
    assert_eq!(request.role, Role::General as i32);
    assert_eq!(request.control_plane_addr, "", "the server's agent address");
    assert!(request.ssh_public_keys.is_empty());
    assert_eq!(request.ssh_source_cidr, "");
    assert_eq!(request.image, "");
    assert!(!request.keep_on_failure);
    assert!(is_uuid_v4(&request.request_id), "{}", request.request_id);
}

#[tokio::test]
async fn provision_sends_every_optional_flag() {
    // Arrange
    let server = TestServer::start().await;
    let keys = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(keys.path(), format!("# team\n{KEY} 2\n\n{KEY} 3\n")).expect("write");
    let at_file = format!("@{}", keys.path().display());

    // Act
    let out = server
        .run(
            &args(&[
                "--role",
                "build",
                "--control-plane-addr",
                "cp.example.com:9443",
                "--ssh-public-key",
                KEY,
                "--ssh-key",
                &at_file,
                "--ssh-source-cidr",
                "203.0.113.7/32",
                "--image",
                "ubuntu-24.04",
                "--keep-on-failure",
            ]),
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    let request = server.provisioner().provision_requests[0].clone();
    assert_eq!(request.role, Role::Build as i32);
    assert_eq!(request.control_plane_addr, "cp.example.com:9443");
    assert_eq!(
        request.ssh_public_keys,
        [KEY.to_owned(), format!("{KEY} 2"), format!("{KEY} 3")]
    );
    assert_eq!(request.ssh_source_cidr, "203.0.113.7/32");
    assert_eq!(request.image, "ubuntu-24.04");
    assert!(request.keep_on_failure);
}

#[tokio::test]
async fn every_run_uses_a_fresh_request_id() {
    // Arrange
    let server = TestServer::start().await;

    // Act
    server.run(&args(&[]), FakeSecrets::none()).await;
    server.run(&args(&[]), FakeSecrets::none()).await;

    // Assert
    let requests = server.provisioner().provision_requests.clone();
    assert_ne!(requests[0].request_id, requests[1].request_id);
}

#[tokio::test]
async fn allow_ssh_inbound_opens_port_22_to_any_ipv4_source_with_a_warning() {
    // Arrange
    let server = TestServer::start().await;

    // Act
    let out = server
        .run(&args(&["--allow-ssh-inbound"]), FakeSecrets::none())
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        server.provisioner().provision_requests[0].ssh_source_cidr,
        "0.0.0.0/0"
    );
    assert!(
        out.stderr.starts_with("warning: --allow-ssh-inbound"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn provision_json_prints_the_provision() {
    // Arrange
    let server = TestServer::start().await;

    // Act
    let out = server
        .run(&args(&["--json", "--role", "build"]), FakeSecrets::none())
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    let doc = out.json();
    assert_eq!(doc["provision"]["id"], "npv_1");
    assert_eq!(doc["provision"]["status"], "creating");
    assert_eq!(doc["provision"]["provider"], "hetzner");
    assert_eq!(doc["provision"]["role"], "build");
    assert_eq!(doc["provision"]["install_step"], serde_json::Value::Null);
}

#[tokio::test]
async fn invalid_flags_are_usage_errors_naming_the_flag_and_nothing_is_sent() {
    let cases: [(&[&str], &str); 14] = [
        (
            &[
                "nodes",
                "provision",
                "--region",
                "r",
                "--size",
                "s",
                "--name",
                "n",
            ],
            "error: --provider is required",
        ),
        (
            &[
                "nodes",
                "provision",
                "--provider",
                "hetzner",
                "--size",
                "s",
                "--name",
                "n",
            ],
            "error: --region is required",
        ),
        (
            &[
                "nodes",
                "provision",
                "--provider",
                "hetzner",
                "--region",
                "r",
                "--name",
                "n",
            ],
            "error: --size is required",
        ),
        (
            &[
                "nodes",
                "provision",
                "--provider",
                "hetzner",
                "--region",
                "r",
                "--size",
                "s",
            ],
            "error: --name is required",
        ),
        (
            &[
                "nodes",
                "provision",
                "--provider",
                "linode",
                "--region",
                "r",
                "--size",
                "s",
                "--name",
                "n",
            ],
            "error: unknown provider \"linode\"",
        ),
        (
            &[&REQUIRED[..], &["Web_1"]].concat(),
            "error: invalid --name \"Web_1\": must start with a lowercase letter",
        ),
        (
            &[&REQUIRED[..], &["web-"]].concat(),
            "error: invalid --name \"web-\": must not end with a hyphen",
        ),
        (
            &[&REQUIRED[..], &["a".repeat(64).leak() as &str]].concat(),
            "error: invalid --name \"aaaa",
        ),
        (
            &args(&["--role", "gpu"]),
            "error: invalid value 'gpu' for '--role <ROLE>'",
        ),
        (
            &args(&["--ssh-source-cidr", "203.0.113.7"]),
            "error: invalid --ssh-source-cidr \"203.0.113.7\": want an address with a prefix length",
        ),
        (
            &args(&["--control-plane-addr", "cp.example.com"]),
            "error: invalid --control-plane-addr \"cp.example.com\": want host:port",
        ),
        (
            &args(&["--ssh-public-key", "not a key"]),
            "error: invalid --ssh-public-key: want an OpenSSH public key",
        ),
        (
            &args(&["--image", "ubuntu 24.04"]),
            "error: invalid --image \"ubuntu 24.04\": must not contain spaces",
        ),
        (
            &args(&["--ssh-source-cidr", "10.0.0.0/8", "--allow-ssh-inbound"]),
            "error: the argument '--ssh-source-cidr <CIDR>' cannot be used with '--allow-ssh-inbound'",
        ),
    ];
    for (argv, expected) in cases {
        // Arrange
        let server = TestServer::start().await;

        // Act
        let out = server.run(argv, FakeSecrets::none()).await;

        // Assert
        assert_eq!(out.code, 2, "{argv:?}: {out:?}");
        assert!(out.stderr.starts_with(expected), "{argv:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert_eq!(out.stdout, "");
        assert!(
            server.provisioner().provision_requests.is_empty(),
            "{argv:?}"
        );
    }
}

#[tokio::test]
async fn an_unavailable_control_plane_is_retried_with_the_same_request_id() {
    // Arrange
    let server = TestServer::start().await;
    server
        .provisioner()
        .provision_failures
        .push_back(Status::unavailable("restarting"));

    // Act
    let out = server.run(&args(&[]), FakeSecrets::none()).await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    let requests = server.provisioner().provision_requests.clone();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].request_id, requests[1].request_id);
    assert!(
        out.stderr.starts_with(
            "warning: the control plane is unavailable (restarting); retrying the same request"
        ),
        "{}",
        out.stderr
    );
    assert!(
        out.stdout.starts_with("provision npv_1 created"),
        "{}",
        out.stdout
    );
}

#[tokio::test]
async fn a_taken_name_shows_already_exists() {
    // Arrange
    let server = TestServer::start().await;
    server
        .provisioner()
        .provision_failures
        .push_back(Status::already_exists(
            "a node or a provision that has not failed already uses the name \"web-1\"",
        ));

    // Act
    let out = server.run(&args(&[]), FakeSecrets::none()).await;

    // Assert
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: ALREADY_EXISTS: a node or a provision that has not failed already uses the \
         name \"web-1\"\n"
    );
    assert_eq!(
        server.provisioner().provision_requests.len(),
        1,
        "not retried"
    );
}

#[tokio::test]
async fn provision_watch_goes_on_to_follow_the_provision_until_ready() {
    // Arrange
    let server = TestServer::start().await;
    let states = happy_path("npv_1");
    server
        .provisioner()
        .watch_scripts
        .push_back(states.into_iter().map(Ok).collect());

    // Act
    let out = server.run(&args(&["--watch"]), FakeSecrets::none()).await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    let mut expected = vec!["provision npv_1 created, status: creating"];
    expected.extend(HAPPY_LINES);
    assert_eq!(out.stdout.lines().collect::<Vec<_>>(), expected);
    assert_eq!(server.provisioner().watch_requests, ["npv_1"]);
}

#[tokio::test]
async fn provision_watch_json_prints_one_line_per_state_without_repeating_the_first() {
    // Arrange
    let server = TestServer::start().await;
    let states = happy_path("npv_1");
    server
        .provisioner()
        .watch_scripts
        .push_back(states.into_iter().map(Ok).collect());

    // Act
    let out = server
        .run(&args(&["--watch", "--json"]), FakeSecrets::none())
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    let generations: Vec<u64> = out
        .stdout
        .lines()
        .map(|line| {
            let doc: serde_json::Value = serde_json::from_str(line).expect("one JSON per line");
            doc["provision"]["generation"].as_u64().expect("generation")
        })
        .collect();
    assert_eq!(generations, [1, 2, 3, 4, 5, 6, 7]);
}
