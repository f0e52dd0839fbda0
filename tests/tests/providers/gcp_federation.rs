//! GCP through the credentials service: workload identity federation end to end (an
//! `external_account` file plus an explicit project → STS exchange of the file's token →
//! impersonation → an instance created and verified on the fake), direct federated access
//! without impersonation, and the service-account key path, whose token request reaches
//! the fake OAuth endpoint with google-auth's fields and a signature the fake verifies.
use levelrail_credentials::model::{CredentialInput, ProviderId};
use secrecy::SecretString;
use serde_json::{Value, json};

use crate::federation_support::{stack, urls};
use crate::gcp_support::*;

fn external_account(
    fake: &levelrail_sim::fakes::gcp::FakeGcpHandle,
    file: &str,
    impersonate: bool,
) -> String {
    let mut doc = json!({
        "type": "external_account",
        "audience": fake.config().audience,
        "subject_token_type": fake.config().subject_token_type,
        "token_url": "https://sts.googleapis.com/v1/token",
        "credential_source": { "file": file, "format": { "type": "text" } },
    });
    if impersonate {
        doc["service_account_impersonation_url"] = json!(format!(
            "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/{}:generateAccessToken",
            fake.config().client_email
        ));
    }
    doc.to_string()
}

async fn gcp_stack(
    fake: &levelrail_sim::fakes::gcp::FakeGcpHandle,
) -> crate::federation_support::Stack {
    stack(
        urls(&[
            (ProviderId::Gcp, "token", fake.token_url()),
            (ProviderId::Gcp, "sts", fake.sts_url()),
            (
                ProviderId::Gcp,
                "iam-credentials",
                fake.iam_credentials_url(),
            ),
            (ProviderId::Gcp, "compute", fake.compute_url()),
            (
                ProviderId::Gcp,
                "resource-manager",
                fake.resource_manager_url(),
            ),
            (ProviderId::Gcp, "billing", fake.billing_url()),
        ]),
        None,
    )
    .await
}

#[tokio::test]
async fn federation_with_impersonation_works_end_to_end_against_the_fake_sts() {
    // Arrange: the OIDC token the workload's platform writes; STS trusts only it.
    let fake = start_fake(|_| {}).await;
    let s = gcp_stack(&fake).await;
    let file = s.tokens.path().join("oidc-token");
    std::fs::write(&file, "eyJhbGciOiJSUzI1NiJ9.workload.sig\n").expect("write");
    fake.trust_subjects(Some(vec!["eyJhbGciOiJSUzI1NiJ9.workload.sig".into()]));
    let json = external_account(&fake, &file.to_string_lossy(), true);
    s.credentials
        .set_credential(CredentialInput::GcpJsonWithProject {
            json: SecretString::from(json),
            project_id: fake.config().project_id.clone(),
        })
        .await
        .expect("stored");

    // Act: a grant, a client built on it, a create.
    let (client, _) = s
        .registry
        .client(ProviderId::Gcp, "test")
        .await
        .expect("grant");
    let info = client
        .create_server(&create_request("wif-1", "npv_wif1"))
        .await
        .expect("create with the impersonated token");

    // Assert
    assert_eq!(info.provision_id.as_deref(), Some("npv_wif1"));
    let log = fake.request_log();
    let sts = log
        .iter()
        .find(|r| r.path == "/v1/token")
        .expect("STS exchange");
    let fields: Vec<&str> = sts
        .raw_body
        .split('&')
        .filter_map(|p| p.split_once('=').map(|(k, _)| k))
        .collect();
    assert_eq!(
        fields,
        [
            "grant_type",
            "audience",
            "scope",
            "requested_token_type",
            "subject_token",
            "subject_token_type"
        ]
    );
    let impersonation = log
        .iter()
        .find(|r| r.path.ends_with(":generateAccessToken"))
        .expect("impersonation");
    assert_eq!(impersonation.status, Some(200));
    assert!(
        log.iter()
            .any(|r| r.method == "POST" && r.path.contains("/instances?") && r.status == Some(200))
    );
    let (verified, _) = s
        .credentials
        .verify_credential(ProviderId::Gcp)
        .await
        .expect("verify");
    assert!(
        verified.ok && verified.account.contains("levelrail-fake-1"),
        "{verified:?}"
    );

    // A token the pool provider does not trust is refused at STS, as a refusal.
    std::fs::write(&file, "eyJ.forged.sig").expect("rotate");
    let (refused, _) = s
        .credentials
        .verify_credential(ProviderId::Gcp)
        .await
        .expect("verify");
    assert!(
        !refused.ok && refused.message.contains("not trusted"),
        "{refused:?}"
    );
}

#[tokio::test]
async fn federation_without_impersonation_uses_the_federated_token_directly() {
    let fake = start_fake(|_| {}).await;
    fake.set_federated_direct_access(true);
    let s = gcp_stack(&fake).await;
    let file = s.tokens.path().join("oidc-token");
    std::fs::write(&file, "eyJ.direct.sig").expect("write");
    let json = external_account(&fake, &file.to_string_lossy(), false);
    s.credentials
        .set_credential(CredentialInput::GcpJsonWithProject {
            json: SecretString::from(json),
            project_id: fake.config().project_id.clone(),
        })
        .await
        .expect("stored");
    let (client, _) = s
        .registry
        .client(ProviderId::Gcp, "test")
        .await
        .expect("grant");
    client
        .create_server(&create_request("wif-2", "npv_wif2"))
        .await
        .expect("create");
    assert!(
        !fake
            .request_log()
            .iter()
            .any(|r| r.path.ends_with(":generateAccessToken"))
    );
}

#[tokio::test]
async fn a_service_account_key_signs_an_assertion_the_fake_verifies() {
    let fake = start_fake(|_| {}).await;
    let s = gcp_stack(&fake).await;
    s.credentials
        .set_credential(CredentialInput::GcpJson(SecretString::from(
            fake.service_account_key_json(),
        )))
        .await
        .expect("stored");
    let (client, _) = s
        .registry
        .client(ProviderId::Gcp, "test")
        .await
        .expect("grant");
    client
        .create_server(&create_request("sa-1", "npv_sa1"))
        .await
        .expect("create");

    let token = fake
        .request_log()
        .into_iter()
        .find(|r| r.path == "/token")
        .expect("token request");
    assert_eq!(token.status, Some(200), "{}", token.response);
    let golden: Value = serde_json::from_str(
        levelrail_sim::specs::read("golden-gcp-sdk-requests.jsonl")
            .lines()
            .next()
            .expect("line"),
    )
    .expect("json");
    assert_eq!(
        token.content_type,
        golden["h"]["Content-Type"].as_str().expect("ct")
    );
    let names = |b: &str| {
        b.split('&')
            .filter_map(|p| p.split_once('=').map(|(k, _)| k.to_owned()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(&token.raw_body),
        names(golden["b"].as_str().expect("b"))
    );
}
