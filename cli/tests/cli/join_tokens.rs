//! `nodes join-tokens create|revoke`: the token alone on stdout, `-q`, `--json`, the request
//! sent, `--ttl` and `--node-name` validation, and NOT_FOUND on revoke.
use crate::fake_nodes::{CA_FINGERPRINT, TOKEN_SECRET};
use crate::helpers::{FakeSecrets, TestServer};

fn token(id: &str) -> String {
    format!("LR1.{CA_FINGERPRINT}.{id}.{TOKEN_SECRET}")
}

#[tokio::test]
async fn create_prints_the_token_alone_on_stdout_and_its_id_and_expiry_on_stderr() {
    // Arrange
    let server = TestServer::start().await;

    // Act
    let out = server
        .run(&["nodes", "join-tokens", "create"], FakeSecrets::none())
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, format!("{}\n", token("njt_1")));
    assert_eq!(
        out.stderr,
        "join token njt_1 (expires 2026-01-02T03:19:05Z)\n"
    );
    let requests = server.nodes().create_requests.clone();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].ttl_seconds, 0, "the server's default TTL");
    assert_eq!(requests[0].node_name, "");
    assert_eq!(requests[0].provision_id, "");
}

#[tokio::test]
async fn create_quiet_prints_only_the_token() {
    // Arrange
    let server = TestServer::start().await;

    // Act
    let out = server
        .run(
            &["nodes", "join-tokens", "create", "-q"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, format!("{}\n", token("njt_1")));
    assert_eq!(out.stderr, "");
}

#[tokio::test]
async fn create_sends_the_ttl_in_seconds_and_the_node_name() {
    // Arrange
    let server = TestServer::start().await;

    // Act
    let out = server
        .run(
            &[
                "nodes",
                "join-tokens",
                "create",
                "--ttl",
                "1h30m",
                "--node-name",
                "web-1",
            ],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    let request = server.nodes().create_requests[0].clone();
    assert_eq!(request.ttl_seconds, 5400);
    assert_eq!(request.node_name, "web-1");
}

#[tokio::test]
async fn create_json_prints_id_token_expiry_and_ca_fingerprint() {
    // Arrange
    let server = TestServer::start().await;

    // Act
    let out = server
        .run(
            &["--json", "nodes", "join-tokens", "create", "--ttl", "90s"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.json(),
        serde_json::json!({
            "token_id": "njt_1",
            "token": token("njt_1"),
            "expires_at": "2026-01-02T03:19:05Z",
            "ca_fingerprint": CA_FINGERPRINT,
        })
    );
    assert_eq!(out.stderr, "");
    assert_eq!(server.nodes().create_requests[0].ttl_seconds, 90);
}

#[tokio::test]
async fn an_invalid_ttl_is_a_usage_error_naming_the_flag_and_nothing_is_sent() {
    for (ttl, reason) in [
        ("15", "is missing a unit"),
        ("2d", "unknown unit"),
        ("25h", "must be at most 24h"),
        ("0s", "must be longer than 0s"),
        ("1.5s", "whole number of seconds"),
        ("soon", "is not a duration"),
    ] {
        // Arrange
        let server = TestServer::start().await;

        // Act
        let out = server
            .run(
                &["nodes", "join-tokens", "create", "--ttl", ttl],
                FakeSecrets::none(),
            )
            .await;

        // Assert
        assert_eq!(out.code, 2, "{ttl}: {out:?}");
        assert!(
            out.stderr.starts_with(&format!(
                "error: invalid value '{ttl}' for '--ttl <DURATION>': "
            )),
            "{}",
            out.stderr
        );
        assert!(out.stderr.contains(reason), "{ttl}: {}", out.stderr);
        assert_eq!(out.stdout, "");
        assert!(server.nodes().create_requests.is_empty());
    }
}

#[tokio::test]
async fn an_invalid_node_name_is_a_usage_error_naming_the_flag() {
    // Arrange
    let server = TestServer::start().await;

    // Act
    let out = server
        .run(
            &["nodes", "join-tokens", "create", "--node-name", "Web_1"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .starts_with("error: invalid --node-name \"Web_1\": "),
        "{}",
        out.stderr
    );
    assert!(server.nodes().create_requests.is_empty());
}

#[tokio::test]
async fn revoke_revokes_the_token_by_id() {
    // Arrange
    let server = TestServer::start().await;
    server.nodes().live_tokens.push("njt_7".into());

    // Act
    let out = server
        .run(
            &["nodes", "join-tokens", "revoke", "njt_7"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "join token njt_7 revoked\n");
    assert_eq!(server.nodes().revoke_requests, ["njt_7"]);
    assert!(server.nodes().live_tokens.is_empty());
}

#[tokio::test]
async fn revoke_json_reports_the_revoked_id() {
    // Arrange
    let server = TestServer::start().await;
    server.nodes().live_tokens.push("njt_7".into());

    // Act
    let out = server
        .run(
            &["nodes", "join-tokens", "revoke", "njt_7", "--json"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.json(),
        serde_json::json!({ "token_id": "njt_7", "revoked": true })
    );
}

#[tokio::test]
async fn revoking_an_unknown_or_used_token_says_it_was_not_found() {
    // Arrange
    let server = TestServer::start().await;

    // Act
    let out = server
        .run(
            &["nodes", "join-tokens", "revoke", "njt_9"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: join token njt_9 not found (unknown, already used or revoked)\n"
    );
    assert_eq!(out.stdout, "");
}
