//! Test fixtures: one valid credential per provider shape, every secret carrying a canary,
//! plus helpers to derive malformed variants and to assert that no canary leaked.
use secrecy::SecretString;
use serde_json::{Value, json};

use super::CredentialInput;
use crate::ProviderId;

/// Embedded in every secret; no part of it may ever surface in an error or `Debug`.
pub(super) const CANARY: &str = "CANARY7f3a9d2e51b04c88";
/// The hexadecimal canary, for secrets that must be hex.
pub(super) const HEX_CANARY: &str = "7f3a9d2e51b04c88";

pub(super) const TENANT: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";
pub(super) const CLIENT: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";
pub(super) const SUBSCRIPTION: &str = "7d9f1c4e-3b2a-4f5e-9c8d-1a2b3c4d5e6f";
pub(super) const AWS_KEY_ID: &str = "AKIAIOSFODNN7EXAMPLE";
pub(super) const ROLE_ARN: &str = "arn:aws:iam::123456789012:role/levelrail-provisioner";

/// Fails if any six-character window of `canary` occurs in `text`.
pub(super) fn assert_no_leak(text: &str, canary: &str, context: &str) {
    let bytes = canary.as_bytes();
    for window in bytes.windows(6.min(bytes.len())) {
        let window = std::str::from_utf8(window).unwrap();
        assert!(
            !text.contains(window),
            "{context}: `{text}` contains `{window}`"
        );
    }
}

pub(super) fn token(provider: ProviderId, token: impl Into<String>) -> CredentialInput {
    CredentialInput::Token {
        provider,
        token: SecretString::from(token.into()),
    }
}

/// 64 alphanumerics, as Hetzner issues them.
pub(super) fn hetzner_token() -> String {
    format!("{CANARY}{}", "q".repeat(64 - CANARY.len()))
}

/// `dop_v1_` and 64 lowercase hex digits.
pub(super) fn digitalocean_token() -> String {
    format!("dop_v1_{HEX_CANARY}{}", "0".repeat(64 - HEX_CANARY.len()))
}

/// The raw AWS fields; `valid()` is a long-term static key.
pub(super) struct Aws {
    pub(super) key: String,
    pub(super) secret: String,
    pub(super) session: String,
    pub(super) region: String,
    pub(super) role: String,
    pub(super) ambient: bool,
}

impl Aws {
    pub(super) fn valid() -> Self {
        Aws {
            key: AWS_KEY_ID.to_owned(),
            secret: format!("{CANARY}/K7MDENG+bPxRfiCY"),
            session: String::new(),
            region: "eu-central-1".to_owned(),
            role: String::new(),
            ambient: false,
        }
    }

    pub(super) fn temporary() -> Self {
        Aws {
            key: "ASIAY34FZKBOKMUTVV7A".to_owned(),
            session: format!("FwoGZXIvYXdzEBYaD{CANARY}{}", "Zm9v".repeat(100)),
            ..Aws::valid()
        }
    }

    pub(super) fn ambient() -> Self {
        Aws {
            key: String::new(),
            secret: String::new(),
            session: String::new(),
            region: String::new(),
            role: ROLE_ARN.to_owned(),
            ambient: true,
        }
    }

    pub(super) fn input(self) -> CredentialInput {
        CredentialInput::Aws {
            access_key_id: self.key,
            secret_access_key: SecretString::from(self.secret),
            session_token: SecretString::from(self.session),
            region: self.region,
            role_arn: self.role,
            use_ambient_credentials: self.ambient,
        }
    }
}

/// A client-secret service principal.
pub(super) fn azure_value() -> Value {
    json!({
        "tenant_id": TENANT,
        "client_id": CLIENT,
        "client_secret": format!("{CANARY}~Qx8.sec_ret-Value"),
        "subscription_id": SUBSCRIPTION,
        "resource_group": "levelrail-nodes_(prod).eu",
    })
}

pub(super) fn azure(text: impl Into<String>) -> CredentialInput {
    CredentialInput::AzureJson(SecretString::from(text.into()))
}

/// A realistic-looking (but fake) PKCS#8 PEM: 19 full 64-character lines and a padded
/// last line, JSON-escaped newlines included, as Google writes it.
pub(super) fn fake_pem() -> String {
    let alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut body = format!("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC{CANARY}");
    while body.len() < 19 * 64 + 38 {
        body.push_str(alphabet);
    }
    body.truncate(19 * 64 + 38);
    body.push_str("==");
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        lines.join("\n")
    )
}

/// A complete service-account key, every standard field present.
pub(super) fn gcp_value() -> Value {
    json!({
        "type": "service_account",
        "project_id": "levelrail-prod-42",
        "private_key_id": "3f1c0d9e8b7a6f5e4d3c2b1a09f8e7d6c5b4a392",
        "private_key": fake_pem(),
        "client_email": "levelrail@levelrail-prod-42.iam.gserviceaccount.com",
        "client_id": "109876543210987654321",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": "https://oauth2.googleapis.com/token",
        "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
        "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/levelrail%40levelrail-prod-42.iam.gserviceaccount.com",
        "universe_domain": "googleapis.com",
    })
}

pub(super) fn gcp(text: impl Into<String>) -> CredentialInput {
    CredentialInput::GcpJson(SecretString::from(text.into()))
}

/// `value` with `key` set to `new`, serialized.
pub(super) fn with(mut value: Value, key: &str, new: Value) -> String {
    value[key] = new;
    value.to_string()
}

/// `value` without `key`, serialized.
pub(super) fn without(mut value: Value, key: &str) -> String {
    if let Some(map) = value.as_object_mut() {
        map.remove(key);
    }
    value.to_string()
}

/// Every valid fixture, for the round-trip and `Debug` tests.
pub(super) fn valid_inputs() -> Vec<(&'static str, CredentialInput)> {
    let mut both = azure_value();
    both["federated_token_file"] = json!("/var/run/secrets/azure/tokens/token");
    vec![
        (
            "hetzner",
            token(ProviderId::Hetzner, format!("{}\n", hetzner_token())),
        ),
        (
            "digitalocean",
            token(ProviderId::DigitalOcean, digitalocean_token()),
        ),
        ("aws static", Aws::valid().input()),
        ("aws temporary", Aws::temporary().input()),
        ("aws ambient", Aws::ambient().input()),
        ("azure secret", azure(azure_value().to_string())),
        (
            "azure federated",
            azure(without(both.clone(), "client_secret")),
        ),
        ("azure both", azure(both.to_string())),
        ("gcp", gcp(gcp_value().to_string())),
    ]
}

/// One malformed input, the field its error must name and the canary it embeds.
pub(super) struct Case {
    pub(super) name: &'static str,
    pub(super) input: CredentialInput,
    pub(super) field: String,
    pub(super) canary: &'static str,
}

/// A case embedding the default [`CANARY`].
pub(super) fn case(name: &'static str, field: &str, input: CredentialInput) -> Case {
    Case {
        name,
        input,
        field: field.to_owned(),
        canary: CANARY,
    }
}

/// One mebibyte, for oversize inputs.
pub(super) const MIB: usize = 1024 * 1024;
