//! Azure through the credentials service: workload identity federation re-reads a rotated
//! token file without a restart (the grant cache asks for a fresh token near expiry, and the
//! fake Azure AD trusts only the current assertion), a provision runs on the grant, and
//! `VerifyCredential` reads the resource group and names a missing subscription Reader.
use std::time::Duration;

use levelrail_credentials::model::{CredentialInput, ProviderId};
use secrecy::SecretString;
use serde_json::json;

use crate::azure_support::*;
use crate::federation_support::{stack, urls};

fn principal(
    fake: &levelrail_sim::fakes::azure::FakeAzureHandle,
    auth: serde_json::Value,
) -> CredentialInput {
    let c = fake.config();
    let mut doc = json!({ "tenant_id": c.tenant_id, "client_id": c.client_id, "subscription_id": c.subscription_id, "resource_group": GROUP });
    for (k, v) in auth.as_object().expect("object") {
        doc[k] = v.clone();
    }
    CredentialInput::AzureJson(SecretString::from(doc.to_string()))
}

#[tokio::test]
async fn a_rotated_federated_token_file_is_used_without_a_restart() {
    // Arrange: AAD tokens live 2 minutes, inside the broker's 5-minute renewal margin, so
    // every grant is a fresh exchange; AAD trusts only the first assertion.
    let fake = start_fake(|c| c.token_lifetime = Duration::from_secs(120)).await;
    let s = stack(
        urls(&[
            (ProviderId::Azure, "authority", fake.authority_url()),
            (ProviderId::Azure, "arm", fake.base_url()),
        ]),
        Some(fake.ca_pem()),
    )
    .await;
    let file = s.tokens.path().join("azure-token");
    std::fs::write(&file, "eyJ.first.sig\n").expect("write");
    fake.trust_assertions(Some(vec!["eyJ.first.sig".into()]));
    s.credentials
        .set_credential(principal(
            &fake,
            json!({ "federated_token_file": file.to_string_lossy() }),
        ))
        .await
        .expect("stored");
    let (client, _) = s
        .registry
        .client(ProviderId::Azure, "test")
        .await
        .expect("first grant");
    client
        .list_regions()
        .await
        .expect("ARM accepts the first token");

    // Act: the identity provider rotates the file; AAD now trusts only the new assertion.
    std::fs::write(&file, "eyJ.rotated.sig\n").expect("rotate");
    fake.trust_assertions(Some(vec!["eyJ.rotated.sig".into()]));
    let (client, _) = s
        .registry
        .client(ProviderId::Azure, "test")
        .await
        .expect("grant after rotation");

    // Assert: the same process exchanged the new file content, and ARM accepts the token.
    client
        .create_server(&create_request("fed-1", "npv_fed1"))
        .await
        .expect("create with the new token");
    let assertions: Vec<String> = fake
        .request_log()
        .iter()
        .filter(|r| r.path.ends_with("/oauth2/v2.0/token"))
        .filter_map(|r| {
            r.raw_body
                .split('&')
                .find_map(|p| p.strip_prefix("client_assertion="))
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(
        assertions.first().map(String::as_str),
        Some("eyJ.first.sig")
    );
    assert_eq!(
        assertions.last().map(String::as_str),
        Some("eyJ.rotated.sig")
    );
}

#[tokio::test]
async fn verify_credential_reads_the_group_and_names_a_missing_subscription_reader() {
    let fake = start_fake(|_| {}).await;
    let s = stack(
        urls(&[
            (ProviderId::Azure, "authority", fake.authority_url()),
            (ProviderId::Azure, "arm", fake.base_url()),
        ]),
        Some(fake.ca_pem()),
    )
    .await;
    s.credentials
        .set_credential(principal(
            &fake,
            json!({ "client_secret": fake.config().client_secret }),
        ))
        .await
        .expect("stored");

    let (ok, _) = s
        .credentials
        .verify_credential(ProviderId::Azure)
        .await
        .expect("verified");
    assert!(ok.ok && ok.account.contains(GROUP), "{ok:?}");
    assert!(
        fake.request_log().iter().any(|r| r.method == "GET"
            && r.path
                .to_ascii_lowercase()
                .contains(&format!("/resourcegroups/{GROUP}?"))),
        "the group was read"
    );

    fake.set_subscription_reader(false);
    let (finding, _) = s
        .credentials
        .verify_credential(ProviderId::Azure)
        .await
        .expect("verified");
    assert!(!finding.ok);
    assert_eq!(finding.provider_code, "missing_subscription_reader");
    assert!(
        finding
            .message
            .starts_with("Azure: missing subscription-scope Reader"),
        "{}",
        finding.message
    );

    s.credentials
        .set_credential(principal(&fake, json!({ "client_secret": "wrong-secret" })))
        .await
        .expect("stored");
    let (refused, _) = s
        .credentials
        .verify_credential(ProviderId::Azure)
        .await
        .expect("verified");
    assert!(
        !refused.ok && refused.message.contains("AADSTS7000215"),
        "{refused:?}"
    );
    assert!(!refused.message.contains("wrong-secret"));
}
