//! Target `credentials`: a credential as an operator submits it (`validate::parse`).
//!
//! Bytes: a selector byte, then the fields split at NUL:
//! - `0`/`1`: a Hetzner / DigitalOcean token: `token`;
//! - `2`/`3`: AWS, static / ambient: `access_key_id`, `secret_access_key`, `session_token`,
//!   `region`, `role_arn`;
//! - `4`: the Azure service-principal JSON;
//! - `5`: a GCP credential JSON; `6`: the same with `project_id`.
//!
//! Properties: no panic; an error names a field under the provider and repeats no submitted
//! value (nor any string inside a submitted JSON document); `Debug` of the input and of the
//! result shows no secret; an accepted credential's plaintext document decodes to a
//! credential that encodes to the same bytes, with the same identity.
use levelrail_credentials_model::ProviderId;
use levelrail_credentials_model::validate::{self, CredentialInput, CredentialSecret};
use secrecy::{ExposeSecret as _, SecretString};

use crate::opaque::{assert_hides, assert_no_echo};

/// Whether the credential is accepted.
pub fn accepts(data: &[u8]) -> bool {
    let Some((&selector, rest)) = data.split_first() else {
        return false;
    };
    let Some(fields) = five_fields(rest) else {
        return false;
    };
    validate::parse(input_of(selector, &fields)).is_ok()
}

/// Checks one input.
pub fn check(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Some(fields) = five_fields(rest) else {
        return;
    };
    let input = input_of(selector, &fields);
    let provider = input.provider();
    // Every submitted value, and every string inside a submitted JSON document.
    let mut submitted = fields.clone();
    if let Ok(json) = serde_json::from_str::<serde_json::Value>(&fields[0]) {
        strings_in(&json, &mut submitted);
    }
    assert_no_echo(&fields, &submitted, "Debug of the input", |f| {
        Some(format!("{:?}", input_of(selector, f)))
    });

    match validate::parse(input) {
        Err(error) => {
            assert!(!error.field.is_empty(), "an error names its field");
            assert!(!error.message.is_empty(), "an error says what is wrong");
            assert_no_echo(&fields, &submitted, "a credential error", |f| {
                validate::parse(input_of(selector, f))
                    .err()
                    .map(|e| e.to_string())
            });
        }
        Ok(parsed) => {
            assert_eq!(parsed.secret.provider(), provider);
            assert_hides(
                &format!("{parsed:?}"),
                &secrets_of(&parsed.secret),
                "Debug of the parsed credential",
            );
            let plaintext = parsed.secret.to_plaintext();
            let decoded = CredentialSecret::from_plaintext(provider, &plaintext)
                .expect("an accepted credential's plaintext document decodes");
            assert_eq!(
                decoded.to_plaintext().as_slice(),
                plaintext.as_slice(),
                "the plaintext document round-trips"
            );
            assert_eq!(decoded.identity(), parsed.identity, "the identity is kept");
        }
    }
}

/// The first five fields (missing ones empty); `None` when one is not UTF-8.
fn five_fields(data: &[u8]) -> Option<Vec<String>> {
    crate::padded_fields(data, 5)
}

/// The input `selector` and `fields` (five of them) describe.
fn input_of(selector: u8, fields: &[String]) -> CredentialInput {
    let secret = |i: usize| SecretString::from(fields[i].clone());
    match selector % 7 {
        0 | 1 => CredentialInput::Token {
            provider: [ProviderId::Hetzner, ProviderId::DigitalOcean][usize::from(selector % 7)],
            token: secret(0),
        },
        2 | 3 => CredentialInput::Aws {
            access_key_id: fields[0].clone(),
            secret_access_key: secret(1),
            session_token: secret(2),
            region: fields[3].clone(),
            role_arn: fields[4].clone(),
            use_ambient_credentials: selector % 7 == 3,
        },
        4 => CredentialInput::AzureJson(secret(0)),
        5 => CredentialInput::GcpJson(secret(0)),
        _ => CredentialInput::GcpJsonWithProject {
            json: secret(0),
            project_id: fields[1].clone(),
        },
    }
}

/// The secret strings of a validated credential.
pub(crate) fn secrets_of(secret: &CredentialSecret) -> Vec<&str> {
    let secrets: Vec<&SecretString> = match secret {
        CredentialSecret::Token { token, .. } => vec![token],
        CredentialSecret::Aws {
            secret_access_key,
            session_token,
            ..
        } => secret_access_key.iter().chain(session_token).collect(),
        CredentialSecret::Azure { client_secret, .. } => client_secret.iter().collect(),
        CredentialSecret::Gcp {
            private_key,
            key_json,
            ..
        } => vec![private_key, key_json],
        CredentialSecret::GcpExternal { .. } => Vec::new(),
    };
    secrets.into_iter().map(|s| s.expose_secret()).collect()
}

/// Every string value inside `value`, except those inside a key the validators may name in
/// an error's field path (`validate::shown_key`): a value equal to such a key is repeated as the key,
/// not echoed as a value. Any other key is never shown, so values inside it stay checked.
pub(crate) fn strings_in(value: &serde_json::Value, out: &mut Vec<String>) {
    fn walk(value: &serde_json::Value, values: &mut Vec<String>, keys: &mut Vec<String>) {
        match value {
            serde_json::Value::String(s) => values.push(s.clone()),
            serde_json::Value::Array(items) => items.iter().for_each(|v| walk(v, values, keys)),
            serde_json::Value::Object(map) => {
                for (key, v) in map {
                    keys.push(key.clone());
                    walk(v, values, keys);
                }
            }
            _ => {}
        }
    }
    let (mut values, mut keys) = (Vec::new(), Vec::new());
    walk(value, &mut values, &mut keys);
    let named: Vec<&String> = keys
        .iter()
        .filter(|k| validate::shown_key(k).is_some())
        .collect();
    values.retain(|v| !named.iter().any(|k| k.contains(v.trim())));
    out.extend(values);
}
