//! `nodes providers remove` and `nodes providers verify`.
use levelrail_proto::credentials::v1::{Provider, ProviderStatus, VerificationResult};

use crate::helpers::{FakeSecrets, TestServer};

async fn server_with_stored(provider: Provider) -> TestServer {
    let server = TestServer::start().await;
    server.state().stored.insert(
        provider as i32,
        ProviderStatus {
            provider: provider as i32,
            connected: true,
            ..ProviderStatus::default()
        },
    );
    server
}

#[tokio::test]
async fn remove_reports_a_removed_credential() {
    // Arrange
    let server = server_with_stored(Provider::Digitalocean).await;

    // Act
    let out = server
        .run(
            &["nodes", "providers", "remove", "--provider", "digitalocean"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "provider \"digitalocean\" credential removed\n");
    assert!(server.state().stored.is_empty());
}

#[tokio::test]
async fn remove_of_a_provider_without_a_credential_is_not_an_error() {
    // Arrange
    let server = TestServer::start().await;

    // Act
    let out = server
        .run(
            &["nodes", "providers", "remove", "--provider", "gcp"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "provider \"gcp\" had no credential\n");
}

#[tokio::test]
async fn remove_json_reports_whether_anything_was_deleted() {
    // Arrange
    let server = server_with_stored(Provider::Hetzner).await;

    // Act
    let out = server
        .run(
            &[
                "nodes",
                "providers",
                "remove",
                "--provider",
                "hetzner",
                "--json",
            ],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    let doc = out.json();
    assert_eq!(doc["deleted"], true);
    assert_eq!(doc["provider"]["provider"], "hetzner");
    assert_eq!(doc["provider"]["connected"], false);
}

#[tokio::test]
async fn verify_prints_the_probe_message_on_success() {
    // Arrange
    let server = server_with_stored(Provider::Aws).await;
    server.state().verify_result = Some(VerificationResult {
        ok: true,
        message: "can create instances in account 123456789012".into(),
        ..VerificationResult::default()
    });

    // Act
    let out = server
        .run(
            &["nodes", "providers", "verify", "--provider", "aws"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        "provider \"aws\" verified: can create instances in account 123456789012\n"
    );
}

#[tokio::test]
async fn a_failed_verification_prints_the_reason_and_exits_1() {
    // Arrange
    let server = server_with_stored(Provider::Hetzner).await;
    server.state().verify_result = Some(VerificationResult {
        ok: false,
        message: "the token was refused (unauthorized)".into(),
        provider_code: "unauthorized".into(),
        ..VerificationResult::default()
    });

    // Act
    let out = server
        .run(
            &["nodes", "providers", "verify", "--provider", "hetzner"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stdout,
        "provider \"hetzner\" verification failed: the token was refused (unauthorized)\n"
    );
    assert_eq!(out.stderr, "");
}

#[tokio::test]
async fn a_failed_verification_in_json_still_exits_1() {
    // Arrange
    let server = server_with_stored(Provider::Hetzner).await;
    server.state().verify_result = Some(VerificationResult {
        ok: false,
        message: "no".into(),
        ..VerificationResult::default()
    });

    // Act
    let out = server
        .run(
            &[
                "--json",
                "nodes",
                "providers",
                "verify",
                "--provider",
                "hetzner",
            ],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 1, "{out:?}");
    let doc = out.json();
    assert_eq!(doc["result"]["ok"], false);
    assert_eq!(doc["provider"]["last_verification"]["message"], "no");
}

#[tokio::test]
async fn verify_without_a_stored_credential_shows_the_status_code() {
    // Arrange
    let server = TestServer::start().await;

    // Act
    let out = server
        .run(
            &["nodes", "providers", "verify", "--provider", "azure"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: FAILED_PRECONDITION: no credential is stored for this provider\n"
    );
}
