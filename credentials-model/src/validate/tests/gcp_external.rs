//! GCP workload identity federation input: an `external_account` file plus the explicit
//! project id is accepted, round-trips through the encrypted plaintext, and every unsafe or
//! unsupported shape is refused with the field named.
use secrecy::{ExposeSecret as _, SecretString};
use serde_json::{Value, json};

use crate::validate::fixtures::gcp_value;
use crate::validate::{CredentialInput, CredentialSecret, parse};
use crate::{CredentialIdentity, ProviderId};

fn external() -> Value {
    json!({
        "type": "external_account",
        "audience": "//iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/ci/providers/github",
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": "https://sts.googleapis.com/v1/token",
        "service_account_impersonation_url": "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/nodes@levelrail-prod-42.iam.gserviceaccount.com:generateAccessToken",
        "credential_source": { "file": "/var/run/secrets/gcp/token", "format": { "type": "text" } },
        "universe_domain": "googleapis.com",
    })
}

fn input(doc: &Value, project: &str) -> CredentialInput {
    CredentialInput::GcpJsonWithProject {
        json: SecretString::from(doc.to_string()),
        project_id: project.into(),
    }
}

fn field_of(doc: &Value, project: &str) -> String {
    parse(input(doc, project)).expect_err("refused").field
}

#[test]
fn an_external_account_with_a_project_is_accepted_and_round_trips() {
    let parsed = parse(input(&external(), "levelrail-prod-42")).expect("valid");
    let CredentialSecret::GcpExternal {
        project_id,
        credential_file,
        impersonate,
        json_field,
        ..
    } = &parsed.secret
    else {
        panic!("not external")
    };
    assert_eq!(project_id, "levelrail-prod-42");
    assert_eq!(credential_file, "/var/run/secrets/gcp/token");
    assert_eq!(
        impersonate.as_deref(),
        Some("nodes@levelrail-prod-42.iam.gserviceaccount.com")
    );
    assert_eq!(*json_field, None);
    assert_eq!(
        parsed.identity,
        CredentialIdentity::Gcp {
            project_id: "levelrail-prod-42".into(),
            client_email: "nodes@levelrail-prod-42.iam.gserviceaccount.com".into(),
            private_key_id: String::new()
        }
    );
    let back = CredentialSecret::from_plaintext(ProviderId::Gcp, &parsed.secret.to_plaintext())
        .expect("decodes");
    let CredentialSecret::GcpExternal {
        audience, key_json, ..
    } = back
    else {
        panic!("not external")
    };
    assert!(audience.ends_with("/providers/github"));
    assert_eq!(key_json.expose_secret(), &external().to_string());
    let mut json_file = external();
    json_file["credential_source"] = json!({ "file": "/t.json", "format": { "type": "json", "subject_token_field_name": "id_token" } });
    json_file
        .as_object_mut()
        .map(|m| m.remove("service_account_impersonation_url"));
    let direct = parse(input(&json_file, "levelrail-prod-42")).expect("valid");
    assert!(
        matches!(direct.secret, CredentialSecret::GcpExternal { json_field: Some(ref f), impersonate: None, .. } if f == "id_token")
    );
}

#[test]
fn a_service_account_key_still_reads_its_own_project_and_ignores_the_field() {
    let parsed = parse(input(&gcp_value(), "some-other-project")).expect("valid");
    assert!(
        matches!(parsed.secret, CredentialSecret::Gcp { ref project_id, .. } if project_id == "levelrail-prod-42")
    );
    let legacy = parse(CredentialInput::GcpJson(SecretString::from(
        gcp_value().to_string(),
    )))
    .expect("valid");
    assert!(matches!(legacy.secret, CredentialSecret::Gcp { .. }));
}

#[test]
fn unsafe_or_unsupported_external_accounts_are_refused_with_the_field_named() {
    let with = |k: &str, v: Value| {
        let mut d = external();
        d[k] = v;
        d
    };
    assert_eq!(field_of(&external(), ""), "gcp.project_id");
    assert_eq!(field_of(&external(), "Bad_Project"), "gcp.project_id");
    assert_eq!(
        parse(CredentialInput::GcpJson(SecretString::from(
            external().to_string()
        )))
        .expect_err("no project")
        .field,
        "gcp.project_id"
    );
    assert_eq!(
        field_of(
            &with("token_url", json!("https://evil.example/v1/token")),
            "levelrail-prod-42"
        ),
        "gcp.json.token_url"
    );
    assert_eq!(
        field_of(
            &with(
                "audience",
                json!("//iam.googleapis.com/locations/global/workforcePools/p/providers/q")
            ),
            "levelrail-prod-42"
        ),
        "gcp.json.audience"
    );
    assert_eq!(
        field_of(
            &with(
                "subject_token_type",
                json!("urn:ietf:params:aws:token-type:aws4_request")
            ),
            "levelrail-prod-42"
        ),
        "gcp.json.subject_token_type"
    );
    assert_eq!(
        field_of(
            &with(
                "service_account_impersonation_url",
                json!(
                    "https://evil.example/v1/projects/-/serviceAccounts/a@b.iam.gserviceaccount.com:generateAccessToken"
                )
            ),
            "levelrail-prod-42"
        ),
        "gcp.json.service_account_impersonation_url"
    );
    assert_eq!(
        field_of(
            &with(
                "credential_source",
                json!({ "url": "http://169.254.169.254/token" })
            ),
            "levelrail-prod-42"
        ),
        "gcp.json.credential_source"
    );
    assert_eq!(
        field_of(
            &with("credential_source", json!({ "file": "relative/token" })),
            "levelrail-prod-42"
        ),
        "gcp.json.credential_source.file"
    );
    assert_eq!(
        field_of(&with("surprise", json!(1)), "levelrail-prod-42"),
        "gcp.json.surprise"
    );
    assert_eq!(
        field_of(&with("type", json!("authorized_user")), "levelrail-prod-42"),
        "gcp.json.type"
    );
}

#[test]
fn debug_hides_the_document_and_the_project_input() {
    let text = format!("{:?}", input(&external(), "levelrail-prod-42"));
    assert!(
        !text.contains("levelrail-prod-42") && !text.contains("sts.googleapis"),
        "{text}"
    );
}
