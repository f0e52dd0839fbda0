//! Azure AD exchanges: the federated request equals the Azure SDK's, the token file is
//! re-read, a client secret wins, refusals name the AAD error without the secret.
use secrecy::{ExposeSecret as _, SecretString};
use serde_json::{Value, json};

use super::token_files;
use super::{Recorder, form_pairs, golden, token_answer};
use crate::broker::azure::AzureGrantIssuer;
use crate::broker::{GrantIssuer, GrantSecret};
use crate::model::{CredentialSecret, CredentialsError};

fn azure_secret(secret: Option<&str>, file: Option<&str>) -> CredentialSecret {
    CredentialSecret::Azure {
        tenant_id: "t1".into(),
        client_id: "app".into(),
        client_secret: secret.map(SecretString::from),
        federated_token_file: file.map(str::to_owned),
        subscription_id: "sub-123".into(),
        resource_group: "rg1".into(),
    }
}

#[tokio::test]
async fn the_azure_federated_token_request_matches_the_azure_sdks_field_by_field() {
    // Arrange
    let recorder = Recorder::start(token_answer).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("token");
    std::fs::write(&file, "a.b.c\n").expect("write");
    let issuer = AzureGrantIssuer::new(&recorder.url, None)
        .expect("issuer")
        .with_token_files(token_files(dir.path()));

    // Act
    let grant = issuer
        .issue("cred-1", &azure_secret(None, file.to_str()))
        .await
        .expect("grant");

    // Assert
    let want = &golden("golden-azure-sdk-requests.jsonl")[0];
    let got = &recorder.seen()[0];
    assert_eq!(
        (got.method.as_str(), got.path.as_str()),
        (
            want["m"].as_str().expect("m"),
            want["p"].as_str().expect("p")
        )
    );
    assert_eq!(
        got.header("content-type"),
        want["h"]["Content-Type"].as_str()
    );
    assert_eq!(
        got.form(),
        form_pairs(want["b"].as_str().expect("b")),
        "every field, in order"
    );
    assert_eq!(got.body, want["b"].as_str().expect("b"), "byte for byte");
    assert!(matches!(&grant.secret, GrantSecret::Bearer(t) if t.expose_secret() == "at-1"));
    assert_eq!(
        (
            grant.context.subscription_id.as_str(),
            grant.context.resource_group.as_str(),
            grant.context.credential_id.as_str()
        ),
        ("sub-123", "rg1", "cred-1")
    );
    assert!(
        grant
            .expires_at
            .is_some_and(|e| e > time::OffsetDateTime::now_utc() + time::Duration::minutes(59))
    );
}

#[tokio::test]
async fn the_federated_token_file_is_read_again_for_every_exchange() {
    let recorder = Recorder::start(token_answer).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("token");
    let issuer = AzureGrantIssuer::new(&recorder.url, None)
        .expect("issuer")
        .with_token_files(token_files(dir.path()));
    let secret = azure_secret(None, file.to_str());
    std::fs::write(&file, "h.first.s").expect("write");
    issuer.issue("c", &secret).await.expect("first");
    std::fs::write(&file, "h.rotated.s").expect("rotate");
    issuer.issue("c", &secret).await.expect("second");
    let assertions: Vec<String> = recorder
        .seen()
        .iter()
        .map(|s| {
            s.form()
                .into_iter()
                .find(|(k, _)| k == "client_assertion")
                .expect("assertion")
                .1
        })
        .collect();
    assert_eq!(assertions, ["h.first.s", "h.rotated.s"]);
}

#[tokio::test]
async fn a_client_secret_wins_and_a_missing_token_file_sends_nothing() {
    let recorder = Recorder::start(token_answer).await;
    let issuer = AzureGrantIssuer::new(&recorder.url, None).expect("issuer");
    issuer
        .issue(
            "c",
            &azure_secret(Some("s3cr3t~value"), Some("/nonexistent/token")),
        )
        .await
        .expect("grant");
    let fields = recorder.seen()[0].form();
    let keys: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["client_id", "client_secret", "grant_type", "scope"]);
    assert_eq!(fields[1].1, "s3cr3t~value");
    let err = issuer
        .issue("c", &azure_secret(None, Some("/nonexistent/token")))
        .await
        .expect_err("no file");
    assert!(
        matches!(&err, CredentialsError::FailedPrecondition(m)
            if m.contains("federated token file") && !m.contains("/nonexistent/token")),
        "{err}"
    );
    assert_eq!(recorder.seen().len(), 1, "no request without a token");
}

#[tokio::test]
async fn a_refusal_names_the_aad_error_without_echoing_the_secret() {
    fn refuse(_: &str) -> (u16, Value) {
        (
            401,
            json!({ "error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided.", "error_codes": [7000215] }),
        )
    }
    let recorder = Recorder::start(refuse).await;
    let issuer = AzureGrantIssuer::new(&recorder.url, None).expect("issuer");
    let err = issuer
        .issue("c", &azure_secret(Some("canary-secret-9f8e"), None))
        .await
        .expect_err("refused");
    let text = err.to_string();
    assert!(
        matches!(err, CredentialsError::PermissionDenied(_)) && text.contains("AADSTS7000215"),
        "{text}"
    );
    assert!(!text.contains("canary-secret-9f8e"));
}
