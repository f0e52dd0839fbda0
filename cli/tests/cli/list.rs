//! `nodes providers list`: the table and the JSON document.
use levelrail_proto::credentials::v1::credential_identity::Kind;
use levelrail_proto::credentials::v1::*;
use prost_types::Timestamp;

use crate::helpers::{FakeSecrets, TestServer};

const SAVED: Timestamp = Timestamp {
    seconds: 1_767_323_045,
    nanos: 0,
};

fn connected(
    provider: Provider,
    kind: Kind,
    verification: Option<VerificationResult>,
) -> ProviderStatus {
    ProviderStatus {
        provider: provider as i32,
        connected: true,
        saved_at: Some(SAVED),
        identity: Some(CredentialIdentity { kind: Some(kind) }),
        last_verification: verification,
        display_name: "shown".into(),
    }
}

async fn server_with_three_connected() -> TestServer {
    let server = TestServer::start().await;
    {
        let mut state = server.state();
        let hetzner = connected(
            Provider::Hetzner,
            Kind::Token(TokenIdentity {
                account: "abc".into(),
            }),
            Some(VerificationResult {
                ok: true,
                checked_at: Some(Timestamp {
                    seconds: 1_767_326_645,
                    nanos: 250,
                }),
                message: "can create servers in project abc".into(),
                ..VerificationResult::default()
            }),
        );
        let aws = connected(
            Provider::Aws,
            Kind::Aws(AwsIdentity {
                mode: "static".into(),
                access_key_id_last4: "WXYZ".into(),
                region: "us-east-1".into(),
                role_arn: "arn:aws:iam::123456789012:role/levelrail".into(),
                ..AwsIdentity::default()
            }),
            Some(VerificationResult {
                ok: false,
                message: "unauthorized".into(),
                ..VerificationResult::default()
            }),
        );
        let gcp = connected(
            Provider::Gcp,
            Kind::Gcp(GcpIdentity {
                project_id: "p".into(),
                client_email: "sa@p.iam.gserviceaccount.com".into(),
                private_key_id: "k1".into(),
            }),
            None,
        );
        for card in [hetzner, aws, gcp] {
            state.stored.insert(card.provider, card);
        }
    }
    server
}

#[tokio::test]
async fn list_prints_one_aligned_row_per_provider_with_identity_and_verification() {
    // Arrange
    let server = server_with_three_connected().await;

    // Act
    let out = server
        .run(&["nodes", "providers", "list"], FakeSecrets::none())
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stderr, "");
    let expected = "\
PROVIDER      STATUS         IDENTITY                                                           VERIFIED
hetzner       connected      project abc                                                        ok 2026-01-02T04:04:05Z
digitalocean  not connected  -                                                                  never
aws           connected      key …WXYZ us-east-1 role arn:aws:iam::123456789012:role/levelrail  failed: unauthorized
azure         not connected  -                                                                  never
gcp           connected      project p sa@p.iam.gserviceaccount.com                             never
";
    assert_eq!(out.stdout, expected);
}

#[tokio::test]
async fn list_json_prints_the_provider_cards_as_one_document() {
    // Arrange
    let server = server_with_three_connected().await;

    // Act
    let out = server
        .run(
            &["--json", "nodes", "providers", "list"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    let doc = out.json();
    let providers = doc["providers"].as_array().expect("providers array");
    let names: Vec<&str> = providers
        .iter()
        .map(|p| p["provider"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["hetzner", "digitalocean", "aws", "azure", "gcp"]);
    assert_eq!(providers[0]["connected"], true);
    assert_eq!(providers[0]["saved_at"], "2026-01-02T03:04:05Z");
    assert_eq!(
        providers[0]["identity"],
        serde_json::json!({ "kind": "token", "account": "abc" })
    );
    assert_eq!(providers[0]["last_verification"]["ok"], true);
    assert_eq!(
        providers[0]["last_verification"]["checked_at"],
        "2026-01-02T04:04:05.00000025Z"
    );
    assert_eq!(providers[1]["connected"], false);
    assert_eq!(providers[1]["saved_at"], serde_json::Value::Null);
    assert_eq!(providers[1]["identity"], serde_json::Value::Null);
    assert_eq!(providers[2]["identity"]["access_key_id_last4"], "WXYZ");
    assert_eq!(providers[2]["last_verification"]["message"], "unauthorized");
    assert_eq!(
        providers[4]["identity"]["client_email"],
        "sa@p.iam.gserviceaccount.com"
    );
}

#[tokio::test]
async fn every_request_carries_the_bearer_token() {
    // Arrange
    let server = TestServer::start().await;

    // Act
    let out = server
        .run(&["nodes", "providers", "list"], FakeSecrets::none())
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        server.state().authorizations,
        [format!("Bearer {}", crate::helpers::TOKEN)]
    );
}
