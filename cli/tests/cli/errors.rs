//! Errors: missing token, bad provider, server statuses, an unreachable server, and usage.
use tonic::Status;

use crate::helpers::{CANARY, FakeSecrets, TestServer, run_cli};

#[tokio::test]
async fn a_missing_api_token_is_a_one_line_usage_error() {
    // The test relies on the environment not providing a token.
    if std::env::var_os("LEVELRAIL_TOKEN").is_some()
        || std::env::var_os("LEVELRAIL_TOKEN_FILE").is_some()
    {
        return;
    }
    // Arrange
    let server = TestServer::start().await;

    // Act
    let out = run_cli(
        &["--api-url", &server.url, "nodes", "providers", "list"],
        FakeSecrets::none(),
    )
    .await;

    // Assert
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: no API token: pass --token, set LEVELRAIL_TOKEN or use --token-file\n"
    );
    assert!(server.state().authorizations.is_empty(), "nothing was sent");
}

#[tokio::test]
async fn the_api_token_can_come_from_a_file() {
    // Arrange
    let server = TestServer::start().await;
    let file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(file.path(), format!("{}\n", crate::helpers::TOKEN)).expect("write token");
    let path = file.path().to_str().expect("utf-8 path");

    // Act
    let out = run_cli(
        &[
            "--api-url",
            &server.url,
            "--token-file",
            path,
            "nodes",
            "providers",
            "list",
        ],
        FakeSecrets::none(),
    )
    .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
}

#[tokio::test]
async fn a_rejected_api_token_is_reported_as_unauthenticated() {
    // Arrange
    let server = TestServer::start().await;

    // Act
    let out = run_cli(
        &[
            "--api-url",
            &server.url,
            "--token",
            CANARY,
            "nodes",
            "providers",
            "list",
        ],
        FakeSecrets::none(),
    )
    .await;

    // Assert
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: the API token was rejected (UNAUTHENTICATED): missing or wrong API token\n"
    );
    assert_eq!(out.stdout, "");
    out.assert_no_canary();
}

#[tokio::test]
async fn an_unknown_provider_lists_the_known_ones() {
    // Arrange
    let server = TestServer::start().await;

    // Act
    let out = server
        .run(
            &[
                "nodes",
                "providers",
                "set-credential",
                "--provider",
                "linode",
            ],
            FakeSecrets::piped(CANARY),
        )
        .await;

    // Assert
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: unknown provider \"linode\", want one of hetzner, digitalocean, aws, azure, gcp\n"
    );
    out.assert_no_canary();
}

#[tokio::test]
async fn a_missing_provider_flag_says_it_is_required() {
    for command in ["set-credential", "remove", "verify"] {
        // Arrange
        let server = TestServer::start().await;

        // Act
        let out = server
            .run(&["nodes", "providers", command], FakeSecrets::none())
            .await;

        // Assert
        assert_eq!(out.code, 2, "{out:?}");
        assert_eq!(out.stderr, "error: --provider is required\n");
    }
}

#[tokio::test]
async fn a_server_invalid_argument_names_the_field_and_does_not_echo_the_secret() {
    // Arrange
    let server = TestServer::start().await;
    server.state().fail_set_with = Some(Status::invalid_argument(
        "aws.role_arn: must look like arn:aws:iam::<account>:role/<name>",
    ));

    // Act
    let out = server
        .run(
            &[
                "nodes",
                "providers",
                "set-credential",
                "--provider",
                "aws",
                "--role-arn",
                "nope",
            ],
            FakeSecrets::piped(&format!("AKIAEXAMPLE\n{CANARY}\n")),
        )
        .await;

    // Assert
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: invalid aws.role_arn: must look like arn:aws:iam::<account>:role/<name>\n"
    );
    out.assert_no_canary();
}

#[tokio::test]
async fn an_unreachable_control_plane_is_named_with_a_short_reason() {
    // Arrange: a port that was just free, so nothing listens on it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    drop(listener);

    // Act
    let out = run_cli(
        &[
            "--api-url",
            &url,
            "--token",
            CANARY,
            "nodes",
            "providers",
            "set-credential",
            "--provider",
            "hetzner",
        ],
        FakeSecrets::piped(CANARY),
    )
    .await;

    // Assert
    assert_eq!(out.code, 1, "{out:?}");
    let prefix = format!("error: cannot reach the control plane at {url}: ");
    assert!(out.stderr.starts_with(&prefix), "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.len() > prefix.len() + 1,
        "a reason is given: {}",
        out.stderr
    );
    out.assert_no_canary();
}

#[tokio::test]
async fn an_unknown_flag_is_a_one_line_usage_error() {
    // Act
    let out = run_cli(
        &["--token", "t", "nodes", "providers", "list", "--bogus"],
        FakeSecrets::none(),
    )
    .await;

    // Assert
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .starts_with("error: unexpected argument '--bogus' found"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
}

#[tokio::test]
async fn help_lists_every_provider_command_on_stdout() {
    // Act
    let out = run_cli(&["nodes", "providers", "--help"], FakeSecrets::none()).await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    for command in ["list", "set-credential", "remove", "verify"] {
        assert!(
            out.stdout.contains(command),
            "{command} missing from: {}",
            out.stdout
        );
    }
}

#[tokio::test]
async fn set_credential_help_names_all_five_providers() {
    // Act
    let out = run_cli(
        &["nodes", "providers", "set-credential", "--help"],
        FakeSecrets::none(),
    )
    .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains("hetzner, digitalocean, aws, azure or gcp"),
        "{}",
        out.stdout
    );
}
