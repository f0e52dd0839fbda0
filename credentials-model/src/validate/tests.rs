//! Positive parsing tests for every provider, the plaintext round trip, and the canary
//! check on `Debug` of every secret-holding type.
mod gcp_external;
mod malformed;
mod malformed_json_cases;
use secrecy::ExposeSecret;
use serde_json::json;

use super::fixtures::*;
use super::{CredentialInput, CredentialSecret, FieldError, parse};
use crate::{CredentialIdentity, ProviderId};

fn secret_of(input: CredentialInput) -> CredentialSecret {
    parse(input).expect("fixture is valid").secret
}

#[test]
fn hetzner_token_is_trimmed_and_stored() {
    // Arrange
    let input = token(ProviderId::Hetzner, format!("  {}\r\n", hetzner_token()));
    // Act
    let parsed = parse(input).unwrap();
    // Assert
    let CredentialSecret::Token { provider, token } = &parsed.secret else {
        panic!()
    };
    assert_eq!(*provider, ProviderId::Hetzner);
    assert_eq!(token.expose_secret(), hetzner_token());
    assert_eq!(
        parsed.identity,
        CredentialIdentity::Token {
            account: String::new()
        }
    );
}

#[test]
fn digitalocean_accepts_prefixed_and_legacy_tokens() {
    let legacy = digitalocean_token()
        .trim_start_matches("dop_v1_")
        .to_owned();
    for t in [digitalocean_token(), legacy] {
        let secret = secret_of(token(ProviderId::DigitalOcean, t.clone()));
        assert_eq!(secret.provider(), ProviderId::DigitalOcean);
        let CredentialSecret::Token { token, .. } = secret else {
            panic!()
        };
        assert_eq!(token.expose_secret(), t);
    }
}

#[test]
fn aws_static_key_defaults_the_region_and_reports_last4() {
    let parsed = parse(
        Aws {
            region: String::new(),
            ..Aws::valid()
        }
        .input(),
    )
    .unwrap();
    assert_eq!(
        parsed.identity,
        CredentialIdentity::Aws {
            mode: "static".into(),
            access_key_id_last4: "MPLE".into(),
            region: "us-east-1".into(),
            role_arn: String::new(),
            has_session_token: false,
            account: String::new(),
        }
    );
    let CredentialSecret::Aws {
        secret_access_key,
        session_token,
        ..
    } = parsed.secret
    else {
        panic!()
    };
    assert!(
        secret_access_key
            .unwrap()
            .expose_secret()
            .starts_with(CANARY)
    );
    assert!(session_token.is_none());
}

#[test]
fn aws_temporary_key_keeps_its_session_token() {
    let parsed = parse(Aws::temporary().input()).unwrap();
    let CredentialIdentity::Aws {
        has_session_token,
        region,
        ..
    } = &parsed.identity
    else {
        panic!()
    };
    assert!(has_session_token);
    assert_eq!(region, "eu-central-1");
}

#[test]
fn aws_ambient_with_role_arn_stores_no_key() {
    let parsed = parse(Aws::ambient().input()).unwrap();
    let CredentialSecret::Aws {
        access_key_id,
        secret_access_key,
        ambient,
        role_arn,
        ..
    } = &parsed.secret
    else {
        panic!()
    };
    assert!(access_key_id.is_empty() && secret_access_key.is_none() && *ambient);
    assert_eq!(role_arn, ROLE_ARN);
    let CredentialIdentity::Aws {
        mode,
        access_key_id_last4,
        region,
        ..
    } = &parsed.identity
    else {
        panic!()
    };
    assert_eq!(
        (mode.as_str(), access_key_id_last4.as_str()),
        ("ambient", "")
    );
    assert_eq!(region, "us-east-1");
}

#[test]
fn azure_client_secret_principal_lowercases_guids() {
    let text = with(
        azure_value(),
        "tenant_id",
        json!(TENANT.to_ascii_uppercase()),
    );
    let parsed = parse(azure(text)).unwrap();
    assert_eq!(
        parsed.identity,
        CredentialIdentity::Azure {
            tenant_id: TENANT.into(),
            client_id: CLIENT.into(),
            subscription_id: SUBSCRIPTION.into(),
            resource_group: "levelrail-nodes_(prod).eu".into(),
            auth_mode: "client_secret".into(),
            federated_token_file: String::new(),
        }
    );
}

#[test]
fn azure_federated_token_file_principal() {
    let mut value = azure_value();
    value["federated_token_file"] = json!("/var/run/secrets/azure/tokens/token");
    let parsed = parse(azure(without(value, "client_secret"))).unwrap();
    let CredentialIdentity::Azure {
        auth_mode,
        federated_token_file,
        ..
    } = &parsed.identity
    else {
        panic!()
    };
    assert_eq!(auth_mode, "federated_token_file");
    assert_eq!(federated_token_file, "/var/run/secrets/azure/tokens/token");
}

#[test]
fn azure_client_secret_wins_when_both_are_set() {
    let text = with(
        azure_value(),
        "federated_token_file",
        json!("/var/run/token"),
    );
    let parsed = parse(azure(text)).unwrap();
    let CredentialSecret::Azure {
        client_secret,
        federated_token_file,
        ..
    } = &parsed.secret
    else {
        panic!()
    };
    assert!(client_secret.is_some());
    assert_eq!(*federated_token_file, None);
    let CredentialIdentity::Azure {
        auth_mode,
        federated_token_file,
        ..
    } = &parsed.identity
    else {
        panic!()
    };
    assert_eq!(
        (auth_mode.as_str(), federated_token_file.as_str()),
        ("client_secret", "")
    );
}

#[test]
fn azure_brackets_inside_a_secret_do_not_count_as_nesting() {
    let secret = format!("{CANARY}\\\"{}", "[{".repeat(40));
    let text = format!(
        r#"{{"tenant_id":"{TENANT}","client_id":"{CLIENT}","client_secret":"{secret}","subscription_id":"{SUBSCRIPTION}","resource_group":"rg"}}"#
    );
    assert!(parse(azure(text)).is_ok());
}

#[test]
fn gcp_service_account_key_parses_with_a_realistic_pem() {
    let pasted = format!("{}\n", gcp_value());
    let parsed = parse(gcp(pasted.clone())).unwrap();
    assert_eq!(
        parsed.identity,
        CredentialIdentity::Gcp {
            project_id: "levelrail-prod-42".into(),
            client_email: "levelrail@levelrail-prod-42.iam.gserviceaccount.com".into(),
            private_key_id: "3f1c0d9e8b7a6f5e4d3c2b1a09f8e7d6c5b4a392".into(),
        }
    );
    let CredentialSecret::Gcp {
        private_key,
        key_json,
        token_uri,
        ..
    } = &parsed.secret
    else {
        panic!()
    };
    assert_eq!(private_key.expose_secret(), fake_pem());
    assert_eq!(key_json.expose_secret(), pasted);
    assert_eq!(token_uri, "https://oauth2.googleapis.com/token");
}

#[test]
fn gcp_minimal_key_with_the_legacy_token_uri_and_compute_account() {
    let text = json!({
        "type": "service_account",
        "project_id": "proj-123456",
        "private_key_id": "0123456789abcdef",
        "private_key": fake_pem(),
        "client_email": "123456789-compute@developer.gserviceaccount.com",
        "token_uri": "https://accounts.google.com/o/oauth2/token",
    });
    assert!(parse(gcp(text.to_string())).is_ok());
}

#[test]
fn every_provider_round_trips_through_plaintext() {
    for (name, input) in valid_inputs() {
        // Arrange
        let secret = secret_of(input);
        // Act
        let bytes = secret.to_plaintext();
        let back = CredentialSecret::from_plaintext(secret.provider(), &bytes)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        // Assert
        assert_eq!(*back.to_plaintext(), *bytes, "{name}");
        assert_eq!(back.identity(), secret.identity(), "{name}");
        assert_eq!(format!("{back:?}"), format!("{secret:?}"), "{name}");
        let doc: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(doc["v"], json!(1), "{name}");
        assert_eq!(doc["provider"], json!(secret.provider().as_str()), "{name}");
    }
}

#[test]
fn a_near_limit_gcp_key_round_trips_through_plaintext() {
    let pasted = format!(
        "{}{}",
        gcp_value(),
        "\t".repeat(super::MAX_INPUT_BYTES - 4096)
    );
    let secret = secret_of(gcp(pasted.clone()));
    let back = CredentialSecret::from_plaintext(ProviderId::Gcp, &secret.to_plaintext()).unwrap();
    let CredentialSecret::Gcp { key_json, .. } = back else {
        panic!()
    };
    assert_eq!(key_json.expose_secret(), pasted);
}

#[test]
fn from_plaintext_refuses_another_provider_and_malformed_documents() {
    let hetzner = secret_of(token(ProviderId::Hetzner, hetzner_token())).to_plaintext();
    let field = |p, b: &[u8]| CredentialSecret::from_plaintext(p, b).err().unwrap().field;
    assert_eq!(
        field(ProviderId::DigitalOcean, &hetzner),
        "plaintext.provider"
    );
    assert_eq!(field(ProviderId::Aws, &hetzner), "plaintext.provider");
    let t = hetzner_token();
    let cases: [(&str, String); 6] = [
        (
            "plaintext.v",
            format!(r#"{{"v":2,"provider":"hetzner","token":"{t}"}}"#),
        ),
        (
            "plaintext.v",
            format!(r#"{{"provider":"hetzner","token":"{t}"}}"#),
        ),
        (
            "plaintext.extra",
            format!(r#"{{"v":1,"provider":"hetzner","token":"{t}","extra":1}}"#),
        ),
        (
            "plaintext.token",
            r#"{"v":1,"provider":"hetzner"}"#.to_owned(),
        ),
        (
            "plaintext.token",
            format!(r#"{{"v":1,"provider":"hetzner","token":"{t}","token":"x"}}"#),
        ),
        (
            "plaintext",
            format!(r#"{{"v":1,"provider":"hetzner","token":"{t}""#),
        ),
    ];
    for (want, doc) in cases {
        let err =
            CredentialSecret::from_plaintext(ProviderId::Hetzner, doc.as_bytes()).unwrap_err();
        assert_eq!(err.field, want, "{doc}");
        assert_no_leak(&err.to_string(), CANARY, want);
    }
    assert_eq!(field(ProviderId::Hetzner, b"\xff\xfe"), "plaintext");
}

#[test]
fn debug_of_every_secret_holding_type_shows_no_canary() {
    for (name, input) in valid_inputs() {
        assert_no_leak(&format!("{input:?}"), CANARY, name);
        assert_no_leak(&format!("{input:?}"), HEX_CANARY, name);
        let parsed = parse(input).unwrap();
        for text in [
            format!("{parsed:?}"),
            format!("{:?}", parsed.secret),
            format!("{parsed:#?}"),
        ] {
            assert_no_leak(&text, CANARY, name);
            assert_no_leak(&text, HEX_CANARY, name);
        }
        let plaintext = parsed.secret.to_plaintext();
        let back = CredentialSecret::from_plaintext(parsed.secret.provider(), &plaintext).unwrap();
        assert_no_leak(&format!("{back:?}"), CANARY, name);
    }
    let err = FieldError::new("azure.json", "must be a JSON object, not an array");
    assert_eq!(
        err.to_string(),
        "azure.json: must be a JSON object, not an array"
    );
}

#[test]
fn debug_still_shows_the_non_secret_parts() {
    let secret = secret_of(Aws::valid().input());
    let text = format!("{secret:?}");
    assert!(text.contains("MPLE") && text.contains("eu-central-1") && text.contains("[REDACTED]"));
    assert!(!text.contains(AWS_KEY_ID));
}
